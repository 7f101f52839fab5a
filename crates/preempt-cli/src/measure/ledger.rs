//! The validity ledger: what else happened on the machine while a run measured, and the
//! verdict `clean` / `contaminated: why`.
//!
//! A latency figure is only a property of the machine if nothing foreign disturbed the run.
//! The ledger samples `/proc/stat` before and after (steal time, busy time on the measured
//! CPUs that is not the tool's own), scans for other real-time threads, notes throttling-sized
//! stalls and virtualisation, and states which of these contaminate the numbers.

use std::time::Duration;

use preempt_io::sys::procstat::{self, CpuTimes};

use preempt_trace::{Stretch, describe_throttled};

use crate::procfs;
use crate::results::{Ledger, LedgerEntry};

/// Steal above this share of the measured CPUs' time contaminates a run: the hypervisor took
/// the vCPU away long enough to matter.
pub(crate) const STEAL_LIMIT_PCT: f64 = 0.5;
/// Foreign busy time above this share of the measured CPUs (without requested stress) means
/// other work competed with the measurement.
pub(crate) const FOREIGN_BUSY_LIMIT_PCT: f64 = 20.0;

/// `/proc/stat` and the RT-thread scan at the start of a run.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    times: procstat::Snapshot,
}

impl Probe {
    /// Samples now.
    pub(crate) fn start() -> Self {
        Self {
            times: procstat::read().unwrap_or_default(),
        }
    }
}

/// What the run itself knows, for the ledger.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// Measured CPUs.
    pub cpus: Vec<usize>,
    /// CPU time the measuring threads themselves used.
    pub own_cpu_time: Duration,
    /// Stressors were requested (so busy CPUs are expected).
    pub stress_requested: bool,
    /// Largest latency observed.
    pub max_latency_ns: u64,
    /// Hypervisor, if any.
    pub virtualization: Option<String>,
    /// Throttled windows the measuring threads waited out, counted from their schedstat
    /// (`preempt_io::sys::schedstat::ThrottleWatch`); None: the kernel has no schedstat.
    pub throttled_windows: Option<u64>,
}

/// Observations turned into ledger entries; pure, so the verdict logic is unit-tested.
#[derive(Debug, Clone, Default)]
pub struct Observations {
    /// Steal share of the measured CPUs.
    pub steal_pct: f64,
    /// Non-idle share of the measured CPUs not used by the measuring threads.
    pub foreign_busy_pct: f64,
    /// Other user-space RT threads (`comm[tid] policy prio`).
    pub rt_threads: Vec<String>,
    /// `(sched_rt_runtime_us, sched_rt_period_us)`.
    pub rt_throttle_us: Option<(i64, i64)>,
}

impl Probe {
    /// Closes the probe and judges the run.
    pub(crate) fn finish(&self, facts: &RunFacts) -> Ledger {
        let end = procstat::read().unwrap_or_default();
        let mut d = CpuTimes::default();
        for (cpu, t) in &end {
            let Some(c) = cpu else { continue };
            if !facts.cpus.contains(c) {
                continue;
            }
            if let Some((_, s)) = self.times.iter().find(|(x, _)| x == cpu) {
                let delta = t.since(s);
                d.busy += delta.busy;
                d.idle += delta.idle;
                d.steal += delta.steal;
            }
        }
        const TICK_NS: f64 = procstat::TICK_NS as f64;
        let total = d.total() as f64;
        let own_ticks = facts.own_cpu_time.as_nanos() as f64 / TICK_NS;
        let pct = |v: f64| {
            if total > 0.0 {
                (100.0 * v / total).clamp(0.0, 100.0)
            } else {
                0.0
            }
        };
        let rt_threads = procfs::foreign_rt_threads(std::process::id() as i32)
            .into_iter()
            .map(|t| {
                format!(
                    "{}[{}] policy {} prio {}",
                    t.comm, t.tid, t.policy, t.rt_priority
                )
            })
            .collect();
        let read = |p: &str| procfs::read_trimmed(p).and_then(|v| v.parse::<i64>().ok());
        let obs = Observations {
            steal_pct: pct(d.steal as f64),
            foreign_busy_pct: pct((d.busy as f64 - own_ticks).max(0.0)),
            rt_threads,
            rt_throttle_us: read("/proc/sys/kernel/sched_rt_runtime_us")
                .zip(read("/proc/sys/kernel/sched_rt_period_us")),
        };
        judge(&obs, facts)
    }
}

/// The ledger's virtualisation line: a virtual machine or an emulated CPU (label of
/// [`crate::virt::Finding`]) always contaminates a run, so no verdict from one says `clean`.
pub(crate) fn virtualization_entry(virtualization: Option<&str>) -> LedgerEntry {
    LedgerEntry {
        name: "virtualization".into(),
        value: virtualization.unwrap_or("bare metal").into(),
        contaminates: virtualization.is_some(),
    }
}

