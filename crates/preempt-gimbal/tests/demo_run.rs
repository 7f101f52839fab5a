//! A short demo run end to end: the plant process, the controller app, the MCAP read back
//! by an independent reader (the Python `mcap` package, `pip install mcap`), the JSON's
//! bookkeeping, and the plant dying mid-run.
//!
//! Without real-time privileges the run uses `PREEMPT_SOFT=1` (and says so); with
//! `PREEMPT_REQUIRE_PRIVILEGED=1` missing privileges fail the test instead.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::privileged;

fn demo(out: &Path, duration: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gimbal-demo"));
    cmd.args(["--duration", duration, "--out"]).arg(out);
    // The controller's real-time jobs are checked: an allocation, lock, sleep or blocking
    // I/O in one stops the demo with exit code 4 (preempt::rt_safety).
    cmd.env(preempt::RT_SAFETY_ENV, "abort");
    support::soft_unless_privileged(&mut cmd);
    cmd
}

/// The pid of the demo `demo_pid`'s plant child process, once it runs.
fn plant_pid(demo_pid: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{demo_pid}/task/{demo_pid}/children"))
        .unwrap_or_default();
    children
        .split_whitespace()
        .find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "gimbal-plant")
        })
        .and_then(|pid| pid.parse().ok())
}

