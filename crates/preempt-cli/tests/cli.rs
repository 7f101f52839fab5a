//! CLI integration tests: every subcommand end to end, plus bad input and exit codes.
//!
//! Runs are kept short (`--loops 200 --interval 1000`, `--duration 100ms`) so the whole file
//! takes seconds. Tests that need SCHED_FIFO skip with a message when not privileged.

use std::io::BufReader;
use std::process::{Command as StdCommand, Stdio};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_preempt");

fn preempt() -> Command {
    let mut c = Command::new(BIN);
    c.env("PREEMPT_HISTORY", support::test_history());
    c.env_remove("RUST_BACKTRACE");
    c
}

/// Runs `cmd`, which must succeed (else the test fails with its stderr and stdout), and
/// returns its stdout.
fn success_stdout(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Runs `preempt <args> --export-json <file>`, which must succeed, and returns its stdout and
/// the result file it wrote.
fn success_with_result_file(args: &[&str]) -> (String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("result.json");
    let stdout = success_stdout(preempt().args(args).arg("--export-json").arg(&file));
    (stdout, support::read_json(&file))
}

/// Asserts a usage error: exit 2 and one line on stderr that starts with `preempt: ` and
/// contains `needle`.
fn assert_usage_error(args: &[&str], needle: &str) {
    let out = preempt().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(
        stderr.lines().count(),
        1,
        "{args:?}: not one line: {stderr}"
    );
    assert!(
        stderr.starts_with("preempt: ") && stderr.contains(needle),
        "{args:?}: {stderr}"
    );
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn help_documents_subcommands_and_exit_codes() {
    preempt()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("check").and(predicate::str::contains("latency")))
        .stdout(predicate::str::contains("Exit codes:").and(predicate::str::contains("130")));
    preempt()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("preempt "));
    preempt().assert().code(2);
}

#[test]
fn check_prints_every_item_and_exit_code_follows_failures() {
    let out = preempt().arg("check").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Kernel preemption model") && text.contains("summary:"),
        "{text}"
    );
    let failed = text.contains("  FAIL  ");
    assert_eq!(
        out.status.code(),
        Some(if failed { 4 } else { 0 }),
        "{text}"
    );

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("check.json");
    let out = preempt()
        .args(["check", "--json", "--export-json"])
        .arg(&file)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "check");
    assert_eq!(v["schema_version"], 1);
    let items = v["data"]["items"].as_array().unwrap();
    assert!(items.len() >= 15);
    assert!(items.iter().any(|i| i["id"] == "fair-server"));
    assert!(
        text.contains("Wake-up from idle (measured)"),
        "text output lacks the idle wake-up item: {text}"
    );
    let idle = items
        .iter()
        .find(|i| i["id"] == "idle-wakeup")
        .expect("idle-wakeup item");
    let w = &v["data"]["idle_wakeup"];
    if w.is_null() {
        support::skip_unprivileged(&format!(
            "the idle wake-up probe needs root: {}",
            idle["value"]
        ));
    } else {
        let ns = |k: &str| w[k].as_u64().unwrap_or_else(|| panic!("{k}: {w}"));
        assert_eq!(ns("wakeups_per_mode"), 300, "{w}");
        assert_eq!(ns("period_ns"), 1_000_000, "{w}");
        assert!(ns("idle_p50_ns") > 0 && ns("polling_p50_ns") > 0, "{w}");
        // The difference is taken over the wake-ups that came from a halt when there are
        // enough of them (>= 30), else over all of them.
        let from = w["halted_p50_ns"].as_u64().unwrap_or(ns("idle_p50_ns"));
        assert_eq!(
            w["extra_ns"].as_i64().unwrap(),
            from as i64 - ns("polling_p50_ns") as i64,
            "{w}"
        );
        if let Some(halted) = w["halted_wakeups"].as_u64() {
            assert!(halted <= 300, "{w}");
            assert_eq!(w["halted_p50_ns"].is_null(), halted < 30, "{w}");
        }
        let cpu = ns("cpu");
        assert!(
            preempt_io::sys::cpu::online_cpus()
                .unwrap()
                .contains(&(cpu as usize)),
            "{w}"
        );
        assert!(
            idle["value"]
                .as_str()
                .unwrap()
                .contains("us per wake-up from idle")
        );
        // Nobody else held the PM QoS request, and the CPU was idle: then the held blocks
        // cannot halt, whatever the timing.
        if w["dma_latency_found_us"] == 2_000_000_000_i64 && idle["status"] != "info" {
            if let Some(h) = w["polling_halts"].as_u64() {
                assert!(h <= 2 * 12, "the CPU halted with cpu_dma_latency held: {w}");
            }
        }
    }
    assert_eq!(
        support::read_json(&file)["data"]["items"]
            .as_array()
            .unwrap()
            .len(),
        items.len()
    );
    assert_eq!(v["sysinfo"]["argv"][1], "check");
}

