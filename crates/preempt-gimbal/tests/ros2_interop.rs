//! `gimbal-demo --ros2` (cargo feature `ros2`) against an independent ROS 2 peer: Eclipse
//! Cyclone DDS (PyPI `cyclonedds`, the DDS under ROS 2's `rmw_cyclonedds_cpp`) running
//! `scripts/ros2_cyclone_peer.py`, whose IDL types are written from the ROS 2 message
//! definitions. The peer subscribes to `/gimbal/joint_states` and publishes one
//! `std_msgs/Float64` setpoint of 1e308 (refused: beyond ±π rad, issue 40) then a valid one on
//! `/gimbal/setpoint/tilt`; this test compares what it received with the demo's own records
//! (the MCAP, sample for sample by stamp) and counts (the JSON), and checks that the controller
//! acted on the valid setpoint only.
//!
//! Both run in a network namespace of their own whose only interface is loopback (with
//! multicast on, for RTPS discovery; `scripts/ros2_loopback.sh`): no DDS traffic leaves the
//! machine, and `CYCLONEDDS_URI` pins Cyclone to `lo` as well. The namespace needs root
//! (`unshare --net`); without it the script uses a user namespace (`unshare --map-root-user
//! --net`) and the demo runs with `PREEMPT_SOFT=1`. With `PREEMPT_REQUIRE_PRIVILEGED=1`, missing privileges or a
//! missing `cyclonedds` fail the test.
#![cfg(feature = "ros2")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod support;

/// Seconds the demo runs.
const DURATION_S: u32 = 4;
/// The setpoint the peer publishes, rad (the script's tilt is -0.3 from 1 s on).
const SETPOINT_RAD: f64 = 0.2;
/// The setpoint the peer publishes first: beyond ±π rad, refused and counted (issue 40: it
/// was accepted and wound the tilt axis past ten turns).
const FAR_RAD: f64 = 1e308;
/// The domain both use (not 0: the test checks `ROS_DOMAIN_ID` is honoured).
const DOMAIN: u16 = 7;

