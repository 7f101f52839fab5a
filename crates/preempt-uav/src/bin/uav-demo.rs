//! `uav-demo`: one flight of the UAV demonstrator (the code `preempt demo uav` runs for one
//! flight), without the CLI: what the UAV's ROS 2 interop test and `scripts/bench_ros2.sh uav`
//! run, as `gimbal-demo` is for the gimbal.
//!
//! ```text
//! uav-demo [--duration S] [--seed N] [--out DIR] [--sim-cpu N|none] [--ros2] [--explain]
//! ```
//!
//! Flies the mission under SCHED_FIFO 99 (the study's `fifo:99` row; `preempt demo uav
//! --policy` flies the others), writes `DIR/uav.json` (kind `demo_uav`) and `DIR/uav.mcap`,
//! and prints the flight's figures. Ctrl-C stops the flight and keeps both files (marked
//! interrupted). Exit codes: 0 ok, 1 error (also a result file or recording that could not
//! be written: the figures are printed first), 2 bad arguments, 130 interrupted (Ctrl-C), 143
//! stopped by SIGTERM. `--help` prints the usage and exits 0.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use preempt_rig::harness;
use preempt_uav::demo::{self, FlightConfig};

const USAGE: &str =
    "usage: uav-demo [--duration S] [--seed N] [--out DIR] [--sim-cpu N|none] [--ros2] [--explain]";

/// The flight's configuration; `None` for `--help`.
fn parse(argv: &[String]) -> Result<Option<FlightConfig>, String> {
    let mut cfg = FlightConfig::new(&PathBuf::from("uav-demo"));
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
                    .map_err(|_| "--duration: expected seconds, e.g. 6 or 6s".to_owned())?;
            }
            "--seed" => {
                cfg.seed = value()?
                    .parse()
                    .map_err(|_| "--seed: expected an unsigned integer".to_owned())?;
            }
            "--out" => cfg.out_dir = PathBuf::from(value()?),
            "--sim-cpu" => cfg.sim_cpu = preempt_rig::harness::cpu_or_none("--sim-cpu", value()?)?,
            "--ros2" => cfg.ros2 = true,
            "--explain" => cfg.explain = true,
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown flag '{other}' ({USAGE})")),
        }
    }
    cfg.validate()?;
    Ok(Some(cfg))
}

// The flight's app (`main = false`) runs here: this allocator reports its real-time jobs'
// allocations (preempt::rt_safety; one thread-local read per allocation otherwise), as in
// `preempt`.
#[global_allocator]
static ALLOCATOR: preempt::rt_safety::CheckedAlloc = preempt::rt_safety::CheckedAlloc::SYSTEM;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let cfg = match parse(&argv) {
        Ok(Some(c)) => c,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("uav-demo: {e}");
            return ExitCode::from(2);
        }
    };
    let stop = match preempt_io::sys::signal::install_stop_flag() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("uav-demo: cannot install the Ctrl-C handler: {e}");
            return ExitCode::from(1);
        }
    };
    let (cell, out, tail) = match demo::fly(&cfg, &stop) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("uav-demo: {e}");
            return ExitCode::from(1);
        }
    };
    let mut data = demo::single(&cfg, cell);
    // The figures before the recording's end (as `preempt demo uav`): a second Ctrl-C in the
    // end loses the recording, never the figures; then once more with the recording's outcome.
    let saved = harness::save_run(&out, tail, &mut data, demo::result_json, |d, e| {
        d.cells[0].output_error = e;
    });
    let c = &data.cells[0];
    if c.soft {
        println!("SOFT MODE (PREEMPT_SOFT=1): SCHED_OTHER, figures are not real-time figures");
    }
    let us = |ns: u64| ns as f64 / 1e3;
    println!(
        "{}: {} of {} steps flown, {} missed; release latency p50 {:.1} µs p99 {:.1} µs max {:.1} µs; control job p50 {:.1} µs p99 {:.1} µs; RMS position error {:.2} mm; crashed {}",
        c.policy,
        c.flown_steps,
        c.expected_steps,
        c.missed_periods,
        us(c.latency.p50),
        us(c.latency.p99),
        us(c.latency.max),
        us(c.control_exec_ns.p50),
        us(c.control_exec_ns.p99),
        c.rms_position_error_m * 1e3,
        c.crashed
    );
    if let Some(line) = c.ros2_line() {
        println!("{line}");
    }
    harness::finish(&harness::RunEnd {
        prog: "uav-demo",
        what: "flight",
        out: &out,
        saved: &saved,
        output_error: c.output_error.as_deref(),
        error: c.error.as_deref(),
        interrupted: c.interrupted || stop.load(Ordering::Relaxed),
    })
}
