//! The examples run, end by themselves, and print what `examples/expected/<name>.out` says
//! (timing lines are masked: `Time: <duration>`). Plus the start-up paths: a missing
//! privilege is a clear error with exit code 1, and `PREEMPT_SOFT=1` runs anyway.
//!
//! `cargo test -p preempt` builds the examples next to this test
//! (`target/<profile>/examples/`). Re-bless the golden files with
//! `PREEMPT_BLESS=1 cargo test -p preempt --test examples_output`.
//!
//! On an emulated CPU (the PREEMPT_RT guests of `scripts/rt_guests.py`, which set
//! `PREEMPT_EXAMPLES_TIMING_FREE=1`) the 10 kHz loops cannot keep their timing, so values a
//! closed control loop reaches in time (the demonstrator's angle) are compared for their form
//! (a finite angle after the same number of samples), not their value, and the demonstrator's
//! setpoint step, which a lower level prints if the saturated CPU lets it run in time, is not
//! required there: function, not timing.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

#[path = "support/child.rs"]
mod child_process;
use child_process::{example, run_with_watchdog, soft_unless_privileged};

fn example_command(name: &str, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(example(name));
    // Every real-time job is checked: an allocation, lock, sleep or I/O in one stops the
    // example with exit code 4 (the examples accept their prints with `rt_safety::allow`).
    cmd.env(preempt::RT_SAFETY_ENV, "abort");
    cmd.envs(env.iter().copied());
    soft_unless_privileged(&mut cmd, name, 15);
    cmd
}

/// Set where the CPU cannot keep the examples' timing (see the module's documentation).
const TIMING_FREE_ENV: &str = "PREEMPT_EXAMPLES_TIMING_FREE";

