//! `preempt micro`: the microbenchmarks of [`crate::micro`], their table, files and history.

use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::{Context, Result};
use preempt_io::sys::cpu;

use super::print_json;
use crate::cli::MicroArgs;
use crate::config::{OutputConfig, RtConfig};
use crate::error::{EXIT_OK, PrivilegeError};
use crate::export::Sink;
use crate::measure::RtEnvironment;
use crate::micro::{self, MicroBench, MicroConfig, MicroResult, framework, micro_of};
use crate::progress::Progress;
use crate::results::RunResult;
use crate::session::Session;
use crate::stress::{self, StressGuard};
use crate::warnings::Warning;

/// `preempt micro`: runs, prints the table, writes `--export-json`/`--export-csv`, records the
/// run in the history. Returns the exit code.
pub fn run(args: &MicroArgs, argv: Vec<String>) -> Result<u8> {
    // A framework child (re-executed by the parent's framework set) runs its one app and
    // nothing else: no flags, no output but its samples.
    if let Some(scenario) = std::env::var_os(framework::CHILD_ENV) {
        return micro::framework::child_main(&scenario);
    }
    let online = cpu::online_cpus().context("cannot read the online CPUs")?;
    let cfg = MicroConfig::from_args(args, &online)?;
    let output = OutputConfig::from(&args.output);
    let mut session = Session::start(
        "micro",
        argv,
        Sink::new(output.export_json.as_deref(), output.export_csv.as_deref()),
        &[],
        args.history.config(),
    )?;
    let stop = crate::measure::install_stop_flag()?;
    let env = RtEnvironment::prepare(RtConfig::from(&args.rt));
    session.warnings.extend(env.warnings.iter().cloned());
    session.add_machine_warnings(&[cfg.cpu]);
    eprintln!(
        "preempt: microbenchmarks on CPU {}, {}{}",
        cfg.cpu,
        if cfg.priority == 0 {
            "SCHED_OTHER".to_string()
        } else {
            format!("SCHED_FIFO {}", cfg.priority)
        },
        if cfg.stress.kinds.is_empty() {
            String::new()
        } else {
            format!(", stress {}", stress::label(&cfg.stress))
        }
    );
    let mut progress = Progress::new("micro", output.progress);
    let stressors = StressGuard::start(&cfg.stress)?;
    let (result, run_warnings) = micro::measure(&cfg, &stop, &mut |d, t, what| {
        progress.update(d as f64 / t.max(1) as f64, what)
    })?;
    drop(stressors);
    progress.finish();
    session.warnings.extend(run_warnings);
    if stop.load(Relaxed) {
        session.warnings.push(Warning::Interrupted);
    }
    let mut file = session.file(RunResult::Micro(Box::new(result)));
    file.interrupted = stop.load(Relaxed);
    let saved = session.save(&file);
    for w in &file.warnings {
        eprintln!("preempt: warning: {} ({})", w.message, w.hint);
    }
    if output.json_stdout {
        print_json(&file)?;
    } else {
        print_table(micro_of(&file)?, file.sysinfo.virtualization.as_deref())?;
    }
    if stop.load(Relaxed) {
        return saved.exit(crate::measure::interrupted_exit_code());
    }
    // SCHED_FIFO refused: the real-time rows could not run. The figures above are kept and
    // written; the exit code says the run is not what was asked (exit 3).
    if let Some(Warning::RealTimeRefused {
        requested, grant, ..
    }) = session
        .warnings
        .iter()
        .find(|w| matches!(w, Warning::RealTimeRefused { .. }))
    {
        if saved.error.is_none() {
            return Err(anyhow::Error::new(PrivilegeError(format!(
                "{requested} was refused, so the real-time benchmarks did not run: {grant}"
            ))));
        }
    }
    saved.exit(EXIT_OK)
}

