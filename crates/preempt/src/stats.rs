//! The app's accounting: [`AppStats`] (what `app::stats()` returns), its JSON export, the
//! exit summary, and response-time analysis from measurements (`app::rta()`).
//!
//! Every task has an always-on `preempt_stats::task_stats::TaskStats`, recorded by its
//! executor around every job (see [`crate::executor`], "Accounting"); every PCP lock measures
//! its critical section (see [`crate::resource`]). A snapshot copies them, with the
//! attributes the analysis needs (priority, period, deadline, core):
//!
//! ```text
//! app::stats()  ──► AppStats { tasks: [TaskReport], locks: [LockReport], levels: [LevelReport] }
//!                       │  .to_json()          (schema_version 1, times in ns)
//!                       │  .summary()          (table, as printed at exit with `summary = true`)
//!                       └► .rta()  ──►  preempt_stats::rta::analyse(
//!                                          C = measured max execution time,
//!                                          T = period, or the declared min_interarrival,
//!                                          D = deadline attribute, else T,
//!                                          B from the measured critical sections, per core)
//!                          .verdict() ─► what the analysis can stand behind (below)
//! ```
//!
//! A measured WCET is a lower bound of the true one: the analysis answers "is this set
//! schedulable under the load observed so far, and with what margin". Run the app through its
//! worst cases before trusting the margin, or inflate `wcet_ns` in the returned tasks.
//!
//! The analysis says only what it can stand behind ([`Verdict`]):
//!
//! - a message-driven task (software, async, hardware) without `period` or `min_interarrival`
//!   is **not analysed: no declared rate**. Observed inter-arrival times are never turned into
//!   a period: the shortest gap seen is a property of one run (two spawns in a row are a few
//!   nanoseconds apart), not a bound, and once made one the utilisation came out in the
//!   hundreds of thousands of percent. Such a task's interference on the tasks at or below its
//!   priority, and its critical sections' blocking of tasks up to their ceilings, are
//!   unbounded, so the verdict for those tasks is "not established";
//! - under `PREEMPT_SOFT=1` the executors run under SCHED_OTHER, where the kernel does not run
//!   the highest-priority ready task first: fixed-priority analysis does not model it and
//!   the verdict says the analysis does not hold ([`Scheduling::Other`]).

use std::fmt;

use preempt_stats::rta::{self, Report, RtaError};
use preempt_stats::task_stats::{SummaryTable, TaskSnapshot};

use crate::config::AppConfig;
use crate::level::IdlePolicy;
use crate::periodic::OnMiss;
use crate::rt_safety;
use crate::task::TaskKind;

/// How the app's executors were scheduled when the snapshot was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheduling {
    /// SCHED_FIFO, one priority per level: what the analysis models.
    Fifo,
    /// SCHED_OTHER (`PREEMPT_SOFT=1`): the analysis does not hold.
    Other,
    /// The mock-clock simulator, which preempts like one SCHED_FIFO CPU.
    Simulated,
    /// The app has not run (yet): the snapshot is of a configuration.
    NotStarted,
}

/// What the response-time analysis of a snapshot can stand behind ([`AppStats::verdict`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every analysed task meets its deadline, and no task left out can delay one.
    Schedulable,
    /// An analysed task's bound exceeds its deadline (tasks left out could only add delay).
    NotSchedulable,
    /// The analysed tasks meet their deadlines, but tasks without a declared rate can delay
    /// some of them by an unbounded amount.
    NotEstablished {
        /// The tasks without a declared rate that delay others.
        unrated: Vec<String>,
        /// The analysed tasks they can delay.
        affected: Vec<String>,
    },
    /// The app ran under SCHED_OTHER: fixed-priority analysis does not describe it.
    DoesNotHold,
    /// No analysis: the task set is empty or inconsistent (the reason).
    NotAnalysed(String),
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |names: &[String]| {
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Verdict::Schedulable => write!(f, "schedulable"),
            Verdict::NotSchedulable => write!(f, "NOT schedulable"),
            Verdict::NotEstablished { unrated, affected } => write!(
                f,
                "not established: {} without a declared rate can delay {} by an unbounded \
                 amount (declare `period` or `min_interarrival`)",
                list(unrated),
                list(affected)
            ),
            Verdict::DoesNotHold => write!(
                f,
                "the analysis does not hold: the executors ran under SCHED_OTHER \
                 (PREEMPT_SOFT=1), which does not run the highest-priority ready task first; \
                 the bounds above assume SCHED_FIFO"
            ),
            Verdict::NotAnalysed(why) => write!(f, "not analysed: {why}"),
        }
    }
}

