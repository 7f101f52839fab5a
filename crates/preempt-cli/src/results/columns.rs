//! The columns the CSV tables of the result kinds share: a latency summary's figures under a
//! prefix (`latency_p99_ns`, ...), and empty cells for absent values.

use crate::stats::summary::Summary;

/// The columns of one [`Summary`], units in the names.
pub(crate) const SUMMARY_COLUMNS: [&str; 10] = [
    "samples",
    "min_ns",
    "mean_ns",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p99_9_ns",
    "p99_99_ns",
    "max_ns",
    "max_cycle",
];

/// The summary's columns of one row (empty cells without a summary).
pub(crate) fn summary_fields(s: Option<&Summary>) -> Vec<String> {
    match s {
        None => vec![String::new(); SUMMARY_COLUMNS.len()],
        Some(s) => vec![
            s.count.to_string(),
            s.min_ns.to_string(),
            format!("{:.1}", s.mean_ns),
            s.p50_ns.to_string(),
            s.p90_ns.to_string(),
            s.p99_ns.to_string(),
            s.p99_9_ns.to_string(),
            s.p99_99_ns.to_string(),
            s.max_ns.to_string(),
            s.max_cycle.map(|c| c.to_string()).unwrap_or_default(),
        ],
    }
}

/// [`SUMMARY_COLUMNS`] under `prefix`.
pub(crate) fn prefixed(prefix: &str) -> Vec<String> {
    SUMMARY_COLUMNS
        .iter()
        .map(|c| format!("{prefix}{c}"))
        .collect()
}

/// An optional value's cell (empty for `None`).
pub(crate) fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}
