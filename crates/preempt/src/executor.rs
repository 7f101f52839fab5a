//! The executor: one thread per priority level that runs its tasks' jobs to completion.
//!
//! # Background
//!
//! On a Cortex-M, RTIC runs the software tasks of one priority inside one interrupt handler
//! that pops a FIFO of ready messages; pending the interrupt is the spawn. On Linux the
//! interrupt becomes a SCHED_FIFO thread at the level's priority (thesis §5.1.2), and pending
//! it becomes a queue push plus, if the thread sleeps, a wake-up.
//!
//! # How a job reaches a task
//!
//! Five things release a job on a level; each ends in the same place, the level's loop:
//!
//! ```text
//!  spawn on the executor's own thread ─► ready ring   (plain memory: no atomic, no syscall)
//!  spawn from any other thread        ─► inbox        (lock-free MPSC push, then the doorbell:
//!                                                      a wake-up only if the executor sleeps)
//!  spawn_after / spawn_at             ─► timer queue  (lock-free push, doorbell as above)
//!  periodic task                      ─► its pending release on the level's grid (no queue)
//!  fd becomes readable (binds = ..)   ─► epoll, owned by the level, marks the task pending
//!  async waker.wake()                 ─► a Poll message, by the spawn path above
//!  Mono::delay_until(t)               ─► the level's delay list; expiry wakes the task
//! ```
//!
//! Every message carries its release time (the spawn's clock reading, or the scheduled
//! instant of a timed spawn) so the job's release latency can be accounted.
//!
//! # The loop
//!
//! ```text
//! loop {
//!     stop requested?                              -> return
//!     one round:
//!       the ready ring's and the inbox's messages present at the start of the round
//!       (ring first: a message spawned here before a remote one arrived runs first);
//!       again with what those jobs spawned here, while the ring is the only source
//!       with work (no remote spawn, timer, delay, periodic or hardware task on the level)
//!       read the clock once if anything is timed, then:
//!         due timed messages (earliest first), due delays (wake their tasks),
//!         due periodic releases (the overrun policy decides which, see `periodic`)
//!       hardware tasks whose fd was seen readable
//!     ran something?  -> a sleeping level with nothing timed and its ready ring empty:
//!                        idle at once (the doorbell says whether anything came meanwhile:
//!                        the park returns at once if so); otherwise the next round (an fd
//!                        level polls its fds without sleeping first)
//!     idle: sample the page faults of the busy period, then by the level's idle policy
//!       sleep: wait until the earliest of (next timed message, periodic release, delay)
//!              FUTEX_WAIT_BITSET with that absolute CLOCK_MONOTONIC deadline, or, on a level
//!              with hardware tasks, epoll_wait with the deadline on a timerfd
//!       spin: look again at once; spin_then_sleep(µs): spin that long, then sleep
//! }
//! ```
//!
//! Rounds bound the wait of every source: a message waits at most for the work that was
//! ready when its round started, so a busy same-priority ping-pong cannot starve spawns
//! from other threads, timers or fds. Within one spawner, messages run in spawn order.
//!
//! Each job runs inside `catch_unwind` (in a round's continuation, one `catch_unwind` covers
//! many jobs and a panic is attributed to the job that was running): a panicking task is
//! reported with its name and,
//! depending on the app's `on_panic`, stops the application or lets the executor go on (its
//! PCP locks were released by unwinding).
//!
//! # Accounting
//!
//! With `accounting` on (the default), each job costs one time stamp at its end (its start
//! is the previous job's end in the same round, or the reading that found it due) and a
//! handful of relaxed stores into its `TaskStats`; a spawn from another thread costs one
//! stamp for its release, a spawn from the level's own thread none (its release is the
//! spawning job's start, known already, and never later than the spawn).
//!
//! A counter read costs ~12 ns on the development VM, more than a whole same-priority task
//! switch (~9 ns bare). So in a round's continuation (the same-level ping-pong) short jobs of
//! software tasks without a deadline run in *coalesced windows*: up to
//! [`COALESCE_MAX_JOBS`] jobs between two counter reads. The window's tasks get their jobs
//! counted exactly and its time as bounds (`TaskStats::record_coalesced`: execution and
//! response at most the window's length, latency at most its end minus the earliest
//! release; marked as `coalesced_jobs`). Window sizes adapt: each window within
//! [`COALESCE_MAX_NS`] doubles the next (1, 2, 4, .. 32), one longer sends the level back to
//! a read per job (exact figures) until a job is short again, so a long job is timed on its
//! own and every coalesced bound stays near 1 µs. Jobs with deadlines, async polls, and
//! everything outside the continuation are timed per job.
//!
//! ```text
//!  read ── a ── b ── a ── b ── read ── a ── b ── .. (32 jobs) .. ── read
//!        window of 4 (≤ 1 µs: next one 8)       window of 32
//! ``` Stamps come from [`driver::stamp_ns`]: the CPU counter calibrated against
//! `CLOCK_MONOTONIC`, about 2.5x cheaper than a `clock_gettime`. When the level goes idle after a busy period, and at most once per
//! [`FAULT_SAMPLE_INTERVAL_NS`], one `getrusage(RUSAGE_THREAD)` (≈ 0.5 µs) charges the page
//! faults taken since the last sample to the task that ran last: the per-level total is
//! always exact, the per-task attribution is exact on a level that runs one task (a control
//! loop) and approximate otherwise. The interval keeps the sampling cost per activation of a
//! 1 kHz loop near 50 ns (`page_faults = false` removes it).
//!
//! **Throttled windows.** With accounting on, a job whose release latency reaches 80 % of
//! the kernel's throttling window (40 ms by default), or a periodic task whose first skipped
//! release is that late (the job that runs is the latest release), asks the level's
//! [`ThrottleWatch`] whether its thread waited that long on its runqueue (RT throttling or
//! the fair server stopped the real-time class on its CPU); the baseline is re-read when the
//! level goes idle, at most every 10 ms. The job path pays one comparison. `stats()` reports
//! the count per level and the exit summary names it (`THROTTLED`).

use std::cell::{Cell, UnsafeCell};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::BorrowedFd;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use preempt_io::fd::Poller;
use preempt_io::sys::epoll::Event as EpollEvent;
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::sched;
use preempt_io::sys::schedstat::ThrottleWatch;
use preempt_io::sys::thread as sys_thread;
use preempt_stats::task_stats::{Coalesced, Completion};
use preempt_sync::futex::{self, Wait};
use preempt_sync::queue::MpscQueue;
use preempt_sync::timed::TimerQueue;

pub use crate::level::{Executable, IdlePolicy, LoopControl};
use crate::mono::{self, DelayList};
use crate::periodic::{self, OnMiss};
use crate::rt_safety;
use crate::sim::{self, TraceEvent};
use crate::task::{TaskControl, TaskKind};
use crate::time::driver;

