//! App metrics on and off (issue 17): the same 1 kHz periodic task, once with
//! `PREEMPT_METRICS` set and its endpoint scraped every 10 ms (a hundred times a 1 s
//! Prometheus), once without, alternated in one run.
//!
//! | figure | what it is |
//! |---|---|
//! | release latency p50 / p99 / max | the runtime's own accounting (start − scheduled release) |
//! | RT thread CPU per job | `getrusage(RUSAGE_THREAD)` user + system of the executor thread over the measured jobs, read inside the task: what the real-time path costs per job, wake-up included |
//! | process CPU per job | `CLOCK_PROCESS_CPUTIME_ID` over the same jobs: with metrics on it includes the server thread answering the scrapes (not on the real-time path) |
//!
//! ```sh
//! cargo bench -p preempt --bench metrics              # 5 rounds x 5 000 jobs: ~1 minute
//! cargo bench -p preempt --bench metrics -- --quick   # 3 rounds x 2 000 jobs: ~15 s
//! ```
//!
//! Each run is a child process (an app owns process-wide state): this binary re-executed with
//! `--scenario periodic`. Needs real-time privileges (root, or CAP_SYS_NICE + CAP_IPC_LOCK).
//! The figures vary with the host: report the command and the load (`uptime`) beside them.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use preempt_io::sys::{clock, fdio, thread};

#[path = "support/mod.rs"]
mod support;

/// Measured jobs per run (set from the command line in the child).
static COUNT: AtomicU64 = AtomicU64::new(0);
/// Jobs before the measurement starts (page faults, first scrapes, caches).
const WARM_UP: u64 = 200;
/// CPU times at the start of the measured jobs, ns: the executor thread's, the process's.
static THREAD_CPU_AT_START: AtomicU64 = AtomicU64::new(0);
static PROCESS_CPU_AT_START: AtomicU64 = AtomicU64::new(0);
/// The same differences at the end.
static THREAD_CPU_NS: AtomicU64 = AtomicU64::new(0);
static PROCESS_CPU_NS: AtomicU64 = AtomicU64::new(0);

fn thread_cpu_ns() -> u64 {
    thread::rusage_thread().map_or(0, |u| u.user_ns + u.system_ns)
}

fn process_cpu_ns() -> u64 {
    fdio::process_cpu_ns().unwrap_or(0)
}

/// The periodic task users write: 1 ms, a few microseconds of work, SCHED_FIFO 99. No
/// `metrics = ..` argument: the parent turns the endpoint on with `PREEMPT_METRICS`.
#[preempt::app(main = false)]
mod periodic {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 99, period = 1.millis(), local = [n: u64 = 0])]
    fn tick(cx: tick::Context) {
        let n = *cx.local.n;
        *cx.local.n = n + 1;
        let work: u64 = (0..2_000_u64).map(std::hint::black_box).sum();
        std::hint::black_box(work);
        if n == super::WARM_UP {
            super::THREAD_CPU_AT_START.store(super::thread_cpu_ns(), super::Ordering::SeqCst);
            super::PROCESS_CPU_AT_START.store(super::process_cpu_ns(), super::Ordering::SeqCst);
        }
        if n == super::WARM_UP + super::COUNT.load(super::Ordering::Relaxed) {
            let t =
                super::thread_cpu_ns() - super::THREAD_CPU_AT_START.load(super::Ordering::SeqCst);
            let p =
                super::process_cpu_ns() - super::PROCESS_CPU_AT_START.load(super::Ordering::SeqCst);
            super::THREAD_CPU_NS.store(t, super::Ordering::SeqCst);
            super::PROCESS_CPU_NS.store(p, super::Ordering::SeqCst);
            preempt::exit(0);
        }
    }
}

/// Child side: runs the app, prints its figures on one line.
fn scenario() -> i32 {
    let code = periodic::run();
    if code != 0 {
        return code;
    }
    let stats = periodic::stats();
    let t = &stats.task("tick").expect("task tick").stats;
    let p = t.release_latency.percentiles();
    println!(
        "lat p50={} p99={} max={} n={} thread_cpu_ns={} process_cpu_ns={} exec_p50={}",
        p.p50_ns,
        p.p99_ns,
        t.release_latency.max_ns.unwrap_or(0),
        t.release_latency.count,
        THREAD_CPU_NS.load(Ordering::SeqCst),
        PROCESS_CPU_NS.load(Ordering::SeqCst),
        t.execution_time.value_at_quantile(0.5),
    );
    0
}

/// One run's figures, ns (CPU per measured job).
#[derive(Clone, Copy, Debug)]
struct Run {
    p50: f64,
    p99: f64,
    max: f64,
    thread_cpu: f64,
    process_cpu: f64,
    exec_p50: f64,
    scrapes: u64,
}

fn parse(stdout: &str, jobs: u64, scrapes: u64) -> Option<Run> {
    let line = stdout.lines().find(|l| l.starts_with("lat "))?;
    let field = |key: &str| -> Option<f64> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
    };
    Some(Run {
        p50: field("p50")?,
        p99: field("p99")?,
        max: field("max")?,
        thread_cpu: field("thread_cpu_ns")? / jobs as f64,
        process_cpu: field("process_cpu_ns")? / jobs as f64,
        exec_p50: field("exec_p50")?,
        scrapes,
    })
}

