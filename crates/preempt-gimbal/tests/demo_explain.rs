//! The gimbal demo explains its controller's deadline misses (issues 13 and 14): while a
//! SCHED_FIFO 99 thread of this test (`gimbal-hog`) busy-waits 5 ms every 100 ms on the
//! controller's CPU 0, `gimbal-demo --explain` misses samples, and its JSON carries per-miss
//! causes and the run's top causes, the first of which is that thread (by pid, its comm in
//! the name).
//!
//! Needs root (SCHED_FIFO, tracefs): without it the test skips with a message, and fails
//! under `PREEMPT_REQUIRE_PRIVILEGED=1`.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::sched::{self, Policy};

// Only `privileged` here: the hog needs SCHED_FIFO, so there is no soft-mode run.
#[allow(dead_code)]
mod support;

fn skip_or_fail(why: &str) {
    assert!(
        std::env::var_os("PREEMPT_REQUIRE_PRIVILEGED").is_none_or(|v| v != "1"),
        "{why} (PREEMPT_REQUIRE_PRIVILEGED=1, so this is a failure)"
    );
    println!("SKIPPED gimbal deadline-miss explanation: {why}");
}

/// Busy-waits `busy_ns` every `every_ns` on CPU 0 at SCHED_FIFO 99 until `stop`; publishes
/// its thread id in `tid`.
fn hog(stop: Arc<AtomicBool>, tid: Arc<AtomicI32>, busy_ns: u64, every_ns: u64) {
    std::thread::Builder::new()
        .name("gimbal-hog".into())
        .spawn(move || {
            sched::set_current_thread_affinity(&[0]).expect("pin the hog to CPU 0");
            sched::set_current_thread_policy(&Policy::Fifo { priority: 99 })
                .expect("SCHED_FIFO 99 for the hog");
            tid.store(sched::current_tid(), Ordering::Release);
            let mut next = clock::monotonic_now_ns() + every_ns;
            while !stop.load(Ordering::Acquire) {
                let _ = clock::sleep_until_ns(ClockId::Monotonic, next);
                let until = clock::monotonic_now_ns() + busy_ns;
                while clock::monotonic_now_ns() < until {
                    std::hint::spin_loop();
                }
                next += every_ns;
            }
        })
        .unwrap();
}

#[test]
fn demo_explain_names_the_hog_that_made_samples_miss() {
    if preempt_io::sys::cpu::online_cpus().unwrap().len() < 2 {
        return skip_or_fail("needs two CPUs (controller on 0, plant on the last)");
    }
    if !support::privileged() {
        return skip_or_fail("needs SCHED_FIFO and memory locking (root)");
    }
    let dir = std::env::temp_dir().join(format!("gimbal-explain-{}", std::process::id()));
    let stop = Arc::new(AtomicBool::new(false));
    let tid = Arc::new(AtomicI32::new(0));
    hog(Arc::clone(&stop), Arc::clone(&tid), 5_000_000, 100_000_000);
    while tid.load(Ordering::Acquire) == 0 {
        let _ = clock::sleep_until_ns(ClockId::Monotonic, clock::monotonic_now_ns() + 1_000_000);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_gimbal-demo"))
        .args(["--duration", "1", "--explain", "--out"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    stop.store(true, Ordering::Release);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("gimbal.json")).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let d = &v["data"];
    if let Some(why) = d["explain_skipped"].as_str() {
        return skip_or_fail(why);
    }
    let missed = d["samples"]["missed"].as_u64().unwrap();
    assert!(
        missed >= 10,
        "5 ms hogs every 100 ms must cost samples: {}",
        d["samples"]
    );
    assert!(
        text.contains("why the deadline misses were late"),
        "the run prints its top causes:\n{text}"
    );
    let x = &d["explain"];
    let sample = x["tasks"]
        .as_array()
        .expect("explain.tasks")
        .iter()
        .find(|t| t["task"] == "sample")
        .unwrap_or_else(|| panic!("sample's misses explained: {x}"));
    let explained = sample["explanations"].as_array().unwrap();
    assert!(!explained.is_empty(), "{sample}");
    for e in explained {
        let sum: u64 = e["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["ns"].as_u64().unwrap())
            .sum();
        assert_eq!(
            sum,
            e["latency_ns"].as_u64().unwrap(),
            "the causes add up: {e}"
        );
    }
    // Ten stalls of 5 ms, among the explanations kept (the longest delays): at least half of
    // those over 3 ms name the hog (by pid, its comm in the name) as their main cause, as
    // `thread gimbal-hog` (it held the CPU while the task was runnable) or `invisible ..
    // while gimbal-hog ran` (the task's wake-up was not seen before it ended). Not all: on a
    // loaded 2-CPU machine the 10 kHz app's trace can still lose events, and the time of a
    // window inside a lost stretch is charged to `lost`, not to the hog.
    let hog_tid = tid.load(Ordering::Acquire);
    let stalls: Vec<&serde_json::Value> = explained
        .iter()
        .filter(|e| e["latency_ns"].as_u64().unwrap() >= 3_000_000)
        .collect();
    let by_hog = stalls
        .iter()
        .filter(|e| {
            let main = &e["causes"][0];
            main["pid"] == hog_tid && main["name"].as_str().unwrap().contains("gimbal-hog")
        })
        .count();
    let counts = format!(
        "{} explained, {} not; {} stalls over 3 ms kept, {by_hog} by the hog (tid {hog_tid})",
        x["explained"],
        x["unexplained"],
        stalls.len()
    );
    assert!(by_hog >= 3, "{counts}: {sample}");
    assert!(by_hog * 2 >= stalls.len(), "{counts}: {sample}");
}
