//! The results schema: every file `preempt` writes is one [`ResultFile`].
//!
//! One schema serves every subcommand, one module per result kind ([`check`], [`latency`],
//! [`matrix`], [`wakeup`], `rtio_bench` in [`rtio`], [`micro`], `demo_gimbal` in [`gimbal`],
//! `demo_uav` in [`uav`]; their types are re-exported here), so `preempt report`,
//! `preempt compare` and `preempt history` read any result the same way. Rules
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

pub mod check;
mod columns;
pub mod cyclictest;
pub mod gimbal;
pub mod input;
pub mod latency;
pub mod matrix;
pub mod micro;
pub mod plausible;
pub mod rtio;
pub mod uav;
pub mod wakeup;

pub use check::{CheckItem, CheckReport, IdleWakeup, Status};
pub use latency::{
    BreakEvent, ExplainResult, ExplainedSample, LatencyResult, LatencySettings, Ledger,
    LedgerEntry, Overhead, PolicyRecord, ThreadExplanations, ThreadResult,
};
pub use matrix::{MatrixCell, MatrixResult};
pub use wakeup::{WakeupCase, WakeupResult};

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
pub(crate) fn unix_ms_now() -> u64 {
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
    /// A one-line headline of the measured figures (history listings, logs): the kind's own.
    pub fn headline(&self) -> String {
        match self {
            Self::Check(c) => c.headline(),
            Self::Latency(l) => l.headline(),
            Self::Matrix(m) => m.headline(),
            Self::Wakeup(w) => w.headline(),
            Self::RtioBench(r) => r.headline(),
            Self::Micro(m) => m.headline(),
            Self::DemoGimbal(d) => gimbal::headline(d),
            Self::DemoUav(d) => uav::headline(d),
        }
    }

    /// The result as one CSV table (header, rows), units in the column names: the kind's
    /// own (`export::csv` writes it).
    pub fn csv_table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let owned = |(header, rows): (Vec<&'static str>, Vec<Vec<String>>)| {
            (header.into_iter().map(String::from).collect(), rows)
        };
        match self {
            Self::Check(c) => c.csv_table(),
            Self::Latency(l) => l.csv_table(),
            Self::Matrix(m) => m.csv_table(),
            Self::Wakeup(w) => w.csv_table(),
            Self::RtioBench(r) => owned(r.csv_table()),
            Self::Micro(m) => m.csv_table(),
            Self::DemoGimbal(d) => gimbal::csv_table(d),
            Self::DemoUav(d) => uav::csv_table(d),
        }
    }

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