/// A task left out of the analysis for want of a declared rate, and what it can delay.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Unrated {
    name: String,
    priority: u8,
    core: usize,
    /// The highest ceiling among the resources it locked (0: none).
    ceiling: u8,
}

impl Unrated {
    /// Whether it can delay an analysed task of `priority` on `core`: by interference (at or
    /// above its priority, FIFO among equals) or by blocking (above it, up to a ceiling).
    fn delays(&self, priority: u8, core: usize) -> bool {
        core == self.core && (self.priority >= priority || priority <= self.ceiling)
    }
}

/// The version of the JSON layout; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// One task's attributes and accounting record.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TaskReport {
    /// How it is released.
    pub kind: TaskKind,
    /// Its priority (= its executor's SCHED_FIFO priority).
    pub priority: u8,
    /// The CPU its executor is pinned to, if exactly one.
    pub cpu: Option<usize>,
    /// Period (periodic tasks), ns.
    pub period_ns: Option<u64>,
    /// Relative deadline, ns.
    pub deadline_ns: Option<u64>,
    /// Overrun policy (periodic tasks).
    pub on_miss: Option<OnMiss>,
    /// Declared minimum inter-arrival time (`min_interarrival`), ns.
    pub declared_interarrival_ns: Option<u64>,
    /// Shortest time between two releases seen, ns.
    pub min_interarrival_ns: Option<u64>,
    /// The accounting record.
    pub stats: TaskSnapshot,
}

/// The measured critical sections of one task on one PCP-locked resource.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LockReport {
    /// Resource.
    pub resource: String,
    /// Task (or `idle`).
    pub task: String,
    /// The task's priority (0: `idle`).
    pub priority: u8,
    /// The resource's priority ceiling.
    pub ceiling: u8,
    /// Locks taken.
    pub locks: u64,
    /// Whether these sections can block another task (priority below the ceiling), so are
    /// timed (see `preempt::resource`, "Measured critical sections").
    pub needs_timing: bool,
    /// Sections timed: the job's first, then one in 32 (`PREEMPT_LOCK_SAMPLE=1`: all).
    pub timed: u64,
    /// Longest timed hold, ns.
    pub longest_ns: u64,
    /// Most locks in one job.
    pub max_per_job: u32,
}

/// One priority level (executor thread).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LevelReport {
    /// Priority.
    pub priority: u8,
    /// CPUs it is pinned to (empty: any).
    pub cpus: Vec<usize>,
    /// Idle policy.
    pub idle: IdlePolicy,
    /// Minor page faults its thread took while running jobs.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// Throttled windows its thread waited out: a job released, its thread kept runnable
    /// but off its CPU for 80 % of the kernel's throttling window or more (RT throttling or
    /// the fair server; `preempt_io::sys::schedstat`). The release latencies and response
    /// times of the level's tasks then include the kernel's stop, not the app's doing.
    pub throttled_windows: u64,
}

/// A snapshot of an app's accounting (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AppStats {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The app module's name.
    pub app: String,
    /// Whether accounting is on (`accounting = false` leaves every record empty).
    pub accounting: bool,
    /// The clock the times are on: `"monotonic"` or `"mock"`.
    pub clock: &'static str,
    /// Tasks, by level then declaration order.
    pub tasks: Vec<TaskReport>,
    /// Critical sections on PCP-locked resources.
    pub locks: Vec<LockReport>,
    /// Levels, in increasing priority.
    pub levels: Vec<LevelReport>,
    /// How the executors were scheduled (the analysis holds for `fifo` and `simulated`).
    pub scheduling: Scheduling,
    /// The signal that stopped the app (`"SIGINT"`, `"SIGTERM"`), if one did: the records
    /// cover the run until then, and the jobs that were queued but not run are not in them.
    pub stopped_by: Option<&'static str>,
    /// The real-time safety mode the app ran in ([`crate::rt_safety`]).
    pub rt_safety_mode: rt_safety::Mode,
    /// What real-time jobs did that a real-time path must not: per task and kind, the count
    /// and the first occurrence (empty with the mode off).
    pub rt_safety: Vec<rt_safety::Finding>,
}