fn require(ok: bool, what: &str) -> bool {
    if ok {
        return true;
    }
    assert!(
        std::env::var("PREEMPT_REQUIRE_PRIVILEGED").as_deref() != Ok("1"),
        "PREEMPT_REQUIRE_PRIVILEGED=1 but {what}"
    );
    eprintln!("SKIPPED: {what}");
    false
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The MCAP's `/gimbal/state` messages by log time: (k, [pan, tilt] angle, [pan, tilt] setpoint).
fn states(mcap_path: &Path) -> BTreeMap<u64, (u64, [f64; 2], [f64; 2])> {
    let bytes = std::fs::read(mcap_path).unwrap();
    let mut out = BTreeMap::new();
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        if m.channel.topic != "/gimbal/state" {
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(&m.data).unwrap();
        let f = |a: &str, f: &str| v[a][f].as_f64().unwrap();
        out.insert(
            m.log_time,
            (
                v["k"].as_u64().unwrap(),
                [f("pan", "angle_rad"), f("tilt", "angle_rad")],
                [f("pan", "setpoint_rad"), f("tilt", "setpoint_rad")],
            ),
        );
    }
    out
}

#[test]
fn a_cyclone_dds_peer_receives_the_joint_states_and_its_setpoint_moves_the_axis() {
    let python_ok = Command::new("python3")
        .args(["-c", "import cyclonedds.domain"])
        .status()
        .is_ok_and(|s| s.success());
    if !require(
        python_ok,
        "python3 cannot import cyclonedds (pip install cyclonedds)",
    ) {
        return;
    }
    let root = preempt_io::sys::caps::has_effective(preempt_io::sys::caps::Capability::SysAdmin)
        .unwrap_or(false);
    let userns_ok = root
        || Command::new("unshare")
            .args(["--map-root-user", "--net", "true"])
            .status()
            .is_ok_and(|s| s.success());
    if !require(
        userns_ok,
        "no network namespace can be made here (root or user namespaces needed)",
    ) {
        return;
    }

    let dir = std::env::temp_dir().join(format!("gimbal-ros2-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let peer_out = dir.join("peer.json");
    let mut cmd = Command::new(repo_root().join("scripts/ros2_loopback.sh"));
    cmd.arg(&dir)
        .args(["--sub", "/gimbal/joint_states=sensor_msgs/msg/JointState"])
        .args(["--pub", &format!("/gimbal/setpoint/tilt={FAR_RAD:e}")])
        .args(["--pub", &format!("/gimbal/setpoint/tilt={SETPOINT_RAD}")])
        .args([
            "--pub-after",
            "200",
            "--",
            env!("CARGO_BIN_EXE_gimbal-demo"),
        ])
        .args(["--duration", &DURATION_S.to_string(), "--ros2", "--out"])
        .arg(dir.join("run"))
        .env("ROS_DOMAIN_ID", DOMAIN.to_string());
    support::soft_unless_privileged(&mut cmd);
    let out = cmd.output().unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");

    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run/gimbal.json")).unwrap())
            .unwrap();
    let data = &result["data"];
    let ros2 = &data["ros2"];
    assert_eq!(ros2["node"], "/preempt_gimbal", "{ros2}");
    assert_eq!(ros2["domain_id"], DOMAIN, "ROS_DOMAIN_ID honoured: {ros2}");
    assert_eq!(ros2["failed"], 0, "{ros2}");
    assert_eq!(ros2["dropped"], 0, "{ros2}");
    let published = ros2["published"].as_u64().unwrap();

    // Every 10th sample of the MCAP was published (1 kHz).
    let states = states(&dir.join("run/gimbal.mcap"));
    let tenth = states.values().filter(|(k, _, _)| k % 10 == 0).count() as u64;
    assert_eq!(
        published, tenth,
        "published vs the MCAP's samples k % 10 == 0"
    );
    assert!(
        published >= u64::from(DURATION_S) * 900,
        "{published} joint states in {DURATION_S} s"
    );

    // The peer got (nearly) all of them, each equal to the demo's own record of that sample.
    let peer: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&peer_out).unwrap()).unwrap();
    assert_eq!(peer["domain_id"], DOMAIN);
    let got = peer["topics"]["/gimbal/joint_states"]["samples"]
        .as_array()
        .unwrap();
    let received = got.len() as u64;
    let udp = std::fs::read_to_string(dir.join("udp.txt")).unwrap_or_default();
    eprintln!("the peer received {received} of {published} joint states; UDP counters:\n{udp}");
    // Best effort: samples sent before discovery matched the peer are not delivered.
    assert!(
        received * 100 >= published * 90 && received <= published,
        "the peer received {received} of {published} joint states\n{log}"
    );
    let mut last = 0;
    for m in got {
        let stamp = m["stamp_ns"].as_u64().unwrap();
        assert!(stamp > last, "stamps not increasing: {stamp} after {last}");
        last = stamp;
        let (k, angle, _) = states
            .get(&stamp)
            .unwrap_or_else(|| panic!("joint state stamped {stamp}: no sample at that time"));
        assert_eq!(k % 10, 0);
        assert_eq!(m["name"], serde_json::json!(["pan", "tilt"]));
        assert_eq!(m["frame_id"], "gimbal_base");
        let pos: Vec<f64> = serde_json::from_value(m["position"].clone()).unwrap();
        assert_eq!(
            pos, angle,
            "sample {k}: the peer's position vs the MCAP's angle"
        );
        assert_eq!(m["velocity"], serde_json::json!([]));
    }

    // The peer's 1e308 was refused and counted as out of range (said once on stderr); its
    // valid setpoint reached the controller once, and the tilt axis went there.
    assert_eq!(peer["published"].as_array().unwrap().len(), 2, "{log}");
    assert_eq!(ros2["setpoints_accepted"], 1, "{ros2}");
    assert_eq!(ros2["setpoints_rejected"], 1, "{ros2}");
    assert_eq!(
        ros2["setpoints_refused"],
        serde_json::json!({"nan": 0, "out_of_range": 1, "queue_full": 0}),
        "{ros2}"
    );
    assert_eq!(ros2["setpoint_errors"], 0, "{ros2}");
    assert_eq!(data["live_setpoints"], 1);
    assert_eq!(data["live_setpoints_superseded"], 0);
    assert_eq!(data["live_setpoints_not_taken"], 0);
    assert!(
        log.contains("/gimbal/setpoint/tilt refused: the setpoint 1e308 rad is beyond ±π rad"),
        "{log}"
    );
    assert!(
        states
            .values()
            .all(|(_, _, sp)| sp[1].abs() <= std::f64::consts::PI),
        "a tilt setpoint beyond ±π was in force"
    );
    let followed: Vec<_> = states
        .values()
        .filter(|(_, _, sp)| sp[1] == SETPOINT_RAD)
        .collect();
    assert!(
        followed.len() > 10_000,
        "tilt followed {SETPOINT_RAD} rad for {} samples",
        followed.len()
    );
    let (k_first, angle_first, _) = followed[0];
    let (k_last, angle_last, _) = followed[followed.len() - 1];
    assert!(
        (angle_last[1] - SETPOINT_RAD).abs() < 0.02 && (angle_first[1] - SETPOINT_RAD).abs() > 0.05,
        "tilt at sample {k_first}: {} rad, at {k_last}: {} rad (setpoint {SETPOINT_RAD})",
        angle_first[1],
        angle_last[1]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Bad input is refused before anything real-time starts, naming the fix: a domain id out of
/// range, and a network namespace whose only interface (lo) is down.
#[test]
fn ros2_bad_domain_and_no_interface_are_refused_before_the_run() {
    let dir = std::env::temp_dir().join(format!("gimbal-ros2-bad-{}", std::process::id()));
    let demo = env!("CARGO_BIN_EXE_gimbal-demo");
    let out = Command::new(demo)
        .args(["--duration", "1", "--ros2", "--out"])
        .arg(&dir)
        .env("ROS_DOMAIN_ID", "233")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ROS_DOMAIN_ID=233") && err.contains("0..=232"),
        "{err}"
    );

    let root = preempt_io::sys::caps::has_effective(preempt_io::sys::caps::Capability::SysAdmin)
        .unwrap_or(false);
    let mut cmd = Command::new("unshare");
    if !root {
        cmd.arg("--map-root-user");
    }
    let out = cmd
        .args(["--net", demo, "--duration", "1", "--ros2", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !require(
        !err.contains("unshare:"),
        "no network namespace can be made here (root or user namespaces needed)",
    ) {
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no network interface is up with multicast")
            && err.contains("ip link set lo up"),
        "{err}"
    );
    assert!(!dir.join("gimbal.json").exists(), "nothing ran");
}