/// The verdict from observations.
pub fn judge(obs: &Observations, facts: &RunFacts) -> Ledger {
    let mut entries = vec![
        LedgerEntry {
            name: "steal-time".into(),
            value: format!("{:.2} % of the measured CPUs' time", obs.steal_pct),
            contaminates: obs.steal_pct > STEAL_LIMIT_PCT,
        },
        LedgerEntry {
            name: "cpu-busy".into(),
            value: format!(
                "{:.1} % busy with work other than the measurement{}",
                obs.foreign_busy_pct,
                if facts.stress_requested {
                    " (stress requested)"
                } else {
                    ""
                }
            ),
            contaminates: !facts.stress_requested && obs.foreign_busy_pct > FOREIGN_BUSY_LIMIT_PCT,
        },
        LedgerEntry {
            name: "rt-threads".into(),
            value: if obs.rt_threads.is_empty() {
                "no other real-time threads".into()
            } else {
                obs.rt_threads.join(", ")
            },
            contaminates: !obs.rt_threads.is_empty(),
        },
    ];
    let budget = match obs.rt_throttle_us {
        Some((runtime, period)) if runtime >= 0 && period > runtime => {
            format!("sched_rt_runtime_us {runtime}/{period}")
        }
        Some((runtime, _)) => format!(
            "sched_rt_runtime_us {runtime} (RT throttling off; the fair server still stops a \
             busy real-time class)"
        ),
        None => "sched_rt_runtime_us unreadable".into(),
    };
    let window_ns = preempt_io::sys::schedstat::window_of(
        obs.rt_throttle_us.map(|r| r.0),
        obs.rt_throttle_us.map(|r| r.1),
    );
    let (throttle_value, throttled) = match facts.throttled_windows {
        // Counted: a measuring thread waited out a window on its runqueue.
        Some(n) if n > 0 => (
            format!(
                "{budget}; {n} throttled window(s): a measuring thread waited {} ms or more \
                 on its runqueue (schedstat run_delay)",
                window_ns * 4 / 5 / 1_000_000
            ),
            true,
        ),
        Some(_) => (
            format!("{budget}; no throttled window (schedstat run_delay)"),
            false,
        ),
        // No schedstat: a stall at least 80 % as long as the window is its signature.
        None => {
            let hit = facts.max_latency_ns >= window_ns * 4 / 5;
            (
                format!(
                    "{budget}; {}",
                    if hit {
                        format!(
                            "a {:.1} ms stall matches the {} ms throttling window (no \
                             schedstat to tell)",
                            facts.max_latency_ns as f64 / 1e6,
                            window_ns / 1_000_000
                        )
                    } else {
                        "no stall of throttling size".into()
                    }
                ),
                hit,
            )
        }
    };
    entries.push(LedgerEntry {
        name: THROTTLING.into(),
        value: throttle_value,
        contaminates: throttled,
    });
    entries.push(virtualization_entry(facts.virtualization.as_deref()));
    Ledger {
        verdict: verdict_of(&entries),
        entries,
    }
}

/// The ledger entry about the kernel's real-time throttling.
const THROTTLING: &str = "throttling";

/// `clean`, or `contaminated: ` and every contaminating entry.
fn verdict_of(entries: &[LedgerEntry]) -> String {
    let reasons: Vec<String> = entries
        .iter()
        .filter(|e| e.contaminates)
        .map(|e| format!("{} ({})", e.name, e.value))
        .collect();
    if reasons.is_empty() {
        "clean".into()
    } else {
        format!("contaminated: {}", reasons.join("; "))
    }
}

/// The summary line naming the throttled stretches of a traced run (None: there were none).
pub(crate) fn throttled_line(stretches: &[Stretch]) -> Option<String> {
    (!stretches.is_empty()).then(|| format!("THROTTLED: {}", describe_throttled(stretches)))
}

