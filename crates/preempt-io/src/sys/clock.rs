//! POSIX clocks: reading them and sleeping until an absolute time on them.
//!
//! Real-time loops never sleep for a *relative* time: a relative sleep drifts by however
//! late the thread was woken the previous time. [`sleep_until_ns`] sleeps until an absolute
//! deadline with `clock_nanosleep(TIMER_ABSTIME)`, the method cyclictest uses. Times are
//! `u64` nanoseconds since the clock's epoch: 584 years of range, plain integer arithmetic and
//! no conversion on the hot path.
//!
//! ```
//! use preempt_io::sys::clock::{self, ClockId};
//! let start = clock::monotonic_now_ns();
//! clock::sleep_until_ns(ClockId::Monotonic, start + 100_000).unwrap();
//! assert!(clock::monotonic_now_ns() >= start + 100_000);
//! ```

use std::io;

/// Nanoseconds in one second.
pub(crate) const NANOS_PER_SEC: u64 = 1_000_000_000;

/// The clocks preempt reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClockId {
    /// `CLOCK_MONOTONIC`: never jumps, slewed by NTP. The clock of every deadline in preempt.
    Monotonic,
    /// `CLOCK_MONOTONIC_RAW`: never jumps, not slewed. For measuring the clock itself.
    MonotonicRaw,
    /// `CLOCK_REALTIME`: wall-clock time; it jumps. Only for time stamps shown to people.
    Realtime,
    /// `CLOCK_BOOTTIME`: like `Monotonic` but also counts time spent in suspend.
    Boottime,
    /// `CLOCK_THREAD_CPUTIME_ID`: the CPU time of the calling thread, up to now (a system
    /// call: no vDSO). In a guest with paravirtual steal accounting
    /// (`CONFIG_PARAVIRT_TIME_ACCOUNTING`) it leaves out the time the hypervisor ran
    /// something else on the vCPU while the thread was on it.
    ThreadCputime,
}

impl ClockId {
    /// The `clockid_t` of this clock.
    pub(crate) fn as_raw(self) -> libc::clockid_t {
        match self {
            ClockId::Monotonic => libc::CLOCK_MONOTONIC,
            ClockId::MonotonicRaw => libc::CLOCK_MONOTONIC_RAW,
            ClockId::Realtime => libc::CLOCK_REALTIME,
            ClockId::Boottime => libc::CLOCK_BOOTTIME,
            ClockId::ThreadCputime => libc::CLOCK_THREAD_CPUTIME_ID,
        }
    }
}

/// Converts nanoseconds to a `timespec`.
#[inline]
pub(crate) fn timespec_from_ns(ns: u64) -> libc::timespec {
    // Both casts are lossless: ns / 1e9 < 2^35 fits any time_t we run on (64-bit, and 32-bit
    // targets with 64-bit time_t), and the remainder is below 1e9, which fits c_long.
    libc::timespec {
        tv_sec: (ns / NANOS_PER_SEC) as libc::time_t,
        tv_nsec: (ns % NANOS_PER_SEC) as libc::c_long,
    }
}

/// Converts a `timespec` to nanoseconds; negative fields count as zero.
#[inline]
pub(crate) fn ns_from_timespec(ts: &libc::timespec) -> u64 {
    let sec = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nsec = u64::try_from(ts.tv_nsec).unwrap_or(0);
    sec.saturating_mul(NANOS_PER_SEC).saturating_add(nsec)
}

/// Reads `clock` in nanoseconds.
///
/// `clock_gettime` fails only for an invalid clock id or a bad pointer, neither of which can
/// happen here, so this function does not return a `Result`; it aborts the process rather than
/// hand back a wrong time if the kernel ever says otherwise.
#[inline]
pub fn now_ns(clock: ClockId) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call, and the clock id
    // comes from `ClockId::as_raw`, which only yields clocks every Linux since 2.6.39 supports.
    let rc = unsafe { libc::clock_gettime(clock.as_raw(), &mut ts) };
    if rc != 0 {
        clock_failed(clock);
    }
    ns_from_timespec(&ts)
}

#[cold]
fn clock_failed(clock: ClockId) -> ! {
    eprintln!(
        "preempt: clock_gettime({clock:?}) failed: {}",
        io::Error::last_os_error()
    );
    std::process::abort()
}

/// Reads `CLOCK_MONOTONIC` in nanoseconds.
#[inline]
pub fn monotonic_now_ns() -> u64 {
    now_ns(ClockId::Monotonic)
}

/// Sleeps until `clock` reads at least `deadline_ns`, with `clock_nanosleep(TIMER_ABSTIME)`.
///
/// A signal that interrupts the sleep does not shorten it: the sleep resumes towards the same
/// absolute deadline. A deadline in the past returns at once.
///
/// # Errors
/// `clock_nanosleep` returns its error (it does not set `errno`): `ENOTSUP` (Linux) or
/// `EINVAL` for a clock that cannot sleep, such as `MonotonicRaw`.
#[inline]
pub fn sleep_until_ns(clock: ClockId, deadline_ns: u64) -> io::Result<()> {
    let ts = timespec_from_ns(deadline_ns);
    loop {
        // SAFETY: `ts` is a valid timespec; with TIMER_ABSTIME the remaining-time pointer is
        // not used, so passing null is allowed by clock_nanosleep(2).
        let rc = unsafe {
            libc::clock_nanosleep(
                clock.as_raw(),
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        match rc {
            0 => return Ok(()),
            libc::EINTR => continue,
            err => return Err(io::Error::from_raw_os_error(err)),
        }
    }
}

/// The resolution of `clock` in nanoseconds (`clock_getres`).
///
/// # Errors
/// Whatever `clock_getres` reports in `errno`.
pub fn resolution_ns(clock: ClockId) -> io::Result<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_getres(clock.as_raw(), &mut ts) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ns_from_timespec(&ts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timespec_round_trip() {
        for ns in [0, 1, 999_999_999, 1_000_000_000, 1_234_567_890_123] {
            assert_eq!(ns_from_timespec(&timespec_from_ns(ns)), ns);
        }
    }

    #[test]
    fn negative_timespec_is_zero() {
        let ts = libc::timespec {
            tv_sec: -1,
            tv_nsec: -5,
        };
        assert_eq!(ns_from_timespec(&ts), 0);
    }

    #[test]
    fn monotonic_never_goes_back() {
        let mut last = monotonic_now_ns();
        for _ in 0..1000 {
            let now = monotonic_now_ns();
            assert!(now >= last);
            last = now;
        }
    }

    #[test]
    fn sleep_until_reaches_the_deadline() {
        let deadline = monotonic_now_ns() + 200_000;
        sleep_until_ns(ClockId::Monotonic, deadline).unwrap();
        assert!(monotonic_now_ns() >= deadline);
        // A deadline in the past returns at once, without error.
        sleep_until_ns(ClockId::Monotonic, 0).unwrap();
    }

    #[test]
    fn raw_clock_cannot_sleep_and_says_so() {
        let err = sleep_until_ns(ClockId::MonotonicRaw, 1).unwrap_err();
        // Linux answers ENOTSUP; POSIX allows EINVAL.
        let code = err.raw_os_error();
        assert!(
            code == Some(libc::ENOTSUP) || code == Some(libc::EINVAL),
            "{err}"
        );
    }

    #[test]
    fn resolution_is_known() {
        assert!(resolution_ns(ClockId::Monotonic).unwrap() >= 1);
    }
}
