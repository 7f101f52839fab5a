//! Result files written whole or not at all.
//!
//! # Background
//! A run's statistics are written at its very end, often while it is being stopped: by a
//! signal, by a full disk, by a second signal that ends the process during the write. A file
//! written in place (`std::fs::write`) is truncated first, so any of these leaves a cut file
//! where the previous one was, and readers take the cut JSON for a broken result.
//!
//! # Solution
//! [`write_atomically`] writes to a temporary file beside the target (`.NAME.tmp.PID`, in the
//! same directory, so on the same file system) and renames it over the target: rename(2)
//! replaces the target atomically, so a reader sees the old file or the new one, never part
//! of one. On an error the temporary file is removed and the target is untouched.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The temporary file [`write_atomically`] writes `path` through: `.NAME.tmp.PID` in the
/// same directory.
pub fn temporary_path(path: &Path) -> PathBuf {
    let mut name = OsString::from(".");
    name.push(path.file_name().unwrap_or(path.as_os_str()));
    name.push(format!(".tmp.{}", std::process::id()));
    path.with_file_name(name)
}

/// Writes `bytes` to `path` through [`temporary_path`] and a rename. The file is created
/// with mode 0666 less the umask, like `std::fs::write`.
///
/// # Errors
/// The temporary file cannot be created or written, or the rename fails; the error names
/// the path and the temporary file is gone.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temporary_path(path);
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.flush()))
        .and_then(|()| std::fs::rename(&tmp, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io::Error::new(e.kind(), format!("{}: {e}", path.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_the_file_whole_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("preempt-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("stats.json");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, b"{\"new\": true}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"new\": true}");
        assert!(!temporary_path(&path).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_names_the_path_and_keeps_the_old_file() {
        let dir = std::env::temp_dir().join(format!("preempt-file-dir-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("stats.json")).unwrap();
        // The target is a non-empty directory: the rename fails after the write.
        std::fs::write(dir.join("stats.json").join("keep"), "x").unwrap();
        let err = write_atomically(&dir.join("stats.json"), b"new").unwrap_err();
        assert!(err.to_string().contains("stats.json"), "{err}");
        assert!(dir.join("stats.json").join("keep").exists());
        assert!(!temporary_path(&dir.join("stats.json")).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
