//! Running one framework child process under a watchdog: its stdout and stderr are drained
//! on two threads (a full pipe would block the child), and the parent polls for its exit,
//! killing it when it outlives its time limit or when Ctrl-C asked the run to stop.
//!
//! The child runs in its own process group, so a Ctrl-C on the terminal reaches only the
//! parent, which then kills the child itself: a half-written sample stream is never parsed
//! as a result, and the child never outlives `preempt micro`.
//!
//! ```
//! use std::process::Command;
//! use std::sync::atomic::AtomicBool;
//! use std::time::Duration;
//! use preempt_cli::micro::framework::child::{Ended, run};
//! let mut cmd = Command::new("sh");
//! cmd.args(["-c", "echo out; echo err >&2"]);
//! let out = run(cmd, Duration::from_secs(10), &AtomicBool::new(false)).unwrap();
//! assert!(matches!(out.ended, Ended::Exited(0)));
//! assert_eq!((out.stdout.as_slice(), out.stderr_tail().as_str()), (&b"out\n"[..], "err"));
//! ```

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use preempt_io::sys::clock::{self, ClockId};

/// How often the parent looks at the child (10 ms: invisible next to a child's start-up,
/// and the parent's wake-ups stay rare while the child measures).
pub(crate) const POLL_NS: u64 = 10_000_000;

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it (not ours).
    Signal(i32),
    /// It outlived its time limit and was killed.
    TimedOut,
    /// Ctrl-C asked the run to stop; it was killed.
    Stopped,
}

/// What a child left behind.
#[derive(Debug)]
pub struct Output {
    /// How it ended.
    pub ended: Ended,
    /// Everything it wrote on stdout.
    pub stdout: Vec<u8>,
    /// Everything it wrote on stderr.
    pub stderr: Vec<u8>,
    /// Wall time from spawn to exit.
    pub elapsed: Duration,
}

impl Output {
    /// The last few non-empty lines of stderr, joined by `; ` (for an error message).
    pub fn stderr_tail(&self) -> String {
        let text = String::from_utf8_lossy(&self.stderr);
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        lines[lines.len().saturating_sub(4)..].join("; ")
    }
}

/// Runs `cmd` (stdin from /dev/null, stdout and stderr captured) until it exits, `limit`
/// passes, or `stop` is set; kills it in the last two cases.
pub fn run(mut cmd: Command, limit: Duration, stop: &AtomicBool) -> Result<Output> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let t0 = clock::monotonic_now_ns();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                // A read error ends the capture early; whatever arrived is kept, and a short
                // sample stream is then rejected by the protocol parser.
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out_reader = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err_reader = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let limit_ns = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX);
    let ended = loop {
        if let Some(status) = child.try_wait().context("cannot wait for the child")? {
            break match (status.code(), status.signal()) {
                (Some(code), _) => Ended::Exited(code),
                (None, Some(sig)) => Ended::Signal(sig),
                (None, None) => Ended::Signal(0),
            };
        }
        let now = clock::monotonic_now_ns();
        let verdict = if stop.load(Ordering::Relaxed) {
            Some(Ended::Stopped)
        } else if now.saturating_sub(t0) >= limit_ns {
            Some(Ended::TimedOut)
        } else {
            None
        };
        if let Some(v) = verdict {
            // Kill can only fail if the child already exited, which `wait` then reaps.
            let _ = child.kill();
            child.wait().context("cannot reap the killed child")?;
            break v;
        }
        clock::sleep_until_ns(ClockId::Monotonic, now + POLL_NS).context("clock_nanosleep")?;
    };
    let elapsed = Duration::from_nanos(clock::monotonic_now_ns().saturating_sub(t0));
    let stdout = out_reader
        .join()
        .map_err(|_| anyhow::anyhow!("the stdout reader panicked"))?;
    let stderr = err_reader
        .join()
        .map_err(|_| anyhow::anyhow!("the stderr reader panicked"))?;
    Ok(Output {
        ended,
        stdout,
        stderr,
        elapsed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn a_hanging_child_is_killed_at_its_limit() {
        let out = run(
            sh("echo started; exec sleep 30"),
            Duration::from_millis(200),
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!(out.ended, Ended::TimedOut);
        assert_eq!(out.stdout, b"started\n");
        assert!(out.elapsed < Duration::from_secs(20), "{:?}", out.elapsed);
    }

    #[test]
    fn a_stop_request_kills_the_child() {
        let out = run(
            sh("exec sleep 30"),
            Duration::from_secs(60),
            &AtomicBool::new(true),
        )
        .unwrap();
        assert_eq!(out.ended, Ended::Stopped);
    }

    #[test]
    fn exit_codes_signals_and_large_output_are_reported() {
        let out = run(
            sh("seq 1 200000; echo a >&2; echo b >&2; exit 3"),
            Duration::from_secs(60),
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!(out.ended, Ended::Exited(3));
        // More than a pipe buffer (64 KiB): the readers drain while the child writes.
        assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 200_000);
        assert_eq!(out.stderr_tail(), "a; b");
        let out = run(
            sh("kill -9 $$"),
            Duration::from_secs(60),
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!(out.ended, Ended::Signal(9));
        let e = run(
            Command::new("/nonexistent/preempt"),
            Duration::from_secs(1),
            &AtomicBool::new(false),
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("cannot start"), "{e:#}");
    }
}
