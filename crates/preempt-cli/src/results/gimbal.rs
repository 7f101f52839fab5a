//! `demo_gimbal` results as the other subcommands read them: the history's one-line headline
//! and the CSV table (the data type itself is `preempt_gimbal::result::GimbalData`).

use preempt_gimbal::result::GimbalData;

/// One line for `preempt history`.
pub fn headline(d: &GimbalData) -> String {
    let worst = d
        .axes
        .iter()
        .filter_map(|a| a.rms_error_pct_of_step)
        .fold(0.0_f64, f64::max);
    format!(
        "gimbal{}: RMS error {worst:.2} % of step, {} of {} samples missed, telemetry lost {}",
        d.stress
            .as_ref()
            .map_or(String::new(), |s| format!(" under {s}")),
        d.samples.missed,
        d.samples.expected,
        d.telemetry.lost
    )
}

/// The CSV export: one row per axis with the run's figures.
pub fn csv_table(d: &GimbalData) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "axis",
        "step_rad",
        "rms_error_rad",
        "max_error_rad",
        "overshoot_pct",
        "settling_ms",
        "samples_expected",
        "samples_missed",
        "late_outputs",
        "telemetry_lost",
        "controller_cpu_p50_ns",
        "controller_cpu_p99_ns",
        "plant_late_steps",
        "stress",
    ]
    .map(String::from)
    .to_vec();
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    let rows = d
        .axes
        .iter()
        .map(|a| {
            vec![
                a.name.clone(),
                a.step_rad.to_string(),
                a.rms_error_rad.to_string(),
                a.max_error_rad.to_string(),
                opt(a.overshoot_pct),
                opt(a.settling_ms),
                d.samples.expected.to_string(),
                d.samples.missed.to_string(),
                d.samples.late_outputs.to_string(),
                d.telemetry.lost.to_string(),
                d.controller_cpu_per_sample_ns.p50.to_string(),
                d.controller_cpu_per_sample_ns.p99.to_string(),
                d.plant.late_steps.to_string(),
                d.stress.clone().unwrap_or_default(),
            ]
        })
        .collect();
    (header, rows)
}
