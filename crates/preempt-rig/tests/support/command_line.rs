//! What the simulated-hardware binaries' command-line tests share (`preempt-gimbal`,
//! `preempt-uav` and `preempt-imu-sim` include this file): the `--help` and bad-flag contract
//! of their binaries, and a small tmpfs to fill a demo's `--out` (not used by imu-sim's).
#![allow(dead_code, reason = "each including test uses its own subset")]

use std::path::Path;
use std::process::Command;

/// `exe --help` and `exe -h` print the usage on stdout, nothing on stderr, and exit 0; an
/// unknown flag exits 2 and names it.
#[track_caller]
pub(crate) fn assert_help_and_bad_flag(exe: &str) {
    for help in ["--help", "-h"] {
        let o = Command::new(exe)
            .arg(help)
            .output()
            .expect("the binary runs");
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{exe} {help}: {o:?}");
        assert!(stdout.starts_with("usage: "), "{exe} {help}: {stdout}");
        assert!(o.stderr.is_empty(), "{exe} {help}: {o:?}");
    }
    let o = Command::new(exe)
        .arg("--no-such-flag")
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{exe}: {o:?}");
    assert!(stderr.contains("unknown flag '--no-such-flag'"), "{stderr}");
}

/// A tmpfs of `size` mounted on `dir` (created) until the guard drops; `None` (said) where
/// mounting is not permitted (it needs root: CAP_SYS_ADMIN), a failure under
/// `PREEMPT_REQUIRE_PRIVILEGED=1`.
pub(crate) fn small_tmpfs(dir: &Path, size: &str) -> Option<impl Drop> {
    std::fs::create_dir_all(dir).expect("create the mount point");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        assert!(
            std::env::var("PREEMPT_REQUIRE_PRIVILEGED").as_deref() != Ok("1"),
            "cannot mount a tmpfs (needs root: CAP_SYS_ADMIN), and PREEMPT_REQUIRE_PRIVILEGED=1"
        );
        eprintln!("skipped: cannot mount a tmpfs (needs root: CAP_SYS_ADMIN)");
        return None;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    Some(Unmount(dir.to_path_buf()))
}
