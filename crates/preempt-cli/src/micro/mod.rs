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
//! Results are one [`ResultFile`] like every other subcommand's, with
//! [`RunResult::Micro`] (`"kind": "micro"`, `"data"`: a [`MicroResult`]), so `report`,
//! `compare` and `history` read it through the same path as the others.
//!
//! ```no_run
//! use clap::Parser;
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     micro: preempt_cli::micro::Args,
//! }
//! let cli = Cli::parse_from(["micro", "--sets", "nxp", "--scale", "0.1", "--no-history"]);
//! let code = preempt_cli::micro::run(&cli.micro, vec!["preempt".into(), "micro".into()]).unwrap();
//! assert_eq!(code, 0);
//! ```

pub mod bench;
pub mod clock;
pub mod ffi;
pub mod framework;
pub mod nxp;
pub mod perf;
pub mod zephyr;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use anyhow::{Context, Result};
use clap::ValueEnum;
use preempt_io::sys::clock::monotonic_now_ns;
use preempt_io::sys::{cpu, sched};
use serde::{Deserialize, Serialize};

use crate::cli::{OutputArgs, RtArgs, StressArgs};
use crate::config::{OutputConfig, RtConfig, StressConfig};
use crate::error::{EXIT_INTERRUPTED, EXIT_OK, usage};
use crate::measure::RtEnvironment;
use crate::progress::Progress;
use crate::results::{Distribution, ResultFile, RunResult, SCHEMA_VERSION, SysInfo, Tool};
use crate::stats::histogram::Histogram;
use crate::stats::summary::Summary;
use crate::stress::StressGuard;
use crate::warnings::Warning;
use crate::{stress, sysinfo};

pub use clock::ClockInfo;

/// A benchmark set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetArg {
    /// NXP (seed 003): heap, mutex, pthread create/join, context switch.
    Nxp,
    /// Zephyr (seed 002): semaphore give with and without preemption.
    Zephyr,
    /// The preempt runtime's own primitives (seed 004 section 6.2).
    Framework,
}

impl SetArg {
    /// The set's name as stored in results.
    pub fn name(self) -> &'static str {
        match self {
            Self::Nxp => "nxp",
            Self::Zephyr => "zephyr",
            Self::Framework => "framework",
        }
    }
}

/// `preempt micro`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Benchmark sets to run.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [SetArg::Nxp, SetArg::Zephyr, SetArg::Framework])]
    pub sets: Vec<SetArg>,
    /// Run only these benchmarks (malloc, mutex, mutex_pi, pthread, context_switch,
    /// sem_give_switch, sem_give_no_switch, task_switch_same_prio, task_switch_cross_prio,
    /// task_switch_cross_prio_one_core, resource, resource_unlock_contended,
    /// resource_unlock_contended_high_waiter, and each framework id with `_bare` for the
    /// runtime without accounting).
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    pub only: Vec<String>,
    /// Multiplier of the seeds' sample counts (1 = 1000 allocations, 1000 lock/unlock, 2000
    /// threads, 500000 switches, 10000 semaphore gives; framework: 100000 same-priority
    /// switches and locks, 20000 cross-priority switches, 5000 contended unlocks of each kind).
    #[arg(long, default_value_t = 1.0, value_name = "FACTOR")]
    pub scale: f64,
    /// CPU every benchmark thread is pinned to [default: the last online CPU].
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of the benchmark threads (lower-priority partners run 10 below);
    /// 0 runs them as SCHED_OTHER (the Zephyr set is then skipped).
    #[arg(short, long, default_value_t = 80)]
    pub priority: u8,
    /// Subtract the median timing overhead (two back-to-back counter reads) from every sample.
    #[arg(long)]
    pub subtract_overhead: bool,
    /// Load.
    #[command(flatten)]
    pub stress: StressArgs,
    /// Memory and power management.
    #[command(flatten)]
    pub rt: RtArgs,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Results history.
    #[command(flatten)]
    pub history: crate::history::HistoryArgs,
}

/// Exact statistics of one benchmark in counter ticks ("cycles" of the counter named in
/// [`ClockInfo`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CycleSummary {
    /// Samples.
    pub count: u64,
    /// Smallest sample.
    pub min_cycles: u64,
    /// Median.
    pub p50_cycles: u64,
    /// 90th percentile.
    pub p90_cycles: u64,
    /// 99th percentile.
    pub p99_cycles: u64,
    /// Largest sample.
    pub max_cycles: u64,
    /// Mean (the seeds' only figure).
    pub mean_cycles: f64,
}

