//! Always-on accounting of one real-time task: how often it ran, how late it started, how long
//! it ran, and whether it met its deadline.
//!
//! The runtime owns one [`TaskStats`] per task (a `static`: [`TaskStats::new`] is `const`) and
//! calls its `record_*` methods from the executor thread that runs the task, around every
//! activation:
//!
//! ```text
//!   release r          start s                         end e          deadline d
//!   ───┬──────────────────┬──────────── job runs ────────┬──────────────────┬──▶ CLOCK_MONOTONIC
//!      │◀─ release ──────▶│◀──── execution (CPU time, ──▶│                  │
//!      │   latency s − r  │      or e − s if not given)  │                  │
//!      │◀────────────── response time e − r ────────────▶│                  │
//!                                                         │◀─ lateness e − d (negative: early)
//! ```
//!
//! * [`TaskStats::record_start`] when the job starts: one more release, and its release latency
//!   (start − scheduled release) in an HdrHistogram-compatible [`Histogram`].
//! * [`TaskStats::record_completion`] when it returns: execution time min/mean/max (the measured
//!   WCET that [`crate::rta`] consumes) and its distribution (a second [`Histogram`], for
//!   percentiles and for app metrics' execution-time histogram), the worst response time, lateness against the absolute
//!   deadline, deadline misses and the current and longest run of consecutive misses.
//! * [`TaskStats::record_skipped`] for releases a `Skip` overrun policy dropped.
//! * [`TaskStats::record_page_faults`] with the page faults the thread took while the job ran
//!   (the difference of two `getrusage(RUSAGE_THREAD)` readings; this crate makes no syscall).
//!
//! Every `record_*` method is allocation-free, lock-free and O(1), with the single-writer
//! discipline of [`crate::histogram`]: only the executor thread records, any thread may call
//! [`TaskStats::snapshot`] (which allocates) at any time.
//!
//! **Execution time and RTA.** Pass the job's CPU time (`CLOCK_THREAD_CPUTIME_ID` difference) in
//! [`Completion::cpu_ns`] when you have it: wall-clock `end − start` also counts the time the
//! job spent preempted by higher priorities, which response-time analysis then counts a second
//! time as interference. That is safe (pessimistic) but can call a schedulable set unschedulable.
//!
//! ```
//! use preempt_stats::task_stats::{Completion, TaskStats, SummaryTable};
//!
//! static STATS: TaskStats = TaskStats::new("sample");
//! for k in 0..4_u64 {
//!     let release = k * 100_000;
//!     let start = release + 3_000;
//!     STATS.record_start(release, start);
//!     let end = start + if k == 2 { 150_000 } else { 20_000 }; // job 2 overruns
//!     STATS.record_completion(Completion {
//!         release_ns: release,
//!         start_ns: start,
//!         end_ns: end,
//!         cpu_ns: None,
//!         deadline_ns: Some(release + 100_000),
//!     });
//! }
//! let s = STATS.snapshot();
//! assert_eq!((s.releases, s.deadline_misses, s.max_consecutive_misses), (4, 1, 1));
//! assert_eq!(s.max_lateness_ns, Some(53_000));
//! println!("{}", SummaryTable(&[s]));
//! ```

use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

use crate::histogram::{Digits2, Histogram, HistogramSnapshot, Precision};

/// A coalesced window's share for one task ([`TaskStats::record_coalesced`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coalesced {
    /// This task's jobs in the window.
    pub jobs: u64,
    /// All jobs in the window (every task of the executor).
    pub window_jobs: u64,
    /// The window's first job's start.
    pub start_ns: u64,
    /// The window's last job's end.
    pub end_ns: u64,
    /// The earliest release among this task's jobs in the window.
    pub earliest_release_ns: u64,
}

/// What the executor knows when a job returns. Times are absolute CLOCK_MONOTONIC ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// When the job was scheduled to be released.
    pub release_ns: u64,
    /// When it started running.
    pub start_ns: u64,
    /// When it returned.
    pub end_ns: u64,
    /// CPU time it consumed, if measured; otherwise `end − start` is used.
    pub cpu_ns: Option<u64>,
    /// Its absolute deadline, if it has one.
    pub deadline_ns: Option<u64>,
}

