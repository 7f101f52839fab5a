//! `kind: "wakeup"`: the results of `preempt wakeup` (one case per event source and load).

use serde::{Deserialize, Serialize};

use super::Distribution;
use super::columns::{opt, prefixed, summary_fields};
use super::latency::Overhead;
use crate::stats::summary::us;

/// One event source under one load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WakeupCase {
    /// `eventfd`, `pipe`, `timerfd`, `signal` or `gpio`.
    pub source: String,
    /// `idle` or the stressors, e.g. `cpu,memory,io,sched`.
    pub load: String,
    /// CPU of the blocked SCHED_FIFO thread.
    pub waiter_cpu: usize,
    /// CPU of the triggering thread (the timer fires from the kernel for `timerfd`).
    pub trigger_cpu: Option<usize>,
    /// wake − trigger.
    pub latency: Option<Distribution>,
    /// Why the case was skipped.
    pub skipped: Option<String>,
}

/// `preempt wakeup` results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WakeupResult {
    /// Priority of the waiting thread.
    pub priority: u8,
    /// Samples per case.
    pub samples_per_case: u64,
    /// Gap between triggers.
    pub interval_ns: u64,
    /// The tool's own overhead.
    pub overhead: Overhead,
    /// Cases, load-major.
    pub cases: Vec<WakeupCase>,
}

impl WakeupResult {
    /// A one-line headline (history listings): cases and the worst p99.
    pub fn headline(&self) -> String {
        let worst = self
            .cases
            .iter()
            .filter_map(|c| c.latency.as_ref().map(|d| d.summary.p99_ns))
            .max();
        format!(
            "{} cases, worst p99 {} us",
            self.cases.len(),
            worst.map(us).unwrap_or_else(|| "-".into())
        )
    }

    /// The result as one CSV table (header, rows): one row per case, its latency summary,
    /// units in the column names.
    pub fn csv_table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut header: Vec<String> = ["source", "load", "waiter_cpu", "trigger_cpu", "priority"]
            .map(String::from)
            .to_vec();
        header.extend(prefixed("latency_"));
        header.push("skipped".into());
        let rows = self
            .cases
            .iter()
            .map(|c| {
                let mut row = vec![
                    c.source.clone(),
                    c.load.clone(),
                    c.waiter_cpu.to_string(),
                    opt(c.trigger_cpu),
                    self.priority.to_string(),
                ];
                row.extend(summary_fields(c.latency.as_ref().map(|d| &d.summary)));
                row.push(c.skipped.clone().unwrap_or_default());
                row
            })
            .collect();
        (header, rows)
    }
}
