//! The raw command line ("lowargs"): clap-derived structs, parsed but not yet validated.
//!
//! [`crate::config`] turns these into validated configurations ("hiargs"); nothing else reads
//! them (ripgrep's `flags/lowargs.rs` → `hiargs.rs` split).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{LoadArg, PolicyArg, SetArg, SourceArg, StressKind, StressTool};
use crate::error::EXIT_CODES_HELP;
use crate::history::HistoryConfig;

mod convert;
mod values;

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
    /// Audit real-time readiness: kernel, throttling, limits, CPU power management (with the
    /// measured cost of a wake-up from idle, 0.65 s), isolation, memory, clocks,
    /// virtualisation. Each item: pass/warn/fail and the fix.
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
    Micro(MicroArgs),
    /// The Zephyr RTIO talk's table: an IMU at 3200/6400 Hz plus extra sensors, read by one
    /// thread per sensor vs one RTIO (io_uring) context, against the imu-sim simulator: CPU
    /// load, latency, jitter, missed events; --sweep finds each design's break point.
    #[command(name = "rtio-bench", after_help = preempt_rtio_bench::cli::ABOUT)]
    RtioBench(RtioBenchArgs),
    /// Turn result files into a self-contained HTML report with plots.
    Report(ReportArgs),
    /// Compare result files side by side, or gate a CI run against a baseline.
    Compare(CompareArgs),
    /// List and inspect the runs kept in the history database.
    History(HistoryCmdArgs),
    /// How long must I run, and what does a run say about the tail? Distribution-free
    /// statements (docs/TAIL.md): `--plan 1e-9@1kHz` gives the cycles and wall time needed;
    /// `FILE --deadline 100us` the exceedances, the extremal index, and the exact 95 % upper
    /// bound on P(latency > D), per cycle and per hour.
    Tail(TailArgs),
    /// The default suite: check, latency idle and under stress, wakeup and micro, then the
    /// HTML report.
    Run(RunArgs),
    /// Long-running latency monitor for fleets: one SCHED_FIFO thread per CPU (the latency
    /// method), served as Prometheus/OpenMetrics at --listen; on Ctrl-C/SIGTERM writes the
    /// latency result and records it in the history (docs/FLEET.md).
    Monitor(MonitorArgs),
    /// Demonstrators: `preempt demo gimbal` runs the thesis's two-axis gimbal (a 40 kHz plant
    /// process, four controllers, MCAP telemetry) and measures its control quality against
    /// an ideal-timing reference.
    #[command(subcommand)]
    Demo(DemoCommand),
    /// Internal: the gimbal demo's plant process (started by `preempt demo gimbal`).
    #[command(name = "__gimbal-plant", hide = true)]
    GimbalPlant(GimbalPlantArgs),
    /// Internal: the UAV demo's simulator process (started by `preempt demo uav`).
    #[command(name = "__uav-sim", hide = true)]
    UavSim(GimbalPlantArgs),
    /// Internal: the stress worker process started by `--stress` (dies with its parent).
    #[command(name = "__stress", hide = true)]
    StressWorker(StressWorkerArgs),
}

/// `preempt demo ...`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum DemoCommand {
    /// The two-axis gimbal: the plant in its own process at 40 kHz on its own clock, an
    /// SPI-like exchange every 100 µs, the controller as a preempt app (10 kHz current and
    /// 1 kHz position loops per axis), every sample into DIR/gimbal.mcap (Foxglove opens
    /// it), and DIR/gimbal.json (kind demo_gimbal): error against the ideal-timing reference,
    /// misses, telemetry, controller CPU, plant lateness.
    Gimbal(GimbalArgs),
    /// The UAV study's 250 Hz flight controller (position -> attitude -> allocator) as a
    /// preempt app against a quadrotor simulated at 1 kHz in its own process: take off,
    /// hover, a 1 m square, land. DIR/uav.json (kind demo_uav): release latency, missed
    /// periods, compute time, and position/attitude error against the same mission flown
    /// with ideal timing, crash or not; DIR/uav.mcap for Foxglove. `--matrix` flies the
    /// study's 8 policies x idle/heavy stress, one flight per cell (DIR/STRESS-POLICY/).
    Uav(UavArgs),
}

