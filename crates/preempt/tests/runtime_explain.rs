//! An app's deadline misses are explained from the kernel trace (issue 13): a periodic task
//! whose jobs are released while a higher-priority task busy-waits on the same CPU misses
//! its deadline, and the summary and `PREEMPT_STATS_JSON` name that task's executor thread
//! (`preempt-p5`, SCHED_FIFO 5) as the cause.
//!
//! Needs root (SCHED_FIFO, tracefs): without it the test skips with a message, and fails
//! under `PREEMPT_REQUIRE_PRIVILEGED=1`.

use std::time::Duration;

#[path = "support/child.rs"]
mod child_process;
use child_process::{privileged, requested_app, run_child, run_requested_app, text};

/// `victim` (priority 1, every 2 ms, deadline 1 ms) and `hog` (priority 5, every 20 ms,
/// busy for 3 ms) on CPU 1: each hog job delays one or two victim releases past their
/// deadline.
#[preempt::app(main = false, summary = true, explain = true, cores = [p1 = 1, p5 = 1])]
mod hogged {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 1, period = 2.millis(), deadline = 1.millis(), local = [jobs: u32 = 0])]
    fn victim(cx: victim::Context) {
        *cx.local.jobs += 1;
        if *cx.local.jobs == 150 {
            preempt::exit(0);
        }
    }

    #[task(priority = 5, period = 20.millis())]
    fn hog(_: hog::Context) {
        let until = preempt_io::sys::clock::monotonic_now_ns() + 3_000_000;
        while preempt_io::sys::clock::monotonic_now_ns() < until {
            std::hint::spin_loop();
        }
    }
}

/// `always_late` (priority 1, CPU 1, every 100 µs: 10 kHz, deadline 1 µs) misses every
/// deadline (a wake-up alone takes longer) for one second.
#[preempt::app(main = false, explain = true, cores = [p1 = 1])]
mod always_late {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 1, period = 100.micros(), deadline = 1.micros(), local = [jobs: u32 = 0])]
    fn tick(cx: tick::Context) {
        *cx.local.jobs += 1;
        if *cx.local.jobs == 10_000 {
            preempt::exit(0);
        }
    }
}

/// `left` (priority 1, CPU 0) and `right` (priority 2, CPU 1), both every 100 µs (10 kHz),
/// deadline 1 µs, released at the same instants: every job of both misses, and the two
/// executors note their misses at the same moments, as when a host stall delays them both.
#[preempt::app(main = false, explain = true, cores = [p1 = 0, p2 = 1])]
mod late_together {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 1, period = 100.micros(), deadline = 1.micros(), local = [jobs: u32 = 0])]
    fn left(cx: left::Context) {
        *cx.local.jobs += 1;
        if *cx.local.jobs == 5_000 {
            preempt::exit(0);
        }
    }

    #[task(priority = 2, period = 100.micros(), deadline = 1.micros())]
    fn right(_: right::Context) {}
}

#[test]
fn child() {
    run_requested_app(&[
        ("hogged", hogged::run),
        ("always_late", always_late::run),
        ("late_together", late_together::run),
    ]);
}

/// The apps share CPU 1 and trace every CPU: one at a time, or one's executor shows in the
/// other's explanations.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn skip_or_fail(why: &str) {
    assert!(
        std::env::var_os("PREEMPT_REQUIRE_PRIVILEGED").is_none_or(|v| v != "1"),
        "{why} (PREEMPT_REQUIRE_PRIVILEGED=1, so this is a failure)"
    );
    println!("SKIPPED app deadline-miss explanation: {why}");
}

/// Runs the app `name` (highest priority `priority`) in a child with explaining on, one at a
/// time; returns its stderr and its statistics JSON, or `None` (after skip/fail handling)
/// where it cannot run here.
fn run_explained(name: &str, priority: u8) -> Option<(String, serde_json::Value)> {
    if requested_app().is_some() {
        return None;
    }
    if preempt_io::sys::cpu::online_cpus().unwrap().len() < 2 {
        skip_or_fail("needs CPU 1");
        return None;
    }
    if !privileged(priority) {
        skip_or_fail("needs SCHED_FIFO and memory locking (root)");
        return None;
    }
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let json = std::env::temp_dir().join(format!(
        "preempt-explain-{name}-{}.json",
        std::process::id()
    ));
    let out = run_child(
        name,
        &[(preempt::STATS_JSON_ENV, json.to_str().unwrap())],
        priority,
        Duration::from_secs(60),
    );
    let stderr = text(&out.stderr);
    if stderr.contains("cannot explain deadline misses") {
        skip_or_fail(&stderr);
        return None;
    }
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    Some((stderr, v))
}

