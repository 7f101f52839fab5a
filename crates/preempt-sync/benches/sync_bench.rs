//! Benchmarks of preempt-sync against raw baselines, printed as ratios in one run:
//!
//! 1. uncontended lock+unlock: raw PI-futex CAS pair (`0 -> tid`, `tid -> 0`) vs
//!    `PcpMutex::lock` (target <= 1.3x);
//! 2. contended unlock: raw `FUTEX_UNLOCK_PI` with a waiter vs the unlock of a `PcpMutex`
//!    with a waiter (target <= 1.1x);
//! 3. queue: `VecDeque` push+pop vs `MpscQueue` push+pop (plus `TimerQueue` and `Event`).
//!
//! Run: `cargo bench -p preempt-sync --bench sync_bench` (add `-- --quick` for a smoke run).
//! Timing uses CLOCK_MONOTONIC. Loops run in a SCHED_FIFO thread (when permitted) in short
//! blocks and report the best block, baseline and candidate interleaved; per-sample
//! measurements (contended unlock) report the median.

// Loom builds (`RUSTFLAGS="--cfg loom"`) have no real futexes: nothing to measure there.
#[cfg(not(loom))]
#[path = "sync_bench/run.rs"]
mod run;

fn main() {
    #[cfg(not(loom))]
    run::main();
}
