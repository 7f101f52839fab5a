//! What the demo's integration tests share: whether this process has the real-time
//! privileges the demo needs, and the soft-mode fallback (or failure under
//! `PREEMPT_REQUIRE_PRIVILEGED=1`).

use std::process::Command;

use preempt_io::sys::{caps, limits};

/// SCHED_FIFO 95 and unlimited locked memory are allowed here.
pub(crate) fn privileged() -> bool {
    let nice = caps::has_effective(caps::Capability::SysNice).unwrap_or(false)
        || limits::rtprio().is_ok_and(|l| l.allows(95));
    let lock = caps::has_effective(caps::Capability::IpcLock).unwrap_or(false)
        || limits::memlock().is_ok_and(|l| l.soft.is_none());
    nice && lock
}

/// Without privileges: fails under `PREEMPT_REQUIRE_PRIVILEGED=1`, else runs `cmd` with
/// `PREEMPT_SOFT=1` and says so.
pub(crate) fn soft_unless_privileged(cmd: &mut Command) {
    if privileged() {
        return;
    }
    assert!(
        std::env::var("PREEMPT_REQUIRE_PRIVILEGED").as_deref() != Ok("1"),
        "PREEMPT_REQUIRE_PRIVILEGED=1 but this process lacks CAP_SYS_NICE/RLIMIT_RTPRIO 95 \
         or CAP_IPC_LOCK/RLIMIT_MEMLOCK: run as root or grant them"
    );
    eprintln!("note: no real-time privileges here; running the gimbal demo with PREEMPT_SOFT=1");
    cmd.env("PREEMPT_SOFT", "1");
}
