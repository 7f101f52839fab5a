//! [`TaskControl`]: what the runtime keeps per task: its kind, its message slots, its timing
//! attributes and its always-on accounting record.
//!
//! The macro generates one `TaskControl` per task in a `static` array per priority level.
//! Fields written at run time are either atomics (read by other threads for snapshots) or
//! cells that only the level's executor thread touches.

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};

use preempt_stats::task_stats::TaskStats;

use crate::periodic::{OnMiss, Policy};

/// How a task is released.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// A run-to-completion function, released by `spawn` / `spawn_after` / `spawn_at`.
    Software,
    /// An `async fn`, released by `spawn`, one live instance.
    Async,
    /// Released by the runtime every `period`.
    Periodic,
    /// Released when its file descriptor becomes readable (`binds = ..`).
    Hardware,
}

/// Per-task runtime state (see the [module docs](self)).
#[doc(hidden)]
pub struct TaskControl {
    pub(crate) name: &'static str,
    pub(crate) kind: TaskKind,
    pub(crate) capacity: u16,
    pub(crate) on_miss: OnMiss,
    /// Messages in the ready ring (executor thread only).
    pub(crate) ready: UnsafeCell<u16>,
    /// Messages in the inbox.
    pub(crate) inbox: AtomicU16,
    /// Messages in the timer queue.
    pub(crate) timed: AtomicU16,
    /// The accounting record.
    pub(crate) stats: TaskStats,
    /// Relative deadline in ns (0: none). Set before the executors start.
    deadline_ns: AtomicU64,
    /// Period in ns (periodic tasks). Set before the executors start.
    period_ns: AtomicU64,
    /// Declared minimum inter-arrival time in ns (sporadic tasks; 0: none).
    declared_interarrival_ns: AtomicU64,
    /// Shortest time between two releases seen so far (`u64::MAX`: fewer than two).
    min_interarrival_ns: AtomicU64,
    /// Executor-thread-only state.
    pub(crate) local: LocalState,
}

/// State only the task's executor thread touches.
#[derive(Default)]
pub(crate) struct LocalState {
    /// Periodic: the pending release. Hardware: when the fd was seen readable.
    pub(crate) next_ns: Cell<u64>,
    /// Hardware: the fd is readable and the task has not run since.
    pub(crate) pending: Cell<bool>,
    /// The last release (for the inter-arrival time).
    pub(crate) last_release_ns: Cell<u64>,
    /// Async: release, first poll and summed poll time of the running instance.
    pub(crate) async_release_ns: Cell<u64>,
    pub(crate) async_start_ns: Cell<u64>,
    pub(crate) async_exec_ns: Cell<u64>,
    /// Jobs of the task in the executor's open coalesced window.
    pub(crate) window_jobs: Cell<u32>,
    /// Jobs run with real-time safety checks (the `cycle` of a finding).
    pub(crate) checked_jobs: Cell<u64>,
    /// The earliest release among them.
    pub(crate) window_release_ns: Cell<u64>,
}

// SAFETY: `ready` and `local` are only touched by the executor thread of the task's level
// (the spawn path checks `Executor::on_own_thread` before touching `ready`; `local` is only
// used inside the executor loop); every other field is atomic or immutable.
unsafe impl Sync for TaskControl {}

impl TaskControl {
    /// A task called `name` of `kind` with `capacity` message slots per queue.
    pub const fn new(name: &'static str, kind: TaskKind, capacity: u16, on_miss: OnMiss) -> Self {
        TaskControl {
            name,
            kind,
            capacity,
            on_miss,
            ready: UnsafeCell::new(0),
            inbox: AtomicU16::new(0),
            timed: AtomicU16::new(0),
            stats: TaskStats::new(name),
            deadline_ns: AtomicU64::new(0),
            period_ns: AtomicU64::new(0),
            declared_interarrival_ns: AtomicU64::new(0),
            min_interarrival_ns: AtomicU64::new(u64::MAX),
            local: LocalState {
                next_ns: Cell::new(0),
                pending: Cell::new(false),
                last_release_ns: Cell::new(0),
                async_release_ns: Cell::new(0),
                async_start_ns: Cell::new(0),
                async_exec_ns: Cell::new(0),
                window_jobs: Cell::new(0),
                window_release_ns: Cell::new(0),
                checked_jobs: Cell::new(0),
            },
        }
    }

    /// The task's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The task's kind.
    pub fn kind(&self) -> TaskKind {
        self.kind
    }

    /// The accounting record.
    pub fn stats(&self) -> &TaskStats {
        &self.stats
    }

    /// Sets the period, relative deadline and declared minimum inter-arrival time (ns; 0 =
    /// none) from the task's attributes. Called by `run` before any executor starts.
    pub fn set_timing(&self, period_ns: u64, deadline_ns: u64, min_interarrival_ns: u64) {
        self.period_ns.store(period_ns, Ordering::Relaxed);
        self.deadline_ns.store(deadline_ns, Ordering::Relaxed);
        self.declared_interarrival_ns
            .store(min_interarrival_ns, Ordering::Relaxed);
    }

    /// The declared minimum inter-arrival time (`min_interarrival = ..`), if any.
    pub fn declared_interarrival_ns(&self) -> Option<u64> {
        match self.declared_interarrival_ns.load(Ordering::Relaxed) {
            0 => None,
            v => Some(v),
        }
    }

    /// Relative deadline in ns, if the task has one.
    pub fn deadline_ns(&self) -> Option<u64> {
        match self.deadline_ns.load(Ordering::Relaxed) {
            0 => None,
            d => Some(d),
        }
    }

    /// Period in ns, for periodic tasks.
    pub fn period_ns(&self) -> Option<u64> {
        match self.period_ns.load(Ordering::Relaxed) {
            0 => None,
            p => Some(p),
        }
    }

    /// The shortest time seen between two releases.
    pub fn min_interarrival_ns(&self) -> Option<u64> {
        match self.min_interarrival_ns.load(Ordering::Relaxed) {
            u64::MAX => None,
            v => Some(v),
        }
    }

    /// The periodic policy.
    pub(crate) fn policy(&self) -> Policy {
        let period_ns = self.period_ns.load(Ordering::Relaxed);
        Policy {
            period_ns,
            deadline_ns: match self.deadline_ns.load(Ordering::Relaxed) {
                0 => period_ns,
                d => d,
            },
            on_miss: self.on_miss,
        }
    }

    /// Notes a release (executor thread only) for the inter-arrival time.
    #[inline]
    pub(crate) fn note_release(&self, release_ns: u64) {
        let last = self.local.last_release_ns.replace(release_ns);
        if last != 0 && release_ns > last {
            let gap = release_ns - last;
            if gap < self.min_interarrival_ns.load(Ordering::Relaxed) {
                self.min_interarrival_ns.store(gap, Ordering::Relaxed);
            }
        }
    }

    /// Takes one slot of `counter` if fewer than `capacity` are taken.
    #[inline]
    pub(crate) fn take(&self, counter: &AtomicU16) -> bool {
        // A counter, not a guard for other memory: the queue's own release/acquire carries
        // the message. Relaxed RMWs on one location are still totally ordered, so the bound
        // holds.
        let previous = counter.fetch_add(1, Ordering::Relaxed);
        if previous >= self.capacity {
            counter.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        true
    }
}
