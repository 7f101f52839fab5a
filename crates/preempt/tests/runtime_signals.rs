//! Apps stopped from outside keep their results (issue 11, item 5): SIGINT and SIGTERM sent
//! to an app process stop its executors in order, the summary is printed (marked partial),
//! `PREEMPT_STATS_JSON` is written (with `stopped_by`), and the process exits with 130 /
//! 143; a second signal ends an app whose job does not finish at once, unless it repeats the
//! first (GNU `timeout` signals the app and its process group: one stop).
//!
//! A test binary without libtest (`harness = false`): the app must run on the process's
//! main thread, as in a real program, so that every thread of the process has the stop
//! signals blocked. Run as `runtime_signals`, it is the parent: it starts itself again with
//! `PREEMPT_TEST_CHILD=<app>`, waits until the app is running (a line on its stdout), sends
//! the signal with kill(2) as a shell would, and checks what the child left behind.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use preempt_io::sys::signal;

#[path = "support/child.rs"]
mod child_process;
use child_process::{pause, requested_app, soft_unless_privileged, text};

/// A 1 kHz periodic task that never ends by itself; it says when it has run 20 jobs.
#[preempt::app(main = false, summary = true)]
mod forever {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 2, period = 1.millis(), local = [jobs: u32 = 0])]
    fn tick(cx: tick::Context) {
        *cx.local.jobs += 1;
        if *cx.local.jobs == 20 {
            println!("running");
        }
    }
}

/// A job that never finishes: the first signal cannot stop the app, the second must.
#[preempt::app(main = false, summary = true)]
mod stuck {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        spin::spawn().unwrap();
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 1)]
    fn spin(_: spin::Context) {
        println!("running");
        loop {
            // Sleeps, so that the stuck job does not hog a CPU of the shared machine.
            super::child_process::pause(std::time::Duration::from_millis(5));
        }
    }
}

/// What a signalled child left behind.
struct Outcome {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    json: Option<String>,
}