/// What a dispatched message did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum Dispatched {
    /// The job (or the async instance) finished.
    Done,
    /// An async instance was polled and is not finished.
    Pending,
    /// Nothing ran (a wake-up of an async instance that had already finished).
    Idle,
}

/// What kind of message this is, for accounting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum MsgKind {
    /// A job of a software task (also the `Start` of an async instance).
    Job,
    /// A wake-up of a running async instance.
    Poll,
}

/// A message of one priority level: the macro generates an enum with one variant per
/// software task (plus `Start`/`Poll` per async task).
#[doc(hidden)]
pub trait Message: Send + 'static {
    /// The index of the task this message is for, in the level's task table.
    fn task(&self) -> usize;
    /// Job or async wake-up.
    fn kind(&self) -> MsgKind;
    /// Runs the task with the message's arguments.
    fn dispatch(self) -> Dispatched;
    /// Runs the periodic or hardware task with index `task` (they have no messages).
    fn run_unit(task: usize) -> Dispatched;
}

/// A message with its release time.
struct Stamped<M> {
    release_ns: u64,
    msg: M,
}

/// A fixed-capacity FIFO in plain memory, used only by its executor's thread.
struct ReadyRing<M, const N: usize> {
    buf: UnsafeCell<[MaybeUninit<M>; N]>,
    head: Cell<usize>,
    len: Cell<usize>,
}

impl<M, const N: usize> ReadyRing<M, N> {
    const fn new() -> Self {
        ReadyRing {
            buf: UnsafeCell::new([const { MaybeUninit::uninit() }; N]),
            head: Cell::new(0),
            len: Cell::new(0),
        }
    }

    /// # Safety
    /// Only the executor thread calls this, and `len < N`.
    #[inline(always)]
    unsafe fn push(&self, value: M) {
        let len = self.len.get();
        debug_assert!(
            len < N,
            "ready ring overflow: the per-task counts should prevent it"
        );
        let mut tail = self.head.get() + len;
        if tail >= N {
            tail -= N;
        }
        // SAFETY: single-threaded access (contract); `tail < N`; the slot is free because
        // `len < N` slots are occupied starting at `head`.
        unsafe { (*self.buf.get()).get_unchecked_mut(tail).write(value) };
        self.len.set(len + 1);
    }

    /// # Safety
    /// Only the executor thread calls this.
    #[inline(always)]
    unsafe fn pop(&self) -> Option<M> {
        let len = self.len.get();
        if len == 0 {
            return None;
        }
        let head = self.head.get();
        debug_assert!(head < N);
        // SAFETY: single-threaded access (contract); slot `head` holds an initialised value
        // because `len > 0`; advancing `head` forgets it, so it is read once.
        let value = unsafe { (*self.buf.get()).get_unchecked(head).assume_init_read() };
        self.head.set(if head + 1 == N { 0 } else { head + 1 });
        self.len.set(len - 1);
        Some(value)
    }
}

/// The message of a panic payload (`panic!` with a literal or a formatted string).
fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(non-string panic payload)")
}

/// The doorbell word's states (the no-lost-wake-up protocol of `preempt_sync::event`).
const EMPTY: u32 = 0;
const NOTIFIED: u32 = 1;
const PARKED: u32 = u32::MAX;

/// The epoll token of the doorbell's eventfd.
const BELL_TOKEN: u64 = u64::MAX - 1;

/// Wakes the executor: a futex word, or, on a level with hardware tasks (which sleeps in
/// epoll), the same word plus an eventfd in the level's epoll set.
///
/// | operation  | transition                          | system call                          |
/// |------------|-------------------------------------|--------------------------------------|
/// | `ring`     | any → `NOTIFIED` (swap, release)     | only if it was `PARKED`: `FUTEX_WAKE`, or `write` on the eventfd |
/// | park       | `NOTIFIED` → `EMPTY`: return at once | none                                 |
/// |            | `EMPTY` → `PARKED`: sleep            | `FUTEX_WAIT_BITSET` / `epoll_wait`   |
/// | after sleep| any → `EMPTY` (swap, acquire)        |                                      |
///
/// A `ring` after the executor's `EMPTY → PARKED` sees `PARKED` and wakes it: the kernel
/// re-checks the futex word, and a written eventfd stays readable, so no wake-up is lost;
/// a `ring` before it leaves `NOTIFIED`, and the park returns at once (see
/// `preempt_sync::event` for the full argument, checked there under loom).
struct Doorbell {
    state: AtomicU32,
    /// Set before the executor starts, on levels with hardware tasks.
    eventfd: UnsafeCell<Option<EventFd>>,
}

impl Doorbell {
    const fn new() -> Self {
        Doorbell {
            state: AtomicU32::new(EMPTY),
            eventfd: UnsafeCell::new(None),
        }
    }

    #[inline]
    fn ring(&self) {
        if self.state.swap(NOTIFIED, Ordering::Release) == PARKED {
            self.wake_sleeper();
        }
    }

    #[cold]
    fn wake_sleeper(&self) {
        // SAFETY: `eventfd` is written once before the executor thread starts and only read
        // afterwards.
        let eventfd = unsafe { &*self.eventfd.get() };
        let result = match eventfd {
            Some(fd) => {
                // A framework path inside a job (a spawn to a sleeping level): the eventfd
                // write goes through libc's interposed `write`, and is not a finding.
                let _framework = preempt_io::sys::interpose::suppress();
                fd.write(1)
            }
            // preempt-sync's futex calls reach the kernel without libc: no interposer.
            None => futex::wake(&self.state, 1).map(drop),
        };
        if let Err(err) = result {
            // EFAULT/EINVAL/EBADF on our own word or descriptor would be a runtime bug; the
            // executor still wakes at its next deadline, so report instead of aborting.
            eprintln!("preempt: cannot wake an executor: {err}");
        }
    }

    /// `NOTIFIED → EMPTY` (return `false`: do not sleep) or `EMPTY → PARKED` (`true`).
    #[inline]
    fn prepare_park(&self) -> bool {
        let previous = self.state.fetch_sub(1, Ordering::Acquire);
        debug_assert_ne!(previous, PARKED, "two threads park on one executor");
        previous != NOTIFIED
    }

    fn unpark(&self) {
        self.state.swap(EMPTY, Ordering::Acquire);
    }

    /// Sleeps on the futex until rung or `deadline_ns` passes.
    fn park_futex(&self, deadline_ns: Option<u64>) {
        if !self.prepare_park() {
            return;
        }
        loop {
            match futex::wait(&self.state, PARKED, deadline_ns) {
                Ok(Wait::TimedOut) => break,
                Ok(Wait::Woken | Wait::ValueChanged | Wait::Interrupted) => {
                    if self.state.load(Ordering::Acquire) != PARKED {
                        break;
                    }
                }
                // EINVAL/EFAULT on our own aligned, live word would be a runtime bug.
                Err(err) => panic!("preempt: FUTEX_WAIT_BITSET on an executor failed: {err}"),
            }
        }
        self.unpark();
    }
}