/// `preempt demo uav`.
#[derive(Debug, Clone, Args)]
pub struct UavArgs {
    /// Flight length per flight (e.g. 10s); default: the whole mission (14 s).
    #[arg(long)]
    pub duration: Option<String>,
    /// Policy of the control thread: fifo:PRIO, rr:PRIO, other:NICE or deadline:RUNTIME_US
    /// (period and deadline 4 ms).
    #[arg(long, default_value = "fifo:99", allow_hyphen_values = true)]
    pub policy: String,
    /// Fly the study's matrix: SCHED_OTHER nice 0/-19, SCHED_RR 50/99, SCHED_FIFO 50/99,
    /// SCHED_DEADLINE 400/800 us, each idle and under heavy stress (all built-in stressors).
    #[arg(long, conflicts_with_all = ["policy", "stress"])]
    pub matrix: bool,
    /// Sensor noise seed (the reference flight uses the same).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// CPU of the simulator process (default: the last online CPU).
    #[arg(long)]
    pub sim_cpu: Option<usize>,
    /// Output directory: uav.json, uav.mcap (a matrix: one subdirectory per cell too).
    #[arg(long, default_value = "preempt-uav")]
    pub out: PathBuf,
    /// Join ROS 2 as node /preempt_uav (domain ROS_DOMAIN_ID, 0 if unset): publish /uav/pose
    /// (geometry_msgs/PoseStamped), /uav/odom (nav_msgs/Odometry) and /uav/reference
    /// (geometry_msgs/PoseStamped) at 250 Hz, and fly to a geometry_msgs/PoseStamped published
    /// on /uav/waypoint, over DDS, no ROS installation needed. One flight, not a matrix. Needs
    /// a build with `--features ros2` (docs/ROS2.md).
    #[arg(long, conflicts_with = "matrix")]
    pub ros2: bool,
    /// Explain each deadline miss of the control task from the kernel trace (as
    /// `PREEMPT_EXPLAIN=1` does for any app): per miss its causes (irq, softirq, thread,
    /// wakeup, idle_exit, timer, invisible), the flight's top causes, into uav.json (a matrix:
    /// every cell). Needs tracefs (root); without it the flight goes on and the result says
    /// why.
    #[arg(long)]
    pub explain: bool,
    /// Load.
    #[command(flatten)]
    pub stress: StressArgs,
    /// Results history.
    #[command(flatten)]
    pub history: HistoryArgs,
}

/// `preempt demo gimbal`.
#[derive(Debug, Clone, Args)]
pub struct GimbalArgs {
    /// Run length (e.g. 5s, 500ms).
    #[arg(long, default_value = "2s")]
    pub duration: String,
    /// Setpoint steps, AXIS=RAD@TIME, comma-separated, each before the end of the run
    /// (default: pan=0.5@0.2s,tilt=-0.3@1.0s).
    #[arg(long)]
    pub steps: Option<String>,
    /// Sensor noise seed (the reference uses the same).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// CPU of the plant process (default: the last online CPU; the controller uses CPU 0).
    #[arg(long)]
    pub plant_cpu: Option<usize>,
    /// Output directory: gimbal.json, gimbal.mcap.
    #[arg(long, default_value = "preempt-gimbal")]
    pub out: PathBuf,
    /// Serve the live state over the Foxglove WebSocket protocol on this loopback address
    /// (e.g. 127.0.0.1:8765) and take setpoints a client publishes on /gimbal/setpoint
    /// ({"axis": "pan", "rad": 0.3}). Needs a build with `--features foxglove`.
    #[arg(long, value_name = "ADDR")]
    pub foxglove: Option<String>,
    /// Join ROS 2 as node /preempt_gimbal (domain ROS_DOMAIN_ID, 0 if unset): publish
    /// /gimbal/joint_states (sensor_msgs/JointState, 1 kHz) and take setpoints on
    /// /gimbal/setpoint/pan and /gimbal/setpoint/tilt (std_msgs/Float64, rad), over DDS, no ROS
    /// installation needed. Needs a build with `--features ros2` (docs/ROS2.md).
    #[arg(long)]
    pub ros2: bool,
    /// Explain each deadline miss of the controller from the kernel trace (as
    /// `PREEMPT_EXPLAIN=1` does for any app): per miss its causes (irq, softirq, thread,
    /// wakeup, idle_exit, timer, lost, invisible), the run's top causes, into gimbal.json. Needs
    /// tracefs (root); without it the run goes on and the result says why.
    #[arg(long)]
    pub explain: bool,
    /// Load.
    #[command(flatten)]
    pub stress: StressArgs,
    /// Results history.
    #[command(flatten)]
    pub history: HistoryArgs,
}

