//! [`Poller`]: epoll over many sources, waiting until an absolute `CLOCK_MONOTONIC` deadline.
//!
//! `epoll_wait` takes a *relative* timeout in milliseconds: an executor that wants to wake at
//! its next release time would have to subtract the current time (and lose whatever happens
//! between that subtraction and the call) and round to a millisecond. The poller instead keeps
//! a one-shot timerfd in its epoll set and arms it with `TFD_TIMER_ABSTIME` at the deadline,
//! which is exact to the nanosecond and immune to the caller being preempted before it sleeps.
//! The timer is re-armed only when the deadline changes, so an executor waiting repeatedly for
//! the same release pays one `timerfd_settime` per release, not per wake-up.

use std::io;
use std::os::fd::AsFd;

use crate::sys::clock::ClockId;
use crate::sys::clock::monotonic_now_ns;
use crate::sys::epoll::{Epoll, Event, Interest};
use crate::sys::timerfd::TimerFd;

/// The token of the internal deadline timer; not available to sources.
pub const DEADLINE_TOKEN: u64 = u64::MAX;

/// Waits for several [`FdSource`](super::FdSource)s (or any descriptors) at once.
#[derive(Debug)]
pub struct Poller {
    epoll: Epoll,
    timer: TimerFd,
    armed_ns: Option<u64>,
    raw: [Event; 32],
}

impl Poller {
    /// An empty poller.
    ///
    /// # Errors
    /// Whatever `epoll_create1`, `timerfd_create` or `epoll_ctl` report.
    pub fn new() -> io::Result<Poller> {
        let epoll = Epoll::new()?;
        let timer = TimerFd::new(ClockId::Monotonic, true)?;
        epoll.add(timer.as_fd(), Interest::READ, DEADLINE_TOKEN)?;
        Ok(Poller {
            epoll,
            timer,
            armed_ns: None,
            raw: [Event::default(); 32],
        })
    }

    /// Watches `source` for readability (level-triggered), reported with `token`.
    ///
    /// # Errors
    /// `InvalidInput` for [`DEADLINE_TOKEN`]; `EEXIST` if already registered; `EPERM` for a
    /// descriptor epoll cannot watch (a regular file).
    pub fn register(&self, source: &impl AsFd, token: u64) -> io::Result<()> {
        if token == DEADLINE_TOKEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "token u64::MAX is reserved for the poller's deadline timer",
            ));
        }
        self.epoll.add(source.as_fd(), Interest::READ, token)
    }

    /// Stops watching `source`.
    ///
    /// # Errors
    /// `ENOENT` if it was not registered.
    pub fn deregister(&self, source: &impl AsFd) -> io::Result<()> {
        self.epoll.delete(source.as_fd())
    }

    /// Waits until at least one source is readable or `deadline_ns` (absolute
    /// `CLOCK_MONOTONIC`; `None` = no deadline) has passed, fills `ready` with up to
    /// `ready.len()` (at most 32) readiness reports and returns how many; 0 means the deadline
    /// passed. A deadline already in the past polls without sleeping. Signals (`EINTR`) do not
    /// end the wait early.
    ///
    /// # Errors
    /// Whatever `epoll_wait` or `timerfd_settime` report.
    pub fn wait_until(
        &mut self,
        ready: &mut [Event],
        deadline_ns: Option<u64>,
    ) -> io::Result<usize> {
        loop {
            let mut timeout_ms = None;
            match deadline_ns {
                Some(d) if monotonic_now_ns() >= d => timeout_ms = Some(0),
                Some(d) if self.armed_ns != Some(d) => {
                    self.timer.set_absolute_ns(d, 0)?;
                    self.armed_ns = Some(d);
                }
                Some(_) => {}
                None if self.armed_ns.is_some() => {
                    self.timer.disarm()?;
                    self.armed_ns = None;
                }
                None => {}
            }
            let want = ready.len().min(self.raw.len()).max(1);
            let n = self.epoll.wait(&mut self.raw[..want], timeout_ms)?;
            let mut out = 0;
            let mut expired = false;
            for ev in &self.raw[..n] {
                if ev.token == DEADLINE_TOKEN {
                    expired = true;
                } else if out < ready.len() {
                    ready[out] = *ev;
                    out += 1;
                }
            }
            if expired {
                // One-shot: reading clears the readiness; the timer is now disarmed.
                match self.timer.read_expirations() {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                self.armed_ns = None;
            }
            if out > 0 || expired || timeout_ms == Some(0) {
                return Ok(out);
            }
            // n == 0 without a timeout: interrupted by a signal; wait again.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fd::{EventSource, FdSource};

    #[test]
    fn the_deadline_ends_the_wait_and_never_before() {
        let mut poller = Poller::new().unwrap();
        let source = EventSource::new().unwrap();
        poller.register(&source, 1).unwrap();
        let mut ready = [Event::default(); 4];
        let deadline = monotonic_now_ns() + 2_000_000;
        assert_eq!(poller.wait_until(&mut ready, Some(deadline)).unwrap(), 0);
        assert!(monotonic_now_ns() >= deadline, "woke before the deadline");
        // Same (past) deadline again: polls and returns at once.
        assert_eq!(poller.wait_until(&mut ready, Some(deadline)).unwrap(), 0);
    }

    #[test]
    fn a_ready_source_wins_over_a_later_deadline_and_the_timer_is_reused() {
        let mut poller = Poller::new().unwrap();
        let mut source = EventSource::new().unwrap();
        poller.register(&source, 7).unwrap();
        let n = source.notifier().unwrap();
        let mut ready = [Event::default(); 4];
        let far = monotonic_now_ns() + 60_000_000_000;
        for _ in 0..3 {
            n.notify().unwrap();
            assert_eq!(poller.wait_until(&mut ready, Some(far)).unwrap(), 1);
            assert_eq!(ready[0].token, 7);
            assert!(ready[0].readable);
            assert_eq!(source.read_event().unwrap(), Some(1));
        }
        assert_eq!(poller.armed_ns, Some(far));
        // Switching to no deadline disarms the timer; a new, near deadline re-arms it.
        n.notify().unwrap();
        assert_eq!(poller.wait_until(&mut ready, None).unwrap(), 1);
        assert_eq!(poller.armed_ns, None);
        source.read_event().unwrap();
        let near = monotonic_now_ns() + 1_000_000;
        assert_eq!(poller.wait_until(&mut ready, Some(near)).unwrap(), 0);
    }

    #[test]
    fn the_reserved_token_and_unwatchable_files_are_refused() {
        let poller = Poller::new().unwrap();
        let source = EventSource::new().unwrap();
        let err = poller.register(&source, DEADLINE_TOKEN).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        poller.register(&source, 1).unwrap();
        assert!(poller.register(&source, 2).is_err(), "registered twice");
        poller.deregister(&source).unwrap();
        assert!(poller.deregister(&source).is_err());
        let file = std::fs::File::open("/proc/self/status").unwrap();
        assert!(poller.register(&file, 3).is_err());
    }
}
