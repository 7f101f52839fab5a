//! The original Priority Ceiling Protocol (Sha, Rajkumar, Lehoczky 1990) on Linux PI
//! futexes: [`PcpMutex`] resources in [`PcpGroup`]s, deadlock-free by construction, with
//! kernel priority inheritance while blocked and no system call when uncontended.
//!
//! # Background
//!
//! Every resource has a *ceiling*: the highest priority of the tasks that use it (the
//! `#[preempt::app]` macro computes it). PCP lets a task of priority `p` lock a resource
//! only if `p` is higher than the ceiling of every resource currently held by *other*
//! tasks. This forbids the two-tasks-two-locks deadlock (whoever locks first raises the
//! ceiling above the other) and bounds blocking to one lower-priority critical section.
//! POSIX `PTHREAD_PRIO_PROTECT` is not this protocol (it performs no test across mutexes,
//! thesis §5.2.2) and costs two `sched_setparam` calls per lock. The thesis's `pcp-mutex`
//! keeps one process-wide "highest locker" and hangs when its threads share a CPU.
//!
//! # Solution
//!
//! A [`PcpGroup`] holds the state of one group of resources (tasks that transitively
//! share resources; independent groups never block each other). Its core is one PI futex
//! word per ceiling level, `owner[c]`, holding the tid of the thread that holds level `c`:
//!
//! *Lemma.* Resources held by different threads have distinct ceilings. If `A` holds a
//! resource of ceiling `a` and `B` then locks one of ceiling `b`, PCP required
//! `p_B > a`, and `b >= p_B` because `B` uses it, so `b > a`.
//!
//! So "the holder of level `c`" is well defined, `owner[c]` gives mutual exclusion for all
//! resources of ceiling `c`, and a thread blocked by level `l` can sleep in
//! `FUTEX_LOCK_PI` on `owner[l]`, which makes the kernel lend its priority to exactly the
//! thread that blocks it. A thread that already holds level `c` locks further resources of
//! ceiling `c` with no atomic read-modify-write at all.
//!
//! ## Lock words
//!
//! | word                | bits                                   | written by                         |
//! |---------------------|----------------------------------------|------------------------------------|
//! | `owner[c]` (PI)     | [`TID_MASK`]: holder tid, 0 = free; [`WAITERS`]: kernel, threads sleep on it | CAS by the claimer; kernel on hand-over |
//! | `arbiter` (PI)      | tid of the thread in the slow path, 0 = free | CAS / kernel                  |
//! | `max_ceiling`       | highest ceiling locked so far (bounds every scan) | `fetch_max`, once per new ceiling |
//! | `intents`           | list of `(tid, level)`: "`tid` sleeps for `level`", one node on each sleeping slow-path thread's stack | the arbiter's holder only |
//!
//! | `owner[c]` state    | value            | meaning for other threads' PCP test                   |
//! |---------------------|------------------|-------------------------------------------------------|
//! | free                | `0`              | level not held                                        |
//! | held                | `tid`            | held (committed) or being claimed: blocks             |
//! | held, contended     | `tid \| WAITERS` | as above; its release must call `FUTEX_UNLOCK_PI`     |
//! | handed over         | `tid [\| WAITERS]` and `(tid, c)` in `intents` | the kernel gave `c` to a thread that only waited for it, not committed: ignored by the slow-path test |
//!
//! ## Fast path (`#[inline]`, no system call)
//!
//! 1. `owner[c] == me`: nested lock at a level we hold: done.
//! 2. Pre-check: `arbiter == 0` (no slow-path decision in progress); else slow path.
//! 3. Claim: CAS `owner[c]` `0 -> me` (`SeqCst`); on failure slow path.
//! 4. Re-check (`SeqCst` loads): `arbiter == 0` and no level in `p..=max_ceiling` other
//!    than `c` held by another thread. Clean: locked. Otherwise release the claim and
//!    take the slow path.
//!
//! Unlock: CAS `owner[c]` `me -> 0`; if that fails the kernel set `WAITERS`:
//! `FUTEX_UNLOCK_PI` hands the level to the highest-priority waiter. Uncontended
//! lock + unlock is therefore one CAS each, like a bare PI futex, plus a few loads of one
//! cache line. The fast path never reads `intents`: to it every holder is visible, which
//! can only send it to the slow path, never let it through wrongly.
//!
//! Steps 3-4 are a Dekker pattern: of two threads that claim concurrently, the one whose
//! claim is later in the `SeqCst` order sees the other's claim in its re-check. Both may
//! see each other (and both back off); neither proceeds unseen. (Loom models `SeqCst`
//! loads and RMWs as `AcqRel`, so under `cfg(loom)` a `SeqCst` fence marks these points;
//! see `crate::loom::seqcst_order_point`.)
//!
//! ## Slow path (`#[cold]`): rounds under the arbiter, intents published by waiters
//!
//! The `arbiter` PI futex serialises slow-path decisions, and every fast-path re-check
//! fails while it is held, so the arbiter's view can only change by releases and by fast
//! claims it then sees. A slow-path *round*, holding the arbiter:
//! 1. unlink our intent, if linked (from the previous round);
//! 2. look for a level in `p..=max_ceiling` other than `c` held by another thread whose
//!    `(tid, level)` is *not* in `intents`; if there is none and we do not own `c` yet,
//!    claim `owner[c]` by CAS (a failed CAS makes `c` itself the blocking level);
//! 3. no blocking level: *commit* (we own `c`, and with our intent unlinked every scan
//!    sees it), release the arbiter, done;
//! 4. otherwise release `c` if we own it uncommitted, **link our intent `(me, level)`**,
//!    release the arbiter and sleep in `FUTEX_LOCK_PI` on `owner[level]`, lending our
//!    priority to its holder. The kernel hands `level` to its top waiter when the holder
//!    unlocks. If `level == c` we keep it (uncommitted) for the next round, otherwise we
//!    release it at once (we only *relayed* it). Next round.
//!
//! Why the waiter publishes, and before it sleeps: the kernel hands a PI futex over inside
//! the holder's `FUTEX_UNLOCK_PI`, with no user-space step in between, so only a record
//! that exists before the waiter can receive the level makes the new owner invisible from
//! the instant it owns it. And only the waiter knows it waits: a releaser cannot tell
//! whether its `FUTEX_UNLOCK_PI` will find a waiter, so a mark it set could outlive the
//! call and hide a thread that later commits the level. An intent is removed by its own
//! thread under the arbiter, at its next round, before that thread can commit anything.
//! Relays are made *invisible*, not "sticky" (linux-rtic's `pcp-mutex` keeps a relayed
//! level marked until its holder passes it on, which still cycles with three threads on
//! two levels).
//!
//! # Why it works
//!
//! *Mutual exclusion* does not depend on priorities: a resource of ceiling `c` is only
//! touched by the owner of `owner[c]`, and a per-mutex flag (written only by that owner)
//! rejects re-entrant locking of one mutex. Wrong `priority` arguments can therefore cost
//! liveness, never memory safety. Intents never affect mutual exclusion: they only make
//! the slow path's *PCP test* ignore a holder, and that holder still owns the futex word.
//!
//! *No deadlock* (priorities passed correctly, `priority <= ceiling`). Order the threads
//! that hold levels *committed* by the time they acquired their first committed level.
//! When `B` started after `A`, all of `A`'s levels were below `p_B` and stay so (`A` cannot
//! acquire new levels while `B` holds levels `>= p_B > A's levels >= p_A`). So only the
//! latest holder (or a thread above every held level) can acquire, and the latest holder is
//! never blocked: it always finishes its critical sections, and the system drains.
//! Uncommitted owners (a level received by hand-over) need nothing to give it back: a relay
//! releases at once, and an own-level owner needs only the arbiter, whose holder never
//! sleeps while holding it.
//!
//! *Intent lemma.* Under the arbiter, a thread `T` owns a level `l` uncommitted only if
//! `(T, l)` is in `intents`. Proof: `T` comes to own `l` uncommitted in two ways. (i) By a
//! CAS in its own round under the arbiter: that round ends with a commit (no longer
//! uncommitted) or with releasing `l` before the arbiter, so no other arbiter holder sees
//! it. (ii) By the kernel's hand-over (or `wait_level`'s CAS on a free word) of a level
//! `T` sleeps for: `T` linked `(T, l)` under the arbiter *before* sleeping, and unlinks it
//! only in its next round, under the arbiter, which it reaches after releasing a relayed
//! `l` or while still owning its own `l` (then it commits or releases `l` before the
//! arbiter again). So every holder that a slow-path scan *sees* (not in `intents`) is
//! (a) committed, or (b) a fast-path claimer between its claim and its re-check.
//!
//! *Progress (no livelock), also with every thread pinned to one CPU.* Nothing ever spins:
//! every wait is a kernel sleep with priority inheritance on a word owned by the thread
//! that must act next, so that thread runs. A round ends with a commit or with a sleep on
//! a level held (a) committed: it is released when that critical section ends, which is
//! progress; (b) by a fast-path claimer: it commits (then (a)) or backs off within the same
//! lock call, one fast attempt per call; or (c) our own level `c` held uncommitted by a
//! thread with an intent, which releases it without waiting for anything but the arbiter.
//! Waking up, a thread either relays (releases at once) or keeps its own level; neither
//! makes it visible to others' scans, so two woken threads never block each other on
//! levels they only relayed: the cycle "H1 sees H2 holding the relayed `l`, sleeps on it;
//! H2 releases it to H1, sees H1 holding it, sleeps..." cannot start, because the scan
//! skips the relayed holder. Hence the rounds of one lock call are bounded by the critical
//! sections that end, plus the fast-path back-offs, plus the hand-overs of its own level,
//! during the call: with `n` threads each taking one lock (the loom models), at most `2n`.
//!
//! *Bounded blocking.* On one CPU this is the original PCP: a task is blocked by at most
//! one critical section of one lower-priority task, for the length of that critical section
//! plus the hand-over (`FUTEX_UNLOCK_PI`, a context switch and the waiter's return from
//! `FUTEX_LOCK_PI`). `tests/pcp_blocking_bound.rs` measures it. On several CPUs preempt
//! guarantees mutual exclusion, deadlock freedom and progress as above, and the kernel's
//! priority inheritance makes the blocking thread run at the blocked one's priority, but
//! not PCP's single-blocking bound: tasks on other CPUs may hold and take levels
//! concurrently, so a task can wait for critical sections of several lower tasks (one per
//! CPU), and a ceiling blocks a task on another CPU even when no resource is shared. This
//! is why multiprocessor variants exist (MPCP, MSRP); for a hard bound, pin the tasks that
//! share a group of resources to one CPU.
//!
//! # How it is checked
//!
//! Loom (`tests/loom_pcp.rs`) checks mutual exclusion, the ceiling rule and deadlock freedom
//! of two threads and two mutexes taken in opposite orders, and progress with two threads
//! blocked by one level (one that only relays it, and one that also waits for its own
//! level), with the futex model handing over to the oldest and to the newest waiter. Under
//! loom, `lock_slow` asserts at every sleep that the blocking holder committed or
//! fast-claimed that level (never one that only waited for it) and that no lock call takes
//! more than `ROUND_LIMIT` rounds. Both failed on the previous algorithm (per-level
//! "placeholder" flags set by the woken thread itself), which livelocked: two threads
//! blocked by one level passed it between them for ever (about 1 run in 10 of the random
//! nested-order stress test; every run of the relay scenario of `tests/pcp_progress.rs`).
//! `tests/pcp_stress.rs` runs real SCHED_FIFO threads, also all pinned to CPU 0;
//! `tests/pcp_progress.rs` reproduces the two-waiter scenarios deterministically on one CPU
//! under a watchdog; `scripts/stress_pcp.sh` repeats the random nested-order stress test
//! in fresh processes (CI runs it 200 times; figures in docs/PERFORMANCE.md).
//!
//! # Example
//!
//! ```
//! use preempt_sync::pcp::{PcpGroup, PcpMutex};
//!
//! static GROUP: PcpGroup = PcpGroup::new();
//! // Used by tasks of priority 1 and 2: ceiling 2.
//! static A: PcpMutex<u32> = PcpMutex::new(0, 2, &GROUP);
//! static B: PcpMutex<u32> = PcpMutex::new(0, 2, &GROUP);
//!
//! // A priority-1 task locks both (a nested lock, the multi-lock of RTIC).
//! let sum = A.lock(1, |a| {
//!     *a += 1;
//!     B.lock(1, |b| {
//!         *b += 2;
//!         *a + *b
//!     })
//! });
//! assert_eq!(sum, 3);
//! ```