/// `preempt __gimbal-plant`: the plant's own arguments.
#[derive(Debug, Clone, Args)]
pub struct GimbalPlantArgs {
    /// Passed to the plant unchanged (see `preempt_gimbal::plant`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
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

/// `preempt check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Results history.
    #[command(flatten)]
    pub history: HistoryArgs,
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
    /// Explain the outliers from the kernel trace: each sample at or above US (at least 1;
    /// bare `--explain`: above each thread's p99.9) gets its delay split into causes (irq,
    /// softirq, thread, wakeup, idle_exit, timer, lost, invisible). Needs root (tracefs).
    #[arg(long, value_name = "US", num_args = 0..=1, require_equals = true)]
    pub explain: Option<Option<u64>>,
    /// With --explain: write the explained windows as a Chrome/Perfetto JSON trace
    /// (open it in ui.perfetto.dev).
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
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
    pub history: HistoryArgs,
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
    /// Results history.
    #[command(flatten)]
    pub history: HistoryArgs,
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
    /// Results history.
    #[command(flatten)]
    pub history: HistoryArgs,
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

/// `preempt micro`.
#[derive(Debug, Clone, clap::Args)]
pub struct MicroArgs {
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
    /// SCHED_FIFO priority of the benchmark threads, 2..=98 (lower-priority partners run 10
    /// below, at least 1);
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
    pub history: HistoryArgs,
}

/// `preempt rtio-bench`: the benchmark's own flags. (Not named `Args`: clap names a struct's
/// argument group after it, and the flattened benchmark struct is `Args` already.)
#[derive(Debug, Clone, clap::Args)]
#[command(mut_arg("json", |a| a
    .value_name("FILE")
    .help("Write the results as a preempt result file (kind rtio_bench, docs/results-schema.md) to FILE; rewritten after every finished cell with complete: false until the run ends")))]
pub struct RtioBenchArgs {
    /// The flags of `preempt-rtio-bench` (the same as the `rtio-bench` binary's).
    #[command(flatten)]
    pub bench: preempt_rtio_bench::Args,
    /// Results history.
    #[command(flatten)]
    pub history: HistoryArgs,
}

/// `preempt report`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// Result files (JSON from check, latency, matrix, wakeup, micro, rtio-bench) or
    /// directories of them.
    #[arg(required = true, value_name = "FILE|DIR")]
    pub inputs: Vec<PathBuf>,
    /// Output directory (created; index.html and plots/ are replaced).
    #[arg(short, long, value_name = "DIR", default_value = "preempt-report")]
    pub out: PathBuf,
    /// Per-cycle CSV files from `preempt latency --trace-samples`, for the latency-per-iteration
    /// figures.
    #[arg(long, value_name = "FILE")]
    pub trace: Vec<PathBuf>,
    /// Page title.
    #[arg(long)]
    pub title: Option<String>,
    /// Do not write PNG files (SVG only).
    #[arg(long)]
    pub no_png: bool,
}

