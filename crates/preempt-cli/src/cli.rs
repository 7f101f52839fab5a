//! The raw command line ("lowargs"): clap-derived structs, parsed but not yet validated.
//!
//! [`crate::config`] turns these into validated configurations ("hiargs"); nothing else reads
//! them (ripgrep's `flags/lowargs.rs` → `hiargs.rs` split).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::error::EXIT_CODES_HELP;

/// Is this machine real-time ready, and how late will my loop be?
#[derive(Debug, Parser)]
#[command(name = "preempt", version, about, after_long_help = EXIT_CODES_HELP, after_help = EXIT_CODES_HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Audit real-time readiness: kernel, throttling, limits, CPU power management,
    /// isolation, memory, clocks, virtualisation. Each item: pass/warn/fail and the fix.
    Check(CheckArgs),
    /// Measure timer wake-up latency like cyclictest (absolute clock_nanosleep on
    /// CLOCK_MONOTONIC), counting missed periods and with an optional compute step.
    Latency(LatencyArgs),
    /// The UAV-loop experiment: a periodic loop under 8 scheduling policies, idle and under
    /// heavy stress; one result file per cell and a summary table.
    Matrix(MatrixArgs),
    /// Measure how fast a blocked SCHED_FIFO thread wakes up on eventfd, pipe, timerfd,
    /// a POSIX signal (and a GPIO line when one exists).
    Wakeup(WakeupArgs),
    /// Microbenchmarks (NXP, Zephyr and framework sets) as distributions in ns and CPU cycles.
    Micro(crate::micro::Args),
    /// The Zephyr RTIO talk's table: an IMU at 3200/6400 Hz plus extra sensors, read by one
    /// thread per sensor vs one RTIO (io_uring) context, against the imu-sim simulator: CPU
    /// load, latency, jitter, missed events; --sweep finds each design's break point.
    #[command(name = "rtio-bench", after_help = preempt_rtio_bench::cli::ABOUT)]
    RtioBench(crate::rtio::RtioBenchArgs),
    /// Turn result files into a self-contained HTML report with plots.
    Report(crate::report::Args),
    /// Compare result files side by side, or gate a CI run against a baseline.
    Compare(crate::compare::Args),
    /// List and inspect the runs kept in the history database.
    History(crate::history::Args),
    /// The default suite: check, latency idle and under stress, wakeup and micro, then the
    /// HTML report.
    Run(crate::report::suite::Args),
    /// Internal: the stress worker process started by `--stress` (dies with its parent).
    #[command(name = "__stress", hide = true)]
    StressWorker(StressWorkerArgs),
}

/// Output options shared by every measuring subcommand.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Print the result as JSON on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write the result as JSON to FILE (rewritten while the run goes, `complete: false`
    /// until it ends).
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write the summary rows as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Never draw the progress bar (it is only drawn when stderr is a terminal anyway).
    #[arg(long)]
    pub no_progress: bool,
}

/// A built-in stressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
pub enum StressKind {
    /// One busy-looping thread per CPU.
    Cpu,
    /// One thread per CPU streaming through a buffer 4x the last-level cache.
    Memory,
    /// A thread writing 1 MiB blocks to a temporary file and fsync-ing each.
    Io,
    /// A hackbench-like storm: groups of threads passing small messages over pipes.
    Sched,
    /// All of the above ("heavy").
    All,
}

/// Which program produces the stress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum StressTool {
    /// preempt's own stressors (no external tool needed).
    #[default]
    Builtin,
    /// stress-ng, when installed (same kinds: --cpu, --stream, --hdd, --hackbench... mapped).
    StressNg,
}

/// Load options.
#[derive(Debug, Clone, Args)]
pub struct StressArgs {
    /// Run stressors during the measurement: cpu, memory, io, sched or all (comma-separated).
    /// They live in a child process that dies with the run, even on Ctrl-C or a crash.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub stress: Vec<StressKind>,
    /// Which program generates the stress.
    #[arg(long, value_enum, default_value_t = StressTool::Builtin)]
    pub stress_tool: StressTool,
}

