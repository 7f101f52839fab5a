//! Reliability: nothing lost, nothing unbounded. Bad input and faults against the binary, as
//! a demanding user would try them: a run's figures are written before anything optional
//! (the `--trace-out` trace), an optional output that fails never discards them, numeric
//! flags are range-checked without wrapping, a refused run changes no file, and the exit
//! code is the documented one (docs/MEASURING.md, `crates/preempt-cli/src/error.rs`).
//!
//! The binary is `PREEMPT_BIN` when set (CI points it at the release build, the configuration
//! users get), else the one cargo built for these tests. The unprivileged cases run the
//! binary as `nobody` through `setpriv` (util-linux) when the tests run as root, and as the
//! current user otherwise. Cases that need root (tracefs, SCHED_FIFO) skip with a message
//! without it, and fail under `PREEMPT_REQUIRE_PRIVILEGED=1`.

use std::io::BufReader;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};

use serde_json::Value;

mod support;

use support::{exits, preempt_in as preempt, unprivileged};

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}: {text}", path.display()))
}

/// How many runs the private history of `dir` holds.
fn history_runs(dir: &Path) -> usize {
    support::history_list(dir)
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .count()
}

/// A running `preempt` from `cmd`, once its stderr showed `needle`: the child, and the rest
/// of its stderr to read ([`finish`]).
fn spawn_until(cmd: &mut Command, needle: &str) -> (Child, BufReader<ChildStderr>) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    support::wait_for_line(&mut err, needle);
    (child, err)
}

/// Waits for `child`; its exit code and the rest of its stderr.
fn finish(mut child: Child, mut err: BufReader<ChildStderr>) -> (Option<i32>, String) {
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    (child.wait().unwrap().code(), rest)
}

/// Whether tracefs can be used here (root); if not, skips ([`support::skip_unprivileged`]).
#[track_caller]
fn can_trace() -> bool {
    support::has_capability(
        preempt_io::sys::caps::Capability::SysAdmin,
        "needs root (tracefs, SCHED_FIFO) for --explain",
    )
}

#[test]
fn an_explain_threshold_that_would_wrap_is_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    // 18446744073709552 us * 1000 wraps u64 to 384 ns.
    let o = preempt(dir.path())
        .args(["latency", "-D", "1", "--explain=18446744073709552"])
        .output()
        .unwrap();
    exits(&o, 2, &["--explain 18446744073709552 is too large"]);
    for flag in ["--interval", "--break-at", "--work-us"] {
        let o = preempt(dir.path())
            .args(["latency", "-D", "1", flag, "18446744073709552"])
            .output()
            .unwrap();
        exits(&o, 2, &[&format!("{flag} 18446744073709552 is too large")]);
    }
}

#[test]
fn explain_with_the_deadline_policy_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let o = preempt(dir.path())
        .args([
            "latency",
            "-D",
            "1",
            "--policy",
            "deadline",
            "--runtime",
            "200",
            "--explain",
        ])
        .output()
        .unwrap();
    let stderr = exits(&o, 2, &["--explain needs pinned threads", "SCHED_DEADLINE"]);
    assert!(!stderr.contains("measuring"), "{stderr}");
}

#[test]
fn explain_refused_for_lack_of_privilege_exits_3_and_leaves_the_trace_out_file() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    std::fs::write(&trace, "an earlier trace").unwrap();
    std::fs::set_permissions(&trace, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = unprivileged(dir.path())
        .args(["latency", "-D", "1", "--explain", "--trace-out"])
        .arg(&trace)
        .output()
        .unwrap();
    let stderr = exits(&o, 3, &["--explain: ", "run as root"]);
    // Mounted but closed to this user (mode 0700) is a privilege problem, not "not mounted".
    if preempt_io::sys::mount::is_tracefs(Path::new("/sys/kernel/tracing")).unwrap_or(false) {
        assert!(stderr.contains("is mounted on"), "{stderr}");
    }
    assert_eq!(
        std::fs::read_to_string(&trace).unwrap(),
        "an earlier trace",
        "a refused run must not touch --trace-out"
    );
}

