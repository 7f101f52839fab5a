//! Signals: sets of signals, blocking them in a thread, waiting for them with `sigwaitinfo`,
//! and sending them to one thread (`tgkill`) or a process (`kill`).
//!
//! Three users: the signal wake-up source of `preempt wakeup` (a real-time signal sent to one
//! thread), the runtime's stop-signal thread (SIGINT/SIGTERM blocked in every thread of
//! an app and taken synchronously by one thread, so a Ctrl-C never interrupts a real-time
//! task and the app can stop in order and keep its statistics), and the stop flag of every
//! measuring program ([`install_stop_flag`]: the `preempt` CLI, `rtio-bench`, the demo
//! binaries), so that all of them stop, and exit, the same way.
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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

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

/// The signal that set a stop flag of this process (0: none yet), shared by every
/// [`install_stop_flag`].
static STOP_SIGNAL: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// A run's stop flag: SIGINT (Ctrl-C) or SIGTERM sets it, so the run ends at its next check
/// and writes what it has; a second one, arriving while the flag is set, ends the process
/// at once with [`exit_code_for_signal`] (130 after SIGINT, 143 after SIGTERM), through
/// `signal_hook`'s conditional shutdown. [`stop_signal`] says which signal set it, for the
/// run's exit code. The handlers stay installed for the life of the process.
///
/// # Errors
/// When a handler cannot be registered (`sigaction` failed).
pub fn install_stop_flag() -> io::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let which = Arc::clone(STOP_SIGNAL.get_or_init(|| Arc::new(AtomicUsize::new(0))));
    for sig in [SIGINT, SIGTERM] {
        // Order matters (signal-hook's docs): the conditional shutdown is registered first,
        // so that on the first signal it still sees the flag unset.
        signal_hook::flag::register_conditional_shutdown(
            sig,
            i32::from(exit_code_for_signal(sig)),
            Arc::clone(&stop),
        )?;
        // SIGINT and SIGTERM are positive.
        signal_hook::flag::register_usize(sig, Arc::clone(&which), sig.unsigned_abs() as usize)?;
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    Ok(stop)
}

/// The signal that set a stop flag of this process ([`install_stop_flag`]), if one did.
pub fn stop_signal() -> Option<i32> {
    let sig = STOP_SIGNAL.get()?.load(Ordering::Relaxed);
    i32::try_from(sig).ok().filter(|&s| s > 0)
}

/// The exit code of a program that `sig` ended: 128 + the signal's number, as a shell
/// reports it (130 for SIGINT, 143 for SIGTERM).
pub fn exit_code_for_signal(sig: i32) -> u8 {
    u8::try_from(128 + sig.clamp(0, 127)).unwrap_or(u8::MAX)
}

/// The exit code of a run its stop flag ended: that of the signal that set it
/// ([`stop_signal`]), or 130 (Ctrl-C) when none is recorded.
pub fn stopped_exit_code() -> u8 {
    exit_code_for_signal(stop_signal().unwrap_or(SIGINT))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{clock, sched};

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(exit_code_for_signal(SIGINT), 130);
        assert_eq!(exit_code_for_signal(SIGTERM), 143);
    }

    #[test]
    fn a_first_sigterm_sets_the_stop_flag_and_is_recorded() {
        let stop = install_stop_flag().unwrap();
        assert!(!stop.load(Ordering::Relaxed));
        signal_process(std::process::id(), SIGTERM).unwrap();
        let deadline = clock::monotonic_now_ns() + 5_000_000_000;
        let mut next = clock::monotonic_now_ns();
        while !stop.load(Ordering::Relaxed) && next < deadline {
            next += 1_000_000;
            clock::sleep_until_ns(clock::ClockId::Monotonic, next).unwrap();
        }
        assert!(stop.load(Ordering::Relaxed), "SIGTERM did not set the flag");
        assert_eq!(stop_signal(), Some(SIGTERM));
        assert_eq!(stopped_exit_code(), 143);
    }

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