/// One benchmark's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MicroBench {
    /// `nxp`, `zephyr` or `framework`.
    pub set: String,
    /// Stable identifier, e.g. `mutex_lock`.
    pub id: String,
    /// Human title.
    pub title: String,
    /// What lies between the two counter reads.
    pub method: String,
    /// In nanoseconds, with the raw histogram (`None` when skipped).
    pub ns: Option<Distribution>,
    /// In counter ticks, exact (`None` when skipped).
    pub cycles: Option<CycleSummary>,
    /// Ticks subtracted from every sample (`--subtract-overhead`), 0 when raw.
    pub overhead_subtracted_cycles: u64,
    /// perf counter cross-check, when a counter was available.
    pub perf: Option<perf::PerfCheck>,
    /// Why there is no perf figure.
    pub perf_note: Option<String>,
    /// Why the benchmark did not run.
    pub skipped: Option<String>,
    /// Observations (e.g. yields that did not switch).
    pub notes: Vec<String>,
}

/// The timing overhead: two back-to-back counter reads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MicroOverhead {
    /// In counter ticks.
    pub cycles: CycleSummary,
    /// In nanoseconds.
    pub ns: Summary,
}

/// Whether a set ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetStatus {
    /// Set name.
    pub set: String,
    /// Benchmarks run.
    pub benches: usize,
    /// Reserved rows without figures (the framework set in files written before it was
    /// measured; empty since).
    pub planned: Vec<String>,
    /// Why the set has no figures.
    pub note: Option<String>,
}

/// `preempt micro` results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MicroResult {
    /// The counter and its calibration.
    pub clock: ClockInfo,
    /// Cost of one timing bracket.
    pub overhead: MicroOverhead,
    /// CPU of the benchmark threads.
    pub cpu: usize,
    /// Policy of the benchmark threads, e.g. `fifo:80` or `other`.
    pub policy: String,
    /// Multiplier of the seeds' counts.
    pub scale: f64,
    /// Stressors running during the measurement (empty = idle).
    pub stress: Vec<String>,
    /// The sets requested.
    pub sets: Vec<SetStatus>,
    /// Every benchmark, in run order.
    pub benches: Vec<MicroBench>,
}

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
pub fn all_ids() -> Vec<&'static str> {
    nxp::benches()
        .iter()
        .chain(zephyr::benches().iter())
        .chain(framework::benches().iter())
        .map(|b| b.id)
        .collect()
}

