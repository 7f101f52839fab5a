//! The results schema: every file `preempt` writes is one [`ResultFile`].
//!
//! One schema serves every subcommand (`check`, `latency`, `matrix`, `wakeup`, `rtio_bench`
//! in [`rtio`], `micro` in [`micro`]), so `preempt report`, `preempt compare` and
//! `preempt history` read any result the same way. Rules
//! (STYLE.md item 12, docs/results-schema.md):
//! - the top level carries [`SCHEMA_VERSION`], the tool version, the system information and
//!   whether the file is `complete` (partial files are rewritten while a run goes);
//! - every quantity has its unit in its field name (`*_ns`, `*_us`, `*_pct`);
//! - every distribution carries its raw histogram, so percentiles can be recomputed and runs
//!   merged without the original samples.
//!
//! ```
//! use preempt_cli::results::{RunResult, SCHEMA_VERSION};
//! let text = r##"{"schema_version":1,"tool":{"name":"preempt","version":"0.1.0"},
//!   "complete":true,"interrupted":false,"started_unix_ms":0,"elapsed_ns":0,
//!   "sysinfo":{"hostname":"h","kernel_release":"6.1","kernel_version":"#1","machine":"x86_64",
//!   "cmdline":"","cpu_model":"cpu","cpus_online":[0],"governors":[],"preempt_model":"full",
//!   "preempt_dynamic":false,"realtime_flag":null,"clocksource":"tsc","virtualization":null,
//!   "argv":["preempt","check"]},
//!   "warnings":[],"kind":"check","data":{"items":[]}}"##;
//! let file: preempt_cli::results::ResultFile = serde_json::from_str(text).unwrap();
//! assert_eq!(file.schema_version, SCHEMA_VERSION);
//! assert!(matches!(file.result, RunResult::Check(_)));
//! ```

pub mod cyclictest;
pub mod gimbal;
pub mod input;
pub mod micro;
pub mod rtio;
pub mod uav;

use serde::{Deserialize, Serialize};

use crate::stats::histogram::{self, Snapshot};
use crate::stats::summary::Summary;

/// Version of this schema. Bumped on any change that an older reader would misread; readers
/// refuse files with a newer major version.
pub const SCHEMA_VERSION: u32 = 1;

/// One results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultFile {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The program that wrote the file.
    pub tool: Tool,
    /// `false` in the partial files written while a run is going.
    pub complete: bool,
    /// The run was stopped early (Ctrl-C, `--break-at`); the data covers what ran.
    pub interrupted: bool,
    /// Who stopped it, when `interrupted` and known: `SIGINT`, `SIGTERM`, `--break-at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    /// Why the run failed before its end (a demo's plant died), when it did; `interrupted`
    /// is then true too and the data covers what ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// Wall-clock start, milliseconds since the Unix epoch (for humans; durations use
    /// CLOCK_MONOTONIC).
    pub started_unix_ms: u64,
    /// Monotonic time from start to the moment the file was written.
    pub elapsed_ns: u64,
    /// The machine the run measured.
    pub sysinfo: SysInfo,
    /// Threats to the validity of the numbers, found before or during the run.
    pub warnings: Vec<WarningRecord>,
    /// The subcommand's own data, tagged `kind` (`check`, `latency`, `matrix`, `wakeup`,
    /// `rtio_bench`, `micro`).
    #[serde(flatten)]
    pub result: RunResult,
}

impl ResultFile {
    /// A complete, uninterrupted result with no warnings, started now.
    pub fn new(sysinfo: SysInfo, result: RunResult) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            tool: Tool::this(),
            complete: true,
            interrupted: false,
            interrupted_by: None,
            failed: None,
            started_unix_ms: unix_ms_now(),
            elapsed_ns: 0,
            sysinfo,
            warnings: Vec::new(),
            result,
        }
    }
}

