//! Benchmarks of periodic, accounted, fd-bound and spinning tasks, next to their baselines,
//! alternated in one run:
//!
//! | measurement                                  | preempt                                   | baseline                                  |
//! |----------------------------------------------|-------------------------------------------|-------------------------------------------|
//! | periodic release latency, 1 kHz, FIFO 99     | `#[task(period = 1.millis())]`, its stats | `cyclictest -m -p 99 --policy=fifo -i 1000` |
//! | accounting per activation                    | periodic task, `accounting = true`        | the same app with `accounting = false`    |
//! | page-fault sampling per busy period          | `getrusage(RUSAGE_THREAD)`                | -                                         |
//! | fd-bound task: eventfd write -> task start   | `#[task(binds = line)]`, FIFO 60          | a FIFO 60 thread blocked in `read()`      |
//! | idle policy wake-up: spawn -> task start     | `sleep`, `spin`, `spin_then_sleep(300)` (spawns every 200 µs: within the window), level pinned to CPU 1 | - |
//!
//! ```sh
//! cargo bench -p preempt --bench tasks                 # ~2 minutes
//! cargo bench -p preempt --bench tasks -- --quick      # ~30 s
//! ```
//!
//! Each measurement runs in a child process (an app owns process-wide state), which
//! re-executes this binary with `--scenario <name>`. Needs real-time privileges (root, or
//! CAP_SYS_NICE + CAP_IPC_LOCK) and `cyclictest` (Debian: `apt-get install rt-tests`) for
//! the latency baseline. Latencies vary with the host: report the command and the machine.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use preempt::fd::{EventSource, FdSource, Notifier};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::{clock, sched};
use preempt_stats::histogram::Histogram;

#[path = "support/mod.rs"]
mod support;
use support::median;

/// Jobs or samples per run (set from the command line in the child).
static COUNT: AtomicU64 = AtomicU64::new(0);
/// Latencies measured by the scenarios (single writer: the measuring thread).
static LATENCY: Histogram = Histogram::new();
/// Result of the throughput scenarios, ns.
static RESULT_NS: AtomicU64 = AtomicU64::new(0);

fn count() -> u64 {
    COUNT.load(Ordering::Relaxed)
}

/// The 1 kHz periodic task at SCHED_FIFO 99; its release latency is the runtime's own
/// accounting (start − scheduled release).
#[preempt::app(main = false)]
mod periodic {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 99, period = 1.millis(), local = [n: u64 = 0])]
    fn tick(cx: tick::Context) {
        *cx.local.n += 1;
        if *cx.local.n == super::count() {
            preempt::exit(0);
        }
    }
}

macro_rules! tight_periodic {
    ($name:ident, $accounting:literal) => {
        /// A periodic task that is always due (period 1 ns, `Burst`): the executor runs its
        /// activations back to back, so time per activation = the runtime's cost per release.
        #[preempt::app(main = false, accounting = $accounting)]
        mod $name {
            #[init]
            fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                (Shared {}, Local {}, init::Monotonics())
            }

            #[task(priority = 50, period = 1.nanos(), local = [n: u64 = 0, start: u64 = 0])]
            fn tick(cx: tick::Context) {
                let n = *cx.local.n;
                if n == 1_000 {
                    // After a warm-up: start the clock.
                    *cx.local.start = preempt_io::sys::clock::monotonic_now_ns();
                }
                *cx.local.n = n + 1;
                if n == 1_000 + super::count() {
                    let elapsed = preempt_io::sys::clock::monotonic_now_ns() - *cx.local.start;
                    super::RESULT_NS.store(elapsed, super::Ordering::SeqCst);
                    preempt::exit(0);
                }
            }
        }
    };
}

tight_periodic!(tight_on, true);
tight_periodic!(tight_off, false);

/// When the writer wrote the eventfd (CLOCK_MONOTONIC ns).
static WRITTEN_AT: AtomicU64 = AtomicU64::new(0);
/// Set by the measured side once it runs: the load generators start only then, so that no
/// event is written (and coalesced) before the reader waits.
static READY: AtomicBool = AtomicBool::new(false);

