//! Per-thread settings and accounting: timer slack, names and `getrusage(RUSAGE_THREAD)`.
//!
//! Timer slack matters for measurements: a `SCHED_OTHER` thread's timers may fire up to 50 µs
//! late by default (the kernel's default slack), while real-time threads get zero slack. A
//! tool that compares policies must set the same slack for all of them.

use std::io;

/// Sets the calling thread's timer slack in nanoseconds (`PR_SET_TIMERSLACK`). The kernel
/// treats 0 as "the process default"; use 1 for the tightest slack.
///
/// # Errors
/// Whatever `prctl` reports.
pub fn set_timer_slack_ns(ns: u64) -> io::Result<()> {
    let value = libc::c_ulong::try_from(ns)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "timer slack too large"))?;
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long by value; the other arguments are ignored.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, value, 0, 0, 0) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's timer slack in nanoseconds (`PR_GET_TIMERSLACK`).
///
/// # Errors
/// Whatever `prctl` reports.
pub fn timer_slack_ns() -> io::Result<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no arguments and returns the slack.
    let rc = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    u64::try_from(rc).map_err(|_| io::Error::last_os_error())
}

/// Names the calling thread (`PR_SET_NAME`), as `ps -L`, `top -H` and trace-cmd show it. Linux
/// keeps 15 bytes; a longer name is cut at a character boundary.
///
/// # Errors
/// `InvalidInput` for a name with a NUL byte; whatever `prctl` reports.
pub fn set_current_thread_name(name: &str) -> io::Result<()> {
    if name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a thread name cannot contain NUL",
        ));
    }
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let mut buf = [0_u8; 16];
    buf[..end].copy_from_slice(&name.as_bytes()[..end]);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes; `buf` is 16 bytes
    // and its last byte is always 0.
    let rc = unsafe { libc::prctl(libc::PR_SET_NAME, buf.as_ptr(), 0, 0, 0) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What `getrusage(RUSAGE_THREAD)` reports for the calling thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadUsage {
    /// Page faults served without I/O.
    pub minor_faults: u64,
    /// Page faults that needed I/O.
    pub major_faults: u64,
    /// Times the thread blocked (voluntary context switches).
    pub voluntary_switches: u64,
    /// Times the thread was preempted (involuntary context switches).
    pub involuntary_switches: u64,
    /// CPU time in user mode, ns.
    pub user_ns: u64,
    /// CPU time in the kernel, ns.
    pub system_ns: u64,
}

/// Reads the calling thread's resource usage. Allocation-free; one system call.
///
/// # Errors
/// Whatever `getrusage` reports.
pub fn rusage_thread() -> io::Result<ThreadUsage> {
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut raw: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `raw` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut raw) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let count = |v: libc::c_long| u64::try_from(v).unwrap_or(0);
    let ns = |tv: libc::timeval| {
        count(tv.tv_sec) * 1_000_000_000 + u64::try_from(tv.tv_usec).unwrap_or(0) * 1_000
    };
    Ok(ThreadUsage {
        minor_faults: count(raw.ru_minflt),
        major_faults: count(raw.ru_majflt),
        voluntary_switches: count(raw.ru_nvcsw),
        involuntary_switches: count(raw.ru_nivcsw),
        user_ns: ns(raw.ru_utime),
        system_ns: ns(raw.ru_stime),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_slack_round_trips() {
        std::thread::spawn(|| {
            set_timer_slack_ns(1).unwrap();
            assert_eq!(timer_slack_ns().unwrap(), 1);
            set_timer_slack_ns(50_000).unwrap();
            assert_eq!(timer_slack_ns().unwrap(), 50_000);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn long_names_are_cut_at_fifteen_bytes() {
        std::thread::spawn(|| {
            set_current_thread_name("preempt-executor-99").unwrap();
            let comm = std::fs::read_to_string(format!(
                "/proc/self/task/{}/comm",
                crate::sys::sched::current_tid()
            ))
            .unwrap();
            assert_eq!(comm.trim_end(), "preempt-executo");
            assert!(set_current_thread_name("a\0b").is_err());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn faults_are_counted() {
        std::thread::spawn(|| {
            let before = rusage_thread().unwrap();
            let mut v = vec![0_u8; 8 << 20];
            for i in (0..v.len()).step_by(4096) {
                v[i] = 1;
            }
            std::hint::black_box(&v);
            let after = rusage_thread().unwrap();
            assert!(after.minor_faults > before.minor_faults);
        })
        .join()
        .unwrap();
    }
}
