//! Validated configurations ("hiargs") built from the raw command line ([`crate::cli`]).
//!
//! Every check that can be done before touching the scheduler is done here, so a wrong flag
//! or an impossible combination fails in one line that names the flag and the fix, before
//! any thread starts.
//!
//! ```
//! use preempt_cli::config::parse_duration_ns;
//! assert_eq!(parse_duration_ns("250ms").unwrap(), 250_000_000);
//! assert_eq!(parse_duration_ns("2").unwrap(), 2_000_000_000);
//! assert!(parse_duration_ns("fast").is_err());
//! ```

use std::path::PathBuf;

use anyhow::Result;
use preempt_io::sys::sched::{MAX_RT_PRIORITY, MIN_RT_PRIORITY, Policy};
use serde::{Deserialize, Serialize};

use crate::error::usage;
use crate::results::PolicyRecord;

/// Nanoseconds per microsecond.
pub(crate) const NS_PER_US: u64 = 1_000;
/// Default measuring time when neither `--loops` nor `--duration` is given.
pub(crate) const DEFAULT_DURATION_NS: u64 = 10_000_000_000;
/// Default real-time priority: high, but below the kernel's own priority-99 threads
/// (migration, watchdog) so the measurement does not starve them.
pub(crate) const DEFAULT_PRIORITY: u8 = 80;
/// Largest memory `--trace-samples` may preallocate (the buffer is locked in RAM).
pub const MAX_TRACE_BYTES: u64 = 2 << 30;
/// SCHED_DEADLINE's smallest runtime: the kernel rejects runtimes below 1024 ns
/// (`__checkparam_dl`, kernel/sched/deadline.c).
pub(crate) const MIN_DL_RUNTIME_NS: u64 = 1024;

/// A built-in stressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StressTool {
    /// preempt's own stressors (no external tool needed).
    #[default]
    Builtin,
    /// stress-ng, when installed (same kinds: --cpu, --stream, --hdd, --hackbench... mapped).
    StressNg,
}

/// A scheduling policy name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// An event source for `preempt wakeup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadArg {
    /// No load.
    Idle,
    /// The --stress stressors.
    Stress,
    /// Idle first, then under stress.
    Both,
}

/// A benchmark set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
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

/// Parses a duration such as `500ms`, `30s`, `5m`, `2h`, `1500us`; a bare number is seconds.
pub fn parse_duration_ns(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        usage(format!(
            "--duration '{text}' is not a duration; write e.g. 500ms, 30s, 5m or 2h"
        ))
    })?;
    let scale = match unit.trim() {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        other => {
            return Err(usage(format!(
                "--duration '{text}': unknown unit '{other}'; use us, ms, s, m or h"
            )));
        }
    };
    let ns = value * scale;
    if !(1.0..1e18).contains(&ns) {
        return Err(usage(format!(
            "--duration '{text}' must be between 1 ns and 30 years"
        )));
    }
    Ok(ns as u64)
}

/// `value` microseconds of the flag `flag` in nanoseconds, refused (usage error naming the
/// flag) where the product would not fit in 64 bits: a wrapped multiplication turned
/// `--explain=18446744073709552` into a 384 ns threshold.
///
/// ```
/// use preempt_cli::config::us_to_ns;
/// assert_eq!(us_to_ns(250, "--interval").unwrap(), 250_000);
/// assert!(us_to_ns(18_446_744_073_709_552, "--explain").is_err());
/// ```
pub fn us_to_ns(value: u64, flag: &str) -> Result<u64> {
    per_unit(value, NS_PER_US, flag, "us")
}

/// `value` seconds of the flag `flag` in nanoseconds, refused like [`us_to_ns`].
pub(crate) fn s_to_ns(value: u64, flag: &str) -> Result<u64> {
    per_unit(value, 1_000_000_000, flag, "s")
}

fn per_unit(value: u64, ns_per_unit: u64, flag: &str, unit: &str) -> Result<u64> {
    value.checked_mul(ns_per_unit).ok_or_else(|| {
        usage(format!(
            "{flag} {value} is too large: at most {} {unit}",
            u64::MAX / ns_per_unit
        ))
    })
}