fn wait_ready() {
    while !READY.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
}

/// Writes the eventfd `count() + 100` times, every 200 µs (absolute deadlines), stamping each
/// write; SCHED_FIFO 50, below the reader.
fn writer(target: impl Fn() + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        if let Err(e) = sched::set_current_thread_policy(&sched::Policy::Fifo { priority: 50 }) {
            eprintln!("writer: SCHED_FIFO 50: {e}");
        }
        wait_ready();
        let mut next = clock::monotonic_now_ns() + 1_000_000;
        for _ in 0..count() + 100 {
            next += 200_000;
            if let Err(e) = clock::sleep_until_ns(clock::ClockId::Monotonic, next) {
                eprintln!("writer: clock_nanosleep: {e}");
                return;
            }
            WRITTEN_AT.store(clock::monotonic_now_ns(), Ordering::SeqCst);
            target();
        }
    })
}

/// The fd-bound task at priority 60, fed by the writer thread.
#[preempt::app(main = false)]
mod fd_task {
    use super::{EventSource, FdSource};

    #[local]
    struct Local {
        line: EventSource,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        let line = EventSource::new().unwrap();
        let notifier: super::Notifier = line.notifier().unwrap();
        super::writer(move || notifier.notify().unwrap());
        ready::spawn().unwrap();
        (Shared {}, Local { line }, init::Monotonics())
    }

    /// Runs once the level's thread runs: the writer may start.
    #[task(priority = 60)]
    fn ready(_: ready::Context) {
        super::READY.store(true, super::Ordering::Release);
    }

    #[task(binds = line, priority = 60, local = [n: u64 = 0])]
    fn on_line(cx: on_line::Context) {
        let now = preempt_io::sys::clock::monotonic_now_ns();
        let written = super::WRITTEN_AT.load(super::Ordering::SeqCst);
        let mut events = 0;
        while let Ok(Some(k)) = cx.local.line.read_event() {
            events += k;
        }
        *cx.local.n += events;
        // Two writes read at once (the task fell behind) have no single latency.
        if *cx.local.n > 100 && events == 1 {
            super::LATENCY.record(now.saturating_sub(written));
        }
        if *cx.local.n >= 100 + super::count() {
            preempt::exit(0);
        }
    }
}

/// The baseline: a SCHED_FIFO 60 thread blocked in `read()` on a blocking eventfd.
fn bare_read() -> std::io::Result<()> {
    let fd = EventFd::new(0, false)?;
    let writer_fd = fd.try_clone()?;
    sched::set_current_thread_policy(&sched::Policy::Fifo { priority: 60 })?;
    let w = writer(move || writer_fd.write(1).unwrap());
    READY.store(true, Ordering::Release);
    let mut n = 0;
    while n < count() + 100 {
        let events = fd.read()?.unwrap_or(0);
        let now = clock::monotonic_now_ns();
        n += events;
        if n > 100 && events == 1 {
            LATENCY.record(now.saturating_sub(WRITTEN_AT.load(Ordering::SeqCst)));
        }
    }
    w.join().expect("writer thread panicked");
    Ok(())
}

/// When the spawner spawned (CLOCK_MONOTONIC ns).
static SPAWNED_AT: AtomicU64 = AtomicU64::new(0);
/// Spawns refused because the previous two had not run yet.
static REFUSED: AtomicU64 = AtomicU64::new(0);

