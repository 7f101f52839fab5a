//! Task-switch and lock benchmarks of preempt next to raw Linux baselines, in one run:
//!
//! | measurement                         | preempt                                   | baseline                                          |
//! |-------------------------------------|-------------------------------------------|---------------------------------------------------|
//! | same-priority switch                | Listing 1, both tasks at priority 1       | linux-rtic, in `scripts/bench_framework.sh`       |
//! | cross-priority switch, unpinned     | Listing 1, priorities 1 and 2             | two SCHED_FIFO threads (1, 2), FUTEX_WAIT/WAKE ping-pong |
//! | cross-priority switch, one CPU      | same, process pinned to CPU 0             | same, pinned to CPU 0                             |
//! | uncontended lock + unlock           | `cx.shared.r.lock(..)`, PCP resource       | PI-futex CAS pair (lock word 0 → tid → 0)         |
//!
//! ```sh
//! cargo bench -p preempt --bench switch                 # all of it
//! cargo bench -p preempt --bench switch -- --quick      # fewer iterations
//! ```
//!
//! Every preempt figure is given twice: the default app (accounting on: a release stamp per
//! spawn, statistics per job, timed PCP critical sections) and the bare runtime
//! (`#[preempt::app(accounting = false)]`), which is what the raw baselines compare with.
//!
//! `scripts/bench_framework.sh` runs this bench with `PREEMPT_EXAMPLE_ITERATIONS` set; it
//! then prints only `figure=` lines for the script's table (see [`print_figures`]).
//!
//! Each measurement runs in a child process (an app owns process-wide state), which
//! re-executes this binary with `--scenario <name>`. Needs real-time privileges (root or
//! CAP_SYS_NICE + CAP_IPC_LOCK); without them the apps refuse to start and the benchmark
//! says so. Timings vary with the host: run it on a quiet machine and report the command.
//!
//! Its raw ping-pong, built into this binary, ran 2.8 to 6.7 % above the same loop in C and
//! in bench/peers (minimum of 15 interleaved runs, three series; docs/PERFORMANCE.md, "Which
//! floor"), so its cross-priority ratio flatters preempt: for that target use
//! `scripts/bench_cross_floors.py`, which runs the three floors side by side.

use std::hint::black_box;
use std::process::Command;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use preempt::Instant;
use preempt_io::sys::sched;
use preempt_sync::futex;

#[path = "support/mod.rs"]
mod support;

static ITERATIONS: AtomicU64 = AtomicU64::new(0);
static RESULT_NS: AtomicU64 = AtomicU64::new(0);

fn iterations() -> u64 {
    ITERATIONS.load(Ordering::Relaxed)
}

macro_rules! listing1 {
    ($name:ident, $accounting:literal, $p1:literal, $p2:literal) => {
        /// Listing 1 (`task1` at `$p1`, `task2` at `$p2`).
        #[preempt::app(main = false, accounting = $accounting)]
        mod $name {
            #[local]
            struct Local {
                start: Instant,
            }

            #[init]
            fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                task1::spawn(0).unwrap();
                (
                    Shared {},
                    Local {
                        start: Instant::now(),
                    },
                    init::Monotonics(),
                )
            }

            #[task(priority = $p1)]
            fn task1(_cx: task1::Context, x: u64) {
                task2::spawn(x + 1).unwrap();
            }

            #[task(priority = $p2, local = [start])]
            fn task2(cx: task2::Context, x: u64) {
                if x < super::iterations() {
                    task1::spawn(x + 1).unwrap();
                } else {
                    super::RESULT_NS.store(
                        cx.local.start.elapsed().as_nanos() as u64,
                        super::Ordering::SeqCst,
                    );
                    preempt::exit(0);
                }
            }
        }
    };
}

// The default (accounting on: release stamps, per-job statistics) and the bare runtime.
listing1!(same, true, 1, 1);
listing1!(same_bare, false, 1, 1);
listing1!(cross, true, 1, 2);
listing1!(cross_bare, false, 1, 2);

