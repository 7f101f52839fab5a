//! Statistics for real-time code: latency histograms, per-task accounting and response-time
//! analysis.
//!
//! * [`histogram`]: an allocation-free, HdrHistogram-compatible log-linear histogram of
//!   nanosecond values; `const fn new`, O(1) `record`, exact min/max/mean, percentiles, merge,
//!   bucket export.
//! * [`task_stats`]: the always-on accounting record of one real-time task (releases,
//!   completions, release latency, execution time, deadline misses, lateness, page faults) with
//!   allocation-free `record_*` methods, snapshots and a summary table.
//! * [`two_sample`]: two sets of per-run statistics compared: the exact Mann–Whitney test,
//!   the Hodges–Lehmann shift and its exact distribution-free confidence interval.
//! * [`rta`]: worst-case response-time analysis of fixed-priority preemptive tasks partitioned
//!   over cores, with Priority Ceiling Protocol blocking, fed with measured execution times.
//! * [`tail`]: distribution-free statements about a latency tail: the exact 95 % upper bound
//!   on the probability of exceeding a deadline, the run length needed to claim one, and the
//!   extremal index (clustered exceedances) that lowers the effective number of cycles.
//!
//! The crate depends on no other preempt crate so that both the runtime (`preempt`) and the
//! measurement tool (`preempt-cli`) can use it, and it makes no system call.
//!
//! # Features
//! * `serde`: `Serialize`/`Deserialize` for snapshots and RTA reports.
//! * `hdr-log`: module `hdr`, HdrHistogram's V2 binary encoding (plain and compressed) and its
//!   interval-log text format, so results open in HdrHistogram's plotters and log processors.
//!
//! ```
//! use preempt_stats::task_stats::{Completion, TaskStats};
//!
//! static STATS: TaskStats = TaskStats::new("control");
//! // The executor, around one activation released at t = 1 ms with a 200 µs deadline:
//! STATS.record_start(1_000_000, 1_004_000);
//! STATS.record_completion(Completion {
//!     release_ns: 1_000_000,
//!     start_ns: 1_004_000,
//!     end_ns: 1_054_000,
//!     cpu_ns: None,
//!     deadline_ns: Some(1_200_000),
//! });
//! let s = STATS.snapshot();
//! assert_eq!((s.releases, s.completions, s.deadline_misses), (1, 1, 0));
//! assert_eq!(s.exec_max_ns, Some(50_000));
//! ```

#[cfg(feature = "hdr-log")]
pub mod hdr;
pub mod histogram;
pub mod rta;
pub mod tail;
pub mod task_stats;
pub mod two_sample;
