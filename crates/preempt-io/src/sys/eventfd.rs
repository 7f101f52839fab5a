//! `eventfd(2)`: a 64-bit counter behind a file descriptor, used as a wake-up line.
//!
//! The RTIO layer uses eventfds as the simulated IMU's INT pin (the simulator adds 1 per
//! interrupt, the reader's read returns and clears the count), as the wake-up line of an RTIO
//! context (another thread signals an await or completes a software op), and as io_uring's
//! completion notification for consumers on other threads.
//!
//! ```
//! use preempt_io::sys::eventfd::EventFd;
//! let line = EventFd::new(0, true)?;
//! assert!(line.read()?.is_none());
//! line.write(2)?;
//! line.write(1)?;
//! assert_eq!(line.read()?, Some(3));
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// An eventfd; closed on drop.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
    nonblocking: bool,
}

impl EventFd {
    /// Creates an eventfd with the counter at `initial` (close-on-exec; non-blocking if asked).
    ///
    /// # Errors
    /// Whatever `eventfd` reports (`EMFILE`, `ENOMEM`).
    pub fn new(initial: u32, nonblocking: bool) -> io::Result<EventFd> {
        let mut flags = libc::EFD_CLOEXEC;
        if nonblocking {
            flags |= libc::EFD_NONBLOCK;
        }
        // SAFETY: eventfd takes an initial value and flags and has no memory preconditions.
        let fd = unsafe { libc::eventfd(initial, flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(EventFd { fd, nonblocking })
    }

    /// Adopts an eventfd inherited from a parent process (e.g. the simulator's INT line).
    ///
    /// The caller states whether the descriptor is non-blocking; nothing is checked but that
    /// the descriptor is open.
    ///
    /// # Errors
    /// `EBADF` if `fd` is not an open descriptor.
    pub fn from_owned(fd: OwnedFd, nonblocking: bool) -> io::Result<EventFd> {
        super::fdio::check_open(fd.as_fd())?;
        Ok(EventFd { fd, nonblocking })
    }

    /// Adds `value` to the counter (raises the line). Blocks only if the counter would overflow
    /// (which needs 2^64 - 1 pending events) and the descriptor is blocking.
    ///
    /// # Errors
    /// `EINVAL` for `u64::MAX`; `EAGAIN` if non-blocking and the counter would overflow.
    pub fn write(&self, value: u64) -> io::Result<()> {
        let bytes = value.to_ne_bytes();
        let n = super::fdio::write(self.fd.as_fd(), &bytes)?;
        debug_assert_eq!(n, 8, "eventfd writes are all-or-nothing");
        Ok(())
    }

    /// Reads and clears the counter. Returns `Ok(None)` when the descriptor is non-blocking and
    /// the counter is zero; a blocking descriptor waits for a non-zero counter.
    ///
    /// # Errors
    /// Whatever `read` reports but `EAGAIN` (and `EINTR`, which is retried).
    pub fn read(&self) -> io::Result<Option<u64>> {
        let mut bytes = [0_u8; 8];
        match super::fdio::read(self.fd.as_fd(), &mut bytes) {
            Ok(8) => Ok(Some(u64::from_ne_bytes(bytes))),
            Ok(n) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("eventfd read returned {n} bytes, expected 8"),
            )),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && self.nonblocking => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether the descriptor was created or adopted as non-blocking.
    pub fn is_nonblocking(&self) -> bool {
        self.nonblocking
    }

    /// Duplicates the descriptor (both copies share one counter).
    ///
    /// # Errors
    /// Whatever `fcntl(F_DUPFD_CLOEXEC)` reports.
    pub fn try_clone(&self) -> io::Result<EventFd> {
        Ok(EventFd {
            fd: self.fd.try_clone()?,
            nonblocking: self.nonblocking,
        })
    }
}

impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl From<EventFd> for OwnedFd {
    fn from(e: EventFd) -> OwnedFd {
        e.fd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_accumulate_and_clear() {
        let e = EventFd::new(5, true).unwrap();
        assert_eq!(e.read().unwrap(), Some(5));
        assert_eq!(e.read().unwrap(), None);
        e.write(1).unwrap();
        let dup = e.try_clone().unwrap();
        dup.write(1).unwrap();
        assert_eq!(e.read().unwrap(), Some(2));
    }

    #[test]
    fn max_value_is_rejected() {
        let e = EventFd::new(0, true).unwrap();
        assert!(e.write(u64::MAX).is_err());
    }
}
