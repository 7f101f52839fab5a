//! Plain descriptor I/O: `pipe`, `read`, `write`, `pread`, `pwrite`, `fstat`, `fcntl(O_NONBLOCK)`,
//! plus the process-wide CPU and context-switch counters the RTIO benchmark reads.
//!
//! These are the "bus transfers" of the thread-based sensor reader and of the epoll RTIO
//! backend. All retry `EINTR`, none allocates.
//!
//! ```
//! use preempt_io::sys::{fdio, memfd::MemFd};
//! use std::os::fd::AsFd;
//! let f = MemFd::new("x", 64)?;
//! assert_eq!(fdio::pwrite(f.as_fd(), b"hi", 10)?, 2);
//! let mut b = [0_u8; 2];
//! fdio::pread(f.as_fd(), &mut b, 10)?;
//! assert_eq!(&b, b"hi");
//! assert_eq!(fdio::file_kind(f.as_fd())?, fdio::FileKind::Regular);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

fn retry(mut f: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        let n = f();
        if n >= 0 {
            return Ok(n.unsigned_abs());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn offset(off: u64) -> io::Result<libc::off_t> {
    libc::off_t::try_from(off)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file offset exceeds off_t"))
}

/// Creates a pipe with both ends close-on-exec; returns `(read end, write end)`.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: `fds` is a valid, writable array of two c_ints, as pipe2 requires.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    debug_assert!(fds[0] >= 0 && fds[1] >= 0);
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `read(2)` into `buf`; returns the byte count (0 = end of file).
///
/// # Errors
/// Whatever `read` reports (`WouldBlock` on an empty non-blocking descriptor).
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call.
    retry(|| unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

/// `write(2)` of `buf`; returns the byte count written.
///
/// # Errors
/// Whatever `write` reports.
pub fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the duration of the call.
    retry(|| unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) })
}

/// `pread(2)`: reads at `off` without moving the file position.
///
/// # Errors
/// Whatever `pread` reports (`ESPIPE` on a pipe or socket).
pub fn pread(fd: BorrowedFd<'_>, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let off = offset(off)?;
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call.
    retry(|| unsafe { libc::pread(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), off) })
}

/// `pwrite(2)`: writes at `off` without moving the file position.
///
/// # Errors
/// Whatever `pwrite` reports.
pub fn pwrite(fd: BorrowedFd<'_>, buf: &[u8], off: u64) -> io::Result<usize> {
    let off = offset(off)?;
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the duration of the call.
    retry(|| unsafe { libc::pwrite(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), off) })
}

/// What kind of file a descriptor refers to (from `fstat`'s `st_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file (including memfd): always readable, seekable, not pollable.
    Regular,
    /// A character device (`/dev/iio:deviceN`, a tty, `/dev/null`).
    CharDevice,
    /// A pipe or FIFO.
    Fifo,
    /// A socket.
    Socket,
    /// An anonymous-inode file (eventfd, timerfd, epoll, io_uring).
    Anonymous,
    /// Anything else (directory, block device, symlink).
    Other,
}

fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    // SAFETY: stat is plain data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable stat buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// Classifies `fd` with `fstat`.
///
/// # Errors
/// Whatever `fstat` reports (`EBADF`).
pub fn file_kind(fd: BorrowedFd<'_>) -> io::Result<FileKind> {
    let st = fstat(fd)?;
    Ok(match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => FileKind::Regular,
        libc::S_IFCHR => FileKind::CharDevice,
        libc::S_IFIFO => FileKind::Fifo,
        libc::S_IFSOCK => FileKind::Socket,
        // eventfd, timerfd, epoll and io_uring descriptors have no file type bits (anon inode).
        0 => FileKind::Anonymous,
        _ => FileKind::Other,
    })
}

/// Size of the file behind `fd` in bytes.
///
/// # Errors
/// Whatever `fstat` reports; `InvalidData` for a negative size.
pub(crate) fn file_size(fd: BorrowedFd<'_>) -> io::Result<usize> {
    let st = fstat(fd)?;
    usize::try_from(st.st_size)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "negative file size"))
}

/// Checks that `fd` is open (`fcntl(F_GETFD)`).
///
/// # Errors
/// `EBADF` if it is not.
pub(crate) fn check_open(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: F_GETFD reads descriptor flags; no memory arguments.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `O_NONBLOCK` is set on the open file description.
///
/// # Errors
/// Whatever `fcntl(F_GETFL)` reports.
pub fn is_nonblocking(fd: BorrowedFd<'_>) -> io::Result<bool> {
    // SAFETY: F_GETFL reads status flags; no memory arguments.
    let fl = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if fl < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fl & libc::O_NONBLOCK != 0)
}

/// Sets or clears `O_NONBLOCK` on the open file description (shared by all its duplicates).
///
/// # Errors
/// Whatever `fcntl` reports.
pub fn set_nonblocking(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    // SAFETY: F_GETFL reads status flags; no memory arguments.
    let fl = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if fl < 0 {
        return Err(io::Error::last_os_error());
    }
    let new = if on {
        fl | libc::O_NONBLOCK
    } else {
        fl & !libc::O_NONBLOCK
    };
    // SAFETY: F_SETFL with an int flag word; no memory arguments.
    if new != fl && unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, new) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Opens the file behind `fd` again, read-write, as a NEW open file description with
