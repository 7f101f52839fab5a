//! Thread-directed signals: `SIGRTMIN`, blocking a signal in a thread, waiting for it with
//! `sigwaitinfo`, and sending it to one thread with `tgkill` (the signal wake-up source of
//! `preempt wakeup`).
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

/// The first real-time signal number usable by applications (`SIGRTMIN`, which glibc shifts
/// past the signals it reserves for itself).
pub fn sigrtmin() -> i32 {
    libc::SIGRTMIN()
}

fn sigset_of(signal: i32) -> io::Result<libc::sigset_t> {
    let mut set = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the set it is given a valid pointer to.
    if unsafe { libc::sigemptyset(set.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the set was initialised by sigemptyset just above.
    let mut set = unsafe { set.assume_init() };
    // SAFETY: `set` is an initialised sigset_t; sigaddset validates the signal number.
    if unsafe { libc::sigaddset(&mut set, signal) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(set)
}

/// Blocks `signal` in the calling thread, so it stays pending until [`wait_signal`] takes it.
pub fn block_signal(signal: i32) -> io::Result<()> {
    let set = sigset_of(signal)?;
    // SAFETY: `set` is a valid sigset; the old-set pointer may be null.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Waits for `signal` (which must be blocked in the calling thread), retrying on EINTR.
pub fn wait_signal(signal: i32) -> io::Result<()> {
    let set = sigset_of(signal)?;
    loop {
        // SAFETY: `set` is a valid sigset; a null siginfo pointer is allowed.
        let rc = unsafe { libc::sigwaitinfo(&set, std::ptr::null_mut()) };
        if rc == signal {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if rc < 0 && err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
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
}