#[test]
fn trace_out_with_no_outlier_above_the_threshold_keeps_the_run() {
    if !can_trace() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (trace, result) = (dir.path().join("t.json"), dir.path().join("x.json"));
    // 500 ms: no sample reaches it.
    let o = preempt(dir.path())
        .args([
            "latency",
            "-D",
            "1",
            "-a",
            "0",
            "--explain=500000",
            "--trace-out",
        ])
        .arg(&trace)
        .arg("--export-json")
        .arg(&result)
        .output()
        .unwrap();
    exits(&o, 0, &[]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("no outlier reached the threshold"),
        "{stdout}"
    );
    let r = json(&result);
    assert_eq!(r["complete"], true, "{r}");
    assert_eq!(r["data"]["explain"]["explained"], 0);
    // The trace is written, empty: an older file there never looks like this run's.
    assert_eq!(
        json(&trace)["traceEvents"].as_array().map(Vec::len),
        Some(0)
    );
    assert_eq!(history_runs(dir.path()), 1);
}

#[test]
fn a_trace_out_directory_removed_mid_run_keeps_the_run() {
    if !can_trace() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let result = dir.path().join("x.json");
    let (child, err) = spawn_until(
        preempt(dir.path())
            .args([
                "latency",
                "-D",
                "2",
                "-a",
                "0",
                "--explain=1",
                "--trace-out",
            ])
            .arg(gone.join("t.json"))
            .arg("--export-json")
            .arg(&result),
        "preempt: measuring",
    );
    std::fs::remove_dir(&gone).unwrap();
    let (code, rest) = finish(child, err);
    assert_eq!(code, Some(1), "{rest}");
    assert!(
        rest.contains("cannot write --trace-out") && rest.contains("results were saved"),
        "{rest}"
    );
    let r = json(&result);
    assert_eq!(r["complete"], true, "{r}");
    assert!(r["data"]["explain"].is_object(), "{r}");
    assert_eq!(history_runs(dir.path()), 1);
}

/// `preempt demo gimbal` in `out`: in real time when this process may (SCHED_FIFO), else in
/// soft mode (`PREEMPT_SOFT=1`), which exercises the same output paths.
fn gimbal(dir: &Path, out: &Path, duration: &str) -> Command {
    let mut c = preempt(dir);
    if !preempt_io::sys::caps::has_effective(preempt_io::sys::caps::Capability::SysNice)
        .unwrap_or(false)
    {
        c.env("PREEMPT_SOFT", "1");
    }
    c.args(["demo", "gimbal", "--duration", duration, "--out"])
        .arg(out);
    c
}

/// Whether `path` is a finished MCAP file (it ends with the magic, after the footer).
fn is_finished_mcap(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.ends_with(b"\x89MCAP0\r\n"))
}

#[test]
fn a_second_demo_in_the_same_out_is_refused_naming_the_first_and_both_keep_their_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (first, err) = spawn_until(&mut gimbal(dir.path(), &out, "2s"), "gimbal demo for");
    let second = gimbal(dir.path(), &out, "2s").output().unwrap();
    exits(
        &second,
        2,
        &[
            &format!("--out {} is in use by another preempt run", out.display()),
            &format!("pid {}", first.id()),
        ],
    );
    let (code, rest) = finish(first, err);
    assert_eq!(code, Some(0), "{rest}");
    assert_eq!(json(&out.join("gimbal.json"))["complete"], true);
    assert!(is_finished_mcap(&out.join("gimbal.mcap")), "{rest}");
    assert_eq!(
        history_runs(dir.path()),
        1,
        "the refused run records nothing"
    );
}