/// The descriptors of a level with hardware tasks.
struct FdSet {
    poller: Poller,
    /// The doorbell's eventfd (a duplicate: the doorbell writes, we read).
    bell: EventFd,
    events: [EpollEvent; 16],
}

/// The shortest time between two page-fault samples of a level: 10 ms, so that a 1 kHz loop
/// pays one `getrusage` (≈ 0.5 µs measured here) per 10 activations.
pub const FAULT_SAMPLE_INTERVAL_NS: u64 = 10_000_000;

/// Per-level page-fault totals.
#[derive(Default)]
struct Faults {
    minor: AtomicU64,
    major: AtomicU64,
    last_minor: Cell<u64>,
    last_major: Cell<u64>,
    /// When the last sample was taken.
    sampled_at_ns: Cell<u64>,
}

/// The most jobs one coalesced window holds (see the module docs, "Accounting").
pub const COALESCE_MAX_JOBS: u32 = 32;

/// A window longer than this (ns) makes the next job timed on its own: coalescing is for
/// jobs so short that a counter read per job would be a large share of their cost, and it
/// keeps every coalesced job's execution-time bound (the window's length) near 1 µs.
pub const COALESCE_MAX_NS: u64 = 1_000;

/// The open coalesced window of an executor (executor thread only).
struct Window {
    /// Jobs the next window may hold (1: time each job on its own).
    size: Cell<u32>,
    /// Jobs in the open window (0: none open).
    jobs: Cell<u32>,
    /// Its first job's start.
    start_ns: Cell<u64>,
    /// The tasks with jobs in it, `tasks[..ntasks]`.
    tasks: [Cell<usize>; COALESCE_MAX_JOBS as usize],
    ntasks: Cell<usize>,
}

impl Window {
    const fn new() -> Self {
        Window {
            size: Cell::new(1),
            jobs: Cell::new(0),
            start_ns: Cell::new(0),
            tasks: [const { Cell::new(0) }; COALESCE_MAX_JOBS as usize],
            ntasks: Cell::new(0),
        }
    }
}

