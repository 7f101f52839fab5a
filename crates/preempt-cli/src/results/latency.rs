//! `kind: "latency"`: the results of `preempt latency` (per measuring thread its release
//! latency, response and compute distributions; the ledger, breaks and `--explain` output).

use serde::{Deserialize, Serialize};

use super::Distribution;
use super::columns::{opt, prefixed, summary_fields};
use crate::stats::summary::Summary;
use crate::stats::summary::us;

/// A scheduling policy as recorded in a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRecord {
    /// `other`, `fifo`, `rr` or `deadline`.
    pub name: String,
    /// Real-time priority (fifo, rr).
    pub priority: Option<u8>,
    /// Nice value (other).
    pub nice: Option<i32>,
    /// SCHED_DEADLINE runtime.
    pub runtime_ns: Option<u64>,
    /// SCHED_DEADLINE relative deadline.
    pub deadline_ns: Option<u64>,
    /// SCHED_DEADLINE period.
    pub period_ns: Option<u64>,
}

impl PolicyRecord {
    /// Short label such as `fifo:99`, `other:nice-19`, `deadline:400us`.
    pub fn label(&self) -> String {
        match (
            self.name.as_str(),
            self.priority,
            self.nice,
            self.runtime_ns,
        ) {
            (_, Some(p), _, _) => format!("{}:{p}", self.name),
            (_, _, Some(n), _) => format!("{}:nice{n}", self.name),
            (_, _, _, Some(r)) => format!("{}:{}us", self.name, r / 1_000),
            _ => self.name.clone(),
        }
    }
}

/// The settings a latency run used (after defaults and validation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencySettings {
    /// Scheduling policy of the measuring threads.
    pub policy: PolicyRecord,
    /// Period between releases.
    pub interval_ns: u64,
    /// Releases per thread (the run ends after this many or after the duration).
    pub releases_per_thread: u64,
    /// CPUs measured, one thread each (for SCHED_DEADLINE the threads are not pinned; see
    /// `cpus_seen` per thread).
    pub cpus: Vec<usize>,
    /// Whether threads were pinned to their CPU.
    pub pinned: bool,
    /// Compute step per period (`--work-us`), 0 for none.
    pub work_ns: u64,
    /// Loop iterations of the compute step, calibrated to take `work_ns` when idle.
    pub work_iterations: u64,
    /// Timer slack set on every measuring thread, whatever its policy.
    pub timer_slack_ns: u64,
    /// `mlockall` was requested.
    pub mlock: bool,
    /// `/dev/cpu_dma_latency` target held during the run, when it could be opened.
    pub cpu_dma_latency_us: Option<i32>,
    /// Built-in or external stressors running during the measurement (empty = none).
    pub stress: Vec<String>,
    /// `builtin` or `stress-ng`.
    pub stress_tool: String,
    /// `--break-at` threshold.
    pub break_at_ns: Option<u64>,
}

/// The tool's own cost, measured before the run (STYLE.md item 13).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// Two back-to-back CLOCK_MONOTONIC reads: the floor of any latency sample.
    pub clock_read: Summary,
    /// `clock_getres(CLOCK_MONOTONIC)`.
    pub clock_resolution_ns: u64,
}

/// Per-thread results of a latency run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadResult {
    /// CPU the thread was pinned to (`None` when unpinned).
    pub cpu: Option<usize>,
    /// CPUs the thread was seen running on at wake-up (sampled when unpinned).
    pub cpus_seen: Vec<usize>,
    /// Kernel thread id.
    pub tid: i32,
    /// Releases that fell within the run (samples + missed periods).
    pub releases: u64,
    /// Releases that were measured.
    pub samples: u64,
    /// Releases that passed entirely while the thread was still late for an earlier one
    /// (cyclictest silently skips these).
    pub missed_periods: u64,
    /// Periods whose completion came after release + deadline (the deadline is `--deadline`
    /// for SCHED_DEADLINE and the period otherwise).
    pub deadline_misses: u64,
    /// Wake-up latency: actual wake-up minus intended release.
    pub latency: Distribution,
    /// Response time: completion of the compute step minus release (with `--work-us`).
    pub response: Option<Distribution>,
    /// Duration of the compute step itself (with `--work-us`).
    pub compute: Option<Distribution>,
    /// Minor page faults of the thread during the run (should be 0 with mlock).
    pub minor_faults: u64,
    /// Major page faults during the run.
    pub major_faults: u64,
    /// Times the thread was preempted.
    pub involuntary_switches: u64,
    /// Wake-ups at which the thread had waited out a throttling window on its runqueue (RT
    /// throttling or the fair server; `preempt_io::sys::schedstat`, no tracing needed).
    #[serde(default)]
    pub throttled_windows: u64,
}

/// One check of the validity ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// Identifier, e.g. `steal-time`.
    pub name: String,
    /// What was observed.
    pub value: String,
    /// Whether this observation makes the numbers unrepresentative of the machine alone.
    pub contaminates: bool,
}

/// What else was happening while the run measured, and whether the numbers can be trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// `clean` or `contaminated: <reasons>`.
    pub verdict: String,
    /// Observations.
    pub entries: Vec<LedgerEntry>,
}