/// Expands a `--cpus` list and checks every CPU is online.
pub(crate) fn parse_cpus(list: &str, online: &[usize]) -> Result<Vec<usize>> {
    let cpus = preempt_io::sys::cpu::parse_cpu_list(list)
        .map_err(|e| usage(format!("--cpus '{list}': {e}; write e.g. 0,2-3")))?;
    if cpus.is_empty() {
        return Err(usage(
            "--cpus is empty; name at least one CPU, e.g. --cpus 0",
        ));
    }
    for &c in &cpus {
        online_cpu(c, "--cpus", online)?;
    }
    Ok(cpus)
}

/// `cpu` (given with `flag`) when it is online, else a usage error naming the online CPUs.
pub(crate) fn online_cpu(cpu: usize, flag: &str, online: &[usize]) -> Result<usize> {
    if online.contains(&cpu) {
        return Ok(cpu);
    }
    Err(usage(format!(
        "{flag}: CPU {cpu} is not online (online: {})",
        online
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",")
    )))
}

/// Validates a real-time priority.
pub fn rt_priority(value: i64, policy: &str) -> Result<u8> {
    u8::try_from(value)
        .ok()
        .filter(|p| (MIN_RT_PRIORITY..=MAX_RT_PRIORITY).contains(p))
        .ok_or_else(|| {
            usage(format!(
                "--priority {value} is out of range: {policy} takes {MIN_RT_PRIORITY}..={MAX_RT_PRIORITY} \
                 (use --policy other --nice -20..19 for normal threads)"
            ))
        })
}

/// The validated scheduling policy of a run, with its record for result files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PolicyConfig {
    /// What to pass to `sched_setattr`.
    pub policy: Policy,
    /// How it is recorded.
    pub record: PolicyRecord,
}

impl PolicyConfig {
    /// SCHED_OTHER with a nice value.
    pub(crate) fn other(nice: i32) -> Self {
        Self {
            policy: Policy::Other { nice },
            record: PolicyRecord {
                name: "other".into(),
                priority: None,
                nice: Some(nice),
                runtime_ns: None,
                deadline_ns: None,
                period_ns: None,
            },
        }
    }
    /// SCHED_FIFO.
    pub(crate) fn fifo(priority: u8) -> Self {
        Self {
            policy: Policy::Fifo { priority },
            record: PolicyRecord {
                name: "fifo".into(),
                priority: Some(priority),
                nice: None,
                runtime_ns: None,
                deadline_ns: None,
                period_ns: None,
            },
        }
    }
    /// SCHED_RR.
    pub(crate) fn rr(priority: u8) -> Self {
        Self {
            policy: Policy::RoundRobin { priority },
            record: PolicyRecord {
                name: "rr".into(),
                ..Self::fifo(priority).record
            },
        }
    }
    /// SCHED_DEADLINE.
    pub(crate) fn deadline(runtime_ns: u64, deadline_ns: u64, period_ns: u64) -> Self {
        Self {
            policy: Policy::Deadline {
                runtime_ns,
                deadline_ns,
                period_ns,
            },
            record: PolicyRecord {
                name: "deadline".into(),
                priority: None,
                nice: None,
                runtime_ns: Some(runtime_ns),
                deadline_ns: Some(deadline_ns),
                period_ns: Some(period_ns),
            },
        }
    }
    /// Whether this is SCHED_DEADLINE (which cannot be pinned to one CPU).
    pub(crate) fn is_deadline(&self) -> bool {
        matches!(self.policy, Policy::Deadline { .. })
    }
    /// The deadline used for counting misses: `--deadline` for SCHED_DEADLINE, else the
    /// period.
    pub(crate) fn relative_deadline_ns(&self, interval_ns: u64) -> u64 {
        match self.policy {
            Policy::Deadline { deadline_ns, .. } => deadline_ns,
            _ => interval_ns,
        }
    }
}

/// Validated stress settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StressConfig {
    /// Stressors (expanded: `all` becomes the four kinds), sorted, deduplicated.
    pub kinds: Vec<StressKind>,
    /// Generator.
    pub tool: StressTool,
}

