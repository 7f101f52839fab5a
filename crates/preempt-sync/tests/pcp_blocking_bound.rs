//! PCP's blocking bound, measured on one CPU: a task blocked by a lower-priority task is
//! blocked for at most *one* lower-priority critical section (Sha, Rajkumar, Lehoczky 1990,
//! theorem 10), plus the cost of the hand-over.
//!
//! Three threads pinned to CPU 0 at real SCHED_FIFO priorities:
//!
//! ```text
//!   L  FIFO 11, task priority 1: locks R (ceiling 3), busy 200 µs inside, sleeps 50-300 µs
//!   M  FIFO 12, task priority 2: every 1.1 ms locks S (ceiling 2), busy 20 µs inside
//!   H  FIFO 13, task priority 3: every 0.7 ms locks R (ceiling 3), busy 10 µs inside
//! ```
//!
//! Every thread logs its critical sections and every lock request (request and acquire
//! times, CLOCK_MONOTONIC) into preallocated buffers; the analysis afterwards checks, for
//! every request of M and H:
//! - **one critical section**: at most one critical section of a lower-priority thread
//!   overlaps the interval from request to acquire (exact, independent of timing);
//! - **the time bound**: the request is granted at most [`ALLOWANCE_NS`] after the end of
//!   that critical section (or after the request, if none overlapped). The allowance covers
//!   the hand-over: `FUTEX_UNLOCK_PI`, the switch to the waiter and its return from
//!   `FUTEX_LOCK_PI` (a few µs on this VM). A VM's host can stall the virtual CPU for
//!   milliseconds at any instant, which no protocol bounds, so this holds for 99 % of the
//!   blocked requests and the worst case is printed; a protocol that let a second critical
//!   section in would fail the exact check above instead.
//!
//! Needs CAP_SYS_NICE and CPU 0: without them it prints why and passes, except under
//! `PREEMPT_REQUIRE_PRIVILEGED=1` (CI), where it fails.
#![cfg(not(loom))] // real threads and real futexes; loom builds use tests/loom_*.rs

mod common;

use common::{fifo_permitted, pin_to_cpu, set_fifo, sleep_until, with_watchdog};
use preempt_sync::clock::now_ns;
use preempt_sync::pcp::{PcpGroup, PcpMutex};
use std::time::Duration;

/// Length of L's critical section.
const CS_NS: u64 = 200_000;
/// Time from the end of the blocking critical section to the grant (see the module docs).
const ALLOWANCE_NS: u64 = 100_000;

fn leak<T>(v: T) -> &'static T {
    Box::leak(Box::new(v))
}

fn busy_until(t: u64) {
    while now_ns() < t {
        std::hint::spin_loop();
    }
}

/// One lock request: when it was made, when the lock was granted, when it was released.
#[derive(Clone, Copy)]
struct Request {
    request: u64,
    acquire: u64,
    release: u64,
}

/// A periodic thread at `fifo` that locks `m` with task priority `p` every `period_ns`,
/// busy `cs_ns` inside, until `end`.
fn periodic(
    fifo: i32,
    p: u8,
    m: &'static PcpMutex<u64>,
    period_ns: u64,
    cs_ns: u64,
    end: u64,
) -> std::thread::JoinHandle<Vec<Request>> {
    std::thread::spawn(move || {
        assert!(pin_to_cpu(0));
        assert!(set_fifo(fifo));
        let mut log = Vec::with_capacity(8_192);
        let mut next = now_ns() + period_ns;
        while next < end {
            sleep_until(next);
            let request = now_ns();
            let (acquire, release) = m.lock(p, |v| {
                let acquire = now_ns();
                busy_until(acquire + cs_ns);
                *v += 1;
                (acquire, now_ns())
            });
            if log.len() < log.capacity() {
                log.push(Request {
                    request,
                    acquire,
                    release,
                });
            }
            next += period_ns;
        }
        log
    })
}

#[test]
fn a_blocked_task_waits_for_at_most_one_lower_critical_section() {
    let require = common::privileges_required();
    let pinned = std::thread::spawn(|| pin_to_cpu(0)).join().unwrap();
    if !(pinned && fifo_permitted()) {
        let why = "needs SCHED_FIFO (CAP_SYS_NICE or RLIMIT_RTPRIO >= 13) and CPU 0";
        assert!(!require, "{why}, and PREEMPT_REQUIRE_PRIVILEGED=1");
        eprintln!("skipped: {why}");
        return;
    }
    with_watchdog("pcp blocking bound", Duration::from_secs(60), || {
        let g = leak(PcpGroup::new());
        let r: &'static PcpMutex<u64> = leak(PcpMutex::new(0, 3, g));
        let s: &'static PcpMutex<u64> = leak(PcpMutex::new(0, 2, g));
        let end = now_ns() + 1_500_000_000;
        let low = std::thread::spawn(move || {
            assert!(pin_to_cpu(0));
            assert!(set_fifo(11));
            let mut sections = Vec::with_capacity(8_192);
            let mut rng = common::Rng::new(7);
            while now_ns() < end {
                let cs = r.lock(1, |v| {
                    let start = now_ns();
                    busy_until(start + CS_NS);
                    *v += 1;
                    (start, now_ns())
                });
                if sections.len() < sections.capacity() {
                    sections.push(cs);
                }
                sleep_until(now_ns() + 50_000 + rng.below(250_000) as u64);
            }
            sections
        });
        let mid = periodic(12, 2, s, 1_100_000, 20_000, end);
        let high = periodic(13, 3, r, 700_000, 10_000, end);
        let low_cs = low.join().unwrap();
        let mid_log = mid.join().unwrap();
        let high_log = high.join().unwrap();
        let mid_cs: Vec<(u64, u64)> = mid_log.iter().map(|q| (q.acquire, q.release)).collect();

        let mut blocked = 0usize;
        let mut excess: Vec<u64> = Vec::new();
        for (name, log, lower) in [
            ("M", &mid_log, vec![&low_cs]),
            ("H", &high_log, vec![&low_cs, &mid_cs]),
        ] {
            for q in log.iter() {
                let overlapping: Vec<(u64, u64)> = lower
                    .iter()
                    .flat_map(|cs| cs.iter())
                    .filter(|(start, stop)| *start < q.acquire && *stop > q.request)
                    .copied()
                    .collect();
                assert!(
                    overlapping.len() <= 1,
                    "{name}'s request at {} waited through {} lower critical sections: {overlapping:?}",
                    q.request,
                    overlapping.len()
                );
                if let Some((_, stop)) = overlapping.first() {
                    blocked += 1;
                    excess.push(q.acquire.saturating_sub(*stop.max(&q.request)));
                }
            }
        }
        excess.sort_unstable();
        assert!(
            blocked >= 20,
            "only {blocked} blocked requests: the scenario did not exercise blocking"
        );
        let p = |q: f64| excess[((excess.len() - 1) as f64 * q) as usize];
        eprintln!(
            "{} requests of M and H, {blocked} blocked by one lower critical section of {} µs; \
             grant after its end: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs (allowance {} µs)",
            mid_log.len() + high_log.len(),
            CS_NS / 1_000,
            p(0.5) as f64 / 1e3,
            p(0.99) as f64 / 1e3,
            p(1.0) as f64 / 1e3,
            ALLOWANCE_NS / 1_000
        );
        let over = excess.iter().filter(|&&e| e > ALLOWANCE_NS).count();
        assert!(
            over * 100 <= excess.len(),
            "{over} of {} blocked requests were granted more than {} µs after the blocking \
             critical section ended",
            excess.len(),
            ALLOWANCE_NS / 1_000
        );
    });
}