/// `idle` has no period; for the analysis it is a task that never interferes.
const IDLE_PERIOD_NS: u64 = 3_600 * 1_000_000_000;

impl AppStats {
    pub(crate) fn collect(config: &AppConfig) -> AppStats {
        let cpu_of = |priority: u8| -> Vec<usize> {
            config
                .cores
                .iter()
                .find(|(p, _)| *p == priority)
                .map(|(_, c)| c.to_vec())
                .unwrap_or_default()
        };
        let mut tasks = Vec::new();
        let mut levels = Vec::new();
        for exec in config.executors {
            let priority = exec.priority();
            let cpus = cpu_of(priority);
            for tc in exec.tasks() {
                tasks.push(TaskReport {
                    kind: tc.kind(),
                    priority,
                    cpu: (cpus.len() == 1).then(|| cpus[0]),
                    period_ns: tc.period_ns(),
                    deadline_ns: tc.deadline_ns().or(tc.period_ns()),
                    on_miss: (tc.kind() == TaskKind::Periodic).then_some(tc.on_miss),
                    declared_interarrival_ns: tc.declared_interarrival_ns(),
                    min_interarrival_ns: tc.min_interarrival_ns(),
                    stats: tc.stats().snapshot(),
                });
            }
            let (minor_faults, major_faults) = exec.faults();
            levels.push(LevelReport {
                priority,
                cpus,
                idle: config.idle_policy(priority),
                minor_faults,
                major_faults,
                throttled_windows: exec.throttled_windows(),
            });
        }
        let locks = config
            .locks
            .iter()
            .map(|l| LockReport {
                resource: l.resource.to_owned(),
                task: l.task.to_owned(),
                priority: l.priority,
                ceiling: l.ceiling,
                locks: l.locks(),
                needs_timing: l.needs_timing,
                timed: l.timed(),
                longest_ns: l.longest_ns(),
                max_per_job: l.max_per_job(),
            })
            .collect();
        AppStats {
            schema_version: SCHEMA_VERSION,
            app: config.name.to_owned(),
            accounting: config.accounting,
            clock: if config.mock_clock {
                "mock"
            } else {
                "monotonic"
            },
            tasks,
            locks,
            levels,
            scheduling: if config.mock_clock {
                Scheduling::Simulated
            } else {
                Scheduling::NotStarted
            },
            stopped_by: None,
            rt_safety_mode: rt_safety::mode(),
            rt_safety: rt_safety::findings(),
        }
    }

    /// The record of the task called `name`.
    pub fn task(&self, name: &str) -> Option<&TaskReport> {
        self.tasks.iter().find(|t| t.stats.name == name)
    }

