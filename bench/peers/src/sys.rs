//! The few raw Linux calls the baselines need: futex (wait/wake and PI lock/unlock),
//! SCHED_FIFO, the affinity mask and `VmHWM`.
//!
//! This crate is deliberately independent of `preempt-io` (it lives in its own workspace and
//! measures the *raw* floor), so it talks to `libc` directly. Every wrapper checks its return
//! value and turns `-1` into `io::Error::last_os_error()` (futex(2) and sched_setscheduler(2)
//! report errors through `errno`).

use std::io;
use std::sync::atomic::AtomicU32;

/// `FUTEX_WAITERS`: set by the kernel in a PI futex word when a thread blocks on it
/// (futex(2), "Priority-inheritance futexes").
pub const FUTEX_WAITERS: u32 = libc::FUTEX_WAITERS;

/// The kernel thread id of the calling thread (gettid(2)); this is what a PI futex word holds.
pub fn gettid() -> u32 {
    // SAFETY: gettid takes no arguments, cannot fail and has no memory effects.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    u32::try_from(tid).expect("gettid returned a negative or oversized thread id")
}

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn futex(word: &AtomicU32, op: libc::c_int, val: u32) -> io::Result<libc::c_long> {
    // SAFETY: `word` is a live, 4-byte aligned u32 for the duration of the call (it is a
    // reference); the ops used here (WAIT, WAKE, LOCK_PI, UNLOCK_PI, all PRIVATE) read only
    // `uaddr` and `val`; the timeout pointer is NULL (wait forever) and uaddr2/val3 are unused.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    check(ret)
}

/// `FUTEX_WAIT`: sleeps while `*word == expected`. Returns `Ok` when woken, and also when the
/// word no longer held `expected` (`EAGAIN`) or a signal interrupted the wait (`EINTR`): the
/// caller re-checks its condition in a loop either way.
pub fn futex_wait(word: &AtomicU32, expected: u32) -> io::Result<()> {
    match futex(word, libc::FUTEX_WAIT, expected) {
        Ok(_) => Ok(()),
        Err(err) if matches!(err.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => Ok(()),
        Err(err) => Err(err),
    }
}

/// `FUTEX_WAKE`: wakes up to `count` waiters; returns how many were woken.
pub fn futex_wake(word: &AtomicU32, count: u32) -> io::Result<usize> {
    let woken = futex(word, libc::FUTEX_WAKE, count)?;
    Ok(usize::try_from(woken).expect("FUTEX_WAKE returned a negative count"))
}

/// `FUTEX_LOCK_PI`: takes the PI futex `word` in the kernel, blocking (and lending the caller's
/// priority to the owner) while another thread holds it. `EINTR` cannot happen for LOCK_PI
/// without a timeout (the kernel restarts it), so every error is real.
pub fn futex_lock_pi(word: &AtomicU32) -> io::Result<()> {
    futex(word, libc::FUTEX_LOCK_PI, 0).map(drop)
}

/// `FUTEX_UNLOCK_PI`: releases the PI futex `word`, which the caller owns, handing it to the
/// highest-priority waiter.
pub fn futex_unlock_pi(word: &AtomicU32) -> io::Result<()> {
    futex(word, libc::FUTEX_UNLOCK_PI, 0).map(drop)
}

/// Puts the calling thread under SCHED_FIFO at `priority` (1..=99).
pub fn set_fifo(priority: u8) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: libc::c_int::from(priority),
    };
    // SAFETY: pid 0 means the calling thread; `param` is a valid sched_param that outlives the
    // call (the kernel copies it).
    let ret = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    check(libc::c_long::from(ret)).map(drop)
}

fn set_policy(policy: libc::c_int, priority: libc::c_int) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: as in `set_fifo`: calling thread, valid param copied by the kernel.
    let ret = unsafe { libc::sched_setscheduler(0, policy, &param) };
    check(libc::c_long::from(ret)).map(drop)
}

/// Checks that this process may use SCHED_FIFO at `priority` by switching the calling thread to
/// it and straight back. Exits with a clear error naming the fix when it may not: linux-rtic
/// would otherwise panic inside an executor thread and hang the process (issue 3).
pub fn require_fifo_or_exit(priority: u8) {
    // SAFETY: sched_getscheduler(0) only reads the calling thread's policy.
    let old_policy = unsafe { libc::sched_getscheduler(0) };
    let mut old = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 = calling thread; `old` is a valid, writable sched_param.
    let got = unsafe { libc::sched_getparam(0, &mut old) };
    let probe = check(libc::c_long::from(old_policy))
        .and_then(|_| check(libc::c_long::from(got)))
        .and_then(|_| set_fifo(priority))
        .and_then(|()| set_policy(old_policy, old.sched_priority));
    if let Err(err) = probe {
        eprintln!(
            "error: cannot run at SCHED_FIFO priority {priority}: {err}.\n\
             fix: run as root, or `setcap cap_sys_nice+ep <this binary>`, or allow real-time \
             priorities in /etc/security/limits.conf (`<user> - rtprio 99`) and log in again"
        );
        std::process::exit(1);
    }
}

/// How many CPUs the calling thread may run on (sched_getaffinity(2)).
pub fn allowed_cpus() -> io::Result<usize> {
    // SAFETY: cpu_set_t is plain old data; all-zero is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 = calling thread; `set` is writable and its exact size is passed.
    let ret =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    check(libc::c_long::from(ret))?;
    // SAFETY: `set` was filled in by the kernel above.
    let count = unsafe { libc::CPU_COUNT(&set) };
    Ok(usize::try_from(count).expect("CPU_COUNT is never negative"))
}

/// Peak resident set size of this process in KiB: the `VmHWM` line of `/proc/self/status`.
pub fn vmhwm_kib() -> io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    parse_vmhwm_kib(&status).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "no `VmHWM: <n> kB` line in /proc/self/status",
        )
    })
}

/// Extracts `VmHWM` (KiB) from the text of a `/proc/<pid>/status` file.
///
/// ```
/// let status = "Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    1234 kB\nVmRSS:\t 1000 kB\n";
/// assert_eq!(preempt_peers::sys::parse_vmhwm_kib(status), Some(1234));
/// assert_eq!(preempt_peers::sys::parse_vmhwm_kib("Name:\tx\n"), None);
/// ```
pub fn parse_vmhwm_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let mut fields = line["VmHWM:".len()..].split_whitespace();
    let value = fields.next()?.parse().ok()?;
    (fields.next() == Some("kB")).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn wait_returns_at_once_when_the_word_differs() {
        let word = AtomicU32::new(1);
        futex_wait(&word, 0).expect("EAGAIN is reported as Ok");
    }

    #[test]
    fn wake_without_waiters_wakes_nobody() {
        let word = AtomicU32::new(0);
        assert_eq!(futex_wake(&word, 1).unwrap(), 0);
    }

    #[test]
    fn pi_lock_and_unlock_through_the_kernel_store_our_tid() {
        let word = AtomicU32::new(0);
        futex_lock_pi(&word).unwrap();
        assert_eq!(word.load(Ordering::Relaxed), gettid());
        futex_unlock_pi(&word).unwrap();
        assert_eq!(word.load(Ordering::Relaxed), 0);
        // Unlocking a futex we do not own is refused, not ignored.
        assert!(futex_unlock_pi(&word).is_err());
    }

    #[test]
    fn own_process_has_a_peak_rss_and_cpus() {
        assert!(vmhwm_kib().unwrap() > 0);
        assert!(allowed_cpus().unwrap() >= 1);
    }
}
