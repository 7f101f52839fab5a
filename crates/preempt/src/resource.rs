//! Shared resources: how a task reaches them, and the lock path.
//!
//! The `#[preempt::app]` macro decides, per resource, how much protection it needs (see the
//! crate docs) and hands each task one proxy per resource in `cx.shared`:
//!
//! | users of the resource                          | proxy              | `lock` costs          |
//! |------------------------------------------------|--------------------|-----------------------|
//! | all at one priority (one executor thread)      | [`Exclusive`]      | nothing               |
//! | several priorities, some write                 | [`SharedMut`]      | PCP mutex (see below) |
//! | several priorities, this one reads (`&res`)    | [`SharedRef`]      | PCP mutex             |
//! | `#[lock_free]`, or everyone reads              | `&mut T` / `&T`    | no proxy at all       |
//!
//! # The lock path
//!
//! [`SharedMut::lock`] calls `preempt_sync::pcp::PcpMutex::lock` with the task's static
//! priority. The mutex implements the original Priority Ceiling Protocol on a Linux PI futex
//! (thesis §5.5.2): a task may take a resource only while its priority is above the ceilings
//! of the resources other tasks of its *group* hold; otherwise it sleeps in `FUTEX_LOCK_PI` on
//! the futex of the holder, which the kernel boosts to the waiter's priority. Uncontended, the
//! lock and the unlock are one atomic compare-and-swap each, with no system call. Groups are
//! the sets of tasks that transitively share locked resources; the macro gives each its own
//! ceiling state, so unrelated groups never block each other.
//!
//! `lock` takes `&mut self`: a task cannot lock the same resource twice (the borrow checker
//! refuses), which is what makes handing out `&mut T` sound. Nested locks of *different*
//! resources are fine and deadlock-free under PCP, and [`MultiLock2`] (up to
//! [`MultiLock8`]) does that for tuples:
//!
//! ```ignore
//! (&mut cx.shared.a, &mut cx.shared.b).lock(|a, b| *a += *b);
//! cx.shared.lock_all(|s| *s.a += *s.b);
//! ```
//!
//! A task's context holds `&mut` references to proxies that the dispatcher builds for each
//! job (`cx.shared.a: &mut SharedMut<T>`), so `cx.shared.a.lock(..)` works through an
//! immutable `cx` (RTIC v1's `fn foo(cx: foo::Context)`), and `mut cx` still compiles.
//!
//! # Measured critical sections
//!
//! With accounting on, every PCP lock is counted (how many, and the most in one job) into a
//! [`LockStats`] per (task, resource), and critical sections are timed (two time stamps
//! inside the lock, see `time::driver::stamp_ns`) where their length matters. Response-time
//! analysis takes its blocking terms from these: under PCP a task is blocked at most once,
//! by the longest critical section of a lower-priority task on a resource whose ceiling
//! reaches its priority. So:
//!
//! - a task whose priority equals the resource's ceiling blocks nobody through it: its
//!   sections are counted, never timed (`needs_timing = false`);
//! - otherwise a job's first section on the resource is timed, then one in
//!   [`DEFAULT_LOCK_SAMPLE`] (32): the 1st, 33rd, 65th, ... lock of the job. A counter
//!   read costs ~12 ns on the development VM, more than the uncontended lock+unlock itself
//!   (~6 ns); sampling keeps the default app's lock within 2x of a raw PI-futex CAS pair.
//!   `longest_ns` is then the longest *timed* section (`timed` of `locks` were), a sampled
//!   estimate, not a bound: set `PREEMPT_LOCK_SAMPLE=1` to time every section when the
//!   blocking terms must be measured exhaustively.
//!
//! Counting costs an unsampled lock one increment and one test: the proxy counts its job's
//! locks itself and hands the count to the `LockStats` in batches, on the job's first lock,
//! on each sampled one and at the end of the job (`JobLocks`; relaxed stores, no
//! read-modify-write: one writer, the task's thread). So `locks` and `max_per_job` are exact
//! once a job is over and lag by at most 31 locks while one runs.

use std::cell::{Cell, UnsafeCell};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// By default, after a job's first critical section on a resource, one in this many is
/// timed (see the module docs).
pub const DEFAULT_LOCK_SAMPLE: u32 = 32;

