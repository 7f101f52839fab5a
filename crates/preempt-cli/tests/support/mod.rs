//! Shared by the integration tests: CI's rule for tests that need privileges.
//!
//! Without `PREEMPT_REQUIRE_PRIVILEGED=1` a test that lacks CAP_SYS_NICE (SCHED_FIFO) skips its
//! privileged part with a printed reason; with it (`.ci/run` sets it, and CI runs as root) the
//! same situation fails the test, so a privileged test never passes without having run.

#![allow(
    dead_code,
    reason = "each test binary uses its own subset of these helpers"
)]

/// Whether CI demands that the privileged tests run (`PREEMPT_REQUIRE_PRIVILEGED=1`).
pub(crate) fn privilege_required() -> bool {
    std::env::var("PREEMPT_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1")
}

/// The privileged part of a test cannot run: prints `why` (the caller then skips it), or fails
/// the test under `PREEMPT_REQUIRE_PRIVILEGED=1`.
#[track_caller]
pub(crate) fn skip_unprivileged(why: &str) {
    assert!(
        !privilege_required(),
        "{why} (PREEMPT_REQUIRE_PRIVILEGED=1: a privileged test must run, not skip)"
    );
    eprintln!("skipped: {why}");
}

/// A history database private to this test process, so runs of the binary under test never
/// land in the user's own history (`PREEMPT_HISTORY` overrides the default path).
pub(crate) fn test_history() -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "preempt-test-history-{}.sqlite",
        std::process::id()
    ))
}

/// Whether this process has `cap`; if not, skips with `why` ([`skip_unprivileged`]).
#[track_caller]
pub(crate) fn has_capability(cap: preempt_io::sys::caps::Capability, why: &str) -> bool {
    let has = preempt_io::sys::caps::has_effective(cap).unwrap_or(false);
    if !has {
        skip_unprivileged(why);
    }
    has
}

/// The sum of an explained outlier's `causes[].ns` (JSON result), to compare with its
/// `latency_ns`.
pub(crate) fn causes_ns(explained: &serde_json::Value) -> u64 {
    explained["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| c["ns"].as_u64().expect("ns"))
        .sum()
}

/// Whether this process may run SCHED_FIFO (CAP_SYS_NICE); if not, skips
/// ([`skip_unprivileged`]).
#[track_caller]
pub(crate) fn can_fifo() -> bool {
    has_capability(
        preempt_io::sys::caps::Capability::SysNice,
        "needs CAP_SYS_NICE (run as root) for SCHED_FIFO",
    )
}

/// Reads `reader` (a child's stderr) line by line up to the first line that contains
/// `needle`, and returns that line; a stream that ends first fails the test.
#[track_caller]
pub(crate) fn wait_for_line(reader: &mut impl std::io::BufRead, needle: &str) -> String {
    let mut line = String::new();
    while !line.contains(needle) {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the output ended without a line containing {needle:?}"
        );
    }
    line
}

/// Writes `f` as `dir/name` in the JSON format preempt writes; returns the path.
pub(crate) fn write_result(
    dir: &std::path::Path,
    name: &str,
    f: &preempt_cli::results::ResultFile,
) -> std::path::PathBuf {
    use preempt_cli::export::Exporter;
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    let json = preempt_cli::export::json::JsonExporter
        .serialize(f)
        .unwrap();
    std::fs::write(&p, json).unwrap();
    p
}

/// A JSON file, parsed.
pub(crate) fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[allow(
    clippy::disallowed_methods,
    reason = "test pacing, not a real-time path"
)]
/// Sleeps `ms` milliseconds (test pacing, not a real-time path).
pub(crate) fn sleep_ms(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

/// The `preempt` binary under test: `PREEMPT_BIN` when set (CI points the reliability suite
/// at the release build, the configuration users get), else the one cargo built for the
/// tests.
pub(crate) fn bin() -> std::path::PathBuf {
    std::env::var_os("PREEMPT_BIN").map_or_else(
        || std::path::PathBuf::from(env!("CARGO_BIN_EXE_preempt")),
        std::path::PathBuf::from,
    )
}

/// `preempt ARGS` with a history database private to `dir`, real-time as this process may.
pub(crate) fn preempt_in(dir: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(bin());
    c.env("PREEMPT_HISTORY", dir.join("history.sqlite"))
        .env_remove("PREEMPT_SOFT");
    c
}

/// `preempt history list` of the private history of `dir` ([`preempt_in`]).
pub(crate) fn history_list(dir: &std::path::Path) -> String {
    let o = preempt_in(dir).args(["history", "list"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Whether this process is root (then unprivileged cases go through `setpriv`).
pub(crate) fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// `preempt ARGS` as an unprivileged user: `nobody` via `setpriv` (util-linux) when root,
/// else this user. `dir` is handed to that user (mode 0777) so that it can write there.
pub(crate) fn unprivileged(dir: &std::path::Path) -> std::process::Command {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    if !is_root() {
        return preempt_in(dir);
    }
    let mut c = std::process::Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
        "--",
    ])
    .arg(bin())
    .env("PREEMPT_HISTORY", dir.join("history.sqlite"))
    .env("HOME", dir)
    .env_remove("PREEMPT_SOFT")
    .current_dir(dir);
    c
}

/// Asserts `o` exited with `code` and its stderr holds every one of `needles`; returns stderr.
#[track_caller]
pub(crate) fn exits(o: &std::process::Output, code: i32, needles: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{stderr}",
        String::from_utf8_lossy(&o.stdout)
    );
    for n in needles {
        assert!(stderr.contains(n), "{n:?} not in: {stderr}");
    }
    stderr
}
