//! A deterministic simulator for apps on the mock clock: `#[preempt::app(clock = mock)]`.
//!
//! Real executors are threads that sleep in the kernel until an absolute deadline, so a
//! test of release times, overrun policies or fd-driven tasks on them depends on the host's
//! scheduling noise. Under the mock clock ([`crate::time::driver::MOCK`]) the
//! same generated executors, queues, periodic grids, delay lists and fd polling run on the
//! calling thread, and time is virtual:
//!
//! * time moves only when every level is idle (it jumps to the next timed message, periodic
//!   release, `Mono` delay or scripted action) or when a task calls [`advance`] to say it
//!   consumed CPU time (an injected execution time or overrun);
//! * the levels are scheduled like one CPU under SCHED_FIFO: the highest level with work
//!   runs one job at a time; a spawn to a higher level, or a higher level's release that
//!   falls inside an [`advance`], **preempts** the running job on the spot (the higher job
//!   runs nested, as an interrupt would on a microcontroller), except while the job holds a
//!   PCP lock (then the preemption waits until the lock is released or the job ends: a
//!   conservative ceiling, which keeps the simulation deadlock-free);
//! * file descriptors are real: scripted [`at`] actions write to them (an eventfd notifier,
//!   a socket) at virtual times, and the levels poll them without sleeping.
//!
//! The runtime records a [`TraceEvent`] for every job start and end and every skipped
//! release; tests assert on [`take_trace`]. Accounting (`app::stats()`) measures in virtual
//! time, and a job's execution time excludes the time it spent preempted, so it is exactly
//! what the job [`advance`]d: response-time analysis gets exact inputs, and at the critical
//! instant the simulated response times meet its bounds exactly (`tests/sim_rta.rs`).
//!
//! ```
//! #[preempt::app(clock = mock, main = false)]
//! mod app {
//!     #[init]
//!     fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
//!         (Shared {}, Local {}, init::Monotonics())
//!     }
//!
//!     #[task(priority = 2, period = 1.millis(), on_miss = Skip)]
//!     fn tick(_: tick::Context) {
//!         preempt::sim::advance(300.micros()); // this job "runs" 300 µs
//!         if Instant::now() > Instant::from_nanos(3_000_000) {
//!             preempt::exit(0);
//!         }
//!     }
//! }
//!
//! assert_eq!(app::run(), 0);
//! let trace: Vec<String> = preempt::sim::take_trace().iter().map(|e| e.to_string()).collect();
//! assert_eq!(trace[0], "0 start tick released 0");
//! assert_eq!(trace[1], "300000 end tick");
//! ```

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::level::{Executable, LoopControl};
use crate::time::Instant;
use crate::time::driver::{self, Driver, MOCK};

/// One entry of the simulator's event trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// A job started.
    Start {
        /// Task name.
        task: &'static str,
        /// The release it serves (scheduled time, spawn time, or fd readiness time).
        release_ns: u64,
        /// When it started.
        at_ns: u64,
    },
    /// A job ended.
    End {
        /// Task name.
        task: &'static str,
        /// When it ended.
        at_ns: u64,
        /// It ended after its deadline.
        missed: bool,
    },
    /// A periodic release was dropped (`on_miss = Skip`).
    Skip {
        /// Task name.
        task: &'static str,
        /// The dropped release.
        release_ns: u64,
    },
}

impl fmt::Display for TraceEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceEvent::Start {
                task,
                release_ns,
                at_ns,
            } => write!(f, "{at_ns} start {task} released {release_ns}"),
            TraceEvent::End {
                task,
                at_ns,
                missed,
            } => write!(
                f,
                "{at_ns} end {task}{}",
                if *missed { " MISSED" } else { "" }
            ),
            TraceEvent::Skip { task, release_ns } => write!(f, "skip {task} release {release_ns}"),
        }
    }
}

type Action = Box<dyn FnOnce() + Send>;

/// Scripted actions and the trace (shared, so actions may be scheduled before the run).
struct Script {
    actions: BTreeMap<(u64, u64), Action>,
    seq: u64,
    trace: Vec<TraceEvent>,
}

static SCRIPT: Mutex<Script> = Mutex::new(Script {
    actions: BTreeMap::new(),
    seq: 0,
    trace: Vec::new(),
});