/// The accounting record of one task. See the module docs.
pub struct TaskStats<P: Precision = Digits2> {
    name: &'static str,
    releases: AtomicU64,
    completions: AtomicU64,
    skipped: AtomicU64,
    latency: Histogram<P>,
    exec: Histogram<P>,
    exec_min: AtomicU64,
    exec_max: AtomicU64,
    exec_sum: AtomicU64,
    response_max: AtomicU64,
    misses: AtomicU64,
    consecutive: AtomicU64,
    max_consecutive: AtomicU64,
    max_lateness: AtomicI64,
    minor_faults: AtomicU64,
    major_faults: AtomicU64,
    coalesced: AtomicU64,
}

impl<P: Precision> fmt::Debug for TaskStats<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskStats")
            .field("name", &self.name)
            .field("releases", &self.releases.load(Relaxed))
            .field("completions", &self.completions.load(Relaxed))
            .field("deadline_misses", &self.misses.load(Relaxed))
            .finish_non_exhaustive()
    }
}

#[inline(always)]
fn add(cell: &AtomicU64, n: u64) {
    cell.store(cell.load(Relaxed).saturating_add(n), Relaxed);
}

#[inline(always)]
fn raise(cell: &AtomicU64, v: u64) {
    if v > cell.load(Relaxed) {
        cell.store(v, Relaxed);
    }
}

#[inline(always)]
fn lower(cell: &AtomicU64, v: u64) {
    if v < cell.load(Relaxed) {
        cell.store(v, Relaxed);
    }
}

/// No completion with a deadline seen yet.
const NO_LATENESS: i64 = i64::MIN;

impl<P: Precision> TaskStats<P> {
    /// An empty record for the task called `name`. `const`, allocation-free.
    pub const fn new(name: &'static str) -> Self {
        TaskStats {
            name,
            releases: AtomicU64::new(0),
            completions: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            latency: Histogram::new(),
            exec: Histogram::new(),
            exec_min: AtomicU64::new(u64::MAX),
            exec_max: AtomicU64::new(0),
            exec_sum: AtomicU64::new(0),
            response_max: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            consecutive: AtomicU64::new(0),
            max_consecutive: AtomicU64::new(0),
            max_lateness: AtomicI64::new(NO_LATENESS),
            minor_faults: AtomicU64::new(0),
            major_faults: AtomicU64::new(0),
            coalesced: AtomicU64::new(0),
        }
    }

    /// The task's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// A job released at `release_ns` started at `start_ns`. A start before the release (a
    /// spawn that ran at once) counts as zero latency.
    #[inline]
    pub fn record_start(&self, release_ns: u64, start_ns: u64) {
        add(&self.releases, 1);
        self.latency.record(start_ns.saturating_sub(release_ns));
    }

    /// A job returned.
    #[inline]
    pub fn record_completion(&self, job: Completion) {
        add(&self.completions, 1);
        let exec = job
            .cpu_ns
            .unwrap_or_else(|| job.end_ns.saturating_sub(job.start_ns));
        lower(&self.exec_min, exec);
        raise(&self.exec_max, exec);
        add(&self.exec_sum, exec);
        self.exec.record(exec);
        raise(
            &self.response_max,
            job.end_ns.saturating_sub(job.release_ns),
        );
        if let Some(deadline) = job.deadline_ns {
            let lateness = i128::from(job.end_ns) - i128::from(deadline);
            let lateness = i64::try_from(lateness).unwrap_or(if lateness < 0 {
                i64::MIN + 1
            } else {
                i64::MAX
            });
            if lateness > self.max_lateness.load(Relaxed) {
                self.max_lateness.store(lateness, Relaxed);
            }
            if lateness > 0 {
                add(&self.misses, 1);
                let run = self.consecutive.load(Relaxed) + 1;
                self.consecutive.store(run, Relaxed);
                raise(&self.max_consecutive, run);
            } else {
                self.consecutive.store(0, Relaxed);
            }
        }
    }

