//! `timerfd_create(2)`: a timer that is a file descriptor, so a thread can block on it in
//! `read`, `poll`, `epoll` or io_uring, and an executor can wait on timers and I/O at once.
//!
//! ```
//! use preempt_io::sys::{clock::{self, ClockId}, timerfd::TimerFd};
//! let timer = TimerFd::new(ClockId::Monotonic, false)?;
//! let start = clock::monotonic_now_ns();
//! timer.set_absolute_ns(start + 100_000, 0)?;
//! assert_eq!(timer.read_expirations()?, 1);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use super::clock::{ClockId, timespec_from_ns};

/// A timer file descriptor; closed on drop.
#[derive(Debug)]
pub struct TimerFd {
    fd: OwnedFd,
}

impl TimerFd {
    /// Creates a disarmed timer on `clock` (close-on-exec; non-blocking reads if asked).
    ///
    /// # Errors
    /// Whatever `timerfd_create` reports (`EINVAL` for a clock timers do not support).
    pub fn new(clock: ClockId, nonblocking: bool) -> io::Result<TimerFd> {
        let mut flags = libc::TFD_CLOEXEC;
        if nonblocking {
            flags |= libc::TFD_NONBLOCK;
        }
        // SAFETY: timerfd_create takes a clock id and flags and has no memory preconditions.
        let fd = unsafe { libc::timerfd_create(clock.as_raw(), flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(TimerFd { fd })
    }

    fn settime(&self, flags: libc::c_int, first_ns: u64, interval_ns: u64) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: timespec_from_ns(interval_ns),
            it_value: timespec_from_ns(first_ns),
        };
        // SAFETY: `spec` is a valid itimerspec; the old-value pointer may be null.
        let rc = unsafe {
            libc::timerfd_settime(self.fd.as_raw_fd(), flags, &spec, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Arms the timer to expire first at the absolute time `first_ns` on its clock, then every
    /// `interval_ns` (0 = once). A `first_ns` of 0 would disarm, so it is raised to 1 ns.
    ///
    /// # Errors
    /// Whatever `timerfd_settime` reports.
    pub fn set_absolute_ns(&self, first_ns: u64, interval_ns: u64) -> io::Result<()> {
        self.settime(libc::TFD_TIMER_ABSTIME, first_ns.max(1), interval_ns)
    }

    /// Arms the timer to expire `first_ns` from now (at least 1 ns), then every `interval_ns`.
    ///
    /// # Errors
    /// Whatever `timerfd_settime` reports.
    pub fn set_relative_ns(&self, first_ns: u64, interval_ns: u64) -> io::Result<()> {
        self.settime(0, first_ns.max(1), interval_ns)
    }

    /// Disarms the timer.
    ///
    /// # Errors
    /// Whatever `timerfd_settime` reports.
    pub fn disarm(&self) -> io::Result<()> {
        self.settime(0, 0, 0)
    }

    /// Reads the number of expirations since the last read; blocks until at least one unless
    /// the timer is non-blocking, which returns `WouldBlock` instead.
    ///
    /// # Errors
    /// `WouldBlock` (non-blocking, nothing expired); `EINTR` is retried.
    pub fn read_expirations(&self) -> io::Result<u64> {
        let mut buf = [0_u8; 8];
        loop {
            // SAFETY: `buf` is 8 writable bytes, the size timerfd reads require.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n == 8 {
                return Ok(u64::from_ne_bytes(buf));
            }
            let err = io::Error::last_os_error();
            if n < 0 && err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if n < 0 {
                return Err(err);
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("timerfd read returned {n} bytes instead of 8"),
            ));
        }
    }
}

impl AsFd for TimerFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::clock::monotonic_now_ns;

    #[test]
    fn periodic_timer_counts_expirations() {
        let timer = TimerFd::new(ClockId::Monotonic, false).unwrap();
        let start = monotonic_now_ns();
        timer.set_absolute_ns(start + 50_000, 50_000).unwrap();
        let mut total = 0;
        while total < 3 {
            total += timer.read_expirations().unwrap();
        }
        assert!(monotonic_now_ns() >= start + 150_000);
    }

    #[test]
    fn nonblocking_timer_says_would_block() {
        let timer = TimerFd::new(ClockId::Monotonic, true).unwrap();
        let err = timer.read_expirations().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        timer.set_relative_ns(1, 0).unwrap();
        let mut n = 0;
        while n == 0 {
            match timer.read_expirations() {
                Ok(count) => n = count,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) => panic!("{e}"),
            }
        }
        timer.disarm().unwrap();
        assert_eq!(n, 1);
    }
}
