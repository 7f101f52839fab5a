//! Periodic tasks: drift-free absolute releases and what happens when a job is late.
//!
//! `#[task(priority = 90, period = 1.millis(), deadline = 800.micros(), on_miss = Skip)]`
//! declares a task the runtime releases itself at `t0, t0 + T, t0 + 2T, ..` (`t0` = the
//! moment the app's executors start, common to every periodic task, so they all meet at the
//! critical instant). Releases are computed from the grid, never from "now + T", so the
//! period does not drift with wake-up latency. Each job has the absolute deadline
//! `release + D` (`D` defaults to `T`; it must not exceed it).
//!
//! A job *misses its deadline* when it completes after `release + D`; every miss is
//! counted in the task's accounting whatever the policy. A release is *overrun* when the
//! executor gets to it only after the next release `release + T` has passed too (the
//! previous job ran long, or the level was busy). [`OnMiss`] chooses what happens then.
//! The policies follow tokio's `MissedTickBehavior` (`tokio/src/time/interval.rs`), adapted
//! to releases and deadlines; `*` marks a job that started late:
//!
//! ```text
//! T = 4 time units, the job released at 0 runs for 9 units (overrun), all others for 1.
//!
//! time     0   2   4   6   8  10  12  14  16  18  20
//! grid     |       |       |       |       |       |
//!
//! Burst    [========]*[=]*[=] [=]     [=]     [=]       releases 4 and 8 run back to back at
//!          0          4    8   12      16      20        9 and 10; the grid is kept: every
//!                                                        release runs, late ones in a burst
//!
//! Skip     [========]*[=]     [=]     [=]     [=]       at 9 the releases 4 and 8 have passed:
//!          0          8       12      16      20         4 is dropped (counted as skipped), the
//!                                                        latest, 8, runs at once; grid kept
//!
//! Delay    [========]*[=]      [=]     [=]     [=]      release 4 runs at once at 9, and the
//!          0          4        13      17      21        grid moves: the next release is
//!                                                        9 + T = 13, then every T
//!
//! Fault    [========]X                                   the job released at 0 completes after
//!          0                                             its deadline: the app stops with exit
//!                                                        code 3 and names the task and lateness
//! ```
//!
//! A release whose deadline passes before it could start is a fault under `Fault` as well.
//! The decisions are pure functions of the grid and the time the executor looks at it
//! ([`due`], [`Policy`]), tested here on the timelines above and, under the mock clock, with
//! injected overruns in `tests/sim_periodic.rs`.

use std::fmt;

/// What the runtime does when releases of a periodic task are overrun. See the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum OnMiss {
    /// Run every overrun release, back to back, until the task has caught up with its grid.
    Burst,
    /// Drop every overrun release but the latest one, which runs at once; stay on the grid.
    Skip,
    /// Run the overrun release at once and move the grid: the next release is one period
    /// after the late start.
    Delay,
    /// Stop the application (exit code 3) at the first deadline miss.
    Fault,
}

impl fmt::Display for OnMiss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OnMiss::Burst => "Burst",
            OnMiss::Skip => "Skip",
            OnMiss::Delay => "Delay",
            OnMiss::Fault => "Fault",
        })
    }
}

/// The static description of a periodic task, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Period `T` (> 0).
    pub period_ns: u64,
    /// Relative deadline `D` (0 < D <= T).
    pub deadline_ns: u64,
    /// Overrun policy.
    pub on_miss: OnMiss,
}

/// What the executor does with a periodic task whose pending release is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    /// The release (a grid point) of the job to run now.
    pub release_ns: u64,
    /// Releases dropped before it (`Skip` only).
    pub skipped: u64,
    /// The pending release after this job.
    pub next_ns: u64,
    /// `true` if the job's deadline has already passed before it starts.
    pub already_late: bool,
}