#[test]
fn a_miss_caused_by_a_higher_priority_task_names_its_executor() {
    let Some((stderr, v)) = run_explained("hogged", 5) else {
        return;
    };
    let summary = stderr
        .split("why the deadline misses were late")
        .nth(1)
        .unwrap_or_else(|| panic!("no explanation in the summary:\n{stderr}"));
    let first = summary.lines().nth(1).unwrap_or_default();
    assert!(
        first.contains("thread preempt-p5"),
        "the top cause must be the hog's executor:\n{stderr}"
    );
    let tasks = v["explain"]["tasks"].as_array().expect("explain.tasks");
    let victim = tasks
        .iter()
        .find(|t| t["task"] == "victim")
        .expect("victim's misses");
    let explained = victim["explanations"].as_array().unwrap();
    assert!(explained.len() >= 5, "{victim}");
    let by_hog = explained
        .iter()
        .filter(|e| {
            let main = &e["causes"][0];
            main["kind"] == "thread" && main["name"] == "preempt-p5" && main["priority"] == 5
        })
        .count();
    assert!(
        by_hog * 10 >= explained.len() * 8,
        "at least 80 % of the misses must be the hog's: {victim}"
    );
    let top = &v["explain"]["top_causes"][0];
    assert_eq!(top["kind"], "thread", "{top}");
    assert_eq!(top["name"], "preempt-p5", "{top}");
}

/// Issue 13: the note logs are sized from the executors' release rates; at 10 kHz with every job late
/// for a second, no miss is dropped unnoted (the fixed 1024-note log dropped them).
#[test]
fn a_10_khz_app_missing_every_deadline_drops_no_notes() {
    if let Some(host) = preempt_io::sys::cpu::user_mode_emulation() {
        // The log's drain thread runs emulated, many times slower than natively, while the
        // kernel traces at native speed on the {host} host: a log sized for a native drain
        // dropped 1 note of 10 000 under qemu-user 7.2. Native arm64 runs it (scripts/rt_guests.py).
        println!("SKIP under qemu-user on {host}: the note log is sized for a native-speed drain");
        return;
    }
    let Some((_, v)) = run_explained("always_late", 1) else {
        return;
    };
    let x = &v["explain"];
    let misses = v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["stats"]["name"] == "tick")
        .map(|t| t["stats"]["deadline_misses"].as_u64().unwrap())
        .unwrap_or_else(|| panic!("tick's statistics: {v}"));
    assert!(misses >= 9_000, "every job should miss: {misses} misses");
    assert_eq!(x["dropped_notes"], 0, "{x}");
    assert!(x["log_capacity"].as_u64().unwrap() >= 10_000, "{x}");
    let explained = x["explained"].as_u64().unwrap();
    let unexplained = x["unexplained"].as_u64().unwrap();
    assert_eq!(explained + unexplained, misses, "every miss noted: {x}");
    assert!(explained > 0, "{x}");
    // `partial` says exactly whether some misses are not (fully) explained.
    let partly = x["partly_traced"].as_u64().unwrap();
    assert_eq!(x["partial"], unexplained + partly > 0, "{x}");
    assert!(x["trace_loss"]["events"].as_u64().unwrap() > 0, "{x}");
}

/// Two executors on two CPUs missing every deadline at the same instants: each notes into
/// its own log (10 passes of its own 10 kHz: 10 000 notes each), so no note is dropped
/// because the other executor was noting. (With one log for the app, of the same 20 000
/// notes, the simultaneous notes met on its lock: 57 to 429 of about 10 000 dropped in five
/// runs; docs/MEASURING.md.)
#[test]
fn two_executors_missing_together_drop_no_notes() {
    if let Some(host) = preempt_io::sys::cpu::user_mode_emulation() {
        // As `a_10_khz_app_missing_every_deadline_drops_no_notes`: the logs are sized for a
        // native-speed drain, and the drain runs emulated (2 of 20 000 notes dropped under
        // qemu-user 7.2 in CI; the drain thread was the top cause of the misses).
        println!(
            "SKIP under qemu-user on {host}: the note logs are sized for a native-speed drain"
        );
        return;
    }
    let Some((_, v)) = run_explained("late_together", 2) else {
        return;
    };
    let x = &v["explain"];
    let misses: u64 = v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["stats"]["deadline_misses"].as_u64().unwrap())
        .sum();
    assert!(
        misses >= 9_000,
        "every job of both tasks should miss: {misses} misses"
    );
    assert_eq!(x["log_capacity"], 20_000, "two logs of 10 000: {x}");
    assert_eq!(x["dropped_notes"], 0, "{x}");
    let explained = x["explained"].as_u64().unwrap();
    let unexplained = x["unexplained"].as_u64().unwrap();
    assert_eq!(explained + unexplained, misses, "every miss noted: {x}");
}
