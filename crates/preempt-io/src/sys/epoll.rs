//! `epoll(7)`: readiness notification for the RTIO fallback backend.
//!
//! Used where io_uring is unavailable (`kernel.io_uring_disabled`, a seccomp filter, an old
//! kernel): the RTIO executor parks operations on descriptors that are not ready and retries
//! them when epoll reports readiness. Also used to probe whether a descriptor can be polled at
//! all (regular files cannot: `epoll_ctl` returns `EPERM`).
//!
//! ```
//! use preempt_io::sys::{epoll::{Epoll, Interest}, eventfd::EventFd};
//! use std::os::fd::AsFd;
//! let ep = Epoll::new()?;
//! let e = EventFd::new(0, true)?;
//! ep.add(e.as_fd(), Interest::READ, 7)?;
//! let mut events = [Default::default(); 4];
//! assert_eq!(ep.wait(&mut events, Some(0))?, 0);
//! e.write(1)?;
//! assert_eq!(ep.wait(&mut events, Some(0))?, 1);
//! assert_eq!(events[0].token, 7);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Readiness a registration asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interest(u32);

impl Interest {
    /// Readable (`EPOLLIN`).
    pub const READ: Interest = Interest(libc::EPOLLIN as u32);
    /// Writable (`EPOLLOUT`).
    pub const WRITE: Interest = Interest(libc::EPOLLOUT as u32);
    /// Readable or writable.
    pub const BOTH: Interest = Interest((libc::EPOLLIN | libc::EPOLLOUT) as u32);
    /// No readiness (keeps the registration, reports only errors and hang-ups).
    pub const NONE: Interest = Interest(0);

    /// The union of two interests.
    #[must_use]
    pub fn with(self, other: Interest) -> Interest {
        Interest(self.0 | other.0)
    }
}

/// One readiness report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// The token given at registration.
    pub token: u64,
    /// Readable (or hung up / in error: a read will not block).
    pub readable: bool,
    /// Writable (or in error: a write will not block).
    pub writable: bool,
}

/// An epoll instance; closed on drop.
#[derive(Debug)]
pub struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    /// Creates an epoll instance (close-on-exec).
    ///
    /// # Errors
    /// Whatever `epoll_create1` reports.
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: epoll_create1 takes flags only.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Epoll { fd })
    }

    fn ctl(
        &self,
        op: libc::c_int,
        fd: BorrowedFd<'_>,
        interest: Interest,
        token: u64,
    ) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: interest.0,
            u64: token,
        };
        // SAFETY: `ev` is a valid epoll_event for the duration of the call.
        if unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd.as_raw_fd(), &mut ev) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Registers `fd` (level-triggered) with `token`.
    ///
    /// # Errors
    /// `EPERM` if `fd` cannot be polled (a regular file), `EEXIST` if already registered.
    pub fn add(&self, fd: BorrowedFd<'_>, interest: Interest, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, interest, token)
    }

    /// Changes the interest of a registered `fd`.
    ///
    /// # Errors
    /// `ENOENT` if `fd` is not registered.
    pub fn modify(&self, fd: BorrowedFd<'_>, interest: Interest, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, interest, token)
    }

    /// Removes `fd`.
    ///
    /// # Errors
    /// `ENOENT` if `fd` is not registered.
    pub fn delete(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, Interest::NONE, 0)
    }

    /// Waits for readiness: `timeout_ms` None blocks, Some(0) polls. Fills `events` and returns
    /// how many were filled. `EINTR` returns 0 events rather than an error.
    ///
    /// # Errors
    /// Whatever `epoll_wait` reports but `EINTR`.
    pub fn wait(&self, events: &mut [Event], timeout_ms: Option<u32>) -> io::Result<usize> {
        const BATCH: usize = 32;
        let mut raw = [libc::epoll_event { events: 0, u64: 0 }; BATCH];
        let max = events.len().min(BATCH);
        let timeout = timeout_ms.map_or(-1, |ms| i32::try_from(ms).unwrap_or(i32::MAX));
        let max_c = i32::try_from(max).unwrap_or(i32::MAX);
        // SAFETY: `raw` has room for `max` events and outlives the call.
        let n = unsafe { libc::epoll_wait(self.fd.as_raw_fd(), raw.as_mut_ptr(), max_c, timeout) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(e);
        }
        let n = n.unsigned_abs() as usize;
        let err = (libc::EPOLLERR | libc::EPOLLHUP) as u32;
        for (out, ev) in events.iter_mut().zip(&raw[..n]) {
            let bits = ev.events;
            *out = Event {
                token: ev.u64,
                readable: bits & (libc::EPOLLIN as u32 | err) != 0,
                writable: bits & (libc::EPOLLOUT as u32 | err) != 0,
            };
        }
        Ok(n)
    }
}

/// Whether `fd` can be polled (epoll accepts it). Regular files and memfds cannot: they are
/// always ready, which is why the RTIO layer runs their I/O inline instead of waiting on it.
///
/// # Errors
/// Errors other than the `EPERM` that means "not pollable".
pub(crate) fn is_pollable(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let ep = Epoll::new()?;
    match ep.add(fd, Interest::READ, 0) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => Ok(false),
        Err(e) => Err(e),
    }
}

impl AsFd for Epoll {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memfd_is_not_pollable_eventfd_is() {
        let m = crate::sys::memfd::MemFd::new("p", 16).unwrap();
        assert!(!is_pollable(m.as_fd()).unwrap());
        let e = crate::sys::eventfd::EventFd::new(0, true).unwrap();
        assert!(is_pollable(e.as_fd()).unwrap());
    }
}