    /// The snapshot as pretty-printed JSON (see `SCHEMA_VERSION`).
    pub fn to_json(&self) -> String {
        // Serialising plain data (strings, numbers, options, vectors) cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Throttled windows the app's executor threads waited out, all levels.
    pub fn throttled_windows(&self) -> u64 {
        self.levels.iter().map(|l| l.throttled_windows).sum()
    }

    /// The summary's line naming the throttled windows, per level (None: there were none).
    pub fn throttled_line(&self) -> Option<String> {
        let levels: Vec<String> = self
            .levels
            .iter()
            .filter(|l| l.throttled_windows > 0)
            .map(|l| {
                let cpus = match l.cpus.as_slice() {
                    [] => "any CPU".to_owned(),
                    [c] => format!("CPU {c}"),
                    cs => format!(
                        "CPUs {}",
                        cs.iter()
                            .map(|c| c.to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                };
                format!("priority {} ({cpus}): {}", l.priority, l.throttled_windows)
            })
            .collect();
        (!levels.is_empty()).then(|| {
            format!(
                "THROTTLED: executor threads waited out {} throttling window(s) of the kernel \
                 (RT throttling or the fair server stopped the real-time class on their CPU; \
                 {}): the latencies above include them",
                self.throttled_windows(),
                levels.join("; ")
            )
        })
    }

    /// The task table of the exit summary.
    pub fn summary(&self) -> impl fmt::Display + '_ {
        Summary(self)
    }

    /// The tasks as response-time analysis sees them, from this snapshot, with notes on what
    /// was left out and why: tasks without a declared rate (see the [module docs](self)) and
    /// tasks that never completed a job.
    pub fn rta_tasks(&self) -> (Vec<rta::Task>, Vec<String>) {
        let (tasks, notes, _) = self.rta_input();
        (tasks, notes)
    }

    fn rta_input(&self) -> (Vec<rta::Task>, Vec<String>, Vec<Unrated>) {
        let mut out = Vec::new();
        let mut notes = Vec::new();
        let mut unrated = Vec::new();
        for t in &self.tasks {
            let name = &t.stats.name;
            let Some(period) = t.period_ns.or(t.declared_interarrival_ns) else {
                notes.push(format!(
                    "`{name}` not analysed: no declared rate (give it `period` or \
                     `min_interarrival`; observed gaps between releases are not a bound)"
                ));
                let ceiling = self
                    .locks
                    .iter()
                    .filter(|l| &l.task == name && l.locks > 0)
                    .map(|l| l.ceiling)
                    .max()
                    .unwrap_or(0);
                unrated.push(Unrated {
                    name: name.clone(),
                    priority: t.priority,
                    core: t.cpu.unwrap_or(0),
                    ceiling,
                });
                continue;
            };
            if let (None, Some(declared), Some(seen)) = (
                t.period_ns,
                t.declared_interarrival_ns,
                t.min_interarrival_ns,
            ) {
                if seen < declared {
                    notes.push(format!(
                        "`{name}`: released {seen} ns apart, closer than its declared \
                         min_interarrival ({declared} ns): the analysis of the tasks below it \
                         assumes more than happened"
                    ));
                }
            }
            let Some(wcet) = t.stats.exec_max_ns.filter(|_| t.stats.completions > 0) else {
                notes.push(format!("`{name}` left out: no completed job yet"));
                continue;
            };
            let mut deadline = t.deadline_ns.unwrap_or(period);
            if deadline > period {
                notes.push(format!(
                    "`{name}`: deadline {deadline} ns > period {period} ns; analysed with D = T"
                ));
                deadline = period;
            }
            let mut task = rta::Task::new(name.clone(), t.priority, period, wcet.max(1))
                .deadline(deadline)
                .on_core(t.cpu.unwrap_or(0));
            for l in self.locks.iter().filter(|l| &l.task == name && l.locks > 0) {
                task = task.uses_n(
                    l.resource.clone(),
                    l.longest_ns.min(wcet),
                    l.max_per_job.max(1),
                );
            }
            out.push(task);
        }
        // `idle` blocks tasks through its critical sections, and never interferes.
        let idle_locks: Vec<&LockReport> = self
            .locks
            .iter()
            .filter(|l| l.task == "idle" && l.locks > 0)
            .collect();
        if let Some(longest) = idle_locks.iter().map(|l| l.longest_ns).max() {
            let mut idle = rta::Task::new("idle", 0, IDLE_PERIOD_NS, longest.max(1));
            for l in idle_locks {
                idle = idle.uses_n(l.resource.clone(), l.longest_ns, l.max_per_job.max(1));
            }
            out.push(idle);
        }
        if self.levels.iter().any(|l| l.cpus.len() != 1) {
            notes.push(
                "levels not pinned to one CPU are analysed together on core 0: with \
                 independent tasks that bounds a global fixed-priority scheduler too"
                    .to_owned(),
            );
        }
        (out, notes, unrated)
    }

    /// Response-time analysis of the measured task set (see the module docs).
    ///
    /// # Errors
    /// What `preempt_stats::rta::analyse` reports for an inconsistent set.
    pub fn rta(&self) -> Result<Report, RtaError> {
        rta::analyse(&self.rta_tasks().0)
    }

    /// What the analysis of this snapshot can stand behind (see the [module docs](self)).
    pub fn verdict(&self) -> Verdict {
        let (tasks, _, unrated) = self.rta_input();
        self.verdict_of(&tasks, &unrated, &rta::analyse(&tasks))
    }

    fn verdict_of(
        &self,
        tasks: &[rta::Task],
        unrated: &[Unrated],
        analysis: &Result<Report, RtaError>,
    ) -> Verdict {
        let report = match analysis {
            Ok(report) => report,
            Err(err) => return Verdict::NotAnalysed(err.to_string()),
        };
        if self.scheduling == Scheduling::Other {
            return Verdict::DoesNotHold;
        }
        if !report.schedulable() {
            return Verdict::NotSchedulable;
        }
        let affected: Vec<String> = tasks
            .iter()
            .filter(|t| t.name != "idle")
            .filter(|t| unrated.iter().any(|u| u.delays(t.priority, t.core)))
            .map(|t| t.name.clone())
            .collect();
        if affected.is_empty() {
            return Verdict::Schedulable;
        }
        let unrated = unrated
            .iter()
            .filter(|u| tasks.iter().any(|t| u.delays(t.priority, t.core)))
            .map(|u| u.name.clone())
            .collect();
        Verdict::NotEstablished { unrated, affected }
    }
}

struct Summary<'a>(&'a AppStats);

impl fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        let snapshots: Vec<TaskSnapshot> = s.tasks.iter().map(|t| t.stats.clone()).collect();
        writeln!(
            f,
            "preempt: app `{}` task statistics ({} clock){}:",
            s.app,
            s.clock,
            match s.stopped_by {
                Some(signal) => format!(", partial: stopped by {signal}"),
                None => String::new(),
            }
        )?;
        write!(f, "{}", SummaryTable(&snapshots))?;
        let locks: Vec<&LockReport> = s.locks.iter().filter(|l| l.locks > 0).collect();
        if !locks.is_empty() {
            writeln!(f, "critical sections (PCP):")?;
            for l in locks {
                let longest = if !l.needs_timing {
                    "not timed: blocks nobody".to_owned()
                } else if l.timed < l.locks {
                    format!("longest {} ns of {} timed", l.longest_ns, l.timed)
                } else {
                    format!("longest {} ns", l.longest_ns)
                };
                writeln!(
                    f,
                    "  {} in {} (prio {}, ceiling {}): {} locks, {longest}, up to {} per job",
                    l.resource, l.task, l.priority, l.ceiling, l.locks, l.max_per_job
                )?;
            }
        }
        let (tasks, notes, unrated) = s.rta_input();
        writeln!(f, "response-time analysis (measured WCETs):")?;
        let analysis = rta::analyse(&tasks);
        match &analysis {
            Ok(report) => writeln!(f, "{}", report.to_string().trim_end())?,
            Err(err) => writeln!(f, "  not analysed: {err}")?,
        }
        let throttled = s.throttled_line();
        if let Some(line) = &throttled {
            writeln!(f, "{line}")?;
        }
        writeln!(
            f,
            "verdict: {}{}",
            s.verdict_of(&tasks, &unrated, &analysis),
            if throttled.is_some() {
                " (measured under RT throttling: see THROTTLED)"
            } else {
                ""
            }
        )?;
        for note in notes {
            writeln!(f, "  note: {note}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unrated_task_delays_its_level_and_below_and_up_to_its_ceiling_on_its_core() {
        let u = Unrated {
            name: "burst".into(),
            priority: 2,
            core: 0,
            ceiling: 4,
        };
        // Interference: same level (FIFO) and below.
        assert!(u.delays(2, 0) && u.delays(1, 0));
        // Blocking: above it, up to the ceiling of what it locks.
        assert!(u.delays(3, 0) && u.delays(4, 0));
        assert!(!u.delays(5, 0));
        // Another core: neither.
        assert!(!u.delays(1, 1));
        let no_locks = Unrated { ceiling: 0, ..u };
        assert!(!no_locks.delays(3, 0) && no_locks.delays(2, 0));
    }

    #[test]
    fn verdicts_say_what_they_cannot_stand_behind() {
        let v = Verdict::NotEstablished {
            unrated: vec!["a".into()],
            affected: vec!["b".into(), "c".into()],
        };
        assert_eq!(
            v.to_string(),
            "not established: `a` without a declared rate can delay `b`, `c` by an unbounded \
             amount (declare `period` or `min_interarrival`)"
        );
        assert!(Verdict::DoesNotHold.to_string().contains("SCHED_OTHER"));
        assert_eq!(Verdict::Schedulable.to_string(), "schedulable");
    }
}
