//! The report's section for `demo_gimbal` results: control quality against the ideal-timing
//! reference per axis, the step response of each axis (real against reference) and the
//! tracking error over time as plots, the sample and telemetry bookkeeping with the missed
//! samples' causes, each task's timing, the controller's deadline misses explained from the
//! kernel trace (a run with `--explain`; the bars and tables of [`super::explain`]), and the
//! response-time analysis of the controller.

use super::Builder;
use super::html::{Cell, num, table, td};
use super::plots::{self, Line};
use crate::results::input::Input;
use preempt_gimbal::control::{AXES, SAMPLE_S, Steps};
use preempt_gimbal::result::GimbalData;
use preempt_rig::result::ExplainOutcome;

/// Shown before each step in its response plot, ms.
const BEFORE_STEP_MS: f64 = 20.0;

fn opt(v: Option<f64>, digits: usize) -> Cell {
    num(v.map_or("-".to_string(), |v| format!("{v:.digits$}")))
}

fn us(ns: u64) -> Cell {
    num(format!("{:.1}", ns as f64 / 1e3))
}

/// Appends the section of one `demo_gimbal` result.
///
/// # Errors
/// A plot of the explained misses cannot be drawn.
pub(super) fn section(b: &mut Builder, i: &Input, d: &GimbalData) -> anyhow::Result<()> {
    let load = d
        .stress
        .as_ref()
        .map_or("idle".to_string(), |s| format!("stress {s}"));
    b.section(
        &format!("gimbal-{}", i.label),
        &format!("Gimbal demonstrator: {} ({load})", i.label),
    );
    b.p(&format!(
        "From {}. {:.1} s, steps {}, seed {}{}{}. Errors are real minus reference angle per \
         10 kHz sample; the reference runs the same plant and controllers on the mock clock \
         with ideal timing. The trajectories are in the MCAP next to the JSON.",
        i.source,
        d.duration_s,
        d.steps,
        d.seed,
        if d.soft {
            "; SOFT MODE (SCHED_OTHER): not real-time figures"
        } else {
            ""
        },
        d.error
            .as_ref()
            .map_or(String::new(), |e| format!("; stopped early: {e}")),
    ));
    if let Some(line) = d.plant.throttled_line() {
        b.p(&line);
    }
    b.raw(&axes_table(d));
    figures(b, i, d);
    b.raw(&bookkeeping_table(d));
    if let Some(t) = task_table(d) {
        b.raw(&t);
    }
    explained(
        b,
        &i.label,
        &format!("gimbal controller, {}", i.label),
        &d.explained,
    )?;
    rta(b, d);
    Ok(())
}

/// The control quality per axis against the ideal-timing reference.
fn axes_table(d: &GimbalData) -> String {
    let rows: Vec<Vec<Cell>> = d
        .axes
        .iter()
        .map(|a| {
            vec![
                td(&a.name),
                num(format!("{:.3}", a.step_rad)),
                num(format!("{:.3}", a.rms_error_rad * 1e3)),
                opt(a.rms_error_pct_of_step, 2),
                num(format!("{:.3}", a.max_error_rad * 1e3)),
                opt(a.overshoot_pct, 1),
                opt(a.reference_overshoot_pct, 1),
                opt(a.settling_ms, 1),
                opt(a.reference_settling_ms, 1),
            ]
        })
        .collect();
    table(
        &[
            "axis",
            "step rad",
            "RMS error mrad",
            "% of step",
            "max error mrad",
            "overshoot %",
            "reference",
            "settling ms",
            "reference",
        ],
        &rows,
    )
}

