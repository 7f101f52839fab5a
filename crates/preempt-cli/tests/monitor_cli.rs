//! `preempt monitor` (issue 17): it serves /metrics while it runs, and on SIGINT writes the
//! latency result (marked interrupted, and by which signal), records it in the history and
//! exits 130. A bad `--listen` or export path is refused before anything runs. It keeps
//! measuring while a real-time task holds a CPU, and never ends with nothing measured and
//! exit 0 (issue 40).

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

use serde_json::Value;

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_preempt");

#[test]
fn sigint_writes_the_result_and_records_it() {
    if !support::can_fifo() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("monitor.json");
    let history = dir.path().join("history.sqlite");
    let mut child = Command::new(BIN)
        .args([
            "monitor",
            "--listen",
            "127.0.0.1:0",
            "--cpus",
            "0",
            "--export-json",
        ])
        .arg(&json)
        .env("PREEMPT_HISTORY", &history)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The start line names the bound address.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let line = support::wait_for_line(&mut err, "serving http://");
    let addr = line
        .split("http://")
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    use preempt_io::sys::clock::{ClockId, monotonic_now_ns, sleep_until_ns};
    // The readiness audit runs on the housekeeping thread right after start: poll for it.
    let deadline = monotonic_now_ns() + 20_000_000_000;
    let body = loop {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        let mut body = String::new();
        s.read_to_string(&mut body).unwrap();
        assert!(body.starts_with("HTTP/1.1 200"), "{body}");
        if body.contains("preempt_check_status{") || monotonic_now_ns() > deadline {
            break body;
        }
        sleep_until_ns(ClockId::Monotonic, monotonic_now_ns() + 200_000_000).unwrap();
    };
    assert!(
        body.contains("preempt_monitor_latency_seconds_bucket{"),
        "{body}"
    );
    assert!(
        body.contains("preempt_check_status{"),
        "readiness items: {body}"
    );
    sleep_until_ns(ClockId::Monotonic, monotonic_now_ns() + 1_000_000_000).unwrap();
    let pid = child.id();
    preempt_io::sys::signal::signal_process(pid, libc::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(file["kind"], "latency");
    assert_eq!(file["interrupted"], true);
    assert_eq!(file["interrupted_by"], "SIGINT", "issue 40: it was null");
    let t = &file["data"]["threads"][0];
    let samples = t["samples"].as_u64().unwrap();
    assert!(samples > 500, "{t}");
    assert_eq!(
        samples + t["missed_periods"].as_u64().unwrap(),
        t["releases"].as_u64().unwrap()
    );
    assert_eq!(t["latency"]["summary"]["count"].as_u64().unwrap(), samples);
    let list = Command::new(BIN)
        .args(["history", "list"])
        .env("PREEMPT_HISTORY", &history)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("latency"),
        "{list:?}"
    );
}

#[test]
fn a_bad_listen_address_is_refused_before_measuring() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let out = Command::new(BIN)
        .args(["monitor", "--no-history", "-D", "1s", "--listen"])
        .arg(taken.local_addr().unwrap().to_string())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--listen") && err.contains("cannot listen on"),
        "{err}"
    );
}

/// A `SCHED_FIFO 50` busy loop pinned to `cpu` (`chrt`, `taskset`), ended by SIGTERM on drop
/// (`timeout` passes it on), and by `timeout` itself after 20 s should the test die first.
struct FifoHog(std::process::Child);

impl FifoHog {
    fn start(cpu: usize) -> FifoHog {
        let child = Command::new("timeout")
            .args(["-s", "KILL", "20", "chrt", "-f", "50", "taskset", "-c"])
            .arg(cpu.to_string())
            .args(["sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("timeout, chrt and taskset (util-linux, coreutils)");
        support::sleep_ms(300);
        FifoHog(child)
    }
}

impl Drop for FifoHog {
    fn drop(&mut self) {
        let _ = preempt_io::sys::signal::signal_process(self.0.id(), libc::SIGTERM);
        let _ = self.0.wait();
    }
}

/// The CPU a hog may hold without stalling this test (the last online one), or `None` (with
/// the reason printed) when this process may not run SCHED_FIFO or has a single CPU.
fn hog_cpu() -> Option<usize> {
    if !support::can_fifo() {
        return None;
    }
    let online = preempt_io::sys::cpu::online_cpus().unwrap();
    if online.len() < 2 {
        support::skip_unprivileged("needs two CPUs: one for the hog, one for the test");
        return None;
    }
    online.last().copied()
}

/// Issue 40: `preempt monitor` without `--duration` exited at once with exit 0 and 0 samples
/// while a SCHED_FIFO 50 loop held its CPU (a thread not yet run counted as stopped). It
/// keeps measuring (at priority 80, above the hog) until SIGTERM, which it records.
#[test]
fn monitor_keeps_measuring_while_a_fifo_task_holds_its_cpu() {
    let Some(cpu) = hog_cpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("monitor.json");
    let _hog = FifoHog::start(cpu);
    let mut child = Command::new(BIN)
        .args([
            "monitor",
            "--no-history",
            "--listen",
            "127.0.0.1:0",
            "--cpus",
        ])
        .arg(cpu.to_string())
        .arg("--export-json")
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    support::wait_for_line(&mut err, "serving http://");
    support::sleep_ms(1_500);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the monitor ended on its own: {:?}",
        child.wait_with_output()
    );
    preempt_io::sys::signal::signal_process(child.id(), libc::SIGTERM).unwrap();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(143), "{rest}");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(file["interrupted_by"], "SIGTERM");
    let samples = file["data"]["threads"][0]["samples"].as_u64().unwrap();
    assert!(samples > 0, "{rest}");
}

/// Issue 40: a monitor whose thread never ran (SCHED_FIFO 1 under a SCHED_FIFO 50 loop)
/// says so and fails, instead of exiting 0 with 0 samples.
#[test]
fn monitor_that_measured_nothing_says_so_and_fails() {
    let Some(cpu) = hog_cpu() else { return };
    let hog = FifoHog::start(cpu);
    let child = Command::new(BIN)
        .args([
            "monitor",
            "--no-history",
            "--listen",
            "127.0.0.1:0",
            "-D",
            "1s",
        ])
        .args(["--priority", "1", "--cpus"])
        .arg(cpu.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The thread can end only once the hog lets it run.
    support::sleep_ms(2_000);
    drop(hog);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("no sample was measured on CPU(s) {cpu}"))
            && stderr.contains("higher --priority"),
        "{stderr}"
    );
}
