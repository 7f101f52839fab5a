//! Child processes that inherit descriptors at fixed numbers and die with their parent.
//!
//! The RTIO benchmark and examples spawn the IMU simulator (`imu-sim`) this way: the reader
//! creates the memfd register file and the eventfd INT line, and the child finds them at the
//! descriptor numbers given on its command line. The child is also given `PR_SET_PDEATHSIG =
//! SIGKILL`, so it cannot outlive the reader, even when the reader is killed with SIGKILL.
//!
//! Caveat (prctl(2)): the death signal fires when the *thread* that spawned the child exits,
//! not the whole process, so spawn from a thread that lives as long as the child should.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

/// Most descriptors [`spawn_with_fds`] passes (a fixed array: the pre-exec hook must not
/// allocate, since another thread of the parent may hold the allocator lock at fork time).
pub const MAX_PASSED_FDS: usize = 16;

/// Lowest descriptor number a passed descriptor may land on (0-2 are stdio).
pub const FIRST_PASSED_FD: RawFd = 3;

/// Spawns `cmd` with each `(fd, target)` pair's descriptor duplicated to number `target` in the
/// child (inheritable there; everything else keeps close-on-exec), and with SIGKILL as its
/// parent-death signal.
///
/// # Errors
/// `InvalidInput` for more than [`MAX_PASSED_FDS`] pairs, duplicate targets or targets below
/// [`FIRST_PASSED_FD`]; otherwise whatever `fork`/`exec` report (e.g. `NotFound` for a missing
/// program), or `ESRCH` if the parent died before the child armed its death signal.
pub fn spawn_with_fds(cmd: &mut Command, fds: &[(BorrowedFd<'_>, RawFd)]) -> io::Result<Child> {
    if fds.len() > MAX_PASSED_FDS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "too many descriptors to pass",
        ));
    }
    let mut pairs = [(-1 as RawFd, -1 as RawFd); MAX_PASSED_FDS];
    for (i, (fd, target)) in fds.iter().enumerate() {
        if *target < FIRST_PASSED_FD || fds[..i].iter().any(|(_, t)| t == target) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad target descriptor {target} (must be >= 3 and unique)"),
            ));
        }
        pairs[i] = (fd.as_raw_fd(), *target);
    }
    let count = fds.len();
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let hook = move || -> io::Result<()> {
        // Only async-signal-safe calls below (fcntl, dup2, prctl, getppid): we run between fork
        // and exec in a copy of a possibly multi-threaded parent.
        let mut tmp = [-1 as RawFd; MAX_PASSED_FDS];
        // Phase 1: move every source out of the way of every target (a source may sit on
        // another pair's target number).
        for i in 0..count {
            // SAFETY: F_DUPFD_CLOEXEC on an fd the parent kept open for the spawn; no memory.
            let t = unsafe { libc::fcntl(pairs[i].0, libc::F_DUPFD_CLOEXEC, 64) };
            if t < 0 {
                return Err(io::Error::last_os_error());
            }
            tmp[i] = t;
        }
        // Phase 2: place them; dup2 leaves the new descriptor without FD_CLOEXEC.
        for i in 0..count {
            // SAFETY: dup2 between two open descriptor numbers; no memory arguments.
            if unsafe { libc::dup2(tmp[i], pairs[i].1) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        // SAFETY: PR_SET_PDEATHSIG takes a signal number; the unused arguments are zero.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // The parent may have died between fork and prctl: then nobody would kill us.
        // SAFETY: getppid has no preconditions.
        if unsafe { libc::getppid() } != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    };
    // SAFETY: the hook only makes async-signal-safe calls and allocates nothing (fixed arrays
    // captured by value), as `pre_exec` requires.
    unsafe { cmd.pre_exec(hook) };
    cmd.spawn()
}

static ADOPTED: AtomicBool = AtomicBool::new(false);

/// Takes ownership of descriptors this process inherited at the given numbers (the child side
/// of [`spawn_with_fds`]), marking them close-on-exec.
///
/// Callable once per process: a second call fails, so two owners of one descriptor cannot
/// arise through this function. (Nothing else in a Rust program claims inherited descriptors
/// above 2 unless it calls `from_raw_fd` itself.)
///
/// # Errors
/// `AlreadyExists` on a second call; `InvalidInput` for a number below 3 or listed twice;
/// `EBADF` for a number that is not open.
pub fn adopt_inherited_fds(raw: &[RawFd]) -> io::Result<Vec<OwnedFd>> {
    for (i, fd) in raw.iter().enumerate() {
        if *fd < FIRST_PASSED_FD || raw[..i].contains(fd) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("inherited descriptor {fd} must be >= 3 and listed once"),
            ));
        }
        // SAFETY: F_SETFD with an int flag word; no memory arguments.
        if unsafe { libc::fcntl(*fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            return Err(io::Error::other(format!(
                "inherited descriptor {fd}: {}",
                io::Error::last_os_error()
            )));
        }
    }
    if ADOPTED.swap(true, Ordering::SeqCst) {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "inherited descriptors already adopted",
        ));
    }
    Ok(raw
        .iter()
        .map(|fd| {
            // SAFETY: `fd` is open (F_SETFD succeeded), listed once, and this is the only call
            // in the process that claims inherited descriptors (guarded by ADOPTED).
            unsafe { OwnedFd::from_raw_fd(*fd) }
        })
        .collect())
}