use crate::futex::{self, TID_MASK, WAITERS};
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicU32, Ordering, fence};

/// Loom-only event log of the slow path, printed by the loom tests when a model fails.
#[cfg(loom)]
#[doc(hidden)]
pub static TRACE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Loom only: the most slow-path rounds one lock call may take before the model fails
/// (0 = unchecked). A livelock is an unbounded number of rounds; the loom tests set this to
/// twice their thread count (see "Bounded rounds" in the module docs).
#[cfg(loom)]
#[doc(hidden)]
pub static ROUND_LIMIT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

macro_rules! trace {
    ($($arg:tt)*) => {
        #[cfg(loom)]
        {
            // Format first: loom may switch threads inside the atomic loads of the
            // arguments, and must not do so while this std mutex is held.
            let line = format!($($arg)*);
            TRACE.lock().unwrap().push(line);
        }
    };
}

/// Highest ceiling (and priority) a [`PcpMutex`] may have: the highest `SCHED_FIFO`
/// priority of Linux (`sched(7)`). Smaller under loom to keep the model small.
pub const MAX_CEILING: u8 = if cfg!(loom) { 7 } else { 99 };
const LEVELS: usize = MAX_CEILING as usize + 1;

/// A waiter's published intent: "thread `tid` sleeps for level `level` (and may own it
/// uncommitted)". Lives on the waiter's stack for one `lock_slow` call; linked into
/// [`PcpGroup::intents`] while the thread waits. Every field is read and written only by
/// the holder of the group's arbiter.
struct Intent {
    tid: u32,
    level: UnsafeCell<usize>,
    next: UnsafeCell<*const Intent>,
}

