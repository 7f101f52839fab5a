//! Progress of the PCP slow path on one CPU, deterministically: two threads blocked by one
//! lower thread's level must both get their resources once it releases, and must not pass
//! that level back and forth between them while nothing runs.
//!
//! The scenario (all three threads pinned to CPU 0, real SCHED_FIFO priorities):
//!
//! ```text
//!   L  (FIFO 11, task priority 1)  locks X (ceiling 3), wakes H1 and H2, waits until
//!                                  both sleep in the kernel on level 3, releases X
//!   H1 (FIFO 12, task priority 2)  locks Y (ceiling 2): blocked by level 3 (3 >= 2)
//!   H2 (FIFO 12, task priority 2)  locks Z (ceiling 2): blocked by level 3
//! ```
//!
//! On release the kernel hands level 3 to H1, which only waited for it: H1 passes it on
//! (to H2) and retries. A slow path that then sees H2 "holding" level 3 and sleeps on it
//! again, while H2 does the same on wake-up, relays the level between the two forever at
//! FIFO 12, and L (FIFO 11) never runs again. Each test runs its scenario in a child
//! process under a watchdog, so that a livelock is a failure, not a hang.
//!
//! Needs CAP_SYS_NICE (SCHED_FIFO) and CPU 0; without them the tests print why and pass,
//! except under `PREEMPT_REQUIRE_PRIVILEGED=1` (CI), where they fail.
#![cfg(not(loom))] // real threads and real futexes; loom builds use tests/loom_*.rs

mod common;

use common::{fifo_permitted, pin_to_cpu, set_fifo, sleep_until};
use preempt_sync::event::{Event, Woke};
use preempt_sync::pcp::{PcpGroup, PcpMutex};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Set in the child process: run the scenario itself instead of supervising it.
const CHILD_ENV: &str = "PREEMPT_PCP_PROGRESS_CHILD";

fn leak<T>(v: T) -> &'static T {
    Box::leak(Box::new(v))
}

fn gettid() -> u32 {
    preempt_sync::futex::current_tid()
}

/// The scheduler state letter of thread `tid` of this process (`R`, `S`, ...), from
/// `/proc/self/task/<tid>/stat` (field 3, after the parenthesised name).
fn thread_state(tid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
        .unwrap_or_else(|e| panic!("cannot read the stat of thread {tid}: {e}"));
    let after_name = &stat[stat.rfind(')').expect("stat has a name field") + 1..];
    after_name
        .trim_start()
        .chars()
        .next()
        .expect("stat has a state field")
}

/// Whether the privileged scenario can run here; `None` (printed) if not, panics under
/// `PREEMPT_REQUIRE_PRIVILEGED=1`.
fn privileged_or_skip() -> Option<()> {
    let require = common::privileges_required();
    let pinned = std::thread::spawn(|| pin_to_cpu(0)).join().unwrap();
    let fifo = fifo_permitted();
    if pinned && fifo {
        return Some(());
    }
    let why = if fifo {
        "CPU 0 is not in this process's affinity mask"
    } else {
        "SCHED_FIFO is not permitted (needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 12)"
    };
    assert!(!require, "{why}, and PREEMPT_REQUIRE_PRIVILEGED=1");
    eprintln!("skipped: {why}");
    None
}

/// Runs test `name` of this binary in a child process with [`CHILD_ENV`] set, and fails
/// if it does not finish within `limit` (the child is killed) or fails.
fn supervise(name: &str, limit: Duration) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .stdin(Stdio::null())
        .spawn()
        .expect("start the scenario's child process");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            assert!(status.success(), "the scenario failed: {status}");
            return;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "LIVELOCK: {name} did not finish within {limit:?} (the two waiters relayed \
                 the lower thread's level between them, or the lower thread never ran)"
            );
        }
        sleep_until(preempt_sync::clock::now_ns() + 20_000_000);
    }
}