/// A simulated-hardware child (`imu-sim`, `gimbal-plant`, `uav-sim`): started by
/// [`SimChild::spawn`], killed and reaped by [`SimChild::stop`] or on drop.
///
/// The child runs in a process group of its own: a terminal's Ctrl-C (sent to the whole
/// foreground process group) reaches the parent only, which can then finish what it is
/// measuring and stop the child itself, instead of the simulated hardware dying in the middle
/// of a measurement. It still cannot outlive the parent (the parent-death signal of
/// [`spawn_with_fds`] does not depend on the process group).
#[derive(Debug)]
pub struct SimChild {
    child: Option<Child>,
    what: &'static str,
}

impl SimChild {
    /// Spawns `cmd` with `fds` as [`spawn_with_fds`] does, stdin and stdout on `/dev/null`, in
    /// a process group of its own. `what` names the child in messages (`the simulator`), and
    /// a spawn error says how to build the program (`build_hint`).
    ///
    /// # Errors
    /// As [`spawn_with_fds`] (`NotFound` when the program does not exist), with the program
    /// and `build_hint` in the message.
    pub fn spawn(
        cmd: &mut Command,
        fds: &[(BorrowedFd<'_>, RawFd)],
        what: &'static str,
        build_hint: &str,
    ) -> io::Result<SimChild> {
        cmd.stdin(Stdio::null()).stdout(Stdio::null());
        cmd.process_group(0);
        let child = spawn_with_fds(cmd, fds).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot start {what} {}: {e} ({build_hint})",
                    std::path::Path::new(cmd.get_program()).display()
                ),
            )
        })?;
        Ok(SimChild {
            child: Some(child),
            what,
        })
    }

    /// Child pid (`None` once stopped).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the child has exited (and how).
    ///
    /// # Errors
    /// `waitpid` errors.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self.child.as_mut() {
            Some(c) => c.try_wait(),
            None => Ok(None),
        }
    }

    /// Kills the child and reaps it.
    ///
    /// # Errors
    /// `kill`/`wait` errors other than "already exited".
    pub fn stop(&mut self) -> io::Result<()> {
        if let Some(mut c) = self.child.take() {
            match c.kill() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::InvalidInput => {} // already exited
                Err(e) => return Err(e),
            }
            c.wait()?;
        }
        Ok(())
    }
}

impl Drop for SimChild {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("preempt: could not stop {}: {e}", self.what);
        }
    }
}

/// Sends SIGKILL to `pid` (used to stop a child that does not answer; `Child::kill` does the
/// same for a `Child` handle).
///
/// # Errors
/// Whatever `kill` reports (`ESRCH` for a process that is gone).
pub fn kill(pid: u32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    // SAFETY: kill takes a pid and a signal number; no memory arguments.
    if unsafe { libc::kill(pid, libc::SIGKILL) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sim_child_runs_until_stopped_and_is_reaped() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let mut child = SimChild::spawn(&mut cmd, &[], "the sleeper", "install coreutils").unwrap();
        let pid = child.pid().expect("running");
        assert!(
            child.try_wait().unwrap().is_none(),
            "sleep 30 exited at once"
        );
        child.stop().unwrap();
        assert_eq!(child.pid(), None);
        // Reaped: no such process any more (kill reports ESRCH).
        assert_eq!(
            kill(pid).unwrap_err().raw_os_error(),
            Some(libc::ESRCH),
            "pid {pid} still exists after stop"
        );
        child.stop().unwrap(); // stopping twice is harmless
    }

    #[test]
    fn a_missing_program_is_named_with_how_to_build_it() {
        let mut cmd = Command::new("/nonexistent/imu-sim");
        let e = SimChild::spawn(&mut cmd, &[], "the simulator", "build it with cargo").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let msg = e.to_string();
        assert!(
            msg.starts_with("cannot start the simulator /nonexistent/imu-sim: ")
                && msg.ends_with("(build it with cargo)"),
            "{msg}"
        );
    }
}