/// The environment variable that changes [`DEFAULT_LOCK_SAMPLE`]: `1` times every critical
/// section, a power of two N up to 1024 times one in N.
pub const LOCK_SAMPLE_ENV: &str = "PREEMPT_LOCK_SAMPLE";

/// `N - 1` for "one in N" (N a power of two).
static SAMPLE_MASK: AtomicU32 = AtomicU32::new(DEFAULT_LOCK_SAMPLE - 1);

/// Reads [`LOCK_SAMPLE_ENV`] (called by `run` before any task runs).
///
/// # Errors
/// A value that is not a power of two from 1 to 1024, with what to set instead.
pub(crate) fn configure_lock_sampling() -> Result<(), String> {
    let n = match std::env::var(LOCK_SAMPLE_ENV) {
        Err(std::env::VarError::NotPresent) => DEFAULT_LOCK_SAMPLE,
        Ok(v) => match v.trim().parse::<u32>() {
            Ok(n) if n.is_power_of_two() && n <= 1024 => n,
            _ => {
                return Err(format!(
                    "{LOCK_SAMPLE_ENV}={v:?} is not a power of two from 1 to 1024: set \
                     {LOCK_SAMPLE_ENV}=1 to time every critical section, or unset it for one \
                     in {DEFAULT_LOCK_SAMPLE}"
                ));
            }
        },
        Err(std::env::VarError::NotUnicode(v)) => {
            return Err(format!(
                "{LOCK_SAMPLE_ENV}={v:?} is not a number: set {LOCK_SAMPLE_ENV}=1 or unset it"
            ));
        }
    };
    SAMPLE_MASK.store(n - 1, Ordering::Relaxed);
    Ok(())
}

use preempt_sync::pcp::{PcpGroup, PcpMutex};

use crate::sim;
use crate::time::driver;

/// The measured critical sections of one task on one PCP-locked resource.
#[doc(hidden)]
pub struct LockStats {
    /// The resource.
    pub resource: &'static str,
    /// The task (or `idle`).
    pub task: &'static str,
    /// The task's priority (0 for `idle`).
    pub priority: u8,
    /// The resource's ceiling.
    pub ceiling: u8,
    /// Whether the sections can block another task (`priority < ceiling`), so are timed.
    pub needs_timing: bool,
    longest_ns: AtomicU64,
    timed: AtomicU64,
    max_per_job: AtomicU32,
    locks: AtomicU64,
}

impl LockStats {
    /// An empty record.
    pub const fn new(
        resource: &'static str,
        task: &'static str,
        priority: u8,
        ceiling: u8,
    ) -> Self {
        LockStats {
            resource,
            task,
            priority,
            ceiling,
            needs_timing: priority < ceiling,
            longest_ns: AtomicU64::new(0),
            timed: AtomicU64::new(0),
            max_per_job: AtomicU32::new(0),
            locks: AtomicU64::new(0),
        }
    }

    /// The longest time the task held the resource, ns.
    pub fn longest_ns(&self) -> u64 {
        self.longest_ns.load(Ordering::Relaxed)
    }

    /// The most locks of the resource in one job.
    pub fn max_per_job(&self) -> u32 {
        self.max_per_job.load(Ordering::Relaxed)
    }

    /// Locks so far.
    pub fn locks(&self) -> u64 {
        self.locks.load(Ordering::Relaxed)
    }

    /// Critical sections timed so far (all of them with `PREEMPT_LOCK_SAMPLE=1`).
    pub fn timed(&self) -> u64 {
        self.timed.load(Ordering::Relaxed)
    }

