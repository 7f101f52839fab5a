//! Regression tests of the failures users hit when things go wrong, each
//! reproducing one reported failure with the real binary: outputs that lose a run, partial
//! runs that pass a gate, runs missing from the history, a corrupt history database, an
//! interrupted matrix cell shown as zeros, SIGTERM's exit code, missing privileges that exit 0.
//!
//! Runs are tiny (tens of milliseconds of measuring); the bad-output cases fail before any
//! measurement, which is the point.

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_preempt");

fn preempt(history: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("RUST_BACKTRACE")
        .env("PREEMPT_HISTORY", history)
        .env("TMPDIR", history.parent().unwrap());
    c
}

/// Issue 12, item 4: `--export-json DIR` (or `/proc/x.json`) measured the whole run, then
/// exited 1 with nothing printed. Now every output is checked first: exit 2 at once, naming it.
#[test]
fn unwritable_outputs_fail_before_measuring_and_name_the_path() {
    let d = tempfile::tempdir().unwrap();
    let h = d.path().join("h.sqlite");
    let dir = d.path().to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["latency", "-D", "5s", "--export-json", dir],
        vec!["latency", "-D", "5s", "--export-csv", "/proc/x.csv"],
        vec!["latency", "-D", "5s", "--trace-samples", dir],
        vec!["latency", "-D", "5s", "--export-json", "/proc/x.json"],
        vec!["wakeup", "--export-json", dir],
        vec!["micro", "--export-json", "/proc/x.json"],
        vec!["matrix", "-D", "5s", "--out-dir", dir, "--export-json", dir],
        vec!["check", "--export-json", dir],
    ];
    for args in cases {
        let t0 = Instant::now();
        let out = preempt(&h).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let bad = args.last().unwrap();
        assert!(
            stderr.contains(&format!("cannot write {bad}")),
            "{args:?}: {stderr}"
        );
        // Nothing was measured: a 5 s run refused in well under that.
        assert!(
            t0.elapsed() < Duration::from_secs(3),
            "{args:?} measured first"
        );
    }
}

/// Issue 12, item 4, for `preempt run`: its report directory and every file the suite will
/// write there are checked before the two-minute suite starts (exit 2 at once, naming them).
#[test]
fn run_checks_its_report_directory_before_measuring() {
    let d = tempfile::tempdir().unwrap();
    let h = d.path().join("h.sqlite");
    let t0 = Instant::now();
    let out = preempt(&h)
        .args(["run", "--no-progress", "--out", "/proc/preempt-report"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--out /proc/preempt-report"), "{stderr}");
    // A file of the suite that cannot be written (here: a directory in its place).
    let report = d.path().join("report");
    std::fs::create_dir_all(report.join("micro.json")).unwrap();
    let out = preempt(&h)
        .args(["run", "--no-progress", "--out"])
        .arg(&report)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let bad = report.join("micro.json");
    assert!(
        stderr.contains(&format!("cannot write {}", bad.display())),
        "{stderr}"
    );
    assert!(
        !report.join("check.json").exists(),
        "the suite started before the outputs were checked"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "run measured first");
}

/// Issue 12, item 4: a write that fails late (the directory vanished during the run) still
/// prints the table and saves the result to a fallback file whose path is printed.
#[test]
fn a_late_write_failure_keeps_the_run_in_a_fallback_file() {
    let d = tempfile::tempdir().unwrap();
    let h = d.path().join("h.sqlite");
    let out_dir = d.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let mut args = vec![
        "latency".to_string(),
        "-D".into(),
        "1500ms".into(),
        "--no-progress".into(),
        "--export-json".into(),
        out_dir.join("r.json").display().to_string(),
    ];
    if !support::can_fifo() {
        args.extend(["--policy", "other", "--no-mlock"].map(String::from));
    }
    let child = StdCommand::new(BIN)
        .args(&args)
        .env("PREEMPT_HISTORY", &h)
        .env("TMPDIR", d.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    support::sleep_ms(600);
    std::fs::remove_dir_all(&out_dir).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stdout.contains("wake-up latency"),
        "table printed: {stdout}"
    );
    let fallback: PathBuf = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("preempt-latency-")
        })
        .expect("a fallback file in $TMPDIR");
    assert!(stderr.contains(&fallback.display().to_string()), "{stderr}");
    let v = support::read_json(&fallback);
    assert_eq!(v["kind"], "latency");
    assert_eq!(v["complete"], true);
}

