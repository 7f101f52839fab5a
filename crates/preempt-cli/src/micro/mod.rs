//! `preempt micro`: what each primitive costs on this machine, as distributions in
//! nanoseconds and in counter cycles.
//!
//! Three sets, each from a seed:
//! - [`nxp`] (seed `003_…`): malloc + write of 4 bytes and free, pthread mutex lock and unlock
//!   (plus the PI mutex real-time code should use), pthread_create and pthread_join on
//!   preallocated stacks, the context switch between two threads;
//! - [`zephyr`] (seed `002_…`): semaphore give to a higher-priority waiter (call + switch)
//!   versus to a lower-priority waiter (call only);
//! - [`framework`] (seed `004_…` §6.2): the preempt runtime's own task switch (same priority,
//!   cross priority unpinned and on one core) and resource lock, unlock and contended unlock,
//!   timed inside real `#[preempt::app]` apps, each in a child process (an app owns the
//!   process), in the default app and the bare runtime (`_bare`).
//!
//! Each operation is timed on its own between two reads of the CPU's counter
//! ([`clock`]: TSC on x86_64, CNTVCT on arm64, calibrated against CLOCK_MONOTONIC_RAW), and kept
//! as a distribution (min/median/p99/max, exact in cycles, histogram in ns), never only an
//! average as in the seeds. The cost of the two reads themselves (back-to-back) is measured and
//! reported beside every figure; it is subtracted only with `--subtract-overhead`, and the
//! record says so. Where the kernel offers a perf counter ([`perf`]), the loop is counted by it
//! too, as a cross-check of the cycle figures.
//!
//! Results are one [`ResultFile`](crate::results::ResultFile) like every other subcommand's,
//! with [`RunResult::Micro`](crate::results::RunResult::Micro) (`"kind": "micro"`, `"data"`: a [`MicroResult`]), so `report`,
//! `compare` and `history` read it through the same path as the others.
//!
//! ```no_run
//! use clap::Parser;
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     micro: preempt_cli::cli::MicroArgs,
//! }
//! let cli = Cli::parse_from(["micro", "--sets", "nxp", "--scale", "0.1", "--no-history"]);
//! let code = preempt_cli::app::micro::run(&cli.micro, vec!["preempt".into(), "micro".into()]).unwrap();
//! assert_eq!(code, 0);
//! ```

pub mod bench;
pub mod clock;
pub mod ffi;
pub mod framework;
pub mod nxp;
pub mod perf;
pub mod zephyr;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use anyhow::{Context, Result};
use preempt_io::sys::sched;

use crate::config::{SetArg, StressConfig};
use crate::stats::histogram::Histogram;
use crate::stats::summary::Summary;
use crate::warnings::Warning;

pub use crate::results::micro::{
    ClockInfo, CycleSummary, MicroBench, MicroOverhead, MicroResult, SetStatus, micro_of,
};

/// Validated settings of a micro run.
#[derive(Debug, Clone)]
pub struct MicroConfig {
    /// Sets to run.
    pub sets: Vec<SetArg>,
    /// Benchmark ids to keep (empty = all).
    pub only: Vec<String>,
    /// Sample multiplier.
    pub scale: f64,
    /// CPU.
    pub cpu: usize,
    /// SCHED_FIFO priority (0 = SCHED_OTHER).
    pub priority: u8,
    /// `--subtract-overhead`.
    pub subtract_overhead: bool,
    /// Load.
    pub stress: StressConfig,
}

/// Every benchmark id `--only` accepts.
pub(crate) fn all_ids() -> Vec<&'static str> {
    nxp::benches()
        .iter()
        .chain(zephyr::benches().iter())
        .chain(framework::benches().iter())
        .map(|b| b.id)
        .collect()
}

/// Checks whether SCHED_FIFO at `priority` is permitted, on a short-lived probe thread (so the
/// caller's own policy is untouched).
pub fn fifo_permitted(priority: u8) -> std::result::Result<(), String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            sched::set_current_thread_policy(&sched::Policy::Fifo { priority })
                .map_err(|e| e.to_string())
        })
        .join()
        .unwrap_or_else(|_| Err("probe thread panicked".into()))
    })
}

/// Number of back-to-back read pairs measured for the overhead.
pub const OVERHEAD_SAMPLES: usize = 20_000;

