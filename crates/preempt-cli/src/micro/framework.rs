//! The framework set (seed `004_…` §6.2): the cost of the preempt runtime's own primitives.
//!
//! The thesis measured, on a Raspberry Pi 4 with PREEMPT_RT, a same-priority task switch
//! (394 ns: both tasks on one executor thread), a cross-priority task switch (9.89 µs across
//! cores, 6.48 µs pinned to one core: a futex wake and a kernel context switch), an
//! uncontended resource lock/unlock (309/171 ns) and a contended unlock (5.43 µs: a
//! `FUTEX_WAKE`).
//!
//! # The slot
//! These benchmarks drive the runtime crate (`preempt`), whose task and resource API is being
//! built in the framework-core issue. Until it is public, [`benches`] is empty and
//! [`PLANNED`] names the rows the report shows as "not measured yet", so the table's shape is
//! fixed now. Adding a benchmark is one [`Bench`] entry whose `run` spawns the tasks with the
//! runtime and returns counter-tick samples, exactly like the NXP and Zephyr sets: the
//! statistics, records, report and compare need no change.

use super::bench::Bench;

/// The rows of the set: `(id, title)`.
pub const PLANNED: [(&str, &str); 6] = [
    (
        "task_switch_same_prio",
        "task switch, same priority (one executor thread)",
    ),
    (
        "task_switch_cross_prio",
        "task switch, cross priority (two threads, unpinned)",
    ),
    (
        "task_switch_cross_prio_one_core",
        "task switch, cross priority, one core",
    ),
    ("resource_lock", "resource lock, uncontended"),
    ("resource_unlock", "resource unlock, uncontended"),
    (
        "resource_unlock_contended",
        "resource unlock with a waiter (FUTEX_WAKE)",
    ),
];

/// Why the set has no figures yet.
pub const NOT_AVAILABLE: &str = "the preempt runtime does not expose its task and resource API yet \
                                 (framework-core issue); the rows are reserved";

/// The benchmarks of this set (none until the runtime API is public).
pub fn benches() -> Vec<Bench> {
    Vec::new()
}