/// `O_NONBLOCK` (through `/proc/self/fd/N`), so the flag does not change the original's
/// description (which another process may share, e.g. the simulator's register memfd).
///
/// Why: io_uring treats a file without `FMODE_NOWAIT` as blocking and punts every read to an
/// io-wq worker thread, unless the description is `O_NONBLOCK` (`io_file_get_flags` then
/// sets `REQ_F_SUPPORT_NOWAIT` and the read runs inline in the submitting context).
///
/// # Errors
/// Whatever `open` reports (`ENOENT` without /proc, `EACCES`).
pub fn reopen_nonblocking(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let path = format!("/proc/self/fd/{}\0", fd.as_raw_fd());
    // SAFETY: `path` is NUL-terminated and outlives the call; the flags take no extra argument
    // (no O_CREAT).
    let raw = unsafe {
        libc::open(
            path.as_ptr().cast(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `open` returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Opens `path` read-only, `O_NONBLOCK | O_CLOEXEC` (an IIO character device, a FIFO: a
/// FIFO opened this way does not wait for a writer).
///
/// # Errors
/// Whatever `open` reports; `InvalidInput` for a path with a NUL byte.
pub(crate) fn open_read_nonblocking(path: &std::path::Path) -> io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: `c` is NUL-terminated and outlives the call; no O_CREAT, so no mode argument.
    let raw = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `open` returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Creates a named pipe (FIFO) at `path` with mode 0600.
///
/// # Errors
/// Whatever `mkfifo` reports (`EEXIST`); `InvalidInput` for a path with a NUL byte.
pub fn mkfifo(path: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: `c` is NUL-terminated and outlives the call.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Voluntary context switches of the calling thread (`getrusage(RUSAGE_THREAD)`): each is a
/// sleep (a wake-up follows), so a difference counts the thread's wake-ups.
///
/// # Errors
/// Whatever `getrusage` reports.
pub fn thread_voluntary_switches() -> io::Result<u64> {
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut raw: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `raw` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut raw) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(u64::try_from(raw.ru_nvcsw).unwrap_or(0))
}

/// CPU time consumed by all threads of this process, ns (`CLOCK_PROCESS_CPUTIME_ID`).
///
/// # Errors
/// Whatever `clock_gettime` reports (nothing on Linux).
pub fn process_cpu_ns() -> io::Result<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(super::clock::ns_from_timespec(&ts))
}

/// Voluntary plus involuntary context switches of all threads of this process
/// (`getrusage(RUSAGE_SELF)`; exited threads included).
///
/// # Errors
/// Whatever `getrusage` reports.
pub fn process_context_switches() -> io::Result<u64> {
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut raw: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `raw` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut raw) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let v = u64::try_from(raw.ru_nvcsw).unwrap_or(0);
    let i = u64::try_from(raw.ru_nivcsw).unwrap_or(0);
    Ok(v + i)
}

/// Takes an exclusive advisory lock on `fd` (`flock(LOCK_EX | LOCK_NB)`) without waiting:
/// `Ok(true)` when taken, `Ok(false)` when another open file description holds it. The lock
/// goes with the descriptor: closing it (or the process dying, even by SIGKILL) releases it,
/// so a crashed holder never leaves it stuck.
///
/// ```
/// use preempt_io::sys::fdio::try_lock_exclusive;
/// use std::os::fd::AsFd;
/// let path = std::env::temp_dir().join(format!("fdio-lock-{}", std::process::id()));
/// let (a, b) = (std::fs::File::create(&path)?, std::fs::File::open(&path)?);
/// assert!(try_lock_exclusive(a.as_fd())?);
/// assert!(!try_lock_exclusive(b.as_fd())?, "a second description is refused");
/// drop(a);
/// assert!(try_lock_exclusive(b.as_fd())?, "released with its descriptor");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
/// `flock` failed for another reason than the lock being held (e.g. `ENOLCK`).
pub fn try_lock_exclusive(fd: BorrowedFd<'_>) -> io::Result<bool> {
    loop {
        // SAFETY: `fd` is a valid open descriptor for the call (BorrowedFd); flock takes no
        // pointer and only changes the lock state of the open file description.
        if unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => return Ok(false),
            _ => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_carries_bytes() {
        let (r, w) = pipe().unwrap();
        assert_eq!(write(w.as_fd(), b"abc").unwrap(), 3);
        let mut buf = [0u8; 8];
        assert_eq!(read(r.as_fd(), &mut buf).unwrap(), 3);
        assert_eq!(&buf[..3], b"abc");
    }
    use std::os::fd::AsFd;

    #[test]
    fn kinds_and_nonblocking() {
        let e = crate::sys::eventfd::EventFd::new(0, false).unwrap();
        assert_eq!(file_kind(e.as_fd()).unwrap(), FileKind::Anonymous);
        assert!(!is_nonblocking(e.as_fd()).unwrap());
        set_nonblocking(e.as_fd(), true).unwrap();
        assert!(is_nonblocking(e.as_fd()).unwrap());
        let mut b = [0_u8; 8];
        assert_eq!(
            read(e.as_fd(), &mut b).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
    }

    #[test]
    fn pread_on_eventfd_is_espipe() {
        let e = crate::sys::eventfd::EventFd::new(1, true).unwrap();
        let mut b = [0_u8; 8];
        assert_eq!(
            pread(e.as_fd(), &mut b, 0).unwrap_err().raw_os_error(),
            Some(libc::ESPIPE)
        );
    }

    #[test]
    fn process_counters_move() {
        let a = process_cpu_ns().unwrap();
        let mut x = 0_u64;
        for i in 0..1_000_000_u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        assert!(process_cpu_ns().unwrap() > a);
        assert!(process_context_switches().is_ok());
    }
}