/// The sample, plant and telemetry bookkeeping with the missed samples' causes.
fn bookkeeping_table(d: &GimbalData) -> String {
    let s = &d.samples;
    let c = &d.controller_cpu_per_sample_ns;
    table(
        &["figure", "value"],
        &[
            vec![
                td("samples expected / exchanged / missed"),
                num(format!("{} / {} / {}", s.expected, s.exchanged, s.missed)),
            ],
            vec![
                td("stale voltages (controllers late for the next sample)"),
                num(s.late_outputs.to_string()),
            ],
            vec![
                td("missed after an exchange that overran its period (plant late)"),
                num(d.misses.exchange_overran.to_string()),
            ],
            vec![
                td("missed after a late or long sample (controller's CPU taken)"),
                num(d.misses.released_late.to_string()),
            ],
            vec![
                td(
                    "plant stalls ≥ 1 ms (preempted: another thread ran on its CPU; in the kernel in its sleep call; stolen: the hypervisor took the vCPU; overslept: off its CPU past its wake-up, not switched out)",
                ),
                num(format!("{} ({})", d.plant.stalls, d.plant.stall_classes())),
            ],
            vec![
                td(
                    "plant throttled (real-time class stopped by the kernel for a throttling window)",
                ),
                num(d.plant.throttled.to_string()),
            ],
            vec![
                td("plant duty cycle (its loop's CPU time / wall time)"),
                num(d
                    .plant
                    .duty_pct()
                    .map_or("-".into(), |p| format!("{p:.1} %"))),
            ],
            vec![
                td("cpu_dma_latency held"),
                num(d
                    .cpu_dma_latency_us
                    .map_or("no".into(), |v| format!("{v} µs"))),
            ],
            vec![
                td("telemetry written / lost"),
                num(format!("{} / {}", d.telemetry.written, d.telemetry.lost)),
            ],
            vec![
                td("controller CPU per sample p50 / p99 / max (µs)"),
                num(format!(
                    "{:.1} / {:.1} / {:.1}",
                    c.p50 as f64 / 1e3,
                    c.p99 as f64 / 1e3,
                    c.max as f64 / 1e3
                )),
            ],
            vec![
                td("exchange p50 / p99 (µs)"),
                num(format!(
                    "{:.1} / {:.1}",
                    d.exchange_ns.p50 as f64 / 1e3,
                    d.exchange_ns.p99 as f64 / 1e3
                )),
            ],
            vec![
                td("plant steps / late steps / max lateness (µs)"),
                num(format!(
                    "{} / {} / {:.1}",
                    d.plant.steps,
                    d.plant.late_steps,
                    d.plant.max_late_ns as f64 / 1e3
                )),
            ],
        ],
    )
}

/// Each task's timing, from the app's own accounting (none when the result has no tasks).
fn task_table(d: &GimbalData) -> Option<String> {
    let tasks = d.tasks.get("tasks").and_then(|t| t.as_array())?;
    let rows: Vec<Vec<Cell>> = tasks
        .iter()
        .map(|t| {
            let s = &t["stats"];
            let n = |k: &str| s[k].as_u64().unwrap_or(0);
            vec![
                td(s["name"].as_str().unwrap_or("?")),
                num(t["priority"].as_u64().unwrap_or(0).to_string()),
                num(n("releases").to_string()),
                num(n("skipped_releases").to_string()),
                us(s["exec_mean_ns"].as_f64().unwrap_or(0.0) as u64),
                us(n("exec_max_ns")),
                num(n("deadline_misses").to_string()),
            ]
        })
        .collect();
    Some(table(
        &[
            "task",
            "priority",
            "releases",
            "skipped",
            "exec mean µs",
            "exec max µs",
            "deadline misses",
        ],
        &rows,
    ))
}

/// A demo's explained deadline misses (the gimbal's run, each UAV flight): the bars and
/// tables of [`super::explain::app_section`], or why the misses were not explained; nothing
/// when explaining was not asked. `label` names the figures' files.
pub(super) fn explained(
    b: &mut Builder,
    label: &str,
    subject: &str,
    outcome: &ExplainOutcome,
) -> anyhow::Result<()> {
    if let Some(x) = &outcome.explain {
        super::explain::app_section(b, label, subject, x)?;
    } else if let Some(why) = &outcome.explain_skipped {
        b.p(&format!(
            "Deadline misses not explained ({subject}): {why}."
        ));
    }
    Ok(())
}