/// Replaces the value of timing lines, which differ from run to run; with `timing_free`, also
/// the value of closed-loop results that depend on timing (checked to be a finite angle).
fn mask(stdout: &str, timing_free: bool) -> String {
    let mut out = String::new();
    for line in stdout.lines() {
        match line.split_once(": ") {
            Some((key @ ("Time" | "Release time"), _)) => {
                out.push_str(key);
                out.push_str(": <duration>");
            }
            Some((key, value)) if timing_free && key.starts_with("angle after ") => {
                let rad = value
                    .strip_suffix(" rad")
                    .and_then(|v| v.parse::<f64>().ok());
                assert!(rad.is_some_and(f64::is_finite), "`{line}`: not an angle");
                out.push_str(key);
                out.push_str(": <closed-loop angle> rad");
            }
            // The demonstrator's setpoint step comes from its priority-5 async task, 100 ms
            // into a 0.5 s run. Where the 10 kHz levels above it cannot keep their rate they
            // take every CPU and it may not run before the end (seen once in 40 runs in the
            // rt-arm64 guest: 4998 of 5000 releases refused, no setpoint line): whether it
            // printed is timing, so only its form is checked, on both sides.
            _ if timing_free && line.starts_with("setpoint ") => {
                assert!(
                    line.ends_with(" rad after 100 ms"),
                    "`{line}`: not the setpoint step"
                );
                continue;
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Where the golden outputs lie: `PREEMPT_EXAMPLES_EXPECTED` if set (the PREEMPT_RT guests of
/// `scripts/rt_guests.py` copy them to a fixed path, since the checkout's own path may lie
/// under the guest's tmpfs `/tmp`), else `examples/expected` of this crate's source.
fn expected_dir() -> PathBuf {
    std::env::var_os("PREEMPT_EXAMPLES_EXPECTED").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/expected"),
        PathBuf::from,
    )
}

/// Runs example `name`, compares its stdout with the golden file and returns its stderr.
fn check_golden(name: &str, env: &[(&str, &str)], timeout: Duration) -> String {
    let out = run_with_watchdog(example_command(name, env), name, timeout);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name} failed\n{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let timing_free = std::env::var_os(TIMING_FREE_ENV).is_some_and(|v| v == "1");
    let got = mask(&stdout, timing_free);
    let golden = expected_dir().join(format!("{name}.out"));
    if std::env::var_os("PREEMPT_BLESS").is_some() {
        std::fs::write(&golden, mask(&stdout, false)).unwrap();
        return stderr.into_owned();
    }
    let expected = std::fs::read_to_string(&golden)
        .unwrap_or_else(|e| panic!("{}: {e} (bless with PREEMPT_BLESS=1)", golden.display()));
    let expected = mask(&expected, timing_free);
    if timing_free && got != mask(&stdout, false) {
        let late: Vec<&str> = stderr.lines().filter(|l| l.contains(" late ")).collect();
        eprintln!(
            "{name}: {TIMING_FREE_ENV}=1, closed-loop values compared for form:\n{stdout}{}",
            late.join("\n")
        );
    }
    assert_eq!(
        got,
        expected,
        "{name}: output differs from {}",
        golden.display()
    );
    stderr.into_owned()
}

#[test]
fn listing1_same_priority_output() {
    check_golden(
        "listing1_same_priority",
        &[("PREEMPT_EXAMPLE_ITERATIONS", "100000")],
        Duration::from_secs(60),
    );
}

#[test]
fn listing1_cross_priority_output() {
    check_golden(
        "listing1_cross_priority",
        &[("PREEMPT_EXAMPLE_ITERATIONS", "2000")],
        Duration::from_secs(60),
    );
}

#[test]
fn listing2_contended_unlock_output() {
    check_golden(
        "listing2_contended_unlock",
        &[("PREEMPT_EXAMPLE_SAMPLES", "500")],
        Duration::from_secs(60),
    );
}

#[test]
fn appendix_a_output() {
    check_golden(
        "appendix_a",
        &[("PREEMPT_EXAMPLE_PERIOD_MS", "20")],
        Duration::from_secs(60),
    );
}

#[test]
fn deadlock_avoidance_output() {
    check_golden(
        "deadlock_avoidance",
        &[("PREEMPT_EXAMPLE_ROUNDS", "20000")],
        Duration::from_secs(120),
    );
}

#[test]
fn periodic_1khz_output() {
    check_golden(
        "periodic_1khz",
        &[("PREEMPT_EXAMPLE_JOBS", "300")],
        Duration::from_secs(60),
    );
}

#[test]
fn async_channel_output() {
    check_golden("async_channel", &[], Duration::from_secs(60));
}

#[test]
fn fd_tasks_output() {
    check_golden("fd_tasks", &[], Duration::from_secs(60));
}

/// The demonstrator's deterministic lines (the angle is printed to 0.01 rad, which late
/// controller outputs on a loaded host do not change); the statistics and the analysis go to
/// stderr, checked for their parts.
#[test]
fn demonstrator_output_and_exit_summary() {
    let stderr = check_golden(
        "demonstrator",
        &[("PREEMPT_EXAMPLE_SAMPLES", "5000")],
        Duration::from_secs(60),
    );
    for needle in [
        "task statistics (monotonic clock):",
        "sample ",
        "command in current (prio 80, ceiling 90)",
        "response-time analysis (measured WCETs):",
        "verdict: ",
    ] {
        assert!(stderr.contains(needle), "missing `{needle}` in:\n{stderr}");
    }
}

/// The thesis's contended-unlock benchmark pinned to one CPU, many times: the peer crate
/// `pcp-mutex` 0.2 livelocked here in 12 of 15 runs. Every run must end, and correctly.
#[test]
fn listing2_pinned_to_one_cpu_never_hangs() {
    // Affinity is inherited through fork and exec: pin this thread, spawn from it.
    let handle = std::thread::spawn(|| {
        preempt_io::sys::sched::set_current_thread_affinity(&[0]).unwrap();
        for run_index in 0..20 {
            let cmd = example_command(
                "listing2_contended_unlock",
                &[("PREEMPT_EXAMPLE_SAMPLES", "300")],
            );
            let out = run_with_watchdog(
                cmd,
                &format!("pinned listing2 run {run_index}"),
                Duration::from_secs(30),
            );
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "run {run_index}: {stdout}");
            assert!(
                stdout.contains("a = 601 after 300 samples"),
                "run {run_index}: {stdout}"
            );
        }
    });
    handle.join().unwrap();
}

fn tool(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Without CAP_SYS_NICE and with RLIMIT_RTPRIO 0 the app refuses to start, names the fixes
/// and exits with 1 before any task runs; `PREEMPT_SOFT=1` runs it anyway, loudly.
#[test]
fn missing_privilege_is_a_clear_error_and_soft_mode_runs() {
    let as_root = preempt_io::sys::caps::has_effective(preempt_io::sys::caps::Capability::SysNice)
        .unwrap_or(false);
    let unprivileged = |soft: bool| -> Command {
        let mut cmd = if as_root {
            // Drop CAP_SYS_NICE from the bounding set: exec then leaves it out of the
            // child's permitted and effective sets, even for root.
            let mut c = Command::new("prlimit");
            c.args(["--rtprio=0:0", "setpriv", "--bounding-set=-sys_nice", "--"]);
            c.arg(example("listing1_same_priority"));
            c
        } else {
            let mut c = Command::new("prlimit");
            c.args(["--rtprio=0:0", "--"]);
            c.arg(example("listing1_same_priority"));
            c
        };
        cmd.env("PREEMPT_EXAMPLE_ITERATIONS", "1000");
        if soft {
            cmd.env("PREEMPT_SOFT", "1");
        } else {
            cmd.env_remove("PREEMPT_SOFT");
        }
        cmd
    };
    if !tool("prlimit") || (as_root && !tool("setpriv")) {
        eprintln!("skipped: needs util-linux's prlimit and setpriv to drop the privilege");
        return;
    }
    let out = run_with_watchdog(
        unprivileged(false),
        "unprivileged app",
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "a task ran: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Root without CAP_SYS_NICE had it dropped: "run it as root" would be wrong advice there.
    let root = preempt_io::sys::caps::is_root();
    assert_eq!(stderr.contains("run it as root"), !root, "{stderr}");
    // Root's dropped capabilities come back where it is started: setcap cannot exceed the
    // bounding set.
    assert_eq!(stderr.contains("setcap cap_sys_nice"), !root, "{stderr}");
    assert_eq!(stderr.contains("--cap-add=SYS_NICE"), root, "{stderr}");
    for needle in [
        "RLIMIT_RTPRIO is 0 and the process lacks CAP_SYS_NICE",
        "rtprio 1` to /etc/security/limits.conf",
        "PREEMPT_SOFT=1",
    ] {
        assert!(stderr.contains(needle), "missing `{needle}` in:\n{stderr}");
    }

    let out = run_with_watchdog(unprivileged(true), "soft-mode app", Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("runs in SOFT mode"), "{stderr}");
    assert!(stdout.contains("Switches: 1001"), "{stdout}");
}

/// The timing-free comparison of the demonstrator (emulated CPUs): the angle's value and
/// whether the low-priority setpoint step printed are timing; every other line still counts.
#[test]
fn timing_free_comparison_ignores_the_angle_and_a_starved_setpoint_only() {
    let golden = "demonstrator: 10 kHz\nsetpoint 0.00 -> 1.00 rad after 100 ms\nangle after 0.50 s: 1.00 rad\nlogger: 500 samples over the bridge, 0 lost\n";
    let starved = "demonstrator: 10 kHz\nangle after 0.50 s: 0.00 rad\nlogger: 500 samples over the bridge, 0 lost\n";
    assert_eq!(mask(starved, true), mask(golden, true));
    assert_ne!(mask(starved, false), mask(golden, false));
    let lost = "demonstrator: 10 kHz\nangle after 0.50 s: 0.00 rad\nlogger: 500 samples over the bridge, 3 lost\n";
    assert_ne!(mask(lost, true), mask(golden, true));
}
