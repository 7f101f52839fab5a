//! `preempt demo uav` end to end: one short flight (the simulator re-executed as
//! `preempt __uav-sim`, the result file of kind `demo_uav` that `compare`, `report` and the
//! CSV export read), a flight with `--explain` whose control task a higher-priority hog
//! stalls (the misses are explained into the result, the summary and the report, and the hog
//! is named as their main cause), and a matrix interrupted by SIGTERM that keeps its finished
//! cells (each explained when asked).
//! Soft mode (`PREEMPT_SOFT=1`, marked) without real-time privileges; under
//! `PREEMPT_REQUIRE_PRIVILEGED=1` missing privileges fail instead.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use preempt_io::sys::clock::{ClockId, monotonic_now_ns, sleep_until_ns};
use preempt_io::sys::sched::{self, Policy};

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_preempt");

/// One flight at a time: each simulator busy-polls the last CPU at SCHED_FIFO 95, and two
/// on one CPU would starve each other.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn preempt(dir: &Path) -> (Command, bool) {
    let mut cmd = Command::new(BIN);
    cmd.env("PREEMPT_HISTORY", support::test_history());
    let privileged =
        preempt_io::sys::caps::has_effective(preempt_io::sys::caps::Capability::SysNice)
            .unwrap_or(false);
    if !privileged {
        support::skip_unprivileged("needs CAP_SYS_NICE for SCHED_FIFO; flying in soft mode");
        cmd.env("PREEMPT_SOFT", "1");
    }
    let _ = std::fs::remove_dir_all(dir);
    (cmd, privileged)
}

