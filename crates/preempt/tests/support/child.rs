//! Running apps and examples in child processes under a watchdog, for the test binaries.
//!
//! An app owns process-wide state (memory locking, real-time threads, the exit code), so each
//! test runs its app in a child: either an example binary, or the test binary itself
//! re-executed with `PREEMPT_TEST_CHILD=<app>` and the filter `child` (the test binary's
//! `child` test then runs that app and exits with its code). A watchdog kills a child that
//! does not finish in time, so a hang fails the test instead of stalling CI. Without
//! real-time privileges the children run in soft mode (`PREEMPT_SOFT=1`), which exercises the
//! same queues and locks under SCHED_OTHER; the tests say so on stderr.
//!
//! Include it with `#[path = "support/child.rs"] mod child;`.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that names the app a re-executed test binary runs.
pub(crate) const CHILD_ENV: &str = "PREEMPT_TEST_CHILD";

/// The path of the example binary `name` built beside this test binary
/// (`target/<profile>/deps/<test>-<hash>` -> `target/<profile>/examples/<name>`); a missing one
/// fails the test with how to build it.
pub(crate) fn example(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run the whole suite (`cargo test -p preempt`), which builds the examples",
        path.display()
    );
    path
}

/// Whether this process may run SCHED_FIFO threads up to `max_priority` and lock its memory.
pub(crate) fn privileged(max_priority: u8) -> bool {
    use preempt_io::sys::{caps, limits};
    let nice = caps::has_effective(caps::Capability::SysNice).unwrap_or(false)
        || limits::rtprio().is_ok_and(|l| l.allows(u64::from(max_priority)));
    let lock = caps::has_effective(caps::Capability::IpcLock).unwrap_or(false)
        || limits::memlock().is_ok_and(|l| l.soft.is_none());
    nice && lock
}

/// Sets `PREEMPT_SOFT=1` on `cmd` (and says so) unless this process has the privileges for
/// an app whose highest priority is `max_priority`; with `PREEMPT_REQUIRE_PRIVILEGED=1` (CI)
/// a missing privilege fails the test instead.
pub(crate) fn soft_unless_privileged(cmd: &mut Command, what: &str, max_priority: u8) {
    if !privileged(max_priority) {
        assert!(
            std::env::var_os("PREEMPT_REQUIRE_PRIVILEGED").is_none_or(|v| v != "1"),
            "`{what}` needs SCHED_FIFO up to priority {max_priority} (root, CAP_SYS_NICE or \
             RLIMIT_RTPRIO >= {max_priority}) and unlimited locked memory (CAP_IPC_LOCK or \
             RLIMIT_MEMLOCK unlimited), and PREEMPT_REQUIRE_PRIVILEGED=1 forbids the soft-mode \
             fallback"
        );
        eprintln!("note: no real-time privileges here; running `{what}` with PREEMPT_SOFT=1");
        cmd.env("PREEMPT_SOFT", "1");
    }
}

/// Runs `cmd` with its output captured; a child that does not finish in `timeout` is killed
/// and fails the test with what it printed. stdout and stderr are read while the child runs
/// (by two threads): a child that prints more than a pipe holds (64 KiB, e.g. an app's JSON
/// statistics) would otherwise block in `write` and never finish.
///
/// Under user-mode emulation (qemu-user: CI's arm64 stage) a child that hangs is started again,
/// up to [`EMULATED_ATTEMPTS`] times in all, and the test says so: qemu's own spin locks know
/// no priorities, and an app's SCHED_FIFO executors can livelock inside them (the runtime warns
/// of it: `preempt::readiness`; 2 runs in 60 of `runtime_tasks`' `rtic_sync` hung under
/// qemu-user 7.2, both higher executors spinning in qemu's text). Natively a hang fails at once.
pub(crate) fn run_with_watchdog(mut cmd: Command, what: &str, timeout: Duration) -> Output {
    let attempts = match preempt_io::sys::cpu::user_mode_emulation() {
        Some(_) => EMULATED_ATTEMPTS,
        None => 1,
    };
    let mut attempt = 1;
    loop {
        match run_once(&mut cmd, timeout) {
            Ok(output) => return output,
            Err((out, err)) if attempt < attempts => {
                eprintln!(
                    "note: `{what}` did not finish within {timeout:?} under qemu-user (attempt \
                     {attempt} of {attempts}): the emulator's spin locks can livelock SCHED_FIFO \
                     threads; starting it again\nstdout:\n{}\nstderr:\n{}",
                    text(&out),
                    text(&err)
                );
                attempt += 1;
            }
            Err((out, err)) => panic!(
                "`{what}` did not finish within {timeout:?} (killed{})\nstdout:\n{}\nstderr:\n{}",
                if attempts > 1 {
                    format!(", {attempts} attempts under qemu-user")
                } else {
                    String::new()
                },
                text(&out),
                text(&err)
            ),
        }
    }
}

/// Attempts of a hung child under user-mode emulation (see [`run_with_watchdog`]).
pub(crate) const EMULATED_ATTEMPTS: u32 = 3;

/// One run of `cmd` under the watchdog: its output, or what it printed before it was killed.
fn run_once(cmd: &mut Command, timeout: Duration) -> Result<Output, (Vec<u8>, Vec<u8>)> {
    use std::io::Read;
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                p.read_to_end(&mut buf).unwrap();
            }
            buf
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Ok(Output {
                status,
                stdout: stdout.join().unwrap(),
                stderr: stderr.join().unwrap(),
            });
        }
        if start.elapsed() > timeout {
            child.kill().unwrap();
            child.wait().unwrap();
            return Err((stdout.join().unwrap(), stderr.join().unwrap()));
        }
        pause(Duration::from_millis(5));
    }
}

/// Re-executes this test binary to run `app` (see the module docs) with `env` added, soft
/// unless privileged for `max_priority`, under the watchdog.
pub(crate) fn run_child(
    app: &str,
    env: &[(&str, &str)],
    max_priority: u8,
    timeout: Duration,
) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, app)
        .envs(env.iter().copied());
    soft_unless_privileged(&mut cmd, app, max_priority);
    run_with_watchdog(cmd, &format!("child app {app}"), timeout)
}

/// [`run_child`] for a child that must succeed: returns its stdout; a failure fails the test
/// with what the child printed.
pub(crate) fn run_child_ok(
    app: &str,
    env: &[(&str, &str)],
    max_priority: u8,
    timeout: Duration,
) -> String {
    let out = run_child(app, env, max_priority, timeout);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    stdout
}

/// A child app by name: `(name, run)`, `run` returning the exit code.
pub(crate) type ChildApp = (&'static str, fn() -> i32);

/// The body of a test binary's `child` test: in a re-executed child, runs the app of `apps`
/// that [`CHILD_ENV`] names and exits with its code; in the parent run, returns.
pub(crate) fn run_requested_app(apps: &[ChildApp]) {
    let Some(name) = requested_app() else {
        return; // the parent run: nothing to do here
    };
    let Some((_, run)) = apps.iter().find(|(n, _)| *n == name) else {
        panic!("unknown child app {name}");
    };
    std::process::exit(run());
}

/// The app this process should run, when it is a re-executed child.
pub(crate) fn requested_app() -> Option<String> {
    std::env::var(CHILD_ENV).ok()
}

/// Lossy UTF-8 of captured output.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[allow(
    clippy::disallowed_methods,
    reason = "test helpers: the watchdog's polling and ordinary threads' pacing"
)]
/// Sleeps (test code only: never on a real-time path).
pub(crate) fn pause(d: Duration) {
    std::thread::sleep(d);
}