    /// `window.jobs` jobs of this task ran in a window of `window.window_jobs` back-to-back
    /// jobs of one executor that was timed as a whole, by one pair of stamps (the executor
    /// coalesces short jobs so that a job costs no counter read; see `preempt`'s executor,
    /// "Accounting"). Counts stay exact; the times become bounds: each job's execution time
    /// and response time are at most the window's length (resp. the window's end minus the
    /// earliest release), its release latency at most `end - earliest release`; the window's
    /// time is shared out evenly for the mean (exact for the window as a whole) and for the
    /// execution-time histogram (each job counted at its even share). Jobs with
    /// deadlines are never coalesced, so misses and lateness stay exact.
    #[inline]
    pub fn record_coalesced(&self, window: Coalesced) {
        debug_assert!(window.jobs > 0 && window.jobs <= window.window_jobs);
        add(&self.releases, window.jobs);
        add(&self.completions, window.jobs);
        add(&self.coalesced, window.jobs);
        let length = window.end_ns.saturating_sub(window.start_ns);
        let waited = window.end_ns.saturating_sub(window.earliest_release_ns);
        self.latency.record_n(waited, window.jobs);
        // This task's share of the window, for the sum (the mean) and as its jobs' typical
        // execution time for the minimum.
        let share = u64::try_from(
            u128::from(length) * u128::from(window.jobs) / u128::from(window.window_jobs.max(1)),
        )
        .unwrap_or(u64::MAX);
        add(&self.exec_sum, share);
        self.exec.record_n(share / window.jobs.max(1), window.jobs);
        lower(&self.exec_min, share / window.jobs.max(1));
        raise(&self.exec_max, length);
        raise(&self.response_max, waited);
    }

    /// `count` releases were dropped by the overrun policy (never started).
    #[inline]
    pub fn record_skipped(&self, count: u64) {
        add(&self.skipped, count);
    }

    /// The thread took `minor` and `major` page faults while a job of this task ran.
    #[inline]
    pub fn record_page_faults(&self, minor: u64, major: u64) {
        add(&self.minor_faults, minor);
        add(&self.major_faults, major);
    }

    /// Deadline misses so far (cheap; for an on-miss policy that escalates).
    pub fn deadline_misses(&self) -> u64 {
        self.misses.load(Relaxed)
    }

    /// Misses in a row up to the last completion.
    pub fn consecutive_misses(&self) -> u64 {
        self.consecutive.load(Relaxed)
    }

    /// The release-latency histogram.
    pub fn release_latency(&self) -> &Histogram<P> {
        &self.latency
    }

    /// The execution-time histogram (CPU time when given, else `end − start`).
    pub fn execution_time(&self) -> &Histogram<P> {
        &self.exec
    }

    /// Forgets everything recorded (for example after a warm-up phase).
    pub fn reset(&mut self) {
        *self = TaskStats::new(self.name);
    }

    /// An owned copy of the record (allocates; call it from any thread, off the hot path).
    pub fn snapshot(&self) -> TaskSnapshot {
        let completions = self.completions.load(Relaxed);
        let lateness = self.max_lateness.load(Relaxed);
        TaskSnapshot {
            name: self.name.to_owned(),
            releases: self.releases.load(Relaxed),
            completions,
            skipped_releases: self.skipped.load(Relaxed),
            release_latency: self.latency.snapshot(),
            execution_time: self.exec.snapshot(),
            exec_min_ns: (completions > 0).then(|| self.exec_min.load(Relaxed)),
            exec_mean_ns: (completions > 0)
                .then(|| self.exec_sum.load(Relaxed) as f64 / completions as f64),
            exec_max_ns: (completions > 0).then(|| self.exec_max.load(Relaxed)),
            response_max_ns: (completions > 0).then(|| self.response_max.load(Relaxed)),
            deadline_misses: self.misses.load(Relaxed),
            consecutive_misses: self.consecutive.load(Relaxed),
            max_consecutive_misses: self.max_consecutive.load(Relaxed),
            max_lateness_ns: (lateness != NO_LATENESS).then_some(lateness),
            minor_faults: self.minor_faults.load(Relaxed),
            major_faults: self.major_faults.load(Relaxed),
            coalesced_jobs: self.coalesced.load(Relaxed),
        }
    }
}

