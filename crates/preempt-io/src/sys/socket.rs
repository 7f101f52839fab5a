//! `socketpair(2)` with `SOCK_SEQPACKET`: a connected, message-preserving, bidirectional
//! channel, used as the simulated IMU's asynchronous "SPI bus" (one command message per
//! transfer, one response message per read; see `rtio::simimu`).
//!
//! Why SEQPACKET: message boundaries are kept (a read returns exactly one response, never two
//! glued together), order is kept, and the descriptor is pollable, so io_uring arms a poll for
//! a read that is not ready instead of punting it to an io-wq worker.
//!
//! ```
//! use preempt_io::sys::{fdio, socket};
//! use std::os::fd::AsFd;
//! let (a, b) = socket::seqpacket_pair()?;
//! fdio::write(a.as_fd(), b"cmd")?;
//! let mut buf = [0_u8; 16];
//! assert_eq!(fdio::read(b.as_fd(), &mut buf)?, 3);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// Creates a connected `AF_UNIX` / `SOCK_SEQPACKET` pair (close-on-exec, blocking).
///
/// # Errors
/// Whatever `socketpair` reports (`EMFILE`, `ENFILE`, `ENOMEM`).
pub fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1_i32; 2];
    // SAFETY: `fds` is a valid, writable array of two c_ints, as socketpair requires.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    debug_assert!(fds[0] >= 0 && fds[1] >= 0);
    // SAFETY: on success both descriptors are freshly created and owned by nobody else.
    let pair = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok(pair)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fdio;
    use std::os::fd::AsFd;

    #[test]
    fn messages_keep_their_boundaries() {
        let (a, b) = seqpacket_pair().unwrap();
        fdio::write(a.as_fd(), &[1, 2, 3]).unwrap();
        fdio::write(a.as_fd(), &[4]).unwrap();
        let mut buf = [0_u8; 8];
        assert_eq!(fdio::read(b.as_fd(), &mut buf).unwrap(), 3);
        assert_eq!(fdio::read(b.as_fd(), &mut buf).unwrap(), 1);
        assert_eq!(buf[0], 4);
        // Bidirectional.
        fdio::write(b.as_fd(), &[9; 5]).unwrap();
        assert_eq!(fdio::read(a.as_fd(), &mut buf).unwrap(), 5);
    }
}
