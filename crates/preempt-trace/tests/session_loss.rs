//! Lost events on a real kernel (issue 13): a reader that falls behind loses events, the
//! session says where and how many, and a window inside the lost stretch is not covered and
//! charged to `lost`, never to a named thread.
//!
//! The reader is made to fall behind on purpose: a 64 KiB ring per CPU and a poll interval
//! longer than the test, while a thread on the traced CPU wakes every 20 µs (≈ 8 trace events
//! per wake-up, megabytes in 300 ms).
//!
//! Needs root (tracefs). Without it the test skips with a message, and fails under
//! `PREEMPT_REQUIRE_PRIVILEGED=1`.

mod common;

use std::time::Duration;

use preempt_io::sys::clock::{ClockId, monotonic_now_ns, sleep_until_ns};
use preempt_io::sys::sched;
use preempt_trace::{CauseKind, Error, Options, Session, Window};

#[test]
fn a_reader_that_falls_behind_reports_the_lost_stretch_and_blames_no_thread() {
    let what = "lost trace events";
    let cpu = common::measured_cpu();
    let session = match Session::start(Options {
        cpus: Some(vec![cpu]),
        buffer_kb: 64,
        poll_interval: Duration::from_secs(600),
        ..Options::default()
    }) {
        Ok(s) => s,
        Err(e @ (Error::Unavailable(_) | Error::Permission(_))) => {
            return common::skip_or_fail(what, e).unwrap_or(());
        }
        Err(e) => panic!("{what}: {e}"),
    };
    // A first read, so that the history holds events from before the stretch to be lost.
    sleep_until_ns(ClockId::Monotonic, monotonic_now_ns() + 20_000_000).unwrap();
    session.poll();
    assert_eq!(session.loss().lost_stretches, 0, "nothing lost yet");
    let start = monotonic_now_ns();
    let busy = std::thread::spawn(move || {
        sched::set_current_thread_affinity(&[cpu]).unwrap();
        let tid = sched::current_tid();
        let mut t = monotonic_now_ns();
        while t < start + 300_000_000 {
            t += 20_000;
            sleep_until_ns(ClockId::Monotonic, t).unwrap();
        }
        tid
    });
    let tid = busy.join().unwrap();
    let loss = session.loss();
    assert!(loss.lost_stretches >= 1, "{loss:?}");
    assert!(loss.missed_pages >= 1, "{loss:?}");
    assert!(loss.overrun > 0, "the kernel's overrun counter: {loss:?}");
    assert!(
        loss.lost_ns >= 100_000_000,
        "most of the 300 ms is lost: {loss:?}"
    );
    // A window early in the busy stretch: its events were overwritten.
    let w = Window {
        release_ns: start + 50_000_000,
        end_ns: start + 60_000_000,
        pid: tid,
    };
    let ex = session
        .explain(cpu, &w)
        .expect("the window is after the history's start");
    assert!(!ex.covered, "{ex:?}");
    assert_eq!(
        ex.ns_of(&[CauseKind::Lost]),
        ex.latency_ns,
        "{:?}",
        ex.causes
    );
    assert!(
        ex.causes.iter().all(|c| c.pid.is_none()),
        "no time of a lost stretch is charged to a thread: {:?}",
        ex.causes
    );
    session.finish().unwrap();
}

/// The reader runs at SCHED_FIFO 1 by default (a SCHED_OTHER reader starved under load and lost
/// events: docs/PERFORMANCE.md, "Trace reader under load").
#[test]
fn the_reader_runs_at_sched_fifo_1() {
    let what = "trace reader priority";
    let Some(session) = common::session(what, &[common::measured_cpu()]) else {
        return;
    };
    let reader = (0..200)
        .find_map(|_| {
            let found = std::fs::read_dir("/proc/self/task")
                .unwrap()
                .flatten()
                .find(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.trim() == "preempt-trace")
                })
                .and_then(|t| t.file_name().to_str()?.parse::<i32>().ok())
                .map(|tid| sched::thread_policy(tid).unwrap());
            // The reader sets its policy first thing; give it a moment.
            match found {
                Some(sched::Policy::Fifo { .. }) => found,
                _ => {
                    sleep_until_ns(ClockId::Monotonic, monotonic_now_ns() + 5_000_000).unwrap();
                    None
                }
            }
        })
        .expect("a preempt-trace thread at SCHED_FIFO within 1 s");
    assert_eq!(reader, sched::Policy::Fifo { priority: 1 });
    session.finish().unwrap();
}
