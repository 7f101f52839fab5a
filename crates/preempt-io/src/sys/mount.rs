//! `mount(2)` for the pseudo file systems preempt needs (tracefs).
//!
//! The tracing engine (`preempt-trace`) reads the kernel's trace events from tracefs. Debian
//! and most distributions mount it on demand only (systemd's `sys-kernel-tracing.mount`), so
//! a fresh boot may have an empty `/sys/kernel/tracing`: [`mount_tracefs`] mounts it there, as
//! `mount -t tracefs nodev /sys/kernel/tracing` would. Mounting needs `CAP_SYS_ADMIN`.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Mounts a tracefs on `target` (an existing, empty directory), like
/// `mount -t tracefs nodev <target>`.
///
/// # Errors
/// `EPERM` without `CAP_SYS_ADMIN`, `ENODEV` on a kernel built without tracefs, `ENOENT` if
/// `target` does not exist, `InvalidInput` for a path with a NUL byte.
pub fn mount_tracefs(target: &Path) -> io::Result<()> {
    let target = CString::new(target.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "mount path contains NUL"))?;
    // SAFETY: every pointer is a valid NUL-terminated string that outlives the call (the two
    // literals are static, `target` lives to the end of this function); `data` may be null for
    // tracefs, which takes no required options.
    let rc = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the file system mounted at (or containing) `path` is a tracefs, by its magic number
/// in `statfs(2)` (`TRACEFS_MAGIC`, include/uapi/linux/magic.h).
///
/// # Errors
/// Whatever `statfs` reports (`ENOENT` for a missing path).
pub fn is_tracefs(path: &Path) -> io::Result<bool> {
    /// include/uapi/linux/magic.h: `#define TRACEFS_MAGIC 0x74726163` ("trac").
    const TRACEFS_MAGIC: i64 = 0x7472_6163;
    let path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    // SAFETY: statfs is plain old data; all-zero is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `st` a valid, writable statfs for the call.
    if unsafe { libc::statfs(path.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    #[allow(
        clippy::unnecessary_cast,
        reason = "f_type's width differs between libcs"
    )]
    Ok(st.f_type as i64 == TRACEFS_MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_is_not_tracefs() {
        assert!(!is_tracefs(Path::new("/proc")).unwrap());
    }

    #[test]
    fn nul_in_path_is_invalid_input() {
        let e = mount_tracefs(Path::new("a\0b")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