fn script() -> std::sync::MutexGuard<'static, Script> {
    // A panicking action cannot leave the maps half-updated (single operations).
    SCRIPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// The running simulation, seen from its thread.
#[derive(Clone, Copy)]
struct Engine {
    executors: &'static [&'static dyn Executable],
    /// The loop control of `run`, alive while the engine is installed.
    control: *const LoopControl<'static>,
}

thread_local! {
    static ENGINE: Cell<Option<Engine>> = const { Cell::new(None) };
    /// The priority of the level whose job runs (0: none, the main loop).
    static LEVEL: Cell<u8> = const { Cell::new(0) };
    /// PCP locks (and critical sections) held by the running job.
    static LOCKS: Cell<u32> = const { Cell::new(0) };
    /// Virtual time the running job spent preempted.
    static STOLEN: Cell<u64> = const { Cell::new(0) };
}

/// `true` while an app runs on the mock clock.
#[inline]
pub(crate) fn active() -> bool {
    driver::mock_installed()
}

pub(crate) fn trace(event: TraceEvent) {
    script().trace.push(event);
}

/// The trace so far, leaving it in place.
pub fn trace_events() -> Vec<TraceEvent> {
    script().trace.clone()
}

/// The trace so far, emptying it.
pub fn take_trace() -> Vec<TraceEvent> {
    std::mem::take(&mut script().trace)
}

/// Runs `action` when the virtual time reaches `at` (before the levels look at their fds at
/// that time). Use it to replay fd events: write to an eventfd notifier, send a datagram.
/// Actions at equal times run in the order they were scheduled.
pub fn at(at: Instant, action: impl FnOnce() + Send + 'static) {
    let mut s = script();
    let seq = s.seq;
    s.seq += 1;
    s.actions.insert((at.as_nanos(), seq), Box::new(action));
}

/// The running job consumed `duration` of CPU time: the virtual clock moves forward by it.
/// Higher levels whose releases fall inside preempt the job at those times (unless it holds
/// a PCP lock), so its response time includes them, as on a real CPU.
///
/// # Panics
/// Outside a task of an app with `clock = mock`.
pub fn advance(duration: Duration) {
    let engine = ENGINE.with(Cell::get).expect(
        "preempt::sim::advance needs an app with `#[preempt::app(clock = mock)]`, called from \
         one of its tasks",
    );
    let mut remaining = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    let level = LEVEL.with(Cell::get);
    loop {
        let now = MOCK.now_ns();
        let target = now.saturating_add(remaining);
        if LOCKS.with(Cell::get) == 0 && level > 0 {
            let mut next = next_action_ns();
            for exec in engine.executors.iter().filter(|e| e.priority() > level) {
                if let Some(t) = exec.sim_next_event_ns() {
                    next = Some(next.map_or(t, |n| n.min(t)));
                }
            }
            if let Some(t) = next.filter(|&t| t < target) {
                // Run up to the event, then let the higher levels preempt; the rest of this
                // job's work continues after them.
                let t = t.max(now);
                remaining -= t - now;
                MOCK.set_ns(t);
                run_actions_due();
                if preemption_point() || t > now {
                    continue;
                }
            }
        }
        MOCK.set_ns(target);
        return;
    }
}

fn next_action_ns() -> Option<u64> {
    script().actions.keys().next().map(|k| k.0)
}

/// Runs every scripted action due at the current virtual time.
fn run_actions_due() {
    loop {
        let now = MOCK.now_ns();
        let action = {
            let mut s = script();
            match s.actions.first_key_value() {
                Some((k, _)) if k.0 <= now => s.actions.pop_first().map(|(_, a)| a),
                _ => None,
            }
        };
        match action {
            Some(action) => action(),
            None => return,
        }
    }
}

/// Runs the work of levels above the running job's, one job at a time, highest first, as a
/// preemption would. Returns whether anything ran.
pub(crate) fn preemption_point() -> bool {
    let Some(engine) = ENGINE.with(Cell::get) else {
        return false;
    };
    let level = LEVEL.with(Cell::get);
    if level == 0 || LOCKS.with(Cell::get) > 0 {
        return false;
    }
    // SAFETY: `control` points into `run`'s frame, which is alive while the engine is
    // installed (it is removed before `run` returns).
    let control = unsafe { &*engine.control };
    let start = MOCK.now_ns();
    let mut any = false;
    'outer: loop {
        if control.stop.load(Ordering::Acquire) {
            break;
        }
        for exec in engine.executors.iter().rev() {
            if exec.priority() <= level {
                break;
            }
            let (n, go_on) = exec.sim_round(control, 1);
            if n > 0 || !go_on {
                any = true;
                if !go_on {
                    break 'outer;
                }
                continue 'outer;
            }
        }
        break;
    }
    // The preempted job did not run meanwhile: its CPU time excludes this span.
    let stolen = MOCK.now_ns() - start;
    STOLEN.with(|s| s.set(s.get() + stolen));
    any
}