    /// Records one timed critical section (single writer: the task's executor thread).
    #[inline]
    fn record_timed(&self, held_ns: u64) {
        self.timed
            .store(self.timed.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        if held_ns > self.longest_ns.load(Ordering::Relaxed) {
            self.longest_ns.store(held_ns, Ordering::Relaxed);
        }
    }

    /// Adds `locks` locks of one job that has taken `in_job` so far (single writer: the
    /// task's executor thread).
    #[inline]
    fn record_locks(&self, locks: u32, in_job: u32) {
        self.locks.store(
            self.locks.load(Ordering::Relaxed) + u64::from(locks),
            Ordering::Relaxed,
        );
        if in_job > self.max_per_job.load(Ordering::Relaxed) {
            self.max_per_job.store(in_job, Ordering::Relaxed);
        }
    }
}

/// One proxy's count of its job's locks.
///
/// The count lives in the proxy (on the executor's stack, usually in a register), not in the
/// shared [`LockStats`]: it reaches the `LockStats` in batches (a *flush*) on the job's first
/// lock, on every sampled one (one in [`DEFAULT_LOCK_SAMPLE`]) and when the proxy is dropped
/// at the end of the job. So an unsampled lock costs one increment and one test, and the
/// statistics are complete once the job is over; while a job runs (a divergent async task's
/// never ends), a reader of the `LockStats` may miss at most the job's last `N - 1` locks.
struct JobLocks {
    stats: Option<&'static LockStats>,
    /// Locks taken through this proxy, i.e. in this job.
    count: Cell<u32>,
    /// How many of them the `LockStats` already has.
    flushed: Cell<u32>,
    /// `N - 1` for "one in N", read once per job.
    mask: u32,
}

impl JobLocks {
    #[inline(always)]
    fn new(stats: Option<&'static LockStats>) -> Self {
        JobLocks {
            stats,
            count: Cell::new(0),
            flushed: Cell::new(0),
            mask: match stats {
                Some(_) => SAMPLE_MASK.load(Ordering::Relaxed),
                None => 0,
            },
        }
    }

    /// Runs `f` under a lock already taken: counts it and, if it is the job's first or a
    /// sampled one, flushes the count and, on a resource where the section can block (see
    /// the module docs), times `f` into the `LockStats`.
    #[inline(always)]
    fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        let Some(stats) = self.stats else {
            return f();
        };
        let n = self.count.get();
        self.count.set(n + 1);
        if n & self.mask != 0 {
            return f();
        }
        self.flush(stats, n + 1);
        if stats.needs_timing {
            let start = driver::stamp_ns();
            let r = f();
            stats.record_timed(driver::stamp_ns().saturating_sub(start));
            r
        } else {
            f()
        }
    }

    /// Hands the locks counted since the last flush (`count` in the job so far) to `stats`.
    #[inline]
    fn flush(&self, stats: &LockStats, count: u32) {
        stats.record_locks(count - self.flushed.get(), count);
        self.flushed.set(count);
    }
}

impl Drop for JobLocks {
    #[inline]
    fn drop(&mut self) {
        let count = self.count.get();
        if let Some(stats) = self.stats
            && count != self.flushed.get()
        {
            self.flush(stats, count);
        }
    }
}

/// Something that can be locked to reach a value: the common interface of the proxies.
///
/// Resources live in statics, hence `T: 'static` in every implementation.
pub trait Lock {
    /// What the closure receives (`&mut T` or `&T`).
    type Target<'t>;