/// An empty default-precision histogram (an `execution_time` missing from an older file).
#[cfg(feature = "serde")]
fn empty_histogram() -> HistogramSnapshot {
    HistogramSnapshot::empty(Digits2::LAYOUT)
}

/// An owned copy of a [`TaskStats`], for reports and JSON export.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TaskSnapshot {
    /// Task name.
    pub name: String,
    /// Jobs started.
    pub releases: u64,
    /// Jobs that returned.
    pub completions: u64,
    /// Releases dropped by the overrun policy.
    pub skipped_releases: u64,
    /// Release latency (start − scheduled release): exact min/max, buckets, percentiles.
    pub release_latency: HistogramSnapshot,
    /// Execution time per job (CPU time when measured, else `end − start`): buckets and exact
    /// min/max/sum. Absent in results written before it existed (read back as empty).
    #[cfg_attr(feature = "serde", serde(default = "empty_histogram"))]
    pub execution_time: HistogramSnapshot,
    /// Shortest execution time.
    pub exec_min_ns: Option<u64>,
    /// Mean execution time.
    pub exec_mean_ns: Option<f64>,
    /// Longest execution time: the measured WCET.
    pub exec_max_ns: Option<u64>,
    /// Longest response time (end − scheduled release), to compare with the RTA bound.
    pub response_max_ns: Option<u64>,
    /// Jobs that ended after their deadline.
    pub deadline_misses: u64,
    /// Misses in a row up to the last completion.
    pub consecutive_misses: u64,
    /// Longest run of misses in a row.
    pub max_consecutive_misses: u64,
    /// Largest `end − deadline` (negative: every job finished early, by at least this much).
    pub max_lateness_ns: Option<i64>,
    /// Minor page faults taken while the task ran.
    pub minor_faults: u64,
    /// Major page faults taken while the task ran.
    pub major_faults: u64,
    /// Jobs timed as part of a coalesced window ([`TaskStats::record_coalesced`]): their
    /// execution, response and latency figures are bounds, not exact values.
    #[cfg_attr(feature = "serde", serde(default))]
    pub coalesced_jobs: u64,
}

/// Formats nanoseconds for people: `850 ns`, `12.3 µs`, `1.50 ms`, `2.00 s`.
pub fn human_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1e3 {
        format!("{ns:.0} ns")
    } else if a < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

fn opt_ns<T: Into<f64>>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| human_ns(v.into()))
}

fn u64_ns(v: Option<u64>) -> String {
    opt_ns(v.map(|v| v as f64))
}

/// The exit summary: one row per task, columns aligned. `Display` it.
#[derive(Clone, Copy, Debug)]
pub struct SummaryTable<'a>(pub &'a [TaskSnapshot]);

