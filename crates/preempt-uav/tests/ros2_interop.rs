//! `uav-demo --ros2` (cargo feature `ros2`; the flight `preempt demo uav --ros2` flies)
//! against an independent ROS 2 peer:
//! Eclipse Cyclone DDS (PyPI `cyclonedds`, the DDS under ROS 2's `rmw_cyclonedds_cpp`)
//! running `scripts/ros2_cyclone_peer.py`, whose IDL types are written from the ROS 2 message
//! definitions. The peer subscribes to `/uav/pose`, `/uav/odom` and `/uav/reference` and
//! publishes a `geometry_msgs/PoseStamped` waypoint 1e308 m up (refused: outside the flight
//! box, issue 40) then a valid one on `/uav/waypoint`; this test compares what it received
//! with the flight's own records (the MCAP, step for step by stamp) and counts (the JSON), and
//! checks that the vehicle flew to the valid waypoint.
//!
//! Both run in a network namespace of their own whose only interface is loopback
//! (`scripts/ros2_loopback.sh`; `CYCLONEDDS_URI` pins Cyclone to `lo`): no DDS traffic
//! leaves the machine. Without root the script uses a user namespace and the flight runs
//! with `PREEMPT_SOFT=1`; with `PREEMPT_REQUIRE_PRIVILEGED=1`, missing privileges or a
//! missing `cyclonedds` fail the test.
#![cfg(feature = "ros2")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use preempt_uav::model::quat_rpy;

mod support;
use support::{privileged, require};

/// Seconds the flight lasts: climbing ends at 2.5 s, the waypoint then holds.
const DURATION_S: u32 = 6;
/// The waypoint the peer publishes, m.
const WAYPOINT: [f64; 3] = [0.5, -0.5, 1.3];
/// The domain both use (not 0: `ROS_DOMAIN_ID` is honoured).
const DOMAIN: u16 = 9;

/// One step of the MCAP's `/uav/state`.
struct Step {
    k: u64,
    p: [f64; 3],
    v: [f64; 3],
    rpy: [f64; 3],
    setpoint: [f64; 3],
}

/// The MCAP's `/uav/state` messages by log time.
fn steps(mcap_path: &Path) -> BTreeMap<u64, Step> {
    let bytes = std::fs::read(mcap_path).unwrap();
    let mut out = BTreeMap::new();
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        if m.channel.topic != "/uav/state" {
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(&m.data).unwrap();
        let a = |f: &str| -> [f64; 3] { serde_json::from_value(v[f].clone()).unwrap() };
        let step = Step {
            k: v["k"].as_u64().unwrap(),
            p: a("position_m"),
            v: a("velocity_mps"),
            rpy: a("rpy_rad"),
            setpoint: a("setpoint_m"),
        };
        out.insert(m.log_time, step);
    }
    out
}