#[test]
fn a_demo_stopped_by_sigterm_exits_143_with_a_complete_file_marked_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let earlier = earlier_run(&out);
    let (child, err) = spawn_until(&mut gimbal(dir.path(), &out, "20s"), "gimbal demo for");
    let at = preempt_io::sys::clock::monotonic_now_ns() + 700_000_000;
    preempt_io::sys::clock::sleep_until_ns(preempt_io::sys::clock::ClockId::Monotonic, at).unwrap();
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let (code, rest) = finish(child, err);
    assert_eq!(code, Some(143), "{rest}");
    let r = json(&out.join("gimbal.json"));
    // Its final file: complete (the run's last word), interrupted (by the signal).
    assert_eq!(
        (&r["complete"], &r["interrupted"]),
        (&Value::Bool(true), &Value::Bool(true))
    );
    let list = support::history_list(dir.path());
    assert!(
        list.contains("[INTERRUPTED by SIGTERM]") && !list.contains("PARTIAL"),
        "{list}"
    );
    assert_eq!(r["interrupted_by"], "SIGTERM");
    // The recording ended whole, and the result file and the history say so (saved again
    // after the recording's end, in place).
    assert!(
        r["data"]["output_error"].is_null(),
        "{}",
        r["data"]["output_error"]
    );
    let o = preempt(dir.path())
        .args(["history", "show", "1"])
        .output()
        .unwrap();
    let stored: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(stored["data"]["output_error"].is_null(), "{stored}");
    // The earlier run's files, set aside while this one ran, are gone with its result written.
    for f in &earlier {
        assert!(!f.exists(), "{} is left", f.display());
    }
    assert!(is_finished_mcap(&out.join("gimbal.mcap")), "{rest}");
}

/// GNU `timeout` sends its signal to the command and then to its own process group, which
/// holds the command: two SIGTERMs from one process, microseconds apart. That is one stop:
/// the demo ends in order with its figures whole, and `timeout` exits 124.
#[test]
fn a_demo_under_gnu_timeout_is_stopped_once_and_keeps_its_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let demo = gimbal(dir.path(), &out, "30s");
    let mut cmd = Command::new("timeout");
    cmd.arg("8").arg(demo.get_program()).args(demo.get_args());
    for (k, v) in demo.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    if let Some(d) = demo.get_current_dir() {
        cmd.current_dir(d);
    }
    let done = cmd
        .output()
        .expect("GNU timeout (coreutils) must be installed");
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(124), "{err}");
    let r = json(&out.join("gimbal.json"));
    assert_eq!(
        (&r["complete"], &r["interrupted"], &r["interrupted_by"]),
        (
            &Value::Bool(true),
            &Value::Bool(true),
            &Value::from("SIGTERM")
        ),
        "{r}\n{err}"
    );
    assert!(is_finished_mcap(&out.join("gimbal.mcap")), "{err}");
}

/// An earlier run's `gimbal.json` and `gimbal.mcap` in `out` (created); returns where the
/// next run sets them aside (`gimbal.previous.json`, `gimbal.previous.mcap`).
fn earlier_run(out: &Path) -> [std::path::PathBuf; 2] {
    std::fs::create_dir_all(out).unwrap();
    std::fs::write(out.join("gimbal.json"), EARLIER_JSON).unwrap();
    std::fs::write(out.join("gimbal.mcap"), EARLIER_MCAP).unwrap();
    [
        out.join("gimbal.previous.json"),
        out.join("gimbal.previous.mcap"),
    ]
}

const EARLIER_JSON: &str = "{\"an earlier run\": true}\n";
const EARLIER_MCAP: &str = "an earlier recording";

/// Waits (at most 30 s) until `path` exists: the demo is recording.
#[track_caller]
fn wait_for_file(path: &Path) {
    for _ in 0..3000 {
        if path.exists() {
            return;
        }
        support::sleep_ms(10);
    }
    panic!("{} never appeared", path.display());
}

/// Sends `sig` (`-INT`, `-KILL`, ...) to `child`.
fn signal(child: &Child, sig: &str) {
    let sent = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {sig}");
}

