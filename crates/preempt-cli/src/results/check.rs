//! `kind: "check"`: the results of `preempt check`, the readiness audit (one item per check,
//! with its status, value and fix; the idle-wakeup probe).

use serde::{Deserialize, Serialize};

/// Outcome of one readiness check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Good for real-time work.
    Pass,
    /// Information only (nothing to fix, or nothing could be read).
    Info,
    /// Hurts latency or the validity of measurements; fix recommended.
    Warn,
    /// Real-time threads will not work as expected until fixed.
    Fail,
}

/// One item of `preempt check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckItem {
    /// Stable identifier, e.g. `preempt-model`.
    pub id: String,
    /// Short human title.
    pub title: String,
    /// Verdict.
    pub status: Status,
    /// What was found.
    pub value: String,
    /// How to fix it (empty when passing).
    pub fix: String,
}

/// `preempt check` results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// Every item, in display order.
    pub items: Vec<CheckItem>,
    /// The figures behind the `idle-wakeup` item; `null` when the probe did not run (no
    /// privileges; files written before it existed).
    #[serde(default)]
    pub idle_wakeup: Option<IdleWakeup>,
}

/// The measured cost of waking a CPU from idle (`check::idle_wakeup`): a SCHED_FIFO thread's
/// wake-up latency with the idle states left to the governor and with `/dev/cpu_dma_latency`
/// held at 0, alternated in blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleWakeup {
    /// The CPU probed (the most idle one, isolated if possible).
    pub cpu: usize,
    /// Sleep period between wake-ups.
    pub period_ns: u64,
    /// Wake-ups measured in each mode.
    pub wakeups_per_mode: u64,
    /// Median wake-up latency with the idle states free.
    pub idle_p50_ns: u64,
    /// How many of the idle-states wake-ups came from a halting state (the CPU entered one
    /// while the thread slept, from cpuidle's counters); `null` without cpuidle.
    pub halted_wakeups: Option<u64>,
    /// Median of those wake-ups; `null` below 30 of them.
    pub halted_p50_ns: Option<u64>,
    /// Median wake-up latency with `/dev/cpu_dma_latency` held at 0 (the CPU polls).
    pub polling_p50_ns: u64,
    /// What a wake-up from idle costs: `halted_p50_ns - polling_p50_ns`, or
    /// `idle_p50_ns - polling_p50_ns` without enough halted wake-ups.
    pub extra_ns: i64,
    /// Entries of the probed CPU into idle states other than polling during the idle-states
    /// blocks (about one per wake-up when the CPU halts); `null` without cpuidle.
    pub idle_halts: Option<u64>,
    /// The same during the held blocks (about 0: the hold works).
    pub polling_halts: Option<u64>,
    /// Share of the idle-states blocks the probed CPU spent idle (cpuidle's time counters).
    pub idle_cpu_idle_pct: Option<f64>,
    /// The same for the held blocks.
    pub polling_cpu_idle_pct: Option<f64>,
    /// What `/dev/cpu_dma_latency` read before the probe: 2000000000 when no process holds it.
    pub dma_latency_found_us: i32,
}

impl CheckReport {
    /// A one-line headline (history listings): the items per status.
    pub fn headline(&self) -> String {
        let n = |s| self.items.iter().filter(|i| i.status == s).count();
        format!(
            "{} pass, {} warn, {} fail",
            n(Status::Pass),
            n(Status::Warn),
            n(Status::Fail)
        )
    }

    /// The result as one CSV table (header, rows): one row per check item.
    pub fn csv_table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header = ["id", "title", "status", "value", "fix"]
            .map(String::from)
            .to_vec();
        let rows = self
            .items
            .iter()
            .map(|i| {
                // The status as its JSON name (`pass`, `warn`, `fail`, ...).
                let status = serde_json::to_value(i.status)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default();
                vec![
                    i.id.clone(),
                    i.title.clone(),
                    status,
                    i.value.clone(),
                    i.fix.clone(),
                ]
            })
            .collect();
        (header, rows)
    }
}
