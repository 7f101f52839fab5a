//! Raw arguments → validated configurations ("lowargs" → "hiargs", ripgrep's `flags/` split).
//!
//! The only code that reads both the clap structs of [`super`] and the configurations of
//! [`crate::config`]: every check that can be done before touching the scheduler is done here,
//! so a wrong flag fails in one line that names the flag and the fix, before any thread starts.

use anyhow::{Context, Result};

use super::{LatencyArgs, MicroArgs, OutputArgs, RtArgs};
use crate::config::{
    DEFAULT_DURATION_NS, DEFAULT_PRIORITY, LatencyConfig, MAX_TRACE_BYTES, MIN_DL_RUNTIME_NS,
    NS_PER_US, OutputConfig, PolicyArg, PolicyConfig, RtConfig, StressConfig, parse_cpus,
    parse_duration_ns, rt_priority, us_to_ns,
};
use crate::error::usage;
use crate::micro::{MicroConfig, all_ids};

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

impl From<&RtArgs> for RtConfig {
    fn from(a: &RtArgs) -> Self {
        Self {
            mlock: !a.no_mlock || a.mlock,
            dma_latency: !a.no_dma_latency,
        }
    }
}

impl LatencyConfig {
    /// Validates `preempt latency` arguments against the online CPUs.
    pub(crate) fn from_args(a: &LatencyArgs, online: &[usize]) -> Result<Self> {
        if a.interval == 0 {
            return Err(usage("--interval must be at least 1 us"));
        }
        let interval_ns = us_to_ns(a.interval, "--interval")?;
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
        let work_ns = us_to_ns(a.work_us, "--work-us")?;
        if work_ns >= interval_ns {
            return Err(usage(format!(
                "--work-us {} does not fit in --interval {}: the compute step must be shorter \
                 than the period",
                a.work_us, a.interval
            )));
        }
        if let Some(rt) = a.runtime {
            if work_ns > us_to_ns(rt, "--runtime")? {
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
        if a.explain == Some(Some(0)) {
            return Err(usage(
                "--explain=0 would explain every sample: give the threshold in us (at least 1, \
                 e.g. --explain=100), or a bare --explain for the samples above each thread's \
                 p99.9",
            ));
        }
        if a.trace_out.is_some() && a.explain.is_none() {
            return Err(usage(
                "--trace-out writes the windows --explain explains: add --explain (or \
                 --explain=US), or drop --trace-out",
            ));
        }
        if a.explain.is_some() && a.policy == PolicyArg::Deadline {
            return Err(usage(
                "--explain needs pinned threads, and SCHED_DEADLINE threads cannot be pinned \
                 (their affinity must span the root domain), so no outlier could be explained; \
                 measure --policy fifo/rr/other with --explain, or drop --explain",
            ));
        }
        if a.trace_samples.is_some() || a.explain.is_some() {
            let bytes = releases
                .saturating_mul(cpus.len() as u64)
                .saturating_mul(24);
            if bytes > MAX_TRACE_BYTES {
                return Err(usage(format!(
                    "--trace-samples/--explain would need {} MiB of locked memory for {releases} releases \
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
            break_at_ns: a.break_at.map(|b| us_to_ns(b, "--break-at")).transpose()?,
            explain: a
                .explain
                .map(|us| -> Result<_> {
                    Ok(crate::config::ExplainConfig {
                        threshold_ns: us.map(|us| us_to_ns(us, "--explain")).transpose()?,
                        trace_out: a.trace_out.clone(),
                    })
                })
                .transpose()?,
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
            let period_ns = us_to_ns(a.period.unwrap_or(a.interval), "--period")?;
            let deadline_ns = match a.deadline {
                Some(d) => us_to_ns(d, "--deadline")?,
                None => period_ns,
            };
            let runtime_ns = us_to_ns(runtime_us, "--runtime")?;
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

impl MicroConfig {
    /// Validates the flags.
    pub fn from_args(a: &MicroArgs, online: &[usize]) -> Result<Self> {
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
        if a.priority == 1 {
            return Err(usage(
                "--priority 1 leaves no lower priority for the partner threads (they run 10 \
                 below, at least 1), so the lower-priority benchmarks would measure equals: use \
                 2..=98, or 0 for SCHED_OTHER",
            ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::config::{StressKind, StressTool, matrix_rows};
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