#[test]
fn a_demo_killed_midway_leaves_no_earlier_result_under_its_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let [json_aside, mcap_aside] = earlier_run(&out);
    let (child, err) = spawn_until(&mut gimbal(dir.path(), &out, "20s"), "gimbal demo for");
    wait_for_file(&out.join("gimbal.mcap.part"));
    signal(&child, "-KILL");
    let (code, rest) = finish(child, err);
    assert_eq!(code, None, "killed: {rest}");
    // What is in DIR says what happened: no gimbal.json (this run wrote none), the earlier
    // run's files under names that say so, the cut recording as .part.
    assert!(
        !out.join("gimbal.json").exists() && !out.join("gimbal.mcap").exists(),
        "an earlier run's file looks like the killed run's"
    );
    assert_eq!(std::fs::read_to_string(&json_aside).unwrap(), EARLIER_JSON);
    assert_eq!(std::fs::read_to_string(&mcap_aside).unwrap(), EARLIER_MCAP);
    assert!(out.join("gimbal.mcap.part").exists());
}

#[test]
fn a_second_ctrl_c_in_the_demo_shutdown_exits_130_and_never_leaves_an_empty_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (child, err) = spawn_until(&mut gimbal(dir.path(), &out, "20s"), "gimbal demo for");
    wait_for_file(&out.join("gimbal.mcap.part"));
    support::sleep_ms(300);
    signal(&child, "-INT");
    // Inside the ~0.16 s shutdown (the app stopping, the recording finishing).
    support::sleep_ms(20);
    signal(&child, "-INT");
    let (code, rest) = finish(child, err);
    assert_eq!(code, Some(130), "{rest}");
    // docs/MEASURING.md: the second Ctrl-C stops at once; a result file is whole or absent.
    let json_path = out.join("gimbal.json");
    if json_path.exists() {
        let r = json(&json_path);
        assert_eq!(
            (&r["complete"], &r["interrupted"]),
            (&Value::Bool(true), &Value::Bool(true)),
            "{r}"
        );
    } else {
        assert!(!rest.contains("results in"), "claimed as written: {rest}");
    }
    assert!(
        !out.join("gimbal.mcap").exists() || is_finished_mcap(&out.join("gimbal.mcap")),
        "a cut recording under the final name"
    );
}

/// `preempt demo STEM` (`gimbal`, `uav`) in `out` for 20 s, paused before the end of its
/// MCAP recording (`PREEMPT_TEST_PAUSE=mcap-tail`): stopped by `sig`, then by `sig` again
/// while it is held there (the window that is otherwise milliseconds long), it leaves its
/// figures whole and marked interrupted, the cut recording named as such, one history record,
/// and exits `code`.
fn second_signal_while_the_recording_ends(stem: &str, sig: &str, code: i32, by: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let earlier = if stem == "gimbal" {
        earlier_run(&out).to_vec()
    } else {
        Vec::new()
    };
    let mut cmd = if stem == "gimbal" {
        gimbal(dir.path(), &out, "20s")
    } else {
        let mut c = preempt(dir.path());
        if !preempt_io::sys::caps::has_effective(preempt_io::sys::caps::Capability::SysNice)
            .unwrap_or(false)
        {
            c.env("PREEMPT_SOFT", "1");
        }
        c.args(["demo", "uav", "--duration", "20s", "--out"])
            .arg(&out);
        c
    };
    cmd.env("PREEMPT_TEST_PAUSE", "mcap-tail");
    let starting = if stem == "gimbal" {
        "gimbal demo for"
    } else {
        "UAV flight for"
    };
    let (child, mut err) = spawn_until(&mut cmd, starting);
    let part = out.join(format!("{stem}.mcap.part"));
    wait_for_file(&part);
    signal(&child, sig);
    support::wait_for_line(&mut err, "test pause at mcap-tail");
    signal(&child, sig);
    let (got, rest) = finish(child, err);
    assert_eq!(got, Some(code), "{rest}");
    let r = json(&out.join(format!("{stem}.json")));
    assert_eq!(
        (&r["complete"], &r["interrupted"], &r["interrupted_by"]),
        (&Value::Bool(true), &Value::Bool(true), &Value::from(by)),
        "{r}"
    );
    let data = if stem == "gimbal" {
        &r["data"]
    } else {
        &r["data"]["cells"][0]
    };
    let note = data["output_error"].as_str().unwrap_or_default();
    assert!(
        note.contains(&format!("{} is cut", part.display())),
        "the result file must say the recording is cut: {note:?}"
    );
    // The cut recording keeps its .part name; none looks finished.
    assert!(part.exists() && !out.join(format!("{stem}.mcap")).exists());
    for f in &earlier {
        assert!(!f.exists(), "{} is left", f.display());
    }
    let list = support::history_list(dir.path());
    assert!(list.contains(&format!("[INTERRUPTED by {by}]")), "{list}");
    assert_eq!(history_runs(dir.path()), 1, "{list}");
}

