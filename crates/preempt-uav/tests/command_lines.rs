//! The command lines of `uav-demo` and `uav-sim`: `--help` prints the usage on stdout and
//! exits 0, a bad flag exits 2 naming it, and a flight whose `--out` fills up keeps its
//! figures and fails (exit 1), as `preempt demo uav` does.
//!
//! The full-disk test mounts a small tmpfs (root: CAP_SYS_ADMIN); without it the test says
//! so and passes, except under `PREEMPT_REQUIRE_PRIVILEGED=1`, where it fails.

use std::process::Command;

mod support;

#[path = "../../preempt-rig/tests/support/command_line.rs"]
mod command_line;
use command_line::small_tmpfs;

#[test]
fn help_prints_the_usage_on_stdout_and_exits_0_and_a_bad_flag_exits_2() {
    command_line::assert_help_and_bad_flag(env!("CARGO_BIN_EXE_uav-demo"));
    command_line::assert_help_and_bad_flag(env!("CARGO_BIN_EXE_uav-sim"));
}

#[test]
fn a_flight_whose_out_fills_up_prints_and_keeps_its_figures_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small");
    // 256 KiB: the 2 s recording (~450 KB) cannot fit, the figures (~40 KB) can.
    let Some(_unmount) = small_tmpfs(&out, "256k") else {
        return;
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_uav-demo"));
    cmd.args(["--duration", "2s", "--out"]).arg(&out);
    if !support::require(
        support::privileged(),
        "no real-time privileges (CAP_SYS_NICE, CAP_IPC_LOCK): flying with PREEMPT_SOFT=1",
    ) {
        cmd.env("PREEMPT_SOFT", "1");
    }
    let o = cmd.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("steps flown"), "{stdout}");
    assert!(stderr.contains("uav.mcap"), "{stderr}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("uav.json")).unwrap()).unwrap();
    let cell = &r["data"]["cells"][0];
    assert_eq!(cell["interrupted"], serde_json::Value::Bool(false), "{r}");
    assert!(cell["output_error"].is_string(), "{r}");
    assert!(!out.join("uav.mcap.part").exists());
}
