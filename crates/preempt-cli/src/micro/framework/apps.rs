//! The preempt apps the framework set measures, one per scenario, each written twice: the
//! default app (accounting on) and the bare runtime (`accounting = false`).
//!
//! They are the thesis's benchmark apps (seed `004_…` §6.2, Listings 1 and 2) with the
//! elapsed-time print replaced by counter reads *inside* the tasks, so that every task switch,
//! lock and unlock is one sample:
//!
//! | app | tasks | sample |
//! |-----|-------|--------|
//! | `same_prio` | `task1`, `task2` at one priority ping-pong by spawn (Listing 1) | counter read just before `spawn` → first statement of the spawned task, both directions |
//! | `cross_prio` | `task1` (low) spawns `task2` (high), which spawns `task1` back (Listing 1 at two priorities) | counter before `task2::spawn` in `task1` → first statement of `task2` |
//! | `resource` | `bench` (low) locks `r`, shared with an idle high task (so `r` is a PCP mutex, not a free cell), 1 M times in the thesis | lock: before `lock` → first statement of the closure; unlock: last statement of the closure → after `lock` returns |
//! | `contended` | `task1` (high) locks `a`, spawns `task2` (low) and waits inside the lock until `task2` is blocked on `a` (Listing 2) | last statement of `task1`'s closure → after its `lock` returns (the unlock hands the PI futex to `task2`) |
//! | `high_waiter` | the other way round: `holder` (low) locks `a`, spawns `waiter` (high) and waits until it is blocked on `a`; each task pins its own thread, the waiter to `--cpu`, the holder to another CPU | the same; the kernel boosted the holder while the waiter slept, and the unlock also ends that boost |
//!
//! # Priorities
//! The thesis ran its tasks at priorities 1 and 2. Here *low* is [`LOW_PRIORITY`] (70) and
//! *high* [`HIGH_PRIORITY`] (80), the levels the other sets use by default (`--priority 80`,
//! partners 10 below): at 1 and 2 any other real-time thread of the machine preempts the
//! benchmark (a concurrent run of a peer benchmark at 1 and 2 starved the waiter of Listing 2
//! for seconds on the development VM), and only the order of the two levels matters to what
//! is measured. Priorities are literals of the app (the macro needs them at compile time), so
//! `--priority` cannot move them; each task records the policy its executor thread really has
//! (`observe_policy`) and the child reports it in the row's notes.
//!
//! Samples go to lock-free [`Recorder`]s, preallocated before the app starts, so the tasks
//! neither allocate nor lock to record; when a recorder is full the task calls
//! [`preempt::exit`], `run()` returns, and the child prints the recorders
//! ([`super::child_main`]).
//!
//! Listing 2 sleeps 20 µs inside the lock and trusts that `task2` blocked meanwhile. On a
//! loaded VM a wake-up can take longer, and the unlock would then be uncontended and still be
//! counted. Here `task1` instead waits until `task2` has announced the lock attempt *and* its
//! thread sleeps in the kernel (`/proc/self/task/<tid>/stat` state `S`: the only place it can
//! sleep after the announcement is the PI futex), polling every 5 µs; a round in which that is
//! not seen within 100 ms is not counted and is reported in the row's notes.
//!
//! ```
//! use preempt_cli::micro::framework::apps::Recorder;
//! let r = Recorder::new();
//! r.reserve(2);
//! assert!(r.push(10)); // room for one more
//! assert!(!r.push(11)); // full: the task stops the app
//! assert!(!r.push(12)); // dropped
//! assert_eq!(r.take(), [10, 11]);
//! ```

use std::hint::black_box;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};

use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::sched;

use super::Kind;
use crate::micro::clock::read_counter;

/// A fixed-capacity sample buffer that tasks fill without allocating or locking.
#[derive(Debug)]
pub struct Recorder {
    slots: OnceLock<Box<[AtomicU64]>>,
    len: AtomicUsize,
}

