//! Threats to the validity of a measurement, each with the hint that removes it.
//!
//! A run collects [`Warning`]s while it sets up (policy, memory locking, kernel) and while it
//! runs; they are printed to stderr before the results and stored in the result file, so a
//! number is never shown without what may have distorted it (after hyperfine's
//! `src/output/warnings.rs`).
//!
//! ```
//! use preempt_cli::warnings::Warning;
//! let w = Warning::GovernorNotPerformance { cpus: vec![0, 1], governor: "powersave".into() };
//! assert_eq!(w.code(), "governor-not-performance");
//! assert!(w.hint().contains("performance"));
//! ```

use std::fmt;

use crate::results::WarningRecord;

/// One threat to validity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// The measuring threads run under SCHED_OTHER or SCHED_DEADLINE was not requested.
    NotRealTimePolicy {
        /// Policy name.
        policy: String,
    },
    /// The real-time policy the run asked for was refused for lack of privilege; the run fell
    /// back to SCHED_OTHER (the command exits 3 after writing what it measured).
    RealTimeRefused {
        /// What was asked for, e.g. `SCHED_FIFO 80`.
        requested: String,
        /// The kernel's answer.
        error: String,
        /// The capability or limit that grants it ([`crate::error::privilege_hint`]).
        grant: String,
    },
    /// `mlockall` failed: page faults may add milliseconds to a sample.
    MlockFailed {
        /// The error.
        error: String,
    },
    /// Memory locking was switched off with `--no-mlock`.
    MlockDisabled,
    /// The kernel is not PREEMPT_RT.
    NotPreemptRt {
        /// Preemption model found.
        model: String,
    },
    /// cpufreq governor is not `performance`.
    GovernorNotPerformance {
        /// CPUs concerned.
        cpus: Vec<usize>,
        /// Their governor.
        governor: String,
    },
    /// Running in a virtual machine.
    VirtualMachine {
        /// Hypervisor name.
        hypervisor: String,
    },
    /// `/dev/cpu_dma_latency` could not be held at 0: deep C-states add exit latency.
    CpuDmaLatencyUnset {
        /// The error.
        error: String,
    },
    /// SMT siblings of a measured CPU are online.
    SmtSiblings {
        /// Measured CPUs with a busy-able sibling.
        cpus: Vec<usize>,
    },
    /// A measured CPU is not isolated (isolcpus/nohz_full) although others could be.
    NotIsolated,
    /// SCHED_DEADLINE threads cannot be pinned to one CPU; they migrate.
    DeadlineUnpinned,
    /// The timer slack could not be set.
    TimerSlackFailed {
        /// The error.
        error: String,
    },
    /// Periods were missed: the loop was late by more than a period.
    MissedPeriods {
        /// Total over all threads.
        count: u64,
    },
    /// The run is shorter than what a worst case needs.
    ShortRun {
        /// Samples per thread.
        samples: u64,
    },
    /// The run was interrupted; results cover only what ran.
    Interrupted,
}

impl Warning {
    /// The hint as it applies to `command` (`latency`, `matrix`, `micro`, `run`, ...): it names
    /// only flags that command has ([`Warning::hint`] is the `latency` wording).
    pub fn hint_in(&self, command: &str) -> String {
        match (self, command) {
            (Self::NotRealTimePolicy { .. }, c) if c != "latency" => {
                "run as root or grant CAP_SYS_NICE so the measuring threads can use a \
                 real-time policy"
                    .into()
            }
            (Self::NotIsolated, "micro") => "boot with isolcpus=N nohz_full=N rcu_nocbs=N and \
                 run with --cpu N"
                .into(),
            (Self::NotIsolated, "rtio_bench") => "boot with isolcpus=N nohz_full=N rcu_nocbs=N \
                 and run with --consumer-cpu N (and the simulator on another CPU, --sim-cpu)"
                .into(),
            (Self::NotIsolated, c) if !matches!(c, "latency" | "matrix" | "wakeup") => {
                "boot with isolcpus=N nohz_full=N rcu_nocbs=N, N being the CPU measured (the \
                 last online CPU)"
                    .into()
            }
            (Self::MissedPeriods { .. }, "matrix") => "the loop could not keep up: raise \
                 --period, lower --work-us, or remove the load"
                .into(),
            (Self::MissedPeriods { .. }, c) if c != "latency" => {
                "the loop could not keep up: remove the load".into()
            }
            (Self::ShortRun { .. }, "run") => {
                "use --long (5 minutes per latency run) before trusting the maximum".into()
            }
            (Self::ShortRun { .. }, c) if !matches!(c, "latency" | "matrix") => {
                "run longer before trusting the maximum".into()
            }
            (Self::MlockDisabled, c) if !matches!(c, "latency" | "matrix" | "wakeup" | "micro") => {
                "memory was not locked: page faults may show up as latency".into()
            }
            _ => self.hint(),
        }
    }

    /// [`Warning::to_record`] with the hint of `command` ([`Warning::hint_in`]).
    pub(crate) fn to_record_in(&self, command: &str) -> WarningRecord {
        WarningRecord {
            hint: self.hint_in(command),
            ..self.to_record()
        }
    }