/// The decision for a periodic task whose pending release `pending_ns` is due at `now_ns`
/// (`pending_ns <= now_ns`).
///
/// `passed` = how many grid releases `pending + kT` are `<= now`. One: an ordinary,
/// possibly slightly late release. More: the releases are overrun, and the policy decides.
pub fn due(policy: &Policy, pending_ns: u64, now_ns: u64) -> Due {
    debug_assert!(
        pending_ns <= now_ns,
        "release {pending_ns} is not due at {now_ns}"
    );
    let period = policy.period_ns.max(1);
    let passed = (now_ns - pending_ns) / period + 1;
    let (release_ns, skipped, next_ns) = if passed == 1 {
        (pending_ns, 0, pending_ns.saturating_add(period))
    } else {
        match policy.on_miss {
            OnMiss::Burst | OnMiss::Fault => (pending_ns, 0, pending_ns.saturating_add(period)),
            OnMiss::Skip => {
                let latest = pending_ns.saturating_add((passed - 1).saturating_mul(period));
                (latest, passed - 1, latest.saturating_add(period))
            }
            OnMiss::Delay => (pending_ns, 0, now_ns.saturating_add(period)),
        }
    };
    Due {
        release_ns,
        skipped,
        next_ns,
        already_late: now_ns > release_ns.saturating_add(policy.deadline_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: u64 = 4;

    fn policy(on_miss: OnMiss) -> Policy {
        Policy {
            period_ns: T,
            deadline_ns: T,
            on_miss,
        }
    }

    /// Replays the module docs' timeline: the job released at 0 runs 9 units, all others 1.
    /// Returns `(release, start)` per job and the skipped count, up to time 21.
    fn timeline(on_miss: OnMiss) -> (Vec<(u64, u64)>, u64) {
        let p = policy(on_miss);
        let mut jobs = Vec::new();
        let mut skipped = 0;
        let mut pending = 0;
        let mut now = 0;
        while pending <= 21 {
            now = now.max(pending);
            let d = due(&p, pending, now);
            skipped += d.skipped;
            jobs.push((d.release_ns, now));
            now += if d.release_ns == 0 { 9 } else { 1 };
            pending = d.next_ns;
        }
        (jobs, skipped)
    }

    #[test]
    fn burst_runs_every_release_back_to_back() {
        let (jobs, skipped) = timeline(OnMiss::Burst);
        assert_eq!(
            jobs,
            vec![(0, 0), (4, 9), (8, 10), (12, 12), (16, 16), (20, 20)]
        );
        assert_eq!(skipped, 0);
    }

    #[test]
    fn skip_drops_all_but_the_latest_overrun_release() {
        let (jobs, skipped) = timeline(OnMiss::Skip);
        assert_eq!(jobs, vec![(0, 0), (8, 9), (12, 12), (16, 16), (20, 20)]);
        assert_eq!(skipped, 1);
    }

    #[test]
    fn delay_moves_the_grid_to_the_late_start() {
        let (jobs, skipped) = timeline(OnMiss::Delay);
        assert_eq!(jobs, vec![(0, 0), (4, 9), (13, 13), (17, 17), (21, 21)]);
        assert_eq!(skipped, 0);
    }

    #[test]
    fn a_slightly_late_release_is_not_an_overrun() {
        for on_miss in [OnMiss::Burst, OnMiss::Skip, OnMiss::Delay, OnMiss::Fault] {
            let d = due(&policy(on_miss), 8, 11);
            assert_eq!(
                d,
                Due {
                    release_ns: 8,
                    skipped: 0,
                    next_ns: 12,
                    already_late: false
                },
                "{on_miss}"
            );
        }
    }

    #[test]
    fn a_release_past_its_deadline_is_already_late() {
        let p = Policy {
            period_ns: 10,
            deadline_ns: 3,
            on_miss: OnMiss::Fault,
        };
        assert!(!due(&p, 10, 13).already_late);
        assert!(due(&p, 10, 14).already_late);
    }

    #[test]
    fn skip_over_many_periods_counts_every_dropped_release() {
        let d = due(&policy(OnMiss::Skip), 100, 100 + 10 * T + 1);
        assert_eq!(d.release_ns, 100 + 10 * T);
        assert_eq!(d.skipped, 10);
        assert_eq!(d.next_ns, 100 + 11 * T);
    }
}