/// The scenario of the module docs. `h2_locks_x` picks H2's resource: `z` (a different
/// resource of ceiling 2, so H2 only relays level 3; `false`) or `x` itself (H2 waits on the held
/// level as its own level). Returns once every thread finished.
fn two_waiters_scenario(h2_locks_x: bool) {
    let g = leak(PcpGroup::new());
    let x: &'static PcpMutex<u64> = leak(PcpMutex::new(0, 3, g));
    let y: &'static PcpMutex<u64> = leak(PcpMutex::new(0, 2, g));
    let z: &'static PcpMutex<u64> = leak(PcpMutex::new(0, 2, g));
    let go: &'static [Event; 2] = leak([Event::new(), Event::new()]);
    let tids: &'static [AtomicU32; 2] = leak([AtomicU32::new(0), AtomicU32::new(0)]);
    let done: &'static AtomicU32 = leak(AtomicU32::new(0));

    let high = move |i: usize| {
        std::thread::spawn(move || {
            assert!(pin_to_cpu(0));
            assert!(set_fifo(12));
            tids[i].store(gettid(), Ordering::SeqCst);
            while go[i].wait_until(None) != Woke::Notified {}
            if i == 0 {
                y.lock(2, |v| *v += 1);
            } else if h2_locks_x {
                x.lock(2, |v| *v += 1);
            } else {
                z.lock(2, |v| *v += 1);
            }
            done.fetch_add(1, Ordering::SeqCst);
        })
    };
    let low = std::thread::spawn(move || {
        assert!(pin_to_cpu(0));
        assert!(set_fifo(11));
        let (h1, h2) = (high(0), high(1));
        // Both high threads must be parked on `go` before L takes X.
        let asleep = |i: usize| {
            let tid = tids[i].load(Ordering::SeqCst);
            tid != 0 && thread_state(tid) == 'S'
        };
        while !(asleep(0) && asleep(1)) {
            std::thread::yield_now();
        }
        x.lock(1, |v| {
            // H1 and H2 (FIFO 12) preempt us, find level 3 held and sleep on it, lending
            // us FIFO 12: by the time we run again both must be asleep in the kernel.
            go[0].notify();
            go[1].notify();
            while !(x.has_waiters() && asleep(0) && asleep(1)) {
                std::thread::yield_now();
            }
            assert_eq!(
                done.load(Ordering::SeqCst),
                0,
                "a high thread ran while X was held"
            );
            *v += 1;
        });
        // Both high threads (FIFO 12) finish before L (FIFO 11) runs again on this CPU.
        assert_eq!(
            done.load(Ordering::SeqCst),
            2,
            "the high threads made no progress"
        );
        h1.join().unwrap();
        h2.join().unwrap();
    });
    low.join().unwrap();
    assert_eq!(y.lock(2, |v| *v), 1);
    let (xs, zs) = (x.lock(3, |v| *v), z.lock(2, |v| *v));
    if h2_locks_x {
        assert_eq!((xs, zs), (2, 0));
    } else {
        assert_eq!((xs, zs), (1, 1));
    }
}

/// In the child process: runs `scenario` 20 times. In the test process: runs test `name`
/// in a child under a 20 s watchdog.
fn in_child_under_watchdog(name: &str, scenario: impl Fn()) {
    if std::env::var_os(CHILD_ENV).is_some() {
        for _ in 0..20 {
            scenario();
        }
    } else if privileged_or_skip().is_some() {
        supervise(name, Duration::from_secs(20));
    }
}

#[test]
fn two_waiters_relaying_one_level_both_proceed() {
    in_child_under_watchdog("two_waiters_relaying_one_level_both_proceed", || {
        two_waiters_scenario(false)
    });
}

#[test]
fn relay_and_own_level_waiter_both_proceed() {
    in_child_under_watchdog("relay_and_own_level_waiter_both_proceed", || {
        two_waiters_scenario(true)
    });
}
