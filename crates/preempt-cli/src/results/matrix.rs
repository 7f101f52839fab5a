//! `kind: "matrix"`: the results of `preempt matrix` (one cell per policy row and stress level).

use serde::{Deserialize, Serialize};

use super::columns::{prefixed, summary_fields};
use super::latency::PolicyRecord;
use crate::stats::summary::Summary;
use crate::stats::summary::us;

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

impl MatrixResult {
    /// A one-line headline (history listings): cells and the worst maximum.
    pub fn headline(&self) -> String {
        let worst = self
            .cells
            .iter()
            .filter_map(|c| c.latency.map(|l| l.max_ns))
            .max();
        format!(
            "{} cells, worst max {} us",
            self.cells.len(),
            worst.map(us).unwrap_or_else(|| "-".into())
        )
    }

    /// The result as one CSV table (header, rows): one row per cell, its latency and compute
    /// summaries, units in the column names.
    pub fn csv_table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut header: Vec<String> = [
            "row",
            "policy",
            "stress",
            "period_ns",
            "missed_periods",
            "deadline_misses",
        ]
        .map(String::from)
        .to_vec();
        header.extend(prefixed("latency_"));
        header.extend(prefixed("compute_"));
        header.extend(["verdict", "error", "result_file"].map(String::from));
        let rows = self
            .cells
            .iter()
            .map(|c| {
                let mut row = vec![
                    c.row.clone(),
                    c.policy.label(),
                    c.stress.clone(),
                    self.period_ns.to_string(),
                    c.missed_periods.to_string(),
                    c.deadline_misses.to_string(),
                ];
                row.extend(summary_fields(c.latency.as_ref()));
                row.extend(summary_fields(c.compute.as_ref()));
                row.push(c.verdict.clone());
                row.push(c.error.clone().unwrap_or_default());
                row.push(c.result_file.clone().unwrap_or_default());
                row
            })
            .collect();
        (header, rows)
    }
}
