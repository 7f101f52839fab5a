//! `CLOCK_MONOTONIC` in nanoseconds: the time base of every deadline in this crate.
//!
//! A tiny checked wrapper so that users of [`crate::timed`] and [`crate::event`] can
//! compute absolute deadlines without another dependency.
//!
//! ```
//! let t0 = preempt_sync::clock::now_ns();
//! assert!(preempt_sync::clock::now_ns() >= t0);
//! ```

use std::io;

/// Reads `clock` (`clock_gettime(2)`) in nanoseconds.
///
/// # Errors
///
/// The `errno` of `clock_gettime` (`EINVAL` for an unsupported clock id).
pub fn read_ns(clock: libc::clockid_t) -> io::Result<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime writes only into it.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let secs = u64::try_from(ts.tv_sec)
        .map_err(|_| io::Error::other("clock_gettime returned negative seconds"))?;
    let nanos = u64::try_from(ts.tv_nsec)
        .map_err(|_| io::Error::other("clock_gettime returned negative nanoseconds"))?;
    Ok(secs * 1_000_000_000 + nanos)
}

/// Current `CLOCK_MONOTONIC` time in nanoseconds.
///
/// # Panics
///
/// Never on Linux: `CLOCK_MONOTONIC` always exists and the out-pointer is valid; a failure
/// would be a kernel bug, so it panics with the error instead of returning a bogus time.
#[inline]
pub fn now_ns() -> u64 {
    match read_ns(libc::CLOCK_MONOTONIC) {
        Ok(ns) => ns,
        Err(e) => panic!("clock_gettime(CLOCK_MONOTONIC) failed: {e}"),
    }
}