/// Puts what the kernel trace saw of throttling into the ledger's `throttling` entry (it
/// replaces the stall-size guess) and the verdict: any stretch contaminates the run.
pub(crate) fn note_throttled(ledger: &mut Ledger, stretches: &[Stretch]) {
    // Windows the threads counted from schedstat stay named if the trace saw none (lost
    // events): the two sources do not contradict, one of them missed it.
    let counted = ledger
        .entries
        .iter()
        .find(|e| e.name == THROTTLING && e.contaminates && e.value.contains("schedstat"))
        .map(|e| e.value.clone());
    let (value, contaminates) = match (stretches.is_empty(), counted) {
        (false, _) => (describe_throttled(stretches), true),
        (true, Some(counted)) => (
            format!("{counted}; the kernel trace saw no stop of the real-time class"),
            true,
        ),
        (true, None) => (
            "the kernel trace saw no stop of the real-time class".to_string(),
            false,
        ),
    };
    let entry = LedgerEntry {
        name: THROTTLING.into(),
        value,
        contaminates,
    };
    match ledger.entries.iter_mut().find(|e| e.name == THROTTLING) {
        Some(e) => *e = entry,
        None => ledger.entries.push(entry),
    }
    ledger.verdict = verdict_of(&ledger.entries);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> RunFacts {
        RunFacts {
            cpus: vec![0],
            max_latency_ns: 30_000,
            ..RunFacts::default()
        }
    }

    #[test]
    fn quiet_bare_metal_is_clean() {
        let obs = Observations {
            steal_pct: 0.1,
            foreign_busy_pct: 3.0,
            rt_throttle_us: Some((950_000, 1_000_000)),
            ..Default::default()
        };
        let l = judge(&obs, &facts());
        assert_eq!(l.verdict, "clean");
        assert!(l.is_clean());
    }

    #[test]
    fn each_cause_contaminates_and_is_named() {
        let base = Observations {
            rt_throttle_us: Some((950_000, 1_000_000)),
            ..Default::default()
        };
        let cases: Vec<(Observations, RunFacts, &str)> = vec![
            (
                Observations {
                    steal_pct: 2.0,
                    ..base.clone()
                },
                facts(),
                "steal-time",
            ),
            (
                Observations {
                    foreign_busy_pct: 60.0,
                    ..base.clone()
                },
                facts(),
                "cpu-busy",
            ),
            (
                Observations {
                    rt_threads: vec!["x[1] policy 1 prio 90".into()],
                    ..base.clone()
                },
                facts(),
                "rt-threads",
            ),
            (
                base.clone(),
                RunFacts {
                    max_latency_ns: 49_000_000,
                    ..facts()
                },
                "throttling",
            ),
            (
                base.clone(),
                RunFacts {
                    throttled_windows: Some(2),
                    ..facts()
                },
                "2 throttled window(s)",
            ),
            (
                base.clone(),
                RunFacts {
                    virtualization: Some("kvm".into()),
                    ..facts()
                },
                "virtualization",
            ),
        ];
        for (obs, f, name) in cases {
            let l = judge(&obs, &f);
            assert!(
                l.verdict.starts_with("contaminated: ") && l.verdict.contains(name),
                "{}",
                l.verdict
            );
        }
    }

    #[test]
    fn throttled_stretches_from_the_trace_contaminate_and_are_named() {
        let obs = Observations {
            rt_throttle_us: Some((950_000, 1_000_000)),
            ..Default::default()
        };
        let mut l = judge(&obs, &facts());
        assert_eq!(l.verdict, "clean");
        note_throttled(&mut l, &[]);
        assert_eq!(l.verdict, "clean");
        let s = Stretch {
            cpu: 1,
            start_ns: 1_000_000_000,
            end_ns: 1_052_000_000,
        };
        note_throttled(&mut l, &[s, s]);
        assert!(
            l.verdict.starts_with(
                "contaminated: throttling (the kernel stopped the real-time \
                 class 2 time(s), 104.0 ms in all (CPU 1: 52.0 ms, CPU 1: 52.0 ms;"
            ),
            "{}",
            l.verdict
        );
        assert_eq!(
            l.entries.iter().filter(|e| e.name == "throttling").count(),
            1
        );
        assert!(throttled_line(&[s]).unwrap().starts_with("THROTTLED: "));
        assert!(throttled_line(&[]).is_none());
    }

    #[test]
    fn a_long_stall_without_a_runqueue_wait_is_not_throttling() {
        // Counted from schedstat: a 49 ms stall the thread did not wait out on its
        // runqueue (a host stall, a late timer) is not a throttled window.
        let obs = Observations {
            rt_throttle_us: Some((950_000, 1_000_000)),
            ..Default::default()
        };
        let f = RunFacts {
            max_latency_ns: 49_000_000,
            throttled_windows: Some(0),
            ..facts()
        };
        let l = judge(&obs, &f);
        assert_eq!(l.verdict, "clean");
        let e = l.entries.iter().find(|e| e.name == "throttling").unwrap();
        assert!(
            e.value
                .ends_with("no throttled window (schedstat run_delay)"),
            "{e:?}"
        );
    }

    #[test]
    fn counted_windows_stay_named_when_the_trace_saw_none() {
        let obs = Observations {
            rt_throttle_us: Some((950_000, 1_000_000)),
            ..Default::default()
        };
        let f = RunFacts {
            throttled_windows: Some(1),
            ..facts()
        };
        let mut l = judge(&obs, &f);
        note_throttled(&mut l, &[]);
        assert!(
            l.verdict.contains("1 throttled window(s)")
                && l.verdict.contains("the kernel trace saw no stop"),
            "{}",
            l.verdict
        );
    }

    #[test]
    fn requested_stress_is_not_contamination() {
        let obs = Observations {
            foreign_busy_pct: 95.0,
            ..Default::default()
        };
        let l = judge(
            &obs,
            &RunFacts {
                stress_requested: true,
                ..facts()
            },
        );
        assert_eq!(l.verdict, "clean");
    }
}
