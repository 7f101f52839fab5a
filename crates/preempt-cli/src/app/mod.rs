//! The subcommands: validate the configuration, run, print the terminal report, write the
//! exports. Returns the process exit code (see [`crate::error`]).

pub mod compare;
pub mod history;
pub mod micro;
pub mod report;
pub mod rtio_bench;
pub mod run;

use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::{Context, Result};
use preempt_io::sys::{clock::monotonic_now_ns, cpu};

use crate::cli::{CheckArgs, Cli, Command, LatencyArgs, MatrixArgs, WakeupArgs};
use crate::config::LoadArg;
use crate::config::{self, LatencyConfig, OutputConfig, RtConfig, StressConfig, parse_cpus};
use crate::error::{EXIT_CHECK_FAILED, EXIT_INTERRUPTED, EXIT_OK, usage};
use crate::export::{Exporter, Sink, json::JsonExporter};
use crate::measure::latency::EnvFacts;
use crate::measure::{self, RtEnvironment, matrix, wakeup};
use crate::progress::Progress;
use crate::results::{ResultFile, RunResult, Status, SysInfo};
use crate::stats::summary::{Summary, us};
use crate::stress::StressGuard;
use crate::warnings::{self, Warning};
use crate::{check, stress, sysinfo};

/// Runs a parsed command line; `argv` is recorded in the results.
pub fn run(cli: Cli, argv: Vec<String>) -> Result<u8> {
    match cli.command {
        Command::Check(a) => cmd_check(&a, argv),
        Command::Latency(a) => cmd_latency(&a, argv),
        Command::Matrix(a) => cmd_matrix(&a, argv),
        Command::Wakeup(a) => cmd_wakeup(&a, argv),
        Command::Micro(a) => micro::run(&a, argv),
        Command::RtioBench(a) => rtio_bench::run(&a, argv),
        Command::Report(a) => report::run(&a),
        Command::Compare(a) => compare::run(&a),
        Command::History(a) => history::run(&a),
        Command::Run(a) => run::run(&a, argv),
        Command::StressWorker(a) => stress::run_worker(&a.kinds, a.timeout_s).map(|()| EXIT_OK),
    }
}

fn online() -> Result<Vec<usize>> {
    cpu::online_cpus().context("cannot read the online CPUs")
}

fn result_file(
    sysinfo: SysInfo,
    warnings: &[Warning],
    result: RunResult,
    started_ms: u64,
    t0: u64,
) -> ResultFile {
    let mut f = ResultFile::new(sysinfo, result);
    f.started_unix_ms = started_ms;
    f.elapsed_ns = monotonic_now_ns() - t0;
    f.warnings = warnings.iter().map(Warning::to_record).collect();
    f
}

