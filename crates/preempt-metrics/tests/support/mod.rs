//! Shared pieces of the integration tests: privilege gating, a real Prometheus server, HTTP.
//!
//! Include it with `#[path = "support/mod.rs"] mod support;`.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use preempt_io::sys::clock::{self, ClockId, monotonic_now_ns};

/// Whether the test may run: real-time privileges (and the Prometheus binaries when `tools`).
/// Without them it prints why and returns false, unless `PREEMPT_REQUIRE_PRIVILEGED=1` (CI),
/// where a missing privilege or tool fails the test.
pub(crate) fn may_run(what: &str, tools: &[&str]) -> bool {
    use preempt_io::sys::{caps, limits};
    let required = std::env::var("PREEMPT_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1");
    let rt = caps::has_effective(caps::Capability::SysNice).unwrap_or(false)
        || limits::rtprio().is_ok_and(|l| l.allows(80));
    let mut missing = Vec::new();
    if !rt {
        missing.push(
            "SCHED_FIFO 80 (needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 80: run as root or \
             `setcap cap_sys_nice+ep`)"
                .to_string(),
        );
    }
    for t in tools {
        if !Path::new(t).exists() {
            missing.push(format!("{t} (apt-get install -y prometheus)"));
        }
    }
    if missing.is_empty() {
        return true;
    }
    let msg = format!("{what}: missing {}", missing.join(", "));
    assert!(!required, "{msg} (PREEMPT_REQUIRE_PRIVILEGED=1)");
    eprintln!("skipped: {msg}");
    false
}

/// Sleeps until `ms` from now on CLOCK_MONOTONIC.
pub(crate) fn pause_ms(ms: u64) {
    clock::sleep_until_ns(ClockId::Monotonic, monotonic_now_ns() + ms * 1_000_000).unwrap();
}

/// A free loopback port (bound and released; good enough for a test).
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` with headers; returns (status, body), status 0 when the connection failed.
pub(crate) fn http_get(addr: SocketAddr, path: &str, headers: &str) -> (u16, String) {
    let mut out = String::new();
    let sent = TcpStream::connect(addr).and_then(|mut s| {
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}\r\n"
        )?;
        s.read_to_string(&mut out)
    });
    if sent.is_err() || out.len() < 12 {
        return (0, String::new());
    }
    let status = out[9..12].parse().unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map(|x| x.1)
        .unwrap_or("")
        .to_string();
    (status, body)
}

/// A real Prometheus server scraping `targets` every second, on a free loopback port with a
/// temporary configuration and storage directory. Killed on drop.
pub(crate) struct Prometheus {
    child: Child,
    pub(crate) addr: SocketAddr,
    dir: PathBuf,
}

impl Prometheus {
    pub(crate) fn start(job: &str, targets: &[SocketAddr]) -> Prometheus {
        let dir = std::env::temp_dir().join(format!("preempt-prom-{}-{job}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: {job}\n    static_configs:\n      - targets: [{}]\n",
            list.join(", ")
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let child = Command::new("/usr/bin/prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start /usr/bin/prometheus");
        let p = Prometheus { child, addr, dir };
        let deadline = monotonic_now_ns() + 20_000_000_000;
        while monotonic_now_ns() < deadline {
            if TcpStream::connect(addr).is_ok() && http_get(addr, "/-/ready", "").0 == 200 {
                return p;
            }
            pause_ms(100);
        }
        panic!("prometheus did not become ready on {addr}");
    }

    /// An instant query; returns the `(labels, value)` of each result.
    pub(crate) fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        let q: String = promql
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (status, body) = http_get(self.addr, &format!("/api/v1/query?query={q}"), "");
        assert_eq!(status, 200, "{promql}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "{body}");
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["metric"].clone(),
                    r["value"][1].as_str().unwrap().parse().unwrap(),
                )
            })
            .collect()
    }

    /// Polls `promql` until `ok` accepts its results (or panics after `timeout_s`).
    pub(crate) fn wait_for(
        &self,
        promql: &str,
        timeout_s: u64,
        ok: impl Fn(&[(serde_json::Value, f64)]) -> bool,
    ) -> Vec<(serde_json::Value, f64)> {
        let deadline = monotonic_now_ns() + timeout_s * 1_000_000_000;
        loop {
            let r = self.query(promql);
            if ok(&r) {
                return r;
            }
            assert!(
                monotonic_now_ns() < deadline,
                "{promql}: still {r:?} after {timeout_s} s"
            );
            pause_ms(250);
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `promtool check metrics` on an exposition; returns (success, output).
pub(crate) fn promtool_check(exposition: &str) -> (bool, String) {
    let mut child = Command::new("/usr/bin/promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start promtool");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}
