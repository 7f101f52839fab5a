//! Throttling named wherever it distorts a figure (issue 29): a SCHED_FIFO 50 hog keeps CPU
//! 1 busy past the kernel's budget for the real-time class (950 ms of every second), with a
//! SCHED_OTHER task runnable there, so that the kernel stops the class on that CPU for ~50 ms
//! once a second (the fair server on kernels >= 6.12, RT throttling proper otherwise). Three
//! measurements run on CPU 1 at the same time, each for about three seconds:
//!
//! - `preempt latency` without `--explain`: the verdict and the JSON count the throttled
//!   windows from the measuring thread's schedstat (no tracing);
//! - `preempt latency --explain`: the kernel trace names the stop (`THROTTLED`);
//! - an app with `summary = true, explain = true`: its exit summary and `PREEMPT_STATS_JSON`
//!   count the windows per level (schedstat), and the misses in them are charged to
//!   `throttled`.
//!
//! Needs root (SCHED_FIFO, tracefs) and two CPUs: skips with a message without them, fails
//! under `PREEMPT_REQUIRE_PRIVILEGED=1`.

use std::process::Command;
use std::time::Duration;

use preempt_io::sys::clock::monotonic_now_ns;
use preempt_io::sys::sched::{self, Policy};
use serde_json::Value;

mod support;

#[path = "../../preempt/tests/support/child.rs"]
mod child_process;
use child_process::{privileged, requested_app, run_child, run_requested_app, text};

const BIN: &str = env!("CARGO_BIN_EXE_preempt");

/// The hogged CPU (the app's `cores` needs a literal).
const CPU: usize = 1;

/// `tick` (priority 60, CPU 1, every 2 ms, deadline 2 ms) for 1500 jobs (3 s): only a stall
/// of milliseconds makes it miss.
#[preempt::app(main = false, summary = true, explain = true, cores = [p60 = 1])]
mod victim {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 60, period = 2.millis(), deadline = 2.millis(), local = [jobs: u32 = 0])]
    fn tick(cx: tick::Context) {
        *cx.local.jobs += 1;
        if *cx.local.jobs == 1_500 {
            preempt::exit(0);
        }
    }
}

#[test]
fn child() {
    run_requested_app(&[("victim", victim::run)]);
}

/// Spins on [`CPU`] until `until_ns`, at SCHED_FIFO `fifo` or SCHED_OTHER.
fn spinner(fifo: Option<u8>, until_ns: u64) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        sched::set_current_thread_affinity(&[CPU]).unwrap();
        if let Some(priority) = fifo {
            sched::set_current_thread_policy(&Policy::Fifo { priority }).unwrap();
        }
        while monotonic_now_ns() < until_ns {
            std::hint::spin_loop();
        }
    })
}

/// `preempt latency` on [`CPU`] for 3 s with `extra` arguments, its JSON into `json`.
fn latency(json: &std::path::Path, extra: &[&str]) -> std::process::Child {
    Command::new(BIN)
        .env("PREEMPT_HISTORY", support::test_history())
        .args(["latency", "-D", "3s", "-a", &CPU.to_string()])
        .args(extra)
        .arg("--export-json")
        .arg(json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// The output of a finished `preempt latency`, which must have succeeded.
fn finished(child: std::process::Child, what: &str) -> String {
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "{what}: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    stdout
}

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_real_time_hog_past_the_budget_is_named_by_latency_the_app_and_explain() {
    if requested_app().is_some() {
        return;
    }
    if preempt_io::sys::cpu::online_cpus().unwrap().len() < 2 {
        support::skip_unprivileged("needs CPU 1");
        return;
    }
    if !privileged(60)
        || !support::has_capability(
            preempt_io::sys::caps::Capability::SysNice,
            "needs root for SCHED_FIFO and tracefs",
        )
    {
        support::skip_unprivileged("needs SCHED_FIFO and memory locking (root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (plain_json, explain_json, app_json) = (
        dir.path().join("plain.json"),
        dir.path().join("explain.json"),
        dir.path().join("app.json"),
    );
    // The hog outlasts the three runs (3 s each, started at once): the class is stopped on
    // CPU 1 about once a second while they run.
    let until = monotonic_now_ns() + 4_000_000_000;
    let other = spinner(None, until);
    let hog = spinner(Some(50), until);
    let plain = latency(&plain_json, &[]);
    let explained = latency(&explain_json, &["--explain=5000"]);
    let app = run_child(
        "victim",
        &[(preempt::STATS_JSON_ENV, app_json.to_str().unwrap())],
        60,
        Duration::from_secs(60),
    );
    let plain = finished(plain, "latency");
    let explained_out = explained.wait_with_output().unwrap();
    hog.join().unwrap();
    other.join().unwrap();

    // 1. `preempt latency` without tracing: the verdict and the JSON.
    let v = read_json(&plain_json);
    let windows = v["data"]["threads"][0]["throttled_windows"]
        .as_u64()
        .unwrap();
    assert!(windows >= 1, "no throttled window counted: {}", v["data"]);
    let verdict = v["data"]["ledger"]["verdict"].as_str().unwrap();
    assert!(
        verdict.contains(&format!("{windows} throttled window(s)")),
        "{verdict}"
    );
    assert!(plain.contains("throttled window(s)"), "{plain}");

    // 2. `preempt latency --explain`: the trace names the stop on CPU 1.
    let stderr = text(&explained_out.stderr);
    if stderr.contains("--explain: ") && stderr.contains("tracefs") {
        support::skip_unprivileged(&format!("tracefs unusable: {stderr}"));
        return;
    }
    let stdout = text(&explained_out.stdout);
    assert!(
        explained_out.status.success(),
        "latency --explain: {stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("THROTTLED: the kernel stopped the real-time class"),
        "{stdout}"
    );
    let v = read_json(&explain_json);
    let stretches = v["data"]["explain"]["throttled"].as_array().unwrap();
    assert!(stretches.iter().any(|s| s["cpu"] == CPU), "{stretches:?}");
    assert!(
        v["data"]["ledger"]["verdict"]
            .as_str()
            .unwrap()
            .contains("throttling (the kernel stopped the real-time class"),
        "{}",
        v["data"]["ledger"]
    );

    // 3. The app: the exit summary and PREEMPT_STATS_JSON (schedstat, per level), and its
    // misses explained as `throttled`.
    let stderr = text(&app.stderr);
    assert_eq!(app.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("THROTTLED: executor threads waited out"),
        "{stderr}"
    );
    assert!(
        stderr.contains("(measured under RT throttling: see THROTTLED)"),
        "{stderr}"
    );
    let v = read_json(&app_json);
    let level = v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["priority"] == 60)
        .unwrap();
    assert!(level["throttled_windows"].as_u64().unwrap() >= 1, "{level}");
    let explain = &v["explain"];
    assert!(
        explain["throttled"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["cpu"] == CPU)),
        "{explain}"
    );
    let misses = explain["tasks"][0]["explanations"].as_array().unwrap();
    assert!(
        misses.iter().any(|m| m["causes"][0]["kind"] == "throttled"),
        "{explain}"
    );
}
