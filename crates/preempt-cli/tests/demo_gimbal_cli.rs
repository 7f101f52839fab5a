//! `preempt demo gimbal` end to end: the plant re-executed as `preempt __gimbal-plant`, the
//! result file (kind `demo_gimbal`) that `compare`, `history` and the CSV export read, the
//! controller's deadline misses explained (`--explain`) into the result and the report, and a
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
    cmd.env("PREEMPT_HISTORY", support::test_history());
    cmd.args([
        "demo",
        "gimbal",
        "--duration",
        "500ms",
        "--steps",
        "pan=0.2@0.1s",
        "--explain",
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
    // Recorded in the history as every measuring command is (one session, crate::session).
    assert!(stderr.contains("recorded as run #"), "{stderr}");
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
    // `--explain`: the misses' causes in the result and the report (needs tracefs: root).
    match (d["explain"].as_object(), d["explain_skipped"].as_str()) {
        (Some(x), _) => {
            let explained = x["explained"].as_u64().unwrap();
            let misses = d["samples"]["missed"].as_u64().unwrap()
                + d["tasks"]["tasks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["stats"]["deadline_misses"].as_u64().unwrap())
                    .sum::<u64>();
            assert!(explained <= misses, "{x:?}");
            assert!(
                stdout.contains("why the deadline misses were late"),
                "{stdout}"
            );
            assert!(html.contains("Why the deadline misses were late"), "{html}");
            if explained > 0 {
                let task = &x["tasks"][0];
                assert!(
                    task["explanations"][0]["causes"][0]["kind"].is_string(),
                    "{task}"
                );
                assert!(x["top_causes"][0]["total_ns"].as_u64().unwrap() > 0);
                assert!(html.contains("Top causes by total delay"));
                let bars = std::fs::read_dir(&plots)
                    .unwrap()
                    .filter_map(Result::ok)
                    .any(|e| e.file_name().to_string_lossy().contains("explain-misses"));
                assert!(
                    bars,
                    "no bars of the explained misses in {}",
                    plots.display()
                );
            } else {
                assert!(html.contains("No miss was explained."));
            }
        }
        (None, Some(why)) => {
            support::skip_unprivileged(&format!("misses not explained: {why}"));
            assert!(html.contains("Deadline misses not explained"), "{html}");
        }
        (None, None) => panic!("--explain gives data.explain or data.explain_skipped: {d}"),
    }
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

/// A build without the `ros2` feature refuses `--ros2` up front, naming the feature (both
/// demonstrators).
#[cfg(not(feature = "ros2"))]
#[test]
fn demo_ros2_without_the_feature_is_a_usage_error() {
    for demo in ["gimbal", "uav"] {
        let out = Command::new(BIN)
            .args(["demo", demo, "--ros2", "--no-history", "--out"])
            .arg(std::env::temp_dir().join("preempt-never-written"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{demo}: {stderr}");
        assert!(stderr.contains("--features ros2"), "{demo}: {stderr}");
    }
}

/// With the `ros2` feature, a domain id ROS 2 cannot use is refused before anything runs,
/// naming the variable and the range (both demonstrators).
#[cfg(feature = "ros2")]
#[test]
fn demo_ros2_domain_id_out_of_range_is_a_usage_error() {
    for demo in ["gimbal", "uav"] {
        let dir = std::env::temp_dir().join(format!("preempt-never-written-{demo}"));
        let out = Command::new(BIN)
            .args(["demo", demo, "--ros2", "--no-history", "--out"])
            .arg(&dir)
            .env("ROS_DOMAIN_ID", "233")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{demo}: {stderr}");
        assert!(
            stderr.contains("ROS_DOMAIN_ID=233") && stderr.contains("0..=232"),
            "{demo}: {stderr}"
        );
        assert!(!dir.exists(), "{demo}: nothing written");
    }
}
