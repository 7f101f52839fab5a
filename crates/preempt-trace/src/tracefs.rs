//! tracefs: finding (or mounting) it, and a private instance that is always removed.
//!
//! The engine never touches the global trace buffer or another tool's settings: it creates
//! its own instance `instances/preempt-<pid>-<n>` (a directory with its own ring buffers,
//! events, clock and CPU mask) and removes it on drop. A forked [`Reaper`] removes it too if
//! the process dies without dropping it (SIGKILL, an unhandled Ctrl-C, an abort), and
//! [`Instance::create`] sweeps instances left by dead preempt processes (e.g. after a reboot
//! of the reaper's parent namespace).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use preempt_io::sys::{mount, reaper::Reaper};

use crate::Error;

/// Where tracefs lives, most usual first.
const MOUNT_POINTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Finds a mounted tracefs, or mounts one on `/sys/kernel/tracing` when allowed.
///
/// # Errors
/// [`Error::Permission`] when this user may not use or mount tracefs, [`Error::Unavailable`]
/// otherwise, each naming the fix (run as root, mount it, a kernel with tracefs).
pub fn locate() -> Result<PathBuf, Error> {
    for p in MOUNT_POINTS {
        let path = Path::new(p);
        if !mount::is_tracefs(path).unwrap_or(false) {
            continue;
        }
        match fs::metadata(path.join("instances")) {
            Ok(m) if m.is_dir() => return Ok(path.to_path_buf()),
            // Mounted, but this user may not enter it (tracefs is mode 0700 by default):
            // the fix is a privilege, not a mount.
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                return Err(Error::Permission(format!(
                    "tracefs is mounted on {} but this user cannot use it ({e}): kernel \
                     tracing needs root; run as root (sudo)",
                    path.display()
                )));
            }
            _ => {}
        }
    }
    let target = Path::new(MOUNT_POINTS[0]);
    match mount::mount_tracefs(target) {
        Ok(()) => Ok(target.to_path_buf()),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Err(Error::Permission(format!(
            "tracefs is not mounted and mounting it needs CAP_SYS_ADMIN ({e}): run as root, \
             or mount it once with `sudo mount -t tracefs nodev {}`",
            target.display()
        ))),
        Err(e) => Err(Error::Unavailable(match e.raw_os_error() {
            // ENODEV (19 on every Linux architecture): no such file system type.
            Some(19) => format!("this kernel has no tracefs (CONFIG_TRACING is off): {e}"),
            _ => format!(
                "cannot mount tracefs on {} ({e}); mount it with `mount -t tracefs nodev {}`",
                target.display(),
                target.display()
            ),
        })),
    }
}

/// A private tracefs instance.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    reaper: Option<Reaper>,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl Instance {
    /// Creates `instances/preempt-<pid>-<n>` under `root` and arms its reaper.
    ///
    /// # Errors
    /// [`Error::Permission`] without the right to create instances, [`Error::Io`] otherwise.
    pub fn create(root: &Path) -> Result<Instance, Error> {
        let instances = root.join("instances");
        sweep_stale(&instances);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = instances.join(format!("preempt-{}-{n}", std::process::id()));
        fs::create_dir(&dir).map_err(|e| match e.kind() {
            io::ErrorKind::PermissionDenied => Error::Permission(format!(
                "cannot create the tracefs instance {} ({e}): tracing needs root (CAP_SYS_ADMIN \
                 or ownership of {}); run as root or grant access to tracefs",
                dir.display(),
                instances.display()
            )),
            _ => Error::io(format!("creating {}", dir.display()), e),
        })?;
        let reaper = match Reaper::spawn(&dir) {
            Ok(r) => r,
            Err(e) => {
                let _removed = fs::remove_dir(&dir);
                return Err(Error::io("forking the instance reaper", e));
            }
        };
        Ok(Instance {
            dir,
            reaper: Some(reaper),
        })
    }

    /// The instance directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `value` to the instance file `rel`.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file.
    pub fn write(&self, rel: &str, value: &str) -> Result<(), Error> {
        let path = self.dir.join(rel);
        fs::write(&path, value)
            .map_err(|e| Error::io(format!("writing {value:?} to {}", path.display()), e))
    }

    /// Reads the instance file `rel`.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file.
    pub fn read(&self, rel: &str) -> Result<String, Error> {
        let path = self.dir.join(rel);
        read_file(&path).map_err(|e| Error::io(format!("reading {}", path.display()), e))
    }

    /// Reads the instance's event format file `events/<system>/<event>/format`.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file.
    pub fn read_format(&self, system: &str, event: &str) -> Result<String, Error> {
        let path = self
            .dir
            .join("events")
            .join(system)
            .join(event)
            .join("format");
        read_file(&path).map_err(|e| Error::io(format!("reading {}", path.display()), e))
    }

    /// Removes the instance now (its readers must be closed: an open `trace_pipe_raw` keeps
    /// it busy).
    ///
    /// # Errors
    /// [`Error::Io`] if it cannot be removed.
    pub fn remove(mut self) -> Result<(), Error> {
        self.remove_inner()
    }

    fn remove_inner(&mut self) -> Result<(), Error> {
        let Some(reaper) = self.reaper.take() else {
            return Ok(());
        };
        // Stop writing first: cheap, and leaves nothing running if rmdir has to be retried.
        let _stopped = fs::write(self.dir.join("tracing_on"), "0");
        let res = match fs::remove_dir(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(format!("removing {}", self.dir.display()), e)),
        };
        reaper
            .finish()
            .map_err(|e| Error::io("waiting for the instance reaper", e))?;
        res
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Err(e) = self.remove_inner() {
            eprintln!("preempt-trace: {e}");
        }
    }
}

/// Reads a tracefs file with large reads. tracefs files report size 0, and some (e.g.
/// `events/header_page`) regenerate their text per `read` and return end-of-file after the
/// first one, so std's small probing first read of `read_to_string` would truncate them.
///
/// # Errors
/// Whatever `open`/`read` report; `InvalidData` for text that is not UTF-8.
pub fn read_file(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut f = fs::File::open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    String::from_utf8(out).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Removes `preempt-<pid>-<n>` instances whose process is gone (left by a crash that also
/// took the reaper, e.g. a container kill).
fn sweep_stale(instances: &Path) {
    let Ok(dir) = fs::read_dir(instances) else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("preempt-"))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            let _gone_or_busy = fs::remove_dir(entry.path());
        }
    }
}
