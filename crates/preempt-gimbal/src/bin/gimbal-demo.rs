//! `gimbal-demo`: one run of the gimbal demonstrator (what `preempt demo gimbal` runs).
//!
//! ```text
//! gimbal-demo [--duration S] [--steps pan=0.5@0.2s,tilt=-0.3@1.0s] [--seed N] [--out DIR]
//!             [--plant-cpu N|none] [--foxglove 127.0.0.1:8765] [--ros2] [--explain]
//! gimbal-demo --reference-only FILE [--duration S] [--steps ..] [--seed N]
//! ```
//!
//! Writes `DIR/gimbal.json` (kind `demo_gimbal`) and `DIR/gimbal.mcap`, and prints the
//! figures. `--reference-only` runs only the ideal-timing reference and writes every
//! sample's values as bit patterns (hex), one line per sample: two runs with the same seed
//! give identical files. Ctrl-C stops the run and keeps both files (marked interrupted).
//! Exit codes: 0 ok, 1 error (also a result file or recording that could not be written:
//! the figures are printed first), 2 bad arguments, 130 interrupted (Ctrl-C), 143 stopped by
//! SIGTERM. `--help` prints the usage and exits 0.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use preempt_gimbal::demo::{self, DemoConfig};
use preempt_rig::harness;

const USAGE: &str = "usage: gimbal-demo [--duration S] [--steps pan=0.5@0.2s,tilt=-0.3@1.0s] [--seed N] [--out DIR] [--plant-cpu N|none] [--foxglove ADDR] [--ros2] [--explain] [--reference-only FILE]";

/// The run's configuration and `--reference-only`'s file; `None` for `--help`.
fn parse(argv: &[String]) -> Result<Option<(DemoConfig, Option<PathBuf>)>, String> {
    let mut cfg = DemoConfig::new(&PathBuf::from("gimbal-demo"));
    let mut reference_only = None;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{a}: missing value ({USAGE})"))
        };
        match a.as_str() {
            "--duration" => {
                cfg.duration_s = value()?
                    .trim_end_matches('s')
                    .parse()
                    .map_err(|_| "--duration: expected seconds, e.g. 2 or 2s".to_owned())?;
            }
            "--steps" => cfg.steps = value()?.parse()?,
            "--seed" => {
                cfg.seed = value()?
                    .parse()
                    .map_err(|_| "--seed: expected an unsigned integer".to_owned())?;
            }
            "--out" => cfg.out_dir = PathBuf::from(value()?),
            "--plant-cpu" => {
                cfg.plant_cpu = preempt_rig::harness::cpu_or_none("--plant-cpu", value()?)?
            }
            "--reference-only" => reference_only = Some(PathBuf::from(value()?)),
            "--foxglove" => cfg.foxglove = Some(value()?.clone()),
            "--ros2" => cfg.ros2 = true,
            "--explain" => cfg.explain = true,
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown flag '{other}' ({USAGE})")),
        }
    }
    cfg.validate()?;
    Ok(Some((cfg, reference_only)))
}

fn reference_only(cfg: &DemoConfig, path: &PathBuf) -> Result<(), String> {
    let records = preempt_gimbal::reference::run(cfg.seed, &cfg.steps, cfg.samples())?;
    let mut text = String::new();
    for r in &records {
        let _ = writeln!(
            text,
            "{} {:016x} {:016x} {:08x} {:08x} {:08x} {:08x} {} {}",
            r.k,
            r.angle[0].to_bits(),
            r.angle[1].to_bits(),
            r.current[0].to_bits(),
            r.current[1].to_bits(),
            r.volts[0].to_bits(),
            r.volts[1].to_bits(),
            r.plant_step,
            r.plant_stamp_us
        );
    }
    std::fs::write(path, text).map_err(|e| format!("--reference-only {}: {e}", path.display()))
}