    /// Locks, runs `f` with the value, unlocks (also when `f` panics), returns `f`'s result.
    fn lock<R>(&mut self, f: impl FnOnce(Self::Target<'_>) -> R) -> R;
}

impl<L: Lock> Lock for &mut L {
    type Target<'t> = L::Target<'t>;

    #[inline]
    fn lock<R>(&mut self, f: impl FnOnce(Self::Target<'_>) -> R) -> R {
        (**self).lock(f)
    }
}

/// RTIC's `Mutex` trait (`rtic::Mutex`): a resource that locks to `&mut T`, for code generic
/// over resources, as RTIC apps write it (`fn advance(mut shared: impl Mutex<T = u32>)`, then
/// `shared.lock(|s: &mut u32| ..)`). Its `lock` is [`Lock::lock`]; the proxies that give
/// `&mut T` implement it ([`Exclusive`], [`SharedMut`], and `&mut` of either, which is what a
/// context holds).
pub trait Mutex: for<'t> Lock<Target<'t> = &'t mut <Self as Mutex>::T> {
    /// The resource's type.
    type T;
}

impl<M: Mutex> Mutex for &mut M {
    type T = M::T;
}

macro_rules! multi_lock {
    ($(#[$doc:meta])* $trait:ident: $($name:ident $var:ident),+) => {
        $(#[$doc])*
        ///
        /// The resources are locked one inside the other, in tuple order; the Priority
        /// Ceiling Protocol makes every order deadlock-free.
        pub trait $trait<$($name: Lock),+> {
            /// Locks every resource of the tuple and runs `f` with all of them.
            fn lock<R>(self, f: impl FnOnce($($name::Target<'_>),+) -> R) -> R;
        }

        impl<$($name: Lock),+> $trait<$($name),+> for ($($name,)+) {
            #[inline]
            fn lock<R>(self, f: impl FnOnce($($name::Target<'_>),+) -> R) -> R {
                let ($(mut $var,)+) = self;
                multi_lock!(@nest f, (), $($var),+)
            }
        }
    };
    (@nest $f:ident, ($($done:ident),*), $head:ident $(, $rest:ident)*) => {
        $head.lock(|$head| multi_lock!(@nest $f, ($($done,)* $head), $($rest),*))
    };
    (@nest $f:ident, ($($done:ident),*), ) => {
        $f($($done),*)
    };
}

multi_lock!(
    /// `(a, b).lock(|a, b| ..)`.
    MultiLock2: A a, B b
);
multi_lock!(
    /// `(a, b, c).lock(|a, b, c| ..)`.
    MultiLock3: A a, B b, C c
);
multi_lock!(
    /// Four resources at once.
    MultiLock4: A a, B b, C c, D d
);
multi_lock!(
    /// Five resources at once.
    MultiLock5: A a, B b, C c, D d, E e
);
multi_lock!(
    /// Six resources at once.
    MultiLock6: A a, B b, C c, D d, E e, G g
);
multi_lock!(
    /// Seven resources at once.
    MultiLock7: A a, B b, C c, D d, E e, G g, H h
);
multi_lock!(
    /// Eight resources at once.
    MultiLock8: A a, B b, C c, D d, E e, G g, H h, I i
);

/// A resource whose users all run on one executor thread: `lock` is free.
///
/// The proxy holds a pointer, not a reference: a reference exists only inside `lock`'s
/// closure, which cannot `.await`. An async task keeps its context (and so this proxy) across
/// `.await`, while the other tasks of its priority run and lock the same resource through
/// their own proxies; a `&mut T` held by the proxy would then alias theirs.
pub struct Exclusive<'a, T> {
    value: NonNull<T>,
    _borrow: PhantomData<&'a mut T>,
}

// SAFETY: the proxy stands for a `&'a mut T` (and is one when made by `new`), which is `Send`
// for `T: Send` and `Sync` for `T: Sync`; `from_cell`'s contract keeps every access on the
// executor thread of the resource's users.
unsafe impl<T: Send> Send for Exclusive<'_, T> {}
// SAFETY: as above; `lock` takes `&mut self`, so a shared proxy gives no access at all.
unsafe impl<T: Sync> Sync for Exclusive<'_, T> {}

impl<'a, T> Exclusive<'a, T> {
    /// Wraps exclusive access.
    #[inline(always)]
    pub fn new(value: &'a mut T) -> Self {
        Exclusive {
            value: NonNull::from(value),
            _borrow: PhantomData,
        }
    }

    /// The proxy of one job for the resource in `cell` (the generated dispatchers use it).
    ///
    /// # Safety
    /// `cell` is initialised, and every proxy or reference to its value is used on one
    /// thread, one `lock` closure at a time (the users of the resource all run on one
    /// executor thread, and their jobs do not overlap except at an async task's `.await`,
    /// where no closure runs).
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn from_cell(cell: &'static StaticCell<T>) -> Self {
        Exclusive {
            value: cell.as_ptr(),
            _borrow: PhantomData,
        }
    }

    /// Runs `f` with the value. Every user of this resource runs on this task's executor
    /// thread, one task at a time, so no lock is needed.
    #[inline(always)]
    pub fn lock<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: the pointer is valid for `'a` (`new`: a `&'a mut T`; `from_cell`: an
        // initialised static cell), and no other reference to the value is alive while `f`
        // runs (`new`: the proxy holds the only one; `from_cell`: its contract, one closure at
        // a time on one thread).
        f(unsafe { self.value.as_mut() })
    }
}

impl<T: 'static> Mutex for Exclusive<'_, T> {
    type T = T;
}

impl<T: 'static> Lock for Exclusive<'_, T> {
    type Target<'t> = &'t mut T;

    #[inline(always)]
    fn lock<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        Exclusive::lock(self, f)
    }
}

/// Read-only [`Exclusive`] access (a pointer too, for the same reason).
pub struct ExclusiveRef<'a, T> {
    value: NonNull<T>,
    _borrow: PhantomData<&'a T>,
}

// SAFETY: the proxy stands for a `&'a T`, which is `Send` and `Sync` for `T: Sync`.
unsafe impl<T: Sync> Send for ExclusiveRef<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for ExclusiveRef<'_, T> {}

impl<'a, T> ExclusiveRef<'a, T> {
    /// Wraps shared access.
    #[inline(always)]
    pub fn new(value: &'a T) -> Self {
        ExclusiveRef {
            value: NonNull::from(value),
            _borrow: PhantomData,
        }
    }

    /// The read-only proxy of one job for the resource in `cell`.
    ///
    /// # Safety
    /// As for [`Exclusive::from_cell`].
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn from_cell(cell: &'static StaticCell<T>) -> Self {
        ExclusiveRef {
            value: cell.as_ptr(),
            _borrow: PhantomData,
        }
    }

    /// Runs `f` with the value (no lock needed, see [`Exclusive::lock`]).
    #[inline(always)]
    pub fn lock<R>(&mut self, f: impl FnOnce(&T) -> R) -> R {
        // SAFETY: valid for `'a` (`new`: a `&'a T`; `from_cell`: an initialised static cell),
        // and no `&mut` to the value is alive while `f` runs (`new`: the borrow; `from_cell`:
        // its contract, one closure at a time on one thread).
        f(unsafe { self.value.as_ref() })
    }
}

impl<T: 'static> Lock for ExclusiveRef<'_, T> {
    type Target<'t> = &'t T;

    #[inline(always)]
    fn lock<R>(&mut self, f: impl FnOnce(&T) -> R) -> R {
        ExclusiveRef::lock(self, f)
    }
}

/// A resource shared across priorities, locked under the Priority Ceiling Protocol.
///
/// `TIMED` is the app's `accounting`: a compile-time constant, so that a task's code is
/// specialised for it whether or not the task is inlined into its dispatcher.
pub struct SharedMut<'a, T: 'static, const TIMED: bool = true> {
    cell: &'static PcpCell<T>,
    priority: u8,
    /// The job's locks, counted into the resource's `LockStats` when measured.
    job: JobLocks,
    _task: PhantomData<&'a mut T>,
}

impl<T: Send + 'static, const TIMED: bool> SharedMut<'_, T, TIMED> {
    /// The proxy of a task at `priority` for one job, measuring into `stats` if given.
    ///
    /// # Safety
    /// `cell` has been initialised ([`PcpCell::write`]), `priority` is the static priority of
    /// the executor thread that will call `lock`, and at most one proxy per task exists.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn new(
        cell: &'static PcpCell<T>,
        priority: u8,
        stats: Option<&'static LockStats>,
    ) -> Self {
        SharedMut {
            cell,
            priority,
            job: JobLocks::new(stats),
            _task: PhantomData,
        }
    }

    /// Locks the resource, runs `f`, unlocks (also if `f` panics). Uncontended this is two
    /// atomic operations and no system call.
    #[inline]
    pub fn lock<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        let job = &self.job;
        // SAFETY: `new`'s contract says the cell is initialised.
        unsafe {
            if TIMED {
                self.cell.lock(self.priority, |v| job.run(|| f(v)))
            } else {
                self.cell.lock(self.priority, f)
            }
        }
    }
}

impl<T: Send + 'static, const TIMED: bool> Mutex for SharedMut<'_, T, TIMED> {
    type T = T;
}

impl<T: Send + 'static, const TIMED: bool> Lock for SharedMut<'_, T, TIMED> {
    type Target<'t> = &'t mut T;

    #[inline]
    fn lock<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        SharedMut::lock(self, f)
    }
}

/// Read-only access to a resource that other tasks write: still locked (PCP).
pub struct SharedRef<'a, T: 'static, const TIMED: bool = true> {
    cell: &'static PcpCell<T>,
    priority: u8,
    job: JobLocks,
    _task: PhantomData<&'a T>,
}

impl<T: Send + 'static, const TIMED: bool> SharedRef<'_, T, TIMED> {
    /// The proxy of a task at `priority` for one job.
    ///
    /// # Safety
    /// As for [`SharedMut::new`].
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn new(
        cell: &'static PcpCell<T>,
        priority: u8,
        stats: Option<&'static LockStats>,
    ) -> Self {
        SharedRef {
            cell,
            priority,
            job: JobLocks::new(stats),
            _task: PhantomData,
        }
    }

    /// Locks the resource and runs `f` with a shared reference.
    #[inline]
    pub fn lock<R>(&mut self, f: impl FnOnce(&T) -> R) -> R {
        let job = &self.job;
        // SAFETY: `new`'s contract says the cell is initialised.
        unsafe {
            if TIMED {
                self.cell.lock(self.priority, |v| job.run(|| f(v)))
            } else {
                self.cell.lock(self.priority, |v| f(v))
            }
        }
    }
}

impl<T: Send + 'static, const TIMED: bool> Lock for SharedRef<'_, T, TIMED> {
    type Target<'t> = &'t T;

    #[inline]
    fn lock<R>(&mut self, f: impl FnOnce(&T) -> R) -> R {
        SharedRef::lock(self, f)
    }
}

/// Static storage for a resource that needs no lock (one executor, `#[lock_free]`, read-only
/// or local): written once by `init`, then reached through `&`/`&mut` handed out by the
/// generated code.
#[doc(hidden)]
pub struct StaticCell<T> {
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the generated code hands out `&mut T` to one thread at a time only (the single
// executor thread of the resource's users, or `init` before any executor starts), which is
// what `T: Send` allows. Read-only sharing across threads additionally asserts `T: Sync`
// where the macro generates it (`assert_sync`).
unsafe impl<T: Send> Sync for StaticCell<T> {}

impl<T> StaticCell<T> {
    /// An empty cell, to be written by `init`.
    pub const fn uninit() -> Self {
        StaticCell {
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// A cell holding `value` (declared local resources).
    pub const fn new(value: T) -> Self {
        StaticCell {
            value: UnsafeCell::new(MaybeUninit::new(value)),
        }
    }

    /// Initialises the cell.
    ///
    /// # Safety
    /// Called once, before any reference to the value exists (the generated `run` calls it
    /// right after `init`, before starting executors).
    pub unsafe fn write(&'static self, value: T) {
        // SAFETY: no reference to the content exists (contract), so writing through the
        // UnsafeCell's pointer aliases nothing.
        unsafe { (*self.value.get()).write(value) };
    }

    /// Exclusive access.
    ///
    /// # Safety
    /// The cell is initialised and no other reference to its content is alive while the
    /// returned one is (the macro gives each cell to one executor thread or one context).
    #[allow(clippy::mut_from_ref, reason = "exclusivity is the caller's contract")]
    pub unsafe fn get_mut(&'static self) -> &'static mut T {
        // SAFETY: initialised and unaliased per the contract.
        unsafe { (*self.value.get()).assume_init_mut() }
    }

    /// Shared access.
    ///
    /// # Safety
    /// The cell is initialised and nobody holds a `&mut` to its content.
    pub unsafe fn get(&'static self) -> &'static T {
        // SAFETY: initialised and not mutably aliased per the contract.
        unsafe { (*self.value.get()).assume_init_ref() }
    }

    /// A pointer to the value (initialised or not), made without a reference, for proxies
    /// that make one only while they lock ([`Exclusive::from_cell`]).
    pub fn as_ptr(&'static self) -> NonNull<T> {
        // SAFETY: `UnsafeCell::get` is never null; `MaybeUninit<T>` has `T`'s layout.
        unsafe { NonNull::new_unchecked(self.value.get().cast::<T>()) }
    }
}

/// Static storage for a resource locked under PCP.
#[doc(hidden)]
pub struct PcpCell<T> {
    mutex: PcpMutex<MaybeUninit<T>>,
    ceiling: u8,
}

impl<T: Send> PcpCell<T> {
    /// An empty cell with its ceiling and group.
    pub const fn new(ceiling: u8, group: &'static PcpGroup) -> Self {
        PcpCell {
            mutex: PcpMutex::new(MaybeUninit::uninit(), ceiling, group),
            ceiling,
        }
    }

    /// Initialises the cell.
    ///
    /// # Safety
    /// Called once, before any task runs.
    pub unsafe fn write(&'static self, value: T) {
        // The ceiling is a valid priority for any lock of this resource.
        self.mutex.lock(self.ceiling, |slot| {
            slot.write(value);
        });
    }

    /// Locks at `priority` and runs `f`.
    ///
    /// # Safety
    /// The cell is initialised.
    #[inline]
    pub unsafe fn lock<R>(&'static self, priority: u8, f: impl FnOnce(&mut T) -> R) -> R {
        // The simulator runs every level on one thread: no preemption while a lock is held.
        let _sim = sim::LockGuard::enter();
        self.mutex.lock(priority, |slot| {
            // SAFETY: initialised per the contract; the mutex makes this access exclusive.
            f(unsafe { slot.assume_init_mut() })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_lock_spreads_arguments_and_nests() {
        static A: StaticCell<u32> = StaticCell::new(1);
        static B: StaticCell<u64> = StaticCell::new(2);
        static C: StaticCell<u8> = StaticCell::new(3);
        // SAFETY: this test is the only user of the three cells.
        let (a, b, c) = unsafe { (A.get_mut(), B.get_mut(), C.get()) };
        let mut pa = Exclusive::new(a);
        let mut pb = Exclusive::new(b);
        let mut pc = ExclusiveRef::new(c);
        let sum = (&mut pa, &mut pb, &mut pc).lock(|a, b, c| {
            *a += 10;
            *b += 20;
            u64::from(*a) + *b + u64::from(*c)
        });
        assert_eq!(sum, 11 + 22 + 3);
        (pa, pb).lock(|a, b| {
            *a += 1;
            *b += 1;
        });
        // SAFETY: the proxies are gone.
        assert_eq!(unsafe { (*A.get(), *B.get()) }, (12, 23));
    }

    #[test]
    fn job_locks_reach_the_stats_in_batches_and_completely_at_the_end_of_the_job() {
        static CAN_BLOCK: LockStats = LockStats::new("r", "low", 1, 2);
        static AT_CEILING: LockStats = LockStats::new("r", "high", 2, 2);
        // One in 32 (the default; nothing in this test binary changes it).
        assert_eq!(SAMPLE_MASK.load(Ordering::Relaxed), DEFAULT_LOCK_SAMPLE - 1);
        for stats in [&CAN_BLOCK, &AT_CEILING] {
            let job = JobLocks::new(Some(stats));
            for i in 0..100u32 {
                assert_eq!(job.run(|| i * 2), i * 2);
            }
            // Flushed on the 1st, 33rd, 65th and 97th lock: three are not in yet.
            assert_eq!((stats.locks(), stats.max_per_job()), (97, 97));
            drop(job);
            assert_eq!((stats.locks(), stats.max_per_job()), (100, 100));
            let job = JobLocks::new(Some(stats));
            for _ in 0..3 {
                job.run(|| ());
            }
            drop(job);
            // A second, shorter job adds its locks and leaves the most per job alone.
            assert_eq!((stats.locks(), stats.max_per_job()), (103, 100));
            // A job without locks changes nothing.
            drop(JobLocks::new(Some(stats)));
            assert_eq!(stats.locks(), 103);
        }
        // Timed where the section can block: the 1st, 33rd, 65th, 97th of the first job and
        // the 1st of the second; never at the ceiling.
        assert_eq!(CAN_BLOCK.timed(), 5);
        assert_eq!(AT_CEILING.timed(), 0);
    }

    #[test]
    fn static_cell_round_trip() {
        static CELL: StaticCell<Vec<u8>> = StaticCell::uninit();
        static DECLARED: StaticCell<u32> = StaticCell::new(7);
        // SAFETY: this test is the only user of CELL and DECLARED.
        unsafe {
            CELL.write(vec![1, 2]);
            CELL.get_mut().push(3);
            assert_eq!(CELL.get(), &[1, 2, 3]);
            assert_eq!(*DECLARED.get(), 7);
        }
    }
}
