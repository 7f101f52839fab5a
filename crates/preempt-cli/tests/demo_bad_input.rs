//! What a user of `preempt demo uav` and `preempt demo gimbal` sees on bad input: every
//! message names the flag or the file and the fix, the exit code is 2 (usage) or 3 (the
//! controller could not start for lack of real-time privilege), and nothing is flown or
//! measured before a usage error.
//!
//! The missing-privileges case drops CAP_SYS_NICE from the child's bounding set (`setpriv`)
//! and sets its RLIMIT_RTPRIO to 0 (`prlimit`), both util-linux, so that it runs as an
//! unprivileged user's would even here as root; without root it needs neither. Such a run
//! leaves an earlier run's files in `--out` as they were.

use std::path::Path;
use std::process::{Command, Output};

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_preempt");

/// `preempt demo DEMO ARGS --out OUT` with a private history; its output.
fn demo(prefix: &[&str], demo: &str, args: &[&str], out: &Path) -> Output {
    let (program, pre) = prefix
        .split_first()
        .map_or((BIN, &[][..]), |(p, r)| (*p, r));
    Command::new(program)
        .args(pre)
        .args(prefix.first().map(|_| BIN))
        .env("PREEMPT_HISTORY", support::test_history())
        .env_remove("PREEMPT_SOFT")
        .args(["demo", demo])
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

/// Asserts `o` exited with `code` and its stderr contains every one of `needles`; returns
/// the stderr.
#[track_caller]
fn fails(o: &Output, code: i32, needles: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(code), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{n:?} not in: {stderr}");
    }
    stderr
}

/// Nothing ran: neither demo announced its run (the banner comes after every check).
#[track_caller]
fn nothing_ran(stderr: &str) {
    assert!(
        !stderr.contains("UAV flight for") && !stderr.contains("gimbal demo for"),
        "a usage error is found before anything runs: {stderr}"
    );
}

const DEMOS: [(&str, &str, &str); 2] = [("uav", "1s", "uav"), ("gimbal", "300ms", "gimbal")];

#[test]
fn an_out_directory_that_cannot_be_created_is_a_usage_error_naming_it() {
    for (name, duration, _) in DEMOS {
        let o = demo(
            &[],
            name,
            &["--duration", duration, "--no-history"],
            Path::new("/dev/null/x"),
        );
        let e = fails(
            &o,
            2,
            &[
                "--out /dev/null/x: cannot create the directory",
                "Not a directory",
            ],
        );
        nothing_ran(&e);
    }
}

#[test]
fn an_output_file_that_is_a_directory_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for (name, duration, stem) in DEMOS {
        let out = dir.path().join(name);
        let blocked = out.join(format!("{stem}.mcap"));
        std::fs::create_dir_all(&blocked).unwrap();
        let o = demo(&[], name, &["--duration", duration, "--no-history"], &out);
        let e = fails(
            &o,
            2,
            &[&format!(
                "--out {}: cannot write {}: it is a directory; remove it or choose another --out \
                 directory",
                out.display(),
                blocked.display()
            )],
        );
        nothing_ran(&e);
        assert!(
            !out.join(format!("{stem}.json")).exists(),
            "nothing written"
        );
    }
}

#[test]
fn bad_values_are_usage_errors_naming_the_flag_and_the_accepted_forms() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    for (name, args, needles) in [
        (
            "uav",
            &["--policy", "idle:1"][..],
            &[
                "--policy idle:1: expected fifo:1..99, rr:1..99, other:-20..19 or deadline:RUNTIME_US",
            ][..],
        ),
        (
            "uav",
            &["--policy", "deadline:4000"],
            &[
                "--policy deadline:4000",
                "the runtime must be 10 to 3999 us",
            ],
        ),
        ("uav", &["--policy", "other:-21"], &["--policy other:-21"]),
        (
            "uav",
            &["--duration", "10ms"],
            &["--duration 0.01 s: expected 0.1 s to 3600 s (e.g. 5s, 500ms)"],
        ),
        (
            "gimbal",
            &["--duration", "1ms"],
            &["--duration 0.001 s: expected 0.01 s to 3600 s (e.g. 5s, 500ms)"],
        ),
        (
            "gimbal",
            &["--steps", "pan=1"],
            &["--steps: 'pan=1' is not AXIS=RAD@TIME (e.g. pan=0.5@0.2s"],
        ),
        // Issue 40: these ran with exit 0.
        (
            "gimbal",
            &["--steps", ",,"],
            &["--steps ',,': an empty step (a stray comma?)"],
        ),
        (
            "gimbal",
            &["--steps", "pan=0.5@0.2s,pan=0.5@0.2s"],
            &["both set pan at 0.2 s; keep one"],
        ),
    ] {
        let o = demo(&[], name, args, &out);
        let e = fails(&o, 2, needles);
        nothing_ran(&e);
    }
    assert!(!out.exists(), "a usage error creates no output directory");
}

#[test]
fn missing_real_time_privileges_name_cap_sys_nice_rlimit_rtprio_and_soft_mode() {
    let root = preempt_io::sys::caps::has_effective(preempt_io::sys::caps::Capability::SysNice)
        .unwrap_or(false);
    // As root: CAP_SYS_NICE out of the bounding set (root's exec gets every other one) and
    // RLIMIT_RTPRIO 0; otherwise the limit alone (a user lacks the capability already).
    let prefix: &[&str] = if root {
        &[
            "prlimit",
            "--rtprio=0:0",
            "setpriv",
            "--bounding-set=-sys_nice",
            "--",
        ]
    } else {
        &["prlimit", "--rtprio=0:0", "--"]
    };
    let tools = ["prlimit", "setpriv"].iter().all(|t| {
        Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !tools {
        support::skip_unprivileged("needs prlimit and setpriv (util-linux) to drop privileges");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, duration, stem) in DEMOS {
        let out = dir.path().join(name);
        // An earlier run's files: a run that cannot start leaves them as they were.
        std::fs::create_dir_all(&out).unwrap();
        let earlier = [
            out.join(format!("{stem}.json")),
            out.join(format!("{stem}.mcap")),
        ];
        for f in &earlier {
            std::fs::write(f, b"an earlier run").unwrap();
        }
        let o = demo(
            prefix,
            name,
            &["--duration", duration, "--no-history"],
            &out,
        );
        // Root's dropped capability comes back where it is started (setcap cannot exceed the
        // bounding set); a user is told to setcap the binary.
        let grant = if preempt_io::sys::caps::is_root() {
            "AmbientCapabilities=CAP_SYS_NICE"
        } else {
            "setcap cap_sys_nice"
        };
        fails(
            &o,
            3,
            &[
                "cannot start its real-time executors",
                "RLIMIT_RTPRIO is 0 and the process lacks CAP_SYS_NICE",
                grant,
                "rtprio 90",
                "PREEMPT_SOFT=1",
                "the controller could not start",
            ],
        );
        for f in &earlier {
            assert_eq!(
                std::fs::read(f).unwrap(),
                b"an earlier run",
                "{}",
                f.display()
            );
        }
        let left: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "nothing else left in --out: {left:?}");
    }
}
