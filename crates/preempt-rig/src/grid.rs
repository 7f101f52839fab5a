//! The release grid of a demonstrator's periodic controller task: which release a job
//! serves, and how many it skipped. Both the real app and the mock-clock reference label
//! their records with it, so that real and reference line up sample by sample (the gimbal's
//! 10 kHz `sample`, the UAV's 250 Hz `control`).
//!
//! ```
//! use preempt_rig::grid::Grid;
//! let mut g = Grid::new(1_000, 100_000); // 100 µs period from t0 = 1 µs
//! assert_eq!(g.label(1_000 + 5_000), (0, 0));          // first sample, 5 µs late
//! assert_eq!(g.label(1_000 + 100_000 + 7_000), (1, 0));
//! assert_eq!(g.label(1_000 + 300_000 + 1_000), (3, 1)); // sample 2 was skipped
//! ```

/// Labels each job of a periodic task with the release it serves on the grid of period
/// `period` that starts at `t0`: the executor's releases are `gate + k·period` and `t0` is
/// taken just after the gate opens, so a job that starts at `now` serves release
/// `⌊(now − t0 + 20 µs) / period⌋` (the 20 µs guard covers the few microseconds between the
/// gate and `t0`), and at least the one after the previous job's.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    t0: u64,
    next: u64,
    period: u64,
}

/// The guard of [`Grid::label`], ns.
const GUARD_NS: u64 = 20_000;

impl Grid {
    /// A grid of `period_ns` starting at `t0_ns`.
    pub const fn new(t0_ns: u64, period_ns: u64) -> Grid {
        Grid {
            t0: t0_ns,
            next: 0,
            period: period_ns,
        }
    }

    /// The grid's start, ns.
    pub fn t0(&self) -> u64 {
        self.t0
    }

    /// (sample number, releases skipped since the previous job) for a job starting at `now_ns`.
    pub fn label(&mut self, now_ns: u64) -> (u64, u64) {
        let by_time = (now_ns.saturating_sub(self.t0) + GUARD_NS) / self.period;
        let k = by_time.max(self.next);
        let skipped = k - self.next;
        self.next = k + 1;
        (k, skipped)
    }

    /// The release time of sample `k`, ns.
    pub fn release_ns(&self, k: u64) -> u64 {
        self.t0 + k * self.period
    }
}