// The demos' apps (`main = false`) run here: this allocator reports their real-time jobs'
// allocations (preempt::rt_safety; one thread-local read per allocation otherwise).
#[global_allocator]
static ALLOCATOR: preempt::rt_safety::CheckedAlloc = preempt::rt_safety::CheckedAlloc::SYSTEM;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (cfg, reference) = match parse(&argv) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("gimbal-demo: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(path) = reference {
        return match reference_only(&cfg, &path) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("gimbal-demo: {e}");
                ExitCode::from(1)
            }
        };
    }
    let stop = match preempt_io::sys::signal::install_stop_flag() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gimbal-demo: cannot install the Ctrl-C handler: {e}");
            return ExitCode::from(1);
        }
    };
    match demo::run(&cfg, &stop) {
        Ok((mut d, out, tail)) => {
            // The figures first, then the recording's end (a second Ctrl-C in between stops
            // at once and keeps them), then the figures with the recording's outcome.
            let saved = harness::save_run(&out, tail, &mut d, demo::result_json, |d, e| {
                d.output_error = e;
            });
            if d.soft {
                println!(
                    "SOFT MODE (PREEMPT_SOFT=1): SCHED_OTHER, figures are not real-time figures"
                );
            }
            for a in &d.axes {
                println!(
                    "{:>4}: step {:+.3} rad, error vs reference RMS {:.3} mrad ({}), max {:.3} mrad; overshoot {} (reference {}), settling {} (reference {})",
                    a.name,
                    a.step_rad,
                    a.rms_error_rad * 1e3,
                    a.rms_error_pct_of_step
                        .map_or("-".into(), |p| format!("{p:.2} % of step")),
                    a.max_error_rad * 1e3,
                    a.overshoot_pct.map_or("-".into(), |p| format!("{p:.1} %")),
                    a.reference_overshoot_pct
                        .map_or("-".into(), |p| format!("{p:.1} %")),
                    a.settling_ms.map_or("-".into(), |p| format!("{p:.1} ms")),
                    a.reference_settling_ms
                        .map_or("-".into(), |p| format!("{p:.1} ms")),
                );
            }
            let s = &d.samples;
            println!(
                "samples: expected {}, exchanged {}, missed {}, late outputs {}; telemetry written {}, lost {}",
                s.expected,
                s.exchanged,
                s.missed,
                s.late_outputs,
                d.telemetry.written,
                d.telemetry.lost
            );
            let m = &d.misses;
            println!(
                "missed samples: {} after an exchange that overran its period (plant late), {} after a late or long sample, {} outside the run; cpu_dma_latency {}",
                m.exchange_overran,
                m.released_late,
                m.outside,
                d.cpu_dma_latency_us
                    .map_or("not held".into(), |v| format!("held at {v} µs"))
            );
            let c = &d.controller_cpu_per_sample_ns;
            println!(
                "controller CPU per sample: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs ({:.1} % of one CPU); exchange p50 {:.1} µs p99 {:.1} µs ({})",
                c.p50 as f64 / 1e3,
                c.p99 as f64 / 1e3,
                c.max as f64 / 1e3,
                d.controller_cpu_pct,
                d.exchange_ns.p50 as f64 / 1e3,
                d.exchange_ns.p99 as f64 / 1e3,
                d.rtio_backend
            );
            println!(
                "plant: {} steps, {} late ({:.2} %), {} stalls of 1 ms or more ({}), max lateness {:.1} µs, SCHED_FIFO {}, pinned {}",
                d.plant.steps,
                d.plant.late_steps,
                100.0 * d.plant.late_steps as f64 / d.plant.steps.max(1) as f64,
                d.plant.stalls,
                d.plant.stall_classes(),
                d.plant.max_late_ns as f64 / 1e3,
                d.plant.fifo,
                d.plant.pinned
            );
            if let Some(why) = d.explain_summary() {
                print!("{why}");
            }
            harness::finish(&harness::RunEnd {
                prog: "gimbal-demo",
                what: "run",
                out: &out,
                saved: &saved,
                output_error: d.output_error.as_deref(),
                error: d.error.as_deref(),
                interrupted: d.interrupted || stop.load(Ordering::Relaxed),
            })
        }
        Err(e) => {
            eprintln!("gimbal-demo: {e}");
            ExitCode::from(1)
        }
    }
}