impl fmt::Display for SummaryTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HEAD: [&str; 15] = [
            "task",
            "releases",
            "done",
            "skipped",
            "misses",
            "max-run",
            "lat-min",
            "lat-p50",
            "lat-p99",
            "lat-max",
            "exec-min",
            "exec-avg",
            "exec-max",
            "resp-max",
            "lateness-max",
        ];
        let rows: Vec<[String; 16]> = self
            .0
            .iter()
            .map(|t| {
                let lat = &t.release_latency;
                let p = lat.percentiles();
                let has = lat.count > 0;
                [
                    t.name.clone(),
                    t.releases.to_string(),
                    t.completions.to_string(),
                    t.skipped_releases.to_string(),
                    t.deadline_misses.to_string(),
                    t.max_consecutive_misses.to_string(),
                    u64_ns(lat.min_ns),
                    u64_ns(has.then_some(p.p50_ns)),
                    u64_ns(has.then_some(p.p99_ns)),
                    u64_ns(lat.max_ns),
                    u64_ns(t.exec_min_ns),
                    opt_ns(t.exec_mean_ns),
                    u64_ns(t.exec_max_ns),
                    u64_ns(t.response_max_ns),
                    opt_ns(t.max_lateness_ns.map(|l| l as f64)),
                    format!("{}/{}", t.minor_faults, t.major_faults),
                ]
            })
            .collect();
        let head: Vec<&str> = HEAD.iter().copied().chain(["faults"]).collect();
        let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |f: &mut fmt::Formatter<'_>, cells: &mut dyn Iterator<Item = &str>| {
            for (i, (cell, w)) in cells.zip(&widths).enumerate() {
                let pad = w - cell.chars().count();
                if i == 0 {
                    write!(f, "{cell}{}", " ".repeat(pad))?;
                } else {
                    write!(f, "  {}{cell}", " ".repeat(pad))?;
                }
            }
            writeln!(f)
        };
        line(f, &mut head.iter().copied())?;
        for row in &rows {
            line(f, &mut row.iter().map(String::as_str))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(release: u64, start: u64, end: u64, deadline: Option<u64>) -> Completion {
        Completion {
            release_ns: release,
            start_ns: start,
            end_ns: end,
            cpu_ns: None,
            deadline_ns: deadline,
        }
    }

    #[test]
    fn a_coalesced_window_keeps_counts_exact_and_times_as_bounds() {
        let stats: TaskStats = TaskStats::new("t");
        // 3 of a window's 4 jobs, window 1000..1400 ns, earliest release at 900.
        stats.record_coalesced(Coalesced {
            jobs: 3,
            window_jobs: 4,
            start_ns: 1_000,
            end_ns: 1_400,
            earliest_release_ns: 900,
        });
        let s = stats.snapshot();
        assert_eq!((s.releases, s.completions, s.coalesced_jobs), (3, 3, 3));
        assert_eq!(s.release_latency.count, 3);
        assert_eq!(s.release_latency.max_ns, Some(500));
        assert_eq!(s.exec_max_ns, Some(400));
        assert_eq!(s.exec_mean_ns, Some(100.0));
        assert_eq!(s.response_max_ns, Some(500));
        assert_eq!(s.deadline_misses, 0);
        // Each of the 3 jobs is counted once, at its even share (400 / 4 = 100 ns).
        assert_eq!(s.execution_time.count, 3);
        assert_eq!(s.execution_time.sum_ns, 300);
        assert_eq!(s.execution_time.max_ns, Some(100));
    }

    #[test]
    fn execution_times_form_a_histogram_beside_the_exact_extremes() {
        let stats: TaskStats = TaskStats::new("t");
        for (k, exec) in [100_u64, 200, 200, 5_000].into_iter().enumerate() {
            let r = k as u64 * 10_000;
            stats.record_start(r, r);
            stats.record_completion(job(r, r, r + exec, None));
        }
        let s = stats.snapshot();
        let h = &s.execution_time;
        assert_eq!((h.count, h.sum_ns), (4, 5_500));
        assert_eq!((h.min_ns, h.max_ns), (Some(100), Some(5_000)));
        assert_eq!((s.exec_min_ns, s.exec_max_ns), (Some(100), Some(5_000)));
        // Median in 200's bucket, the top sample exactly the maximum.
        assert_eq!(h.value_at_quantile(0.5), 200);
        assert_eq!(h.value_at_quantile(1.0), 5_000);
        assert_eq!(stats.execution_time().count(), 4);
    }

    #[test]
    fn consecutive_misses_track_the_current_and_longest_run() {
        let stats: TaskStats = TaskStats::new("t");
        // miss, miss, hit, miss, miss, miss, hit
        for (k, late) in [true, true, false, true, true, true, false]
            .iter()
            .enumerate()
        {
            let r = k as u64 * 1_000;
            stats.record_start(r, r + 10);
            let end = if *late { r + 900 } else { r + 400 };
            stats.record_completion(job(r, r + 10, end, Some(r + 500)));
            if k == 5 {
                assert_eq!(stats.consecutive_misses(), 3);
            }
        }
        let s = stats.snapshot();
        assert_eq!(s.deadline_misses, 5);
        assert_eq!(s.consecutive_misses, 0);
        assert_eq!(s.max_consecutive_misses, 3);
        assert_eq!(s.max_lateness_ns, Some(400));
        assert_eq!(s.exec_min_ns, Some(390));
        assert_eq!(s.exec_max_ns, Some(890));
        assert_eq!(s.response_max_ns, Some(900));
        assert_eq!(s.release_latency.min_ns, Some(10));
        assert_eq!(s.release_latency.count, 7);
    }

    #[test]
    fn an_always_early_task_reports_negative_lateness_and_no_miss() {
        let stats: TaskStats = TaskStats::new("early");
        stats.record_start(0, 5);
        stats.record_completion(job(0, 5, 100, Some(1_000)));
        stats.record_start(1_000, 1_002);
        stats.record_completion(job(1_000, 1_002, 1_300, Some(2_000)));
        let s = stats.snapshot();
        assert_eq!(s.max_lateness_ns, Some(-700));
        assert_eq!(s.deadline_misses, 0);
    }

    #[test]
    fn cpu_time_overrides_wall_clock_execution_time() {
        let stats: TaskStats = TaskStats::new("cpu");
        stats.record_start(0, 0);
        stats.record_completion(Completion {
            cpu_ns: Some(42),
            ..job(0, 0, 10_000, None)
        });
        let s = stats.snapshot();
        assert_eq!((s.exec_min_ns, s.exec_max_ns), (Some(42), Some(42)));
        assert_eq!(s.exec_mean_ns, Some(42.0));
        assert_eq!(s.max_lateness_ns, None);
    }

    #[test]
    fn empty_stats_have_no_extremes_and_print_dashes() {
        let mut stats: TaskStats = TaskStats::new("idle");
        let s = stats.snapshot();
        assert_eq!(
            (s.exec_min_ns, s.exec_max_ns, s.response_max_ns),
            (None, None, None)
        );
        let table = SummaryTable(std::slice::from_ref(&s)).to_string();
        assert!(table.lines().nth(1).unwrap().starts_with("idle"));
        assert!(table.contains(" -"));
        stats.record_skipped(3);
        stats.record_page_faults(2, 1);
        let s = stats.snapshot();
        assert_eq!(
            (s.skipped_releases, s.minor_faults, s.major_faults),
            (3, 2, 1)
        );
        stats.reset();
        assert_eq!(stats.snapshot().skipped_releases, 0);
        assert_eq!(stats.name(), "idle");
    }

    #[test]
    fn summary_table_aligns_columns() {
        let a: TaskStats = TaskStats::new("sample-10khz");
        let b: TaskStats = TaskStats::new("ctl");
        a.record_start(0, 2_500);
        a.record_completion(job(0, 2_500, 40_000, Some(100_000)));
        b.record_start(0, 1_500_000);
        b.record_completion(job(0, 1_500_000, 2_500_000, Some(1_000_000)));
        let table = SummaryTable(&[a.snapshot(), b.snapshot()]).to_string();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3);
        let width = lines[0].chars().count();
        assert!(lines.iter().all(|l| l.chars().count() == width), "{table}");
        assert!(
            lines[1].contains("2.5 µs") && lines[1].contains("37.5 µs"),
            "{table}"
        );
        assert!(
            lines[2].contains("1.50 ms") && lines[2].contains("1.00 ms"),
            "{table}"
        );
    }

    #[test]
    fn human_ns_picks_a_unit() {
        assert_eq!(human_ns(850.0), "850 ns");
        assert_eq!(human_ns(12_345.0), "12.3 µs");
        assert_eq!(human_ns(1_500_000.0), "1.50 ms");
        assert_eq!(human_ns(2e9), "2.00 s");
        assert_eq!(human_ns(-700.0), "-700 ns");
    }
}