/// Loom only: which threads ever held each level legitimately in this model run (committed
/// it, or claimed it on the fast path), recorded beside the real state and checked at every
/// slow-path sleep (see "Why it works"). A set rather than the current holder because
/// loom's `SeqCst` loads may return a value older than the latest release (loom models them
/// as acquire loads), so a scan may see a holder that has just released. Plain `std` types:
/// loom runs one thread at a time, and these are not part of the algorithm.
#[cfg(loom)]
struct Shadow {
    legit: [std::sync::Mutex<Vec<u32>>; LEVELS],
}

#[cfg(loom)]
impl Shadow {
    fn record(&self, l: usize, tid: u32) {
        let mut v = self.legit[l].lock().unwrap();
        if !v.contains(&tid) {
            v.push(tid);
        }
    }

    fn legit(&self, l: usize, tid: u32) -> bool {
        self.legit[l].lock().unwrap().contains(&tid)
    }
}

/// The shared PCP state of one group of resources (see the [module docs](self)).
///
/// Resources in different groups never block each other; put resources in one group when
/// tasks share them transitively (the macro computes these groups).
// Aligned like `queue::CachePadded` (128 bytes, the x86_64 prefetch pair): the words every
// lock reads (`arbiter`, `max_ceiling`, the low levels) share one line with nothing else,
// so unrelated statics next to a group never false-share with it.
#[repr(C, align(128))]
pub struct PcpGroup {
    /// Slow-path arbiter, a PI futex word (0 or the tid of the thread holding it).
    arbiter: AtomicU32,
    /// Highest ceiling locked so far in this group; bounds every scan.
    max_ceiling: AtomicU32,
    /// `owner[c]`: PI futex word naming the holder of ceiling level `c`.
    owner: [AtomicU32; LEVELS],
    /// Head of the list of published [`Intent`]s of sleeping slow-path threads. Read and
    /// written only by the holder of `arbiter`.
    intents: UnsafeCell<*const Intent>,
    #[cfg(loom)]
    shadow: Shadow,
}