impl MicroConfig {
    /// Validates the flags.
    pub fn from_args(a: &Args, online: &[usize]) -> Result<Self> {
        if !(a.scale.is_finite() && a.scale > 0.0 && a.scale <= 100.0) {
            return Err(usage(format!(
                "--scale {} must be a number in (0, 100]",
                a.scale
            )));
        }
        if a.priority > 98 {
            return Err(usage(format!(
                "--priority {} is out of range: use 1..=98 (the partner thread runs 10 below; 0 = SCHED_OTHER)",
                a.priority
            )));
        }
        let ids = all_ids();
        if let Some(bad) = a.only.iter().find(|o| !ids.contains(&o.as_str())) {
            return Err(usage(format!(
                "--only: unknown benchmark '{bad}'; known: {}",
                ids.join(", ")
            )));
        }
        let cpu = match a.cpu {
            Some(c) if online.contains(&c) => c,
            Some(c) => {
                return Err(usage(format!(
                    "--cpu {c} is not online (online: {online:?})"
                )));
            }
            None => *online.last().context("no online CPU")?,
        };
        if a.sets.is_empty() {
            return Err(usage(
                "--sets is empty; name at least one of nxp,zephyr,framework",
            ));
        }
        let mut sets = a.sets.clone();
        sets.sort();
        sets.dedup();
        Ok(Self {
            sets,
            only: a.only.clone(),
            scale: a.scale,
            cpu,
            priority: a.priority,
            subtract_overhead: a.subtract_overhead,
            stress: StressConfig::new(&a.stress.stress, a.stress.stress_tool),
        })
    }
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
                warnings.push(Warning::NotRealTimePolicy {
                    policy: format!("other (SCHED_FIFO refused: {e})"),
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
                "needs SCHED_FIFO so that priorities decide who runs: run as root or grant CAP_SYS_NICE \
                 (setcap cap_sys_nice+ep $(which preempt)), and do not pass --priority 0"
                    .into(),
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

/// Builds the results file of a run.
pub fn file_of(
    info: SysInfo,
    warnings: &[Warning],
    result: MicroResult,
    started_unix_ms: u64,
    elapsed_ns: u64,
    interrupted: bool,
) -> ResultFile {
    ResultFile {
        schema_version: SCHEMA_VERSION,
        tool: Tool::this(),
        complete: true,
        interrupted,
        started_unix_ms,
        elapsed_ns,
        sysinfo: info,
        warnings: warnings.iter().map(Warning::to_record).collect(),
        result: RunResult::Micro(Box::new(result)),
    }
}

/// The micro result of a results file, or an error naming the kind it holds instead.
pub fn micro_of(file: &ResultFile) -> Result<&MicroResult> {
    match &file.result {
        RunResult::Micro(m) => Ok(m),
        other => anyhow::bail!("expected a micro result, found kind '{}'", other.kind()),
    }
}

/// Runs everything under the stressors of `cfg` and returns the file (for `preempt micro` and
/// the suite).
pub fn run_file(
    cfg: &MicroConfig,
    argv: Vec<String>,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<ResultFile> {
    let t0 = monotonic_now_ns();
    let started = sysinfo::unix_ms_now();
    let info = sysinfo::collect(argv);
    let mut warns = sysinfo::machine_warnings(&info, &[cfg.cpu]);
    let _stress = StressGuard::start(&cfg.stress)?;
    let (result, w) = measure(cfg, stop, on_progress)?;
    warns.extend(w);
    Ok(file_of(
        info,
        &warns,
        result,
        started,
        monotonic_now_ns() - t0,
        stop.load(Relaxed),
    ))
}

/// `preempt micro`: runs, prints the table, writes `--export-json`/`--export-csv`, records the
/// run in the history. Returns the exit code.
pub fn run(args: &Args, argv: Vec<String>) -> Result<u8> {
    // A framework child (re-executed by the parent's framework set) runs its one app and
    // nothing else: no flags, no output but its samples.
    if let Some(scenario) = std::env::var_os(framework::CHILD_ENV) {
        return framework::child_main(&scenario);
    }
    let online = cpu::online_cpus().context("cannot read the online CPUs")?;
    let cfg = MicroConfig::from_args(args, &online)?;
    let output = OutputConfig::from(&args.output);
    let sink =
        crate::export::Sink::new(output.export_json.as_deref(), output.export_csv.as_deref());
    sink.preflight()?;
    let stop = crate::measure::install_stop_flag()?;
    let env = RtEnvironment::prepare(RtConfig::from(&args.rt));
    eprintln!(
        "preempt: microbenchmarks on CPU {}, {}{}",
        cfg.cpu,
        if cfg.priority == 0 {
            "SCHED_OTHER".to_string()
        } else {
            format!("SCHED_FIFO {}", cfg.priority)
        },
        if cfg.stress.kinds.is_empty() {
            String::new()
        } else {
            format!(", stress {}", stress::label(&cfg.stress))
        }
    );
    let mut progress = Progress::new("micro", output.progress);
    let mut file = run_file(&cfg, argv, &stop, &mut |d, t, what| {
        progress.update(d as f64 / t.max(1) as f64, what)
    })?;
    progress.finish();
    file.warnings
        .splice(0..0, env.warnings.iter().map(Warning::to_record));
    sink.write(&file)?;
    crate::history::record_quietly(&args.history, &file, output.export_json.as_deref());
    for w in &file.warnings {
        eprintln!("preempt: warning: {} ({})", w.message, w.hint);
    }
    if output.json_stdout {
        let mut out = std::io::stdout().lock();
        out.write_all(&crate::export::Exporter::serialize(
            &crate::export::json::JsonExporter,
            &file,
        )?)?;
        out.flush()?;
    } else {
        print_table(micro_of(&file)?)?;
    }
    Ok(if stop.load(Relaxed) {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}

/// The CSV export of a micro result (`export::csv`): the header and one row per benchmark,
/// units in the column names.
pub fn csv_table(m: &MicroResult) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let header = vec![
        "set",
        "id",
        "title",
        "samples",
        "min_ns",
        "p50_ns",
        "p99_ns",
        "max_ns",
        "mean_ns",
        "min_cycles",
        "p50_cycles",
        "p99_cycles",
        "max_cycles",
        "mean_cycles",
        "overhead_p50_cycles",
        "overhead_subtracted_cycles",
        "counter",
        "counter_hz",
        "perf_event",
        "perf_per_op",
        "skipped",
    ];
    let mut rows = Vec::new();
    for b in &m.benches {
        let ns = b.ns.as_ref().map(|d| d.summary);
        let c = b.cycles;
        let f = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        rows.push(vec![
            b.set.clone(),
            b.id.clone(),
            b.title.clone(),
            f(c.map(|c| c.count)),
            f(ns.map(|s| s.min_ns)),
            f(ns.map(|s| s.p50_ns)),
            f(ns.map(|s| s.p99_ns)),
            f(ns.map(|s| s.max_ns)),
            ns.map(|s| format!("{:.1}", s.mean_ns)).unwrap_or_default(),
            f(c.map(|c| c.min_cycles)),
            f(c.map(|c| c.p50_cycles)),
            f(c.map(|c| c.p99_cycles)),
            f(c.map(|c| c.max_cycles)),
            c.map(|c| format!("{:.1}", c.mean_cycles))
                .unwrap_or_default(),
            m.overhead.cycles.p50_cycles.to_string(),
            b.overhead_subtracted_cycles.to_string(),
            format!("{:?}", m.clock.counter).to_lowercase(),
            format!("{:.0}", m.clock.counter_hz),
            b.perf.as_ref().map(|p| p.event.clone()).unwrap_or_default(),
            b.perf
                .as_ref()
                .map(|p| format!("{:.1}", p.per_op))
                .unwrap_or_default(),
            b.skipped.clone().unwrap_or_default(),
        ]);
    }
    (header, rows)
}

fn print_table(m: &MicroResult) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "clock: {:?} at {:.4} GHz, calibrated against {} (+/-{} ppm), steps of {} tick(s); cycles = {}",
        m.clock.counter,
        m.clock.counter_hz / 1e9,
        m.clock.calibrated_against,
        m.clock.calibration_uncertainty_ppm,
        m.clock.resolution_ticks,
        m.clock.unit
    )?;
    writeln!(
        out,
        "timing overhead (two back-to-back reads): p50 {} cycles = {} ns, max {} cycles; {}",
        m.overhead.cycles.p50_cycles,
        m.overhead.ns.p50_ns,
        m.overhead.cycles.max_cycles,
        if m.benches.iter().any(|b| b.overhead_subtracted_cycles > 0) {
            "subtracted from every sample"
        } else {
            "included in every figure (not subtracted)"
        }
    )?;
    // Column widths: the longest set name and id (framework ids are long).
    let sw = m
        .benches
        .iter()
        .map(|b| b.set.len())
        .max()
        .unwrap_or(0)
        .max(3);
    // Rows measured in the runtime's soft mode are marked, and the mark explained below.
    let soft = |b: &MicroBench| {
        b.notes
            .iter()
            .any(|n| n.starts_with(framework::SOFT_NOTE_PREFIX))
    };
    let label = |b: &MicroBench| {
        if soft(b) {
            format!("{} [soft]", b.id)
        } else {
            b.id.clone()
        }
    };
    let iw = m
        .benches
        .iter()
        .map(|b| label(b).len())
        .max()
        .unwrap_or(0)
        .max(9);
    writeln!(
        out,
        "{:<sw$} {:<iw$} {:>7} {:>8} {:>8} {:>8} {:>9} | {:>8} {:>8} {:>8} {:>9} | {:>10}",
        "set",
        "benchmark",
        "samples",
        "min_ns",
        "p50_ns",
        "p99_ns",
        "max_ns",
        "min_cyc",
        "p50_cyc",
        "p99_cyc",
        "max_cyc",
        "perf/op",
        sw = sw,
        iw = iw
    )?;
    for b in &m.benches {
        match (&b.ns, &b.cycles) {
            (Some(d), Some(c)) => writeln!(
                out,
                "{:<sw$} {:<iw$} {:>7} {:>8} {:>8} {:>8} {:>9} | {:>8} {:>8} {:>8} {:>9} | {:>10}",
                b.set,
                label(b),
                c.count,
                d.summary.min_ns,
                d.summary.p50_ns,
                d.summary.p99_ns,
                d.summary.max_ns,
                c.min_cycles,
                c.p50_cycles,
                c.p99_cycles,
                c.max_cycles,
                b.perf
                    .as_ref()
                    .map(|p| format!(
                        "{:.0} {}",
                        p.per_op,
                        if p.event == "cycles" { "cyc" } else { "tsc" }
                    ))
                    .unwrap_or_else(|| "-".into()),
                sw = sw,
                iw = iw
            )?,
            _ => writeln!(
                out,
                "{:<sw$} {:<iw$} skipped: {}",
                b.set,
                b.id,
                b.skipped.as_deref().unwrap_or("no samples"),
                sw = sw,
                iw = iw
            )?,
        }
    }
    if m.benches
        .iter()
        .any(|b| b.set == "framework" && b.cycles.is_some())
    {
        writeln!(
            out,
            "framework: each row timed inside a preempt app in a child process; `_bare` rows \
             are the runtime with accounting = false, the others the default app (accounting on)"
        )?;
    }
    if m.benches.iter().any(soft) {
        writeln!(out, "[soft]: {}", framework::SOFT_NOTE)?;
    }
    for s in &m.sets {
        if let Some(n) = &s.note {
            writeln!(
                out,
                "{:<7} not measured yet ({} rows reserved): {n}",
                s.set,
                s.planned.len()
            )?;
        }
    }
    out.flush()?;
    Ok(())
}