/// The table of a micro run; `virtualization` (the run's system information) marks the
/// figures of an emulated CPU as the emulator's.
fn print_table(m: &MicroResult, virtualization: Option<&str>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    print_clock_and_overhead(&mut out, m, virtualization)?;
    // Column widths: the longest set name and id (framework ids are long).
    let sw = m
        .benches
        .iter()
        .map(|b| b.set.len())
        .max()
        .unwrap_or(0)
        .max(3);
    // Rows measured in the runtime's soft mode are marked, and the mark explained below.
    let soft = |b: &MicroBench| {
        b.notes
            .iter()
            .any(|n| n.starts_with(framework::SOFT_NOTE_PREFIX))
    };
    let label = |b: &MicroBench| {
        if soft(b) {
            format!("{} [soft]", b.id)
        } else {
            b.id.clone()
        }
    };
    let iw = m
        .benches
        .iter()
        .map(|b| label(b).len())
        .max()
        .unwrap_or(0)
        .max(9);
    writeln!(
        out,
        "{:<sw$} {:<iw$} {:>7} {:>8} {:>8} {:>8} {:>9} | {:>8} {:>8} {:>8} {:>9} | {:>10}",
        "set",
        "benchmark",
        "samples",
        "min_ns",
        "p50_ns",
        "p99_ns",
        "max_ns",
        "min_cyc",
        "p50_cyc",
        "p99_cyc",
        "max_cyc",
        "perf/op",
        sw = sw,
        iw = iw
    )?;
    for b in &m.benches {
        match (&b.ns, &b.cycles) {
            (Some(d), Some(c)) => writeln!(
                out,
                "{:<sw$} {:<iw$} {:>7} {:>8} {:>8} {:>8} {:>9} | {:>8} {:>8} {:>8} {:>9} | {:>10}",
                b.set,
                label(b),
                c.count,
                d.summary.min_ns,
                d.summary.p50_ns,
                d.summary.p99_ns,
                d.summary.max_ns,
                c.min_cycles,
                c.p50_cycles,
                c.p99_cycles,
                c.max_cycles,
                b.perf
                    .as_ref()
                    .map(|p| format!(
                        "{:.0} {}",
                        p.per_op,
                        if p.event == "cycles" { "cyc" } else { "tsc" }
                    ))
                    .unwrap_or_else(|| "-".into()),
                sw = sw,
                iw = iw
            )?,
            _ => writeln!(
                out,
                "{:<sw$} {:<iw$} skipped: {}",
                b.set,
                b.id,
                b.skipped.as_deref().unwrap_or("no samples"),
                sw = sw,
                iw = iw
            )?,
        }
    }
    print_notes(&mut out, m, soft)?;
    out.flush()?;
    Ok(())
}

/// The clock (counter, frequency, resolution) and the timing overhead lines; marks an
/// emulated CPU's figures as the emulator's.
fn print_clock_and_overhead(
    out: &mut impl Write,
    m: &MicroResult,
    virtualization: Option<&str>,
) -> Result<()> {
    let tick_ns = 1e9 / m.clock.counter_hz;
    writeln!(
        out,
        "clock: {:?} at {:.4} GHz (one tick = {tick_ns:.1} ns), calibrated against {} (+/-{} ppm), \
         steps of {} tick(s) = {:.1} ns; cycles = {}",
        m.clock.counter,
        m.clock.counter_hz / 1e9,
        m.clock.calibrated_against,
        m.clock.calibration_uncertainty_ppm,
        m.clock.resolution_ticks,
        m.clock.resolution_ticks as f64 * tick_ns,
        m.clock.unit
    )?;
    if let Some(v) = virtualization.filter(|v| v.contains("emulated")) {
        writeln!(
            out,
            "emulated CPU ({v}): every cycle and nanosecond figure below is the emulator's, \
             not the hardware's"
        )?;
    }
    writeln!(
        out,
        "timing overhead (two back-to-back reads): p50 {} cycles = {} ns, max {} cycles; {}",
        m.overhead.cycles.p50_cycles,
        m.overhead.ns.p50_ns,
        m.overhead.cycles.max_cycles,
        if m.benches.iter().any(|b| b.overhead_subtracted_cycles > 0) {
            "subtracted from every sample"
        } else {
            "included in every figure (not subtracted)"
        }
    )?;
    Ok(())
}

/// The notes under the table: how framework rows were timed, what `[soft]` means, and the
/// sets not measured yet.
fn print_notes(
    out: &mut impl Write,
    m: &MicroResult,
    soft: impl Fn(&MicroBench) -> bool,
) -> Result<()> {
    if m.benches
        .iter()
        .any(|b| b.set == "framework" && b.cycles.is_some())
    {
        writeln!(
            out,
            "framework: each row timed inside a preempt app in a child process; `_bare` rows \
             are the runtime with accounting = false, the others the default app (accounting on)"
        )?;
    }
    if m.benches.iter().any(&soft) {
        writeln!(out, "[soft]: {}", framework::SOFT_NOTE)?;
    }
    for s in &m.sets {
        if let Some(n) = &s.note {
            writeln!(
                out,
                "{:<7} not measured yet ({} rows reserved): {n}",
                s.set,
                s.planned.len()
            )?;
        }
    }
    Ok(())
}