/// The status of a result, one vocabulary for `compare`, `history` and `report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus<'a> {
    /// Written while the run was going (`complete: false`): the run never wrote its final
    /// result (killed, or still running).
    Partial,
    /// The run's final result, of the whole planned run.
    Complete,
    /// Stopped early, by whom when known (`SIGINT`, `SIGTERM`, `--break-at`).
    Interrupted(Option<&'a str>),
    /// Failed before its end, and why.
    Failed(&'a str),
}

impl RunStatus<'_> {
    /// The short tag of `history list`: `PARTIAL`, `INTERRUPTED by SIGTERM`, `FAILED: why`.
    pub fn tag(&self) -> String {
        match self {
            RunStatus::Partial => "PARTIAL: complete false".into(),
            RunStatus::Complete => "COMPLETE".into(),
            RunStatus::Interrupted(None) => "INTERRUPTED".into(),
            RunStatus::Interrupted(Some(by)) => format!("INTERRUPTED by {by}"),
            RunStatus::Failed(why) => format!("FAILED: {why}"),
        }
    }
}

impl std::fmt::Display for RunStatus<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunStatus::Partial => f.write_str(
                "incomplete (complete: false: the run stopped before writing its final result)",
            ),
            RunStatus::Complete => f.write_str("complete"),
            RunStatus::Interrupted(None) => f.write_str("interrupted"),
            RunStatus::Interrupted(Some(by)) => write!(f, "interrupted by {by}"),
            RunStatus::Failed(why) => write!(f, "failed ({why})"),
        }
    }
}

impl ResultFile {
    /// The result's [`RunStatus`].
    pub fn status(&self) -> RunStatus<'_> {
        if !self.complete {
            RunStatus::Partial
        } else if let Some(why) = &self.failed {
            RunStatus::Failed(why)
        } else if self.interrupted {
            RunStatus::Interrupted(self.interrupted_by.as_deref())
        } else {
            RunStatus::Complete
        }
    }
}

/// Milliseconds since the Unix epoch, for the `started_unix_ms` field only.
#[allow(
    clippy::disallowed_methods,
    reason = "a human-readable start stamp for the result file; never used for durations"
)]
pub fn unix_ms_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The subcommand-specific part of a [`ResultFile`], serialized as `"kind": ..., "data": {...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum RunResult {
    /// `preempt check`.
    Check(CheckReport),
    /// `preempt latency`.
    Latency(Box<LatencyResult>),
    /// `preempt matrix`.
    Matrix(Box<MatrixResult>),
    /// `preempt wakeup`.
    Wakeup(Box<WakeupResult>),
    /// `preempt rtio-bench` (kind `rtio_bench`).
    RtioBench(Box<rtio::RtioBenchResult>),
    /// `preempt micro`.
    Micro(Box<micro::MicroResult>),
    /// `preempt demo gimbal` (kind `demo_gimbal`; the fields are documented on
    /// `preempt_gimbal::result::GimbalData`).
    DemoGimbal(Box<preempt_gimbal::result::GimbalData>),
    /// `preempt demo uav` (kind `demo_uav`; the fields are documented on
    /// `preempt_uav::demo::UavData` and `preempt_uav::result::FlightCell`).
    DemoUav(Box<preempt_uav::demo::UavData>),
}

impl RunResult {
    /// The `kind` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Check(_) => "check",
            Self::Latency(_) => "latency",
            Self::Matrix(_) => "matrix",
            Self::Wakeup(_) => "wakeup",
            Self::RtioBench(_) => "rtio_bench",
            Self::Micro(_) => "micro",
            Self::DemoGimbal(_) => "demo_gimbal",
            Self::DemoUav(_) => "demo_uav",
        }
    }
}

/// Name and version of the writer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    /// Always `preempt`.
    pub name: String,
    /// The crate version.
    pub version: String,
}

impl Tool {
    /// This program.
    pub fn this() -> Self {
        Self {
            name: "preempt".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// The system a result was measured on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SysInfo {
    /// `uname -n`.
    pub hostname: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v` (holds `PREEMPT_RT` / `PREEMPT_DYNAMIC`).
    pub kernel_version: String,
    /// `uname -m`.
    pub machine: String,
    /// `/proc/cmdline`.
    pub cmdline: String,
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus_online: Vec<usize>,
    /// cpufreq governor of each CPU that has one (`[cpu, governor]`); empty when the kernel
    /// exposes no cpufreq (common in VMs).
    pub governors: Vec<(usize, String)>,
    /// Preemption model in effect: `none`, `voluntary`, `full`, `lazy`, `rt` or `unknown`.
    pub preempt_model: String,
    /// `PREEMPT_DYNAMIC` kernel (model switchable at boot or run time).
    pub preempt_dynamic: bool,
    /// `/sys/kernel/realtime` (`None` when the file does not exist).
    pub realtime_flag: Option<bool>,
    /// Current clocksource.
    pub clocksource: String,
    /// Hypervisor, when running virtualised.
    pub virtualization: Option<String>,
    /// The command line of this run, as an array.
    pub argv: Vec<String>,
}

