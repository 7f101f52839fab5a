//! The command lines of `gimbal-demo` and `gimbal-plant`: `--help` prints the usage on
//! stdout and exits 0, a bad flag exits 2 naming it, and a demo whose `--out` fills up keeps
//! its figures and fails (exit 1), as `preempt demo gimbal` does.
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
    command_line::assert_help_and_bad_flag(env!("CARGO_BIN_EXE_gimbal-demo"));
    command_line::assert_help_and_bad_flag(env!("CARGO_BIN_EXE_gimbal-plant"));
}

#[test]
fn a_demo_whose_out_fills_up_prints_and_keeps_its_figures_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small");
    // 6 MiB: the 2 s recording (~17 MB) cannot fit, the figures (~0.4 MB) can.
    let Some(_unmount) = small_tmpfs(&out, "6m") else {
        return;
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gimbal-demo"));
    cmd.args(["--duration", "2s", "--out"]).arg(&out);
    support::soft_unless_privileged(&mut cmd);
    let o = cmd.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("samples: expected 20000"), "{stdout}");
    assert!(stderr.contains("gimbal.mcap"), "{stderr}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("gimbal.json")).unwrap()).unwrap();
    assert_eq!(r["interrupted"], serde_json::Value::Bool(false), "{r}");
    assert!(r["data"]["output_error"].is_string(), "{r}");
    assert!(!out.join("gimbal.mcap.part").exists());
}