impl Recorder {
    /// An empty recorder without capacity (see [`Recorder::reserve`]).
    pub const fn new() -> Self {
        Self {
            slots: OnceLock::new(),
            len: AtomicUsize::new(0),
        }
    }

    /// Allocates room for `n` samples (before the app starts; once per process).
    pub fn reserve(&self, n: usize) {
        self.slots
            .get_or_init(|| (0..n).map(|_| AtomicU64::new(0)).collect());
    }

    /// Records `v`; returns whether there is room for more. A push beyond the capacity is
    /// dropped (the task that sees `false` stops the app).
    #[inline]
    pub fn push(&self, v: u64) -> bool {
        let Some(slots) = self.slots.get() else {
            return false;
        };
        let i = self.len.fetch_add(1, Ordering::Relaxed);
        if let Some(slot) = slots.get(i) {
            slot.store(v, Ordering::Relaxed);
        }
        i + 1 < slots.len()
    }

    /// The samples recorded, in order (call after the app's threads have been joined).
    pub fn take(&self) -> Vec<u64> {
        let Some(slots) = self.slots.get() else {
            return Vec::new();
        };
        let n = self.len.load(Ordering::Acquire).min(slots.len());
        slots[..n]
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .collect()
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

/// The low task priority of the apps (literal `70` in their `#[task]` attributes).
pub const LOW_PRIORITY: u8 = 70;
/// The high task priority of the apps (literal `80` in their `#[task]` attributes).
pub const HIGH_PRIORITY: u8 = 80;

/// The policy each level's executor thread had, seen from inside a task: 0 not seen yet, -1
/// not SCHED_FIFO (soft mode), else the SCHED_FIFO priority. Index 0 low, 1 high.
static POLICY_SEEN: [AtomicI32; 2] = [AtomicI32::new(0), AtomicI32::new(0)];

/// Records the calling executor thread's policy for level `high` (once per level; outside
/// every timed window).
#[inline]
fn observe_policy(high: bool) {
    let slot = &POLICY_SEEN[usize::from(high)];
    if slot.load(Ordering::Relaxed) == 0 {
        let seen = match sched::current_thread_policy() {
            Ok(sched::Policy::Fifo { priority }) => i32::from(priority),
            _ => -1,
        };
        slot.store(seen, Ordering::Relaxed);
    }
}

/// What `observe_policy` saw, for the row notes, e.g. `low level: SCHED_FIFO 70; high
/// level: SCHED_FIFO 80`.
pub(crate) fn policies_seen() -> String {
    let mut parts = Vec::new();
    for (name, declared, slot) in [
        ("low", LOW_PRIORITY, &POLICY_SEEN[0]),
        ("high", HIGH_PRIORITY, &POLICY_SEEN[1]),
    ] {
        match slot.load(Ordering::Relaxed) {
            0 => {}
            -1 => parts.push(format!(
                "{name} level (priority {declared}): not SCHED_FIFO"
            )),
            p => parts.push(format!("{name} level: SCHED_FIFO {p}")),
        }
    }
    format!(
        "executor threads seen from inside the tasks: {}",
        parts.join("; ")
    )
}

/// The first row of every scenario.
pub(crate) static ROW_A: Recorder = Recorder::new();
/// The second row (resource unlock).
pub(crate) static ROW_B: Recorder = Recorder::new();

/// Rounds of the contended scenario in which the waiter was not seen blocked.
pub(crate) static UNCONFIRMED: AtomicU64 = AtomicU64::new(0);
/// Set by the contended scenario's waiter just before it calls `lock`.
static WAITER_LOCKING: AtomicBool = AtomicBool::new(false);
/// Thread id of the contended scenario's waiter.
static WAITER_TID: AtomicI32 = AtomicI32::new(0);
/// Set once the contended scenario has all its samples: the waiter then stops spawning.
static DONE: AtomicBool = AtomicBool::new(false);
/// CPU of the high-waiter scenario's holder task (`usize::MAX`: not pinned).
pub(crate) static HOLDER_CPU: AtomicUsize = AtomicUsize::new(usize::MAX);
/// CPU of the high-waiter scenario's waiter task.
pub(crate) static WAITER_CPU: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Whether the holder has pinned its thread.
static HOLDER_PINNED: AtomicBool = AtomicBool::new(false);
/// Whether the waiter has pinned its thread.
static WAITER_PINNED: AtomicBool = AtomicBool::new(false);

/// How long `task1` waits for the waiter to block before it gives up on a round (100 ms:
/// a wake-up of a SCHED_FIFO thread takes microseconds; 100 ms covers a vCPU stolen by the
/// host several times over).
const WAITER_TIMEOUT_NS: u64 = 100_000_000;
/// Poll interval while waiting for the waiter (5 µs, a quarter of Listing 2's 20 µs sleep).
const WAITER_POLL_NS: u64 = 5_000;
/// Unconfirmed rounds in a row after which the scenario gives up (10 × 100 ms = 1 s).
const UNCONFIRMED_LIMIT: u64 = 10;

/// Records a switch sample; stops the app when the row is full.
#[inline(always)]
fn record_switch(now: u64, stamp: u64) -> bool {
    let more = ROW_A.push(now.wrapping_sub(stamp));
    if !more {
        preempt::exit(0);
    }
    more
}

/// Pins the calling executor thread to the CPU in `cpu`, on the first call of each task (the
/// task's thread is the same for every job, so once is enough).
fn pin_once(done: &AtomicBool, cpu: &AtomicUsize) {
    let cpu = cpu.load(Ordering::Relaxed);
    if cpu != usize::MAX && !done.swap(true, Ordering::Relaxed) {
        if let Err(e) = sched::set_current_thread_affinity(&[cpu]) {
            eprintln!("cannot pin a task's executor thread to CPU {cpu}: {e}");
            preempt::exit(5);
        }
    }
}

/// Whether thread `tid` of this process sleeps in the kernel (state `S`).
fn thread_sleeping(tid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else {
        return false;
    };
    // "tid (comm) S ...": the comm may contain spaces and parentheses, the state follows the
    // last ')'.
    stat.rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('S'))
}

/// Called by the holder inside the lock: waits until the waiter is blocked on the resource.
fn wait_for_waiter() -> bool {
    let deadline = clock::monotonic_now_ns() + WAITER_TIMEOUT_NS;
    loop {
        if WAITER_LOCKING.load(Ordering::SeqCst)
            && thread_sleeping(WAITER_TID.load(Ordering::SeqCst))
        {
            return true;
        }
        let now = clock::monotonic_now_ns();
        if now >= deadline {
            return false;
        }
        if clock::sleep_until_ns(ClockId::Monotonic, now + WAITER_POLL_NS).is_err() {
            // clock_nanosleep on CLOCK_MONOTONIC fails only for invalid arguments; spin instead.
            std::hint::spin_loop();
        }
    }
}

/// After a contended round: records it if the waiter was blocked; returns whether to go on.
fn contended_round(confirmed: bool, t0: u64, t1: u64) -> bool {
    static IN_A_ROW: AtomicU64 = AtomicU64::new(0);
    if confirmed {
        IN_A_ROW.store(0, Ordering::Relaxed);
        if ROW_A.push(t1.wrapping_sub(t0)) {
            return true;
        }
        DONE.store(true, Ordering::SeqCst);
        preempt::exit(0);
        return false;
    }
    UNCONFIRMED.fetch_add(1, Ordering::Relaxed);
    if IN_A_ROW.fetch_add(1, Ordering::Relaxed) + 1 >= UNCONFIRMED_LIMIT {
        eprintln!(
            "the waiter task was never seen blocked on the resource in {UNCONFIRMED_LIMIT} \
             rounds of {} ms each",
            WAITER_TIMEOUT_NS / 1_000_000
        );
        DONE.store(true, Ordering::SeqCst);
        preempt::exit(4);
        return false;
    }
    true
}

macro_rules! switch_apps {
    ($same:ident, $cross:ident, $accounting:literal) => {
        /// Listing 1, both tasks at the high priority: one executor thread.
        #[preempt::app(main = false, accounting = $accounting)]
        mod $same {
            #[init]
            fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                // 0: the first message carries no stamp (it waits for the executors to start).
                task1::spawn(0).expect("task1's queue is empty at init");
                (Shared {}, Local {}, init::Monotonics())
            }

            #[task(priority = 80)]
            fn task1(_cx: task1::Context, stamp: u64) {
                let now = super::read_counter();
                if stamp != 0 && !super::record_switch(now, stamp) {
                    return;
                }
                super::observe_policy(true);
                task2::spawn(super::read_counter()).expect("task2's queue is full");
            }

            #[task(priority = 80)]
            fn task2(_cx: task2::Context, stamp: u64) {
                let now = super::read_counter();
                if super::record_switch(now, stamp) {
                    super::observe_policy(true);
                    task1::spawn(super::read_counter()).expect("task1's queue is full");
                }
            }
        }

        /// Listing 1 at the low and the high priority: two executor threads, a futex wake per
        /// spawn.
        #[preempt::app(main = false, accounting = $accounting)]
        mod $cross {
            #[init]
            fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                task1::spawn().expect("task1's queue is empty at init");
                (Shared {}, Local {}, init::Monotonics())
            }

            #[task(priority = 70)]
            fn task1(_cx: task1::Context) {
                super::observe_policy(false);
                task2::spawn(super::read_counter()).expect("task2's queue is full");
            }

            #[task(priority = 80)]
            fn task2(_cx: task2::Context, stamp: u64) {
                let now = super::read_counter();
                if super::record_switch(now, stamp) {
                    super::observe_policy(true);
                    task1::spawn().expect("task1's queue is full");
                }
            }
        }
    };
}