/// Memory and power-management options.
#[derive(Debug, Clone, Args)]
pub struct RtArgs {
    /// Lock all memory with mlockall (the default; kept for cyclictest habits).
    #[arg(long, overrides_with = "no_mlock")]
    pub mlock: bool,
    /// Do not lock memory (page faults will show up as latency).
    #[arg(long)]
    pub no_mlock: bool,
    /// Do not hold /dev/cpu_dma_latency at 0 (deep C-states stay allowed).
    #[arg(long)]
    pub no_dma_latency: bool,
}

/// A scheduling policy name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    /// SCHED_OTHER (CFS/EEVDF), with --nice.
    Other,
    /// SCHED_FIFO, with --priority.
    Fifo,
    /// SCHED_RR, with --priority.
    Rr,
    /// SCHED_DEADLINE, with --runtime (and --deadline, --period).
    Deadline,
}

/// `preempt check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
}

/// `preempt latency`.
#[derive(Debug, Clone, Args)]
pub struct LatencyArgs {
    /// Scheduling policy of the measuring threads.
    #[arg(long, value_enum, default_value_t = PolicyArg::Fifo)]
    pub policy: PolicyArg,
    /// Real-time priority for fifo/rr, 1..=99 [default: 80].
    #[arg(short, long, allow_negative_numbers = true)]
    pub priority: Option<i64>,
    /// Nice value for --policy other, -20..=19 [default: 0].
    #[arg(short, long, allow_negative_numbers = true)]
    pub nice: Option<i64>,
    /// SCHED_DEADLINE runtime per period, microseconds (required with --policy deadline).
    #[arg(long, value_name = "US")]
    pub runtime: Option<u64>,
    /// SCHED_DEADLINE relative deadline, microseconds [default: the period].
    #[arg(long, value_name = "US")]
    pub deadline: Option<u64>,
    /// SCHED_DEADLINE period, microseconds; must equal --interval [default: --interval].
    #[arg(long, value_name = "US")]
    pub period: Option<u64>,
    /// Period of the loop, microseconds.
    #[arg(short, long, value_name = "US", default_value_t = 1000)]
    pub interval: u64,
    /// Releases per thread (missed periods count as releases).
    #[arg(short, long, conflicts_with = "duration")]
    pub loops: Option<u64>,
    /// How long to measure, e.g. 30s, 500ms, 5m, 2h (a bare number is seconds)
    /// [default: 10s].
    #[arg(short = 'D', long, value_name = "TIME")]
    pub duration: Option<String>,
    /// CPUs to measure, one thread each, e.g. 0,2-3 [default: every online CPU].
    #[arg(short = 'a', long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Compute step per period, microseconds of work (calibrated when idle), so response
    /// time (release to completion) is measured too.
    #[arg(long, value_name = "US", default_value_t = 0)]
    pub work_us: u64,
    /// Timer slack set on every measuring thread whatever its policy (the default 50 us
    /// slack of SCHED_OTHER would otherwise inflate its rows).
    #[arg(long, value_name = "NS", default_value_t = 1)]
    pub timer_slack_ns: u64,
    /// Write every sample (cpu, cycle, release, wake-up, latency) as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub trace_samples: Option<PathBuf>,
    /// Stop when a latency exceeds US: write a marker to tracefs trace_marker, stop tracing
    /// (read the cause with trace-cmd / cat trace), write results, exit.
    #[arg(short, long, value_name = "US")]
    pub break_at: Option<u64>,
    /// Load.
    #[command(flatten)]
    pub stress: StressArgs,
    /// Memory and power management.
    #[command(flatten)]
    pub rt: RtArgs,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `preempt matrix`.
#[derive(Debug, Clone, Args)]
pub struct MatrixArgs {
    /// Period of the loop, microseconds (4000 = the paper's 250 Hz).
    #[arg(long, value_name = "US", default_value_t = 4000)]
    pub period: u64,
    /// Measuring time per cell, e.g. 10s or 200ms [default: 10s].
    #[arg(short = 'D', long, value_name = "TIME")]
    pub duration: Option<String>,
    /// Compute step per period, microseconds (the paper's control step took 3.8 us).
    #[arg(long, value_name = "US", default_value_t = 4)]
    pub work_us: u64,
    /// CPUs to measure, one thread each [default: the last online CPU].
    #[arg(short = 'a', long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Directory for the per-cell result files and summary.json.
    #[arg(long, value_name = "DIR", default_value = "preempt-matrix")]
    pub out_dir: PathBuf,
    /// Which program generates the heavy stress.
    #[arg(long, value_enum, default_value_t = StressTool::Builtin)]
    pub stress_tool: StressTool,
    /// Memory and power management.
    #[command(flatten)]
    pub rt: RtArgs,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// An event source for `preempt wakeup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum SourceArg {
    /// eventfd written by another thread.
    Eventfd,
    /// A pipe written by another thread.
    Pipe,
    /// A timerfd armed at an absolute time (the kernel is the trigger).
    Timerfd,
    /// A real-time signal sent to the thread, taken with sigwaitinfo.
    Signal,
    /// A GPIO output line looped to an input line (skipped without a gpiochip).
    Gpio,
}

/// Load levels for `preempt wakeup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoadArg {
    /// No load.
    Idle,
    /// The --stress stressors.
    Stress,
    /// Idle first, then under stress.
    Both,
}

