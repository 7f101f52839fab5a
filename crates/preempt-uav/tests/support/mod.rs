//! What the flight tests share: whether this process has the real-time privileges a flight
//! needs, and CI's rule for what it lacks (`PREEMPT_REQUIRE_PRIVILEGED=1`: fail, not skip).

#![allow(
    dead_code,
    reason = "each test binary uses its own subset of these helpers"
)]

use preempt_io::sys::{caps, limits};

/// SCHED_FIFO 99 and unlimited locked memory are allowed here.
pub(crate) fn privileged() -> bool {
    let nice = caps::has_effective(caps::Capability::SysNice).unwrap_or(false)
        || limits::rtprio().is_ok_and(|l| l.allows(99));
    let lock = caps::has_effective(caps::Capability::IpcLock).unwrap_or(false)
        || limits::memlock().is_ok_and(|l| l.soft.is_none());
    nice && lock
}

/// `ok`, or: fails under `PREEMPT_REQUIRE_PRIVILEGED=1`, else says `what` is skipped or
/// degraded and returns false.
#[track_caller]
pub(crate) fn require(ok: bool, what: &str) -> bool {
    if ok {
        return true;
    }
    assert!(
        std::env::var("PREEMPT_REQUIRE_PRIVILEGED").as_deref() != Ok("1"),
        "PREEMPT_REQUIRE_PRIVILEGED=1 but {what}"
    );
    eprintln!("SKIPPED: {what}");
    false
}