// SAFETY: every field but `intents` is an atomic. `intents`, and the `Intent` nodes it
// links (on the stacks of threads inside `lock_slow`), are only accessed by the thread that
// holds the group's `arbiter` PI futex, whose acquisition (CAS `SeqCst` or the kernel's
// hand-over followed by a `SeqCst` fence) and release (`Release` CAS or
// `FUTEX_UNLOCK_PI`) order those accesses; a node stays linked only while its thread is
// inside `lock_slow`, whose frame outlives the link (see `IntentGuard`).
unsafe impl Sync for PcpGroup {}
// SAFETY: as for `Sync`; the list is empty whenever no thread is inside `lock_slow`, and
// moving a group requires that no thread borrows it.
unsafe impl Send for PcpGroup {}

impl PcpGroup {
    /// A group with nothing held. `const`, so it can live in a `static`.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            arbiter: AtomicU32::new(0),
            max_ceiling: AtomicU32::new(0),
            owner: [const { AtomicU32::new(0) }; LEVELS],
            intents: UnsafeCell::new(core::ptr::null()),
        }
    }

    /// A group with nothing held (loom build).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            arbiter: AtomicU32::new(0),
            max_ceiling: AtomicU32::new(0),
            owner: core::array::from_fn(|_| AtomicU32::new(0)),
            intents: UnsafeCell::new(core::ptr::null()),
            shadow: Shadow {
                legit: core::array::from_fn(|_| std::sync::Mutex::new(Vec::new())),
            },
        }
    }

    /// The tid of the thread holding ceiling level `ceiling`, if any. Diagnostic only:
    /// the answer may be stale at once.
    pub fn holder(&self, ceiling: u8) -> Option<u32> {
        let tid = self
            .owner
            .get(usize::from(ceiling))?
            .load(Ordering::Relaxed)
            & TID_MASK;
        (tid != 0).then_some(tid)
    }

    /// Loom only: how many threads sleep in the kernel (model) on level `ceiling`.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn sleepers(&self, ceiling: u8) -> usize {
        futex::sleepers(&self.owner[usize::from(ceiling)])
    }

    /// Makes every later scan (of a claim ordered after ours) cover level `c`.
    #[inline(always)]
    fn register(&self, c: usize) {
        if c > self.max_ceiling.load(Ordering::SeqCst) as usize {
            self.register_slow(c);
        }
    }

    #[cold]
    fn register_slow(&self, c: usize) {
        let c32 = u32::try_from(c).expect("ceiling fits in u32");
        self.max_ceiling.fetch_max(c32, Ordering::SeqCst);
    }

    /// First level in `p..=max` other than `c` that another thread holds, with its holder's
    /// tid. `visible` filters the holders that count: every holder on the fast path, the
    /// ones without a published intent for that level in the slow path.
    #[inline(always)]
    fn conflict(
        &self,
        p: usize,
        c: usize,
        max: usize,
        me: u32,
        visible: impl Fn(u32, usize) -> bool,
    ) -> Option<(usize, u32)> {
        let end = max.min(LEVELS - 1);
        // A plain loop: `RangeInclusive::find` does not inline (measured 9% of the
        // uncontended lock in `perf`), and this runs twice per uncontended lock.
        let mut l = p;
        while l <= end {
            if l != c {
                let tid = self.owner[l].load(Ordering::SeqCst) & TID_MASK;
                if tid != 0 && tid != me && visible(tid, l) {
                    return Some((l, tid));
                }
            }
            l += 1;
        }
        None
    }

    /// Whether thread `tid` published an intent for `level`: it owns that level, if at all,
    /// only by the kernel's hand-over of a level it waited for, uncommitted.
    ///
    /// # Safety
    ///
    /// The caller holds the arbiter.
    unsafe fn intends(&self, tid: u32, level: usize) -> bool {
        // SAFETY: the caller holds the arbiter, which guards `intents` and every linked
        // node; linked nodes are alive (their threads are inside `lock_slow`).
        let mut node = self.intents.with(|head| unsafe { *head });
        while !node.is_null() {
            // SAFETY: as above: `node` is linked, hence alive, and guarded by the arbiter.
            let n = unsafe { &*node };
            // SAFETY: as above.
            if n.tid == tid && n.level.with(|l| unsafe { *l }) == level {
                return true;
            }
            // SAFETY: as above.
            node = n.next.with(|next| unsafe { *next });
        }
        false
    }

    /// Links `intent`, for `level`, at the head of the list.
    ///
    /// # Safety
    ///
    /// The caller holds the arbiter; `intent` is not linked and stays alive (and in place)
    /// until [`unlink`](Self::unlink)ed.
    unsafe fn link(&self, intent: &Intent, level: usize) {
        // SAFETY: the caller holds the arbiter, which guards the list and `intent`'s fields.
        unsafe {
            intent.level.with_mut(|l| *l = level);
            let head = self.intents.with(|h| *h);
            intent.next.with_mut(|n| *n = head);
            self.intents.with_mut(|h| *h = intent);
        }
    }

    /// Removes `intent` from the list.
    ///
    /// # Safety
    ///
    /// The caller holds the arbiter and `intent` is linked.
    unsafe fn unlink(&self, intent: &Intent) {
        let target: *const Intent = intent;
        // SAFETY: the caller holds the arbiter, which guards the list; every node reached
        // from the head is linked, hence alive.
        unsafe {
            let next = intent.next.with(|n| *n);
            if self.intents.with(|h| *h) == target {
                self.intents.with_mut(|h| *h = next);
                return;
            }
            let mut node = self.intents.with(|h| *h);
            while !node.is_null() {
                let n = &*node;
                if n.next.with(|x| *x) == target {
                    n.next.with_mut(|x| *x = next);
                    return;
                }
                node = n.next.with(|x| *x);
            }
        }
        unreachable!("unlinking a PCP intent that is not linked");
    }

    /// Acquires level `c` for a thread of priority `p`. Returns `false` if the thread
    /// already held the level (nested lock: nothing to release later).
    #[inline(always)]
    fn acquire(&self, p: usize, c: usize, me: u32) -> bool {
        debug_assert!(p <= c && c < LEVELS);
        if self.owner[c].load(Ordering::Relaxed) & TID_MASK == me {
            return false;
        }
        self.register(c);
        if !self.try_fast(p, c, me) {
            trace!("{me}: p={p} c={c} fast failed");
            self.lock_slow(p, c, me);
        }
        trace!("{me}: p={p} c={c} locked");
        true
    }

    #[inline(always)]
    fn try_fast(&self, p: usize, c: usize, me: u32) -> bool {
        // Only the arbiter is pre-checked: a scan of the levels before the claim as well
        // cost 1.2 ns of the 5.6 ns uncontended lock (benches/sync_bench.rs), and safety
        // needs only the re-check below. A claim made while blocked is released within
        // this call.
        if self.arbiter.load(Ordering::Relaxed) != 0 {
            return false;
        }
        if self.owner[c]
            .compare_exchange(0, me, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        #[cfg(loom)]
        self.shadow.record(c, me);
        crate::loom::seqcst_order_point();
        // Re-check after the claim (Dekker): `max` is re-read so that a level registered
        // by a thread whose claim precedes ours is covered.
        let max = self.max_ceiling.load(Ordering::SeqCst) as usize;
        if self.arbiter.load(Ordering::SeqCst) == 0
            && self.conflict(p, c, max, me, |_, _| true).is_none()
        {
            return true;
        }
        self.release(c, me);
        false
    }

    #[cold]
    #[inline(never)]
    fn lock_slow(&self, p: usize, c: usize, me: u32) {
        let intent = Intent {
            tid: me,
            level: UnsafeCell::new(0),
            next: UnsafeCell::new(core::ptr::null()),
        };
        let mut guard = IntentGuard {
            group: self,
            intent: &intent,
            me,
            linked: false,
        };
        // Whether we own `owner[c]` uncommitted (claimed under the arbiter or handed over).
        let mut holding = false;
        #[cfg(loom)]
        let mut rounds = 0usize;
        loop {
            self.lock_arbiter(me);
            #[cfg(loom)]
            {
                rounds += 1;
                let limit = ROUND_LIMIT.load(std::sync::atomic::Ordering::Relaxed);
                assert!(
                    limit == 0 || rounds <= limit,
                    "{me}: {rounds} slow-path rounds for one lock (limit {limit}): livelock"
                );
            }
            if guard.linked {
                // SAFETY: we hold the arbiter and our intent is linked.
                unsafe { self.unlink(&intent) };
                guard.linked = false;
            }
            let max = self.max_ceiling.load(Ordering::SeqCst) as usize;
            let visible = |tid, l| {
                // SAFETY: we hold the arbiter.
                unsafe { !self.intends(tid, l) }
            };
            let mut blocker = self.conflict(p, c, max, me, visible);
            if blocker.is_none() && !holding {
                match self.owner[c].compare_exchange(0, me, Ordering::SeqCst, Ordering::Relaxed) {
                    Ok(_) => holding = true,
                    Err(_) => blocker = Some((c, 0)),
                }
            }
            trace!("{me}: slow p={p} c={c} holding={holding} blocker={blocker:?}");
            let Some((level, _holder)) = blocker else {
                // Commit: our level is visible to every scan from now on.
                #[cfg(loom)]
                self.shadow.record(c, me);
                self.unlock_arbiter(me);
                return;
            };
            #[cfg(loom)]
            self.assert_may_sleep_on(level, _holder, c, me);
            if holding {
                self.release(c, me);
                holding = false;
            }
            // Publish the intent before the level can be handed to us: from the kernel's
            // hand-over until our next round, other slow-path scans ignore our ownership.
            // SAFETY: we hold the arbiter; `intent` is unlinked, lives on this frame until
            // the guard unlinks it, and does not move.
            unsafe { self.link(&intent, level) };
            guard.linked = true;
            self.unlock_arbiter(me);
            // Sleep, lending our priority to the holder of `level`, until it is handed over.
            self.wait_level(level, me);
            trace!("{me}: got level {level}");
            if level == c {
                holding = true;
            } else {
                self.release(level, me);
            }
        }
    }

    /// Loom only: the slow path sleeps only on a committed holder, on a fast-path claimer
    /// inside its window, or on its own level (see [`Shadow`] for why "ever held").
    #[cfg(loom)]
    fn assert_may_sleep_on(&self, level: usize, holder: u32, c: usize, me: u32) {
        assert!(
            level == c || self.shadow.legit(level, holder),
            "{me}: sleeps on level {level} held by {holder}, which never committed it nor \
             claimed it on the fast path: it only waited for it"
        );
    }

    /// Takes `owner[level]`: user-space CAS if free, else `FUTEX_LOCK_PI`.
    #[cold]
    fn wait_level(&self, level: usize, me: u32) {
        let word = &self.owner[level];
        if word
            .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        if let Err(e) = futex::lock_pi(word, None) {
            futex::unexpected("FUTEX_LOCK_PI on a PCP level", e);
        }
    }

    #[cold]
    fn lock_arbiter(&self, me: u32) {
        if self
            .arbiter
            .compare_exchange(0, me, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
        {
            crate::loom::seqcst_order_point();
            return;
        }
        if let Err(e) = futex::lock_pi(&self.arbiter, None) {
            futex::unexpected("FUTEX_LOCK_PI on the PCP arbiter", e);
        }
        // The kernel's compare-exchange is outside the Rust memory model: order it like
        // the `SeqCst` CAS above for the Dekker pairing with fast-path re-checks.
        fence(Ordering::SeqCst);
    }

    #[cold]
    fn unlock_arbiter(&self, me: u32) {
        if self
            .arbiter
            .compare_exchange(me, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            if let Err(e) = futex::unlock_pi(&self.arbiter) {
                futex::unexpected("FUTEX_UNLOCK_PI on the PCP arbiter", e);
            }
        }
    }

    /// Releases level `c`: CAS `me -> 0`, or `FUTEX_UNLOCK_PI` if threads wait on it.
    #[inline]
    fn release(&self, c: usize, me: u32) {
        trace!("{me}: release {c}");
        if self.owner[c]
            .compare_exchange(me, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.release_slow(c);
        }
    }

    #[cold]
    #[inline(never)]
    fn release_slow(&self, c: usize) {
        if let Err(e) = futex::unlock_pi(&self.owner[c]) {
            futex::unexpected("FUTEX_UNLOCK_PI on a PCP level", e);
        }
    }
}

/// Unlinks a slow-path thread's [`Intent`] if `lock_slow` unwinds while it is linked (a
/// futex call failed: a bug), so that no other thread ever reads the dead frame.
struct IntentGuard<'a> {
    group: &'a PcpGroup,
    intent: &'a Intent,
    me: u32,
    linked: bool,
}