switch_apps!(same_prio, cross_prio, true);
switch_apps!(same_prio_bare, cross_prio_bare, false);

macro_rules! resource_apps {
    ($resource:ident, $contended:ident, $accounting:literal) => {
        /// An uncontended PCP lock: `r` is shared by the low and the high priority, so it is a
        /// real PI-futex mutex; only the low task runs.
        #[preempt::app(main = false, accounting = $accounting)]
        mod $resource {
            #[shared]
            struct Shared {
                r: u64,
            }

            #[init]
            fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                bench::spawn().expect("bench's queue is empty at init");
                (Shared { r: 0 }, Local {}, init::Monotonics())
            }

            #[task(priority = 70, shared = [r])]
            fn bench(mut cx: bench::Context) {
                super::observe_policy(false);
                loop {
                    let t0 = super::read_counter();
                    let (t1, t2) = cx.shared.r.lock(|r| {
                        let t1 = super::read_counter();
                        *r = super::black_box(*r + 1);
                        (t1, super::read_counter())
                    });
                    let t3 = super::read_counter();
                    let more_lock = super::ROW_A.push(t1.wrapping_sub(t0));
                    let more_unlock = super::ROW_B.push(t3.wrapping_sub(t2));
                    if !(more_lock && more_unlock) {
                        break;
                    }
                }
                preempt::exit(0);
            }

            /// Never spawned: it only raises `r`'s ceiling to 2.
            #[task(priority = 80, shared = [r])]
            fn other(mut cx: other::Context) {
                cx.shared.r.lock(|r| *r += 1);
            }
        }

        /// Listing 2: the high holder unlocks while the low task waits.
        #[preempt::app(main = false, accounting = $accounting)]
        mod $contended {
            #[shared]
            struct Shared {
                a: u32,
            }

            #[init]
            fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                task1::spawn().expect("task1's queue is empty at init");
                (Shared { a: 0 }, Local {}, init::Monotonics())
            }

            #[task(priority = 80, shared = [a])]
            fn task1(mut cx: task1::Context) {
                super::observe_policy(true);
                let (t0, confirmed) = cx.shared.a.lock(|a| {
                    *a += 1;
                    task2::spawn().expect("task2's queue is full");
                    // Listing 2 sleeps 20 µs here; we wait until task2 is seen blocked.
                    let confirmed = super::wait_for_waiter();
                    (super::read_counter(), confirmed)
                });
                let t1 = super::read_counter();
                super::contended_round(confirmed, t0, t1);
            }

            #[task(priority = 70, shared = [a])]
            fn task2(mut cx: task2::Context) {
                super::observe_policy(false);
                super::WAITER_TID.store(super::sched::current_tid(), super::Ordering::SeqCst);
                super::WAITER_LOCKING.store(true, super::Ordering::SeqCst);
                cx.shared.a.lock(|a| {
                    super::WAITER_LOCKING.store(false, super::Ordering::SeqCst);
                    *a += 1;
                });
                if !super::DONE.load(super::Ordering::SeqCst) {
                    task1::spawn().expect("task1's queue is full");
                }
            }
        }
    };
}

