//! Raw Linux futex system calls on an `AtomicU32`, with every return value checked.
//!
//! These are thin, *raw* wrappers: each function is exactly one `futex(2)` call (plus a
//! retry where the kernel asks for one). The user-space fast paths (for example the CAS
//! `0 -> tid` that takes a free PI futex without entering the kernel) belong to the
//! callers, [`crate::event`] and [`crate::pcp`].
//!
//! All operations use `FUTEX_PRIVATE_FLAG` (the word is never shared between processes),
//! and all deadlines are **absolute `CLOCK_MONOTONIC` nanoseconds**, as everywhere in
//! preempt, so a loop that waits for "the next period" cannot drift.
//!
//! | function      | operation                                   | timeout clock            |
//! |---------------|---------------------------------------------|--------------------------|
//! | [`wait`]      | `FUTEX_WAIT_BITSET` (bitset = all)          | absolute monotonic       |
//! | [`wake`]      | `FUTEX_WAKE`                                | -                        |
//! | [`lock_pi`]   | `FUTEX_LOCK_PI2`, on `ENOSYS` `FUTEX_LOCK_PI` | absolute monotonic (PI2) |
//! | [`trylock_pi`]| `FUTEX_TRYLOCK_PI`                          | -                        |
//! | [`unlock_pi`] | `FUTEX_UNLOCK_PI`                           | -                        |
//!
//! `FUTEX_LOCK_PI` measures its timeout on `CLOCK_REALTIME` (futex(2), "FUTEX_LOCK_PI");
//! `FUTEX_LOCK_PI2` (Linux 5.14) on `CLOCK_MONOTONIC`. On a kernel without `LOCK_PI2` a
//! deadline is converted once to the realtime clock right before the call and the fallback
//! is remembered for the rest of the process.
//!
//! # PI futex word
//!
//! A PI futex word holds the owner's thread id (`gettid`) in [`TID_MASK`], plus
//! [`WAITERS`], set by the kernel while threads sleep on it (then the owner must release
//! it with [`unlock_pi`], because the user-space CAS `tid -> 0` fails), and [`OWNER_DIED`]
//! (robust futexes only; this crate never registers a robust list).
//!
//! # Under loom
//!
//! `cfg(loom)` swaps in a model with the same signatures: waiters really block
//! (`loom::thread::park`) until a matching [`wake`]/[`unlock_pi`], the value check and the
//! enqueue are atomic with respect to wakers (as under the kernel's hash-bucket lock),
//! [`unlock_pi`] hands the word to a waiter and sets [`WAITERS`] exactly like the kernel's
//! `wake_futex_pi`. A lost wake-up therefore shows up as a loom deadlock. Deadlines are not
//! modelled: a wait with a deadline may return [`Wait::TimedOut`] at once.
//!
//! # Example
//!
//! ```
//! use std::sync::atomic::AtomicU32;
//! use preempt_sync::futex::{self, Wait};
//!
//! let word = AtomicU32::new(1);
//! // The value is not the expected one: the kernel returns at once.
//! assert_eq!(futex::wait(&word, 0, None).unwrap(), Wait::ValueChanged);
//! assert_eq!(futex::wake(&word, 1).unwrap(), 0); // nobody was waiting
//! ```

use crate::loom::sync::atomic::AtomicU32;
use std::io;

/// Thread-id bits of a PI futex word (`FUTEX_TID_MASK`, include/uapi/linux/futex.h).
pub const TID_MASK: u32 = 0x3fff_ffff;
/// Set by the kernel while threads wait on a PI futex (`FUTEX_WAITERS`).
pub const WAITERS: u32 = 0x8000_0000;
/// Set by the kernel for robust futexes whose owner died (`FUTEX_OWNER_DIED`).
pub const OWNER_DIED: u32 = 0x4000_0000;

/// Outcome of [`wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Returned after a wake-up (which may be spurious: re-check the condition).
    Woken,
    /// The word did not hold the expected value (`EAGAIN`): nothing slept.
    ValueChanged,
    /// The absolute deadline passed (`ETIMEDOUT`).
    TimedOut,
    /// A signal handler ran (`EINTR`).
    Interrupted,
}

#[cfg(not(loom))]
pub use real::*;

#[cfg(loom)]
pub use model::*;