impl StressConfig {
    /// Expands `all` and sorts.
    pub(crate) fn new(kinds: &[StressKind], tool: StressTool) -> Self {
        let mut out: Vec<StressKind> = kinds
            .iter()
            .flat_map(|k| match k {
                StressKind::All => {
                    vec![
                        StressKind::Cpu,
                        StressKind::Memory,
                        StressKind::Io,
                        StressKind::Sched,
                    ]
                }
                k => vec![*k],
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        Self { kinds: out, tool }
    }
    /// The heavy level of `matrix`: every kind.
    pub(crate) fn heavy(tool: StressTool) -> Self {
        Self::new(&[StressKind::All], tool)
    }
    /// Kind names, e.g. `["cpu", "io"]`.
    pub(crate) fn names(&self) -> Vec<String> {
        self.kinds
            .iter()
            .map(|k| kind_name(*k).to_string())
            .collect()
    }
    /// `builtin` or `stress-ng`.
    pub(crate) fn tool_name(&self) -> &'static str {
        match self.tool {
            StressTool::Builtin => "builtin",
            StressTool::StressNg => "stress-ng",
        }
    }
}

/// The name of a stress kind.
pub(crate) fn kind_name(k: StressKind) -> &'static str {
    match k {
        StressKind::Cpu => "cpu",
        StressKind::Memory => "memory",
        StressKind::Io => "io",
        StressKind::Sched => "sched",
        StressKind::All => "all",
    }
}

/// Validated output settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct OutputConfig {
    /// JSON on stdout.
    pub json_stdout: bool,
    /// JSON file.
    pub export_json: Option<PathBuf>,
    /// CSV file.
    pub export_csv: Option<PathBuf>,
    /// Progress bar allowed (still only on a terminal).
    pub progress: bool,
}

/// Validated memory/power settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RtConfig {
    /// mlockall.
    pub mlock: bool,
    /// Hold /dev/cpu_dma_latency at 0.
    pub dma_latency: bool,
}

/// `--explain[=US]`: which outliers to explain, and where the trace goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExplainConfig {
    /// Explain samples at or above this latency (`None`: above each thread's p99.9).
    pub threshold_ns: Option<u64>,
    /// `--trace-out FILE`.
    pub trace_out: Option<PathBuf>,
}

/// A validated `preempt latency` run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LatencyConfig {
    /// Policy of the measuring threads.
    pub policy: PolicyConfig,
    /// Period.
    pub interval_ns: u64,
    /// Releases per thread.
    pub releases: u64,
    /// One thread per CPU.
    pub cpus: Vec<usize>,
    /// Compute step per period (0 = none).
    pub work_ns: u64,
    /// Timer slack of the measuring threads.
    pub timer_slack_ns: u64,
    /// Raw samples file.
    pub trace_samples: Option<PathBuf>,
    /// `--break-at`.
    pub break_at_ns: Option<u64>,
    /// `--explain[=US]` and `--trace-out`.
    pub explain: Option<ExplainConfig>,
    /// Load.
    pub stress: StressConfig,
    /// Memory/power.
    pub rt: RtConfig,
    /// Output.
    pub output: OutputConfig,
}

/// Parameters of one latency measurement, shared by `latency` and each `matrix` cell.
impl LatencyConfig {
    /// A `matrix` cell: the given policy at `interval_ns` for `duration_ns`.
    pub(crate) fn for_matrix_cell(
        policy: PolicyConfig,
        interval_ns: u64,
        duration_ns: u64,
        cpus: Vec<usize>,
        work_ns: u64,
        rt: RtConfig,
    ) -> Self {
        Self {
            policy,
            interval_ns,
            releases: (duration_ns / interval_ns).max(1),
            cpus,
            work_ns,
            timer_slack_ns: 1,
            trace_samples: None,
            break_at_ns: None,
            explain: None,
            stress: StressConfig::default(),
            rt,
            output: OutputConfig::default(),
        }
    }
}

/// The eight policy rows of the UAV paper (seed 001), for a period.
pub(crate) fn matrix_rows(period_ns: u64) -> Vec<(String, PolicyConfig)> {
    vec![
        ("SCHED_OTHER nice 0".into(), PolicyConfig::other(0)),
        ("SCHED_OTHER nice -19".into(), PolicyConfig::other(-19)),
        ("SCHED_RR 50".into(), PolicyConfig::rr(50)),
        ("SCHED_RR 99".into(), PolicyConfig::rr(99)),
        ("SCHED_FIFO 50".into(), PolicyConfig::fifo(50)),
        ("SCHED_FIFO 99".into(), PolicyConfig::fifo(99)),
        (
            "SCHED_DEADLINE 400us".into(),
            PolicyConfig::deadline(400_000, period_ns, period_ns),
        ),
        (
            "SCHED_DEADLINE 800us".into(),
            PolicyConfig::deadline(800_000, period_ns, period_ns),
        ),
    ]
}