/// A job starts: returns the enclosing job's preempted time so far (to restore).
pub(crate) fn begin_job() -> u64 {
    STOLEN.with(|s| s.replace(0))
}

/// A job ended: returns how long it was preempted, and restores the enclosing job's count.
pub(crate) fn end_job(enclosing: u64) -> u64 {
    STOLEN.with(|s| s.replace(enclosing))
}

/// Marks that a job of level `priority` runs; returns the previous level.
pub(crate) fn enter_level(priority: u8) -> u8 {
    LEVEL.with(|l| l.replace(priority))
}

pub(crate) fn leave_level(previous: u8) {
    LEVEL.with(|l| l.set(previous));
}

/// Held while a job holds a PCP lock in the simulator (no preemption meanwhile).
pub(crate) struct LockGuard(bool);

impl LockGuard {
    #[inline]
    pub(crate) fn enter() -> LockGuard {
        if active() {
            LOCKS.with(|l| l.set(l.get() + 1));
            LockGuard(true)
        } else {
            LockGuard(false)
        }
    }
}

impl Drop for LockGuard {
    #[inline]
    fn drop(&mut self) {
        if self.0 {
            LOCKS.with(|l| l.set(l.get().saturating_sub(1)));
        }
    }
}

/// A critical section (see `crate::critical_section`) was entered: like a PCP lock, it holds
/// off simulated preemption.
#[cfg(feature = "critical-section-impl")]
pub(crate) fn critical_section_entered() {
    if active() {
        LOCKS.with(|l| l.set(l.get() + 1));
    }
}

/// The outermost critical section was left.
#[cfg(feature = "critical-section-impl")]
pub(crate) fn critical_section_left() {
    if active() {
        LOCKS.with(|l| l.set(l.get().saturating_sub(1)));
    }
}

/// What the simulation loop reports when it ends.
pub(crate) enum Ended {
    /// Stopped by `exit`, a panic or a fault.
    Stopped,
    /// Nothing was left to happen at this virtual time.
    Starved(u64),
}

/// Runs the simulation of `executors` (in increasing priority) until the app stops or
/// nothing is left to happen. The mock clock must be installed and `init` done.
pub(crate) fn run(
    executors: &'static [&'static dyn Executable],
    control: &LoopControl<'_>,
) -> Ended {
    let engine = Engine {
        executors,
        control: (control as *const LoopControl<'_>).cast(),
    };
    ENGINE.with(|e| e.set(Some(engine)));
    LEVEL.with(|l| l.set(0));
    LOCKS.with(|l| l.set(0));
    for exec in executors {
        exec.sim_start(control.epoch_ns);
    }
    let ended = 'sim: loop {
        if control.stop.load(Ordering::Acquire) {
            break Ended::Stopped;
        }
        run_actions_due();
        let mut progressed = false;
        for exec in executors.iter().rev() {
            let (n, go_on) = exec.sim_round(control, 1);
            if !go_on {
                break 'sim Ended::Stopped;
            }
            if n > 0 {
                progressed = true;
                break;
            }
        }
        if progressed {
            continue;
        }
        let now = MOCK.now_ns();
        let mut next = next_action_ns();
        for exec in executors {
            if let Some(t) = exec.sim_next_event_ns() {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        match next {
            Some(t) if t > now => MOCK.set_ns(t),
            // Due now, yet nothing ran: can only be a bug; step on rather than hang.
            Some(_) => {
                debug_assert!(false, "simulator: an event is due at {now} but nothing ran");
                MOCK.set_ns(now + 1);
            }
            None => break Ended::Starved(now),
        }
    };
    ENGINE.with(|e| e.set(None));
    ended
}

/// Forgets scripted actions left from a previous simulated app (the trace is kept).
pub(crate) fn reset_actions() {
    script().actions.clear();
}
