//! Ground truth for `preempt latency` (issue 5, "Trust"): inject known delays at known times
//! and check that the tool attributes them to the right cycles with the right size.
//!
//! A SCHED_FIFO 90 thread of this test, pinned to the CPU that `preempt latency` measures at
//! SCHED_FIFO 50, busy-waits 2, 3, 4 and 5 ms at recorded CLOCK_MONOTONIC times. The
//! measuring thread cannot run meanwhile, so:
//! - exactly one sample per window is delayed, with `latency ≈ window end − release`
//!   (within ±20 µs: the injector's last clock read to the measuring thread's wake-up);
//! - the releases that passed during the window must be the *only* missed periods;
//! - every cycle outside the windows must stay far below the injected sizes.
//!
//! A behaviour test, not a speed test: the sizes are milliseconds so VM noise (tens to
//! hundreds of µs) cannot make it pass or fail by accident.

use std::collections::HashSet;
use std::io::BufReader;
use std::process::{Command, Stdio};

use preempt_io::sys::clock::{ClockId, monotonic_now_ns, sleep_until_ns};
use preempt_io::sys::{caps, cpu, sched};

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_preempt");
const INTERVAL_NS: u64 = 1_000_000;
const LOOPS: u64 = 2_500;
const TOLERANCE_NS: u64 = 20_000;
/// A tenth of the 1 ms period: the bound a contaminated run (a VM, a busy machine) must keep.
const NEAR_NS: u64 = 100_000;

#[derive(Debug)]
struct Sample {
    cycle: u64,
    release: u64,
    latency: u64,
}