/// Runs `cmd`, asserts it succeeded, returns its stdout and stderr.
fn run_ok(cmd: &mut Command) -> (String, String) {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

/// `cmd` flies 2 s under `policy` into `dir`, with the `extra` flags.
fn two_second_flight(cmd: &mut Command, policy: &str, extra: &[&str], dir: &Path) {
    cmd.args(["demo", "uav", "--duration", "2s", "--policy", policy])
        .args(extra)
        .arg("--out")
        .arg(dir);
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn demo_uav_flies_and_writes_a_demo_uav_result() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("preempt-demo-uav-{}", std::process::id()));
    let (mut cmd, privileged) = preempt(&dir);
    two_second_flight(&mut cmd, "fifo:90", &[], &dir);
    let (stdout, stderr) = run_ok(&mut cmd);
    assert!(stdout.contains("SCHED_FIFO 90"), "{stdout}");
    assert_eq!(stdout.contains("SOFT MODE"), !privileged);
    // Recorded in the history as every measuring command is (one session, crate::session).
    assert!(stderr.contains("recorded as run #"), "{stderr}");
    let file = dir.join("uav.json");
    let v = json(&file);
    assert_eq!(v["kind"], "demo_uav");
    assert_eq!(v["complete"], true);
    let c = &v["data"]["cells"][0];
    assert_eq!(c["policy"], "SCHED_FIFO 90");
    assert_eq!(c["priority_or_nice"], 90);
    assert_eq!(c["stress"], "none");
    assert_eq!(c["crashed"], false);
    assert_eq!(c["expected_steps"], 500);
    assert!(c["latency"]["max"].as_u64().unwrap() > 0);
    assert!(c["rms_position_error_m"].as_f64().unwrap() < 0.05);
    assert!(dir.join("uav.mcap").metadata().unwrap().len() > 10_000);

    for args in [vec!["compare"], vec!["report", "--out"]] {
        let mut c = Command::new(BIN);
        c.args(&args);
        if args.len() == 1 {
            c.arg(&file).arg(&file);
        } else {
            c.arg(dir.join("report")).arg(&file);
        }
        let o = c.output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let html = std::fs::read_to_string(dir.join("report").join("index.html")).unwrap();
    assert!(
        html.contains("UAV demonstrator"),
        "no UAV section in the report"
    );

    let bad = Command::new(BIN)
        .args(["demo", "uav", "--policy", "fifo:100"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--policy fifo:100"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_interrupted_matrix_keeps_its_finished_cells() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("preempt-uav-matrix-{}", std::process::id()));
    let (mut cmd, _) = preempt(&dir);
    cmd.args([
        "demo",
        "uav",
        "--matrix",
        "--duration",
        "500ms",
        "--explain",
        "--out",
    ])
    .arg(&dir)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let summary = dir.join("uav.json");
    let start = Instant::now();
    loop {
        let cells = std::fs::read_to_string(&summary)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["data"]["cells"].as_array().map(Vec::len))
            .unwrap_or(0);
        if cells >= 2 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no cell finished"
        );
        let next = preempt_io::sys::clock::monotonic_now_ns() + 50_000_000;
        let _ = preempt_io::sys::clock::sleep_until_ns(
            preempt_io::sys::clock::ClockId::Monotonic,
            next,
        );
    }
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on our own child's pid with a valid signal number.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&summary);
    assert_eq!(v["kind"], "demo_uav");
    assert_eq!(v["interrupted"], true);
    let cells = v["data"]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 16, "every cell is listed");
    let flown = cells
        .iter()
        .take_while(|c| c["flown_steps"].as_u64() > Some(0))
        .count();
    assert!(flown >= 2, "the finished cells are kept: {cells:#?}");
    // `--explain` reaches every cell: its misses explained, or why not (no tracefs).
    let stdout = String::from_utf8_lossy(&out.stdout);
    for c in &cells[..flown] {
        assert!(
            c["explain"].is_object() || c["explain_skipped"].is_string(),
            "{c:#}"
        );
        let line = format!(
            "misses of {} {}: ",
            c["policy"].as_str().unwrap(),
            c["stress"].as_str().unwrap()
        );
        assert!(stdout.contains(&line), "{line} in {stdout}");
    }
    assert_eq!(cells[0]["policy"], "SCHED_OTHER nice 0");
    assert_eq!(cells[0]["expected_steps"], 125);
    for c in &cells[flown..] {
        assert!(
            c["error"]
                .as_str()
                .is_some_and(|e| e.contains("not measured")),
            "{c:#}"
        );
        assert_eq!(c["flown_steps"], 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Soft mode is read as the runtime reads it (any value but empty, `0` or `false`), so a
/// `PREEMPT_SOFT=yes` flight, which the runtime runs under SCHED_OTHER, is marked soft.
#[test]
fn demo_uav_marks_soft_mode_as_the_runtime_reads_it() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("preempt-demo-uav-soft-{}", std::process::id()));
    let (mut cmd, _) = preempt(&dir);
    cmd.env("PREEMPT_SOFT", "yes")
        .args(["demo", "uav", "--duration", "1s", "--no-history", "--out"])
        .arg(&dir);
    let (stdout, _) = run_ok(&mut cmd);
    assert!(stdout.contains("SOFT MODE"), "{stdout}");
    assert_eq!(json(&dir.join("uav.json"))["data"]["soft"], true);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A known stall: the flight runs on CPU 0 only (spawned from a thread pinned there; the
/// simulator pins itself to the last CPU), and a SCHED_FIFO 80 hog on CPU 0 busy-waits 12 ms
/// every 250 ms, three control periods, above the control task's SCHED_FIFO 50. `--explain`
/// must name the hog (comm and tid) as the main cause of the misses it made, carrying most of
/// their delay; every explained miss's causes add up to its delay; the summary and the report
/// show them.
#[test]
fn demo_uav_explain_names_a_higher_priority_hog_on_the_control_cpu() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !support::has_capability(
        preempt_io::sys::caps::Capability::SysNice,
        "needs root for SCHED_FIFO and tracefs",
    ) {
        return;
    }
    let cpus = preempt_io::sys::cpu::online_cpus().unwrap();
    if cpus.len() < 2 {
        support::skip_unprivileged("needs two CPUs: the control task's and the simulator's");
        return;
    }
    let cpu = cpus[0];
    let dir = std::env::temp_dir().join(format!("preempt-demo-uav-explain-{}", std::process::id()));
    let (mut cmd, _) = preempt(&dir);
    two_second_flight(&mut cmd, "fifo:50", &["--explain", "--no-history"], &dir);
    let stop = Arc::new(AtomicBool::new(false));
    let hog = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("uav-hog".into())
            .spawn(move || {
                sched::set_current_thread_affinity(&[cpu]).unwrap();
                sched::set_current_thread_policy(&Policy::Fifo { priority: 80 }).unwrap();
                let mut at = monotonic_now_ns() + 250_000_000;
                while !stop.load(Ordering::Relaxed) {
                    sleep_until_ns(ClockId::Monotonic, at).unwrap();
                    while monotonic_now_ns() < at + 12_000_000 {
                        std::hint::spin_loop();
                    }
                    at += 250_000_000;
                }
                sched::current_tid()
            })
            .unwrap()
    };
    // The flight inherits the spawning thread's affinity: CPU 0, the hog's.
    let flight = std::thread::spawn(move || {
        sched::set_current_thread_affinity(&[cpu]).unwrap();
        run_ok(&mut cmd)
    });
    let (stdout, _) = flight.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let hog_tid = hog.join().unwrap();
    let c = json(&dir.join("uav.json"))["data"]["cells"][0].clone();
    let x = match (c["explain"].as_object(), c["explain_skipped"].as_str()) {
        (Some(x), _) => x.clone(),
        (None, Some(why)) => {
            support::skip_unprivileged(&format!("misses not explained: {why}"));
            return;
        }
        (None, None) => panic!("--explain gives explain or explain_skipped: {c:#}"),
    };
    assert!(
        stdout.contains("why the deadline misses were late"),
        "{stdout}"
    );
    assert!(c["missed_periods"].as_u64().unwrap() >= 6, "{c:#}");
    let explained = x["tasks"][0]["explanations"].as_array().unwrap();
    assert_eq!(x["tasks"][0]["task"], "control");
    for e in explained {
        assert_eq!(
            support::causes_ns(e),
            e["latency_ns"].as_u64().unwrap(),
            "causes add up: {e}"
        );
    }
    let by_hog: Vec<_> = explained
        .iter()
        .filter(|e| e["causes"][0]["pid"] == hog_tid && e["causes"][0]["name"] == "uav-hog")
        .collect();
    assert!(by_hog.len() >= 3, "each stall is named: {explained:#?}");
    for e in &by_hog {
        assert!(
            e["causes"][0]["ns"].as_u64().unwrap() * 2 > e["latency_ns"].as_u64().unwrap(),
            "the hog carries most: {e}"
        );
        assert!(
            e["causes"][0]["ns"].as_u64().unwrap() >= 1_000_000,
            "a stall: {e}"
        );
    }
    assert!(
        stdout.contains(&format!("thread uav-hog (pid {hog_tid})")),
        "the summary names the hog: {stdout}"
    );
    let o = Command::new(BIN)
        .arg("report")
        .arg("--out")
        .arg(dir.join("report"))
        .arg(dir.join("uav.json"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(dir.join("report").join("index.html")).unwrap();
    assert!(
        html.contains("Why the deadline misses were late: UAV control task, SCHED_FIFO 50"),
        "no explained misses in the report"
    );
    assert!(html.contains("uav-hog"), "the hog is not in the report");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--ros2` is one flight's node: a matrix refuses it, naming both flags.
#[test]
fn demo_uav_ros2_with_matrix_is_a_usage_error() {
    let out = Command::new(BIN)
        .args(["demo", "uav", "--ros2", "--matrix", "--no-history", "--out"])
        .arg(std::env::temp_dir().join("preempt-never-written"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--ros2") && stderr.contains("--matrix"),
        "{stderr}"
    );
}
