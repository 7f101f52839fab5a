//! Signals: sets of signals, blocking them in a thread, waiting for them with `sigwaitinfo`,
//! and sending them to one thread (`tgkill`) or a process (`kill`).
//!
//! Two users: the signal wake-up source of `preempt wakeup` (a real-time signal sent to one
//! thread), and the runtime's stop-signal thread (SIGINT/SIGTERM blocked in every thread of
//! an app and taken synchronously by one thread, so a Ctrl-C never interrupts a real-time
//! task and the app can stop in order and keep its statistics).
//!
//! Every call's return value is checked; `pthread_sigmask` returns its error, the others set
//! `errno`. Nothing allocates.
//!
//! ```
//! use preempt_io::sys::{sched, signal};
//! let sig = signal::sigrtmin() + 2;
//! std::thread::spawn(move || {
//!     signal::block_signal(sig)?;
//!     signal::signal_thread(sched::current_tid(), sig)?;
//!     signal::wait_signal(sig)
//! })
//! .join()
//! .unwrap()?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use std::mem::MaybeUninit;

/// `SIGINT` (Ctrl-C).
pub const SIGINT: i32 = libc::SIGINT;
/// `SIGTERM` (`kill`'s default).
pub const SIGTERM: i32 = libc::SIGTERM;

/// The first real-time signal number usable by applications (`SIGRTMIN`, which glibc shifts
/// past the signals it reserves for itself).
pub fn sigrtmin() -> i32 {
    libc::SIGRTMIN()
}

/// A set of signals (`sigset_t`).
#[derive(Clone, Copy)]
pub struct SignalSet(libc::sigset_t);

impl std::fmt::Debug for SignalSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let members: Vec<i32> = (1..=libc::SIGRTMAX())
            .filter(|&s| self.contains(s))
            .collect();
        f.debug_tuple("SignalSet").field(&members).finish()
    }
}

impl SignalSet {
    /// The set holding exactly `signals`; an invalid signal number is an `EINVAL` error.
    pub fn of(signals: &[i32]) -> io::Result<SignalSet> {
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigemptyset initialises the set it is given a valid pointer to.
        if unsafe { libc::sigemptyset(set.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the set was initialised by sigemptyset just above.
        let mut set = unsafe { set.assume_init() };
        for &signal in signals {
            // SAFETY: `set` is an initialised sigset_t; sigaddset validates the number.
            if unsafe { libc::sigaddset(&mut set, signal) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(SignalSet(set))
    }

    /// Whether `signal` is in the set (an invalid number is not).
    pub fn contains(&self, signal: i32) -> bool {
        // SAFETY: `self.0` is an initialised sigset_t (every constructor initialises it);
        // sigismember only reads it and returns -1 for an invalid number.
        unsafe { libc::sigismember(&self.0, signal) == 1 }
    }
}

fn sigmask(how: libc::c_int, set: &SignalSet) -> io::Result<SignalSet> {
    let mut old = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: `set` points to an initialised sigset_t; `old` is valid for writes of one
    // sigset_t, which pthread_sigmask fills on success.
    let rc = unsafe { libc::pthread_sigmask(how, &set.0, old.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    // SAFETY: pthread_sigmask succeeded, so it wrote the previous mask into `old`.
    Ok(SignalSet(unsafe { old.assume_init() }))
}

/// Blocks `set` in the calling thread (added to its mask; threads it creates afterwards
/// inherit the mask) and returns the previous mask, for [`set_mask`].
pub fn block(set: &SignalSet) -> io::Result<SignalSet> {
    sigmask(libc::SIG_BLOCK, set)
}

/// Replaces the calling thread's signal mask by `mask` (e.g. the one [`block`] returned).
pub fn set_mask(mask: &SignalSet) -> io::Result<()> {
    sigmask(libc::SIG_SETMASK, mask).map(|_| ())
}

/// Waits until one signal of `set` (which must be blocked in the calling thread, or it may
/// be delivered instead) is pending, takes it and returns its number. EINTR is retried.
pub fn wait_any(set: &SignalSet) -> io::Result<i32> {
    loop {
        // SAFETY: `set` is an initialised sigset_t; a null siginfo pointer is allowed.
        let rc = unsafe { libc::sigwaitinfo(&set.0, std::ptr::null_mut()) };
        if rc > 0 {
            return Ok(rc);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Blocks `signal` in the calling thread, so it stays pending until [`wait_signal`] takes it.
pub fn block_signal(signal: i32) -> io::Result<()> {
    block(&SignalSet::of(&[signal])?).map(|_| ())
}

/// Waits for `signal` (which must be blocked in the calling thread), retrying on EINTR.
pub fn wait_signal(signal: i32) -> io::Result<()> {
    let set = SignalSet::of(&[signal])?;
    let got = wait_any(&set)?;
    debug_assert_eq!(got, signal, "sigwaitinfo returned a signal outside its set");
    Ok(())
}

/// Sends `signal` to thread `tid` of this process (`tgkill`).
pub fn signal_thread(tid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    // SAFETY: tgkill takes plain integers; the kernel checks that tid belongs to pid.
    let rc = unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, signal) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `signal` to process `pid` (`kill`), as Ctrl-C or `kill -TERM` would.
pub fn signal_process(pid: u32, signal: i32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    // SAFETY: kill takes plain integers; a positive pid names one process.
    if unsafe { libc::kill(pid, signal) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::sched;

    #[test]
    fn a_blocked_signal_is_taken_by_sigwaitinfo() {
        let sig = sigrtmin() + 3;
        let handle = std::thread::spawn(move || {
            block_signal(sig).unwrap();
            signal_thread(sched::current_tid(), sig).unwrap();
            wait_signal(sig).unwrap();
        });
        handle.join().unwrap();
        assert!(signal_thread(-5, sig).is_err());
    }

    #[test]
    fn wait_any_names_the_signal_taken_and_set_mask_restores() {
        let (a, b) = (sigrtmin() + 4, sigrtmin() + 5);
        let handle = std::thread::spawn(move || {
            let set = SignalSet::of(&[a, b]).unwrap();
            assert!(set.contains(a) && set.contains(b) && !set.contains(SIGINT));
            let old = block(&set).unwrap();
            assert!(!old.contains(b));
            signal_thread(sched::current_tid(), b).unwrap();
            assert_eq!(wait_any(&set).unwrap(), b);
            set_mask(&old).unwrap();
            let now = block(&SignalSet::of(&[]).unwrap()).unwrap();
            assert!(!now.contains(a) && !now.contains(b));
        });
        handle.join().unwrap();
        assert!(SignalSet::of(&[0x7fff]).is_err());
        assert!(signal_process(u32::MAX, SIGTERM).is_err());
    }
}
