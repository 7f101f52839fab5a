//! `preempt demo uav`: the UAV demonstrator of `preempt_uav`, one flight or the study's
//! matrix, written as a preempt result file (kind `demo_uav`) next to its MCAP.
//!
//! The simulator process is this binary again (hidden subcommand `__uav-sim`). A matrix
//! flies each cell as a child `preempt demo uav --policy P [--stress all]` (preempt runs one
//! app per process, and a cell's file is then exactly what that command writes), collects
//! the cells into DIR/uav.json as they finish (`complete: false` until the last), and marks
//! the cell cut by Ctrl-C/SIGTERM and those after it "not measured": finished cells are kept.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use anyhow::{Context, Result};
use preempt_io::sys::clock::monotonic_now_ns;
use preempt_io::sys::sched::Policy;
use preempt_uav::control::PERIOD_NS;
use preempt_uav::demo::{self, FlightConfig, PolicyRow, UavData};
use preempt_uav::result::FlightCell;

use crate::cli::UavArgs;
use crate::config::{self, StressConfig};
use crate::error::{EXIT_OK, usage};
use crate::export::Sink;
use crate::measure::matrix::slug;
use crate::results::{ResultFile, RunResult};
use crate::session::Session;
use crate::stress::StressGuard;
use crate::warnings::Warning;
use crate::{measure, stress};

/// The study's eight policy rows (seed 001), as `--policy` spells them.
pub(crate) const MATRIX_POLICIES: [&str; 8] = [
    "other:0",
    "other:-19",
    "rr:50",
    "rr:99",
    "fifo:50",
    "fifo:99",
    "deadline:400",
    "deadline:800",
];

/// Parses `--policy`: `fifo:PRIO`, `rr:PRIO`, `other:NICE`, `deadline:RUNTIME_US` (period
/// and deadline = the 4 ms control period); labels as `preempt matrix` names its rows.
///
/// # Errors
/// A message naming the flag and the accepted forms.
pub(crate) fn policy_row(spec: &str) -> Result<PolicyRow, String> {
    let bad = || {
        format!(
            "--policy {spec}: expected fifo:1..99, rr:1..99, other:-20..19 or deadline:RUNTIME_US \
             (e.g. fifo:99, other:-19, deadline:400)"
        )
    };
    let (kind, value) = spec.split_once(':').ok_or_else(bad)?;
    let prio = || value.parse::<u8>().ok().filter(|p| (1..=99).contains(p));
    let (label, policy) = match kind {
        "fifo" => {
            let p = prio().ok_or_else(bad)?;
            (format!("SCHED_FIFO {p}"), Policy::Fifo { priority: p })
        }
        "rr" => {
            let p = prio().ok_or_else(bad)?;
            (format!("SCHED_RR {p}"), Policy::RoundRobin { priority: p })
        }
        "other" => {
            let n = value
                .parse::<i32>()
                .ok()
                .filter(|n| (-20..=19).contains(n))
                .ok_or_else(bad)?;
            (format!("SCHED_OTHER nice {n}"), Policy::Other { nice: n })
        }
        "deadline" => {
            let r = value
                .parse::<u64>()
                .ok()
                .filter(|r| (10..PERIOD_NS / 1000).contains(r))
                .ok_or_else(|| format!("{}: the runtime must be 10 to 3999 us", bad()))?;
            (
                format!("SCHED_DEADLINE {r}us"),
                Policy::Deadline {
                    runtime_ns: r * 1000,
                    deadline_ns: PERIOD_NS,
                    period_ns: PERIOD_NS,
                },
            )
        }
        _ => return Err(bad()),
    };
    Ok(PolicyRow { label, policy })
}