macro_rules! lock_app {
    ($name:ident, $accounting:literal) => {
        /// An uncontended PCP lock: `r` is shared by priorities 1 and 2, so it is a real
        /// PI-futex mutex; only the priority-1 task runs.
        #[preempt::app(main = false, accounting = $accounting)]
        mod $name {
            #[shared]
            struct Shared {
                r: u64,
            }

            #[init]
            fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                bench::spawn().unwrap();
                (Shared { r: 0 }, Local {}, init::Monotonics())
            }

            #[task(priority = 1, shared = [r])]
            fn bench(cx: bench::Context) {
                let n = super::iterations();
                let start = Instant::now();
                for _ in 0..n {
                    cx.shared.r.lock(|r| *r = super::black_box(*r + 1));
                }
                super::RESULT_NS.store(start.elapsed().as_nanos() as u64, super::Ordering::SeqCst);
                preempt::exit(0);
            }

            #[task(priority = 2, shared = [r])]
            fn other(cx: other::Context) {
                cx.shared.r.lock(|r| *r += 1);
            }
        }
    };
}

// With accounting, a PCP lock also times its critical section (two clock reads).
lock_app!(lock, true);
lock_app!(lock_bare, false);

/// Raw baseline: two SCHED_FIFO threads hand a turn back and forth with FUTEX_WAIT/WAKE
/// (one wake-up and one switch per hand-off, as `futex-queue` does per spawn).
fn raw_futex_ping_pong(n: u64) -> std::io::Result<u64> {
    static TURN: AtomicU32 = AtomicU32::new(0);
    TURN.store(0, Ordering::SeqCst);
    let b = std::thread::Builder::new()
        .name("raw-p2".into())
        .spawn(move || {
            sched::set_current_thread_policy(&sched::Policy::Fifo { priority: 2 })?;
            for _ in 0..n {
                while TURN.load(Ordering::Acquire) == 0 {
                    futex::wait(&TURN, 0, None)?;
                }
                TURN.store(0, Ordering::Release);
                futex::wake(&TURN, 1)?;
            }
            Ok::<(), std::io::Error>(())
        })?;
    sched::set_current_thread_policy(&sched::Policy::Fifo { priority: 1 })?;
    let start = Instant::now();
    for _ in 0..n {
        TURN.store(1, Ordering::Release);
        futex::wake(&TURN, 1)?;
        while TURN.load(Ordering::Acquire) == 1 {
            futex::wait(&TURN, 1, None)?;
        }
    }
    let elapsed = start.elapsed().as_nanos() as u64;
    b.join().expect("raw ping-pong thread panicked")?;
    sched::set_current_thread_policy(&sched::Policy::Other { nice: 0 })?;
    // 2 hand-offs (switches) per round.
    Ok(elapsed / 2)
}

/// Raw baseline: lock and unlock a PI-futex word by compare-and-swap, as an uncontended
/// PI mutex does (`FUTEX_LOCK_PI`/`FUTEX_UNLOCK_PI` only on contention, never here).
fn raw_pi_cas_pair(n: u64) -> std::io::Result<u64> {
    let word = AtomicU32::new(0);
    let tid = futex::current_tid();
    let start = Instant::now();
    for _ in 0..n {
        if word
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            futex::lock_pi(&word, None)?;
        }
        black_box(&word);
        if word
            .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            futex::unlock_pi(&word)?;
        }
    }
    Ok(start.elapsed().as_nanos() as u64)
}

/// Child side: runs one scenario and prints `result_ns=<total>`.
fn scenario(name: &str, n: u64) -> i32 {
    ITERATIONS.store(n, Ordering::Relaxed);
    let code = match name {
        "same" => same::run(),
        "same-bare" => same_bare::run(),
        "cross" => cross::run(),
        "cross-bare" => cross_bare::run(),
        "lock" => lock::run(),
        "lock-bare" => lock_bare::run(),
        "raw-futex" => match raw_futex_ping_pong(n) {
            Ok(ns) => {
                RESULT_NS.store(ns, Ordering::SeqCst);
                0
            }
            Err(e) => {
                eprintln!("raw futex ping-pong: {e}");
                1
            }
        },
        "raw-pi-cas" => match raw_pi_cas_pair(n) {
            Ok(ns) => {
                RESULT_NS.store(ns, Ordering::SeqCst);
                0
            }
            Err(e) => {
                eprintln!("raw PI CAS pair: {e}");
                1
            }
        },
        other => {
            eprintln!("unknown scenario {other}");
            2
        }
    };
    if code == 0 {
        println!("result_ns={}", RESULT_NS.load(Ordering::SeqCst));
    }
    code
}

/// Set by `scripts/bench_framework.sh` (to its lock size): print only the figures the
/// script's table takes from this bench, as `figure=` lines.
const FIGURE_MODE_ENV: &str = "PREEMPT_EXAMPLE_ITERATIONS";