/// Runs the configured benchmarks. `on_progress(done, total, what)` is called before each.
pub fn measure(
    cfg: &MicroConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<(MicroResult, Vec<Warning>)> {
    let clock = clock::CycleClock::calibrate()?;
    let mut warnings = Vec::new();
    let priority = if cfg.priority == 0 {
        None
    } else {
        match fifo_permitted(cfg.priority) {
            Ok(()) => Some(cfg.priority),
            Err(e) => {
                warnings.push(Warning::RealTimeRefused {
                    requested: format!("SCHED_FIFO {}", cfg.priority),
                    error: e,
                    grant: crate::error::privilege_hint(&sched::Policy::Fifo {
                        priority: cfg.priority,
                    }),
                });
                None
            }
        }
    };
    let overhead = {
        let mut t = std::thread::scope(|s| {
            s.spawn(|| {
                // Measured where the benchmarks run; failing to pin only widens the figure.
                let _ = sched::set_current_thread_affinity(&[cfg.cpu]);
                clock.overhead(OVERHEAD_SAMPLES)
            })
            .join()
            .unwrap_or_default()
        });
        let h = Histogram::new();
        for (i, &v) in t.iter().enumerate() {
            h.record(clock.ticks_to_ns(v), i as u64);
        }
        let cycles = bench::cycle_summary(&mut t).context("no overhead samples")?;
        MicroOverhead {
            cycles,
            ns: Summary::from_snapshot(&h.snapshot()),
        }
    };
    let ctx = bench::Ctx {
        clock: &clock,
        cpu: cfg.cpu,
        priority,
        scale: cfg.scale,
        overhead_ticks: overhead.cycles.p50_cycles,
        subtract_overhead: cfg.subtract_overhead,
        stop,
    };
    let mut all: Vec<bench::Bench> = Vec::new();
    let mut sets = Vec::new();
    for &set in &cfg.sets {
        let list = match set {
            SetArg::Nxp => nxp::benches(),
            SetArg::Zephyr => zephyr::benches(),
            SetArg::Framework => framework::benches(),
        };
        let list: Vec<_> = list
            .into_iter()
            .filter(|b| cfg.only.is_empty() || cfg.only.iter().any(|o| o == b.id))
            .collect();
        sets.push(SetStatus {
            set: set.name().into(),
            benches: list.len(),
            planned: Vec::new(),
            note: None,
        });
        all.extend(list);
    }
    let mut benches = Vec::new();
    let total = all.len();
    for (i, b) in all.iter().enumerate() {
        if stop.load(Relaxed) {
            break;
        }
        on_progress(i, total, b.title);
        if b.needs_rt && priority.is_none() {
            benches.push(bench::skipped(
                b,
                format!(
                    "needs SCHED_FIFO so that priorities decide who runs: {}; and do not pass --priority 0",
                    crate::error::privilege_hint(&sched::Policy::Fifo { priority: cfg.priority.max(1) })
                ),
            ));
            continue;
        }
        // Each benchmark runs on its own thread so that pinning and policy changes never leak
        // into the caller or into the next benchmark.
        let out = std::thread::scope(|s| s.spawn(|| (b.run)(&ctx)).join())
            .unwrap_or_else(|_| Err(anyhow::anyhow!("benchmark {} panicked", b.id)));
        match out {
            Ok(parts) => {
                for (id, samples) in parts {
                    let title = title_of(id).unwrap_or(b.title);
                    benches.push(bench::record(b, id, title, samples, &ctx));
                }
            }
            Err(e) => benches.push(bench::skipped(b, format!("{e:#}"))),
        }
    }
    on_progress(total, total, "done");
    let result = MicroResult {
        clock: clock.info().clone(),
        overhead,
        cpu: cfg.cpu,
        policy: priority.map_or("other".to_string(), |p| format!("fifo:{p}")),
        scale: cfg.scale,
        stress: cfg.stress.names(),
        sets,
        benches,
    };
    Ok((result, warnings))
}

/// Titles of the ids a runner returns besides its own.
fn title_of(id: &str) -> Option<&'static str> {
    Some(match id {
        "malloc" => "malloc(4) + write",
        "free" => "free",
        "mutex_lock" => "pthread_mutex_lock",
        "mutex_unlock" => "pthread_mutex_unlock",
        "mutex_pi_lock" => "PI mutex lock",
        "mutex_pi_unlock" => "PI mutex unlock",
        "pthread_create" => "pthread_create",
        "pthread_join" => "pthread_join",
        _ => return framework::title_of(id),
    })
}