/// Runs the demo; returns the exit code.
pub(crate) fn run(a: &UavArgs, argv: Vec<String>) -> Result<u8> {
    let mut cfg = FlightConfig::new(&a.out);
    if let Some(d) = &a.duration {
        cfg.duration_s = config::parse_duration_ns(d)? as f64 / 1e9;
    }
    cfg.seed = a.seed;
    if let Some(c) = a.sim_cpu {
        cfg.sim_cpu = Some(super::demo::online_cpu(c, "--sim-cpu")?);
    }
    cfg.sim_exe = std::env::current_exe().context("cannot find the preempt binary itself")?;
    cfg.sim_prefix = vec!["__uav-sim".into()];
    cfg.explain = a.explain;
    cfg.ros2 = a.ros2;
    cfg.validate().map_err(usage)?;
    if a.matrix {
        return matrix(a, &cfg, argv);
    }
    cfg.policy = policy_row(&a.policy).map_err(usage)?;
    let stress_cfg = StressConfig::new(&a.stress.stress, a.stress.stress_tool);
    if !stress_cfg.kinds.is_empty() {
        cfg.stress = stress::label(&stress_cfg);
    }
    let session = super::demo::start_session("demo_uav", &a.out, "uav", argv, &a.history)?;
    let stop = measure::install_stop_flag()?;
    let guard = StressGuard::start(&stress_cfg)?;
    let soft = preempt::soft_requested();
    eprintln!(
        "preempt: UAV flight for {:.1} s, control thread {}{}, stress {}",
        cfg.duration_s,
        cfg.policy.label,
        if soft {
            " (not applied: soft mode, SCHED_OTHER)"
        } else {
            ""
        },
        cfg.stress
    );
    let outcome = demo::fly(&cfg, &stop);
    drop(guard);
    let (cell, out, tail) = outcome.map_err(super::demo::start_failure)?;
    let mut data = demo::single(&cfg, cell);
    let mut file = result_file(&session, &data);
    file.failed.clone_from(&data.cells[0].error);
    // The figures before the recording's end, as `demo gimbal` (a second Ctrl-C in the end
    // loses the recording, never the figures); then once more with the recording's outcome.
    let saved = session.save(&file);
    if saved.error.is_none() {
        // This flight's uav.json is in place: the earlier one set aside goes.
        out.replaced();
    }
    measure::test_pause("mcap-tail", &stop);
    data.cells[0].output_error = tail.close().1;
    file.result = RunResult::DemoUav(Box::new(data.clone()));
    let saved = session.amend(saved, &file);
    print(&data, &mut std::io::stdout().lock())?;
    let c = &data.cells[0];
    eprintln!(
        "preempt: results in {} (kind demo_uav){}",
        out.json.display(),
        if c.output_error.is_none() {
            format!(" and {} (open it in Foxglove)", out.mcap.display())
        } else {
            String::new()
        }
    );
    super::demo::exit(
        saved,
        stop.load(Relaxed) || data.interrupted,
        c.error.as_deref(),
        c.output_error.as_deref(),
        "the flight",
    )
}

/// The session's final result file of `data` (complete: it is the run's last word), marked
/// interrupted (and an `interrupted` warning) when the flight or the matrix stopped early.
fn result_file(session: &Session, data: &UavData) -> ResultFile {
    let mut file = session.file(RunResult::DemoUav(Box::new(data.clone())));
    file.interrupted = data.interrupted;
    if data.interrupted {
        file.warnings
            .push(Warning::Interrupted.to_record_in("demo_uav"));
    }
    file
}

/// A cell that did not fly, with the reason.
fn not_measured(row: &PolicyRow, stress: &str, why: String) -> FlightCell {
    FlightCell {
        policy: row.label.clone(),
        priority_or_nice: row.priority_or_nice(),
        runtime_us: row.runtime_us(),
        stress: stress.into(),
        interrupted: true,
        error: Some(why),
        ..FlightCell::default()
    }
}

