//! The plant counts the kernel stopping its real-time class: a SCHED_FIFO hog of lower
//! priority keeps the plant's CPU busy past the budget (`sched_rt_runtime_us`, 950 ms of
//! every second by default; on kernels ≥ 6.12 the fair server comes first when a SCHED_OTHER
//! task waits), so that the class, the plant with it, is stopped for ~50 ms; the plant must
//! count that stall as throttled. Its own loop alone stays far below the budget, and the
//! same run without the hog must count nothing.
//!
//! Needs root (SCHED_FIFO): fails under `PREEMPT_REQUIRE_PRIVILEGED=1` without it, and
//! otherwise skips with a message.

#[allow(dead_code, reason = "this test uses only `privileged`")]
mod support;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use preempt_gimbal::model::Plant;
use preempt_io::sys::clock::{self, ClockId, monotonic_now_ns};
use preempt_io::sys::memfd::SharedMap;
use preempt_io::sys::sched::{self, Policy};
use preempt_rig::page::PAGE_LEN;
use preempt_rig::plant_rt::{self, PlantConfig};
use preempt_rig::spawn::{BusEnds, PlantCounters};

/// Runs the plant alone on `cpu` at SCHED_FIFO 95 for `secs` (a hog of SCHED_FIFO 50 beside
/// it when `hog`, and a SCHED_OTHER task waiting there either way); its counters, and the
/// CPU time the SCHED_OTHER task got: with the hog, only what the kernel took from the
/// real-time class for it.
fn plant_run(cpu: usize, secs: f64, hog: bool) -> (PlantCounters, u64) {
    let bus = BusEnds::new().unwrap();
    let map = Arc::new(SharedMap::new(std::os::fd::AsFd::as_fd(&bus.page), PAGE_LEN).unwrap());
    let until = monotonic_now_ns() + (secs * 1e9) as u64 + 50_000_000;
    let spin = move |fifo: Option<u8>| {
        move || {
            sched::set_current_thread_affinity(&[cpu]).unwrap();
            if let Some(priority) = fifo {
                sched::set_current_thread_policy(&Policy::Fifo { priority }).unwrap();
            }
            while monotonic_now_ns() < until {
                std::hint::spin_loop();
            }
            clock::now_ns(ClockId::ThreadCputime)
        }
    };
    let other = std::thread::spawn(spin(None));
    let hog = hog.then(|| std::thread::spawn(spin(Some(50))));
    let cfg = PlantConfig {
        seed: 1,
        cpu: Some(cpu),
        priority: Some(95),
        duration_ns: Some((secs * 1e9) as u64),
    };
    let (page, doorbell, done) = (
        Arc::clone(&map),
        bus.doorbell.try_clone().unwrap(),
        bus.done.try_clone().unwrap(),
    );
    std::thread::spawn(move || {
        plant_rt::run(
            Plant::new(1),
            &cfg,
            page,
            doorbell,
            done,
            &AtomicBool::new(false),
        )
    })
    .join()
    .unwrap()
    .unwrap();
    if let Some(h) = hog {
        h.join().unwrap();
    }
    let other_cpu_ns = other.join().unwrap();
    (PlantCounters::read(&map), other_cpu_ns)
}

/// The CPU time a stop of the real-time class gives the waiting SCHED_OTHER task at least:
/// the throttle detector's threshold (80 % of the 50 ms window).
const STOPPED_NS: u64 = 40_000_000;

/// Attempts at a run in which the kernel stops the real-time class.
const ATTEMPTS: usize = 3;

#[test]
fn the_plant_counts_the_kernel_stopping_its_real_time_class() {
    if !support::privileged() {
        assert!(
            std::env::var("PREEMPT_REQUIRE_PRIVILEGED").as_deref() != Ok("1"),
            "PREEMPT_REQUIRE_PRIVILEGED=1 but SCHED_FIFO is not allowed here: run as root"
        );
        eprintln!("SKIPPED the_plant_counts_the_kernel_stopping_its_real_time_class: needs root");
        return;
    }
    let cpu = *preempt_io::sys::cpu::online_cpus().unwrap().last().unwrap();
    // What is tested is the plant's count, not the kernel's throttling: whether the kernel
    // stopped the class is read from the SCHED_OTHER task's CPU time. A run in which it did
    // not (once in CI, 2026-11-28: the waiting task got no CPU in 2.5 s) is run again.
    let mut runs = Vec::new();
    let hogged = loop {
        let (counters, other_cpu_ns) = plant_run(cpu, 2.5, true);
        if other_cpu_ns >= STOPPED_NS {
            break counters;
        }
        runs.push(other_cpu_ns);
        assert!(
            runs.len() < ATTEMPTS,
            "the kernel never stopped the real-time class for the waiting SCHED_OTHER task in \
             {ATTEMPTS} runs of 2.5 s (its CPU time per run, ns: {runs:?}): neither RT \
             throttling (sched_rt_runtime_us) nor the fair server acted"
        );
        eprintln!(
            "note: run {} did not stop the real-time class; again",
            runs.len()
        );
    };
    assert!(hogged.fifo && hogged.pinned, "{hogged:?}");
    assert!(
        hogged.throttled >= 1,
        "the kernel stopped the real-time class (the waiting task ran), but the plant counted \
         no throttled stall in 2.5 s: {hogged:?}"
    );
    assert!(hogged.max_late_ns >= 40_000_000, "{hogged:?}");
    // A throttled stall is the kernel's, never counted as time in the kernel on the plant's
    // CPU or as the hypervisor's (the plant waited on its runqueue: it used no CPU time).
    assert!(
        hogged.stalls_in_kernel + hogged.stalls_stolen <= hogged.stalls - hogged.throttled,
        "{hogged:?}"
    );
    let (alone, _) = plant_run(cpu, 1.5, false);
    assert_eq!(alone.throttled, 0, "{alone:?}");
    // With no controller the loop wakes once a millisecond: a few per cent of its CPU.
    let duty = alone.duty_pct().unwrap();
    assert!(
        duty < 50.0,
        "the plant alone used {duty:.1} % of its CPU: {alone:?}"
    );
}
