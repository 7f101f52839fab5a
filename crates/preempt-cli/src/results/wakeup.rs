//! `kind: "wakeup"`: the results of `preempt wakeup` (one case per event source and load).

use serde::{Deserialize, Serialize};

use super::Distribution;
use super::latency::Overhead;

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