fn print_json(file: &ResultFile) -> Result<()> {
    let bytes = JsonExporter.serialize(file)?;
    let mut out = std::io::stdout().lock();
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

fn sink_for(out: &OutputConfig) -> Result<Sink> {
    let sink = Sink::new(out.export_json.as_deref(), out.export_csv.as_deref());
    sink.preflight()?;
    Ok(sink)
}

// ------------------------------------------------------------------------------------------
// check

fn cmd_check(a: &CheckArgs, argv: Vec<String>) -> Result<u8> {
    let t0 = monotonic_now_ns();
    let started = crate::results::unix_ms_now();
    let sink = Sink::new(a.export_json.as_deref(), None);
    sink.preflight()?;
    let report = check::run();
    let failed = check::has_failures(&report);
    let info = sysinfo::collect(argv);
    let mut out = std::io::stdout().lock();
    if a.json {
        drop(out);
        print_json(&result_file(
            info.clone(),
            &[],
            RunResult::Check(report.clone()),
            started,
            t0,
        ))?;
    } else {
        writeln!(
            out,
            "preempt check: real-time readiness of {} (Linux {}, {}, {})",
            info.hostname, info.kernel_release, info.machine, info.cpu_model
        )?;
        let width = report
            .items
            .iter()
            .map(|i| i.title.len())
            .max()
            .unwrap_or(0);
        for i in &report.items {
            let tag = match i.status {
                Status::Pass => "PASS",
                Status::Info => "INFO",
                Status::Warn => "WARN",
                Status::Fail => "FAIL",
            };
            writeln!(out, "  {tag}  {:width$}  {}", i.title, i.value)?;
            if !i.fix.is_empty() {
                writeln!(out, "        {:width$}  fix: {}", "", i.fix)?;
            }
        }
        let count = |s| report.items.iter().filter(|i| i.status == s).count();
        writeln!(
            out,
            "summary: {} pass, {} info, {} warn, {} fail",
            count(Status::Pass),
            count(Status::Info),
            count(Status::Warn),
            count(Status::Fail)
        )?;
        out.flush()?;
    }
    sink.write(&result_file(
        info,
        &[],
        RunResult::Check(report),
        started,
        t0,
    ))?;
    Ok(if failed { EXIT_CHECK_FAILED } else { EXIT_OK })
}

// ------------------------------------------------------------------------------------------
// latency

fn summary_row(label: &str, s: &Summary) -> String {
    format!(
        "{label:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}  {}",
        s.count,
        us(s.min_ns),
        us(s.p50_ns),
        us(s.p90_ns),
        us(s.p99_ns),
        us(s.p99_9_ns),
        us(s.p99_99_ns),
        us(s.max_ns),
        s.max_cycle.map(|c| format!("#{c}")).unwrap_or_default()
    )
}

const TABLE_HEADER: &str =
    "  thread   samples   min_us   p50_us   p90_us   p99_us p99.9_us p99.99us    max_us  max@cycle";

fn cmd_latency(a: &LatencyArgs, argv: Vec<String>) -> Result<u8> {
    let cfg = LatencyConfig::from_args(a, &online()?)?;
    let sink = sink_for(&cfg.output)?;
    let stop = measure::install_stop_flag()?;
    let t0 = monotonic_now_ns();
    let started = crate::results::unix_ms_now();
    let info = sysinfo::collect(argv);
    let env = RtEnvironment::prepare(cfg.rt);
    let mut warns = env.warnings.clone();
    warns.extend(sysinfo::machine_warnings(&info, &cfg.cpus));
    let _stress = StressGuard::start(&cfg.stress)?;
    let work_iterations = measure::work::calibrate(cfg.work_ns);
    let facts = EnvFacts {
        mlock: env.memory_locked(),
        dma_latency_us: env.dma_latency_us(),
    };
    // Machine readers (tests, scripts) learn from this line that the measurement runs.
    eprintln!(
        "preempt: measuring {} thread(s), {}, interval {} us, {} releases each{}",
        cfg.cpus.len(),
        cfg.policy.record.label(),
        cfg.interval_ns / 1_000,
        cfg.releases,
        if cfg.stress.kinds.is_empty() {
            String::new()
        } else {
            format!(", stress {}", stress::label(&cfg.stress))
        }
    );
    let mut progress = Progress::new("latency", cfg.output.progress);
    let mut partial_error_shown = false;
    let outcome = measure::latency::run(
        &cfg,
        work_iterations,
        facts,
        &stop,
        &mut |partial, fraction| {
            progress.update(fraction, "");
            if let Some(p) = partial {
                if sink.is_empty() {
                    return;
                }
                let mut f = result_file(
                    info.clone(),
                    &warns,
                    RunResult::Latency(Box::new(p.clone())),
                    started,
                    t0,
                );
                f.complete = false;
                if let Err(e) = sink.write(&f) {
                    if !partial_error_shown {
                        eprintln!("preempt: cannot write partial results: {e:#}");
                        partial_error_shown = true;
                    }
                }
            }
        },
    )?;
    progress.finish();
    warns.extend(outcome.warnings.iter().cloned());
    let mut file = result_file(
        info,
        &warns,
        RunResult::Latency(Box::new(outcome.result.clone())),
        started,
        t0,
    );
    file.interrupted = outcome.interrupted;
    // Write the files first: a closed stdout must not lose the measurement.
    sink.write(&file)?;
    warnings::print(&warns);
    if cfg.output.json_stdout {
        print_json(&file)?;
    } else {
        print_latency(&outcome.result)?;
    }
    Ok(if stop.load(Relaxed) {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}

fn print_latency(r: &crate::results::LatencyResult) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let s = &r.settings;
    writeln!(
        out,
        "policy {}, interval {} us, {} thread(s){}{}",
        s.policy.label(),
        s.interval_ns / 1_000,
        r.threads.len(),
        if s.work_ns > 0 {
            format!(", work {} us", s.work_ns / 1_000)
        } else {
            String::new()
        },
        if s.stress.is_empty() {
            String::new()
        } else {
            format!(", stress {}", s.stress.join(","))
        }
    )?;
    type Pick = fn(&crate::results::ThreadResult) -> Option<&crate::results::Distribution>;
    let sections: [(&str, Pick); 3] = [
        ("wake-up latency (wake - release)", |t| Some(&t.latency)),
        ("response time (done - release)", |t| t.response.as_ref()),
        ("compute step (done - wake)", |t| t.compute.as_ref()),
    ];
    for (title, get) in sections {
        if r.threads.iter().all(|t| get(t).is_none()) {
            continue;
        }
        writeln!(out, "{title}:\n{TABLE_HEADER}")?;
        for (i, t) in r.threads.iter().enumerate() {
            if let Some(d) = get(t) {
                let label = t.cpu.map_or(format!("#{i}"), |c| format!("cpu{c}"));
                writeln!(out, "{}", summary_row(&label, &d.summary))?;
            }
        }
        if title.starts_with("wake") && r.threads.len() > 1 {
            writeln!(out, "{}", summary_row("all", &r.latency_all))?;
        }
    }
    let missed: u64 = r.threads.iter().map(|t| t.missed_periods).sum();
    let dl: u64 = r.threads.iter().map(|t| t.deadline_misses).sum();
    let releases: u64 = r.threads.iter().map(|t| t.releases).sum();
    let faults: u64 = r
        .threads
        .iter()
        .map(|t| t.minor_faults + t.major_faults)
        .sum();
    writeln!(
        out,
        "releases {releases}, missed periods {missed}, deadline misses {dl}, page faults in loop {faults}"
    )?;
    writeln!(
        out,
        "tool overhead: clock read p50 {} ns, max {} ns (resolution {} ns)",
        r.overhead.clock_read.p50_ns, r.overhead.clock_read.max_ns, r.overhead.clock_resolution_ns
    )?;
    if let Some(b) = &r.break_event {
        writeln!(
            out,
            "break-at: thread {} cycle {} latency {} us{}",
            b.thread,
            b.cycle,
            us(b.latency_ns),
            if b.tracing_stopped {
                " (tracing stopped; read it with trace-cmd show)"
            } else {
                ""
            }
        )?;
    }
    writeln!(out, "verdict: {}", r.ledger.verdict)?;
    out.flush()?;
    Ok(())
}

// ------------------------------------------------------------------------------------------
// matrix

fn cmd_matrix(a: &MatrixArgs, argv: Vec<String>) -> Result<u8> {
    let online = online()?;
    if a.period < 100 {
        return Err(usage("--period must be at least 100 us"));
    }
    let period_ns = a.period * config::NS_PER_US;
    let duration_ns = match &a.duration {
        Some(d) => config::parse_duration_ns(d)?,
        None => config::DEFAULT_DURATION_NS,
    };
    if duration_ns < period_ns {
        return Err(usage(format!(
            "--duration must cover at least one --period ({} us)",
            a.period
        )));
    }
    let work_ns = a.work_us * config::NS_PER_US;
    if work_ns >= 400_000.min(period_ns) {
        return Err(usage(format!(
            "--work-us {} must stay below the smallest SCHED_DEADLINE runtime of the matrix (400 us) and the period",
            a.work_us
        )));
    }
    let cpus = match &a.cpus {
        Some(l) => parse_cpus(l, &online)?,
        None => vec![*online.last().context("no online CPU")?],
    };
    let output = OutputConfig::from(&a.output);
    let sink = sink_for(&output)?;
    matrix::prepare_dir(&a.out_dir)?;
    let cfg = matrix::MatrixConfig {
        period_ns,
        duration_ns,
        work_ns,
        cpus: cpus.clone(),
        stress_tool: a.stress_tool,
        rt: RtConfig::from(&a.rt),
    };
    let stop = measure::install_stop_flag()?;
    let t0 = monotonic_now_ns();
    let started = crate::results::unix_ms_now();
    let info = sysinfo::collect(argv);
    let env = RtEnvironment::prepare(cfg.rt);
    let mut warns = env.warnings.clone();
    warns.extend(sysinfo::machine_warnings(&info, &cpus));
    let facts = EnvFacts {
        mlock: env.memory_locked(),
        dma_latency_us: env.dma_latency_us(),
    };
    eprintln!(
        "preempt: matrix of 8 policies x 2 stress levels, period {} us, {:.1} s per cell on CPU {:?}",
        a.period,
        duration_ns as f64 / 1e9,
        cpus
    );
    let mut progress = Progress::new("matrix", output.progress);
    let dir = a.out_dir.clone();
    let (result, run_warns) = matrix::run(
        &cfg,
        facts,
        &stop,
        &mut |cell| {
            if let Some(o) = &cell.outcome {
                let path = matrix::cell_file(&dir, &cell.cell.stress, &cell.cell.row);
                let mut w = warns.clone();
                w.extend(o.warnings.iter().cloned());
                let mut f = result_file(
                    info.clone(),
                    &w,
                    RunResult::Latency(Box::new(o.result.clone())),
                    started,
                    t0,
                );
                f.interrupted = o.interrupted;
                crate::export::write_atomically(&path, &JsonExporter.serialize(&f)?)?;
                cell.cell.result_file = path.file_name().map(|n| n.to_string_lossy().into_owned());
            }
            Ok(())
        },
        &mut |done, total, what| progress.update(done as f64 / total as f64, what),
    )?;
    progress.finish();
    warns.extend(run_warns);
    let mut file = result_file(
        info,
        &warns,
        RunResult::Matrix(Box::new(result.clone())),
        started,
        t0,
    );
    file.interrupted = stop.load(Relaxed);
    crate::export::write_atomically(&dir.join("summary.json"), &JsonExporter.serialize(&file)?)?;
    crate::export::write_atomically(
        &dir.join("summary.csv"),
        &crate::export::csv::CsvExporter.serialize(&file)?,
    )?;
    sink.write(&file)?;
    warnings::print(&warns);
    if output.json_stdout {
        print_json(&file)?;
    } else {
        print_matrix(&result, &dir)?;
    }
    if stop.load(Relaxed) {
        return Ok(EXIT_INTERRUPTED);
    }
    if result.cells.iter().all(|c| c.error.is_some()) {
        anyhow::bail!(
            "no cell of the matrix could run: {}",
            result
                .cells
                .first()
                .and_then(|c| c.error.clone())
                .unwrap_or_default()
        );
    }
    Ok(EXIT_OK)
}

fn print_matrix(r: &crate::results::MatrixResult, dir: &Path) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<22} {:<6} {:>8} {:>8} {:>8} {:>9} {:>7} {:>10} {:>10}  verdict",
        "policy",
        "stress",
        "p50_us",
        "p99_us",
        "p99.9_us",
        "max_us",
        "missed",
        "work_p50us",
        "work_maxus"
    )?;
    for c in &r.cells {
        match (&c.latency, &c.error) {
            (Some(l), _) => writeln!(
                out,
                "{:<22} {:<6} {:>8} {:>8} {:>8} {:>9} {:>7} {:>10} {:>10}  {}",
                c.row,
                c.stress,
                us(l.p50_ns),
                us(l.p99_ns),
                us(l.p99_9_ns),
                us(l.max_ns),
                c.missed_periods,
                c.compute
                    .map(|s| us(s.p50_ns))
                    .unwrap_or_else(|| "-".into()),
                c.compute
                    .map(|s| us(s.max_ns))
                    .unwrap_or_else(|| "-".into()),
                if c.verdict == "clean" {
                    "clean"
                } else {
                    "contaminated"
                }
            )?,
            (None, Some(e)) => writeln!(out, "{:<22} {:<6} not run: {e}", c.row, c.stress)?,
            (None, None) => writeln!(out, "{:<22} {:<6} not run", c.row, c.stress)?,
        }
    }
    writeln!(
        out,
        "results: {}/summary.json, summary.csv and one file per cell",
        dir.display()
    )?;
    out.flush()?;
    Ok(())
}