#[test]
fn injected_delays_show_up_in_the_right_cycles_with_the_right_size() {
    if !caps::has_effective(caps::Capability::SysNice).unwrap_or(false) {
        support::skip_unprivileged(
            "the ground-truth test needs CAP_SYS_NICE (root) for SCHED_FIFO",
        );
        return;
    }
    let target = *cpu::online_cpus().unwrap().last().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.csv");
    let json = dir.path().join("r.json");
    let mut child = Command::new(BIN)
        .env("PREEMPT_HISTORY", support::test_history())
        .args([
            "latency",
            "--priority",
            "50",
            "--interval",
            "1000",
            "--no-progress",
        ])
        .args(["--loops", &LOOPS.to_string(), "--cpus", &target.to_string()])
        .arg("--trace-samples")
        .arg(&trace)
        .arg("--export-json")
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    support::wait_for_line(&mut stderr, "measuring");

    // Inject on the measured CPU, above the measuring thread's priority.
    let windows: Vec<(u64, u64)> = std::thread::spawn(move || {
        sched::set_current_thread_affinity(&[target]).unwrap();
        sched::set_current_thread_policy(&sched::Policy::Fifo { priority: 90 }).unwrap();
        let mut next = monotonic_now_ns() + 400_000_000; // let the run settle past its start
        let mut windows = Vec::new();
        for size_ms in [2u64, 3, 4, 5] {
            sleep_until_ns(ClockId::Monotonic, next).unwrap();
            // Start off the release grid so the window catches a release partway.
            let start = monotonic_now_ns();
            let mut now = start;
            while now < start + size_ms * 1_000_000 {
                now = monotonic_now_ns();
            }
            windows.push((start, now));
            next = now + 300_000_000;
        }
        // Sleep before exiting: thread teardown at priority 90 right after the last window
        // would delay the measuring thread (~100 µs here) and blur that window's size.
        sleep_until_ns(ClockId::Monotonic, next).unwrap();
        windows
    })
    .join()
    .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());

    let text = std::fs::read_to_string(&trace).unwrap();
    let samples: Vec<Sample> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<u64> = l
                .split(',')
                .skip(2)
                .take(4)
                .map(|x| x.parse().unwrap())
                .collect();
            Sample {
                cycle: f[0],
                release: f[1],
                latency: f[3],
            }
        })
        .collect();
    let first_release = samples[0].release - samples[0].cycle * INTERVAL_NS;
    assert!(
        windows
            .iter()
            .all(|&(_, e)| e < first_release + LOOPS * INTERVAL_NS),
        "injections must fall inside the run: {windows:?}"
    );
    // A sample is hit by a window if it was released before the window ended and woke after
    // it began (its release may precede the window when the injector started between that
    // release and its wake-up).
    let hit_by = |s: &Sample| {
        windows
            .iter()
            .position(|&(ws, we)| s.release <= we && s.release + s.latency >= ws)
    };
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let verdict = v["data"]["ledger"]["verdict"].as_str().unwrap().to_string();

    // 1. Each window delays exactly one sample, until the window's end.
    let mut exact = 0;
    let mut near = 0;
    let mut worst_gap = 0;
    for (w, &(start, end)) in windows.iter().enumerate() {
        let hits: Vec<&Sample> = samples.iter().filter(|s| hit_by(s) == Some(w)).collect();
        assert_eq!(
            hits.len(),
            1,
            "window {w} {start}..{end} must delay exactly one sample: {hits:?}"
        );
        let hit = hits[0];
        let expected = end - hit.release;
        assert!(
            hit.latency >= expected,
            "window {w}: cycle {} woke before the injector ended",
            hit.cycle
        );
        let gap = hit.latency - expected;
        println!(
            "window {w}: {} ms injected, cycle {} latency {} ns = window end + {gap} ns",
            w + 2,
            hit.cycle,
            hit.latency
        );
        // The right size: within the tolerance, and never off by a period.
        assert!(
            gap < INTERVAL_NS / 2,
            "window {w}: cycle {} latency {} ns, expected {expected} ns",
            hit.cycle,
            hit.latency
        );
        if gap <= TOLERANCE_NS {
            exact += 1;
        }
        if gap <= NEAR_NS {
            near += 1;
        }
        worst_gap = worst_gap.max(gap);
    }
    // Every window within ±20 µs on a clean run. On a contaminated one (other processes busy,
    // a VM's host descheduling the vCPU as the injector ends) the context switch after the
    // window itself slows down: seen here at 18-48 µs with the 2 vCPUs 98 % busy. Then half
    // the windows must still be within ±20 µs and all within 100 µs, a tenth of a period, so
    // the attribution stays exact.
    // An idle VM is no better: a halted vCPU is woken by the host, and the switch after the
    // window took 15-78 µs here with nothing else running (1 of 4 within 20 µs, 4 of 4 within
    // 100 µs). So a contaminated run needs half its windows within 100 µs.
    if verdict == "clean" {
        assert!(
            exact == windows.len(),
            "only {exact} of {} windows within {TOLERANCE_NS} ns ({verdict})",
            windows.len()
        );
    } else {
        assert!(
            near >= windows.len().div_ceil(2),
            "only {near} of {} windows within {NEAR_NS} ns ({verdict}; {exact} within {TOLERANCE_NS} ns)",
            windows.len()
        );
    }
    // On a clean run every window's sample lands within 100 µs of the window's end; on a
    // contaminated one (a VM's host can stop the vCPU right then) only the attribution is
    // checked: `gap < INTERVAL_NS / 2` above, i.e. never off by a period.
    if verdict == "clean" {
        assert!(
            worst_gap <= 100_000,
            "a window's sample is {worst_gap} ns past the window's end"
        );
    }

    // 2. Missed periods are exactly releases inside the windows.
    let seen: HashSet<u64> = samples.iter().map(|s| s.cycle).collect();
    let missing: Vec<u64> = (0..LOOPS).filter(|c| !seen.contains(c)).collect();
    assert!(
        !missing.is_empty(),
        "windows of 2-5 ms at a 1 ms period must skip releases"
    );
    let stray_missed: Vec<u64> = missing
        .iter()
        .copied()
        .filter(|c| {
            let release = first_release + c * INTERVAL_NS;
            !windows
                .iter()
                .any(|&(ws, we)| release + INTERVAL_NS >= ws && release <= we + TOLERANCE_NS)
        })
        .collect();
    let th = &v["data"]["threads"][0];
    assert_eq!(th["missed_periods"].as_u64().unwrap(), missing.len() as u64);

    // 3. Outside the windows nothing comes near the injected sizes.
    let stray_late: Vec<(u64, u64)> = samples
        .iter()
        .filter(|s| hit_by(s).is_none() && s.latency >= 1_000_000)
        .map(|s| (s.cycle, s.latency))
        .collect();
    // Foreign load during the run (other processes busy on the CPUs, other real-time threads,
    // steal time) and a hypervisor (which deschedules the vCPU for milliseconds at will: seen
    // in CI on this VM with nothing else running) cause stalls of their own that no injector
    // made; the ledger flags both, and then the stalls are only reported. On a clean run
    // there must be none.
    let foreign_load = verdict != "clean";
    if foreign_load {
        println!(
            "foreign load ({verdict}): stray missed {stray_missed:?}, stray late {stray_late:?}"
        );
    } else {
        assert!(
            stray_missed.is_empty() && stray_late.is_empty(),
            "not injected, yet missed: {stray_missed:?}, late >= 1 ms: {stray_late:?} ({verdict})"
        );
    }

    // 4. The worst sample recorded in the JSON is the 5 ms window's cycle.
    let worst = th["latency"]["worst"][0]["cycle"].as_u64().unwrap();
    let worst_sample = samples.iter().find(|s| s.cycle == worst).unwrap();
    let stray_worst = stray_late.iter().any(|&(c, _)| c == worst);
    assert!(
        hit_by(worst_sample) == Some(3) || (foreign_load && stray_worst),
        "worst cycle {worst} is neither the 5 ms window's nor a foreign stall"
    );
}
