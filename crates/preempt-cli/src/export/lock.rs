//! One run per output directory: [`DirLock`].
//!
//! Two `preempt demo gimbal --out DIR` started 0.2 s apart used to write the same
//! `gimbal.mcap.part` at once: the second lost its results ("cannot rename gimbal.mcap.part")
//! and the first's MCAP became unreadable. A run that writes a directory of its own files
//! (the demos' `--out`, `matrix --out-dir`) now holds an advisory lock on `DIR/.preempt.lock`
//! for its whole life; a second run is refused at once, naming the holder's pid.
//!
//! The lock is `flock(2)`, not the file's existence: it is released when the holder's
//! descriptor closes, so a run killed with SIGKILL never leaves the directory locked (a stale
//! `.preempt.lock` file is harmless and reused). A run that ends removes the file while it
//! still holds the lock, so the directory holds only results; a run that locked a file just
//! removed (it opened it before the removal) sees that the path no longer names its file and
//! starts again with a new one.

use std::fs;
use std::io::{Read, Seek, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use preempt_io::sys::fdio;

use crate::error::usage;

/// The lock file's name inside the locked directory.
pub(crate) const LOCK_FILE: &str = ".preempt.lock";

/// An output directory held by this run until dropped.
#[derive(Debug)]
pub struct DirLock {
    file: fs::File,
    path: PathBuf,
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Removed while still locked (the descriptor closes after this): see the module doc.
        let _ = fs::remove_file(&self.path);
        let _ = &self.file;
    }
}

impl DirLock {
    /// Locks `dir` (which must exist) for this run, or refuses (usage error, exit 2) when
    /// another run holds it, naming `flag`, the directory and the other run's pid.
    ///
    /// # Errors
    /// Held by another run; or the lock file cannot be opened (naming it).
    pub(crate) fn acquire(dir: &Path, flag: &str) -> Result<DirLock> {
        let path = dir.join(LOCK_FILE);
        loop {
            let mut file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| {
                    usage(format!(
                        "{flag} {}: cannot open the lock file {} ({e}); choose a directory \
                         you can write",
                        dir.display(),
                        path.display()
                    ))
                })?;
            let taken = fdio::try_lock_exclusive(file.as_fd())
                .with_context(|| format!("cannot lock {}", path.display()))?;
            if !taken {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(usage(format!(
                    "{flag} {} is in use by another preempt run ({}); wait for it to finish \
                     or choose another {flag}",
                    dir.display(),
                    if holder.is_empty() {
                        "its pid is not known yet".to_string()
                    } else {
                        format!("pid {holder}")
                    }
                )));
            }
            // Locked; but if the holder before us removed the file meanwhile, the path names
            // another file (or none) now: start again with that one.
            let same = match (file.metadata(), fs::metadata(&path)) {
                (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
                _ => false,
            };
            if !same {
                continue;
            }
            // The holder's pid, for the message of a run refused meanwhile.
            let stamped = file
                .set_len(0)
                .and_then(|()| file.rewind())
                .and_then(|()| writeln!(file, "{}", std::process::id()));
            if let Err(e) = stamped {
                eprintln!(
                    "preempt: note: cannot write the pid into {}: {e}",
                    path.display()
                );
            }
            return Ok(DirLock { file, path });
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_held_directory_is_refused_with_the_holders_pid() {
        let dir = tempfile::tempdir().unwrap();
        let held = DirLock::acquire(dir.path(), "--out").unwrap();
        let e = DirLock::acquire(dir.path(), "--out").unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.contains(&format!("pid {}", std::process::id())) && msg.contains("--out"),
            "{msg}"
        );
        assert_eq!(crate::error::exit_code_of(&e), crate::error::EXIT_USAGE);
        drop(held);
        assert!(
            !dir.path().join(LOCK_FILE).exists(),
            "a run leaves only results"
        );
        DirLock::acquire(dir.path(), "--out").expect("free again once dropped");
    }
}