/// A free loopback port (bound, then released for the child).
fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// One `GET /metrics`; true when the answer is a 200 with a body.
fn scrape(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(100)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut body = Vec::new();
    s.read_to_end(&mut body).is_ok()
        && body.starts_with(b"HTTP/1.1 200")
        && body.windows(26).any(|w| w == b"preempt_task_releases_tota")
}

/// Runs the app for `jobs` measured jobs; with `metrics`, serves and scrapes it every 10 ms.
fn child(jobs: u64, metrics: bool) -> Option<Run> {
    let exe = std::env::current_exe().ok()?;
    let mut cmd = Command::new(exe);
    cmd.args(["--scenario", "periodic", "--count", &jobs.to_string()])
        .env_remove("PREEMPT_METRICS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let addr = if metrics {
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port().ok()?));
        cmd.env("PREEMPT_METRICS", addr.to_string());
        Some(addr)
    } else {
        None
    };
    let done = Arc::new(AtomicBool::new(false));
    let scraper = addr.map(|addr| {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut ok = 0_u64;
            let mut next = clock::monotonic_now_ns();
            while !done.load(Ordering::Acquire) {
                if scrape(addr) {
                    ok += 1;
                }
                next += 10_000_000;
                let _ = clock::sleep_until_ns(clock::ClockId::Monotonic, next);
            }
            ok
        })
    });
    let out = cmd.output();
    done.store(true, Ordering::Release);
    let scrapes = scraper.map_or(0, |s| s.join().unwrap_or(0));
    let out = match out {
        Ok(out) if out.status.success() => out,
        Ok(out) => {
            eprintln!(
                "metrics {}: child failed ({})\n{}",
                if metrics { "on" } else { "off" },
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
        Err(e) => {
            eprintln!("cannot run the child: {e}");
            return None;
        }
    };
    if metrics && scrapes == 0 {
        eprintln!("metrics on: no scrape succeeded; the figures would not measure serving");
        return None;
    }
    parse(&String::from_utf8_lossy(&out.stdout), jobs, scrapes)
}

/// The median, NaN for no values.
fn median(v: Vec<f64>) -> f64 {
    support::median(v).unwrap_or(f64::NAN)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| support::flag_value(&args, flag);
    if value("--scenario").is_some() {
        let n: u64 = value("--count").and_then(|v| v.parse().ok()).unwrap_or(1);
        COUNT.store(n, Ordering::Relaxed);
        std::process::exit(scenario());
    }
    let quick = args.iter().any(|a| a == "--quick");
    let (rounds, jobs) = if quick { (3, 2_000) } else { (5, 5_000) };
    support::print_header("preempt app-metrics benchmark", "metrics", quick);
    println!(
        "  1 kHz periodic task, SCHED_FIFO 99, {jobs} measured jobs per run, {rounds} rounds \
         alternating on/off (on first in even rounds); medians over rounds, max over all"
    );
    let mut on = Vec::new();
    let mut off = Vec::new();
    for round in 0..rounds {
        for metrics in if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        } {
            match child(jobs, metrics) {
                Some(run) if metrics => on.push(run),
                Some(run) => off.push(run),
                None => {}
            }
        }
    }
    if on.is_empty() || off.is_empty() {
        eprintln!("no complete on/off pair: see the errors above");
        std::process::exit(1);
    }
    let row = |label: &str, runs: &[Run]| {
        let m = |f: fn(&Run) -> f64| median(runs.iter().map(f).collect());
        let max = runs.iter().map(|r| r.max).fold(f64::NAN, f64::max);
        println!(
            "  {label:<12} {:>8.2} {:>8.2} {:>8.2} {:>10.0} {:>10.0} {:>9.2} {:>8}",
            m(|r| r.p50) / 1e3,
            m(|r| r.p99) / 1e3,
            max / 1e3,
            m(|r| r.thread_cpu),
            m(|r| r.process_cpu),
            m(|r| r.exec_p50) / 1e3,
            runs.iter().map(|r| r.scrapes).sum::<u64>(),
        );
    };
    println!();
    println!(
        "               p50 µs   p99 µs   max µs  RT-CPU/job  proc-CPU/job  exec p50 µs  scrapes"
    );
    row("metrics on", &on);
    row("metrics off", &off);
    let ratio = |f: fn(&Run) -> f64| {
        median(on.iter().map(f).collect()) / median(off.iter().map(f).collect())
    };
    println!(
        "  on/off       {:>7.2}x {:>7.2}x {:>8} {:>9.3}x {:>9.3}x {:>8.2}x",
        ratio(|r| r.p50),
        ratio(|r| r.p99),
        "",
        ratio(|r| r.thread_cpu),
        ratio(|r| r.process_cpu),
        ratio(|r| r.exec_p50),
    );
    println!(
        "  (CPU per job in ns; RT-CPU: the executor thread; proc-CPU: the whole process, with \
         metrics on including the server thread's scrapes)"
    );
    // What serving costs: the process CPU metrics add per job, times the jobs of a run, over
    // the scrapes a run answered.
    let scrapes_per_run = on.iter().map(|r| r.scrapes as f64).sum::<f64>() / on.len() as f64;
    let added_ns = median(on.iter().map(|r| r.process_cpu).collect())
        - median(off.iter().map(|r| r.process_cpu).collect());
    println!(
        "  server CPU per scrape: {:.1} µs (proc-CPU on - off, x {jobs} jobs, / {scrapes_per_run:.0} \
         scrapes per run)",
        added_ns * jobs as f64 / scrapes_per_run / 1e3
    );
    println!("  load average at end {}", support::load_average());
}