/// Issue 12, item 5: a result cut short (`complete: false`) or interrupted passed
/// `compare --baseline --max-ratio` with exit 0. Now it is refused unless `--allow-partial`.
#[test]
fn compare_refuses_partial_runs_in_a_gate_unless_allowed() {
    let d = tempfile::tempdir().unwrap();
    let h = d.path().join("h.sqlite");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/micro-v1.json");
    let mut v = support::read_json(&fixture);
    let full = d.path().join("full.json");
    std::fs::write(&full, serde_json::to_vec(&v).unwrap()).unwrap();
    v["complete"] = Value::Bool(false);
    let partial = d.path().join("partial.json");
    std::fs::write(&partial, serde_json::to_vec(&v).unwrap()).unwrap();
    v["complete"] = Value::Bool(true);
    v["interrupted"] = Value::Bool(true);
    let interrupted = d.path().join("interrupted.json");
    std::fs::write(&interrupted, serde_json::to_vec(&v).unwrap()).unwrap();
    for (base, cand, what) in [
        (&full, &partial, "incomplete"),
        (&partial, &full, "incomplete"),
        (&full, &interrupted, "interrupted"),
    ] {
        let gate = |extra: &[&str]| {
            let mut c = preempt(&h);
            c.args(["compare", "--max-ratio", "p99=100", "--baseline"])
                .arg(base)
                .arg(cand)
                .args(extra);
            c.assert()
        };
        gate(&[]).code(1).stderr(
            predicate::str::contains(what).and(predicate::str::contains("--allow-partial")),
        );
        gate(&["--allow-partial"]).code(0);
    }
    // The history marks it too.
    preempt(&h)
        .args(["history", "import"])
        .arg(&partial)
        .assert()
        .success();
    preempt(&h)
        .arg("history")
        .assert()
        .success()
        .stdout(predicate::str::contains("[PARTIAL"));
}

/// Issue 12, item 3: only `micro` and `run` recorded themselves. Now every measuring command
/// does (here `check` and `latency`), `--no-history` opts out, the same file cannot be imported
/// twice, and a corrupt database's error names its path and the way out.
#[test]
fn every_run_is_recorded_once_and_a_corrupt_history_says_how_out() {
    let d = tempfile::tempdir().unwrap();
    let h = d.path().join("h.sqlite");
    let json = d.path().join("check.json");
    preempt(&h)
        .args(["check", "--export-json"])
        .arg(&json)
        .assert()
        .stderr(predicate::str::contains("recorded as run #1"));
    let mut lat = vec!["latency", "--loops", "20", "--no-progress"];
    if !support::can_fifo() {
        lat.extend(["--policy", "other", "--no-mlock"]);
    }
    preempt(&h)
        .args(&lat)
        .assert()
        .success()
        .stderr(predicate::str::contains("recorded as run #2"));
    preempt(&h)
        .args(&lat)
        .arg("--no-history")
        .assert()
        .success()
        .stderr(predicate::str::contains("recorded as").not());
    preempt(&h)
        .args(["history", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"kind\": \"latency\""));
    // The check file is run #1 already: importing it is refused, with the id.
    preempt(&h)
        .args(["history", "import"])
        .arg(&json)
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("already in history database")
                .and(predicate::str::contains("run #1")),
        );
    // A corrupt database: the error names it and the way out; the run itself still succeeds.
    let bad = d.path().join("bad.sqlite");
    std::fs::write(
        &bad,
        b"this is not a database, it is a text file of some length....",
    )
    .unwrap();
    preempt(&h)
        .args(["history", "--history-db"])
        .arg(&bad)
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains(bad.display().to_string())
                .and(predicate::str::contains("move it aside"))
                .and(predicate::str::contains("--no-history")),
        );
    preempt(&bad)
        .arg("check")
        .assert()
        .stderr(predicate::str::contains("move it aside"));
}

