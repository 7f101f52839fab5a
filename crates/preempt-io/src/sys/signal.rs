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
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
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

/// One signal as it arrived: its number, how it was sent (`si_code`: `SI_USER` for kill(2),
/// `SI_KERNEL` for a terminal's Ctrl-C, ...), the sending process (`si_pid`, 0 when the kernel
/// sent it) and when it was taken (`CLOCK_MONOTONIC` ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The signal's number.
    pub signal: i32,
    /// `si_code`.
    pub code: i32,
    /// `si_pid` for a signal sent with kill(2) or tgkill(2); 0 otherwise.
    pub pid: i32,
    /// When it was taken, `CLOCK_MONOTONIC` nanoseconds.
    pub at_ns: u64,
}

/// How long after a stop signal the same signal from the same sender is the same stop
/// ([`Delivery::repeats`]).
pub const REPEAT_WINDOW_NS: u64 = 1_000_000_000;

impl Delivery {
    /// The delivery that `info` describes, taken at `at_ns`.
    pub fn from_siginfo(info: &libc::siginfo_t, at_ns: u64) -> Delivery {
        let user = matches!(
            info.si_code,
            libc::SI_USER | libc::SI_TKILL | libc::SI_QUEUE
        );
        Delivery {
            signal: info.si_signo,
            code: info.si_code,
            // SAFETY: for SI_USER, SI_TKILL and SI_QUEUE the kernel fills the `_kill`/`_rt`
            // member of the union, whose first field is si_pid; other codes are not read.
            pid: if user { unsafe { info.si_pid() } } else { 0 },
            at_ns,
        }
    }

    /// Whether this delivery repeats `first` rather than asking for something new: the same
    /// signal, sent with kill(2) (`SI_USER`) by the same process, within
    /// [`REPEAT_WINDOW_NS`]. GNU `timeout` sends its signal to the command and then to its
    /// own process group, which holds the command: two deliveries a few microseconds apart
    /// that mean one stop. A second Ctrl-C (sent by the kernel), a second `kill` (another
    /// process) or a different signal is a new request.
    pub fn repeats(&self, first: &Delivery) -> bool {
        self.signal == first.signal
            && self.code == libc::SI_USER
            && first.code == libc::SI_USER
            && self.pid == first.pid
            && self.pid != 0
            && self.at_ns.saturating_sub(first.at_ns) < REPEAT_WINDOW_NS
    }
}

