//! `preempt demo gimbal`: the gimbal demonstrator of `preempt_gimbal`, optionally under the
//! built-in stressors, written as a preempt result file (kind `demo_gimbal`) next to its MCAP.
//!
//! The plant process is this binary again (hidden subcommand `__gimbal-plant`), so the demo
//! needs nothing but `preempt`.

use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::{Context, Result};
use preempt_gimbal::demo::{self, DemoConfig};
use preempt_gimbal::result::GimbalData;
use preempt_io::sys::clock::monotonic_now_ns;

use crate::cli::GimbalArgs;
use crate::config::{self, StressConfig};
use crate::error::{EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, usage};
use crate::export::json::JsonExporter;
use crate::export::{Exporter, write_atomically};
use crate::results::{ResultFile, RunResult};
use crate::stress::StressGuard;
use crate::warnings::Warning;
use crate::{measure, stress, sysinfo};

/// Runs the demo; returns the exit code.
pub fn run(a: &GimbalArgs, argv: Vec<String>) -> Result<u8> {
    let duration_ns = config::parse_duration_ns(&a.duration)?;
    let mut cfg = DemoConfig::new(&a.out);
    cfg.duration_s = duration_ns as f64 / 1e9;
    cfg.steps = a.steps.parse().map_err(usage)?;
    cfg.seed = a.seed;
    if a.plant_cpu.is_some() {
        cfg.plant_cpu = a.plant_cpu;
    }
    cfg.plant_exe = std::env::current_exe().context("cannot find the preempt binary itself")?;
    cfg.plant_prefix = vec!["__gimbal-plant".into()];
    cfg.foxglove = a.foxglove.clone();
    cfg.explain = a.explain;
    let stress_cfg = StressConfig::new(&a.stress.stress, a.stress.stress_tool);
    if !stress_cfg.kinds.is_empty() {
        cfg.stress = Some(stress::label(&stress_cfg));
    }
    cfg.validate().map_err(usage)?;
    let stop = measure::install_stop_flag()?;
    let t0 = monotonic_now_ns();
    let started = crate::results::unix_ms_now();
    let info = sysinfo::collect(argv);
    let mut warns = sysinfo::machine_warnings(&info, &[0]);
    let guard = StressGuard::start(&stress_cfg)?;
    eprintln!(
        "preempt: gimbal demo for {:.1} s, steps {}{}",
        cfg.duration_s,
        cfg.steps,
        cfg.stress
            .as_ref()
            .map_or(String::new(), |s| format!(", stress {s}"))
    );
    let outcome = demo::run(&cfg, &stop);
    drop(guard);
    let (data, out) = outcome.map_err(|e| anyhow::anyhow!(e))?;
    if data.interrupted {
        warns.push(Warning::Interrupted);
    }
    let mut file = ResultFile::new(info, RunResult::DemoGimbal(Box::new(data.clone())));
    file.started_unix_ms = started;
    file.elapsed_ns = monotonic_now_ns() - t0;
    file.complete = !data.interrupted;
    file.interrupted = data.interrupted;
    file.warnings = warns.iter().map(Warning::to_record).collect();
    write_atomically(&out.json, &JsonExporter.serialize(&file)?)?;
    print(&data)?;
    eprintln!(
        "preempt: results in {} (kind demo_gimbal) and {} (open it in Foxglove)",
        out.json.display(),
        out.mcap.display()
    );
    if let Some(e) = &data.error {
        eprintln!("preempt: the demo stopped early: {e} (results so far kept, marked interrupted)");
        return Ok(EXIT_FAILURE);
    }
    Ok(if stop.load(Relaxed) || data.interrupted {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}

fn ms(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

fn print(d: &GimbalData) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if d.soft {
        writeln!(
            out,
            "SOFT MODE (PREEMPT_SOFT=1): SCHED_OTHER, not real-time figures"
        )?;
    }
    writeln!(
        out,
        "axis   step_rad  rms_err_mrad  %_of_step  max_err_mrad  overshoot_%  (ref)  settling_ms  (ref)"
    )?;
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    for a in &d.axes {
        writeln!(
            out,
            "{:<5} {:>9.3} {:>13.3} {:>10} {:>13.3} {:>12} {:>6} {:>12} {:>6}",
            a.name,
            a.step_rad,
            a.rms_error_rad * 1e3,
            a.rms_error_pct_of_step
                .map_or("-".into(), |p| format!("{p:.2}")),
            a.max_error_rad * 1e3,
            opt(a.overshoot_pct),
            opt(a.reference_overshoot_pct),
            opt(a.settling_ms),
            opt(a.reference_settling_ms),
        )?;
    }
    let s = &d.samples;
    writeln!(
        out,
        "samples: expected {}, exchanged {}, missed {}, late outputs {}; telemetry written {}, lost {}",
        s.expected, s.exchanged, s.missed, s.late_outputs, d.telemetry.written, d.telemetry.lost
    )?;
    let c = &d.controller_cpu_per_sample_ns;
    writeln!(
        out,
        "controller CPU per sample: p50 {} us, p99 {} us, max {} us ({:.1} % of one CPU); exchange p50 {} us, p99 {} us",
        ms(c.p50),
        ms(c.p99),
        ms(c.max),
        d.controller_cpu_pct,
        ms(d.exchange_ns.p50),
        ms(d.exchange_ns.p99)
    )?;
    writeln!(
        out,
        "plant: {} steps at 40 kHz, {} late, max lateness {} us, SCHED_FIFO {}, pinned {}",
        d.plant.steps,
        d.plant.late_steps,
        ms(d.plant.max_late_ns),
        d.plant.fifo,
        d.plant.pinned
    )?;
    if let Some(why) = d.explain_summary() {
        write!(out, "{why}")?;
    }
    out.flush()?;
    Ok(())
}