macro_rules! idle_app {
    ($name:ident, $($policy:tt)*) => {
        /// A task on a level pinned to CPU 1 with the given idle policy, spawned every
        /// 200 µs by an ordinary SCHED_FIFO thread pinned to CPU 0.
        #[preempt::app(main = false, cores = [p80 = 1], idle_policy = [p80 = $($policy)*])]
        mod $name {
            #[init]
            fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                std::thread::spawn(|| {
                    if let Err(e) = preempt_io::sys::sched::set_current_thread_affinity(&[0]) {
                        eprintln!("spawner: cannot pin to CPU 0: {e}");
                    }
                    let fifo = preempt_io::sys::sched::Policy::Fifo { priority: 70 };
                    if let Err(e) = preempt_io::sys::sched::set_current_thread_policy(&fifo) {
                        eprintln!("spawner: SCHED_FIFO 70: {e}");
                    }
                    super::wait_ready();
                    let mut next = preempt_io::sys::clock::monotonic_now_ns() + 1_000_000;
                    for _ in 0..super::count() + 100 {
                        next += 200_000;
                        let mono = preempt_io::sys::clock::ClockId::Monotonic;
                        if preempt_io::sys::clock::sleep_until_ns(mono, next).is_err() {
                            return;
                        }
                        super::SPAWNED_AT.store(
                            preempt_io::sys::clock::monotonic_now_ns(),
                            super::Ordering::SeqCst,
                        );
                        if wake::spawn(true).is_err() {
                            super::REFUSED.fetch_add(1, super::Ordering::Relaxed);
                        }
                    }
                    // Spawns refused (the task had not run for two periods) never run: end
                    // the run from here, after a grace period for the last one.
                    let grace = preempt_io::sys::clock::monotonic_now_ns() + 10_000_000;
                    let mono = preempt_io::sys::clock::ClockId::Monotonic;
                    if preempt_io::sys::clock::sleep_until_ns(mono, grace).is_ok() {
                        preempt::exit(0);
                    }
                });
                wake::spawn(false).unwrap();
                (Shared {}, Local {}, init::Monotonics())
            }

            /// `measured = false`: the first job, which lets the spawner start.
            #[task(priority = 80, capacity = 2, local = [n: u64 = 0])]
            fn wake(cx: wake::Context, measured: bool) {
                let now = preempt_io::sys::clock::monotonic_now_ns();
                if !measured {
                    super::READY.store(true, super::Ordering::Release);
                    return;
                }
                let spawned = super::SPAWNED_AT.load(super::Ordering::SeqCst);
                *cx.local.n += 1;
                if *cx.local.n > 100 {
                    super::LATENCY.record(now.saturating_sub(spawned));
                }
                if *cx.local.n == 100 + super::count() {
                    preempt::exit(0);
                }
            }
        }
    };
}

idle_app!(idle_sleep, sleep);
idle_app!(idle_spin, spin);
idle_app!(idle_spin_then_sleep, spin_then_sleep(300));

/// Prints the latency histogram's summary for the parent.
fn print_latency() {
    let p = LATENCY.percentiles();
    println!(
        "lat p50={} p99={} max={} n={} refused={}",
        p.p50_ns,
        p.p99_ns,
        LATENCY.max().unwrap_or(0),
        LATENCY.count(),
        REFUSED.load(Ordering::Relaxed)
    );
}

/// Child side: runs one scenario.
fn scenario(name: &str) -> i32 {
    let code = match name {
        "periodic" => {
            let code = periodic::run();
            let stats = periodic::stats();
            let t = &stats.task("tick").expect("task tick").stats;
            let p = t.release_latency.percentiles();
            println!(
                "lat p50={} p99={} max={} n={}",
                p.p50_ns,
                p.p99_ns,
                t.release_latency.max_ns.unwrap_or(0),
                t.release_latency.count
            );
            return code;
        }
        "tight-on" => tight_on::run(),
        "tight-off" => tight_off::run(),
        "fd" => fd_task::run(),
        "bare-read" => match bare_read() {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("bare read: {e}");
                1
            }
        },
        "idle-sleep" => idle_sleep::run(),
        "idle-spin" => idle_spin::run(),
        "idle-spin-then-sleep" => idle_spin_then_sleep::run(),
        "rusage" => {
            let n = count();
            let start = clock::monotonic_now_ns();
            for _ in 0..n {
                std::hint::black_box(preempt_io::sys::thread::rusage_thread().ok());
            }
            RESULT_NS.store(clock::monotonic_now_ns() - start, Ordering::SeqCst);
            0
        }
        other => {
            eprintln!("unknown scenario {other}");
            2
        }
    };
    if code == 0 {
        if LATENCY.count() > 0 {
            print_latency();
        } else {
            println!("result_ns={}", RESULT_NS.load(Ordering::SeqCst));
        }
    }
    code
}