#[cfg(not(loom))]
mod real {
    use super::{AtomicU32, Wait};
    use std::cell::Cell;
    use std::io;
    use std::sync::atomic::{AtomicBool, Ordering};

    // Operation codes from include/uapi/linux/futex.h. `libc` exports most of them but not
    // `FUTEX_LOCK_PI2` for glibc targets, so all are spelled here with their kernel names.
    const FUTEX_WAKE: libc::c_int = 1;
    const FUTEX_LOCK_PI: libc::c_int = 6;
    const FUTEX_UNLOCK_PI: libc::c_int = 7;
    const FUTEX_TRYLOCK_PI: libc::c_int = 8;
    const FUTEX_WAIT_BITSET: libc::c_int = 9;
    const FUTEX_LOCK_PI2: libc::c_int = 13;
    const FUTEX_PRIVATE_FLAG: libc::c_int = 128;
    const FUTEX_BITSET_MATCH_ANY: u32 = u32::MAX;

    /// Set once `FUTEX_LOCK_PI2` returned `ENOSYS` (kernel older than 5.14).
    static NO_LOCK_PI2: AtomicBool = AtomicBool::new(false);

    fn timespec(ns: u64) -> io::Result<libc::timespec> {
        let secs = libc::time_t::try_from(ns / 1_000_000_000).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("futex deadline {ns} ns does not fit in time_t"),
            )
        })?;
        let nanos =
            libc::c_long::try_from(ns % 1_000_000_000).expect("a value below 10^9 fits in c_long");
        Ok(libc::timespec {
            tv_sec: secs,
            tv_nsec: nanos,
        })
    }

    /// One `futex(2)` call. Returns the non-negative result or the `errno` error.
    ///
    /// The call goes to the kernel directly ([`raw_futex`]), not through libc's variadic
    /// `syscall()`: the futex calls are the framework's own real-time path (the doorbell's
    /// wake and park, the PCP slow path), and a program that links preempt's real-time
    /// safety interposers (`preempt_io::sys::interpose`) would otherwise pay their check on
    /// every one, with the checks off too (about 50 instructions per call, measured by
    /// `scripts/icount.sh`). What the interposer learnt from preempt's own `FUTEX_LOCK_PI`
    /// (why a job's voluntary context switch happened) comes from [`pi_lock_calls`].
    ///
    /// # Safety
    ///
    /// `timeout` is null or points to a valid `timespec` for the duration of the call, and
    /// `op` is one whose remaining arguments (`uaddr2`, `val3`) are unused or valid as given.
    #[inline]
    unsafe fn futex(
        word: &AtomicU32,
        op: libc::c_int,
        val: u32,
        timeout: *const libc::timespec,
        val3: u32,
    ) -> io::Result<libc::c_long> {
        let counted = op != FUTEX_WAIT_BITSET && FRAMEWORK_SWITCHES.with(|c| c.get().is_some());
        let before = if counted { voluntary_switches() } else { 0 };
        // SAFETY: `word.as_ptr()` is a valid, aligned u32 that lives as long as the borrow
        // (the kernel only accesses it during the call); `timeout` is valid or null by this
        // function's contract; `uaddr2` is null and unused by every op used in this module.
        let rc = unsafe {
            raw_futex(
                word.as_ptr(),
                op | FUTEX_PRIVATE_FLAG,
                val,
                timeout,
                std::ptr::null(),
                val3,
            )
        };
        if counted {
            let n = voluntary_switches().saturating_sub(before);
            FRAMEWORK_SWITCHES.with(|c| c.set(c.get().map(|t| t.wrapping_add(n))));
        }
        if rc < 0 {
            // The kernel returns -errno; `rc` is in -4095..=-1.
            Err(io::Error::from_raw_os_error(-rc as i32))
        } else {
            Ok(rc)
        }
    }

    /// `futex(2)` straight to the kernel: the `syscall` instruction on x86-64, `svc #0` on
    /// arm64, libc's `syscall()` elsewhere. Returns the kernel's value: -errno on failure.
    ///
    /// # Safety
    ///
    /// The kernel's contract for `futex(2)` with these arguments.
    #[inline]
    unsafe fn raw_futex(
        uaddr: *mut u32,
        op: libc::c_int,
        val: u32,
        timeout: *const libc::timespec,
        uaddr2: *const u32,
        val3: u32,
    ) -> libc::c_long {
        let rc: libc::c_long;
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        // SAFETY: the x86-64 Linux system call convention (arch/x86/entry/entry_64.S):
        // number in rax, arguments in rdi, rsi, rdx, r10, r8, r9, result in rax; the
        // instruction overwrites rcx and r11 and nothing else, and the kernel restores the
        // flags from r11. No stack is used. Memory is not declared untouched: the kernel
        // reads and writes the futex word and reads the timeout.
        unsafe {
            std::arch::asm!(
                "syscall",
                inlateout("rax") libc::SYS_futex => rc,
                in("rdi") uaddr,
                in("rsi") op as libc::c_long,
                in("rdx") val as libc::c_long,
                in("r10") timeout,
                in("r8") uaddr2,
                in("r9") val3 as libc::c_long,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack, preserves_flags),
            );
        }
        #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
        // SAFETY: the arm64 Linux system call convention (arch/arm64/kernel/entry.S): number
        // in x8, arguments in x0..x5, result in x0; every other register is preserved. No
        // stack is used. Memory is not declared untouched: the kernel reads and writes the
        // futex word and reads the timeout.
        unsafe {
            std::arch::asm!(
                "svc #0",
                in("x8") libc::SYS_futex,
                inlateout("x0") uaddr as libc::c_long => rc,
                in("x1") op as libc::c_long,
                in("x2") val as libc::c_long,
                in("x3") timeout,
                in("x4") uaddr2,
                in("x5") val3 as libc::c_long,
                options(nostack),
            );
        }
        #[cfg(not(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        )))]
        {
            // SAFETY: the caller's contract is the kernel's for these arguments.
            let r =
                unsafe { libc::syscall(libc::SYS_futex, uaddr, op, val, timeout, uaddr2, val3) };
            rc = if r < 0 {
                -libc::c_long::from(
                    io::Error::last_os_error()
                        .raw_os_error()
                        .unwrap_or(libc::EINVAL),
                )
            } else {
                r
            };
        }
        rc
    }

    thread_local! {
        /// `FUTEX_LOCK_PI`/`FUTEX_LOCK_PI2` calls made by this thread (wrapping).
        static PI_LOCK_CALLS: Cell<u32> = const { Cell::new(0) };
    }

    thread_local! {
        /// While `Some`: the voluntary context switches this thread made inside the futex
        /// calls of [`lock_pi`], [`trylock_pi`], [`unlock_pi`] and [`wake`] (not [`wait`]).
        static FRAMEWORK_SWITCHES: Cell<Option<u64>> = const { Cell::new(None) };
    }

    /// `getrusage(RUSAGE_THREAD)`'s voluntary context switches of this thread (0 if the
    /// call fails, which it cannot for the calling thread).
    fn voluntary_switches() -> u64 {
        // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable `rusage` for the duration of the call.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
            return 0;
        }
        u64::try_from(usage.ru_nvcsw).unwrap_or(0)
    }

    /// Starts counting, on this thread, the voluntary context switches made inside
    /// preempt-sync's lock, unlock and wake calls ([`framework_switches`]): two
    /// `getrusage` per such call from then on. For a real-time safety check, which must tell
    /// a job's own blocking from the framework's: the PCP slow path's `FUTEX_LOCK_PI` may
    /// sleep and be woken more than once in the kernel (the rt_mutex's wake-ups as waiters
    /// and owners change), and on PREEMPT_RT the kernel's own locks inside any futex call
    /// are sleeping locks, so counting calls does not count switches. [`wait`] is never
    /// counted: a job that waits is blocking, whoever provides the wait.
    pub fn count_framework_switches() {
        FRAMEWORK_SWITCHES.with(|c| {
            if c.get().is_none() {
                c.set(Some(0));
            }
        });
    }

    /// The voluntary context switches counted since [`count_framework_switches`] on this
    /// thread (wrapping; 0 if never started).
    #[inline]
    pub fn framework_switches() -> u64 {
        FRAMEWORK_SWITCHES.with(|c| c.get().unwrap_or(0))
    }

    /// How many times this thread entered the kernel to take a PI futex ([`lock_pi`]),
    /// wrapping. Each may have slept: a real-time safety check that sees a voluntary
    /// context switch in a job subtracts the calls made meanwhile (the PCP slow path is the
    /// framework's own, bounded wait, not a finding).
    #[inline]
    pub fn pi_lock_calls() -> u32 {
        PI_LOCK_CALLS.with(Cell::get)
    }

    /// Sleeps while `*word == expected`, until a [`wake`], a signal or the absolute
    /// `CLOCK_MONOTONIC` deadline (`None` = no deadline). `FUTEX_WAIT_BITSET`.
    ///
    /// Returns `Ok` for the four normal outcomes; `Err` only for errors that indicate a
    /// bug or an invalid deadline (`EINVAL`, `EFAULT`).
    pub fn wait(word: &AtomicU32, expected: u32, deadline_ns: Option<u64>) -> io::Result<Wait> {
        let ts = deadline_ns.map(timespec).transpose()?;
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `ts_ptr` is null or points to `ts`, alive for the call; WAIT_BITSET uses
        // val3 as the bitset and ignores uaddr2.
        let r = unsafe {
            futex(
                word,
                FUTEX_WAIT_BITSET,
                expected,
                ts_ptr,
                FUTEX_BITSET_MATCH_ANY,
            )
        };
        match r {
            Ok(_) => Ok(Wait::Woken),
            Err(e) => match e.raw_os_error() {
                Some(libc::EAGAIN) => Ok(Wait::ValueChanged),
                Some(libc::ETIMEDOUT) => Ok(Wait::TimedOut),
                Some(libc::EINTR) => Ok(Wait::Interrupted),
                _ => Err(e),
            },
        }
    }

    /// Wakes up to `count` threads sleeping in [`wait`] on `word`; returns how many woke.
    pub fn wake(word: &AtomicU32, count: u32) -> io::Result<u32> {
        let count = count.min(i32::MAX as u32);
        // SAFETY: FUTEX_WAKE ignores timeout, uaddr2 and val3.
        let woken = unsafe { futex(word, FUTEX_WAKE, count, std::ptr::null(), 0) }?;
        u32::try_from(woken).map_err(|_| io::Error::other("FUTEX_WAKE returned a bad count"))
    }

    /// Takes the PI futex `word` in the kernel: sleeps (lending this thread's priority to
    /// the owner named in the word) until the owner releases it to us. `FUTEX_LOCK_PI2`.
    ///
    /// Call it after the user-space CAS `0 -> current_tid()` failed. On success the word
    /// holds our tid (with [`WAITERS`](super::WAITERS) if others still wait). A passed deadline gives
    /// `Err` of kind [`io::ErrorKind::TimedOut`]; `EDEADLK` (we own it already) and
    /// `ESRCH` (the owner tid does not exist) are returned as errors.
    pub fn lock_pi(word: &AtomicU32, deadline_ns: Option<u64>) -> io::Result<()> {
        PI_LOCK_CALLS.with(|c| c.set(c.get().wrapping_add(1)));
        loop {
            let r = if NO_LOCK_PI2.load(Ordering::Relaxed) {
                lock_pi_realtime(word, deadline_ns)
            } else {
                let ts = deadline_ns.map(timespec).transpose()?;
                let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
                // SAFETY: `ts_ptr` is null or points to `ts`; LOCK_PI2 ignores uaddr2/val3.
                let r = unsafe { futex(word, FUTEX_LOCK_PI2, 0, ts_ptr, 0) };
                if matches!(&r, Err(e) if e.raw_os_error() == Some(libc::ENOSYS)) {
                    NO_LOCK_PI2.store(true, Ordering::Relaxed);
                    continue;
                }
                r
            };
            match r {
                Ok(_) => return Ok(()),
                // EINTR: the kernel restarts LOCK_PI itself, but a restart can still
                // surface on some paths. EAGAIN: the owner is exiting; the kernel asks us
                // to retry (futex(2), "EAGAIN (FUTEX_LOCK_PI ...)").
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN)) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// `FUTEX_LOCK_PI` with the monotonic deadline converted to `CLOCK_REALTIME`.
    pub(super) fn lock_pi_realtime(
        word: &AtomicU32,
        deadline_ns: Option<u64>,
    ) -> io::Result<libc::c_long> {
        let ts = match deadline_ns {
            None => None,
            Some(deadline) => {
                let mono = crate::clock::read_ns(libc::CLOCK_MONOTONIC)?;
                let real = crate::clock::read_ns(libc::CLOCK_REALTIME)?;
                Some(timespec(
                    real.saturating_add(deadline.saturating_sub(mono)),
                )?)
            }
        };
        let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
        // SAFETY: `ts_ptr` is null or points to `ts`; LOCK_PI ignores uaddr2/val3.
        unsafe { futex(word, FUTEX_LOCK_PI, 0, ts_ptr, 0) }
    }

    /// Tries to take the PI futex in the kernel without sleeping (`FUTEX_TRYLOCK_PI`).
    /// `Ok(true)`: now owned by us; `Ok(false)`: owned by another thread.
    pub fn trylock_pi(word: &AtomicU32) -> io::Result<bool> {
        loop {
            // SAFETY: TRYLOCK_PI ignores timeout, uaddr2 and val3.
            match unsafe { futex(word, FUTEX_TRYLOCK_PI, 0, std::ptr::null(), 0) } {
                Ok(_) => return Ok(true),
                // EWOULDBLOCK (= EAGAIN on Linux): held by someone else.
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => return Ok(false),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Releases a PI futex owned by this thread in the kernel (`FUTEX_UNLOCK_PI`): hands it
    /// to the highest-priority waiter, or stores 0 if none. `EPERM` if we do not own it.
    pub fn unlock_pi(word: &AtomicU32) -> io::Result<()> {
        loop {
            // SAFETY: UNLOCK_PI ignores timeout, uaddr2 and val3.
            match unsafe { futex(word, FUTEX_UNLOCK_PI, 0, std::ptr::null(), 0) } {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err(e),
            }
        }
    }

    thread_local! {
        static TID: Cell<u32> = const { Cell::new(0) };
    }

    /// This thread's kernel thread id (`gettid`), as stored in PI futex words. Cached in a
    /// thread-local after the first call, so it costs a TLS read.
    #[inline]
    pub fn current_tid() -> u32 {
        TID.with(|cell| {
            let tid = cell.get();
            if tid != 0 {
                return tid;
            }
            let tid = fetch_tid();
            cell.set(tid);
            tid
        })
    }

    #[cold]
    fn fetch_tid() -> u32 {
        // SAFETY: gettid has no preconditions and cannot fail.
        let raw = unsafe { libc::gettid() };
        let tid = u32::try_from(raw).expect("gettid returned a negative thread id");
        assert!(
            tid != 0 && tid & !super::TID_MASK == 0,
            "thread id {tid} does not fit in a PI futex word"
        );
        tid
    }
}

#[cfg(loom)]
mod model {
    //! The loom model of the futex calls (see the module docs).
    use super::{AtomicU32, TID_MASK, WAITERS, Wait};
    use crate::loom::sync::Mutex;
    use crate::loom::sync::atomic::Ordering::SeqCst;
    use crate::loom::thread;
    use std::io;

    struct Sleeper {
        addr: usize,
        tid: u32,
        /// Set when a waker removed us from the queue (the wake-up is real).
        woken: std::sync::Arc<std::sync::atomic::AtomicBool>,
        thread: thread::Thread,
    }

    loom::lazy_static! {
        static ref QUEUE: Mutex<Vec<Sleeper>> = Mutex::new(Vec::new());
    }

    fn addr(word: &AtomicU32) -> usize {
        word as *const AtomicU32 as usize
    }

    fn sleep(word: &AtomicU32, tid: u32, queue: loom::sync::MutexGuard<'_, Vec<Sleeper>>) {
        let mut queue = queue;
        let woken = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        queue.push(Sleeper {
            addr: addr(word),
            tid,
            woken: woken.clone(),
            thread: thread::current(),
        });
        drop(queue);
        while !woken.load(std::sync::atomic::Ordering::SeqCst) {
            thread::park();
        }
    }

    /// Model of `FUTEX_WAIT_BITSET`; a deadline makes it time out at once.
    pub fn wait(word: &AtomicU32, expected: u32, deadline_ns: Option<u64>) -> io::Result<Wait> {
        let queue = QUEUE.lock().unwrap();
        if word.load(SeqCst) != expected {
            return Ok(Wait::ValueChanged);
        }
        if deadline_ns.is_some() {
            drop(queue);
            thread::yield_now();
            return Ok(Wait::TimedOut);
        }
        sleep(word, current_tid(), queue);
        Ok(Wait::Woken)
    }

    /// Model of `FUTEX_WAKE`.
    pub fn wake(word: &AtomicU32, count: u32) -> io::Result<u32> {
        let mut queue = QUEUE.lock().unwrap();
        let mut woken = 0;
        while woken < count {
            let Some(i) = queue.iter().position(|s| s.addr == addr(word)) else {
                break;
            };
            let s = queue.remove(i);
            s.woken.store(true, std::sync::atomic::Ordering::SeqCst);
            s.thread.unpark();
            woken += 1;
        }
        Ok(woken)
    }

    /// Model of `FUTEX_LOCK_PI2`: acquire if free, else set `WAITERS` and sleep until
    /// [`unlock_pi`] hands the word over. Deadlines are ignored (never times out).
    pub fn lock_pi(word: &AtomicU32, _deadline_ns: Option<u64>) -> io::Result<()> {
        PI_LOCK_CALLS.with(|c| c.set(c.get().wrapping_add(1)));
        let me = current_tid();
        loop {
            let queue = QUEUE.lock().unwrap();
            let cur = word.load(SeqCst);
            if cur & TID_MASK == 0 {
                if word
                    .compare_exchange(cur, me | (cur & WAITERS), SeqCst, SeqCst)
                    .is_ok()
                {
                    return Ok(());
                }
                continue;
            }
            if cur & TID_MASK == me {
                return Err(io::Error::from_raw_os_error(libc::EDEADLK));
            }
            if word
                .compare_exchange(cur, cur | WAITERS, SeqCst, SeqCst)
                .is_err()
            {
                continue;
            }
            sleep(word, me, queue);
            if word.load(SeqCst) & TID_MASK == me {
                return Ok(());
            }
        }
    }

    /// Model of `FUTEX_TRYLOCK_PI`.
    pub fn trylock_pi(word: &AtomicU32) -> io::Result<bool> {
        let _queue = QUEUE.lock().unwrap();
        let cur = word.load(SeqCst);
        if cur & TID_MASK == 0 {
            Ok(word
                .compare_exchange(cur, current_tid() | (cur & WAITERS), SeqCst, SeqCst)
                .is_ok())
        } else {
            Ok(false)
        }
    }

    /// Loom only: [`unlock_pi`] hands over to the newest waiter instead of the oldest. The
    /// kernel picks the highest-priority waiter (FIFO among equals); loom threads have no
    /// priority, so models run once with each order to cover both ends of the queue.
    #[doc(hidden)]
    pub static HAND_OVER_TO_NEWEST: std::sync::atomic::AtomicBool =
        std::sync::atomic::AtomicBool::new(false);

    /// Loom only: how many threads sleep on `word` now (in [`lock_pi`] or [`wait`]).
    #[doc(hidden)]
    pub fn sleepers(word: &AtomicU32) -> usize {
        let queue = QUEUE.lock().unwrap();
        queue.iter().filter(|s| s.addr == addr(word)).count()
    }

    /// Model of `FUTEX_UNLOCK_PI`: hand over to the oldest waiter (or the newest, see
    /// [`HAND_OVER_TO_NEWEST`]) with `WAITERS` set, or free it.
    pub fn unlock_pi(word: &AtomicU32) -> io::Result<()> {
        let me = current_tid();
        let mut queue = QUEUE.lock().unwrap();
        let cur = word.load(SeqCst);
        if cur & TID_MASK != me {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        let mine = |s: &Sleeper| s.addr == addr(word);
        let pick = if HAND_OVER_TO_NEWEST.load(std::sync::atomic::Ordering::Relaxed) {
            queue.iter().rposition(mine)
        } else {
            queue.iter().position(mine)
        };
        match pick {
            Some(i) => {
                let s = queue.remove(i);
                word.store(s.tid | WAITERS, SeqCst);
                s.woken.store(true, std::sync::atomic::Ordering::SeqCst);
                s.thread.unpark();
            }
            None => word.store(0, SeqCst),
        }
        Ok(())
    }

    static NEXT_TID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

    loom::thread_local! {
        static PI_LOCK_CALLS: std::cell::Cell<u32> = std::cell::Cell::new(0);
    }

    /// The model's count of [`lock_pi`] calls by this thread (as the real one).
    pub fn pi_lock_calls() -> u32 {
        PI_LOCK_CALLS.with(std::cell::Cell::get)
    }

    /// The model has no context switches to count (as the real one, with nothing counted).
    pub fn count_framework_switches() {}

    /// Always 0 in the model.
    pub fn framework_switches() -> u64 {
        0
    }

    loom::thread_local! {
        static TID: u32 = {
            let t = NEXT_TID.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % TID_MASK;
            if t == 0 { 1 } else { t }
        };
    }

    /// A unique id per loom thread (the model's `gettid`).
    pub fn current_tid() -> u32 {
        TID.with(|t| *t)
    }
}

/// Turns an unexpected futex error into a panic that names the operation. Used where the
/// only possible errors are bugs of this crate (a valid, aligned, private word and a
/// well-formed timeout cannot make the kernel fail otherwise).
#[cold]
#[track_caller]
pub(crate) fn unexpected(op: &str, err: io::Error) -> ! {
    panic!("preempt-sync: {op} failed unexpectedly: {err} (this is a bug in preempt-sync)")
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::now_ns;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    /// Runs `f` while another thread owns `word` as a PI futex.
    fn while_held_elsewhere(word: &Arc<AtomicU32>, f: impl FnOnce()) {
        let (locked_tx, locked_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let w = word.clone();
        let owner = std::thread::spawn(move || {
            assert!(trylock_pi(&w).unwrap());
            locked_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            unlock_pi(&w).unwrap();
        });
        locked_rx.recv().unwrap();
        f();
        release_tx.send(()).unwrap();
        owner.join().unwrap();
    }

    #[test]
    fn trylock_and_unlock_in_the_kernel() {
        let word = AtomicU32::new(0);
        assert!(trylock_pi(&word).unwrap());
        assert_eq!(word.load(Ordering::SeqCst) & TID_MASK, current_tid());
        // Locking again from the owner is a deadlock the kernel reports.
        let err = lock_pi(&word, None).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EDEADLK));
        unlock_pi(&word).unwrap();
        assert_eq!(word.load(Ordering::SeqCst), 0);
        // Unlocking a futex we do not own is refused.
        assert_eq!(
            unlock_pi(&word).unwrap_err().raw_os_error(),
            Some(libc::EPERM)
        );
    }

    #[test]
    fn held_elsewhere_trylock_fails_and_lock_times_out() {
        let word = Arc::new(AtomicU32::new(0));
        while_held_elsewhere(&word, || {
            assert!(!trylock_pi(&word).unwrap());
            let deadline = now_ns() + 2_000_000;
            let err = lock_pi(&word, Some(deadline)).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::TimedOut);
            assert!(
                now_ns() >= deadline,
                "timed out before the absolute deadline"
            );
            // The FUTEX_LOCK_PI fallback (realtime clock) times out the same way.
            let err = real_fallback_lock(&word, now_ns() + 1_000_000).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::ETIMEDOUT));
        });
        // Free again: the kernel path takes it at once.
        lock_pi(&word, Some(now_ns() + 1_000_000_000)).unwrap();
        assert_eq!(word.load(Ordering::SeqCst) & TID_MASK, current_tid());
        unlock_pi(&word).unwrap();
    }

    fn real_fallback_lock(word: &AtomicU32, deadline: u64) -> io::Result<()> {
        real::lock_pi_realtime(word, Some(deadline)).map(drop)
    }

    #[test]
    fn wait_outcomes() {
        let word = AtomicU32::new(5);
        assert_eq!(wait(&word, 4, None).unwrap(), Wait::ValueChanged);
        assert_eq!(
            wait(&word, 5, Some(now_ns() + 1_000_000)).unwrap(),
            Wait::TimedOut
        );
        assert_eq!(wait(&word, 5, Some(0)).unwrap(), Wait::TimedOut);
        assert_eq!(wake(&word, u32::MAX).unwrap(), 0);
    }

    #[test]
    fn tid_is_cached_and_per_thread() {
        let me = current_tid();
        assert_eq!(me, current_tid());
        let other = std::thread::spawn(current_tid).join().unwrap();
        assert_ne!(me, other);
    }
}