/// Issue 12, items 5 and 6: an interrupted matrix cell printed 0.0 in every column, and
/// SIGTERM exited 130. Now the cell reads "not measured" (no latency in summary.json) and
/// SIGTERM exits 143.
#[test]
fn sigterm_exits_143_and_the_interrupted_matrix_cell_is_not_measured() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("m");
    let mut child = StdCommand::new(BIN)
        .args([
            "matrix",
            "-D",
            "4s",
            "--period",
            "1000",
            "--no-progress",
            "--out-dir",
        ])
        .arg(&out)
        .env("PREEMPT_HISTORY", d.path().join("h.sqlite"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The start line comes after the signal handlers are installed; then a cell is running.
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut stderr = String::new();
    while !stderr.contains("matrix of 8 policies") {
        let n = std::io::BufRead::read_line(&mut err, &mut stderr).unwrap();
        assert_ne!(n, 0, "no start line: {stderr}");
    }
    // Past the idle calibration, inside the first 4 s cell (even on a loaded host).
    support::sleep_ms(2_000);
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on our own child's pid with a valid signal number.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    std::io::Read::read_to_string(&mut err, &mut stderr).unwrap();
    let o = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(143), "{stderr}");
    assert!(stdout.contains("not measured"), "{stdout}");
    assert!(!stdout.contains(" 0.0 "), "{stdout}");
    let summary = support::read_json(&out.join("summary.json"));
    assert_eq!(summary["interrupted"], true);
    let cells = summary["data"]["cells"].as_array().unwrap();
    let cell = cells.last().unwrap();
    assert_eq!(cell["verdict"], "not measured", "{cell}");
    assert!(cell["latency"].is_null(), "{cell}");
}

/// Issue 12, item 6: without privileges `micro` fell back to SCHED_OTHER and exited 0,
/// suggesting a `--policy` flag it does not have. Now it keeps its figures and exits 3, naming
/// RLIMIT_RTPRIO and CAP_SYS_NICE (and no `--policy`).
#[test]
fn micro_without_real_time_privilege_exits_3_naming_the_grant() {
    use std::os::unix::process::CommandExt;
    if !support::can_fifo() {
        return; // the drop to `nobody` below needs root
    }
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("micro.json");
    // `nobody` must be able to write the result and reach the binary.
    std::fs::set_permissions(
        d.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let out = StdCommand::new(BIN)
        .args([
            "micro",
            "--sets",
            "nxp",
            "--scale",
            "0.01",
            "--no-history",
            "--no-mlock",
            "--no-dma-latency",
            "--no-progress",
            "--export-json",
        ])
        .arg(&json)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(126) || stderr.contains("Permission denied (os error 13)") {
        support::skip_unprivileged("the test binary is not executable by nobody");
        return;
    }
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("RLIMIT_RTPRIO") && stderr.contains("CAP_SYS_NICE"),
        "{stderr}"
    );
    assert!(!stderr.contains("--policy"), "{stderr}");
    // The figures it could measure are kept.
    assert_eq!(support::read_json(&json)["kind"], "micro");
}

/// Issue 12, item 7: `preempt run` printed only the report's path; the verdict was in the HTML
/// alone. Now the same summary is printed in at most 15 lines with the paths.
#[test]
fn the_report_verdict_fits_a_terminal() {
    let d = tempfile::tempdir().unwrap();
    for (name, bytes) in preempt_cli::report::sample::all() {
        std::fs::write(d.path().join(name), bytes).unwrap();
    }
    let inputs = preempt_cli::results::input::load_many(&[d.path().to_path_buf()]).unwrap();
    let v = preempt_cli::report::verdict(&inputs);
    let lines = preempt_cli::app::run::terminal_verdict(&v);
    let text = lines.join("\n");
    assert!(lines.len() + 2 <= 15, "{text}");
    assert!(lines[0].starts_with("verdict ["), "{text}");
    assert!(text.contains("Readiness check"), "{text}");
    assert!(text.contains("Worst latency"), "{text}");
    assert!(text.contains("missed periods"), "{text}");
    // The HTML shows the very same sentence.
    let r = preempt_cli::report::build(&inputs, &[], "t").unwrap();
    assert!(
        r.html.contains(&preempt_cli::report::html::esc(&v.text)),
        "{}",
        v.text
    );
}