resource_apps!(resource, contended, true);
resource_apps!(resource_bare, contended_bare, false);

macro_rules! high_waiter_app {
    ($name:ident, $accounting:literal) => {
        /// A lower-priority holder releases a resource a higher-priority task on another CPU
        /// is blocked on (priority inheritance at work).
        #[preempt::app(main = false, accounting = $accounting)]
        mod $name {
            #[shared]
            struct Shared {
                a: u32,
            }

            #[init]
            fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                holder::spawn().expect("holder's queue is empty at init");
                (Shared { a: 0 }, Local {}, init::Monotonics())
            }

            #[task(priority = 70, shared = [a])]
            fn holder(mut cx: holder::Context) {
                super::pin_once(&super::HOLDER_PINNED, &super::HOLDER_CPU);
                super::observe_policy(false);
                let (t0, confirmed) = cx.shared.a.lock(|a| {
                    *a += 1;
                    waiter::spawn().expect("waiter's queue is full");
                    let confirmed = super::wait_for_waiter();
                    (super::read_counter(), confirmed)
                });
                let t1 = super::read_counter();
                super::contended_round(confirmed, t0, t1);
            }

            #[task(priority = 80, shared = [a])]
            fn waiter(mut cx: waiter::Context) {
                super::pin_once(&super::WAITER_PINNED, &super::WAITER_CPU);
                super::observe_policy(true);
                super::WAITER_TID.store(super::sched::current_tid(), super::Ordering::SeqCst);
                super::WAITER_LOCKING.store(true, super::Ordering::SeqCst);
                cx.shared.a.lock(|a| {
                    super::WAITER_LOCKING.store(false, super::Ordering::SeqCst);
                    *a += 1;
                });
                if !super::DONE.load(super::Ordering::SeqCst) {
                    holder::spawn().expect("holder's queue is full");
                }
            }
        }
    };
}

high_waiter_app!(high_waiter, true);
high_waiter_app!(high_waiter_bare, false);

/// Allocates the recorders of `kind` for `n` samples per row.
pub fn reserve(kind: Kind, n: usize) {
    ROW_A.reserve(n);
    if kind == Kind::Resource {
        ROW_B.reserve(n);
    }
}

/// Runs the app of `kind` (bare: `accounting = false`) to the end; returns its exit code.
pub fn run(kind: Kind, bare: bool) -> i32 {
    match (kind, bare) {
        (Kind::SamePrio, false) => same_prio::run(),
        (Kind::SamePrio, true) => same_prio_bare::run(),
        (Kind::CrossPrio | Kind::CrossPrioOneCore, false) => cross_prio::run(),
        (Kind::CrossPrio | Kind::CrossPrioOneCore, true) => cross_prio_bare::run(),
        (Kind::Resource, false) => resource::run(),
        (Kind::Resource, true) => resource_bare::run(),
        (Kind::Contended, false) => contended::run(),
        (Kind::Contended, true) => contended_bare::run(),
        (Kind::ContendedHighWaiter, false) => high_waiter::run(),
        (Kind::ContendedHighWaiter, true) => high_waiter_bare::run(),
    }
}
