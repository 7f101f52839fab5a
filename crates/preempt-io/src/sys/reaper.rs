//! A forked child that removes a directory when its parent dies, however it dies.
//!
//! # Background
//! The tracing engine creates a tracefs instance (a directory under
//! `/sys/kernel/tracing/instances/`) that keeps its ring buffers (megabytes of kernel memory)
//! and its enabled events until somebody removes it. `Drop` removes it on a normal exit and on
//! an unwinding panic, but not when the process is killed (SIGKILL, an unhandled SIGINT, an
//! abort).
//!
//! # Solution
//! [`Reaper::spawn`] forks a child that blocks reading a pipe whose only write end the parent
//! holds. When the parent exits *for any reason* the kernel closes that end, the child's read
//! returns end-of-file, and the child `rmdir`s the directory and exits. On a normal drop the
//! parent closes the pipe itself and reaps the child with `waitpid`.
//!
//! # Why it works
//! Between `fork` and `_exit` the child calls only async-signal-safe functions (`close`,
//! `close_range`, `read`, `rmdir`, `nanosleep`, `setsid`, `_exit`) on memory prepared before the fork, so it is safe to fork
//! from a multi-threaded parent. Its write end is closed in the child right after the fork, so
//! only the parent (and children it forks without exec later, which are short-lived) keeps the
//! pipe open. The child ignores SIGINT and runs in its own session, so a terminal's Ctrl-C
//! reaches the parent only.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A child process that removes one directory when the parent dies or drops this.
#[derive(Debug)]
pub struct Reaper {
    pid: libc::pid_t,
    /// Write end of the pipe; closing it tells the child to act.
    wake: Option<OwnedFd>,
}

impl Reaper {
    /// Forks the reaper child for `dir`.
    ///
    /// # Errors
    /// `InvalidInput` for a path with a NUL byte; otherwise whatever `pipe2`/`fork` report.
    pub fn spawn(dir: &Path) -> io::Result<Reaper> {
        let path = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
        let (read_end, write_end) = super::fdio::pipe()?;
        let (r, w) = (read_end.as_raw_fd(), write_end.as_raw_fd());
        // SAFETY: fork has no preconditions; the child below only makes async-signal-safe
        // calls on memory that existed before the fork (`path`, the two fd numbers).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // Child: only async-signal-safe calls from here to `_exit`.
            // SAFETY: close/close_range/setsid/signal/read/rmdir/nanosleep/_exit are async-signal-safe
            // and touch no memory of the (copied) parent but `path`, a valid NUL-terminated
            // string, and `byte`, a valid one-byte buffer; `_exit` never returns, so no Rust
            // destructor or atexit handler runs in the child.
            unsafe {
                libc::close(w);
                // Keep only stdio and our read end: an inherited descriptor of a tracefs file
                // would keep another instance busy, and an inherited write end of another
                // reaper's pipe would keep that reaper from ever seeing end-of-file.
                debug_assert!(r >= 3, "stdio is open, so pipe2 returns 3 or more");
                if r > 3 {
                    libc::close_range(3, (r - 1) as libc::c_uint, 0);
                }
                libc::close_range((r + 1) as libc::c_uint, libc::c_uint::MAX, 0);
                libc::setsid();
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
                let mut byte = 0u8;
                loop {
                    let n = libc::read(r, (&raw mut byte).cast(), 1);
                    if n == 0 {
                        break;
                    }
                    if n < 0 && *libc::__errno_location() != libc::EINTR {
                        break;
                    }
                }
                // The dying parent's other descriptors (an open trace_pipe_raw keeps an
                // instance busy) may be released a little after its pipe end (the kernel
                // defers the final close of files): retry EBUSY for up to a second.
                let pause = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 10_000_000,
                };
                for _ in 0..100 {
                    if libc::rmdir(path.as_ptr()) == 0 || *libc::__errno_location() != libc::EBUSY {
                        break;
                    }
                    libc::nanosleep(&pause, std::ptr::null_mut());
                }
                libc::_exit(0);
            }
        }
        drop(read_end);
        Ok(Reaper {
            pid,
            wake: Some(write_end),
        })
    }

    /// The child's process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Tells the child to remove the directory now (it may already be gone) and waits for it.
    ///
    /// # Errors
    /// Whatever `waitpid` reports.
    pub fn finish(mut self) -> io::Result<()> {
        self.finish_inner()
    }

    fn finish_inner(&mut self) -> io::Result<()> {
        if self.wake.take().is_none() {
            return Ok(());
        }
        let mut status = 0;
        loop {
            // SAFETY: `pid` is our own child, not yet reaped (we reap it only here, once);
            // `status` is a valid, writable int.
            let rc = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if rc == self.pid {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // Nothing useful to do with an error in drop: the child acts on the closed pipe anyway.
        let _ = self.finish_inner();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_the_directory_when_finished() {
        let base = std::env::temp_dir().join(format!("preempt-reaper-{}", std::process::id()));
        std::fs::create_dir(&base).unwrap();
        let reaper = Reaper::spawn(&base).unwrap();
        assert!(base.exists(), "the reaper must wait for the parent");
        reaper.finish().unwrap();
        assert!(!base.exists());
    }
}