impl Ledger {
    /// Whether the verdict is `clean`.
    pub(crate) fn is_clean(&self) -> bool {
        self.entries.iter().all(|e| !e.contaminates)
    }
}

/// `--break-at` fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakEvent {
    /// Thread index (position in `threads`).
    pub thread: usize,
    /// Cycle of the sample.
    pub cycle: u64,
    /// The sample.
    pub latency_ns: u64,
    /// Whether tracing was stopped (false when tracefs was unavailable).
    pub tracing_stopped: bool,
}

/// `preempt latency` results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyResult {
    /// Settings of the run.
    pub settings: LatencySettings,
    /// The tool's own overhead.
    pub overhead: Overhead,
    /// One entry per measuring thread.
    pub threads: Vec<ThreadResult>,
    /// All threads' latency merged.
    pub latency_all: Summary,
    /// Validity ledger.
    pub ledger: Ledger,
    /// Set when `--break-at` stopped the run.
    pub break_event: Option<BreakEvent>,
    /// `--explain`: the outliers' causes from the kernel trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<ExplainResult>,
    /// Why the outliers were not explained where `preempt run` would have explained them
    /// (tracefs unusable, with the fix; or `--no-explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain_skipped: Option<String>,
}

/// `--explain`: why the outliers were late.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainResult {
    /// `--explain=US` (null: each thread's p99.9).
    pub threshold_ns: Option<u64>,
    /// Per measuring thread.
    pub threads: Vec<ThreadExplanations>,
    /// Causes aggregated over every explained outlier, largest total first.
    pub top_causes: Vec<preempt_trace::TopCause>,
    /// Outliers explained.
    pub explained: u64,
    /// Outliers not explained (beyond the per-thread cap, or no longer in the trace history).
    pub unexplained: u64,
    /// Why the first outlier that could not be explained was not (null when all were, or
    /// the only ones left out were beyond the per-thread cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unexplained_why: Option<String>,
    /// The stretches in which the kernel stopped the real-time class on a measured CPU during
    /// the run (RT throttling or the fair server), from the trace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttled: Vec<preempt_trace::Stretch>,
}

/// One thread's explained outliers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadExplanations {
    /// Index of the measuring thread.
    pub thread: usize,
    /// Its kernel thread id.
    pub tid: i32,
    /// Its CPU.
    pub cpu: usize,
    /// Threshold applied.
    pub threshold_ns: u64,
    /// The explained outliers, worst first.
    pub explanations: Vec<ExplainedSample>,
}

/// One explained outlier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainedSample {
    /// Release index.
    pub cycle: u64,
    /// Its latency.
    pub latency_ns: u64,
    /// Causes, largest first, adding up to `latency_ns`.
    pub causes: Vec<preempt_trace::Cause>,
    /// The CPU's steal time around the window (`/proc/stat`), where known.
    pub steal_ns: Option<u64>,
    /// Whether the trace covered the whole window.
    pub covered: bool,
    /// Where the window has `throttled` time: the stretch in which the kernel stopped the
    /// real-time class on the CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled: Option<preempt_trace::Stretch>,
}

impl ExplainedSample {
    /// The explanation of release `cycle`.
    pub fn new(cycle: u64, e: &preempt_trace::Explanation) -> ExplainedSample {
        ExplainedSample {
            cycle,
            latency_ns: e.latency_ns,
            causes: e.causes.clone(),
            steal_ns: e.steal_ns,
            covered: e.covered,
            throttled: e.throttled,
        }
    }
}

impl LatencyResult {
    /// A one-line headline (history listings): policy, threads, p99 and max, the ledger's
    /// verdict.
    pub fn headline(&self) -> String {
        format!(
            "{} {} thread(s): p99 {} us, max {} us, {}",
            self.settings.policy.label(),
            self.threads.len(),
            us(self.latency_all.p99_ns),
            us(self.latency_all.max_ns),
            if self.ledger.is_clean() {
                "clean"
            } else {
                "contaminated"
            }
        )
    }

    /// The result as one CSV table (header, rows): one row per measuring thread, its
    /// latency, response and compute summaries, units in the column names.
    pub fn csv_table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut header: Vec<String> = [
            "thread",
            "cpu",
            "policy",
            "interval_ns",
            "work_ns",
            "releases",
            "missed_periods",
            "deadline_misses",
            "minor_faults",
            "involuntary_switches",
        ]
        .map(String::from)
        .to_vec();
        header.extend(prefixed("latency_"));
        header.extend(prefixed("response_"));
        header.extend(prefixed("compute_"));
        header.push("verdict".into());
        let rows = self
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut row = vec![
                    i.to_string(),
                    opt(t.cpu),
                    self.settings.policy.label(),
                    self.settings.interval_ns.to_string(),
                    self.settings.work_ns.to_string(),
                    t.releases.to_string(),
                    t.missed_periods.to_string(),
                    t.deadline_misses.to_string(),
                    t.minor_faults.to_string(),
                    t.involuntary_switches.to_string(),
                ];
                row.extend(summary_fields(Some(&t.latency.summary)));
                row.extend(summary_fields(t.response.as_ref().map(|d| &d.summary)));
                row.extend(summary_fields(t.compute.as_ref().map(|d| &d.summary)));
                row.push(self.ledger.verdict.clone());
                row
            })
            .collect();
        (header, rows)
    }
}