/// `preempt compare`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Two sets of runs: preempt compare A1 A2 A3 A4 A5 -- B1 B2 B3 B4 B5 (a directory \
on a side gives one run per result file in it; run:11-15 the history's runs 11 to 15; \
last:5:latency the 5 newest latency runs of this host): per figure and metric, the Hodges-Lehmann shift \
of B against A with its exact 95% interval, the exact Mann-Whitney p-value and a verdict \
(better, worse, equivalent within the --gate margin, or inconclusive: need N more runs).\n\
Exit codes: 0 compared (no regression; sets: no verdict worse or inconclusive), 1 error, 2 bad \
usage, 5 a figure regressed beyond --max-ratio, or a set comparison found one worse, 6 a set \
comparison was inconclusive (none worse)"
)]
pub struct CompareArgs {
    /// Runs to compare: result files, directories of them, cyclictest --json or histogram
    /// output, or history run ids (7 or run:7). Ratios are relative to the first. Before `--`:
    /// side A of two sets of runs.
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    /// After `--`: side B of two sets of runs, compared with side A (the RUNs) per figure and
    /// metric. Each file or run id is one run; a directory gives one run per result file in
    /// it; run:11-15 the history's runs 11 to 15; last:5 or last:5:latency the newest runs of
    /// this host.
    #[arg(last = true, value_name = "RUN_B")]
    pub against: Vec<String>,
    /// Margins of practical significance for two sets of runs, e.g. p99.9=+10%,max=+25%
    /// (relative to A's median) or missed=+2 (ns, or periods for `missed`). Defaults: p50 5%,
    /// p99 and p99.9 10%, max 25%, missed 0.
    #[arg(long, value_delimiter = ',', value_name = "METRIC=MARGIN")]
    pub gate: Vec<String>,
    /// Regression mode: compare every RUN with this baseline (file, directory or run id).
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<String>,
    /// Regression limits, e.g. p99=1.2,max=2: fail when RUN/baseline exceeds the ratio.
    #[arg(long, value_delimiter = ',', value_name = "METRIC=RATIO")]
    pub max_ratio: Vec<String>,
    /// Statistics shown in the table.
    #[arg(long, value_delimiter = ',', default_values_t = ["p50".to_string(), "p99".to_string(), "p99.9".to_string(), "max".to_string()])]
    pub metrics: Vec<String>,
    /// Only figures whose name starts with one of these prefixes (e.g. latency/,micro/).
    #[arg(long, value_delimiter = ',', value_name = "PREFIX")]
    pub only: Vec<String>,
    /// Also write a self-contained HTML page with the table and overlaid histograms.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Let partial runs (`complete: false`, or interrupted) be a baseline or a candidate of
    /// --baseline; without it they are refused, since they cover less than the run they
    /// are compared with.
    #[arg(long)]
    pub allow_partial: bool,
    /// History database for run ids.
    #[command(flatten)]
    pub history: HistoryArgs,
}

/// `preempt tail`.
#[derive(Debug, Clone, clap::Args)]
pub struct TailArgs {
    /// Latencies of a run: a text file of latencies in ns, one per line (any tool's output),
    /// or a `preempt latency` result (its histogram; missed periods count as exceedances).
    #[arg(
        value_name = "FILE",
        required_unless_present = "plan",
        conflicts_with = "plan"
    )]
    pub input: Option<PathBuf>,
    /// Print the cycles (and wall time at the rate) needed for zero exceedances to bound the
    /// per-cycle probability at P with 95 % confidence, e.g. 1e-9@1kHz (RATE in Hz, kHz, MHz).
    #[arg(long, value_name = "P@RATE")]
    pub plan: Option<String>,
    /// The deadline D of the statement about P(latency > D), e.g. 100us, 1ms, 250000ns.
    #[arg(long, value_name = "D")]
    pub deadline: Option<String>,
    /// Cycles per second of the run (e.g. 1kHz, 1000), for the per-hour figure; a latency
    /// result's own interval is used otherwise.
    #[arg(long, value_name = "HZ")]
    pub rate: Option<String>,
    /// Print the statement as JSON (`{"distribution_free": {...}}` or `{"plan": {...}}`).
    #[arg(long)]
    pub json: bool,
}

