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
//!                                          T = period, or the shortest measured inter-arrival,
//!                                          D = deadline attribute, else T,
//!                                          B from the measured critical sections, per core)
//! ```
//!
//! A measured WCET is a lower bound of the true one: the analysis answers "is this set
//! schedulable under the load observed so far, and with what margin". Run the app through its
//! worst cases before trusting the margin, or inflate `wcet_ns` in the returned tasks.

use std::fmt;

use preempt_stats::rta::{self, Report, RtaError};
use preempt_stats::task_stats::{SummaryTable, TaskSnapshot};

use crate::executor::IdlePolicy;
use crate::periodic::OnMiss;
use crate::runtime::AppConfig;
use crate::task::TaskKind;

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
    /// Longest hold, ns.
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
    /// The signal that stopped the app (`"SIGINT"`, `"SIGTERM"`), if one did: the records
    /// cover the run until then, and the jobs that were queued but not run are not in them.
    pub stopped_by: Option<&'static str>,
}

/// An inter-arrival estimate is only used with at least this many releases.
const MIN_RELEASES_FOR_PERIOD: u64 = 2;
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
            stopped_by: None,
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

    /// The task table of the exit summary.
    pub fn summary(&self) -> impl fmt::Display + '_ {
        Summary(self)
    }

    /// The tasks as response-time analysis sees them, from this snapshot, with notes on what
    /// was estimated or left out. Tasks that never completed a job are left out.
    pub fn rta_tasks(&self) -> (Vec<rta::Task>, Vec<String>) {
        let mut out = Vec::new();
        let mut notes = Vec::new();
        for t in &self.tasks {
            let name = &t.stats.name;
            let Some(wcet) = t.stats.exec_max_ns.filter(|_| t.stats.completions > 0) else {
                notes.push(format!("`{name}` left out: no completed job yet"));
                continue;
            };
            let period = match (
                t.period_ns,
                t.declared_interarrival_ns,
                t.min_interarrival_ns,
            ) {
                (Some(p), _, _) => p,
                (None, Some(declared), seen) => {
                    if let Some(seen) = seen.filter(|&s| s < declared) {
                        notes.push(format!(
                            "`{name}`: released {seen} ns apart, closer than its declared \
                             min_interarrival ({declared} ns): the analysis of the tasks below \
                             it assumes more than happened"
                        ));
                    }
                    declared
                }
                (None, None, Some(ia)) if t.stats.releases >= MIN_RELEASES_FOR_PERIOD => {
                    notes.push(format!(
                        "`{name}`: period = shortest inter-arrival seen ({} ns)",
                        ia
                    ));
                    ia
                }
                _ => {
                    notes.push(format!(
                        "`{name}` left out: released once, no period or inter-arrival time"
                    ));
                    continue;
                }
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
        (out, notes)
    }

    /// Response-time analysis of the measured task set (see the module docs).
    ///
    /// # Errors
    /// What `preempt_stats::rta::analyse` reports for an inconsistent set.
    pub fn rta(&self) -> Result<Report, RtaError> {
        rta::analyse(&self.rta_tasks().0)
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
                writeln!(
                    f,
                    "  {} in {} (prio {}, ceiling {}): {} locks, longest {} ns, up to {} per job",
                    l.resource, l.task, l.priority, l.ceiling, l.locks, l.longest_ns, l.max_per_job
                )?;
            }
        }
        let (tasks, notes) = s.rta_tasks();
        writeln!(f, "response-time analysis (measured WCETs):")?;
        match rta::analyse(&tasks) {
            Ok(report) => {
                writeln!(f, "{}", report.to_string().trim_end())?;
                writeln!(
                    f,
                    "verdict: {}",
                    if report.schedulable() {
                        "schedulable"
                    } else {
                        "NOT schedulable"
                    }
                )?;
            }
            Err(err) => writeln!(f, "  not analysed: {err}")?,
        }
        for note in notes {
            writeln!(f, "  note: {note}")?;
        }
        Ok(())
    }
}