/// Runs `cmd`; `kill_plant_after` its plant child started, kills it.
fn run(mut cmd: Command, kill_plant_after: Option<Duration>) -> Output {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    let mut plant_seen: Option<Instant> = None;
    let mut killed = false;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if let Some(after) = kill_plant_after {
            if !killed {
                if let Some(pid) = plant_pid(child.id()) {
                    if plant_seen.get_or_insert_with(Instant::now).elapsed() > after {
                        preempt_io::sys::process::kill(pid).unwrap();
                        killed = true;
                    }
                }
            }
        }
        if start.elapsed() > Duration::from_secs(120) {
            // Kill it (its plant follows: parent-death signal) before failing, so that a
            // hung run does not outlive the test.
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the demo hangs: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::yield_now();
    }
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Message counts per topic, read by the Python `mcap` package.
fn mcap_counts(path: &Path) -> serde_json::Value {
    let script = r#"
import json, sys
from mcap.reader import make_reader
counts = {}
with open(sys.argv[1], "rb") as f:
    reader = make_reader(f)
    summary = reader.get_summary()
    schemas = {s.name: s.encoding for s in summary.schemas.values()}
    for schema, channel, message in reader.iter_messages():
        counts[channel.topic] = counts.get(channel.topic, 0) + 1
        if channel.topic == "/gimbal/state" and counts[channel.topic] == 1:
            first = json.loads(message.data)
print(json.dumps({"counts": counts, "schemas": schemas, "first": first,
                  "stats_count": summary.statistics.message_count}))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(path)
        .output()
        .expect("python3 is needed to read the MCAP back");
    assert!(
        out.status.success(),
        "reading {} with the Python mcap package failed (pip install mcap): {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn demo_runs_records_everything_and_survives_a_dying_plant() {
    let dir = std::env::temp_dir().join(format!("gimbal-demo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    // 1. A 1.5 s run with the default script (pan steps at 0.2 s).
    let ok = dir.join("ok");
    let out = run(demo(&ok, "1.5"), None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&ok.join("gimbal.json"));
    assert_eq!(r["kind"], "demo_gimbal");
    let d = &r["data"];
    assert_eq!(d["interrupted"], false);
    let s = &d["samples"];
    let (expected, exchanged, missed) = (
        s["expected"].as_u64().unwrap(),
        s["exchanged"].as_u64().unwrap(),
        s["missed"].as_u64().unwrap(),
    );
    assert_eq!(expected, 15_000);
    assert_eq!(exchanged + missed, expected);
    // How many of the 10 kHz samples a debug build exchanges on a shared 2-vCPU VM is a
    // timing figure (docs/PERFORMANCE.md, from a release build), not a property to assert
    // here: 4 865 of 15 000 in one CI-like run, most in another. The bookkeeping must hold.
    assert!(exchanged > 0, "no sample exchanged: {s}");
    assert_eq!(d["telemetry"]["lost"], 0);
    assert_eq!(d["telemetry"]["written"].as_u64(), Some(exchanged));
    let axes = d["axes"].as_array().unwrap();
    assert_eq!(axes.len(), 2);
    assert_eq!(axes[0]["name"], "pan");
    assert_eq!(axes[0]["step_rad"], 0.5);
    // Control quality against the ideal-timing reference, on both axes. The demo's target
    // (≤ 1 % of the step, docs/PERFORMANCE.md) is for a release build on an idle machine; this
    // is a debug build of the app on a machine shared with builds, so the bound is looser,
    // but it fails on what issue 14 saw before the plant was redesigned and cpu_dma_latency held
    // (pan RMS 18-60 % of the step on an idle VM). Measured with this test's settings
    // (`target/debug/gimbal-demo --duration 1.5`, load average 4): real-time 0.02-0.04 % over
    // three runs, soft mode 0.5 % pan / 5.2 % tilt. Soft mode (no priorities: any thread can
    // delay the exchange by milliseconds) gets a bound that only a broken loop exceeds.
    let bound_pct = if privileged() { 5.0 } else { 25.0 };
    let series = &d["series"];
    let last_real = series["real_rad"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|p| p[0].is_number())
        .unwrap();
    let last_setpoint = series["setpoint_rad"].as_array().unwrap().last().unwrap();
    for (a, axis) in axes.iter().enumerate() {
        let pct = axis["rms_error_pct_of_step"].as_f64().unwrap();
        assert!(
            pct.is_finite() && pct <= bound_pct,
            "{} RMS error vs reference {pct:.2} % of the step (bound {bound_pct} %): {axis}",
            axis["name"]
        );
        // The loop works: each axis ends at its setpoint (within the 2 % settling band).
        let (y, r) = (
            last_real[a].as_f64().unwrap(),
            last_setpoint[a].as_f64().unwrap(),
        );
        let step = axis["step_rad"].as_f64().unwrap().abs();
        assert!(
            (y - r).abs() <= 0.02 * step,
            "{} ends at {y} rad, setpoint {r}",
            axis["name"]
        );
    }
    assert!(d["controller_cpu_per_sample_ns"]["p99"].as_u64().unwrap() > 0);
    assert!(d["plant"]["steps"].as_u64().unwrap() >= 4 * exchanged);
    assert_eq!(d["soft"].as_bool().unwrap(), !privileged());

    // The MCAP, read back independently, has the channels and counts the JSON claims.
    let m = mcap_counts(&ok.join("gimbal.mcap"));
    assert_eq!(m["counts"]["/gimbal/state"].as_u64(), Some(exchanged));
    assert_eq!(m["counts"]["/gimbal/reference"].as_u64(), Some(expected));
    assert_eq!(m["counts"]["/gimbal/tasks"].as_u64(), Some(1));
    assert_eq!(m["schemas"]["preempt.gimbal.State"], "jsonschema");
    assert!(m["first"]["pan"]["angle_rad"].is_number());
    assert_eq!(m["stats_count"].as_u64(), Some(exchanged + expected + 1));

    // 2. The plant dies mid-run: a clear error, the files kept and marked.
    let dead = dir.join("dead");
    let out = run(demo(&dead, "6"), Some(Duration::from_millis(2500)));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the plant process died"), "{stderr}");
    let r = json(&dead.join("gimbal.json"));
    assert_eq!(r["interrupted"], true);
    // The final file: complete (its last word), interrupted with the error saying why.
    assert_eq!(r["complete"], true);
    let got = r["data"]["telemetry"]["written"].as_u64().unwrap();
    assert!(got > 0 && got < 50_000, "{got}");
    let m = mcap_counts(&dead.join("gimbal.mcap"));
    assert_eq!(m["counts"]["/gimbal/state"].as_u64(), Some(got));

    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGTERM (a service manager stopping the demo) ends the run as Ctrl-C does, keeping the
/// figures marked interrupted, and the exit code says which signal it was: 143, as
/// `preempt demo gimbal` and every other measuring program of the project return.
#[test]
fn sigterm_ends_the_demo_keeping_its_results_with_exit_code_143() {
    let dir = std::env::temp_dir().join(format!("gimbal-demo-term-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = demo(&dir, "30");
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    // Once its plant process runs, the demo is measuring: stop it then.
    let start = Instant::now();
    while plant_pid(child.id()).is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the plant did not start within 60 s"
        );
        std::thread::yield_now();
    }
    let measuring = Instant::now();
    while measuring.elapsed() < Duration::from_millis(500) {
        std::thread::yield_now();
    }
    preempt_io::sys::signal::signal_process(child.id(), preempt_io::sys::signal::SIGTERM).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    let r = json(&dir.join("gimbal.json"));
    assert_eq!(r["interrupted"], true, "{r}");
    let _ = std::fs::remove_dir_all(&dir);
}
