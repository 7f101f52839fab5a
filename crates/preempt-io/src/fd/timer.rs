//! [`TimerSource`]: a timerfd as a hardware-task event source.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use super::FdSource;
use crate::sys::clock::ClockId;
use crate::sys::timerfd::TimerFd;

/// A non-blocking timer on `CLOCK_MONOTONIC` (or another clock); its event is the number of
/// expirations since the last read (more than 1 means the task fell behind a periodic timer).
#[derive(Debug)]
pub struct TimerSource {
    timer: TimerFd,
}

impl TimerSource {
    /// A disarmed timer on `CLOCK_MONOTONIC`.
    ///
    /// # Errors
    /// Whatever `timerfd_create` reports.
    pub fn new() -> io::Result<TimerSource> {
        Self::on_clock(ClockId::Monotonic)
    }

    /// A disarmed timer on `clock`.
    ///
    /// # Errors
    /// Whatever `timerfd_create` reports (`EINVAL` for `MonotonicRaw`).
    pub fn on_clock(clock: ClockId) -> io::Result<TimerSource> {
        Ok(TimerSource {
            timer: TimerFd::new(clock, true)?,
        })
    }

    /// Fires first at the absolute time `first_ns`, then every `period_ns` (0 = once). Drift-free:
    /// the kernel computes every expiry from `first_ns`.
    ///
    /// # Errors
    /// Whatever `timerfd_settime` reports.
    pub fn arm_at(&self, first_ns: u64, period_ns: u64) -> io::Result<()> {
        self.timer.set_absolute_ns(first_ns, period_ns)
    }

    /// Stops the timer (pending expirations are discarded).
    ///
    /// # Errors
    /// Whatever `timerfd_settime` reports.
    pub fn disarm(&self) -> io::Result<()> {
        self.timer.disarm()
    }

    /// The underlying timer.
    pub fn timer(&self) -> &TimerFd {
        &self.timer
    }
}

impl FdSource for TimerSource {
    type Event<'a> = u64;

    fn read_event(&mut self) -> io::Result<Option<u64>> {
        match self.timer.read_expirations() {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl AsFd for TimerSource {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.timer.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fd::Poller;
    use crate::sys::clock::monotonic_now_ns;

    #[test]
    fn a_periodic_timer_reports_expirations_and_is_acknowledged_by_reading() {
        let mut t = TimerSource::new().unwrap();
        assert_eq!(t.read_event().unwrap(), None, "disarmed: nothing pending");
        let mut poller = Poller::new().unwrap();
        poller.register(&t, 9).unwrap();
        t.arm_at(monotonic_now_ns() + 20_000, 20_000).unwrap();
        let mut total = 0;
        let mut ready = [Default::default(); 2];
        while total < 3 {
            let n = poller.wait_until(&mut ready, None).unwrap();
            assert_eq!(n, 1);
            assert_eq!(ready[0].token, 9);
            total += t.read_event().unwrap().expect("readable means expired");
        }
        t.disarm().unwrap();
        assert_eq!(
            t.read_event().unwrap(),
            None,
            "disarming discards expirations"
        );
    }
}