/// A threat to validity, as stored in a file (see `warnings::Warning`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarningRecord {
    /// Stable kebab-case identifier, e.g. `not-preempt-rt`.
    pub code: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

/// A histogram in sparse form: the non-empty buckets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramRecord {
    /// Resolution parameter of the log-linear layout (values below `2^bits` ns are exact).
    pub sub_bucket_bits: u32,
    /// Sum of all samples (with the bucket counts, gives the exact mean).
    pub sum_ns: u64,
    /// Non-empty buckets in increasing order.
    pub buckets: Vec<Bucket>,
}

/// One histogram bucket: `count` samples lay in `lower_ns..=upper_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    /// Smallest value of the bucket.
    pub lower_ns: u64,
    /// Largest value of the bucket (inclusive).
    pub upper_ns: u64,
    /// Samples in the bucket.
    pub count: u64,
}

/// One of the largest samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorstSample {
    /// Period index (0 = first release); matches `cycle` in `--trace-samples` files.
    pub cycle: u64,
    /// The sample.
    pub value_ns: u64,
}

/// A distribution: summary, raw histogram, and the largest samples with their cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// Count, percentiles, extremes.
    pub summary: Summary,
    /// The raw histogram the summary was computed from.
    pub histogram: HistogramRecord,
    /// The largest samples, largest first.
    pub worst: Vec<WorstSample>,
}

impl Distribution {
    /// Builds the record of a histogram snapshot.
    pub fn from_snapshot(s: &Snapshot) -> Self {
        Self {
            summary: Summary::from_snapshot(s),
            histogram: HistogramRecord {
                sub_bucket_bits: histogram::SUB_BUCKET_BITS,
                sum_ns: s.sum_ns(),
                buckets: s
                    .buckets()
                    .iter()
                    .map(|b| Bucket {
                        lower_ns: b.low_ns,
                        upper_ns: b.high_ns,
                        count: b.count,
                    })
                    .collect(),
            },
            worst: s
                .worst()
                .iter()
                .map(|&(value_ns, cycle)| WorstSample { cycle, value_ns })
                .collect(),
        }
    }

    /// Rebuilds the snapshot (for merging and recomputing percentiles) in the current layout
    /// ([`histogram::SUB_BUCKET_BITS`]), or `None` if the stored histogram is malformed (a
    /// bucket whose bounds are reversed, or a layout tag no version wrote).
    ///
    /// A file in the current layout maps bucket for bucket. A file in the former CLI layout
    /// (tag 9: exact below 512 ns, 256 buckets per power of two) is converted by value range:
    /// each old bucket's count goes into the current bucket holding the old bucket's upper
    /// bound. The current layout is finer everywhere (1/1024 against 1/256), so two old buckets
    /// never share a new one, and a percentile read back is the old one or at most one current
    /// bucket above it (never below: percentiles are bucket upper bounds). Count, sum, min and
    /// max are exact either way.
    pub fn to_snapshot(&self) -> Option<Snapshot> {
        let tag = self.histogram.sub_bucket_bits;
        if tag != histogram::SUB_BUCKET_BITS && tag != FORMER_SUB_BUCKET_BITS {
            return None;
        }
        if self
            .histogram
            .buckets
            .iter()
            .any(|b| b.lower_ns > b.upper_ns)
        {
            return None;
        }
        Some(Snapshot::from_values(
            self.histogram.buckets.iter().map(|b| (b.upper_ns, b.count)),
            self.histogram.sum_ns,
            self.summary.min_ns,
            self.summary.max_ns,
            self.worst.iter().map(|w| (w.value_ns, w.cycle)).collect(),
        ))
    }
}

