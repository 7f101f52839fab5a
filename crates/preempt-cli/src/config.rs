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

use crate::cli::{LatencyArgs, OutputArgs, PolicyArg, RtArgs, StressKind, StressTool};
use crate::error::usage;
use crate::results::PolicyRecord;

/// Nanoseconds per microsecond.
pub const NS_PER_US: u64 = 1_000;
/// Default measuring time when neither `--loops` nor `--duration` is given.
pub const DEFAULT_DURATION_NS: u64 = 10_000_000_000;
/// Default real-time priority: high, but below the kernel's own priority-99 threads
/// (migration, watchdog) so the measurement does not starve them.
pub const DEFAULT_PRIORITY: u8 = 80;
/// Largest memory `--trace-samples` may preallocate (the buffer is locked in RAM).
pub const MAX_TRACE_BYTES: u64 = 2 << 30;
/// SCHED_DEADLINE's smallest runtime: the kernel rejects runtimes below 1024 ns
/// (`__checkparam_dl`, kernel/sched/deadline.c).
pub const MIN_DL_RUNTIME_NS: u64 = 1024;

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

/// Expands a `--cpus` list and checks every CPU is online.
pub fn parse_cpus(list: &str, online: &[usize]) -> Result<Vec<usize>> {
    let cpus = preempt_io::sys::cpu::parse_cpu_list(list)
        .map_err(|e| usage(format!("--cpus '{list}': {e}; write e.g. 0,2-3")))?;
    if cpus.is_empty() {
        return Err(usage(
            "--cpus is empty; name at least one CPU, e.g. --cpus 0",
        ));
    }
    if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(usage(format!(
            "--cpus: CPU {bad} is not online (online: {})",
            online
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    Ok(cpus)
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
pub struct PolicyConfig {
    /// What to pass to `sched_setattr`.
    pub policy: Policy,
    /// How it is recorded.
    pub record: PolicyRecord,
}

impl PolicyConfig {
    /// SCHED_OTHER with a nice value.
    pub fn other(nice: i32) -> Self {
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
    pub fn fifo(priority: u8) -> Self {
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
    pub fn rr(priority: u8) -> Self {
        Self {
            policy: Policy::RoundRobin { priority },
            record: PolicyRecord {
                name: "rr".into(),
                ..Self::fifo(priority).record
            },
        }
    }
    /// SCHED_DEADLINE.
    pub fn deadline(runtime_ns: u64, deadline_ns: u64, period_ns: u64) -> Self {
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
    pub fn is_deadline(&self) -> bool {
        matches!(self.policy, Policy::Deadline { .. })
    }
    /// The deadline used for counting misses: `--deadline` for SCHED_DEADLINE, else the
    /// period.
    pub fn relative_deadline_ns(&self, interval_ns: u64) -> u64 {
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
    pub fn new(kinds: &[StressKind], tool: StressTool) -> Self {
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
    pub fn heavy(tool: StressTool) -> Self {
        Self::new(&[StressKind::All], tool)
    }
    /// Kind names, e.g. `["cpu", "io"]`.
    pub fn names(&self) -> Vec<String> {
        self.kinds
            .iter()
            .map(|k| kind_name(*k).to_string())
            .collect()
    }
    /// `builtin` or `stress-ng`.
    pub fn tool_name(&self) -> &'static str {
        match self.tool {
            StressTool::Builtin => "builtin",
            StressTool::StressNg => "stress-ng",
        }
    }
}

/// The name of a stress kind.
pub fn kind_name(k: StressKind) -> &'static str {
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
pub struct OutputConfig {
    /// JSON on stdout.
    pub json_stdout: bool,
    /// JSON file.
    pub export_json: Option<PathBuf>,
    /// CSV file.
    pub export_csv: Option<PathBuf>,
    /// Progress bar allowed (still only on a terminal).
    pub progress: bool,
}

impl From<&OutputArgs> for OutputConfig {
    fn from(a: &OutputArgs) -> Self {
        Self {
            json_stdout: a.json,
            export_json: a.export_json.clone(),
            export_csv: a.export_csv.clone(),
            progress: !a.no_progress,
        }
    }
}

/// Validated memory/power settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtConfig {
    /// mlockall.
    pub mlock: bool,
    /// Hold /dev/cpu_dma_latency at 0.
    pub dma_latency: bool,
}

impl From<&RtArgs> for RtConfig {
    fn from(a: &RtArgs) -> Self {
        Self {
            mlock: !a.no_mlock || a.mlock,
            dma_latency: !a.no_dma_latency,
        }
    }
}

/// A validated `preempt latency` run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyConfig {
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
    /// Load.
    pub stress: StressConfig,
    /// Memory/power.
    pub rt: RtConfig,
    /// Output.
    pub output: OutputConfig,
}

impl LatencyConfig {
    /// Validates `preempt latency` arguments against the online CPUs.
    pub fn from_args(a: &LatencyArgs, online: &[usize]) -> Result<Self> {
        if a.interval == 0 {
            return Err(usage("--interval must be at least 1 us"));
        }
        let interval_ns = a.interval * NS_PER_US;
        let policy = policy_from_args(a)?;
        if let Some(p) = a.period {
            if a.policy == PolicyArg::Deadline && p != a.interval {
                return Err(usage(format!(
                    "--period {p} differs from --interval {}: the loop releases once per \
                     period, so give the same value to both (or only --interval)",
                    a.interval
                )));
            }
        }
        let duration_ns = match (&a.loops, &a.duration) {
            (Some(0), _) => return Err(usage("--loops must be at least 1")),
            (Some(_), _) => None,
            (None, Some(d)) => Some(parse_duration_ns(d)?),
            (None, None) => Some(DEFAULT_DURATION_NS),
        };
        let releases = match (a.loops, duration_ns) {
            (Some(l), _) => l,
            (None, Some(d)) => (d / interval_ns).max(1),
            (None, None) => unreachable!("one of loops/duration is always set above"),
        };
        let cpus = match &a.cpus {
            Some(list) => parse_cpus(list, online)?,
            None => online.to_vec(),
        };
        let work_ns = a.work_us * NS_PER_US;
        if work_ns >= interval_ns {
            return Err(usage(format!(
                "--work-us {} does not fit in --interval {}: the compute step must be shorter \
                 than the period",
                a.work_us, a.interval
            )));
        }
        if let Some(rt) = a.runtime {
            if work_ns > rt * NS_PER_US {
                return Err(usage(format!(
                    "--work-us {} exceeds --runtime {}: SCHED_DEADLINE would throttle the \
                     loop every period; raise --runtime",
                    a.work_us, rt
                )));
            }
        }
        if a.timer_slack_ns == 0 {
            return Err(usage(
                "--timer-slack-ns must be at least 1 (0 tells the kernel to restore the \
                 default 50 us slack)",
            ));
        }
        if let Some(b) = a.break_at {
            if b == 0 {
                return Err(usage("--break-at must be at least 1 us"));
            }
        }
        if a.trace_samples.is_some() {
            let bytes = releases
                .saturating_mul(cpus.len() as u64)
                .saturating_mul(24);
            if bytes > MAX_TRACE_BYTES {
                return Err(usage(format!(
                    "--trace-samples would need {} MiB of locked memory for {releases} releases \
                     x {} threads; shorten --duration/--loops or measure fewer --cpus",
                    bytes >> 20,
                    cpus.len()
                )));
            }
        }
        Ok(Self {
            policy,
            interval_ns,
            releases,
            cpus,
            work_ns,
            timer_slack_ns: a.timer_slack_ns,
            trace_samples: a.trace_samples.clone(),
            break_at_ns: a.break_at.map(|b| b * NS_PER_US),
            stress: StressConfig::new(&a.stress.stress, a.stress.stress_tool),
            rt: RtConfig::from(&a.rt),
            output: OutputConfig::from(&a.output),
        })
    }
}

fn policy_from_args(a: &LatencyArgs) -> Result<PolicyConfig> {
    let dl_flags = a.runtime.is_some() || a.deadline.is_some() || a.period.is_some();
    match a.policy {
        PolicyArg::Other => {
            if a.priority.is_some() {
                return Err(usage(
                    "--priority applies to --policy fifo/rr; SCHED_OTHER takes --nice -20..19",
                ));
            }
            if dl_flags {
                return Err(usage(
                    "--runtime/--deadline/--period apply to --policy deadline",
                ));
            }
            let nice = a.nice.unwrap_or(0);
            let nice = i32::try_from(nice)
                .ok()
                .filter(|n| (-20..=19).contains(n))
                .ok_or_else(|| usage(format!("--nice {nice} is out of range: use -20..=19")))?;
            Ok(PolicyConfig::other(nice))
        }
        PolicyArg::Fifo | PolicyArg::Rr => {
            let name = if a.policy == PolicyArg::Fifo {
                "SCHED_FIFO"
            } else {
                "SCHED_RR"
            };
            if a.nice.is_some() {
                return Err(usage(format!(
                    "--nice applies to --policy other; {name} takes --priority 1..99"
                )));
            }
            if dl_flags {
                return Err(usage(
                    "--runtime/--deadline/--period apply to --policy deadline",
                ));
            }
            let p = rt_priority(a.priority.unwrap_or(i64::from(DEFAULT_PRIORITY)), name)?;
            Ok(if a.policy == PolicyArg::Fifo {
                PolicyConfig::fifo(p)
            } else {
                PolicyConfig::rr(p)
            })
        }
        PolicyArg::Deadline => {
            if a.priority.is_some() || a.nice.is_some() {
                return Err(usage(
                    "--priority/--nice do not apply to --policy deadline; it takes --runtime, \
                     --deadline and --period",
                ));
            }
            let runtime_us = a.runtime.ok_or_else(|| {
                usage(format!(
                    "--policy deadline needs --runtime US (the CPU time reserved per period), \
                     e.g. --runtime {}",
                    (a.interval / 10).max(2)
                ))
            })?;
            let period_ns = a.period.unwrap_or(a.interval) * NS_PER_US;
            let deadline_ns = a.deadline.map_or(period_ns, |d| d * NS_PER_US);
            let runtime_ns = runtime_us * NS_PER_US;
            if runtime_ns < MIN_DL_RUNTIME_NS {
                return Err(usage(
                    "--runtime must be at least 2 us (the kernel's minimum is 1024 ns)",
                ));
            }
            if !(runtime_ns <= deadline_ns && deadline_ns <= period_ns) {
                return Err(usage(format!(
                    "SCHED_DEADLINE needs --runtime <= --deadline <= --period; got {} <= {} <= {} us",
                    runtime_us,
                    deadline_ns / NS_PER_US,
                    period_ns / NS_PER_US
                )));
            }
            Ok(PolicyConfig::deadline(runtime_ns, deadline_ns, period_ns))
        }
    }
}

/// Parameters of one latency measurement, shared by `latency` and each `matrix` cell.
impl LatencyConfig {
    /// A `matrix` cell: the given policy at `interval_ns` for `duration_ns`.
    pub fn for_matrix_cell(
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
            stress: StressConfig::default(),
            rt,
            output: OutputConfig::default(),
        }
    }
}

/// The eight policy rows of the UAV paper (seed 001), for a period.
pub fn matrix_rows(period_ns: u64) -> Vec<(String, PolicyConfig)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn latency(args: &[&str]) -> Result<LatencyConfig> {
        let mut argv = vec!["preempt", "latency"];
        argv.extend_from_slice(args);
        let Command::Latency(a) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!()
        };
        LatencyConfig::from_args(&a, &[0, 1])
    }

    fn err(args: &[&str]) -> String {
        format!("{:#}", latency(args).unwrap_err())
    }

    #[test]
    fn defaults() {
        let c = latency(&[]).unwrap();
        assert_eq!(c.policy, PolicyConfig::fifo(80));
        assert_eq!((c.interval_ns, c.releases), (1_000_000, 10_000));
        assert_eq!(c.cpus, vec![0, 1]);
        assert!(c.rt.mlock && c.rt.dma_latency);
        assert!(
            !RtConfig::from(&RtArgs {
                mlock: false,
                no_mlock: true,
                no_dma_latency: true
            })
            .mlock
        );
    }

    #[test]
    fn durations_and_loops() {
        assert_eq!(latency(&["-l", "200", "-i", "500"]).unwrap().releases, 200);
        assert_eq!(latency(&["-D", "1s", "-i", "250"]).unwrap().releases, 4000);
        assert_eq!(parse_duration_ns("1.5m").unwrap(), 90_000_000_000);
        assert!(err(&["-D", "10 parsecs"]).contains("unknown unit"));
        assert!(err(&["-D", "0"]).contains("--duration"));
    }

    #[test]
    fn impossible_combinations_name_the_flag() {
        assert!(err(&["--priority", "120"]).starts_with("--priority 120 is out of range"));
        assert!(err(&["--priority", "0"]).contains("1..=99"));
        assert!(err(&["--policy", "deadline"]).starts_with("--policy deadline needs --runtime"));
        assert!(err(&["--policy", "other", "--priority", "5"]).contains("--nice"));
        assert!(err(&["--nice", "-5"]).contains("--policy other"));
        assert!(err(&["--policy", "other", "--nice", "30"]).contains("-20..=19"));
        assert!(err(&["--runtime", "100"]).contains("--policy deadline"));
        assert!(err(&["--policy", "deadline", "--runtime", "900", "-i", "500"]).contains("<="));
        assert!(
            err(&[
                "--policy",
                "deadline",
                "--runtime",
                "100",
                "--period",
                "2000"
            ])
            .contains("--period 2000 differs")
        );
        assert!(err(&["--cpus", "7"]).contains("CPU 7 is not online"));
        assert!(err(&["--cpus", "x"]).contains("--cpus 'x'"));
        assert!(err(&["--work-us", "1000"]).contains("--work-us 1000 does not fit"));
        assert!(err(&["--interval", "0"]).contains("--interval"));
        assert!(err(&["--timer-slack-ns", "0"]).contains("--timer-slack-ns"));
        assert!(err(&["--loops", "0"]).contains("--loops"));
        assert!(err(&["--trace-samples", "x.csv", "-D", "100h", "-i", "10"]).contains("MiB"));
    }

    #[test]
    fn deadline_defaults_to_implicit_deadline() {
        let c = latency(&["--policy", "deadline", "--runtime", "400", "-i", "4000"]).unwrap();
        assert_eq!(
            c.policy,
            PolicyConfig::deadline(400_000, 4_000_000, 4_000_000)
        );
        assert_eq!(c.policy.relative_deadline_ns(c.interval_ns), 4_000_000);
        assert_eq!(c.policy.record.label(), "deadline:400us");
    }

    #[test]
    fn stress_all_expands() {
        let s = StressConfig::new(&[StressKind::Io, StressKind::All], StressTool::Builtin);
        assert_eq!(s.names(), ["cpu", "memory", "io", "sched"]);
    }

    #[test]
    fn matrix_has_the_papers_eight_rows() {
        let rows = matrix_rows(4_000_000);
        assert_eq!(rows.len(), 8);
        assert_eq!(
            rows[7].1,
            PolicyConfig::deadline(800_000, 4_000_000, 4_000_000)
        );
    }
}
