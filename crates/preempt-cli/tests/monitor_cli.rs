//! `preempt monitor` (issue 17): it serves /metrics while it runs, and on SIGINT writes the
//! latency result (marked interrupted), records it in the history and exits 130. A bad
//! `--listen` or export path is refused before anything runs.

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