/// Within the MCAP's f32-to-JSON rounding.
#[track_caller]
fn close(a: &[f64], b: &[f64], what: &str) {
    assert!(
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5) && a.len() == b.len(),
        "{what}: {a:?} vs {b:?}"
    );
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn dist(a: [f64; 3], b: [f64; 3]) -> f64 {
    norm(&[a[0] - b[0], a[1] - b[1], a[2] - b[2]])
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn a_cyclone_dds_peer_receives_pose_odometry_reference_and_its_waypoint_is_flown_to() {
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
    let netns_ok = [
        &["--net", "true"][..],
        &["--map-root-user", "--net", "true"],
    ]
    .iter()
    .any(|args| {
        Command::new("unshare")
            .args(*args)
            .status()
            .is_ok_and(|s| s.success())
    });
    if !require(
        netns_ok,
        "no network namespace can be made here (root or user namespaces needed)",
    ) {
        return;
    }

    let dir = std::env::temp_dir().join(format!("uav-ros2-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = Command::new(repo_root().join("scripts/ros2_loopback.sh"));
    cmd.arg(&dir);
    for (topic, ty) in [
        ("/uav/pose", "geometry_msgs/msg/PoseStamped"),
        ("/uav/odom", "nav_msgs/msg/Odometry"),
        ("/uav/reference", "geometry_msgs/msg/PoseStamped"),
    ] {
        cmd.args(["--sub", &format!("{topic}={ty}")]);
    }
    let [x, y, z] = WAYPOINT;
    cmd.args([
        "--pub",
        "/uav/waypoint=0,0,1e308",
        "--pub",
        &format!("/uav/waypoint={x},{y},{z}"),
        "--pub-after",
        "100",
    ])
    .args(["--", env!("CARGO_BIN_EXE_uav-demo"), "--ros2"])
    .args(["--duration", &DURATION_S.to_string(), "--out"])
    .arg(dir.join("run"))
    .env("ROS_DOMAIN_ID", DOMAIN.to_string());
    if !require(
        privileged(),
        "no real-time privileges (CAP_SYS_NICE, CAP_IPC_LOCK): flying in soft mode",
    ) {
        cmd.env("PREEMPT_SOFT", "1");
    }
    let out = cmd.output().unwrap();
    let log = format!(
        "{}{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(dir.join("peer.err")).unwrap_or_default()
    );
    assert!(out.status.success(), "{log}");

    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run/uav.json")).unwrap()).unwrap();
    let cell = &result["data"]["cells"][0];
    let ros2 = &cell["ros2"];
    assert_eq!(ros2["node"], "/preempt_uav", "{ros2}");
    assert_eq!(ros2["domain_id"], DOMAIN, "ROS_DOMAIN_ID honoured: {ros2}");
    assert_eq!(ros2["failed"], 0, "{ros2}");
    assert_eq!(ros2["dropped"], 0, "{ros2}");
    assert_eq!(cell["crashed"], false, "{cell}");

    // Every step of the MCAP was published on the three topics.
    let steps = steps(&dir.join("run/uav.mcap"));
    let flown = cell["flown_steps"].as_u64().unwrap();
    assert_eq!(steps.len() as u64, flown);
    assert!(flown >= u64::from(DURATION_S) * 240, "{flown} steps");
    assert_eq!(ros2["published"].as_u64().unwrap(), 3 * flown, "{ros2}");

    // The peer got (nearly) all of them, each equal to the flight's own record of that step.
    let peer: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("peer.json")).unwrap()).unwrap();
    assert_eq!(peer["domain_id"], DOMAIN);
    let udp = std::fs::read_to_string(dir.join("udp.txt")).unwrap_or_default();
    for topic in ["/uav/pose", "/uav/odom", "/uav/reference"] {
        let got = peer["topics"][topic]["samples"].as_array().unwrap();
        let received = got.len() as u64;
        eprintln!("the peer received {received} of {flown} on {topic}; UDP counters:\n{udp}");
        // Best effort: samples sent before discovery matched the peer are not delivered.
        assert!(
            received * 100 >= flown * 90 && received <= flown,
            "{topic}: the peer received {received} of {flown}\n{log}"
        );
        let mut last = 0;
        for m in got {
            let stamp = m["stamp_ns"].as_u64().unwrap();
            assert!(
                stamp > last,
                "{topic}: stamps not increasing: {stamp} after {last}"
            );
            last = stamp;
            let s = steps
                .get(&stamp)
                .unwrap_or_else(|| panic!("{topic} stamped {stamp}: no step at that time"));
            assert_eq!(m["frame_id"], "map");
            let pos: Vec<f64> = serde_json::from_value(m["position"].clone()).unwrap();
            match topic {
                "/uav/pose" => {
                    close(&pos, &s.p, &format!("step {}: pose position", s.k));
                    let q: Vec<f64> = serde_json::from_value(m["orientation"].clone()).unwrap();
                    let [w, x, y, z] = quat_rpy(s.rpy);
                    close(&q, &[x, y, z, w], &format!("step {}: orientation", s.k));
                }
                "/uav/odom" => {
                    close(&pos, &s.p, &format!("step {}: odometry position", s.k));
                    assert_eq!(m["child_frame_id"], "base_link");
                    // The twist is in the body frame: a rotation keeps the speed.
                    let l: Vec<f64> = serde_json::from_value(m["linear"].clone()).unwrap();
                    close(&[norm(&l)], &[norm(&s.v)], &format!("step {}: speed", s.k));
                }
                _ => close(&pos, &s.setpoint, &format!("step {}: reference", s.k)),
            }
        }
    }

    // The peer's waypoint outside the box was refused and counted by reason; its valid one
    // reached the controller once, and the vehicle flew there.
    assert_eq!(peer["published"].as_array().unwrap().len(), 2, "{log}");
    assert_eq!(ros2["setpoints_accepted"], 1, "{ros2}");
    assert_eq!(ros2["setpoints_rejected"], 1, "{ros2}");
    assert_eq!(ros2["setpoints_refused"]["out_of_range"], 1, "{ros2}");
    assert_eq!(cell["live_waypoints"], 1, "{cell}");
    assert_eq!(cell["live_waypoints_superseded"], 0, "{cell}");
    assert_eq!(cell["live_waypoints_not_taken"], 0, "{cell}");
    assert!(
        log.contains("/uav/waypoint refused: waypoint [0.0, 0.0, 1e308]"),
        "{log}"
    );
    let held: Vec<&Step> = steps
        .values()
        .filter(|s| dist(s.setpoint, WAYPOINT) < 1e-5)
        .collect();
    assert!(
        held.len() >= 250,
        "the controller tracked the waypoint for {} steps\n{log}",
        held.len()
    );
    let (first, last) = (held[0], held[held.len() - 1]);
    let (d0, d1) = (dist(first.p, WAYPOINT), dist(last.p, WAYPOINT));
    eprintln!(
        "tracked the waypoint from step {} ({d0:.3} m away) to step {} ({d1:.3} m away)",
        first.k, last.k
    );
    assert!(
        d0 > 0.3 && d1 < 0.1,
        "{d0:.3} m from the waypoint at step {}, {d1:.3} m at step {}",
        first.k,
        last.k
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A domain id out of range is refused before anything runs, naming the variable and the
/// range; nothing is written.
#[test]
fn ros2_bad_domain_is_refused_before_the_flight() {
    let dir = std::env::temp_dir().join(format!("uav-ros2-bad-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_uav-demo"))
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
    assert!(!dir.exists(), "nothing written");
}
