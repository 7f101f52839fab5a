//! `kind: "matrix"`: the results of `preempt matrix` (one cell per policy row and stress level).

use serde::{Deserialize, Serialize};

use super::latency::PolicyRecord;
use crate::stats::summary::Summary;

/// One cell of `preempt matrix`: a policy row under one stress level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixCell {
    /// Row label, e.g. `SCHED_FIFO 99`.
    pub row: String,
    /// The policy of the row.
    pub policy: PolicyRecord,
    /// `none` or `heavy`.
    pub stress: String,
    /// The cell's own latency result file, relative to the summary file.
    pub result_file: Option<String>,
    /// Wake-up latency over all threads (`None` when the cell could not run).
    pub latency: Option<Summary>,
    /// Compute-step duration over all threads.
    pub compute: Option<Summary>,
    /// Response time over all threads.
    pub response: Option<Summary>,
    /// Missed periods over all threads.
    pub missed_periods: u64,
    /// Deadline misses over all threads.
    pub deadline_misses: u64,
    /// Validity verdict of the cell.
    pub verdict: String,
    /// Why the cell could not run.
    pub error: Option<String>,
}

/// `preempt matrix` results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixResult {
    /// Period of the loop.
    pub period_ns: u64,
    /// Measuring time of each cell.
    pub duration_per_cell_ns: u64,
    /// Compute step per period.
    pub work_ns: u64,
    /// CPUs measured in each cell.
    pub cpus: Vec<usize>,
    /// Cells, stress-major then in row order.
    pub cells: Vec<MatrixCell>,
}