impl Drop for IntentGuard<'_> {
    fn drop(&mut self) {
        if !self.linked {
            return;
        }
        let held = self.group.arbiter.load(Ordering::SeqCst) & TID_MASK == self.me;
        if !held {
            // A second failure here panics during unwinding, which aborts: better than
            // leaving a dangling node for other threads to read.
            self.group.lock_arbiter(self.me);
        }
        // SAFETY: we hold the arbiter and the intent is linked.
        unsafe { self.group.unlink(self.intent) };
        if !held {
            self.group.unlock_arbiter(self.me);
        }
    }
}

impl Default for PcpGroup {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for PcpGroup {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let max = (self.max_ceiling.load(Ordering::Relaxed) as usize).min(LEVELS - 1);
        let held: Vec<(usize, u32)> = (0..=max)
            .filter_map(|l| {
                let t = self.owner[l].load(Ordering::Relaxed) & TID_MASK;
                (t != 0).then_some((l, t))
            })
            .collect();
        f.debug_struct("PcpGroup")
            .field("held_levels_tids", &held)
            .finish()
    }
}

/// A resource protected by the Priority Ceiling Protocol (see the [module docs](self)).
pub struct PcpMutex<T> {
    group: &'static PcpGroup,
    ceiling: u8,
    /// Set while locked; only the owner of the group's level `ceiling` touches it.
    locked: UnsafeCell<bool>,
    value: UnsafeCell<T>,
}

