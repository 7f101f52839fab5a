//! Issue 40, item 3: a healthy history that cannot be written was called corrupt and could
//! not be listed. On a read-only mount, another user's file or a read-only directory,
//! `preempt history` exited 1 with "unreadable or not a preempt history (corrupt?): move it
//! aside", which makes a user set a good history aside.
//!
//! Now such a history is listed and shown; a run that cannot be recorded says
//! "history is read-only: PATH: SQLite's reason" with the fix; and "corrupt" is said only of
//! a file that is not a preempt history. Root ignores file modes, so the permission cases run
//! the binary as `nobody` (`support::unprivileged`); the read-only mount is a bind mount,
//! made and removed by the test as root.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod support;

const MICRO: &str = include_str!("fixtures/micro-v1.json");

/// A result file in `dir` that nobody may read (mode 0644), a different run for each `n`.
fn result_file(dir: &Path, n: u64) -> PathBuf {
    let mut v: serde_json::Value = serde_json::from_str(MICRO).unwrap();
    v["started_unix_ms"] = (1_700_000_000_000 + n).into();
    let p = dir.join(format!("run{n}.json"));
    std::fs::write(&p, v.to_string()).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    p
}

/// `dir/history.sqlite` holding one run, recorded by this process's user.
fn history_with_one_run(dir: &Path) -> PathBuf {
    let db = dir.join("history.sqlite");
    let o = Command::new(support::bin())
        .env("PREEMPT_HISTORY", &db)
        .args(["history", "import"])
        .arg(result_file(dir, 0))
        .output()
        .unwrap();
    support::exits(&o, 0, &[]);
    db
}

fn run(mut c: Command, args: &[&str]) -> Output {
    c.args(args).output().unwrap()
}

/// The history of `cmd()` is listed and shown, and a run (an import, and a measuring run)
/// cannot be recorded: "history is read-only" naming `db`, SQLite's reason and every one of
/// `reasons`; the file is left as it was.
#[track_caller]
fn listed_shown_not_written(cmd: impl Fn() -> Command, db: &Path, dir: &Path, reasons: &[&str]) {
    let before = std::fs::read(db).unwrap();
    let o = run(cmd(), &["history"]);
    support::exits(&o, 0, &[]);
    let list = String::from_utf8_lossy(&o.stdout);
    assert!(list.contains("micro"), "run #1 is listed: {list}");
    let o = run(cmd(), &["history", "show", "1"]);
    support::exits(&o, 0, &[]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"kind\": \"micro\""));
    let read_only = format!("history is read-only: {}: ", db.display());
    let mut needles = vec![read_only.as_str(), "--no-history"];
    needles.extend(reasons);
    let o = run(
        cmd(),
        &["history", "import", result_file(dir, 1).to_str().unwrap()],
    );
    let stderr = support::exits(&o, 1, &needles);
    assert!(!stderr.contains("corrupt"), "{stderr}");
    // A measuring run still succeeds, and says why it was not recorded.
    let o = run(cmd(), &["check"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(&format!("not recorded in the history: {read_only}"))
            && !stderr.contains("corrupt"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(db).unwrap(),
        before,
        "the history is untouched"
    );
}

/// [`listed_shown_not_written`] as `nobody`, who may not write `db`.
#[track_caller]
fn write_permission_denied(dir: &Path, db: &Path) {
    listed_shown_not_written(
        || support::unprivileged(dir),
        db,
        dir,
        &["attempt to write a readonly database", "Permission denied"],
    );
}

#[test]
fn another_users_history_is_listed_and_shown_but_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = history_with_one_run(dir.path());
    if !support::is_root() {
        return support::skip_unprivileged("needs root to run the binary as another user");
    }
    // Root's file, mode 0644 (the directory is writable by all).
    write_permission_denied(dir.path(), &db);
}

#[test]
fn a_chmod_read_only_history_is_listed_and_shown_but_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = history_with_one_run(dir.path());
    if support::is_root() {
        // nobody's own file, made read-only by its owner.
        std::os::unix::fs::chown(&db, Some(65_534), Some(65_534)).unwrap();
    }
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    write_permission_denied(dir.path(), &db);
}

#[test]
fn a_history_in_a_read_only_directory_is_listed_and_shown_but_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = history_with_one_run(dir.path());
    if !support::is_root() {
        return support::skip_unprivileged("needs root to hand the file to another user");
    }
    // nobody's own writable file, in root's directory (0755): SQLite cannot write its journal.
    std::os::unix::fs::chown(&db, Some(65_534), Some(65_534)).unwrap();
    let readonly_dir = || {
        let c = support::unprivileged(dir.path());
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        c
    };
    listed_shown_not_written(
        readonly_dir,
        &db,
        dir.path(),
        &[
            "attempt to write a readonly database",
            "directory is not writable",
        ],
    );
}

/// A read-only bind mount, unmounted on every path out of the test (panics included).
struct RoMount(PathBuf);

impl Drop for RoMount {
    fn drop(&mut self) {
        let o = Command::new("umount").arg(&self.0).output();
        if !o.as_ref().is_ok_and(|o| o.status.success()) {
            eprintln!("umount {} failed: {o:?}", self.0.display());
        }
    }
}

#[test]
fn a_history_on_a_read_only_mount_is_listed_and_shown_but_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    history_with_one_run(&src);
    if !support::is_root() {
        return support::skip_unprivileged("needs root for a read-only bind mount");
    }
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let o = Command::new("mount")
        .args(["--bind", "-o", "ro"])
        .arg(&src)
        .arg(&ro)
        .output()
        .unwrap();
    if !o.status.success() {
        return support::skip_unprivileged(&format!(
            "mount --bind -o ro refused: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let _mounted = RoMount(ro.clone());
    let db = ro.join("history.sqlite");
    // As root: file modes do not stop root, the mount does.
    listed_shown_not_written(
        || {
            let mut c = Command::new(support::bin());
            c.env("PREEMPT_HISTORY", &db);
            c
        },
        &db,
        &src,
        &[
            "attempt to write a readonly database",
            "Read-only file system",
        ],
    );
}

/// Garbage bytes are still called corrupt, for the owner and for a user who may only read
/// the file alike.
#[test]
fn a_corrupt_history_is_still_called_corrupt_even_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.sqlite");
    std::fs::write(&db, [0x5a_u8; 4096]).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let corrupt = [
        "is not a preempt history (file is not a database)",
        "corrupt",
        "move it aside",
    ];
    let o = run(support::preempt_in(dir.path()), &["history"]);
    let stderr = support::exits(&o, 1, &corrupt);
    assert!(!stderr.contains("read-only"), "{stderr}");
    let o = run(support::unprivileged(dir.path()), &["history"]);
    let stderr = support::exits(&o, 1, &corrupt);
    assert!(!stderr.contains("read-only"), "{stderr}");
}
