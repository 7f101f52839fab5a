//! [`EventSource`]: an eventfd as a hardware-task event source, raised by [`Notifier`]s.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use super::FdSource;
use crate::sys::eventfd::EventFd;

/// A non-blocking eventfd; its event is the sum of the values signalled since the last read
/// (reading resets the counter to zero).
#[derive(Debug)]
pub struct EventSource {
    fd: EventFd,
}

impl EventSource {
    /// A new event line with nothing pending.
    ///
    /// # Errors
    /// Whatever `eventfd` reports.
    pub fn new() -> io::Result<EventSource> {
        Ok(EventSource {
            fd: EventFd::new(0, true)?,
        })
    }

    /// A handle other threads (or, through the descriptor, other processes) use to raise the
    /// line. It shares the counter.
    ///
    /// # Errors
    /// Whatever duplicating the descriptor reports.
    pub fn notifier(&self) -> io::Result<Notifier> {
        Ok(Notifier {
            fd: self.fd.try_clone()?,
        })
    }
}

impl FdSource for EventSource {
    type Event<'a> = u64;

    fn read_event(&mut self) -> io::Result<Option<u64>> {
        self.fd.read()
    }
}

impl AsFd for EventSource {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Raises an [`EventSource`]: one `write(2)`, no allocation, callable from any thread.
#[derive(Debug)]
pub struct Notifier {
    fd: EventFd,
}

impl Notifier {
    /// Adds 1 to the counter.
    ///
    /// # Errors
    /// `WouldBlock` only if 2^64 − 2 signals are pending unread.
    pub fn notify(&self) -> io::Result<()> {
        self.fd.write(1)
    }

    /// Adds `n` (1 ..= 2^64 − 2) to the counter.
    ///
    /// # Errors
    /// `EINVAL` for `u64::MAX`; `WouldBlock` if the counter would overflow.
    pub fn notify_n(&self, n: u64) -> io::Result<()> {
        self.fd.write(n)
    }
}

impl AsFd for Notifier {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fd::Poller;

    #[test]
    fn signals_from_another_thread_add_up_and_are_cleared_by_the_read() {
        let mut source = EventSource::new().unwrap();
        let notifier = source.notifier().unwrap();
        let mut poller = Poller::new().unwrap();
        poller.register(&source, 3).unwrap();
        let sender = std::thread::spawn(move || {
            for _ in 0..10 {
                notifier.notify().unwrap();
            }
            notifier.notify_n(5).unwrap();
            notifier
        });
        let notifier = sender.join().unwrap();
        let mut ready = [Default::default(); 1];
        assert_eq!(poller.wait_until(&mut ready, None).unwrap(), 1);
        assert_eq!(source.read_event().unwrap(), Some(15));
        assert_eq!(source.read_event().unwrap(), None);
        assert!(notifier.notify_n(u64::MAX).is_err());
    }
}
