//! The report's section for `demo_gimbal` results: control quality against the ideal-timing
//! reference per axis, the sample and telemetry bookkeeping, and each task's timing.

use super::Builder;
use super::html::{Cell, num, table, td};
use crate::results::input::Input;
use preempt_gimbal::result::GimbalData;

fn opt(v: Option<f64>, digits: usize) -> Cell {
    num(v.map_or("-".to_string(), |v| format!("{v:.digits$}")))
}

fn us(ns: u64) -> Cell {
    num(format!("{:.1}", ns as f64 / 1e3))
}

/// Appends the section of one `demo_gimbal` result.
pub(super) fn section(b: &mut Builder, i: &Input, d: &GimbalData) {
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
    b.raw(&table(
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
    ));
    let s = &d.samples;
    let c = &d.controller_cpu_per_sample_ns;
    b.raw(&table(
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
    ));
    // Each task's timing, from the app's own accounting.
    if let Some(tasks) = d.tasks.get("tasks").and_then(|t| t.as_array()) {
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
        b.raw(&table(
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
        ));
    }
}