/// Flies one matrix cell as a child process; its cell, or why it has none.
fn fly_cell(
    a: &UavArgs,
    cfg: &FlightConfig,
    spec: &str,
    heavy: bool,
    dir: &Path,
    stop: &AtomicBool,
) -> Result<FlightCell, String> {
    let mut cmd = Command::new(&cfg.sim_exe);
    cmd.args(["demo", "uav", "--policy", spec, "--seed"])
        .arg(cfg.seed.to_string())
        .arg("--duration")
        .arg(format!("{}ms", (cfg.duration_s * 1e3).round() as u64))
        .arg("--out")
        .arg(dir)
        // The matrix records itself, once; its cells are not runs of their own.
        .arg("--no-history");
    if cfg.explain {
        cmd.arg("--explain");
    }
    if let Some(c) = a.sim_cpu {
        cmd.arg("--sim-cpu").arg(c.to_string());
    }
    if heavy {
        let tool = StressConfig::heavy(a.stress.stress_tool);
        cmd.args(["--stress", "all", "--stress-tool", tool.tool_name()]);
    }
    let spawned_unix_ms = crate::results::unix_ms_now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the cell's flight: {e}"))?;
    // Ctrl-C reaches a terminal's whole group, SIGTERM only this process: either way the
    // cell in flight is cut (and "not measured"), its simulator and stressors die with it.
    let status = loop {
        if stop.load(Relaxed) {
            let _ = child.kill();
            let _ = child.wait();
            return Err("not measured: interrupted before the cell finished".into());
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {
                let next = monotonic_now_ns() + 20_000_000;
                let _ = preempt_io::sys::clock::sleep_until_ns(
                    preempt_io::sys::clock::ClockId::Monotonic,
                    next,
                );
            }
            Err(e) => return Err(format!("waiting for the cell's flight: {e}")),
        }
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    let text = std::fs::read_to_string(dir.join("uav.json")).unwrap_or_default();
    // Only this flight's file: a flight that never started leaves an earlier one in place.
    let file: Option<ResultFile> = serde_json::from_str::<ResultFile>(&text)
        .ok()
        .filter(|f| f.started_unix_ms >= spawned_unix_ms);
    let cell = match file.map(|f| f.result) {
        Some(RunResult::DemoUav(mut d)) if !d.cells.is_empty() => d.cells.swap_remove(0),
        _ => {
            let last = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no result file");
            return Err(format!("the flight failed ({status}): {last}"));
        }
    };
    Ok(cell)
}

fn matrix(a: &UavArgs, base: &FlightConfig, argv: Vec<String>) -> Result<u8> {
    let rows: Vec<(&str, PolicyRow)> = MATRIX_POLICIES
        .iter()
        .map(|s| policy_row(s).map(|r| (*s, r)))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!(e))?;
    crate::export::create_output_dir(&a.out).map_err(|e| {
        usage(format!(
            "--out {}: {e:#}; choose a directory you can write",
            a.out.display()
        ))
    })?;
    let summary = a.out.join("uav.json");
    let mut session = Session::start(
        "demo_uav",
        argv,
        Sink::new(Some(&summary), None),
        &[],
        a.history.config(),
    )?;
    session.lock_dir(&a.out, "--out")?;
    session.add_machine_warnings(&[0]);
    let stop = measure::install_stop_flag()?;
    let mut data = UavData {
        duration_s: base.duration_s,
        mission_s: base.mission.duration_s(),
        square_window_s: base.mission.square_window(),
        seed: base.seed,
        soft: preempt::soft_requested(),
        matrix: true,
        interrupted: true, // until the last cell
        cells: Vec::new(),
    };
    // Written (marked partial) before anything flies, rewritten after every cell.
    let partial_file = |session: &Session, d: &UavData| {
        let mut f = result_file(session, d);
        f.complete = false;
        f
    };
    session.write_partial(&partial_file(&session, &data))?;
    let total = rows.len() * 2;
    eprintln!(
        "preempt: UAV matrix, {total} flights of {:.1} s (8 policies x idle/heavy stress)",
        base.duration_s
    );
    for (level, heavy) in [("none", false), ("heavy", true)] {
        let stress_label = if heavy { "heavy" } else { "none" };
        for (spec, row) in &rows {
            let cell = if stop.load(Relaxed) {
                not_measured(row, stress_label, "not measured: interrupted".into())
            } else {
                eprintln!(
                    "preempt: [{}/{total}] {}, stress {stress_label}",
                    data.cells.len() + 1,
                    row.label
                );
                let dir = a.out.join(format!("{level}-{}", slug(&row.label)));
                match fly_cell(a, base, spec, heavy, &dir, &stop) {
                    Ok(mut c) => {
                        c.stress = stress_label.into();
                        if c.interrupted && stop.load(Relaxed) {
                            not_measured(row, stress_label, "not measured: interrupted".into())
                        } else {
                            c
                        }
                    }
                    Err(e) => not_measured(row, stress_label, e),
                }
            };
            data.cells.push(cell);
            let mut partial = data.clone();
            strip_series(&mut partial);
            session.write_partial(&partial_file(&session, &partial))?;
        }
    }
    data.interrupted = stop.load(Relaxed) || data.cells.iter().any(|c| c.interrupted);
    strip_series(&mut data);
    let saved = session.save(&result_file(&session, &data));
    print(&data, &mut std::io::stdout().lock())?;
    eprintln!(
        "preempt: results in {} (kind demo_uav) and one directory per cell",
        summary.display()
    );
    if stop.load(Relaxed) {
        return saved.exit(measure::interrupted_exit_code());
    }
    if data.cells.iter().all(|c| c.flown_steps == 0) {
        anyhow::bail!(
            "no cell of the matrix flew: {}",
            data.cells
                .first()
                .and_then(|c| c.error.clone())
                .unwrap_or_default()
        );
    }
    saved.exit(EXIT_OK)
}

