//! `preempt demo uav` end to end: one short flight (the simulator re-executed as
//! `preempt __uav-sim`, the result file of kind `demo_uav` that `compare`, `report` and the
//! CSV export read), and a matrix interrupted by SIGTERM that keeps its finished cells.
//! Soft mode (`PREEMPT_SOFT=1`, marked) without real-time privileges; under
//! `PREEMPT_REQUIRE_PRIVILEGED=1` missing privileges fail instead.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn demo_uav_flies_and_writes_a_demo_uav_result() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("preempt-demo-uav-{}", std::process::id()));
    let (mut cmd, privileged) = preempt(&dir);
    cmd.args([
        "demo",
        "uav",
        "--duration",
        "2s",
        "--policy",
        "fifo:90",
        "--out",
    ])
    .arg(&dir);
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
    cmd.args(["demo", "uav", "--matrix", "--duration", "500ms", "--out"])
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