/// `preempt history` actions.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum HistoryAction {
    /// List the stored runs, newest first (the default).
    List,
    /// Print the stored JSON of a run.
    Show {
        /// Run id.
        id: i64,
    },
    /// Write the stored JSON of a run to a file.
    Export {
        /// Run id.
        id: i64,
        /// Destination file.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Add existing result files (JSON written by preempt) to the history.
    Import {
        /// Result files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Remove a run.
    Delete {
        /// Run id.
        id: i64,
    },
}

/// `preempt history`.
#[derive(Debug, Clone, clap::Args)]
pub struct HistoryCmdArgs {
    /// What to do [default: list].
    #[command(subcommand)]
    pub action: Option<HistoryAction>,
    /// Runs to list.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// List only runs of this kind (check, latency, matrix, wakeup, rtio_bench, micro).
    #[arg(long)]
    pub kind: Option<String>,
    /// Print the listing as JSON.
    #[arg(long)]
    pub json: bool,
    /// The database.
    #[command(flatten)]
    pub db: HistoryArgs,
}

/// `preempt monitor`.
#[derive(Debug, Clone, Args)]
pub struct MonitorArgs {
    /// Address to serve /metrics on (loopback unless you name another address).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9464")]
    pub listen: String,
    /// CPUs to measure, one thread each, e.g. 0,2-3 [default: every online CPU].
    #[arg(short = 'a', long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Period of every measuring thread, microseconds.
    #[arg(short, long, value_name = "US", default_value_t = 1000)]
    pub interval: u64,
    /// SCHED_FIFO priority of the measuring threads, 1..=99.
    #[arg(short, long, default_value_t = 80, allow_negative_numbers = true)]
    pub priority: i64,
    /// Sliding window of the recent maximum and the steal-time verdict, seconds.
    #[arg(long, value_name = "S", default_value_t = 60)]
    pub window: u64,
    /// Re-run the readiness audit (preempt check, without its wake-up measurement, which
    /// would disturb the monitor's loops) every S seconds.
    #[arg(long, value_name = "S", default_value_t = 300)]
    pub recheck: u64,
    /// Stop after this long, e.g. 1h [default: run until SIGINT/SIGTERM].
    #[arg(short = 'D', long, value_name = "TIME")]
    pub duration: Option<String>,
    /// Write the result as JSON to FILE at the end.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Print the result as JSON on stdout instead of the summary lines.
    #[arg(long)]
    pub json: bool,
    /// Results history.
    #[command(flatten)]
    pub history: HistoryArgs,
}

/// Where the history lives, shared by every subcommand that records runs.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HistoryArgs {
    /// History database [default: $PREEMPT_HISTORY, else $XDG_DATA_HOME/preempt/history.sqlite].
    #[arg(long, value_name = "FILE", global = true)]
    pub history_db: Option<PathBuf>,
    /// Do not record this run in the history database.
    #[arg(long, global = true)]
    pub no_history: bool,
}

impl HistoryArgs {
    /// The validated settings.
    pub fn config(&self) -> HistoryConfig {
        HistoryConfig {
            history_db: self.history_db.clone(),
            no_history: self.no_history,
        }
    }
}

/// `preempt run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// About 30 seconds: shorter runs, fewer samples.
    #[arg(long, conflicts_with = "long")]
    pub quick: bool,
    /// About 12 minutes: longer runs for rarer worst cases.
    #[arg(long)]
    pub long: bool,
    /// Output directory for index.html, plots/ and the JSON results.
    #[arg(short, long, value_name = "DIR", default_value = "preempt-report")]
    pub out: PathBuf,
    /// Which program generates the stress.
    #[arg(long, value_enum, default_value_t = StressTool::Builtin)]
    pub stress_tool: StressTool,
    /// Real-time priority of the measuring threads.
    #[arg(short, long, default_value_t = 80)]
    pub priority: u8,
    /// Do not write PNG copies of the figures.
    #[arg(long)]
    pub no_png: bool,
    /// Never draw the progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Do not explain the latency runs' outliers from the kernel trace (by default they are,
    /// as `preempt latency --explain` does, wherever tracefs can be used: root; tracing adds a
    /// few µs to the median latency).
    #[arg(long)]
    pub no_explain: bool,
    /// Results history.
    #[command(flatten)]
    pub history: HistoryArgs,
}