// ------------------------------------------------------------------------------------------
// wakeup

fn cmd_wakeup(a: &WakeupArgs, argv: Vec<String>) -> Result<u8> {
    let online = online()?;
    let priority = config::rt_priority(a.priority, "SCHED_FIFO")?;
    if priority < 2 {
        return Err(usage(
            "--priority must be at least 2 (the trigger runs one priority lower)",
        ));
    }
    if a.samples == 0 {
        return Err(usage("--samples must be at least 1"));
    }
    if a.interval < 10 {
        return Err(usage("--interval must be at least 10 us"));
    }
    if a.sources.is_empty() {
        return Err(usage(
            "--sources is empty; name at least one of eventfd,pipe,timerfd,signal,gpio",
        ));
    }
    let (waiter_cpu, trigger_cpu) = match &a.cpus {
        Some(l) => {
            let c = parse_cpus(l, &online)?;
            // parse_cpus sorts; keep the user's order for waiter/trigger.
            let order: Vec<usize> = l.split(',').filter_map(|p| p.trim().parse().ok()).collect();
            let w = order.first().copied().unwrap_or(c[0]);
            (w, order.get(1).copied().unwrap_or(w))
        }
        None => (*online.last().context("no online CPU")?, online[0]),
    };
    let stress_cfg = StressConfig::new(
        if a.stress.is_empty() {
            &[crate::config::StressKind::All]
        } else {
            &a.stress
        },
        a.stress_tool,
    );
    let loads = match a.load {
        LoadArg::Idle => vec![StressConfig::default()],
        LoadArg::Stress => vec![stress_cfg],
        LoadArg::Both => vec![StressConfig::default(), stress_cfg],
    };
    let mut sources = a.sources.clone();
    sources.dedup();
    let cfg = wakeup::WakeupConfig {
        sources,
        samples: a.samples,
        interval_ns: a.interval * config::NS_PER_US,
        priority,
        waiter_cpu,
        trigger_cpu,
        loads,
        gpio_chip: a.gpio_chip.clone(),
    };
    let lines = wakeup::GpioLines {
        out: a.gpio_out,
        input: a.gpio_in,
    };
    let output = OutputConfig::from(&a.output);
    let sink = sink_for(&output)?;
    let stop = measure::install_stop_flag()?;
    let t0 = monotonic_now_ns();
    let started = crate::results::unix_ms_now();
    let info = sysinfo::collect(argv);
    let env = RtEnvironment::prepare(RtConfig::from(&a.rt));
    let mut warns = env.warnings.clone();
    warns.extend(sysinfo::machine_warnings(&info, &[waiter_cpu]));
    eprintln!(
        "preempt: wakeup of a SCHED_FIFO {priority} waiter on CPU {waiter_cpu}, trigger on CPU {trigger_cpu}, {} samples per case",
        a.samples
    );
    let mut progress = Progress::new("wakeup", output.progress);
    let result = wakeup::run_with_gpio(&cfg, lines, &stop, &mut |d, t, what| {
        progress.update(d as f64 / t as f64, what)
    })?;
    progress.finish();
    if stop.load(Relaxed) {
        warns.push(Warning::Interrupted);
    }
    let mut file = result_file(
        info,
        &warns,
        RunResult::Wakeup(Box::new(result.clone())),
        started,
        t0,
    );
    file.interrupted = stop.load(Relaxed);
    sink.write(&file)?;
    warnings::print(&warns);
    if output.json_stdout {
        print_json(&file)?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "{:<8} {:<22} {:>8} {:>8} {:>8} {:>8} {:>9}",
            "source", "load", "min_us", "p50_us", "p99_us", "p99.9_us", "max_us"
        )?;
        for c in &result.cases {
            match (&c.latency, &c.skipped) {
                (Some(d), _) => {
                    let s = &d.summary;
                    writeln!(
                        out,
                        "{:<8} {:<22} {:>8} {:>8} {:>8} {:>8} {:>9}",
                        c.source,
                        c.load,
                        us(s.min_ns),
                        us(s.p50_ns),
                        us(s.p99_ns),
                        us(s.p99_9_ns),
                        us(s.max_ns)
                    )?;
                }
                (None, Some(why)) => {
                    writeln!(out, "{:<8} {:<22} skipped: {why}", c.source, c.load)?
                }
                (None, None) => writeln!(out, "{:<8} {:<22} not run", c.source, c.load)?,
            }
        }
        writeln!(
            out,
            "tool overhead: clock read p50 {} ns",
            result.overhead.clock_read.p50_ns
        )?;
        out.flush()?;
    }
    Ok(if stop.load(Relaxed) {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}