thread_local! {
    /// The executor that runs on this thread (null on other threads).
    static CURRENT: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

/// The executor of one priority level: `M` is the level's message enum, `N` the sum of its
/// tasks' capacities.
#[doc(hidden)]
pub struct Executor<M: Message, const N: usize> {
    priority: u8,
    tasks: &'static [TaskControl],
    /// Indices of the periodic tasks in `tasks`.
    periodic: &'static [usize],
    /// Indices of the hardware tasks in `tasks`.
    hardware: &'static [usize],
    accounting: bool,
    page_faults: bool,
    ready: ReadyRing<Stamped<M>, N>,
    inbox: MpscQueue<Stamped<M>, N>,
    timers: TimerQueue<Stamped<M>, N>,
    bell: Doorbell,
    delays: DelayList,
    fds: UnsafeCell<Option<FdSet>>,
    faults: Faults,
    /// The task whose job ran last (executor thread only).
    last_task: Cell<usize>,
    /// When the last job ended (with accounting; executor thread only).
    last_end_ns: Cell<u64>,
    /// The release stamp of a spawn onto this level from its own thread: the start of the
    /// running job, or of its coalesced window (executor thread only).
    job_start_ns: Cell<u64>,
    /// The open coalesced window (executor thread only).
    window: Window,
    /// The loop thread's throttled-window detector, opened by that thread when it starts
    /// with accounting on (executor thread only).
    throttle: UnsafeCell<Option<ThrottleWatch>>,
    /// A job whose release latency reaches this asks the detector (u64::MAX: off).
    throttle_min_ns: Cell<u64>,
    /// The detector's baseline is re-read when the level goes idle at or after this time
    /// (u64::MAX: off).
    throttle_resample_ns: Cell<u64>,
    /// The detector is asked again only at or after this time: one throttled window cannot
    /// end sooner than `throttle_min_ns` after the last question.
    throttle_ask_ns: Cell<u64>,
    /// Throttled windows counted (read by `stats()` from any thread).
    throttled: AtomicU64,
    /// Set by the thread that runs the loop, so that only one ever does.
    claimed: AtomicBool,
    /// The loop thread's id and, when its affinity is one CPU, that CPU: read at start so
    /// that noting a deadline miss for `explain` makes no system call (executor thread only).
    ident: Cell<(i32, Option<usize>)>,
}

// SAFETY: `ready`, `delays`, `fds`, `throttle`, `last_task`, `ident` and the `Cell`s of `faults` are only touched
// by the one thread that runs the loop (`claimed` admits one; in the simulator that thread
// drives every level) and that `on_own_thread` recognises; `fds` is written once before
// that thread starts. The queues are thread-safe, the doorbell is atomic plus an eventfd
// written before start; messages are `Send`.
unsafe impl<M: Message, const N: usize> Sync for Executor<M, N> {}

impl<M: Message, const N: usize> Executor<M, N> {
    /// An executor for `priority` running `tasks` (indexed by [`Message::task`]), of which
    /// `periodic` and `hardware` are released by the runtime.
    pub const fn new(
        priority: u8,
        tasks: &'static [TaskControl],
        periodic: &'static [usize],
        hardware: &'static [usize],
        accounting: bool,
        page_faults: bool,
    ) -> Self {
        Executor {
            priority,
            tasks,
            periodic,
            hardware,
            accounting,
            page_faults,
            ready: ReadyRing::new(),
            inbox: MpscQueue::new(),
            timers: TimerQueue::new(),
            bell: Doorbell::new(),
            delays: DelayList::new(),
            fds: UnsafeCell::new(None),
            faults: Faults {
                minor: AtomicU64::new(0),
                major: AtomicU64::new(0),
                last_minor: Cell::new(0),
                last_major: Cell::new(0),
                sampled_at_ns: Cell::new(0),
            },
            last_task: Cell::new(usize::MAX),
            last_end_ns: Cell::new(0),
            job_start_ns: Cell::new(0),
            window: Window::new(),
            throttle: UnsafeCell::new(None),
            throttle_min_ns: Cell::new(u64::MAX),
            throttle_resample_ns: Cell::new(u64::MAX),
            throttle_ask_ns: Cell::new(0),
            throttled: AtomicU64::new(0),
            claimed: AtomicBool::new(false),
            ident: Cell::new((0, None)),
        }
    }

    #[inline(always)]
    fn on_own_thread(&self) -> bool {
        CURRENT.with(|c| c.get()) == (self as *const Self).cast()
    }

    #[inline(always)]
    fn stamp(&self) -> u64 {
        if self.accounting {
            driver::stamp_ns()
        } else {
            0
        }
    }

    /// Queues `msg` to run as soon as the executor gets to it.
    ///
    /// A spawn from the level's own thread reads no clock: its release is stamped with the
    /// start of the spawning job (or of its coalesced window), which is never later than
    /// the spawn, so its recorded release latency is an upper bound that includes the rest
    /// of the spawning job, which a same-level message waits for anyway (run to completion).
    /// In the simulator every spawn reads the (virtual) clock.
    #[inline]
    pub fn spawn(&'static self, msg: M) -> Result<(), M> {
        let release_ns = if self.accounting && self.on_own_thread() && !sim::active() {
            self.job_start_ns.get()
        } else {
            self.stamp()
        };
        self.push_now(release_ns, msg)
    }

    /// Queues the wake-up of an async task (no release stamp: it is not a release).
    #[inline]
    pub fn spawn_poll(&'static self, msg: M) -> Result<(), M> {
        self.push_now(0, msg)
    }

    #[inline(always)]
    fn push_now(&'static self, release_ns: u64, msg: M) -> Result<(), M> {
        if self.on_own_thread() {
            let tc = &self.tasks[msg.task()];
            // SAFETY: we run on the executor's own thread, the only one that touches `ready`
            // counts and the ready ring; no reference into either is held across this block.
            unsafe {
                let count = &mut *tc.ready.get();
                if *count >= tc.capacity {
                    return Err(msg);
                }
                *count += 1;
                // Each task holds at most `capacity` ring entries and N is their sum.
                self.ready.push(Stamped { release_ns, msg });
            }
            Ok(())
        } else {
            self.spawn_remote(release_ns, msg)
        }
    }

    #[inline(never)]
    fn spawn_remote(&'static self, release_ns: u64, msg: M) -> Result<(), M> {
        let tc = &self.tasks[msg.task()];
        if !tc.take(&tc.inbox) {
            return Err(msg);
        }
        if let Err(stamped) = self.inbox.try_push(Stamped { release_ns, msg }) {
            tc.inbox.fetch_sub(1, Ordering::Relaxed);
            return Err(stamped.msg);
        }
        self.bell.ring();
        if sim::active() {
            // A uniprocessor preempts the spawner at once if the spawned level is higher.
            sim::preemption_point();
        }
        Ok(())
    }

    /// Queues `msg` to run at `release_ns` (absolute CLOCK_MONOTONIC nanoseconds).
    pub fn spawn_at(&'static self, release_ns: u64, msg: M) -> Result<(), M> {
        let tc = &self.tasks[msg.task()];
        if !tc.take(&tc.timed) {
            return Err(msg);
        }
        if let Err(stamped) = self.timers.push_at(release_ns, Stamped { release_ns, msg }) {
            tc.timed.fetch_sub(1, Ordering::Relaxed);
            return Err(stamped.msg);
        }
        if !self.on_own_thread() {
            // The executor may sleep with a later deadline; ringing costs no system call
            // when it is awake (it re-reads the timer queue before it sleeps).
            self.bell.ring();
        }
        Ok(())
    }

    /// Watches `fd` for the hardware task `task`. Called by `run` before the executor
    /// starts (allocates the level's poller on first use).
    pub fn register_fd(&'static self, task: usize, fd: BorrowedFd<'_>) -> io::Result<()> {
        assert!(
            !self.claimed.load(Ordering::Acquire),
            "register_fd after the executor started"
        );
        // SAFETY: the executor has not started (asserted), so no other thread reads `fds` or
        // the doorbell's eventfd; `run` registers from one thread.
        let fds = unsafe { &mut *self.fds.get() };
        if fds.is_none() {
            let poller = Poller::new()?;
            let bell = EventFd::new(0, true)?;
            poller.register(&bell, BELL_TOKEN)?;
            let reader = bell.try_clone()?;
            // SAFETY: as above, nobody reads the doorbell's eventfd yet.
            unsafe { *self.bell.eventfd.get() = Some(bell) };
            *fds = Some(FdSet {
                poller,
                bell: reader,
                events: [EpollEvent::default(); 16],
            });
        }
        let set = fds.as_mut().map(|s| &s.poller);
        match set {
            Some(poller) => poller.register(&fd, task as u64),
            None => unreachable!("the poller was created above"),
        }
    }

    /// The fd set, if the level has hardware tasks.
    ///
    /// # Safety
    /// Executor thread only, and no other reference to the set is alive.
    #[allow(
        clippy::mut_from_ref,
        reason = "exclusive by the executor-thread contract"
    )]
    unsafe fn fd_set(&self) -> Option<&mut FdSet> {
        // SAFETY: forwarded contract.
        unsafe { (*self.fds.get()).as_mut() }
    }

    /// Marks the hardware tasks whose fds are ready in `events[..n]`.
    fn mark_ready(&self, set: &mut FdSet, n: usize) {
        let now = if self.accounting {
            driver::stamp_ns()
        } else {
            0
        };
        for ev in &set.events[..n] {
            if ev.token == BELL_TOKEN {
                // Clears the doorbell's eventfd; its count does not matter.
                if let Err(err) = set.bell.read() {
                    eprintln!("preempt: executor p{}: doorbell read: {err}", self.priority);
                }
                continue;
            }
            let Ok(task) = usize::try_from(ev.token) else {
                continue;
            };
            let Some(tc) = self.tasks.get(task) else {
                continue;
            };
            if !tc.local.pending.replace(true) {
                tc.local.next_ns.set(now);
            }
        }
    }

    /// Polls the level's fds without sleeping.
    fn poll_fds_now(&self) {
        // SAFETY: executor thread only; no other reference to the set is alive here.
        let Some(set) = (unsafe { self.fd_set() }) else {
            return;
        };
        match set.poller.wait_until(&mut set.events, Some(0)) {
            Ok(n) => self.mark_ready(set, n),
            Err(err) => eprintln!("preempt: executor p{}: epoll: {err}", self.priority),
        }
    }

    /// Runs one job of task `task` released at `release_ns`; accounts for it. Returns
    /// `false` to stop the loop. With `CATCH` the job runs inside `catch_unwind`; without,
    /// a panic unwinds to the caller, which must catch it (the round's continuation does,
    /// once for many jobs).
    #[inline(always)]
    #[allow(
        clippy::too_many_arguments,
        reason = "one call site per release path; a struct would only rename them"
    )]
    fn run_job<const CATCH: bool, const CHECK: bool>(
        &self,
        task: usize,
        kind: MsgKind,
        release_ns: u64,
        deadline_ns: Option<u64>,
        clock: &mut Option<u64>,
        control: &LoopControl<'_>,
        job: impl FnOnce() -> Dispatched,
    ) -> bool {
        let tc = &self.tasks[task];
        let traced = sim::active();
        let timed = self.accounting || traced;
        if CHECK {
            // Before the start stamp: the check's own cost is not the job's.
            let cycle = tc.local.checked_jobs.get() + 1;
            tc.local.checked_jobs.set(cycle);
            rt_safety::job_begin(tc.name, self.priority, cycle);
            // The previous job's end stamp precedes both checks: read the clock afresh.
            *clock = None;
        }
        let start_ns = if timed {
            let t = clock.take().unwrap_or_else(driver::stamp_ns);
            self.job_start_ns.set(t);
            t
        } else {
            0
        };
        if traced && kind == MsgKind::Job {
            sim::trace(TraceEvent::Start {
                task: tc.name,
                release_ns,
                at_ns: start_ns,
            });
        }
        self.last_task.set(task);
        let enclosing = if traced { sim::begin_job() } else { 0 };
        let outcome = if CATCH {
            catch_unwind(AssertUnwindSafe(job))
        } else {
            Ok(job())
        };
        let preempted_ns = if traced { sim::end_job(enclosing) } else { 0 };
        let end_ns = if timed {
            let t = driver::stamp_ns();
            *clock = Some(t);
            self.last_end_ns.set(t);
            t
        } else {
            0
        };
        if CHECK {
            if outcome.is_ok() {
                rt_safety::job_end();
            } else {
                rt_safety::job_abandon();
            }
        }
        let dispatched = match outcome {
            Ok(d) => d,
            Err(payload) => {
                return (control.on_panic)(tc.name, self.priority, panic_text(&*payload));
            }
        };
        if !timed {
            return true;
        }
        let l = &tc.local;
        // Wall-clock time of this dispatch, less the time it spent preempted where that is
        // known (the simulator); on threads the preemption by other levels is included.
        // Saturating: a stamp taken right after the thread's stamp anchor was re-read from
        // CLOCK_MONOTONIC may lie up to the anchor bracket's width (< 1 µs) before the
        // previous one (`time::driver::reanchor`); a debug build panicked on it here.
        let ran_ns = end_ns.saturating_sub(start_ns).saturating_sub(preempted_ns);
        let finished = match (tc.kind, kind) {
            (TaskKind::Async, MsgKind::Job) => {
                l.async_release_ns.set(release_ns);
                l.async_start_ns.set(start_ns);
                l.async_exec_ns.set(ran_ns);
                tc.note_release(release_ns);
                (dispatched == Dispatched::Done).then_some(ran_ns)
            }
            (TaskKind::Async, MsgKind::Poll) => {
                if dispatched == Dispatched::Idle {
                    return true;
                }
                let exec = l.async_exec_ns.get() + ran_ns;
                l.async_exec_ns.set(exec);
                (dispatched == Dispatched::Done).then_some(exec)
            }
            _ => {
                tc.note_release(release_ns);
                Some(ran_ns)
            }
        };
        let Some(exec_ns) = finished else {
            return true;
        };
        let (release_ns, start_ns, cpu_ns) = if tc.kind == TaskKind::Async {
            (
                l.async_release_ns.get(),
                l.async_start_ns.get(),
                Some(exec_ns),
            )
        } else {
            (release_ns, start_ns, traced.then_some(exec_ns))
        };
        let deadline = deadline_ns.or_else(|| tc.deadline_ns().map(|d| release_ns + d));
        if self.accounting {
            tc.stats.record_start(release_ns, start_ns);
            let latency_ns = start_ns.saturating_sub(release_ns);
            if latency_ns >= self.throttle_min_ns.get() {
                self.note_stall(latency_ns, start_ns);
            }
            tc.stats.record_completion(Completion {
                release_ns,
                start_ns,
                end_ns,
                cpu_ns,
                deadline_ns: deadline,
            });
        }
        let missed = deadline.is_some_and(|d| end_ns > d);
        if missed && crate::explain::active() {
            let (tid, cpu) = self.ident.get();
            crate::explain::note_miss(self.priority, tc.name, release_ns, start_ns, tid, cpu);
        }
        if traced {
            sim::trace(TraceEvent::End {
                task: tc.name,
                at_ns: end_ns,
                missed,
            });
        }
        if missed && tc.on_miss == OnMiss::Fault {
            let late = end_ns - deadline.unwrap_or(end_ns);
            (control.on_fault)(&format!(
                "task `{}` (priority {}) missed its deadline: the job released at {} ns \
                 ended {} ns after its deadline (on_miss = Fault)",
                tc.name, self.priority, release_ns, late
            ));
            return false;
        }
        true
    }

    #[inline(always)]
    fn run_message<const CATCH: bool, const CHECK: bool>(
        &self,
        stamped: Stamped<M>,
        clock: &mut Option<u64>,
        control: &LoopControl<'_>,
    ) -> bool {
        let Stamped { release_ns, msg } = stamped;
        let task = msg.task();
        let kind = msg.kind();
        self.run_job::<CATCH, CHECK>(task, kind, release_ns, None, clock, control, move || {
            msg.dispatch()
        })
    }

    /// Whether a job of `task` may run in a coalesced window: a software task's job with
    /// no deadline (misses and lateness stay exact; async polls keep their own account).
    #[inline(always)]
    fn coalescable(&self, task: usize, kind: MsgKind) -> bool {
        let tc = &self.tasks[task];
        kind == MsgKind::Job && tc.kind == TaskKind::Software && tc.deadline_ns().is_none()
    }

    /// Runs `stamped` inside the open coalesced window (opening one if none is open), and
    /// closes the window when it is full. No counter read except at the window's ends.
    /// Executor thread only.
    #[inline(always)]
    fn run_in_window<const CHECK: bool>(&self, stamped: Stamped<M>, clock: &mut Option<u64>) {
        let w = &self.window;
        let n = w.jobs.get();
        if n == 0 {
            let start = clock.take().unwrap_or_else(driver::stamp_ns);
            w.start_ns.set(start);
            self.job_start_ns.set(start);
        }
        let Stamped { release_ns, msg } = stamped;
        let task = msg.task();
        let l = &self.tasks[task].local;
        match l.window_jobs.get() {
            0 => {
                let k = w.ntasks.get();
                debug_assert!(k < w.tasks.len());
                w.tasks[k].set(task);
                w.ntasks.set(k + 1);
                l.window_release_ns.set(release_ns);
                l.window_jobs.set(1);
            }
            j => {
                l.window_release_ns
                    .set(l.window_release_ns.get().min(release_ns));
                l.window_jobs.set(j + 1);
            }
        }
        self.tasks[task].note_release(release_ns);
        w.jobs.set(n + 1);
        self.last_task.set(task);
        if CHECK {
            let cycle = l.checked_jobs.get() + 1;
            l.checked_jobs.set(cycle);
            rt_safety::job_begin(self.tasks[task].name, self.priority, cycle);
        }
        msg.dispatch();
        if CHECK {
            rt_safety::job_end();
        }
        if n + 1 >= w.size.get() {
            self.close_window(clock);
        }
    }

    /// Takes the job of `task` that panicked out of the open window: like a job that
    /// panics outside a window, it is not counted.
    fn drop_from_window(&self, task: usize) {
        let l = &self.tasks[task].local;
        let j = l.window_jobs.get();
        if j > 0 && self.window.jobs.get() > 0 {
            l.window_jobs.set(j - 1);
            self.window.jobs.set(self.window.jobs.get() - 1);
        }
    }

    /// Closes the open coalesced window, if any: one counter read, then each of its tasks'
    /// share into its `TaskStats` (`TaskStats::record_coalesced`); sizes the next window
    /// (doubling up to [`COALESCE_MAX_JOBS`] while windows stay within [`COALESCE_MAX_NS`],
    /// back to one job, timed on its own, when one does not).
    #[inline(never)]
    fn close_window(&self, clock: &mut Option<u64>) {
        let w = &self.window;
        let jobs = w.jobs.get();
        let ntasks = w.ntasks.get();
        if ntasks == 0 {
            return;
        }
        let start = w.start_ns.get();
        let end = driver::stamp_ns();
        for cell in &w.tasks[..ntasks] {
            let tc = &self.tasks[cell.get()];
            let l = &tc.local;
            let task_jobs = l.window_jobs.replace(0);
            if task_jobs > 0 {
                tc.stats.record_coalesced(Coalesced {
                    jobs: u64::from(task_jobs),
                    window_jobs: u64::from(jobs),
                    start_ns: start,
                    end_ns: end,
                    earliest_release_ns: l.window_release_ns.get(),
                });
            }
        }
        w.jobs.set(0);
        w.ntasks.set(0);
        *clock = Some(end);
        self.last_end_ns.set(end);
        w.size.set(if end.saturating_sub(start) > COALESCE_MAX_NS {
            1
        } else {
            (w.size.get() * 2).min(COALESCE_MAX_JOBS)
        });
    }

    /// After a job timed on its own: the next may start a window if this one was short.
    #[inline(always)]
    fn size_window_after_timed_job(&self) {
        let ran = self
            .last_end_ns
            .get()
            .saturating_sub(self.job_start_ns.get());
        self.window
            .size
            .set(if ran > COALESCE_MAX_NS { 1 } else { 2 });
    }

    /// The earliest time-triggered event (executor thread only).
    fn next_event_ns(&self) -> Option<u64> {
        // SAFETY: executor thread only (the loop's and the simulator's caller contract).
        let mut next = unsafe { self.timers.next_release_ns() };
        let mut earliest = |t: u64| next = Some(next.map_or(t, |n| n.min(t)));
        if let Some(t) = self.delays.next_deadline_ns() {
            earliest(t);
        }
        for &i in self.periodic {
            earliest(self.tasks[i].local.next_ns.get());
        }
        next
    }

    /// Takes the next message of the ready ring and frees its task's ring slot. Executor
    /// thread only.
    #[inline(always)]
    fn pop_ready(&self) -> Option<Stamped<M>> {
        // SAFETY: executor thread only (the callers' contract).
        let stamped = unsafe { self.ready.pop() }?;
        // SAFETY: executor thread only, no other reference to the count is alive.
        unsafe { *self.tasks[stamped.msg.task()].ready.get() -= 1 };
        Some(stamped)
    }

    /// Runs the ready ring's and the inbox's messages present when it is called (ring
    /// first: a message spawned here before a remote one arrived runs first), at most
    /// `budget`. Returns (jobs run, keep going). Executor thread only.
    #[inline(always)]
    fn run_queued<const CHECK: bool>(
        &self,
        control: &LoopControl<'_>,
        budget: usize,
        clock: &mut Option<u64>,
    ) -> (usize, bool) {
        let mut ran = 0;
        // Both counts first: work that arrives meanwhile waits for the next pass, in which
        // the ring (spawned here, causally earlier) goes first.
        let ring_n = self.ready.len.get();
        let inbox_n = self.inbox.len();
        for _ in 0..ring_n {
            let Some(stamped) = self.pop_ready() else {
                break;
            };
            ran += 1;
            if !self.run_message::<true, CHECK>(stamped, clock, control) {
                return (ran, false);
            }
            if ran >= budget {
                return (ran, true);
            }
        }
        for _ in 0..inbox_n {
            // SAFETY: single consumer (executor thread).
            let Some(stamped) = (unsafe { self.inbox.pop() }) else {
                break;
            };
            self.tasks[stamped.msg.task()]
                .inbox
                .fetch_sub(1, Ordering::Relaxed);
            ran += 1;
            if !self.run_message::<true, CHECK>(stamped, clock, control) {
                return (ran, false);
            }
            if ran >= budget {
                return (ran, true);
            }
        }
        (ran, true)
    }

    /// `true` when the level has no timed message, delay or periodic task: its next event
    /// is a spawn or a wake, which rings the doorbell. Executor thread only.
    #[inline(always)]
    fn nothing_timed(&self) -> bool {
        self.periodic.is_empty()
            && self.timers.is_empty()
            && self.delays.next_deadline_ns().is_none()
    }

    /// `true` when no source other than the ready ring can have work for this level: the
    /// inbox and the timer queue are empty and the level has no delays, periodic or
    /// hardware tasks. Executor thread only.
    #[inline(always)]
    fn only_ring_has_work(&self) -> bool {
        self.periodic.is_empty()
            && self.hardware.is_empty()
            && self.delays.next_deadline_ns().is_none()
            && self.timers.is_empty()
            && self.inbox.is_empty()
    }

    /// One round (see the module docs), at most `budget` jobs. Returns (progress, keep
    /// going). Executor thread only.
    fn round<const CHECK: bool>(&self, control: &LoopControl<'_>, budget: usize) -> (usize, bool) {
        let mut ran = 0;
        let mut clock: Option<u64> = None;
        let (n, go_on) = self.run_queued::<CHECK>(control, budget, &mut clock);
        ran += n;
        if !go_on || ran >= budget {
            return (ran, go_on);
        }
        // The round goes on with what its jobs spawned onto this level while no other
        // source can have work: the next round would run exactly these messages first
        // anyway, and skipping its bookkeeping is what makes a same-priority spawn cheap.
        // Any other source (a remote spawn, a timer, a delay, a periodic or hardware task,
        // a stop request) ends the round as before.
        if sim::active() {
            // The simulator brackets every job (`sim::begin_job`/`end_job`): catch per job.
            while self.only_ring_has_work() && !control.stop.load(Ordering::Relaxed) {
                let Some(stamped) = self.pop_ready() else {
                    break;
                };
                ran += 1;
                if !self.run_message::<true, CHECK>(stamped, &mut clock, control) {
                    return (ran, false);
                }
                if ran >= budget {
                    return (ran, true);
                }
            }
        } else {
            // One `catch_unwind` around the whole continuation instead of one per job; a
            // panic is attributed to `last_task`, the job that was running.
            //
            // With accounting, short jobs of software tasks without deadlines run in
            // coalesced windows: one counter read per window instead of one per job (see the
            // module docs, "Accounting").
            let coalesce = self.accounting;
            loop {
                let mut go_on = true;
                let caught = catch_unwind(AssertUnwindSafe(|| {
                    while self.only_ring_has_work() && !control.stop.load(Ordering::Relaxed) {
                        let Some(stamped) = self.pop_ready() else {
                            return;
                        };
                        ran += 1;
                        if coalesce
                            && self.window.size.get() > 1
                            && self.coalescable(stamped.msg.task(), stamped.msg.kind())
                        {
                            self.run_in_window::<CHECK>(stamped, &mut clock);
                        } else {
                            self.close_window(&mut clock);
                            if !self.run_message::<false, CHECK>(stamped, &mut clock, control) {
                                go_on = false;
                                return;
                            }
                            if coalesce {
                                self.size_window_after_timed_job();
                            }
                        }
                        if ran >= budget {
                            return;
                        }
                    }
                }));
                if caught.is_err() {
                    if CHECK {
                        rt_safety::job_abandon();
                    }
                    // The panicking job is not counted; the window's other jobs are.
                    clock = None;
                    self.drop_from_window(self.last_task.get());
                }
                self.close_window(&mut clock);
                match caught {
                    Ok(()) if !go_on => return (ran, false),
                    Ok(()) if ran >= budget => return (ran, true),
                    Ok(()) => break,
                    Err(payload) => {
                        let tc = &self.tasks[self.last_task.get()];
                        if !(control.on_panic)(tc.name, self.priority, panic_text(&*payload)) {
                            return (ran, false);
                        }
                    }
                }
            }
        }
        // An empty timer queue needs no look into its heap (a push counts before it rings).
        let timed = if self.timers.is_empty() {
            None
        } else {
            // SAFETY: single consumer (executor thread).
            unsafe { self.timers.next_release_ns() }
        };
        let delayed = self.delays.next_deadline_ns();
        if timed.is_some() || delayed.is_some() || !self.periodic.is_empty() {
            let now = match clock {
                Some(t) => t,
                None => {
                    let t = driver::now_ns();
                    clock = Some(t);
                    t
                }
            };
            if timed.is_some_and(|t| t <= now) {
                // SAFETY: single consumer (executor thread).
                while let Some(stamped) = unsafe { self.timers.pop_due(now) } {
                    self.tasks[stamped.msg.task()]
                        .timed
                        .fetch_sub(1, Ordering::Relaxed);
                    ran += 1;
                    if !self.run_message::<true, CHECK>(stamped, &mut clock, control) {
                        return (ran, false);
                    }
                    if ran >= budget {
                        return (ran, true);
                    }
                }
            }
            if delayed.is_some_and(|t| t <= now) {
                // Wakes push Poll messages on the ring: the next round runs them.
                ran += self.delays.fire_due(now);
                if ran >= budget {
                    return (ran, true);
                }
            }
            for &i in self.periodic {
                let tc = &self.tasks[i];
                let pending = tc.local.next_ns.get();
                if pending > now {
                    continue;
                }
                let policy = tc.policy();
                let due = periodic::due(&policy, pending, now);
                tc.local.next_ns.set(due.next_ns);
                if due.skipped > 0 {
                    if self.accounting {
                        tc.stats.record_skipped(due.skipped);
                        // The job that runs is the latest release: how late the first of
                        // the skipped ones is tells whether the thread waited out a window.
                        let late_ns = now.saturating_sub(pending);
                        if late_ns >= self.throttle_min_ns.get() {
                            self.note_stall(late_ns, now);
                        }
                    }
                    if crate::explain::active() {
                        // The dropped releases missed their deadlines without running: why
                        // the executor got to the first of them only now.
                        let (tid, cpu) = self.ident.get();
                        crate::explain::note_miss(self.priority, tc.name, pending, now, tid, cpu);
                    }
                    if sim::active() {
                        for k in 0..due.skipped {
                            sim::trace(TraceEvent::Skip {
                                task: tc.name,
                                release_ns: pending + k * policy.period_ns,
                            });
                        }
                    }
                }
                if due.already_late && policy.on_miss == OnMiss::Fault {
                    (control.on_fault)(&format!(
                        "task `{}` (priority {}) could not start the job released at {} ns \
                         before its deadline (on_miss = Fault)",
                        tc.name, self.priority, due.release_ns
                    ));
                    return (ran, false);
                }
                let deadline = due.release_ns + policy.deadline_ns;
                ran += 1;
                if !self.run_job::<true, CHECK>(
                    i,
                    MsgKind::Job,
                    due.release_ns,
                    Some(deadline),
                    &mut clock,
                    control,
                    move || M::run_unit(i),
                ) {
                    return (ran, false);
                }
                if ran >= budget {
                    return (ran, true);
                }
            }
        }
        for &i in self.hardware {
            let tc = &self.tasks[i];
            if !tc.local.pending.replace(false) {
                continue;
            }
            ran += 1;
            if !self.run_job::<true, CHECK>(
                i,
                MsgKind::Job,
                tc.local.next_ns.get(),
                None,
                &mut clock,
                control,
                move || M::run_unit(i),
            ) {
                return (ran, false);
            }
            if ran >= budget {
                return (ran, true);
            }
        }
        (ran, true)
    }

    /// Charges the page faults since the last sample to the last task (executor thread).
    fn sample_faults(&self) {
        let f = &self.faults;
        let now = self.last_end_ns.get();
        if now != 0 && now.saturating_sub(f.sampled_at_ns.get()) < FAULT_SAMPLE_INTERVAL_NS {
            return;
        }
        f.sampled_at_ns.set(now);
        let Ok(usage) = sys_thread::rusage_thread() else {
            return;
        };
        let minor = usage
            .minor_faults
            .saturating_sub(f.last_minor.replace(usage.minor_faults));
        let major = usage
            .major_faults
            .saturating_sub(f.last_major.replace(usage.major_faults));
        if minor + major == 0 {
            return;
        }
        f.minor.fetch_add(minor, Ordering::Relaxed);
        f.major.fetch_add(major, Ordering::Relaxed);
        if let Some(tc) = self.tasks.get(self.last_task.get()) {
            tc.stats.record_page_faults(minor, major);
        }
    }

    /// Opens the throttled-window detector on the loop's thread (real threads only, with
    /// accounting: a release latency is what it is asked about).
    fn open_throttle_watch(&self) {
        if !self.accounting {
            return;
        }
        let watch = ThrottleWatch::open();
        self.throttle_min_ns.set(watch.min_ns());
        self.throttle_resample_ns.set(0);
        // SAFETY: executor thread only (`claimed` admits one), before any job: no other
        // reference to the cell's content exists.
        unsafe { *self.throttle.get() = Some(watch) };
    }

    /// Re-reads the detector's baseline when the level goes idle, at most every
    /// `SAMPLE_EVERY_NS` (10 ms): a load and a comparison on the way to the park.
    #[inline(always)]
    fn sample_throttle(&self) {
        let now = self.last_end_ns.get();
        if now >= self.throttle_resample_ns.get() {
            self.resample_throttle(now);
        }
    }

    #[cold]
    #[inline(never)]
    fn resample_throttle(&self, now: u64) {
        self.throttle_resample_ns
            .set(now.saturating_add(preempt_io::sys::schedstat::SAMPLE_EVERY_NS));
        // SAFETY: executor thread only; no other reference to the watch is alive here.
        if let Some(w) = unsafe { &mut *self.throttle.get() } {
            w.sample(now);
        }
    }

    /// A job started `latency_ns` after its release, at `now_ns`: did the thread wait out a
    /// throttled window on its runqueue? Asked at most once per `throttle_min_ns` (a level
    /// that falls behind has a late job on every activation: one `pread` of schedstat per
    /// window is enough, one per job is not).
    #[cold]
    #[inline(never)]
    fn note_stall(&self, latency_ns: u64, now_ns: u64) {
        if now_ns < self.throttle_ask_ns.get() {
            return;
        }
        self.throttle_ask_ns
            .set(now_ns.saturating_add(self.throttle_min_ns.get()));
        // SAFETY: executor thread only (run_job runs there); no other reference to the
        // watch is alive here.
        if let Some(w) = unsafe { &mut *self.throttle.get() } {
            if w.stall(latency_ns) {
                self.throttled.store(w.windows(), Ordering::Relaxed);
            }
        }
    }

    /// Sleeps until the next event or a ring of the doorbell.
    fn park(&self, deadline_ns: Option<u64>) {
        // SAFETY: executor thread only; no other reference to the set is alive here.
        match unsafe { self.fd_set() } {
            None => self.bell.park_futex(deadline_ns),
            Some(set) => {
                let n = if self.bell.prepare_park() {
                    let r = set.poller.wait_until(&mut set.events, deadline_ns);
                    self.bell.unpark();
                    r
                } else {
                    set.poller.wait_until(&mut set.events, Some(0))
                };
                match n {
                    Ok(n) => self.mark_ready(set, n),
                    Err(err) => eprintln!("preempt: executor p{}: epoll: {err}", self.priority),
                }
            }
        }
    }

    fn start(&'static self, epoch_ns: u64) {
        assert!(
            !self.claimed.swap(true, Ordering::AcqRel),
            "executor p{} started twice",
            self.priority
        );
        for &i in self.periodic {
            self.tasks[i].local.next_ns.set(epoch_ns);
        }
        if crate::explain::active() {
            // Once per run, off the job path: the affinity read is a system call.
            let pinned = match sched::current_thread_affinity() {
                Ok(cpus) if cpus.len() == 1 => Some(cpus[0]),
                _ => None,
            };
            let tid = i32::try_from(futex::current_tid()).unwrap_or(0);
            self.ident.set((tid, pinned));
        }
    }

    /// Makes this executor the current one of the calling thread; returns the previous.
    fn enter(&'static self) -> (*const (), *const DelayList) {
        let prev = CURRENT.with(|c| c.replace((self as *const Self).cast()));
        let prev_list = mono::set_current_list(&self.delays);
        (prev, prev_list)
    }

    fn leave(previous: (*const (), *const DelayList)) {
        CURRENT.with(|c| c.set(previous.0));
        mono::set_current_list(previous.1);
    }
}