/// Like [`wait_any`], with who sent the signal and when it was taken.
pub fn wait_delivery(set: &SignalSet) -> io::Result<Delivery> {
    loop {
        let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: `set` is an initialised sigset_t; `info` is valid for writes of one
        // siginfo_t, which sigwaitinfo fills when it returns a signal.
        let rc = unsafe { libc::sigwaitinfo(&set.0, info.as_mut_ptr()) };
        if rc > 0 {
            // SAFETY: zero-initialised, and filled by the kernel on success.
            let info = unsafe { info.assume_init() };
            return Ok(Delivery::from_siginfo(
                &info,
                crate::sys::clock::monotonic_now_ns(),
            ));
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

/// The first stop signal's sender and time, for [`Delivery::repeats`] in the handler
/// (`si_code`, `si_pid`, `CLOCK_MONOTONIC` ns); written once, by the handler that set the
/// stop flag, before it publishes the signal in [`STOP_SIGNAL`].
static FIRST_CODE: AtomicI32 = AtomicI32::new(0);
static FIRST_PID: AtomicI32 = AtomicI32::new(0);
static FIRST_AT_NS: AtomicU64 = AtomicU64::new(0);

/// A run's stop flag: SIGINT (Ctrl-C) or SIGTERM sets it, so the run ends at its next check
/// and writes what it has; a second one, arriving while the flag is set, ends the process
/// at once with [`exit_code_for_signal`] (130 after SIGINT, 143 after SIGTERM), unless it
/// repeats the first ([`Delivery::repeats`]: GNU `timeout` signals the command and its
/// process group, one stop). [`stop_signal`] says which signal set it, for the run's exit
/// code. The handlers stay installed for the life of the process.
///
/// # Errors
/// When a handler cannot be registered (`sigaction` failed).
pub fn install_stop_flag() -> io::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let which = Arc::clone(STOP_SIGNAL.get_or_init(|| Arc::new(AtomicUsize::new(0))));
    for sig in [SIGINT, SIGTERM] {
        let stop = Arc::clone(&stop);
        let which = Arc::clone(&which);
        // SAFETY: the action is async-signal-safe: it reads CLOCK_MONOTONIC (clock_gettime
        // is async-signal-safe, POSIX.1-2008 signal-safety list), loads and stores atomics,
        // and ends the process with _exit; it allocates nothing and takes no lock.
        unsafe {
            signal_hook_registry::register_sigaction(sig, move |info| {
                let now = Delivery::from_siginfo(info, crate::sys::clock::monotonic_now_ns());
                on_stop_signal(&stop, &which, now);
            })
        }?;
    }
    Ok(stop)
}

/// A stop signal's effect on one stop flag (in the signal handler: atomics only).
fn on_stop_signal(stop: &AtomicBool, which: &AtomicUsize, now: Delivery) {
    if !stop.swap(true, Ordering::SeqCst) {
        if which.load(Ordering::SeqCst) == 0 {
            FIRST_CODE.store(now.code, Ordering::Relaxed);
            FIRST_PID.store(now.pid, Ordering::Relaxed);
            FIRST_AT_NS.store(now.at_ns, Ordering::Relaxed);
            // SIGINT and SIGTERM are positive.
            which.store(now.signal.unsigned_abs() as usize, Ordering::SeqCst);
        }
        return;
    }
    let first = Delivery {
        signal: i32::try_from(which.load(Ordering::SeqCst)).unwrap_or(0),
        code: FIRST_CODE.load(Ordering::Relaxed),
        pid: FIRST_PID.load(Ordering::Relaxed),
        at_ns: FIRST_AT_NS.load(Ordering::Relaxed),
    };
    if now.repeats(&first) {
        return;
    }
    // SAFETY: _exit is async-signal-safe; the run's outputs are not complete, and the
    // process ends without running atexit handlers or flushing stdio from a handler.
    unsafe { libc::_exit(i32::from(exit_code_for_signal(now.signal))) }
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

    fn delivery(signal: i32, code: i32, pid: i32, at_ns: u64) -> Delivery {
        Delivery {
            signal,
            code,
            pid,
            at_ns,
        }
    }

    #[test]
    fn the_same_kill_from_the_same_sender_within_the_window_is_one_stop() {
        let first = delivery(SIGTERM, libc::SI_USER, 4242, 10_000);
        // GNU timeout: the command, then its process group, microseconds apart.
        assert!(delivery(SIGTERM, libc::SI_USER, 4242, 10_050).repeats(&first));
        assert!(
            delivery(SIGTERM, libc::SI_USER, 4242, 10_000 + REPEAT_WINDOW_NS - 1).repeats(&first)
        );
        // A new request: later, another sender, another signal, or the terminal's Ctrl-C.
        assert!(!delivery(SIGTERM, libc::SI_USER, 4242, 10_000 + REPEAT_WINDOW_NS).repeats(&first));
        assert!(!delivery(SIGTERM, libc::SI_USER, 4243, 10_050).repeats(&first));
        assert!(!delivery(SIGINT, libc::SI_USER, 4242, 10_050).repeats(&first));
        let ctrl_c = delivery(SIGINT, libc::SI_KERNEL, 0, 10_000);
        assert!(!delivery(SIGINT, libc::SI_KERNEL, 0, 10_050).repeats(&ctrl_c));
    }

    #[test]
    fn wait_delivery_names_the_sender() {
        let sig = sigrtmin() + 6;
        let handle = std::thread::spawn(move || {
            block_signal(sig).unwrap();
            signal_thread(sched::current_tid(), sig).unwrap();
            wait_delivery(&SignalSet::of(&[sig]).unwrap()).unwrap()
        });
        let got = handle.join().unwrap();
        // tgkill(2) reports SI_TKILL on most kernels, SI_USER on some (6.18 here).
        assert_eq!(got.signal, sig);
        assert!(
            matches!(got.code, libc::SI_TKILL | libc::SI_USER),
            "{got:?}"
        );
        assert_eq!(got.pid, std::process::id() as i32);
        assert!(got.at_ns > 0);
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
