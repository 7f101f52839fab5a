//! What an executor level is to the rest of the runtime: the interface that start-up, the
//! mock-clock simulator and the statistics use ([`Executable`]), what the application tells a
//! level's loop ([`LoopControl`]) and what a level does when idle ([`IdlePolicy`]).
//!
//! It sits below both `executor` (which implements it) and `sim` (which drives executors
//! through it on virtual time), so that neither imports the other's upward half.

use std::sync::atomic::AtomicBool;

use crate::task::TaskControl;

/// What an executor does when it has nothing to run.
///
/// Measured wake-up latency (spawn on CPU 0 -> start on CPU 1, 2-vCPU VM, Linux 6.18
/// PREEMPT_NONE; `cargo bench -p preempt --bench tasks`): `Sleep` p50 14.6 µs, `Spin` p50
/// 1.0 µs, `SpinThenSleep` within its window p50 1.1 µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdlePolicy {
    /// Sleep in the kernel (futex or epoll) until the next event: no CPU use when idle;
    /// wake-up latency = the kernel's (a few µs).
    Sleep,
    /// Never sleep: look at the queues again at once. Wake-up latency = one loop iteration
    /// (sub-µs), at the price of a whole CPU; for isolated cores only. On PREEMPT_RT a
    /// spinning level above RCU's kthreads (`rcutree.kthread_prio`, 1 by default) starves
    /// them on its CPU and stalls RCU: the app warns at start.
    Spin,
    /// Spin for this many ns after the last job, then sleep: fast response to bursts, no
    /// CPU burnt in long idle periods.
    SpinThenSleep(u64),
}

/// What the application tells an executor loop.
#[doc(hidden)]
pub struct LoopControl<'a> {
    /// Set when the application stops.
    pub stop: &'a AtomicBool,
    /// Called with the task's name, its priority and the panic message when a task panics;
    /// returns `true` to keep going.
    pub on_panic: &'a (dyn Fn(&'static str, u8, &str) -> bool + Sync),
    /// Called with a description when a task with `on_miss = Fault` misses a deadline; the
    /// app stops.
    pub on_fault: &'a (dyn Fn(&str) + Sync),
    /// The common first release of every periodic task.
    pub epoch_ns: u64,
    /// What the level does when idle.
    pub idle: IdlePolicy,
}

/// An executor as the application start-up, the simulator and the statistics see it.
#[doc(hidden)]
pub trait Executable: Sync {
    /// The SCHED_FIFO priority of the level.
    fn priority(&self) -> u8;
    /// The level's tasks.
    fn tasks(&self) -> &'static [TaskControl];
    /// Runs the loop on the calling thread until `control.stop` is set (or a task panics
    /// and `on_panic` says to stop).
    fn run_loop(&'static self, control: &LoopControl<'_>);
    /// Wakes the executor thread if it sleeps (used to deliver a stop request).
    fn wake(&self);
    /// Page faults taken by the level's thread (minor, major).
    fn faults(&self) -> (u64, u64);
    /// Throttled windows the level's thread waited out (RT throttling or the fair server;
    /// `preempt_io::sys::schedstat::ThrottleWatch`).
    fn throttled_windows(&self) -> u64;
    /// Simulator: claims the executor for the calling thread and sets the periodic grid.
    fn sim_start(&'static self, epoch_ns: u64);
    /// Simulator: polls the fds without sleeping and runs up to `budget` jobs; returns
    /// (progress made, keep going).
    fn sim_round(&'static self, control: &LoopControl<'_>, budget: usize) -> (usize, bool);
    /// Simulator: the earliest time-triggered event (timed message, periodic release,
    /// delay).
    fn sim_next_event_ns(&'static self) -> Option<u64>;
}
