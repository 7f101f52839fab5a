//! `preempt demo gimbal` end to end: the plant re-executed as `preempt __gimbal-plant`, the
//! result file (kind `demo_gimbal`) that `compare`, `history` and the CSV export read, and a
//! bad flag. Soft mode (`PREEMPT_SOFT=1`, marked) without real-time privileges; under
//! `PREEMPT_REQUIRE_PRIVILEGED=1` missing privileges fail instead.

use std::process::Command;

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_preempt");

#[test]
fn demo_gimbal_writes_a_demo_gimbal_result_and_mcap() {
    let dir = std::env::temp_dir().join(format!("preempt-demo-gimbal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = Command::new(BIN);
    cmd.args([
        "demo",
        "gimbal",
        "--duration",
        "500ms",
        "--steps",
        "pan=0.2@0.1s",
    ])
    .arg("--out")
    .arg(&dir);
    let privileged =
        preempt_io::sys::caps::has_effective(preempt_io::sys::caps::Capability::SysNice)
            .unwrap_or(false);
    if !privileged {
        support::skip_unprivileged("needs CAP_SYS_NICE for SCHED_FIFO; running in soft mode");
        cmd.env("PREEMPT_SOFT", "1");
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("samples: expected 5000"), "{stdout}");
    let file = dir.join("gimbal.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["kind"], "demo_gimbal");
    assert_eq!(v["complete"], true);
    assert!(v["sysinfo"]["kernel_release"].is_string());
    let d = &v["data"];
    assert_eq!(d["axes"][0]["step_rad"], 0.2);
    assert_eq!(d["telemetry"]["lost"], 0);
    assert_eq!(d["soft"], !privileged);
    assert!(dir.join("gimbal.mcap").metadata().unwrap().len() > 10_000);

    // The other subcommands read the kind.
    let cmp = Command::new(BIN)
        .args(["compare"])
        .arg(&file)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        cmp.status.success(),
        "compare: {}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    // Control quality side by side: per axis errors, and the sample bookkeeping.
    let table = String::from_utf8_lossy(&cmp.stdout);
    for want in [
        "demo_gimbal/pan",
        "rms error",
        "rms % of step",
        "demo_gimbal/samples",
        "missed",
        "telemetry lost",
    ] {
        assert!(table.contains(want), "compare lacks '{want}':\n{table}");
    }
    let csv = Command::new(BIN)
        .args(["report"])
        .arg(&file)
        .arg("--out")
        .arg(dir.join("report"))
        .output()
        .unwrap();
    assert!(
        csv.status.success(),
        "report: {}",
        String::from_utf8_lossy(&csv.stderr)
    );
    let html = std::fs::read_to_string(dir.join("report").join("index.html")).unwrap();
    assert!(
        html.contains("Gimbal demonstrator"),
        "no gimbal section in the report"
    );
    assert!(html.contains("position_pan") && html.contains("RMS error mrad"));
    // The step response of the stepped axis and the tracking error, as figures; the
    // response-time analysis of the controller.
    let plots = dir.join("report").join("plots");
    for stem in ["pan-step", "error"] {
        let svg = std::fs::read_dir(&plots)
            .unwrap()
            .filter_map(Result::ok)
            .find(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.ends_with(&format!("{stem}.svg")) && n.contains("gimbal")
            })
            .unwrap_or_else(|| panic!("no gimbal {stem} plot in {}", plots.display()));
        let text = std::fs::read_to_string(svg.path()).unwrap();
        assert!(
            text.contains("<polyline") || text.contains("<path"),
            "{stem}: no line"
        );
    }
    assert!(
        html.contains("Response-time analysis"),
        "no RTA in the report"
    );
    assert!(html.contains("missed after an exchange that overran"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn demo_gimbal_bad_steps_is_a_usage_error() {
    let out = Command::new(BIN)
        .args([
            "demo",
            "gimbal",
            "--steps",
            "roll=1@0s",
            "--out",
            "/nonexistent-never",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("axis 'roll' is not pan or tilt"),
        "{stderr}"
    );
}

/// A build without the `foxglove` feature refuses `--foxglove` up front, naming the feature
/// (nothing is measured).
#[cfg(not(feature = "foxglove"))]
#[test]
fn demo_gimbal_foxglove_without_the_feature_is_a_usage_error() {
    let out = Command::new(BIN)
        .args(["demo", "gimbal", "--foxglove", "127.0.0.1:8765", "--out"])
        .arg(std::env::temp_dir().join("preempt-never-written"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--features foxglove"), "{stderr}");
}