/// `preempt wakeup`.
#[derive(Debug, Clone, Args)]
pub struct WakeupArgs {
    /// Event sources to measure.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [SourceArg::Eventfd, SourceArg::Pipe, SourceArg::Timerfd, SourceArg::Signal, SourceArg::Gpio])]
    pub sources: Vec<SourceArg>,
    /// Wake-ups per source and load.
    #[arg(short, long, default_value_t = 5000)]
    pub samples: u64,
    /// Gap between triggers, microseconds.
    #[arg(short, long, value_name = "US", default_value_t = 1000)]
    pub interval: u64,
    /// SCHED_FIFO priority of the waiting thread, 1..=99.
    #[arg(short, long, default_value_t = 80)]
    pub priority: i64,
    /// CPUs: the first runs the waiter, the second (if given) the trigger
    /// [default: waiter on the last online CPU, trigger on the first].
    #[arg(short = 'a', long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Idle, under stress, or both.
    #[arg(long, value_enum, default_value_t = LoadArg::Both)]
    pub load: LoadArg,
    /// Stressors for the loaded runs [default: all].
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub stress: Vec<StressKind>,
    /// Which program generates the stress.
    #[arg(long, value_enum, default_value_t = StressTool::Builtin)]
    pub stress_tool: StressTool,
    /// GPIO chip for the gpio source.
    #[arg(long, value_name = "PATH", default_value = "/dev/gpiochip0")]
    pub gpio_chip: PathBuf,
    /// GPIO output line (wired to --gpio-in) [default: BCM 17, Raspberry Pi header pin 11].
    #[arg(long, value_name = "N", default_value_t = 17)]
    pub gpio_out: u32,
    /// GPIO input line (wired to --gpio-out) [default: BCM 27, header pin 13].
    #[arg(long, value_name = "N", default_value_t = 27)]
    pub gpio_in: u32,
    /// Memory and power management.
    #[command(flatten)]
    pub rt: RtArgs,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The internal stress worker.
#[derive(Debug, Clone, Args)]
pub struct StressWorkerArgs {
    /// Stressors to run.
    #[arg(long, value_delimiter = ',', required = true)]
    pub kinds: Vec<StressKind>,
    /// Upper bound on the worker's life, seconds (a second safety net besides
    /// PR_SET_PDEATHSIG).
    #[arg(long, default_value_t = 86_400)]
    pub timeout_s: u64,
}
