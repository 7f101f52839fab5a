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
