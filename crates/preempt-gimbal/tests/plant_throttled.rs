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
use preempt_io::sys::clock::monotonic_now_ns;
use preempt_io::sys::memfd::SharedMap;
use preempt_io::sys::sched::{self, Policy};
use preempt_rig::page::PAGE_LEN;
use preempt_rig::plant_rt::{self, PlantConfig};
use preempt_rig::spawn::{BusEnds, PlantCounters};

/// Runs the plant alone on `cpu` at SCHED_FIFO 95 for `secs` (a hog of SCHED_FIFO 50 beside
/// it when `hog`, and a SCHED_OTHER task waiting there either way); its counters.
fn plant_run(cpu: usize, secs: f64, hog: bool) -> PlantCounters {
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
    other.join().unwrap();
    PlantCounters::read(&map)
}

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
    let hogged = plant_run(cpu, 2.5, true);
    assert!(hogged.fifo && hogged.pinned, "{hogged:?}");
    assert!(
        hogged.throttled >= 1,
        "a hog past the budget must stop the plant's class at least once in 2.5 s: {hogged:?}"
    );
    assert!(hogged.max_late_ns >= 40_000_000, "{hogged:?}");
    // A throttled stall is the kernel's, never counted as time in the kernel on the plant's
    // CPU or as the hypervisor's (the plant waited on its runqueue: it used no CPU time).
    assert!(
        hogged.stalls_in_kernel + hogged.stalls_stolen <= hogged.stalls - hogged.throttled,
        "{hogged:?}"
    );
    let alone = plant_run(cpu, 1.5, false);
    assert_eq!(alone.throttled, 0, "{alone:?}");
    // With no controller the loop wakes once a millisecond: a few per cent of its CPU.
    let duty = alone.duty_pct().unwrap();
    assert!(
        duty < 50.0,
        "the plant alone used {duty:.1} % of its CPU: {alone:?}"
    );
}
