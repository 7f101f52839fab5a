//! The kernel stopping the real-time class on a real kernel: a SCHED_FIFO hog keeps a CPU
//! busy past the throttling budget (`sched_rt_runtime_us`, 950 ms of every second by default;
//! on kernels ≥ 6.12 the fair server comes first when a SCHED_OTHER task waits), and a
//! periodic real-time victim on that CPU waits out the stop. The session must count the
//! stretch and `explain` must charge the victim's delay to `throttled` on that CPU, not to
//! the SCHED_OTHER task that ran in it.
//!
//! Needs root (tracefs, SCHED_FIFO) and RT throttling or the fair server in the kernel
//! (`sched_rt_runtime_us` not −1, or kernel ≥ 6.12). Without root it skips with a message,
//! and fails under `PREEMPT_REQUIRE_PRIVILEGED=1`.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use preempt_io::sys::clock::{ClockId, monotonic_now_ns, sleep_until_ns};
use preempt_io::sys::{sched, thread};
use preempt_trace::decode::Kind;
use preempt_trace::{CauseKind, Error, Options, Session, Window};

const PERIOD_NS: u64 = 1_000_000;
/// A gap in the hog's own clock reads this long is the stop (the windows measured on this
/// machine were 50–54 ms; host stalls of 10–20 ms happen on this VM too).
const STOP_NS: u64 = 30_000_000;
/// The hog gives up after this long without a stop (the budget is per period of 1 s: a hog
/// starting mid-period reaches it within two).
const HOG_MAX_NS: u64 = 3_500_000_000;