#[test]
fn closed_stdout_exits_zero() {
    let mut child = StdCommand::new(BIN)
        .env("PREEMPT_HISTORY", support::test_history())
        .args(["check", "--no-history"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before the report is printed
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn latency_writes_json_csv_and_trace() {
    if !support::can_fifo() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (j, c, t) = (
        dir.path().join("r.json"),
        dir.path().join("r.csv"),
        dir.path().join("t.csv"),
    );
    let stdout = success_stdout(
        preempt()
            .args([
                "latency",
                "--loops",
                "200",
                "--interval",
                "1000",
                "--cpus",
                "0",
                "--work-us",
                "20",
            ])
            .arg("--export-json")
            .arg(&j)
            .arg("--export-csv")
            .arg(&c)
            .arg("--trace-samples")
            .arg(&t),
    );
    assert!(
        stdout.contains("wake-up latency")
            && stdout.contains("compute step")
            && stdout.contains("verdict:"),
        "{stdout}"
    );
    let v = support::read_json(&j);
    assert_eq!(
        (v["complete"].as_bool(), v["interrupted"].as_bool()),
        (Some(true), Some(false))
    );
    let th = &v["data"]["threads"][0];
    assert_eq!(th["releases"], 200);
    let samples = th["samples"].as_u64().unwrap();
    assert_eq!(samples + th["missed_periods"].as_u64().unwrap(), 200);
    assert_eq!(th["latency"]["summary"]["count"].as_u64(), Some(samples));
    assert!(th["response"]["summary"]["count"].as_u64() == Some(samples));
    assert!(
        !th["latency"]["histogram"]["buckets"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(v["data"]["settings"]["policy"]["priority"], 80);
    assert!(
        v["data"]["overhead"]["clock_read"]["p50_ns"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        v["data"]["ledger"]["verdict"]
            .as_str()
            .unwrap()
            .starts_with("clean")
            || v["data"]["ledger"]["verdict"]
                .as_str()
                .unwrap()
                .starts_with("contaminated: ")
    );
    let csv = std::fs::read_to_string(&c).unwrap();
    assert_eq!(csv.lines().count(), 2);
    assert!(csv.starts_with("thread,cpu,policy,"));
    let trace = std::fs::read_to_string(&t).unwrap();
    assert_eq!(trace.lines().count() as u64, samples + 1);
    assert!(trace.starts_with("thread,cpu,cycle,release_ns,wake_ns,latency_ns"));
}

#[test]
fn latency_json_on_stdout_for_other_and_deadline() {
    if !support::can_fifo() {
        return;
    }
    for args in [
        &["--policy", "other", "--nice", "5", "--interval", "500"][..],
        &[
            "--policy",
            "deadline",
            "--runtime",
            "200",
            "--interval",
            "2000",
        ][..],
        &[
            "--policy",
            "rr",
            "--priority",
            "10",
            "--no-mlock",
            "--no-dma-latency",
        ][..],
    ] {
        let out = preempt()
            .args(["latency", "--loops", "100", "--json"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["kind"], "latency");
        let threads = v["data"]["threads"].as_array().unwrap();
        assert_eq!(
            threads.len(),
            v["sysinfo"]["cpus_online"].as_array().unwrap().len()
        );
        assert!(threads.iter().all(|t| t["releases"] == 100));
        let stderr = String::from_utf8_lossy(&out.stderr);
        if args[1] == "other" {
            assert!(stderr.contains("not a real-time policy"), "{stderr}");
        }
        if args[1] == "deadline" {
            assert_eq!(v["data"]["settings"]["pinned"], false);
            assert_eq!(v["data"]["settings"]["policy"]["runtime_ns"], 200_000);
        }
        if args[1] == "rr" {
            assert!(
                stderr.contains("mlock-disabled") || stderr.contains("memory is not locked"),
                "{stderr}"
            );
        }
    }
}

#[test]
fn latency_bad_input_is_one_line_naming_the_flag() {
    assert_usage_error(
        &["latency", "--priority", "120"],
        "--priority 120 is out of range",
    );
    assert_usage_error(
        &["latency", "--policy", "deadline"],
        "--policy deadline needs --runtime",
    );
    assert_usage_error(&["latency", "--cpus", "999"], "CPU 999 is not online");
    assert_usage_error(&["latency", "--interval", "abc"], "--interval");
    assert_usage_error(&["latency", "--frobnicate"], "--frobnicate");
    assert_usage_error(&["latency", "--policy", "sporadic"], "--policy");
    assert_usage_error(&["latency", "--loops", "5", "--duration", "1s"], "--loops");
    assert_usage_error(
        &["latency", "--work-us", "2000"],
        "--work-us 2000 does not fit",
    );
    assert_usage_error(
        &[
            "latency",
            "--export-json",
            "/nonexistent/dir/r.json",
            "--loops",
            "10",
        ],
        "does not exist",
    );
}

/// Issue 40, item 5: `--explain=0` silently meant "above p99.9", and `--trace-out` without
/// `--explain` said "the following required arguments were not provided:" with an empty list.
#[test]
fn explain_zero_and_trace_out_without_explain_are_refused_naming_the_flag() {
    assert_usage_error(
        &["latency", "--explain=0", "--loops", "10"],
        "--explain=0 would explain every sample: give the threshold in us (at least 1",
    );
    assert_usage_error(
        &["latency", "--trace-out", "t.json", "--loops", "10"],
        "--trace-out writes the windows --explain explains: add --explain",
    );
}

#[test]
fn unprivileged_real_time_is_a_privilege_error() {
    use std::os::unix::process::CommandExt;
    if !support::can_fifo() {
        return;
    }
    // Run as `nobody` with RLIMIT_RTPRIO 0: SCHED_FIFO must be refused with the fix named.
    let out = StdCommand::new(BIN)
        .env("PREEMPT_HISTORY", support::test_history())
        .args(["latency", "--loops", "10", "--no-mlock", "--no-dma-latency"])
        .uid(65534)
        .gid(65534)
        .env("PREEMPT_TEST_UNPRIVILEGED", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(126)
        || stderr.contains("Permission denied (os error 13)") && !stderr.contains("preempt:")
    {
        eprintln!("skipped: the test binary is not executable by nobody");
        return;
    }
    let rtprio_allowed = stderr.is_empty() && out.status.success();
    if rtprio_allowed {
        eprintln!("skipped: RLIMIT_RTPRIO lets nobody use SCHED_FIFO here");
        return;
    }
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("permission denied") && stderr.contains("CAP_SYS_NICE"),
        "{stderr}"
    );
}

/// Stress workers must not outlive their run.
fn orphaned_stress_workers() -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmd).contains("__stress") {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        // A live worker's parent is its preempt run; an orphan was re-parented to init.
        if ppid == Some(1) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn stress_runs_and_dies_with_the_run_even_on_ctrl_c_and_sigkill() {
    if !support::can_fifo() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    preempt()
        .args([
            "latency",
            "--loops",
            "200",
            "--cpus",
            "0",
            "--stress",
            "cpu,memory,io,sched",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("stress cpu,memory,io,sched"));

    // Ctrl-C: results so far are written, exit 130.
    let mut child = StdCommand::new(BIN)
        .env("PREEMPT_HISTORY", support::test_history())
        .args([
            "latency",
            "--duration",
            "60s",
            "--cpus",
            "0",
            "--stress",
            "cpu",
            "--export-json",
        ])
        .arg(&j)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    support::wait_for_line(&mut err, "measuring");
    support::sleep_ms(1_500);
    // Partial results are already on disk while the run goes.
    let partial = support::read_json(&j);
    assert_eq!(partial["complete"], false);
    assert!(partial["data"]["threads"][0]["samples"].as_u64().unwrap() > 0);
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill with a valid pid and signal number.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let v = support::read_json(&j);
    assert_eq!(
        (v["complete"].as_bool(), v["interrupted"].as_bool()),
        (Some(true), Some(true))
    );
    let samples = v["data"]["threads"][0]["samples"].as_u64().unwrap();
    assert!((500..60_000).contains(&samples), "samples {samples}");
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "interrupted")
    );

    // SIGKILL: no cleanup code runs in preempt; PR_SET_PDEATHSIG must take the worker down.
    let mut child = StdCommand::new(BIN)
        .env("PREEMPT_HISTORY", support::test_history())
        .args([
            "latency",
            "--duration",
            "60s",
            "--cpus",
            "0",
            "--stress",
            "cpu",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    support::wait_for_line(&mut err, "measuring");
    child.kill().unwrap();
    child.wait().unwrap();
    support::sleep_ms(300);
    assert!(
        orphaned_stress_workers().is_empty(),
        "orphans: {:?}",
        orphaned_stress_workers()
    );
}

#[test]
fn matrix_runs_sixteen_cells_and_writes_one_file_each() {
    if !support::can_fifo() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("m");
    let stdout = success_stdout(
        preempt()
            .args(["matrix", "--duration", "100ms", "--cpus", "0", "--out-dir"])
            .arg(&out_dir),
    );
    assert!(
        stdout.contains("SCHED_DEADLINE 800us") && stdout.contains("heavy"),
        "{stdout}"
    );
    let v = support::read_json(&out_dir.join("summary.json"));
    let cells = v["data"]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 16);
    for c in cells {
        assert!(c["error"].is_null(), "{c}");
        let f = out_dir.join(c["result_file"].as_str().unwrap());
        let cell = support::read_json(&f);
        assert_eq!(cell["kind"], "latency");
        assert_eq!(cell["data"]["settings"]["interval_ns"], 4_000_000);
        assert!(
            c["compute"]["count"].as_u64().unwrap() > 0,
            "the control step is timed: {c}"
        );
    }
    assert_eq!(cells.iter().filter(|c| c["stress"] == "heavy").count(), 8);
    assert_eq!(
        std::fs::read_to_string(out_dir.join("summary.csv"))
            .unwrap()
            .lines()
            .count(),
        17
    );
}

#[test]
fn matrix_bad_input() {
    assert_usage_error(&["matrix", "--period", "50"], "--period");
    assert_usage_error(&["matrix", "--duration", "1ms"], "--duration");
    assert_usage_error(&["matrix", "--work-us", "500"], "--work-us 500");
}

#[test]
fn wakeup_measures_every_source_and_skips_gpio_clearly() {
    if !support::can_fifo() {
        return;
    }
    let (stdout, v) = success_with_result_file(&[
        "wakeup",
        "--samples",
        "200",
        "--interval",
        "500",
        "--load",
        "idle",
        "--gpio-chip",
        "/nonexistent/gpiochip0",
    ]);
    assert!(
        stdout.contains("skipped: no GPIO chip at /nonexistent/gpiochip0"),
        "{stdout}"
    );
    let cases = v["data"]["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 5);
    for c in cases.iter().filter(|c| c["source"] != "gpio") {
        let s = &c["latency"]["summary"];
        assert_eq!(s["count"], 200, "{c}");
        assert!(
            s["min_ns"].as_u64().unwrap() > 0 && s["max_ns"].as_u64().unwrap() < 1_000_000_000,
            "{c}"
        );
    }
    let v: Value = serde_json::from_str(&success_stdout(preempt().args([
        "wakeup",
        "--samples",
        "100",
        "--sources",
        "eventfd,signal",
        "--load",
        "stress",
        "--stress",
        "cpu",
        "--json",
    ])))
    .unwrap();
    let cases = v["data"]["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2);
    assert!(
        cases
            .iter()
            .all(|c| c["load"] == "cpu" && c["latency"]["summary"]["count"] == 100)
    );
}

#[test]
fn wakeup_bad_input() {
    assert_usage_error(&["wakeup", "--priority", "1"], "--priority");
    assert_usage_error(
        &["wakeup", "--priority", "100"],
        "--priority 100 is out of range",
    );
    assert_usage_error(&["wakeup", "--sources", "carrier-pigeon"], "--sources");
    assert_usage_error(&["wakeup", "--samples", "0"], "--samples");
}

#[test]
fn break_at_stops_the_run_at_the_first_late_sample() {
    if !support::can_fifo() {
        return;
    }
    // 1 us is exceeded by (nearly) every wake-up: the run must stop almost at once.
    let (stdout, v) = success_with_result_file(&[
        "latency",
        "--loops",
        "5000",
        "--cpus",
        "0",
        "--break-at",
        "1",
    ]);
    assert!(stdout.contains("break-at: thread 0 cycle"), "{stdout}");
    assert_eq!(v["interrupted"], true);
    let b = &v["data"]["break_event"];
    assert!(b["latency_ns"].as_u64().unwrap() > 1_000, "{b}");
    let samples = v["data"]["threads"][0]["samples"].as_u64().unwrap();
    assert_eq!(
        b["cycle"].as_u64().unwrap() + 1,
        v["data"]["threads"][0]["releases"].as_u64().unwrap()
    );
    assert!(samples < 5000, "the run did not stop: {samples} samples");
}