/// Keeps the per-step series of the worst cell only (the report's time series).
fn strip_series(d: &mut UavData) {
    let worst = crate::results::uav::worst_cell(d).map(|c| (c.policy.clone(), c.stress.clone()));
    for c in &mut d.cells {
        if worst.as_ref() != Some(&(c.policy.clone(), c.stress.clone())) {
            c.series = None;
        }
    }
}

fn print(d: &UavData, out: &mut impl Write) -> Result<()> {
    if d.soft {
        writeln!(
            out,
            "SOFT MODE (PREEMPT_SOFT=1): SCHED_OTHER, no policy applied; not real-time figures"
        )?;
    }
    writeln!(
        out,
        "{:<22} {:<6} {:>8} {:>8} {:>9} {:>6} {:>8} {:>8} {:>9} {:>9} {:>8} {:>7}  crashed",
        "policy",
        "stress",
        "lat_p50",
        "lat_p99",
        "lat_max",
        "missed",
        "cmp_p50",
        "cmp_max",
        "rms_mm",
        "square_mm",
        "max_mm",
        "att_deg"
    )?;
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    for c in &d.cells {
        if c.flown_steps == 0 {
            writeln!(
                out,
                "{:<22} {:<6} {}",
                c.policy,
                c.stress,
                c.error.as_deref().unwrap_or("not measured")
            )?;
            continue;
        }
        writeln!(
            out,
            "{:<22} {:<6} {:>8} {:>8} {:>9} {:>6} {:>8} {:>8} {:>9.2} {:>9} {:>8.2} {:>7.2}  {}",
            c.policy,
            c.stress,
            us(c.latency.p50),
            us(c.latency.p99),
            us(c.latency.max),
            c.missed_periods,
            us(c.compute_ns.p50),
            us(c.compute_ns.max),
            c.rms_position_error_m * 1e3,
            c.rms_position_error_square_m
                .map_or("-".into(), |v| format!("{:.2}", v * 1e3)),
            c.max_position_error_m * 1e3,
            c.max_attitude_error_rad.to_degrees(),
            if c.crashed { "CRASHED" } else { "no" }
        )?;
    }
    writeln!(
        out,
        "latency = control job start - release (us); compute = the cascade's time (us); errors \
         against the same mission flown with ideal timing (mm, degrees)"
    )?;
    for c in &d.cells {
        if let Some(line) = c.ros2_line() {
            writeln!(out, "{line}")?;
        }
        if let Some(line) = c.sim.throttled_line() {
            writeln!(out, "{} {}: {line}", c.policy, c.stress)?;
        }
    }
    print_explained(d, out)?;
    out.flush()?;
    Ok(())
}

/// `--explain`: one flight's top causes (at most six lines); a matrix's, one line per cell
/// (the cell's main cause, or why its misses were not explained).
fn print_explained(d: &UavData, out: &mut impl Write) -> Result<()> {
    if let [c] = d.cells.as_slice() {
        if let Some(s) = c.explained.summary() {
            write!(out, "{s}")?;
        }
        return Ok(());
    }
    for c in &d.cells {
        let line = match (&c.explained.explain, &c.explained.explain_skipped) {
            (Some(x), _) => {
                let top =
                    preempt_trace::summary_lines(&x.top_causes, x.explained as usize, "misses", 1);
                format!(
                    "{} explained, {} not{}",
                    x.explained,
                    x.unexplained,
                    top.first().map_or(String::new(), |t| format!("; top: {t}"))
                )
            }
            (None, Some(why)) => format!("not explained: {why}"),
            (None, None) => continue,
        };
        writeln!(out, "misses of {} {}: {line}", c.policy, c.stress)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_as_the_study_names_them() {
        let r = policy_row("deadline:400").unwrap();
        assert_eq!(r.label, "SCHED_DEADLINE 400us");
        assert_eq!(r.runtime_us(), Some(400));
        assert_eq!(
            policy_row("other:-19").unwrap().label,
            "SCHED_OTHER nice -19"
        );
        assert_eq!(policy_row("fifo:99").unwrap().priority_or_nice(), Some(99));
        for bad in [
            "fifo",
            "fifo:0",
            "rr:100",
            "other:-21",
            "deadline:4000",
            "idle:1",
        ] {
            assert!(policy_row(bad).is_err(), "{bad}");
        }
        let labels: Vec<String> = MATRIX_POLICIES
            .iter()
            .map(|s| policy_row(s).unwrap().label)
            .collect();
        let study: Vec<String> = crate::config::matrix_rows(PERIOD_NS)
            .into_iter()
            .map(|(l, _)| l)
            .collect();
        assert_eq!(labels, study, "the same rows as `preempt matrix`");
    }
}