    /// Stable kebab-case identifier, stored in result files.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotRealTimePolicy { .. } => "not-real-time-policy",
            Self::RealTimeRefused { .. } => "real-time-refused",
            Self::MlockFailed { .. } => "mlock-failed",
            Self::MlockDisabled => "mlock-disabled",
            Self::NotPreemptRt { .. } => "not-preempt-rt",
            Self::GovernorNotPerformance { .. } => "governor-not-performance",
            Self::VirtualMachine { .. } => "virtual-machine",
            Self::CpuDmaLatencyUnset { .. } => "cpu-dma-latency-unset",
            Self::SmtSiblings { .. } => "smt-siblings",
            Self::NotIsolated => "not-isolated",
            Self::DeadlineUnpinned => "deadline-unpinned",
            Self::TimerSlackFailed { .. } => "timer-slack-failed",
            Self::MissedPeriods { .. } => "missed-periods",
            Self::ShortRun { .. } => "short-run",
            Self::Interrupted => "interrupted",
        }
    }

    /// How to remove the threat.
    pub fn hint(&self) -> String {
        match self {
            Self::NotRealTimePolicy { .. } => {
                "use --policy fifo (or rr/deadline) to measure what a real-time thread sees".into()
            }
            Self::RealTimeRefused { grant, .. } => grant.clone(),
            Self::MlockFailed { .. } => "run as root, grant CAP_IPC_LOCK, or raise RLIMIT_MEMLOCK \
                 (ulimit -l unlimited / 'memlock' in /etc/security/limits.conf)"
                .into(),
            Self::MlockDisabled => "drop --no-mlock".into(),
            Self::NotPreemptRt { .. } => "boot a PREEMPT_RT kernel (Debian: apt install \
                 linux-image-rt-amd64 / -arm64), or preempt=full on a PREEMPT_DYNAMIC kernel"
                .into(),
            Self::GovernorNotPerformance { .. } => {
                "cpupower frequency-set -g performance (or echo performance > \
                 /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)"
                    .into()
            }
            Self::VirtualMachine { .. } => "the hypervisor can deschedule the vCPU at any time: \
                 measure on bare metal for numbers that describe the hardware"
                .into(),
            Self::CpuDmaLatencyUnset { .. } => {
                "run as root so /dev/cpu_dma_latency can be held at 0, or boot with \
                 processor.max_cstate=1 / idle=poll"
                    .into()
            }
            Self::SmtSiblings { .. } => "take the siblings offline (echo 0 > \
                 /sys/devices/system/cpu/cpuN/online) or boot with nosmt"
                .into(),
            Self::NotIsolated => "boot with isolcpus=N nohz_full=N rcu_nocbs=N and measure \
                 with --cpus N"
                .into(),
            Self::DeadlineUnpinned => "SCHED_DEADLINE needs its affinity to span the root \
                 domain; to pin, create an exclusive cpuset partition"
                .into(),
            Self::TimerSlackFailed { .. } => "check prctl(PR_SET_TIMERSLACK) permissions".into(),
            Self::MissedPeriods { .. } => "the loop could not keep up: raise --interval, \
                 lower --work-us, or remove the load"
                .into(),
            Self::ShortRun { .. } => "run longer (--duration 10m or more) before trusting the \
                 maximum"
                .into(),
            Self::Interrupted => "rerun without interruption for complete numbers".into(),
        }
    }

    /// The record stored in result files.
    pub(crate) fn to_record(&self) -> WarningRecord {
        WarningRecord {
            code: self.code().into(),
            message: self.to_string(),
            hint: self.hint(),
        }
    }
}

fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotRealTimePolicy { policy } => {
                write!(
                    f,
                    "measuring threads run under {policy}, not a real-time policy"
                )
            }
            Self::RealTimeRefused {
                requested, error, ..
            } => write!(
                f,
                "{requested} was refused ({error}): measured under SCHED_OTHER instead"
            ),
            Self::MlockFailed { error } => write!(
                f,
                "mlockall failed ({error}): page faults may distort samples"
            ),
            Self::MlockDisabled => write!(
                f,
                "memory is not locked (--no-mlock): page faults may distort samples"
            ),
            Self::NotPreemptRt { model } => {
                write!(f, "kernel is not PREEMPT_RT (preemption model: {model})")
            }
            Self::GovernorNotPerformance { cpus, governor } => write!(
                f,
                "cpufreq governor is '{governor}' on CPU {}, not 'performance'",
                cpu_list(cpus)
            ),
            Self::VirtualMachine { hypervisor } => {
                write!(f, "running in a virtual machine ({hypervisor})")
            }
            Self::CpuDmaLatencyUnset { error } => {
                write!(
                    f,
                    "/dev/cpu_dma_latency not held at 0 ({error}): C-state exits add latency"
                )
            }
            Self::SmtSiblings { cpus } => {
                write!(
                    f,
                    "SMT siblings of measured CPU {} are online",
                    cpu_list(cpus)
                )
            }
            Self::NotIsolated => write!(f, "measured CPUs are not isolated from other work"),
            Self::DeadlineUnpinned => {
                write!(
                    f,
                    "SCHED_DEADLINE threads are not pinned and may migrate between CPUs"
                )
            }
            Self::TimerSlackFailed { error } => {
                write!(f, "could not set the timer slack ({error})")
            }
            Self::MissedPeriods { count } => write!(f, "{count} periods were missed entirely"),
            Self::ShortRun { samples } => {
                write!(
                    f,
                    "only {samples} samples per thread: the maximum is not a worst case"
                )
            }
            Self::Interrupted => write!(f, "run interrupted: results cover the part that ran"),
        }
    }
}

/// Prints warnings to stderr, one line each with its hint.
pub fn print(warnings: &[Warning]) {
    print_in(warnings, "latency");
}

/// Prints `warnings` with the hints of `command` ([`Warning::hint_in`]).
pub(crate) fn print_in(warnings: &[Warning], command: &str) {
    for w in warnings {
        eprintln!("warning: {w}\n  hint: {}", w.hint_in(command));
    }
}
