//! `preempt demo gimbal`: the gimbal demonstrator of `preempt_gimbal`, optionally under the
//! built-in stressors, written as a preempt result file (kind `demo_gimbal`) next to its MCAP.
//!
//! The plant process is this binary again (hidden subcommand `__gimbal-plant`), so the demo
//! needs nothing but `preempt`.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::{Context, Result};
use preempt_gimbal::demo::{self, DemoConfig};
use preempt_gimbal::result::GimbalData;

use crate::cli::{GimbalArgs, HistoryArgs};
use crate::config::{self, StressConfig};
use crate::error::{EXIT_FAILURE, EXIT_OK, PrivilegeError, usage};
use crate::export::Sink;
use crate::measure;
use crate::results::RunResult;
use crate::session::{Saved, Session};
use crate::stress::{self, StressGuard};
use crate::warnings::Warning;

/// Runs the demo; returns the exit code.
pub(crate) fn run(a: &GimbalArgs, argv: Vec<String>) -> Result<u8> {
    let duration_ns = config::parse_duration_ns(&a.duration)?;
    let mut cfg = DemoConfig::new(&a.out);
    cfg.duration_s = duration_ns as f64 / 1e9;
    if let Some(steps) = &a.steps {
        cfg.steps = steps.parse().map_err(usage)?;
        // A step the run never reaches would be measured as "no step": refuse it.
        let samples = cfg.samples();
        if let Some(late) = cfg.steps.0.iter().find(|s| s.at_sample >= samples) {
            return Err(usage(format!(
                "--steps {steps}: a step at {} s is at or after the end of the run \
                 (--duration {}); move it earlier or lengthen --duration",
                late.at_sample as f64 * preempt_gimbal::control::SAMPLE_S,
                a.duration
            )));
        }
    }
    cfg.seed = a.seed;
    if let Some(c) = a.plant_cpu {
        cfg.plant_cpu = Some(online_cpu(c, "--plant-cpu")?);
    }
    cfg.plant_exe = std::env::current_exe().context("cannot find the preempt binary itself")?;
    cfg.plant_prefix = vec!["__gimbal-plant".into()];
    cfg.foxglove = a.foxglove.clone();
    cfg.ros2 = a.ros2;
    cfg.explain = a.explain;
    let stress_cfg = StressConfig::new(&a.stress.stress, a.stress.stress_tool);
    if !stress_cfg.kinds.is_empty() {
        cfg.stress = Some(stress::label(&stress_cfg));
    }
    cfg.validate().map_err(usage)?;
    let mut session = start_session("demo_gimbal", &a.out, "gimbal", argv, &a.history)?;
    let stop = measure::install_stop_flag()?;
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
    let (mut data, out, tail) = outcome.map_err(start_failure)?;
    if data.interrupted {
        session.warnings.push(Warning::Interrupted);
    }
    // The final file: complete (this is the run's last word), interrupted when it was.
    let mut file = session.file(RunResult::DemoGimbal(Box::new(data.clone())));
    file.interrupted = data.interrupted;
    file.failed.clone_from(&data.error);
    // The figures before the recording's end (their `output_error` says it is not finished
    // yet): the result file (atomically; a fallback file if that fails) and the history
    // record. A second Ctrl-C in the end then loses the recording, never the figures.
    let saved = session.save(&file);
    if saved.error.is_none() {
        // This run's gimbal.json is in place: the earlier one set aside goes.
        out.replaced();
    }
    measure::test_pause("mcap-tail", &stop);
    data.output_error = tail.close().1;
    file.result = RunResult::DemoGimbal(Box::new(data.clone()));
    let saved = session.amend(saved, &file);
    print(&data)?;
    eprintln!(
        "preempt: results in {} (kind demo_gimbal){}",
        out.json.display(),
        if data.output_error.is_none() {
            format!(" and {} (open it in Foxglove)", out.mcap.display())
        } else {
            String::new()
        }
    );
    exit(
        saved,
        stop.load(Relaxed) || data.interrupted,
        data.error.as_deref(),
        data.output_error.as_deref(),
        "the demo",
    )
}

/// `cpu` (the value of `flag`) when it is online; else a usage error naming the online CPUs
/// (pinning to it would fail, and the plant would run unpinned).
pub(super) fn online_cpu(cpu: usize, flag: &str) -> Result<usize> {
    let online = preempt_io::sys::cpu::online_cpus().context("cannot read the online CPUs")?;
    config::online_cpu(cpu, flag, &online)
}

