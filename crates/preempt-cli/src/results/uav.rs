//! `demo_uav` results as the other subcommands read them: the history's one-line headline
//! and the CSV table (the data type itself is `preempt_uav::demo::UavData`).

use preempt_uav::demo::UavData;
use preempt_uav::result::FlightCell;

/// The cell with the largest RMS position error (a crash counts as worst).
pub(crate) fn worst_cell(d: &UavData) -> Option<&FlightCell> {
    d.cells.iter().filter(|c| c.flown_steps > 0).max_by(|a, b| {
        (a.crashed, a.rms_position_error_m)
            .partial_cmp(&(b.crashed, b.rms_position_error_m))
            .unwrap_or(std::cmp::Ordering::Equal)
    })
}

/// One line for `preempt history`.
pub fn headline(d: &UavData) -> String {
    let flown = d.cells.iter().filter(|c| c.flown_steps > 0).count();
    let crashed = d.cells.iter().filter(|c| c.crashed).count();
    match worst_cell(d) {
        Some(w) => format!(
            "uav: {flown} of {} flights, {crashed} crashed; worst {} ({}): RMS position error {:.1} mm, latency max {:.0} us",
            d.cells.len(),
            w.policy,
            w.stress,
            w.rms_position_error_m * 1e3,
            w.latency.max as f64 / 1e3
        ),
        None => format!("uav: none of {} flights flew", d.cells.len()),
    }
}

/// The CSV export: one row per cell.
pub fn csv_table(d: &UavData) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "policy",
        "priority_or_nice",
        "runtime_us",
        "stress",
        "latency_p50_ns",
        "latency_p99_ns",
        "latency_max_ns",
        "missed_periods",
        "compute_p50_ns",
        "compute_p99_ns",
        "compute_max_ns",
        "rms_position_error_m",
        "rms_position_error_square_m",
        "max_position_error_m",
        "max_attitude_error_rad",
        "crashed",
        "soft",
        "error",
    ]
    .map(String::from)
    .to_vec();
    let opt = |v: Option<String>| v.unwrap_or_default();
    let rows = d
        .cells
        .iter()
        .map(|c| {
            vec![
                c.policy.clone(),
                opt(c.priority_or_nice.map(|v| v.to_string())),
                opt(c.runtime_us.map(|v| v.to_string())),
                c.stress.clone(),
                c.latency.p50.to_string(),
                c.latency.p99.to_string(),
                c.latency.max.to_string(),
                c.missed_periods.to_string(),
                c.compute_ns.p50.to_string(),
                c.compute_ns.p99.to_string(),
                c.compute_ns.max.to_string(),
                c.rms_position_error_m.to_string(),
                opt(c.rms_position_error_square_m.map(|v| v.to_string())),
                c.max_position_error_m.to_string(),
                c.max_attitude_error_rad.to_string(),
                c.crashed.to_string(),
                c.soft.to_string(),
                c.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    (header, rows)
}