/// The layout tag of files written before the CLI recorded into `preempt-stats`' histogram.
pub const FORMER_SUB_BUCKET_BITS: u32 = 9;

// ---------------------------------------------------------------------------------------------
// check

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

// ---------------------------------------------------------------------------------------------
// latency

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
    pub fn is_clean(&self) -> bool {
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

// ---------------------------------------------------------------------------------------------
// matrix

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

// ---------------------------------------------------------------------------------------------
// wakeup

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::histogram::Histogram;

    #[test]
    fn one_status_names_partial_complete_interrupted_by_whom_and_failed_why() {
        let mut f = ResultFile::new(SysInfo::default(), RunResult::Check(CheckReport::default()));
        assert_eq!(f.status(), RunStatus::Complete);
        f.interrupted = true;
        assert_eq!(f.status().to_string(), "interrupted");
        f.interrupted_by = Some("SIGTERM".into());
        assert_eq!(f.status().tag(), "INTERRUPTED by SIGTERM");
        f.failed = Some("the plant process died".into());
        assert_eq!(f.status().to_string(), "failed (the plant process died)");
        f.complete = false;
        assert_eq!(f.status(), RunStatus::Partial);
        // Read back from JSON the same way (the fields are optional in older files).
        let back: ResultFile = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
        assert_eq!(back.status(), RunStatus::Partial);
    }

    #[test]
    fn distribution_round_trips_through_json() {
        let h = Histogram::new();
        for (i, v) in [3_000u64, 4_100, 55_555, 1_234_567].into_iter().enumerate() {
            h.record(v, i as u64);
        }
        let snap = h.snapshot();
        let d = Distribution::from_snapshot(&snap);
        let back: Distribution = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
        assert_eq!(back.to_snapshot().unwrap(), snap);
        assert_eq!(
            d.worst[0],
            WorstSample {
                cycle: 3,
                value_ns: 1_234_567
            }
        );
    }

    #[test]
    fn foreign_bucket_layout_is_refused() {
        let mut d = Distribution::from_snapshot(&Histogram::new().snapshot());
        d.histogram.sub_bucket_bits = 7;
        assert!(d.to_snapshot().is_none());
    }

    #[test]
    fn former_layout_converts_by_value_range() {
        // Buckets of the former layout (tag 9): 300 is exact there; 1_000..=1_001 and
        // 50_944..=51_199 are one bucket each (widths 2 and 256).
        let old = |lower_ns, upper_ns, count| Bucket {
            lower_ns,
            upper_ns,
            count,
        };
        let d = Distribution {
            summary: Summary::from_snapshot(&Snapshot::empty()),
            histogram: HistogramRecord {
                sub_bucket_bits: FORMER_SUB_BUCKET_BITS,
                sum_ns: 300 + 2 * 1_001 + 51_000,
                buckets: vec![
                    old(300, 300, 1),
                    old(1_000, 1_001, 2),
                    old(50_944, 51_199, 1),
                ],
            },
            worst: vec![WorstSample {
                cycle: 3,
                value_ns: 51_000,
            }],
        };
        let d = Distribution {
            summary: Summary {
                count: 4,
                min_ns: 300,
                max_ns: 51_000,
                ..d.summary
            },
            ..d
        };
        let s = d.to_snapshot().unwrap();
        assert_eq!((s.count(), s.min_ns(), s.max_ns()), (4, 300, 51_000));
        assert_eq!(s.sum_ns(), 300 + 2 * 1_001 + 51_000);
        assert_eq!(s.worst(), &[(51_000, 3)]);
        // Each old bucket's count sits in the current bucket of its upper bound.
        let got: Vec<(u64, u64, u64)> = s
            .buckets()
            .iter()
            .map(|b| (b.low_ns, b.high_ns, b.count))
            .collect();
        assert_eq!(got, [(300, 300, 1), (1_001, 1_001, 2), (51_168, 51_199, 1)]);
        // Written back, it says the current layout.
        let again = Distribution::from_snapshot(&s);
        assert_eq!(again.histogram.sub_bucket_bits, histogram::SUB_BUCKET_BITS);
        assert_eq!(again.to_snapshot().unwrap(), s);
    }
}
