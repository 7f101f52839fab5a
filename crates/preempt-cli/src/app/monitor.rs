//! `preempt monitor`: the long-running latency monitor for fleets, serving Prometheus /
//! OpenMetrics at `--listen` (docs/FLEET.md).
//!
//! The engine is `preempt_metrics::monitor` (one `SCHED_FIFO` thread per CPU, `preempt
//! latency`'s method, bounded memory); this subcommand checks the arguments and the output
//! path *before* measuring, re-runs `preempt check` every few minutes for the readiness gauges,
//! and on SIGINT/SIGTERM (or `--duration`) writes the usual latency result (JSON) and records it
//! in the history.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::{Context, Result};
use preempt_io::sys::clock::{self, ClockId, monotonic_now_ns};
use preempt_io::sys::sched::Policy;
use preempt_metrics::http::Bound;
use preempt_metrics::monitor::{
    self as engine, CheckItem, CheckStatus, Machine, Monitor, MonitorConfig,
};
use preempt_stats::histogram::HistogramSnapshot;
use prometheus_client::registry::Registry;

use crate::cli::MonitorArgs;
use crate::config::{self, PolicyConfig, parse_cpus};
use crate::error::{EXIT_OK, PrivilegeError, usage};
use crate::export::{Exporter, Sink, json::JsonExporter};
use crate::results::{
    Distribution, LatencyResult, LatencySettings, Ledger, LedgerEntry, ResultFile, RunResult,
    Status, ThreadResult,
};
use crate::stats::histogram::Histogram;
use crate::stats::summary::Summary;
use crate::{check, measure, sysinfo};

/// How often the command looks at the stop flag and the duration.
const POLL_NS: u64 = 200_000_000;

/// Runs `preempt monitor`.
pub(crate) fn run(a: &MonitorArgs, argv: Vec<String>) -> Result<u8> {
    let online = preempt_io::sys::cpu::online_cpus().context("cannot read the online CPUs")?;
    let cpus = match &a.cpus {
        Some(list) => parse_cpus(list, &online)?,
        None => online,
    };
    let priority = config::rt_priority(a.priority, "fifo")?;
    if a.interval < 10 {
        return Err(usage(format!(
            "--interval {} us is too short: at least 10 us",
            a.interval
        )));
    }
    let duration_ns = match &a.duration {
        Some(d) => Some(config::parse_duration_ns(d)?),
        None => None,
    };
    // Output first: a bad path must not cost the run.
    let sink = Sink::new(a.export_json.as_deref(), None);
    sink.preflight()?;
    let bound = Bound::bind(a.listen.as_str()).map_err(|e| usage(format!("--listen: {e}")))?;
    let mut cfg = MonitorConfig::new(cpus.clone());
    cfg.interval_ns = crate::config::us_to_ns(a.interval, "--interval")?;
    cfg.deadline_ns = cfg.interval_ns;
    cfg.policy = Policy::Fifo { priority };
    // A virtual or emulated machine's figures are never called valid (reason label).
    cfg.machine = match crate::virt::detect_live().map(|f| f.kind) {
        None => Machine::BareMetal,
        Some(crate::virt::Kind::Virtual) => Machine::Virtual,
        Some(crate::virt::Kind::Emulated) => Machine::Emulated,
    };
    // 0 is not a window nor a period (it used to become 1 s silently).
    for (v, flag) in [(a.window, "--window"), (a.recheck, "--recheck")] {
        if v == 0 {
            return Err(usage(format!("{flag} must be at least 1 (seconds)")));
        }
    }
    cfg.window_ns = crate::config::s_to_ns(a.window, "--window")?;
    cfg.recheck_ns = crate::config::s_to_ns(a.recheck, "--recheck")?;
    let interval_ns = cfg.interval_ns;
    let window_ns = cfg.window_ns;
    let mut registry = Registry::default();
    let stop = measure::install_stop_flag()?;
    let t0 = monotonic_now_ns();
    let started = crate::results::unix_ms_now();
    let info = sysinfo::collect(argv);
    let checker: engine::Checker = Box::new(|| {
        check::run_without_probes()
            .items
            .into_iter()
            .map(|i| CheckItem {
                id: i.id,
                status: match i.status {
                    Status::Pass => CheckStatus::Pass,
                    Status::Info => CheckStatus::Info,
                    Status::Warn => CheckStatus::Warn,
                    Status::Fail => CheckStatus::Fail,
                },
            })
            .collect()
    });
    let mut monitor = Monitor::start(cfg, Some(checker)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            anyhow::Error::new(PrivilegeError(e.to_string()))
        } else {
            anyhow::Error::new(e).context("cannot start the monitor")
        }
    })?;
    registry.register_collector(monitor.collector());
    let server = bound
        .serve(Arc::new(registry))
        .context("cannot start the metrics server")?;
    eprintln!(
        "preempt: monitoring {} CPU(s) ({cpus:?}), SCHED_FIFO {priority}, interval {} us; \
         serving http://{}/metrics; Ctrl-C or SIGTERM ends it and writes the result",
        cpus.len(),
        a.interval,
        server.local_addr()
    );
    let end = duration_ns.map(|d| t0 + d);
    while !stop.load(Relaxed) && end.is_none_or(|e| monotonic_now_ns() < e) && monitor.running() {
        clock::sleep_until_ns(ClockId::Monotonic, monotonic_now_ns() + POLL_NS)?;
    }
    let report = monitor.stop().context("the measuring loop failed")?;
    drop(server);
    let interrupted = stop.load(Relaxed);
    let result = to_latency_result(
        &report,
        interval_ns,
        priority,
        window_ns,
        info.virtualization.as_deref(),
    );
    let mut file = ResultFile::new(info, RunResult::Latency(Box::new(result.clone())));
    file.started_unix_ms = started;
    file.elapsed_ns = monotonic_now_ns() - t0;
    file.interrupted = interrupted;
    file.interrupted_by = interrupted
        .then(measure::stop_signal_name)
        .flatten()
        .map(String::from);
    sink.write(&file)?;
    crate::history::record_quietly(&a.history.config(), &file, a.export_json.as_deref());
    if a.json {
        let bytes = JsonExporter.serialize(&file)?;
        std::io::Write::write_all(&mut std::io::stdout().lock(), &bytes)?;
    } else {
        for t in &result.threads {
            println!(
                "cpu{}: {} samples, {} missed, {} deadline misses, p99 {} ns, max {} ns",
                t.cpu.unwrap_or(0),
                t.samples,
                t.missed_periods,
                t.deadline_misses,
                t.latency.summary.p99_ns,
                t.latency.summary.max_ns
            );
        }
    }
    // Never end with nothing measured and nothing said (issue 40: three runs exited 0 with 0
    // samples while a SCHED_FIFO 50 loop held the CPU).
    let idle: Vec<String> = result
        .threads
        .iter()
        .filter(|t| t.samples == 0)
        .map(|t| t.cpu.map_or("?".into(), |c| c.to_string()))
        .collect();
    if !idle.is_empty() {
        let what = format!(
            "no sample was measured on CPU(s) {} in {:.1} s: the measuring thread never ran \
             (a task of higher real-time priority holds the CPU, or RT throttling); pick other \
             --cpus or a higher --priority (now {priority}), and see preempt check",
            idle.join(","),
            file.elapsed_ns as f64 / 1e9
        );
        if !interrupted {
            anyhow::bail!(what);
        }
        eprintln!("preempt: {what}");
    }
    Ok(if interrupted {
        measure::interrupted_exit_code()
    } else {
        EXIT_OK
    })
}