/// Highest task priority of the demos' controllers (`p90` in both apps): what the runtime's
/// readiness check asks SCHED_FIFO for.
const CONTROLLER_PRIORITY: u8 = 90;

/// The error of a demo whose controller could not start (`why`, from the demo): a
/// [`PrivilegeError`] (exit 3) when this process lacks what the runtime's readiness check
/// needs for real-time executors (SCHED_FIFO at p90: CAP_SYS_NICE or RLIMIT_RTPRIO; mlockall:
/// CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK), else a plain failure (exit 1).
pub(super) fn start_failure(why: String) -> anyhow::Error {
    if !preempt::soft_requested() && lacks_real_time_privilege(CONTROLLER_PRIORITY) {
        anyhow::Error::new(PrivilegeError(why))
    } else {
        anyhow::anyhow!(why)
    }
}

fn lacks_real_time_privilege(priority: u8) -> bool {
    use preempt_io::sys::caps::{self, Capability};
    use preempt_io::sys::limits;
    let has = |c| caps::has_effective(c).unwrap_or(false);
    let fifo =
        has(Capability::SysNice) || limits::rtprio().is_ok_and(|l| l.allows(u64::from(priority)));
    let lock = has(Capability::IpcLock) || limits::memlock().is_ok_and(|l| l.soft.is_none());
    !(fifo && lock)
}

/// The exit of a demo whose results are saved: 1 when it stopped on an `error` (the plant or
/// the controller failed), 130/143 when a signal stopped it, else 0; an optional output that
/// failed (`output_error`: the MCAP's tail) is said and turns a success into 1, the figures
/// being written already.
pub(super) fn exit(
    saved: Saved,
    stopped: bool,
    error: Option<&str>,
    output_error: Option<&str>,
    what: &str,
) -> Result<u8> {
    let code = if let Some(e) = error {
        eprintln!("preempt: {what} stopped early: {e} (results so far kept, marked interrupted)");
        EXIT_FAILURE
    } else if stopped {
        measure::interrupted_exit_code()
    } else {
        EXIT_OK
    };
    match output_error {
        Some(e) if code == EXIT_OK && saved.error.is_none() => Err(anyhow::anyhow!(
            "{e}; the figures were written (result file and history) before it"
        )),
        Some(e) => {
            eprintln!("preempt: {e}");
            saved.exit(code)
        }
        None => saved.exit(code),
    }
}

/// A demo's run session (shared with `demo uav`): `DIR/STEM.json` and `DIR/STEM.mcap` checked
/// writable before the plant starts (`DIR` created), the machine's warnings for the
/// controller's CPU 0, the history as `history` says.
pub(super) fn start_session(
    kind: &'static str,
    dir: &Path,
    stem: &str,
    argv: Vec<String>,
    history: &HistoryArgs,
) -> Result<Session> {
    let files = preempt_rig::outputs::Outputs::prepare(dir, stem).map_err(usage)?;
    // The names in DIR are the demo's own: the fix is another directory, not another name.
    for f in [&files.json, &files.mcap] {
        if f.is_dir() {
            return Err(usage(format!(
                "--out {}: cannot write {}: it is a directory; remove it or choose another \
                 --out directory",
                dir.display(),
                f.display()
            )));
        }
    }
    let mut session = Session::start(
        kind,
        argv,
        Sink::new(Some(&files.json), None),
        &[&files.mcap],
        history.config(),
    )?;
    session.lock_dir(dir, "--out")?;
    session.add_machine_warnings(&[0]);
    Ok(session)
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
        "plant: {} steps at 40 kHz, {} late, max lateness {} us, stalls >= 1 ms {} ({}), duty cycle {}, SCHED_FIFO {}, pinned {}",
        d.plant.steps,
        d.plant.late_steps,
        ms(d.plant.max_late_ns),
        d.plant.stalls,
        d.plant.stall_classes(),
        d.plant
            .duty_pct()
            .map_or("-".into(), |p| format!("{p:.1} %")),
        d.plant.fifo,
        d.plant.pinned
    )?;
    if let Some(line) = d.plant.throttled_line() {
        writeln!(out, "{line}")?;
    }
    if let Some(why) = d.explain_summary() {
        write!(out, "{why}")?;
    }
    out.flush()?;
    Ok(())
}