/// Issue 12, item 8: result files were 0600 whatever the umask and root's under `sudo`. Now
/// they honour the umask (0644 under 022) and belong to SUDO_UID/SUDO_GID.
#[test]
fn result_files_honour_the_umask_and_belong_to_the_sudo_user() {
    use std::os::unix::fs::MetadataExt;
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("check.json");
    let out = StdCommand::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 022; exec {BIN} check --no-history --export-json {}",
            json.display()
        ))
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 4)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = std::fs::metadata(&json).unwrap();
    assert_eq!(m.mode() & 0o777, 0o644);
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        assert_eq!((m.uid(), m.gid()), (65534, 65534));
    } else {
        support::skip_unprivileged("not root: the SUDO_UID hand-over is not checked");
    }
}

/// Issue 12, item 9: `--break-at` needs tracefs, which a fresh boot often does not mount. Now it
/// is mounted when we may (root), and otherwise the note says exactly how.
#[test]
fn break_at_mounts_tracefs_or_says_how() {
    use preempt_cli::measure::latency::BreakHook;
    let d = tempfile::tempdir().unwrap();
    let place = d.path().join("tracing");
    std::fs::create_dir(&place).unwrap();
    let opened = BreakHook::open_in(&[&place], &place);
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        let (_, note) = opened.unwrap();
        let note = note.expect("a note when tracefs cannot be mounted");
        assert!(note.contains("sudo mount -t tracefs nodev"), "{note}");
        support::skip_unprivileged("not root: the tracefs mount itself is not checked");
        return;
    }
    let (_, note) = opened.unwrap();
    let mounted = preempt_io::sys::mount::is_tracefs(&place).unwrap();
    let umount = StdCommand::new("umount").arg(&place).status();
    assert!(mounted, "tracefs mounted on {}", place.display());
    assert!(note.is_none(), "{note:?}");
    assert!(umount.unwrap().success(), "umount {}", place.display());
}

/// Issue 12, item 6: hints named flags the command does not have (`micro` suggested
/// `--policy`, `--cpus`). Every hint of every warning, as each measuring command words it,
/// names only flags of that command.
#[test]
fn hints_name_only_flags_the_command_has() {
    use clap::CommandFactory;
    use preempt_cli::warnings::Warning;
    let all = [
        Warning::NotRealTimePolicy {
            policy: "other".into(),
        },
        Warning::RealTimeRefused {
            requested: "SCHED_FIFO 80".into(),
            error: "EPERM".into(),
            grant: preempt_cli::error::privilege_hint(&preempt_io::sys::sched::Policy::Fifo {
                priority: 80,
            }),
        },
        Warning::MlockFailed { error: "e".into() },
        Warning::MlockDisabled,
        Warning::NotPreemptRt {
            model: "none".into(),
        },
        Warning::GovernorNotPerformance {
            cpus: vec![0],
            governor: "powersave".into(),
        },
        Warning::VirtualMachine {
            hypervisor: "kvm".into(),
        },
        Warning::CpuDmaLatencyUnset { error: "e".into() },
        Warning::SmtSiblings { cpus: vec![0, 1] },
        Warning::NotIsolated,
        Warning::DeadlineUnpinned,
        Warning::TimerSlackFailed { error: "e".into() },
        Warning::MissedPeriods { count: 3 },
        Warning::ShortRun { samples: 10 },
        Warning::Interrupted,
    ];
    let cli = preempt_cli::cli::Cli::command();
    for (kind, sub) in [
        ("check", "check"),
        ("latency", "latency"),
        ("matrix", "matrix"),
        ("wakeup", "wakeup"),
        ("micro", "micro"),
        ("rtio_bench", "rtio-bench"),
        ("run", "run"),
    ] {
        let cmd = cli.find_subcommand(sub).unwrap();
        for w in &all {
            let hint = w.hint_in(kind);
            for flag in hint
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .filter_map(|t| t.strip_prefix("--"))
            {
                assert!(
                    cmd.get_arguments().any(|a| a.get_long() == Some(flag)),
                    "`preempt {sub}`: hint of {} names --{flag}, which it does not have: {hint}",
                    w.code()
                );
            }
        }
    }
}
