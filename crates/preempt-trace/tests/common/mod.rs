//! Shared by the integration tests: privilege handling and a measured-CPU choice.
#![allow(dead_code, reason = "each test binary uses a subset")]

use preempt_io::sys::sched::{self, Policy};
use preempt_trace::{Error, Options, Session};

/// Whether CI demands the privileged tests run (`PREEMPT_REQUIRE_PRIVILEGED=1`).
pub(crate) fn required() -> bool {
    std::env::var("PREEMPT_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1")
}

/// Skips (returns `None`, printing why) or fails under `PREEMPT_REQUIRE_PRIVILEGED=1`.
pub(crate) fn skip_or_fail<T>(what: &str, why: impl std::fmt::Display) -> Option<T> {
    assert!(
        !required(),
        "{what}: {why} (PREEMPT_REQUIRE_PRIVILEGED=1, so this is a failure)"
    );
    println!("SKIPPED {what}: {why}");
    None
}

/// Starts a session on `cpus`, or skips when tracing is unavailable.
pub(crate) fn session(what: &str, cpus: &[usize]) -> Option<Session> {
    match Session::start(Options {
        cpus: Some(cpus.to_vec()),
        ..Options::default()
    }) {
        Ok(s) => Some(s),
        Err(e @ (Error::Unavailable(_) | Error::Permission(_))) => skip_or_fail(what, e),
        Err(e) => panic!("{what}: {e}"),
    }
}

/// The CPU the tests measure on: the last online one (CPU 0 takes most housekeeping).
pub(crate) fn measured_cpu() -> usize {
    *preempt_io::sys::cpu::online_cpus()
        .unwrap()
        .last()
        .expect("an online CPU")
}

/// Pins the calling thread to `cpu` at SCHED_FIFO `prio`; false (after skip/fail handling)
/// without the privilege.
pub(crate) fn fifo_on(cpu: usize, prio: u8) -> bool {
    sched::set_current_thread_affinity(&[cpu]).unwrap();
    match sched::set_current_thread_policy(&Policy::Fifo { priority: prio }) {
        Ok(()) => true,
        Err(e) => {
            skip_or_fail::<()>("SCHED_FIFO (needs CAP_SYS_NICE or RLIMIT_RTPRIO)", e).is_some()
        }
    }
}