#[test]
fn a_real_time_hog_past_the_budget_is_named_throttled() {
    if let Some(host) = preempt_io::sys::cpu::user_mode_emulation() {
        // The kernel traces natively while the three threads run emulated: in CI's arm64
        // stage (qemu-user 7.2, 2026-11-28) the trace held a throttled stretch of only 1.2 ms
        // inside the hog's 52 ms gap (the emulated threads do not keep the CPU busy as the
        // test needs; not traced further). The arm64 PREEMPT_RT guest (scripts/rt_guests.py)
        // runs arm64 code under its own kernel.
        println!("SKIP under qemu-user on {host}: the emulated spinner cannot fill the window");
        return;
    }
    let cpu = common::measured_cpu();
    // The history must hold the whole test (the stop may come up to ~2 s in).
    let session = match Session::start(Options {
        cpus: Some(vec![cpu]),
        retain_ns: 10_000_000_000,
        ..Options::default()
    }) {
        Ok(s) => s,
        Err(e @ (Error::Unavailable(_) | Error::Permission(_))) => {
            return common::skip_or_fail("throttled: hog past the budget", e).unwrap_or(());
        }
        Err(e) => panic!("{e}"),
    };
    let stop = Arc::new(AtomicBool::new(false));
    // A SCHED_OTHER task waiting on the CPU, as a desktop or a build has.
    let other = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            sched::set_current_thread_affinity(&[cpu]).unwrap();
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    let start = monotonic_now_ns() + 20_000_000;
    // The victim: SCHED_FIFO 80, 1 kHz, sleeping between releases.
    let victim = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            if !common::fifo_on(cpu, 80) {
                return None;
            }
            thread::set_timer_slack_ns(1).unwrap();
            let mut out = Vec::new();
            let mut k = 0;
            while !stop.load(Ordering::Relaxed) {
                let release = start + k * PERIOD_NS;
                sleep_until_ns(ClockId::Monotonic, release).unwrap();
                out.push((release, monotonic_now_ns()));
                k += 1;
            }
            Some((sched::current_tid(), out))
        })
    };
    // The hog: SCHED_FIFO 70, spinning until its own clock shows the stop.
    let gap = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let hog = {
        let gap = Arc::clone(&gap);
        std::thread::spawn(move || {
            if !common::fifo_on(cpu, 70) {
                return;
            }
            sleep_until_ns(ClockId::Monotonic, start).unwrap();
            let mut last = monotonic_now_ns();
            while last < start + HOG_MAX_NS {
                let now = monotonic_now_ns();
                if now - last >= STOP_NS {
                    gap.0.store(last, Ordering::Relaxed);
                    gap.1.store(now, Ordering::Relaxed);
                    break;
                }
                last = now;
            }
        })
    };
    hog.join().unwrap();
    // A few more releases after the stop, then end.
    sleep_until_ns(ClockId::Monotonic, monotonic_now_ns() + 20_000_000).unwrap();
    stop.store(true, Ordering::Relaxed);
    other.join().unwrap();
    let Some((vtid, samples)) = victim.join().unwrap() else {
        return;
    };
    let (gap_from, gap_to) = (gap.0.load(Ordering::Relaxed), gap.1.load(Ordering::Relaxed));
    assert!(
        gap_to > gap_from,
        "the hog ran {} s at SCHED_FIFO without being stopped: is RT throttling off \
         (sched_rt_runtime_us = -1) on a kernel without the fair server?",
        HOG_MAX_NS / 1_000_000_000
    );
    // The session saw the stretch, on this CPU, where the hog's gap began (the gap lasts
    // longer: when the class resumes, the victim runs its backlog first).
    let stretches = session.throttled();
    let seen = stretches
        .iter()
        .find(|s| {
            s.cpu == cpu
                && s.start_ns <= gap_from + 1_000_000
                && s.start_ns + 1_000_000 >= gap_from
                && s.end_ns >= gap_from + STOP_NS
                && s.end_ns <= gap_to + 5_000_000
        })
        .unwrap_or_else(|| {
            panic!("no throttled stretch covers the hog's gap {gap_from}..{gap_to}: {stretches:?}")
        });
    assert!(seen.len_ns() >= STOP_NS, "{seen:?}");
    // The victim's releases inside the stop: charged to `throttled`, on this CPU.
    let late: Vec<(u64, u64)> = samples
        .iter()
        .copied()
        .filter(|&(r, w)| r > seen.start_ns && r + 1_000_000 < seen.end_ns && w > r)
        .collect();
    assert!(!late.is_empty(), "no victim release fell in the stop");
    let mut named = 0;
    let mut others = Vec::new();
    for &(release, wake) in &late {
        let ex = session
            .explain(
                cpu,
                &Window {
                    release_ns: release,
                    end_ns: wake,
                    pid: vtid,
                },
            )
            .unwrap();
        assert_eq!(ex.causes.iter().map(|c| c.ns).sum::<u64>(), ex.latency_ns);
        let main = ex.main_cause().unwrap();
        if main.kind == CauseKind::Throttled && main.ns * 2 > ex.latency_ns {
            assert!(main.name.contains(&format!("CPU {cpu}")), "{}", main.name);
            let t = ex.throttled.expect("the stretch of a throttled window");
            assert_eq!(t.cpu, cpu);
            assert!(
                t.start_ns <= release,
                "{t:?} starts after the release {release}"
            );
            // Nothing of it is charged to a SCHED_OTHER task that ran (a real-time thread of
            // higher priority, another engineer's on this shared machine, may take its part).
            assert!(
                ex.causes.iter().all(|c| c.kind != CauseKind::Thread
                    || c.pid == Some(vtid)
                    || c.policy.as_deref() != Some("SCHED_OTHER")),
                "{:#?}",
                ex.causes
            );
            named += 1;
        } else {
            others.push(format!("{ex:#?}"));
        }
    }
    // A host stall (or another engineer's real-time thread on this shared VM) can land in
    // the stop: most releases, not all, must be named. On failure, the CPU's switches and
    // wake-ups around the stop.
    if named * 2 < late.len() {
        let around: Vec<String> = session
            .events(cpu)
            .iter()
            .filter(|e| e.ts + 3_000_000 > seen.start_ns && e.ts < seen.end_ns)
            .filter(|e| matches!(e.kind, Kind::Switch { .. } | Kind::Waking { .. }))
            .map(|e| format!("{:+} ns {:?}", e.ts as i64 - seen.start_ns as i64, e.kind))
            .collect();
        panic!(
            "{named} of {} releases in the stop charged to `throttled` (victim {vtid}, stop \
             {seen:?}); the others: {}\nthe CPU's events:\n{}",
            late.len(),
            others.join("\n"),
            around.join("\n")
        );
    }
    session.finish().unwrap();
}