impl<M: Message, const N: usize> Executable for Executor<M, N> {
    fn priority(&self) -> u8 {
        self.priority
    }

    fn tasks(&self) -> &'static [TaskControl] {
        self.tasks
    }

    fn run_loop(&'static self, control: &LoopControl<'_>) {
        // Real-time safety checks: chosen once per thread, so the dispatch path of the
        // unchecked loop has no branch for them (priority 0 is not a real-time level).
        if rt_safety::active() && self.priority > 0 {
            self.run_loop_as::<true>(control);
        } else {
            self.run_loop_as::<false>(control);
        }
    }

    fn wake(&self) {
        self.bell.ring();
    }

    fn faults(&self) -> (u64, u64) {
        (
            self.faults.minor.load(Ordering::Relaxed),
            self.faults.major.load(Ordering::Relaxed),
        )
    }

    fn throttled_windows(&self) -> u64 {
        self.throttled.load(Ordering::Relaxed)
    }

    fn sim_start(&'static self, epoch_ns: u64) {
        self.start(epoch_ns);
    }

    fn sim_round(&'static self, control: &LoopControl<'_>, budget: usize) -> (usize, bool) {
        let previous = self.enter();
        let outer = sim::enter_level(self.priority);
        self.poll_fds_now();
        let result = self.round::<false>(control, budget);
        sim::leave_level(outer);
        Self::leave(previous);
        result
    }

    fn sim_next_event_ns(&'static self) -> Option<u64> {
        self.next_event_ns()
    }
}

