//! The instance is removed after a normal exit, a panic, Ctrl-C (SIGINT) and SIGKILL, and
//! another tracefs user's settings are untouched.
//!
//! Each case runs this test binary again as a child (`helper` below, selected by an
//! environment variable) that starts a session and then ends the way the case says.
//! Needs root; skips with a message without it, and fails under
//! `PREEMPT_REQUIRE_PRIVILEGED=1`.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use preempt_trace::{Options, Session, tracefs};

const MODE: &str = "PREEMPT_TRACE_HELPER_MODE";

/// The child side: start a session, print its instance, end as `MODE` says.
#[test]
fn helper() {
    let Ok(mode) = std::env::var(MODE) else {
        return; // not a child: nothing to do
    };
    if mode == "sigint" {
        // The case is a Ctrl-C in a terminal, which ends a process by SIGINT's default action.
        // A test run started in the background by a shell without job control inherits
        // SIGINT ignored, and the child would wait for ever: restore the default.
        // SAFETY: `signal` with SIG_DFL installs no handler; no other thread of this child
        // changes signal dispositions.
        unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
    }
    let session = Session::start(Options {
        cpus: Some(vec![0]),
        ..Options::default()
    })
    .unwrap();
    println!("INSTANCE {}", session.instance_dir().unwrap().display());
    match mode.as_str() {
        "normal" => drop(session),
        "panic" => panic!("helper panics with a live session"),
        _ => loop {
            // Wait for the parent's signal.
            std::thread::park_timeout(Duration::from_secs(1));
        },
    }
}

fn run_child(mode: &str) -> PathBuf {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "helper", "--nocapture", "--test-threads=1"])
        .env(MODE, mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let dir = loop {
        let Some(line) = lines.next() else {
            panic!(
                "{mode}: child ended before starting its session: {:?}",
                child.wait()
            );
        };
        let line = line.unwrap();
        // The harness prints `test helper ... ` before the test's own output.
        if let Some((_, d)) = line.split_once("INSTANCE ") {
            break PathBuf::from(d.trim());
        }
    };
    assert!(dir.is_dir(), "{mode}: the live session has its instance");
    match mode {
        "sigint" | "sigkill" => {
            let sig = if mode == "sigint" { "-INT" } else { "-KILL" };
            let ok = Command::new("kill")
                .args([sig, &child.id().to_string()])
                .status()
                .unwrap();
            assert!(ok.success());
        }
        _ => {}
    }
    let status = wait_bounded(&mut child, mode);
    assert_eq!(status.success(), mode == "normal", "{mode}: {status:?}");
    dir
}

/// The child's exit status; a child still alive after 30 s is killed and the test fails
/// (a hang is a failure, not a stuck CI job).
fn wait_bounded(child: &mut std::process::Child, mode: &str) -> std::process::ExitStatus {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{mode}: the child did not end within 30 s; killed");
        }
        std::thread::park_timeout(Duration::from_millis(20));
    }
}

fn gone_soon(dir: &Path) -> bool {
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        if !dir.exists() {
            return true;
        }
        std::thread::park_timeout(Duration::from_millis(20));
    }
    false
}

/// Settings of the global buffer and of a foreign instance that a session must not change.
fn settings(root: &Path, other: &Path) -> Vec<(String, String)> {
    [
        (root, "tracing_on"),
        (root, "trace_clock"),
        (root, "buffer_size_kb"),
        (root, "set_event"),
        (root, "current_tracer"),
        (root, "tracing_cpumask"),
        (other, "tracing_on"),
        (other, "trace_clock"),
        (other, "buffer_size_kb"),
        (other, "set_event"),
        (other, "tracing_cpumask"),
    ]
    .into_iter()
    .map(|(d, f)| {
        let p = d.join(f);
        (p.display().to_string(), tracefs::read_file(&p).unwrap())
    })
    .collect()
}

#[test]
fn the_instance_is_gone_after_every_kind_of_exit_and_others_are_untouched() {
    if std::env::var(MODE).is_ok() {
        return; // we are a helper child
    }
    let root = match tracefs::locate() {
        Ok(r) => r,
        Err(e) => return common::skip_or_fail("instance cleanup", e).unwrap_or(()),
    };
    // Another tracefs user: an instance with its own settings.
    let other = root.join(format!("instances/other-user-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir(&other) {
        return common::skip_or_fail("instance cleanup (creating an instance)", e).unwrap_or(());
    }
    let _remove = RemoveOnDrop(other.clone());
    std::fs::write(other.join("trace_clock"), "global").unwrap();
    std::fs::write(other.join("buffer_size_kb"), "64").unwrap();
    std::fs::write(other.join("events/sched/sched_switch/enable"), "1").unwrap();
    std::fs::write(other.join("tracing_cpumask"), "1").unwrap();
    let before = settings(&root, &other);
    for mode in ["normal", "panic", "sigint", "sigkill"] {
        let dir = run_child(mode);
        assert!(gone_soon(&dir), "{mode}: {} is still there", dir.display());
    }
    assert_eq!(settings(&root, &other), before);
}

/// Removes the foreign instance however the test ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir(&self.0) {
            eprintln!("cannot remove {}: {e}", self.0.display());
        }
    }
}