/// Figure mode: the uncontended lock+unlock of the default app and of the bare runtime, and
/// the bare runtime's same-priority switch (the default app's comes from the Listing-1
/// example). Returns the exit code: non-zero if a figure is missing.
fn print_figures(n: u64) -> i32 {
    let mut code = 0;
    for (figure, scenario) in [
        ("lock_uncontended", "lock"),
        ("lock_uncontended_bare", "lock-bare"),
        ("switch_same_bare", "same-bare"),
    ] {
        // Listing 1 times from `init`, so app start-up (~10 ms) is inside its figure: keep
        // the switch count at 10 M or more, where it adds about 1 ns.
        let n = if scenario == "same-bare" {
            n.max(10_000_000)
        } else {
            n
        };
        match measure(scenario, n, false) {
            Some(ns) => println!("figure=preempt_{figure} ns_per_op={ns:.3} samples={n}"),
            None => code = 1,
        }
    }
    code
}

/// Parent side: runs a scenario in a child (optionally pinned to CPU 0); ns per operation.
fn measure(name: &str, n: u64, pinned: bool) -> Option<f64> {
    let exe = std::env::current_exe().ok()?;
    let mut cmd = Command::new(exe);
    cmd.args(["--scenario", name, "--iterations", &n.to_string()]);
    if pinned {
        cmd.arg("--pin");
    }
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("{name}: cannot start: {e}");
            return None;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let total: Option<u64> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("result_ns="))
        .and_then(|v| v.trim().parse().ok());
    match (out.status.success(), total) {
        (true, Some(total)) => Some(total as f64 / n as f64),
        _ => {
            eprintln!(
                "{name}{}: failed ({})\n{}",
                if pinned { " (pinned)" } else { "" },
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            None
        }
    }
}

fn fmt_ns(ns: Option<f64>) -> String {
    match ns {
        Some(ns) if ns >= 1000.0 => format!("{:>9.2} µs", ns / 1000.0),
        Some(ns) => format!("{ns:>9.1} ns"),
        None => format!("{:>12}", "n/a"),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "n/a".into(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| support::flag_value(&args, flag);
    if let Some(name) = value("--scenario") {
        let n: u64 = value("--iterations")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        if args.iter().any(|a| a == "--pin") {
            if let Err(e) = sched::set_current_thread_affinity(&[0]) {
                eprintln!("cannot pin to CPU 0: {e}");
                std::process::exit(1);
            }
        }
        std::process::exit(scenario(&name, n));
    }

    if let Some(n) = std::env::var(FIGURE_MODE_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::process::exit(print_figures(n));
    }

    let quick = args.iter().any(|a| a == "--quick");
    let (n_same, n_cross, n_lock) = if quick {
        (1_000_000, 20_000, 1_000_000)
    } else {
        (10_000_000, 200_000, 10_000_000)
    };
    support::print_header("preempt switch/lock benchmark", "switch", quick);
    println!();

    println!("  preempt: default app (accounting on) / bare runtime (`accounting = false`)");
    let same = measure("same", n_same, false);
    let same_bare = measure("same-bare", n_same, false);
    println!(
        "same-priority switch (Listing 1, {n_same} spawns)     preempt {} / {}   (linux-rtic: scripts/bench_framework.sh)",
        fmt_ns(same),
        fmt_ns(same_bare)
    );

    for pinned in [false, true] {
        let ours = measure("cross", n_cross, pinned);
        let bare = measure("cross-bare", n_cross, pinned);
        let raw = measure("raw-futex", n_cross, pinned);
        println!(
            "cross-priority switch {:<14} ({n_cross})   preempt {} / {}   raw futex ping-pong {}   ratio {} / {}",
            if pinned {
                "(pinned CPU 0)"
            } else {
                "(unpinned)"
            },
            fmt_ns(ours),
            fmt_ns(bare),
            fmt_ns(raw),
            ratio(ours, raw),
            ratio(bare, raw)
        );
    }

    let ours = measure("lock", n_lock, false);
    let bare = measure("lock-bare", n_lock, false);
    let raw = measure("raw-pi-cas", n_lock, false);
    println!(
        "uncontended lock+unlock ({n_lock})            preempt {} / {}   raw PI-futex CAS pair {}   ratio {} / {}",
        fmt_ns(ours),
        fmt_ns(bare),
        fmt_ns(raw),
        ratio(ours, raw),
        ratio(bare, raw)
    );
}