#[test]
fn a_second_sigint_while_the_gimbal_recording_ends_keeps_the_figures() {
    second_signal_while_the_recording_ends("gimbal", "-INT", 130, "SIGINT");
}

#[test]
fn a_second_sigterm_while_the_uav_recording_ends_keeps_the_figures() {
    second_signal_while_the_recording_ends("uav", "-TERM", 143, "SIGTERM");
}

/// A tmpfs of `size` mounted on `out` (created) until the guard drops; None (the test then
/// skips) without root, which mounting needs (CAP_SYS_ADMIN).
fn small_tmpfs(out: &Path, size: &str) -> Option<impl Drop> {
    if !can_trace() {
        return None;
    }
    std::fs::create_dir_all(out).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(out)
        .status()
        .unwrap();
    assert!(mounted.success(), "mount -t tmpfs failed");
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    Some(Unmount(out.to_path_buf()))
}

/// Checks the end of a demo whose `--out` filled up: exit 1 naming the lost recording, the
/// result file complete and not interrupted, the cut recording removed, one history record.
/// Returns the result file.
#[track_caller]
fn figures_kept_recording_dropped(
    o: &std::process::Output,
    dir: &Path,
    out: &Path,
    stem: &str,
) -> Value {
    exits(
        o,
        1,
        &[
            "the MCAP recording",
            "could not be written",
            "the figures were written",
        ],
    );
    let r = json(&out.join(format!("{stem}.json")));
    assert_eq!(
        (&r["complete"], &r["interrupted"]),
        (&Value::Bool(true), &Value::Bool(false))
    );
    assert!(
        !out.join(format!("{stem}.mcap.part")).exists(),
        "the cut recording is removed"
    );
    assert!(!out.join(format!("{stem}.mcap")).exists());
    assert_eq!(history_runs(dir), 1);
    r
}

#[test]
fn a_demo_whose_out_fills_up_keeps_its_figures_and_drops_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small");
    // 6 MiB: the 2 s recording (~17 MB) cannot fit, the figures (~0.4 MB) can.
    let Some(_unmount) = small_tmpfs(&out, "6m") else {
        return;
    };
    let o = gimbal(dir.path(), &out, "2s").output().unwrap();
    let r = figures_kept_recording_dropped(&o, dir.path(), &out, "gimbal");
    assert!(r["data"]["output_error"].is_string(), "{r}");
    assert!(r["data"]["axes"].as_array().is_some_and(|a| !a.is_empty()));
}

#[test]
fn a_uav_flight_whose_out_fills_up_keeps_its_figures_and_drops_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small");
    // 256 KiB: the 2 s recording (~450 KB) cannot fit, the figures (~40 KB) can.
    let Some(_unmount) = small_tmpfs(&out, "256k") else {
        return;
    };
    let mut c = preempt(dir.path());
    if !preempt_io::sys::caps::has_effective(preempt_io::sys::caps::Capability::SysNice)
        .unwrap_or(false)
    {
        c.env("PREEMPT_SOFT", "1");
    }
    let o = c
        .args(["demo", "uav", "--duration", "2s", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let r = figures_kept_recording_dropped(&o, dir.path(), &out, "uav");
    let cell = &r["data"]["cells"][0];
    assert!(cell["output_error"].is_string(), "{r}");
    assert!(cell["flown_steps"].as_u64().is_some_and(|n| n > 0), "{r}");
}
