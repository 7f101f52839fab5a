//! `preempt wakeup`: how fast a blocked SCHED_FIFO thread wakes up, per event source
//! ([`crate::measure::wakeup`]).

use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::{Context, Result};

use super::{online, print_json};
use crate::cli::WakeupArgs;
use crate::config::{self, LoadArg, OutputConfig, RtConfig, StressConfig, parse_cpus};
use crate::error::{EXIT_OK, usage};
use crate::export::Sink;
use crate::measure::{self, RtEnvironment, wakeup};
use crate::progress::Progress;
use crate::results::RunResult;
use crate::session::Session;
use crate::stats::summary::us;
use crate::warnings::Warning;

/// `preempt wakeup`: wake-up latency per event source and load.
pub(crate) fn run(a: &WakeupArgs, argv: Vec<String>) -> Result<u8> {
    let cfg = wakeup_config(a)?;
    let (priority, waiter_cpu, trigger_cpu) = (cfg.priority, cfg.waiter_cpu, cfg.trigger_cpu);
    let lines = wakeup::GpioLines {
        out: a.gpio_out,
        input: a.gpio_in,
    };
    let output = OutputConfig::from(&a.output);
    let mut session = Session::start(
        "wakeup",
        argv,
        Sink::new(output.export_json.as_deref(), output.export_csv.as_deref()),
        &[],
        a.history.config(),
    )?;
    let stop = measure::install_stop_flag()?;
    let env = RtEnvironment::prepare(RtConfig::from(&a.rt));
    session.warnings.extend(env.warnings.iter().cloned());
    session.add_machine_warnings(&[waiter_cpu]);
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
        session.warnings.push(Warning::Interrupted);
    }
    let mut file = session.file(RunResult::Wakeup(Box::new(result.clone())));
    file.interrupted = stop.load(Relaxed);
    let saved = session.save(&file);
    session.print_warnings();
    if output.json_stdout {
        print_json(&file)?;
    } else {
        print_wakeup(&result)?;
    }
    saved.exit(if stop.load(Relaxed) {
        measure::interrupted_exit_code()
    } else {
        EXIT_OK
    })
}

/// Validates the flags into the measurement's configuration (exit 2 naming the flag).
fn wakeup_config(a: &WakeupArgs) -> Result<wakeup::WakeupConfig> {
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
    Ok(wakeup::WakeupConfig {
        sources,
        samples: a.samples,
        interval_ns: config::us_to_ns(a.interval, "--interval")?,
        priority,
        waiter_cpu,
        trigger_cpu,
        loads,
        gpio_chip: a.gpio_chip.clone(),
    })
}

/// The terminal table: one line per source and load, then the tool's overhead.
fn print_wakeup(result: &crate::results::WakeupResult) -> Result<()> {
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
            (None, Some(why)) => writeln!(out, "{:<8} {:<22} skipped: {why}", c.source, c.load)?,
            (None, None) => writeln!(out, "{:<8} {:<22} not run", c.source, c.load)?,
        }
    }
    writeln!(
        out,
        "tool overhead: clock read p50 {} ns",
        result.overhead.clock_read.p50_ns
    )?;
    out.flush()?;
    Ok(())
}