impl<M: Message, const N: usize> Executor<M, N> {
    /// The level's loop; `CHECK`: every job is checked for real-time safety.
    fn run_loop_as<const CHECK: bool>(&'static self, control: &LoopControl<'_>) {
        self.start(control.epoch_ns);
        self.open_throttle_watch();
        let previous = self.enter();
        let sample = self.accounting && self.page_faults;
        if sample {
            // The baseline: faults before the first job are not charged.
            self.faults.sampled_at_ns.set(0);
            self.last_end_ns.set(0);
            self.sample_faults();
        }
        let has_fds = !self.hardware.is_empty();
        let mut busy = false;
        let mut idle_since: Option<u64> = None;
        loop {
            if control.stop.load(Ordering::Acquire) {
                break;
            }
            let (ran, go_on) = self.round::<CHECK>(control, usize::MAX);
            if !go_on {
                break;
            }
            if ran > 0 {
                busy = true;
                idle_since = None;
                if has_fds {
                    self.poll_fds_now();
                    continue;
                }
                // A sleeping level with nothing timed goes to its park at once when the
                // round left the ready ring empty, instead of a second round that would look
                // at every source again and find them empty: the ring is the only source
                // whose pushes do not ring the doorbell (they come from this thread); a
                // remote spawn, a timer pushed from another thread or an async wake since
                // this level last woke left the doorbell NOTIFIED, so the park returns at
                // once and the next round runs it. A level with timers, delays or periodic
                // tasks takes the second round: its next release may be due already, and a
                // park with a passed deadline is a system call for nothing. (A
                // cross-priority switch runs one round per job instead of two:
                // `scripts/icount.sh`'s switch-cross.)
                if !matches!(control.idle, IdlePolicy::Sleep)
                    || self.ready.len.get() != 0
                    || !self.nothing_timed()
                {
                    continue;
                }
            }
            if busy {
                busy = false;
                if sample {
                    self.sample_faults();
                }
                self.sample_throttle();
            }
            let spin = match control.idle {
                IdlePolicy::Sleep => false,
                IdlePolicy::Spin => true,
                IdlePolicy::SpinThenSleep(limit_ns) => {
                    let now = driver::now_ns();
                    now - *idle_since.get_or_insert(now) < limit_ns
                }
            };
            if spin {
                if has_fds {
                    self.poll_fds_now();
                }
                std::hint::spin_loop();
                continue;
            }
            // Nothing ran: every queue was empty or not due when looked at. A producer that
            // pushed after our look left the doorbell NOTIFIED, so the park returns at once.
            self.park(self.next_event_ns());
            idle_since = None;
        }
        Self::leave(previous);
    }
}
