//! `preempt latency --explain` end to end (issue 13): a SCHED_FIFO hog of higher priority
//! busy-waits 3 ms at known moments on the measured CPU; its stalls are the worst samples, and
//! the result names it (comm `preempt-hog`, its pid) as their main cause. `--trace-out` writes
//! a Chrome/Perfetto JSON trace.
//!
//! Needs root (SCHED_FIFO, tracefs): skips with a message without it, fails under
//! `PREEMPT_REQUIRE_PRIVILEGED=1`.

use std::process::Command;

use preempt_io::sys::clock::{ClockId, monotonic_now_ns, sleep_until_ns};
use preempt_io::sys::sched::{self, Policy};
use serde_json::Value;

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_preempt");

#[test]
fn explain_names_a_higher_priority_hog_and_writes_a_perfetto_trace() {
    if !support::has_capability(
        preempt_io::sys::caps::Capability::SysNice,
        "needs root for SCHED_FIFO and tracefs",
    ) {
        return;
    }
    let cpu = *preempt_io::sys::cpu::online_cpus().unwrap().last().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (json, trace) = (dir.path().join("r.json"), dir.path().join("t.json"));
    // Three 3 ms stalls, 400 ms apart, from 600 ms on (the run lasts 2 s).
    let t0 = monotonic_now_ns();
    let hog = std::thread::Builder::new()
        .name("preempt-hog".into())
        .spawn(move || {
            sched::set_current_thread_affinity(&[cpu]).unwrap();
            sched::set_current_thread_policy(&Policy::Fifo { priority: 95 }).unwrap();
            let tid = sched::current_tid();
            for k in 0..3 {
                let at = t0 + 600_000_000 + k * 400_000_000;
                sleep_until_ns(ClockId::Monotonic, at).unwrap();
                while monotonic_now_ns() < at + 3_000_000 {
                    std::hint::spin_loop();
                }
            }
            tid
        })
        .unwrap();
    let out = Command::new(BIN)
        .env("PREEMPT_HISTORY", support::test_history())
        .args([
            "latency",
            "-D",
            "2s",
            "-a",
            &cpu.to_string(),
            "--explain=1000",
        ])
        .arg("--trace-out")
        .arg(&trace)
        .arg("--export-json")
        .arg(&json)
        .output()
        .unwrap();
    let hog_tid = hog.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("--explain: ") && stderr.contains("tracefs") {
        assert!(
            std::env::var_os("PREEMPT_REQUIRE_PRIVILEGED").is_none_or(|v| v != "1"),
            "tracefs unusable under PREEMPT_REQUIRE_PRIVILEGED=1: {stderr}"
        );
        support::skip_unprivileged(&format!("tracefs unusable: {stderr}"));
        return;
    }
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("why the outliers were late"), "{stdout}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ex = &v["data"]["explain"];
    let threads = ex["threads"]
        .as_array()
        .unwrap_or_else(|| panic!("no explain in {v}"));
    let explained = threads[0]["explanations"].as_array().unwrap();
    let by_hog: Vec<&Value> = explained
        .iter()
        .filter(|e| e["causes"][0]["pid"] == hog_tid && e["causes"][0]["name"] == "preempt-hog")
        .collect();
    assert!(by_hog.len() >= 3, "each stall is named: {explained:#?}");
    for e in &by_hog {
        let sum = support::causes_ns(e);
        assert_eq!(sum, e["latency_ns"].as_u64().unwrap(), "causes add up: {e}");
        assert!(
            e["causes"][0]["ns"].as_u64().unwrap() * 2 > sum,
            "the hog carries most: {e}"
        );
    }
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let evs = t["traceEvents"].as_array().unwrap();
    assert!(
        evs.iter()
            .any(|e| e["ph"] == "X" && e["name"] == "thread preempt-hog")
    );
}