/// p50, p99, max in ns.
#[derive(Clone, Copy, Debug)]
struct Lat {
    p50: f64,
    p99: f64,
    max: f64,
}

fn child(name: &str, n: u64) -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let out = Command::new(exe)
        .args(["--scenario", name, "--count", &n.to_string()])
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "{name}: failed ({})\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn parse_lat(stdout: &str) -> Option<Lat> {
    let line = stdout.lines().find(|l| l.starts_with("lat "))?;
    let field = |key: &str| -> Option<f64> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key))
            .and_then(|v| v.parse().ok())
    };
    Some(Lat {
        p50: field("p50=")?,
        p99: field("p99=")?,
        max: field("max=")?,
    })
}

fn per_op(stdout: &str, n: u64) -> Option<f64> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("result_ns="))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|ns| ns / n as f64)
}

/// cyclictest with the same policy, priority and interval; its µs histogram -> ns.
fn cyclictest(loops: u64) -> Option<Lat> {
    let out = Command::new("cyclictest")
        .args([
            "-m",
            "-q",
            "-p",
            "99",
            "--policy=fifo",
            "-i",
            "1000",
            "-h",
            "2000",
        ])
        .args(["-l", &loops.to_string()])
        .output();
    let out = match out {
        Ok(out) if out.status.success() => out,
        Ok(out) => {
            eprintln!(
                "cyclictest failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
        Err(e) => {
            eprintln!("cyclictest: {e} (install it: apt-get install rt-tests)");
            return None;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut buckets: Vec<(u64, u64)> = Vec::new();
    let mut max_us = None;
    for line in stdout.lines() {
        if let Some(v) = line.strip_prefix("# Max Latencies:") {
            max_us = v
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok());
        }
        if line.starts_with('#') {
            continue;
        }
        let mut it = line.split_whitespace();
        if let (Some(us), Some(n)) = (it.next(), it.next()) {
            if let (Ok(us), Ok(n)) = (us.parse::<u64>(), n.parse::<u64>()) {
                buckets.push((us, n));
            }
        }
    }
    let total: u64 = buckets.iter().map(|b| b.1).sum();
    // A bucket `us` holds latencies in [us, us + 1) µs: report its middle, as the
    // HdrHistogram-style percentiles of preempt's side report a value within their bucket.
    let quantile = |q: f64| -> Option<f64> {
        let want = (q * total as f64).ceil() as u64;
        let mut seen = 0;
        buckets.iter().find_map(|&(us, n)| {
            seen += n;
            (seen >= want && n > 0).then_some((us as f64 + 0.5) * 1000.0)
        })
    };
    Some(Lat {
        p50: quantile(0.5)?,
        p99: quantile(0.99)?,
        max: max_us? * 1000.0,
    })
}

fn us(ns: Option<f64>) -> String {
    ns.map_or_else(|| "    n/a".into(), |ns| format!("{:7.2}", ns / 1000.0))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "n/a".into(),
    }
}

/// Median over rounds of each percentile.
fn summarise(runs: &[Lat]) -> (Option<f64>, Option<f64>, Option<f64>) {
    (
        median(runs.iter().map(|l| l.p50).collect()),
        median(runs.iter().map(|l| l.p99).collect()),
        runs.iter().map(|l| l.max).reduce(f64::max),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| support::flag_value(&args, flag);
    if let Some(name) = value("--scenario") {
        let n: u64 = value("--count").and_then(|v| v.parse().ok()).unwrap_or(1);
        COUNT.store(n, Ordering::Relaxed);
        std::process::exit(scenario(&name));
    }

    let quick = args.iter().any(|a| a == "--quick");
    let (rounds, jobs, tight, events) = if quick {
        (2, 2_000, 200_000, 2_000)
    } else {
        (3, 10_000, 2_000_000, 10_000)
    };
    support::print_header("preempt tasks benchmark", "tasks", quick);
    println!("  (latencies in µs; medians over {rounds} alternated rounds, max over all)");
    println!();

    // 1. Periodic release latency vs cyclictest, alternated.
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..rounds {
        if let Some(l) = child("periodic", jobs).as_deref().and_then(parse_lat) {
            ours.push(l);
        }
        if let Some(l) = cyclictest(jobs) {
            theirs.push(l);
        }
    }
    let (o50, o99, omax) = summarise(&ours);
    let (c50, c99, cmax) = summarise(&theirs);
    println!("periodic release latency, 1 kHz, SCHED_FIFO 99, {jobs} releases per round");
    println!("                 p50      p99      max");
    println!("  preempt    {}  {}  {}", us(o50), us(o99), us(omax));
    println!("  cyclictest {}  {}  {}", us(c50), us(c99), us(cmax));
    println!(
        "  ratio      {:>7}  {:>7}",
        ratio(o50, c50),
        ratio(o99, c99)
    );
    println!();

    // 2. Accounting per activation, alternated.
    let mut on = Vec::new();
    let mut off = Vec::new();
    for _ in 0..rounds {
        if let Some(v) = child("tight-on", tight).and_then(|s| per_op(&s, tight)) {
            on.push(v);
        }
        if let Some(v) = child("tight-off", tight).and_then(|s| per_op(&s, tight)) {
            off.push(v);
        }
    }
    let (on, off) = (median(on), median(off));
    println!("periodic activation, back to back ({tight} per round)");
    println!(
        "  accounting on {:>8.1} ns   off {:>8.1} ns   difference {:>6.1} ns per activation",
        on.unwrap_or(f64::NAN),
        off.unwrap_or(f64::NAN),
        on.zip(off).map_or(f64::NAN, |(a, b)| a - b)
    );
    let rusage = child("rusage", 100_000).and_then(|s| per_op(&s, 100_000));
    println!(
        "  page-fault sample (getrusage RUSAGE_THREAD), once per busy period: {:.1} ns",
        rusage.unwrap_or(f64::NAN)
    );
    println!();

    // 3. fd-bound task vs a bare blocked read, alternated.
    let mut fd = Vec::new();
    let mut bare = Vec::new();
    for _ in 0..rounds {
        if let Some(l) = child("fd", events).as_deref().and_then(parse_lat) {
            fd.push(l);
        }
        if let Some(l) = child("bare-read", events).as_deref().and_then(parse_lat) {
            bare.push(l);
        }
    }
    let (f50, f99, fmax) = summarise(&fd);
    let (b50, b99, bmax) = summarise(&bare);
    println!("eventfd write -> start, SCHED_FIFO 60 reader, writer FIFO 50, {events} events");
    println!("                    p50      p99      max");
    println!("  fd-bound task {}  {}  {}", us(f50), us(f99), us(fmax));
    println!("  bare read()   {}  {}  {}", us(b50), us(b99), us(bmax));
    println!(
        "  ratio         {:>7}  {:>7}",
        ratio(f50, b50),
        ratio(f99, b99)
    );
    println!();

    // 4. Idle policies: spawn from CPU 0 -> start on CPU 1.
    if preempt_io::sys::cpu::online_cpus().map_or(0, |c| c.len()) < 2 {
        println!("idle policies: skipped (needs 2 CPUs)");
        return;
    }
    println!("idle policy wake-up, spawn on CPU 0 -> task start on CPU 1, {events} spawns");
    println!("                      p50      p99      max");
    for (label, name) in [
        ("sleep (futex)", "idle-sleep"),
        ("spin", "idle-spin"),
        ("spin_then_sleep(300)", "idle-spin-then-sleep"),
    ] {
        let mut runs = Vec::new();
        for _ in 0..rounds {
            if let Some(l) = child(name, events).as_deref().and_then(parse_lat) {
                runs.push(l);
            }
        }
        let (p50, p99, max) = summarise(&runs);
        println!("  {label:<19} {}  {}  {}", us(p50), us(p99), us(max));
    }
}