// SAFETY: `value` is only accessed by the owner of the group's level `ceiling`, one
// thread at a time (see "Why it works"), so sharing the mutex needs `T: Send` only.
unsafe impl<T: Send> Sync for PcpMutex<T> {}
// SAFETY: moving the mutex moves the `T`.
unsafe impl<T: Send> Send for PcpMutex<T> {}

/// Releases the lock on drop, including during unwinding.
struct Guard<'a, T> {
    mutex: &'a PcpMutex<T>,
    me: u32,
    claimed: bool,
}

impl<T> Drop for Guard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: we own the group's level `ceiling`, the only accessor of `locked`.
        self.mutex.locked.with_mut(|p| unsafe { *p = false });
        if self.claimed {
            self.mutex
                .group
                .release(usize::from(self.mutex.ceiling), self.me);
        }
    }
}

impl<T> PcpMutex<T> {
    /// A mutex around `value` with the given ceiling (the highest priority of its users) in
    /// `group`. `const`, so it can live in a `static`.
    ///
    /// # Panics
    ///
    /// If `ceiling > MAX_CEILING` (at compile time when used in a `static`).
    #[cfg(not(loom))]
    pub const fn new(value: T, ceiling: u8, group: &'static PcpGroup) -> Self {
        assert!(
            ceiling <= MAX_CEILING,
            "PcpMutex ceiling above MAX_CEILING (99)"
        );
        Self {
            group,
            ceiling,
            locked: UnsafeCell::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// A mutex (loom build).
    #[cfg(loom)]
    pub fn new(value: T, ceiling: u8, group: &'static PcpGroup) -> Self {
        assert!(ceiling <= MAX_CEILING, "PcpMutex ceiling above MAX_CEILING");
        Self {
            group,
            ceiling,
            locked: UnsafeCell::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// The ceiling given at construction.
    pub fn ceiling(&self) -> u8 {
        self.ceiling
    }

    /// `true` if threads sleep waiting for this mutex's ceiling level. Diagnostic (for
    /// benchmarks and tests); may be stale at once.
    pub fn has_waiters(&self) -> bool {
        self.group.owner[usize::from(self.ceiling)].load(Ordering::Relaxed) & WAITERS != 0
    }

    /// Locks the resource for a task of static priority `priority`, runs `f` on it and
    /// unlocks, also if `f` panics. Nested calls (on other mutexes of any group) are
    /// allowed and deadlock-free under PCP; this is how multi-locks are built.
    ///
    /// # Panics
    ///
    /// If `priority > self.ceiling()` (the ceiling is wrong: a task above it uses the
    /// resource), or if this thread already holds this very mutex (re-entrant lock).
    #[inline]
    pub fn lock<R>(&self, priority: u8, f: impl FnOnce(&mut T) -> R) -> R {
        let guard = self.acquire(priority);
        // SAFETY: `guard` proves that this thread owns the group's level `ceiling` and that
        // this mutex was not already locked by it, so no other reference to `value` exists
        // until the guard drops after `f` returns or unwinds.
        let result = self.value.with_mut(|p| f(unsafe { &mut *p }));
        drop(guard);
        result
    }

    #[inline(always)]
    fn acquire(&self, priority: u8) -> Guard<'_, T> {
        if priority > self.ceiling {
            priority_above_ceiling(priority, self.ceiling);
        }
        let me = futex::current_tid();
        let c = usize::from(self.ceiling);
        let claimed = self.group.acquire(usize::from(priority), c, me);
        // SAFETY: we own level `ceiling` now, the only accessor of `locked`.
        let reentered = self
            .locked
            .with_mut(|p| unsafe { core::mem::replace(&mut *p, true) });
        if reentered {
            debug_assert!(!claimed, "a locked mutex's level was free");
            reentrant_lock();
        }
        Guard {
            mutex: self,
            me,
            claimed,
        }
    }

    /// Consumes the mutex and returns the value.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T> core::fmt::Debug for PcpMutex<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PcpMutex")
            .field("ceiling", &self.ceiling)
            .finish_non_exhaustive()
    }
}

#[cold]
#[track_caller]
fn priority_above_ceiling(priority: u8, ceiling: u8) -> ! {
    panic!(
        "PcpMutex::lock: task priority {priority} is above the mutex ceiling {ceiling}; \
         the ceiling must be the highest priority of all tasks that lock the mutex"
    )
}

#[cold]
#[track_caller]
fn reentrant_lock() -> ! {
    panic!("PcpMutex::lock: this thread already holds this mutex (re-entrant lock)")
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    fn leak_group() -> &'static PcpGroup {
        Box::leak(Box::new(PcpGroup::new()))
    }

    #[test]
    fn lock_returns_value_and_releases() {
        let g = leak_group();
        let m = PcpMutex::new(5u32, 3, g);
        assert_eq!(
            m.lock(1, |v| {
                *v += 1;
                *v
            }),
            6
        );
        assert_eq!(g.holder(3), None);
        assert_eq!(m.lock(3, |v| *v), 6);
    }

    #[test]
    fn nested_same_and_different_levels() {
        let g = leak_group();
        let a = PcpMutex::new(1u32, 2, g);
        let b = PcpMutex::new(2u32, 2, g);
        let c = PcpMutex::new(3u32, 4, g);
        let me = futex::current_tid();
        let total = a.lock(1, |a| {
            assert_eq!(g.holder(2), Some(me));
            b.lock(1, |b| {
                c.lock(1, |c| {
                    assert_eq!(g.holder(4), Some(me));
                    *a + *b + *c
                })
            })
        });
        assert_eq!(total, 6);
        assert_eq!(g.holder(2), None);
        assert_eq!(g.holder(4), None);
    }

    #[test]
    fn reentrant_lock_panics_and_releases() {
        let g = leak_group();
        let m = Arc::new(PcpMutex::new(0u32, 1, g));
        let m2 = m.clone();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            m2.lock(1, |_| m2.lock(1, |_| ()));
        }));
        assert!(r.is_err());
        assert_eq!(g.holder(1), None, "the outer guard released the level");
        assert_eq!(
            m.lock(1, |v| {
                *v += 1;
                *v
            }),
            1
        );
    }

    #[test]
    #[should_panic(expected = "above the mutex ceiling")]
    fn priority_above_ceiling_panics() {
        let m = PcpMutex::new((), 2, leak_group());
        m.lock(3, |_| ());
    }

    #[test]
    fn panic_in_critical_section_releases() {
        let g = leak_group();
        let m = PcpMutex::new(0u32, 1, g);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            m.lock(1, |v| {
                *v = 7;
                panic!("task failed");
            })
        }));
        assert!(r.is_err());
        assert_eq!(g.holder(1), None);
        assert_eq!(m.lock(1, |v| *v), 7);
    }

    #[test]
    fn ceiling_blocks_a_lower_task_until_release() {
        // A holds X (ceiling 3); a priority-2 task wants Y (ceiling 2): PCP blocks it
        // (2 is not above 3) although Y is free.
        let g = leak_group();
        let x: &'static PcpMutex<u32> = Box::leak(Box::new(PcpMutex::new(0, 3, g)));
        let y: &'static PcpMutex<u32> = Box::leak(Box::new(PcpMutex::new(0, 2, g)));
        let order = Arc::new(AtomicUsize::new(0));
        x.lock(3, |_| {
            let order2 = order.clone();
            let t = std::thread::spawn(move || {
                y.lock(2, |_| order2.fetch_add(1, Ordering::SeqCst));
            });
            // The other thread must end up sleeping on our level (kernel PI), not inside Y.
            while !x.has_waiters() {
                std::thread::yield_now();
            }
            assert_eq!(order.load(Ordering::SeqCst), 0);
            order.fetch_add(10, Ordering::SeqCst);
            t
        })
        .join()
        .unwrap();
        assert_eq!(order.load(Ordering::SeqCst), 11);
    }

    #[test]
    fn independent_groups_do_not_block() {
        let g1 = leak_group();
        let g2 = leak_group();
        let a: &'static PcpMutex<u32> = Box::leak(Box::new(PcpMutex::new(0, 5, g1)));
        let b: &'static PcpMutex<u32> = Box::leak(Box::new(PcpMutex::new(0, 5, g2)));
        a.lock(1, |_| {
            // A thread using only group 2 proceeds while group 1's ceiling is 5.
            std::thread::spawn(move || b.lock(1, |v| *v += 1))
                .join()
                .unwrap();
        });
        assert_eq!(b.lock(1, |v| *v), 1);
    }
}