/// The monitor's figures in the latency result format (one results format): each CPU's
/// histogram is re-recorded into the result's histogram (exact min and max, the other samples
/// at their bucket's upper end: 0.78 % resolution); a virtual or emulated machine
/// (`virtualization`, from the run's system information) contaminates the verdict.
fn to_latency_result(
    r: &engine::Report,
    interval_ns: u64,
    priority: u8,
    window_ns: u64,
    virtualization: Option<&str>,
) -> LatencyResult {
    let mut all = crate::stats::histogram::Snapshot::empty();
    let threads: Vec<ThreadResult> = r
        .cpus
        .iter()
        .map(|c| {
            let snap = rerecord(&c.latency).snapshot();
            all.merge(&snap);
            ThreadResult {
                cpu: Some(c.cpu),
                cpus_seen: vec![c.cpu],
                tid: 0,
                releases: c.releases,
                samples: c.latency.count,
                missed_periods: c.missed_periods,
                deadline_misses: c.deadline_misses,
                latency: Distribution::from_snapshot(&snap),
                response: None,
                compute: None,
                minor_faults: 0,
                major_faults: 0,
                involuntary_switches: 0,
                throttled_windows: 0,
            }
        })
        .collect();
    let mut entries: Vec<LedgerEntry> = r
        .cpus
        .iter()
        .map(|c| LedgerEntry {
            name: format!("monitor-cpu{}", c.cpu),
            value: format!(
                "verdict {}, steal {:.2} s, max over the last {} s {} ns",
                c.verdict.label(),
                c.steal_seconds,
                window_ns / 1_000_000_000,
                c.window_max_ns
            ),
            contaminates: c.steal_seconds > 0.0 || !r.mlocked,
        })
        .collect();
    entries.push(measure::ledger::virtualization_entry(virtualization));
    let contaminated: Vec<&str> = entries
        .iter()
        .filter(|e| e.contaminates)
        .map(|e| e.name.as_str())
        .collect();
    LatencyResult {
        settings: LatencySettings {
            policy: PolicyConfig::fifo(priority).record,
            interval_ns,
            releases_per_thread: r.cpus.iter().map(|c| c.releases).max().unwrap_or(0),
            cpus: r.cpus.iter().map(|c| c.cpu).collect(),
            pinned: true,
            work_ns: 0,
            work_iterations: 0,
            timer_slack_ns: 1,
            mlock: r.mlocked,
            cpu_dma_latency_us: None,
            stress: Vec::new(),
            stress_tool: String::new(),
            break_at_ns: None,
        },
        overhead: measure::overhead::measure(),
        latency_all: Summary::from_snapshot(&all),
        threads,
        ledger: Ledger {
            verdict: if contaminated.is_empty() {
                "clean".into()
            } else {
                format!("contaminated: {}", contaminated.join(", "))
            },
            entries,
        },
        break_event: None,
        explain: None,
        explain_skipped: None,
    }
}

fn rerecord(s: &HistogramSnapshot) -> Histogram {
    let h = Histogram::new();
    let (min, max) = (s.min_ns.unwrap_or(0), s.max_ns.unwrap_or(0));
    let mut left = s.count;
    for b in &s.buckets {
        for _ in 0..b.count {
            // The extremes exactly; the rest at the bucket's upper end, capped by the max.
            let v = if left == s.count {
                min
            } else if left == 1 {
                max
            } else {
                b.high_ns.min(max)
            };
            h.record(v, 0);
            left -= 1;
        }
    }
    h
}