/// Runs `app` in a child, sends it `signals` (each after the app said it runs, 50 ms
/// apart), and waits for it to end (killed after 30 s, which fails the test).
fn signal_child(app: &str, signals: &[i32]) -> Outcome {
    let json: PathBuf =
        std::env::temp_dir().join(format!("preempt-signals-{app}-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&json);
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.env(child_process::CHILD_ENV, app)
        .env(preempt::STATS_JSON_ENV, &json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    soft_unless_privileged(&mut cmd, app, 2);
    let mut child = cmd.spawn().unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if line == "running" {
                let _ = tx.send(());
            }
            lines.push(line);
        }
        lines.join("\n")
    });
    let started = rx.recv_timeout(Duration::from_secs(30)).is_ok();
    if started {
        for (i, &sig) in signals.iter().enumerate() {
            if i > 0 {
                pause(Duration::from_millis(50));
            }
            signal::signal_process(child.id(), sig).unwrap();
        }
    }
    let begin = Instant::now();
    while child.try_wait().unwrap().is_none() && begin.elapsed() < Duration::from_secs(30) {
        pause(Duration::from_millis(5));
    }
    let timed_out = child.try_wait().unwrap().is_none();
    if timed_out {
        child.kill().unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stdout = reader.join().unwrap();
    let stderr = text(&out.stderr);
    assert!(
        started && !timed_out,
        "child `{app}` (started: {started}) did not end after {signals:?}\nstdout:\n{stdout}\n\
         stderr:\n{stderr}"
    );
    let json_text = std::fs::read_to_string(&json).ok();
    let _ = std::fs::remove_file(&json);
    Outcome {
        status: out.status,
        stdout,
        stderr,
        json: json_text,
    }
}

fn check_stopped_in_order(sig: i32, name: &str, code: i32) {
    let out = signal_child("forever", &[sig]);
    let context = format!("stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    assert_eq!(out.status.code(), Some(code), "{context}");
    assert!(
        out.stderr.contains(&format!(
            "task statistics (monotonic clock), partial: stopped by {name}"
        )),
        "summary missing or not marked partial\n{context}"
    );
    assert!(out.stderr.contains("response-time analysis"), "{context}");
    let json = out
        .json
        .unwrap_or_else(|| panic!("PREEMPT_STATS_JSON not written\n{context}"));
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["stopped_by"], name, "{json}");
    let tick = value["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["stats"]["name"] == "tick")
        .unwrap_or_else(|| panic!("no task `tick` in {json}"));
    let completions = tick["stats"]["completions"].as_u64().unwrap();
    assert!(
        completions >= 20,
        "the jobs run before the signal are lost: {json}"
    );
}

fn sigint_stops_in_order_and_keeps_the_statistics() {
    check_stopped_in_order(signal::SIGINT, "SIGINT", 130);
}

fn sigterm_stops_in_order_and_keeps_the_statistics() {
    check_stopped_in_order(signal::SIGTERM, "SIGTERM", 143);
}

fn a_second_signal_ends_an_app_whose_job_does_not_finish() {
    let out = signal_child("stuck", &[signal::SIGINT, signal::SIGTERM]);
    let context = format!("stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    assert_eq!(out.status.code(), Some(143), "{context}");
    assert!(
        out.stderr.contains("SIGINT: stopping app `stuck`"),
        "{context}"
    );
    assert!(
        out.stderr
            .contains("second SIGTERM: app `stuck` exits at once"),
        "{context}"
    );
    assert!(
        out.json.is_none(),
        "the statistics cannot be complete here: {context}"
    );
}

/// The same signal twice from the same process, 50 ms apart (what GNU `timeout` does: the
/// app, then its process group): one stop, statistics kept.
fn the_same_signal_twice_from_one_sender_is_one_stop() {
    let out = signal_child("forever", &[signal::SIGTERM, signal::SIGTERM]);
    let context = format!("stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    assert_eq!(out.status.code(), Some(143), "{context}");
    assert!(!out.stderr.contains("exits at once"), "{context}");
    assert!(
        out.stderr.contains("SIGTERM again from the same process"),
        "{context}"
    );
    let json = out
        .json
        .unwrap_or_else(|| panic!("PREEMPT_STATS_JSON not written\n{context}"));
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["stopped_by"], "SIGTERM", "{json}");
}

/// GNU `timeout` itself, as users bound a run: the app stops in order and writes its
/// statistics, and `timeout` reports its own exit code 124.
fn an_app_under_gnu_timeout_keeps_its_statistics() {
    let json: PathBuf = std::env::temp_dir().join(format!(
        "preempt-signals-timeout-{}.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&json);
    // Long enough for the app to block the stop signals before `timeout` sends them; an
    // emulated CPU (qemu-user, CI's arm64 stage) starts it several times slower.
    let seconds = if preempt_io::sys::cpu::user_mode_emulation().is_some() {
        "20"
    } else {
        "3"
    };
    let mut cmd = Command::new("timeout");
    cmd.arg(seconds)
        .arg(std::env::current_exe().unwrap())
        .env(child_process::CHILD_ENV, "forever")
        .env(preempt::STATS_JSON_ENV, &json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    soft_unless_privileged(&mut cmd, "forever", 2);
    let out = cmd
        .output()
        .expect("GNU timeout (coreutils) must be installed");
    let context = format!(
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(124), "{context}");
    assert!(!text(&out.stderr).contains("exits at once"), "{context}");
    let written = std::fs::read_to_string(&json);
    let _ = std::fs::remove_file(&json);
    let json =
        written.unwrap_or_else(|e| panic!("PREEMPT_STATS_JSON not written ({e})\n{context}"));
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["stopped_by"], "SIGTERM", "{json}");
}

fn main() {
    if let Some(app) = requested_app() {
        let code = match app.as_str() {
            "forever" => forever::run(),
            "stuck" => stuck::run(),
            other => panic!("unknown child app {other}"),
        };
        std::process::exit(code);
    }
    let tests: [(&str, fn()); 5] = [
        (
            "sigint_stops_in_order_and_keeps_the_statistics",
            sigint_stops_in_order_and_keeps_the_statistics,
        ),
        (
            "sigterm_stops_in_order_and_keeps_the_statistics",
            sigterm_stops_in_order_and_keeps_the_statistics,
        ),
        (
            "a_second_signal_ends_an_app_whose_job_does_not_finish",
            a_second_signal_ends_an_app_whose_job_does_not_finish,
        ),
        (
            "the_same_signal_twice_from_one_sender_is_one_stop",
            the_same_signal_twice_from_one_sender_is_one_stop,
        ),
        (
            "an_app_under_gnu_timeout_keeps_its_statistics",
            an_app_under_gnu_timeout_keeps_its_statistics,
        ),
    ];
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut ran = 0;
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        eprint!("test {name} ... ");
        test();
        eprintln!("ok");
        ran += 1;
    }
    eprintln!("test result: ok. {ran} passed");
}