/// Step response per axis and tracking error over time, from the result's series.
fn figures(b: &mut Builder, i: &Input, d: &GimbalData) {
    let sr = &d.series;
    let steps: Option<Steps> = d.steps.parse().ok();
    for (a, name) in AXES.iter().enumerate() {
        let Some((from, to, at)) = steps.as_ref().and_then(|s| s.first_step(a)) else {
            continue;
        };
        let at_ms = at as f64 * SAMPLE_S * 1e3;
        let window = |t: f64| t >= at_ms - BEFORE_STEP_MS && t <= at_ms + 300.0;
        let pick = |f: &dyn Fn(usize) -> Option<f64>| -> Vec<(f64, Option<f64>)> {
            sr.t_ms
                .iter()
                .enumerate()
                .filter(|(_, t)| window(**t))
                .map(|(j, t)| (t - at_ms, f(j)))
                .collect()
        };
        let lines = [
            Line {
                label: "real".into(),
                points: pick(&|j| sr.real_rad.get(j).and_then(|p| p[a])),
            },
            Line {
                label: "reference (ideal timing)".into(),
                points: pick(&|j| sr.reference_rad.get(j).map(|p| p[a])),
            },
            Line {
                label: "setpoint".into(),
                points: pick(&|j| sr.setpoint_rad.get(j).map(|p| p[a])),
            },
        ];
        let title = format!("{name}: step {from:+.2} → {to:+.2} rad ({})", i.label);
        match plots::lines(&title, "ms after the step", "angle (rad)", &lines) {
            Ok(svg) => b.fig(
                &format!("gimbal-{}-{name}-step", i.label),
                svg,
                &format!(
                    "Step response of the {name} axis: the real run against the reference (same plant, \
                     exchange and controllers with ideal timing, same seed). Gaps are missed samples."
                ),
            ),
            Err(e) => b.p(&format!("{name} step response: cannot draw the plot: {e:#}")),
        }
    }
    let error = |a: usize| Line {
        label: format!("{} (real − reference)", AXES[a]),
        points: sr
            .t_ms
            .iter()
            .enumerate()
            .map(|(j, t)| {
                let e = sr
                    .real_rad
                    .get(j)
                    .and_then(|p| p[a])
                    .zip(sr.reference_rad.get(j))
                    .map(|(r, x)| (r - x[a]) * 1e3);
                (*t, e)
            })
            .collect(),
    };
    match plots::lines(
        &format!("Tracking error against the reference ({})", i.label),
        "time (ms)",
        "error (mrad)",
        &[error(0), error(1)],
    ) {
        Ok(svg) => b.fig(
            &format!("gimbal-{}-error", i.label),
            svg,
            "Angle error against the ideal-timing reference over the run, per axis (the \
             series is dense for 300 ms after each step, sparse elsewhere).",
        ),
        Err(e) => b.p(&format!("tracking error: cannot draw the plot: {e:#}")),
    }
}

/// The response-time analysis of the controller app, from its measured execution times.
fn rta(b: &mut Builder, d: &GimbalData) {
    let Some(verdict) = d.rta.get("verdict").and_then(|v| v.as_str()) else {
        return;
    };
    b.h3("Response-time analysis");
    let notes: Vec<&str> = d.rta["notes"]
        .as_array()
        .map(|n| n.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    b.p(&format!(
        "Verdict: {verdict}. Worst-case response times from the measured execution times \
         (preempt_stats::rta: fixed priorities, PCP blocking).{}",
        if notes.is_empty() {
            String::new()
        } else {
            format!(" Notes: {}", notes.join("; "))
        }
    ));
    if let Some(e) = d.rta["report"].get("error").and_then(|e| e.as_str()) {
        b.p(&format!("No analysis: {e}"));
        return;
    }
    let Some(tasks) = d.rta["report"]["tasks"].as_array() else {
        return;
    };
    let rows: Vec<Vec<Cell>> = tasks
        .iter()
        .map(|t| {
            let n = |k: &str| t[k].as_u64().unwrap_or(0);
            vec![
                td(t["name"].as_str().unwrap_or("?")),
                num(n("core").to_string()),
                num(n("priority").to_string()),
                us(n("wcet_ns")),
                us(n("blocking_ns")),
                us(n("interference_ns")),
                us(n("response_ns")),
                us(n("deadline_ns")),
                td(if t["schedulable"].as_bool().unwrap_or(false) {
                    "yes"
                } else {
                    "NO"
                }),
            ]
        })
        .collect();
    b.raw(&table(
        &[
            "task",
            "core",
            "priority",
            "WCET µs",
            "blocking µs",
            "interference µs",
            "response µs",
            "deadline µs",
            "schedulable",
        ],
        &rows,
    ));
}
