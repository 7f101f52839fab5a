//! Worst-case response-time analysis (RTA) of fixed-priority preemptive tasks, partitioned over
//! cores, with Priority Ceiling Protocol blocking, fed with measured execution times.
//!
//! # Background
//! A set of periodic tasks under fixed-priority preemptive scheduling meets every deadline iff
//! each task's worst-case response time `R_i` is at most its deadline `D_i`. Joseph & Pandya
//! (1986) and Audsley, Burns, Richardson, Tindell & Wellings (1993) showed that for independent
//! tasks with `D_i <= T_i`, released together at the critical instant (Liu & Layland 1973),
//! `R_i` is the smallest fixed point of
//!
//! ```text
//! R_i = C_i + B_i + Σ_{j ∈ hp(i)} ⌈R_i / T_j⌉ · C_j
//! ```
//!
//! where `C` is the worst-case execution time, `T` the period (or minimum inter-arrival time),
//! `hp(i)` the higher-priority tasks on the same processor, and `B_i` the longest time a
//! lower-priority task can block `i` through a shared resource. Under the Priority Ceiling
//! Protocol (Sha, Rajkumar & Lehoczky 1990) a job is blocked at most once, by one critical
//! section of one lower-priority task on a resource whose ceiling (the highest priority of its
//! users) is at least `i`'s priority. The utilisation bound of Liu & Layland is only sufficient;
//! RTA is exact for this model (see the tests: a set with U = 0.883 above the three-task bound of
//! 0.780 is schedulable, and the analysis matches a simulation of the critical instant).
//!
//! # Solution
//! [`analyse`] takes a [`Task`] list (core, priority, period, deadline, measured WCET, the
//! longest critical section per resource it uses) and returns a [`Report`]: per task the
//! response-time bound, its parts, schedulable or not, and the margin `D − R`; per core the
//! utilisation. preempt's model, and how the analysis treats each part of it:
//!
//! * **Priorities**: higher number = higher priority (RTIC and `SCHED_FIFO`), one executor
//!   thread per priority level per core.
//! * **Cores** (partitioned scheduling): tasks on different cores never preempt each other;
//!   interference is summed over the task's own core only. A task whose executor is not pinned
//!   must be given the core it is expected to run on; the analysis is not valid for tasks that
//!   migrate (global scheduling needs a different analysis).
//! * **Equal priorities**: RTIC runs the tasks of one priority level run-to-completion, FIFO, on
//!   one thread, so they do not preempt each other but each can be queued ahead of the other.
//!   The analysis therefore counts an equal-priority task on the same core like a higher-priority
//!   one (`⌈R/T_j⌉ · C_j`), which is safe for FIFO non-preemptive order among equals.
//! * **Local blocking** (resources whose users all run on one core): classic PCP, one critical
//!   section `b_i` of one lower-priority task on that core on a resource with ceiling `>= prio_i`.
//!   Ceilings are computed over all users of a resource on all cores, which also covers
//!   push-through blocking (a local holder boosted by a remote waiter).
//! * **Blocking across cores**: preempt's PCP keeps one system ceiling per *group* of resources
//!   that tasks share transitively, for all cores, and a blocked task sleeps on a
//!   priority-inheritance futex. A task that locks a resource of a group used on more than one
//!   core can therefore wait at every lock request (`n_i` requests per job), and while it waits
//!   it is suspended. The analysis bounds this conservatively:
//!   - per request, one critical section (on a group resource with ceiling `>= prio_i`) of every
//!     task on another core: `W_i = Σ_{j on other cores} cs_j`;
//!   - in addition, remote *higher*-priority tasks may lock repeatedly while `i` is pending:
//!     `Σ_{h remote, prio_h > prio_i} ⌈R_i / T_h⌉ · (critical-section time of h per job)`;
//!   - every suspension lets a local lower-priority task start one more critical section:
//!     local blocking becomes `(1 + n_i) · b_i`;
//!   - a higher-priority task on the same core that can suspend is given release jitter
//!     `J_j = R_j − C_j` (the standard safe treatment of self-suspension as jitter), so its
//!     interference is `⌈(R_i + J_j) / T_j⌉ · C_j`; an equal-priority one, which occupies the
//!     shared executor thread while it waits, counts with `C_j` plus its own suspension bound
//!     taken over a window of `D_j`.
//!
//!   So `B_i = (1 + n_i) · b_i + n_i · W_i` (with `n_i = 0` when `i` locks nothing shared across
//!   cores). These bounds are sufficient, not tight; a lock-free design (a wait-free channel
//!   between cores) avoids them entirely.
//! * **Deadlines** must be constrained (`D <= T`): then at most one job of a task is pending and
//!   the first job after the critical instant is the worst (Audsley et al.). Longer deadlines
//!   are rejected with an error rather than analysed wrongly.
//! * **Inputs from measurement**: the WCET is the measured maximum execution time, ideally the
//!   job's CPU time (see [`crate::task_stats`]). A measured maximum is a *lower* bound on the true
//!   WCET; add a margin (`Task::wcet_ns` is yours to inflate) for a guarantee, and read the
//!   report's margin as "headroom under the load that was observed".
//!
//! # Why it works
//! The right-hand side is a non-decreasing step function of `R`, so iterating from
//! `R = C_i + B_i` climbs monotonically to the least fixed point; once `R` exceeds `D_i` the task
//! is unschedulable and the iteration stops (it would otherwise diverge when the core's
//! utilisation exceeds 1). All arithmetic is in `u128`, so no task set can overflow it.
//!
//! ```
//! use preempt_stats::rta::{analyse, Task};
//!
//! // 10 kHz sampling and a 1 kHz controller on core 1, sharing a buffer (all times in ns).
//! let tasks = [
//!     Task::new("sample", 90, 100_000, 20_000).on_core(1).uses("buf", 2_000),
//!     Task::new("control", 80, 1_000_000, 300_000).on_core(1).uses("buf", 5_000),
//! ];
//! let report = analyse(&tasks).unwrap();
//! let sample = &report.tasks[0];
//! assert_eq!(sample.blocking_ns, 5_000); // the controller's critical section
//! assert_eq!(sample.response_ns, 25_000);
//! let control = &report.tasks[1];
//! assert_eq!(control.response_ns, 380_000); // 300 µs + 4 preemptions of 20 µs
//! assert!(report.schedulable());
//! println!("{report}");
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::task_stats::human_ns;

/// The longest critical section a task executes on one resource.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CriticalSection {
    /// Resource name.
    pub resource: String,
    /// Longest time the task holds it, ns.
    pub longest_ns: u64,
    /// Lock requests on it per job (at least 1); matters for resources shared across cores.
    pub per_job: u32,
}

/// One task as the analysis sees it. Times in ns.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Task {
    /// Name, unique in the set.
    pub name: String,
    /// The core its executor is pinned to.
    pub core: usize,
    /// Priority; higher number = higher priority.
    pub priority: u8,
    /// Period or minimum inter-arrival time.
    pub period_ns: u64,
    /// Relative deadline, at most the period.
    pub deadline_ns: u64,
    /// Worst-case execution time (measured maximum, plus any margin you add).
    pub wcet_ns: u64,
    /// Resources it locks.
    pub critical_sections: Vec<CriticalSection>,
}

impl Task {
    /// A task on core 0 with its deadline equal to its period and no resources.
    pub fn new(name: impl Into<String>, priority: u8, period_ns: u64, wcet_ns: u64) -> Task {
        Task {
            name: name.into(),
            core: 0,
            priority,
            period_ns,
            deadline_ns: period_ns,
            wcet_ns,
            critical_sections: Vec::new(),
        }
    }

    /// Sets the relative deadline.
    pub fn deadline(mut self, deadline_ns: u64) -> Task {
        self.deadline_ns = deadline_ns;
        self
    }

    /// Sets the core.
    pub fn on_core(mut self, core: usize) -> Task {
        self.core = core;
        self
    }

    /// Adds a resource locked once per job, held at most `longest_ns`.
    pub fn uses(self, resource: impl Into<String>, longest_ns: u64) -> Task {
        self.uses_n(resource, longest_ns, 1)
    }

    /// Adds a resource locked `per_job` times per job, each time held at most `longest_ns`.
    pub fn uses_n(mut self, resource: impl Into<String>, longest_ns: u64, per_job: u32) -> Task {
        self.critical_sections.push(CriticalSection {
            resource: resource.into(),
            longest_ns,
            per_job,
        });
        self
    }
}

/// Why a task set cannot be analysed. Each names the task and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RtaError {
    /// Two tasks with one name.
    DuplicateName(String),
    /// A period of zero.
    ZeroPeriod(String),
    /// A deadline of zero or beyond the period.
    BadDeadline {
        /// Task.
        task: String,
        /// Its deadline.
        deadline_ns: u64,
        /// Its period.
        period_ns: u64,
    },
    /// A critical section longer than the task's WCET (inconsistent measurements), or
    /// `per_job == 0`.
    BadCriticalSection {
        /// Task.
        task: String,
        /// Resource.
        resource: String,
    },
}

impl fmt::Display for RtaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RtaError::DuplicateName(n) => {
                write!(
                    f,
                    "two tasks are called `{n}`: give every task a unique name"
                )
            }
            RtaError::ZeroPeriod(n) => write!(
                f,
                "task `{n}` has period 0: give its period or minimum inter-arrival time"
            ),
            RtaError::BadDeadline {
                task,
                deadline_ns,
                period_ns,
            } => write!(
                f,
                "task `{task}` has deadline {deadline_ns} ns and period {period_ns} ns: the \
                 analysis needs 0 < deadline <= period (constrained deadlines)"
            ),
            RtaError::BadCriticalSection { task, resource } => write!(
                f,
                "task `{task}`: its critical section on `{resource}` is longer than its WCET or \
                 is locked 0 times per job; re-measure, or raise the WCET"
            ),
        }
    }
}

impl std::error::Error for RtaError {}

/// The analysis of one task.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TaskResult {
    /// Task name.
    pub name: String,
    /// Core.
    pub core: usize,
    /// Priority.
    pub priority: u8,
    /// WCET used.
    pub wcet_ns: u64,
    /// Blocking `B_i` (local PCP blocking plus per-request waits across cores).
    pub blocking_ns: u64,
    /// Interference at the fixed point: preemption by higher (and queueing behind equal)
    /// priorities on the core, plus repeated locking by remote higher-priority tasks.
    pub interference_ns: u64,
    /// Worst-case response time bound. When `schedulable` is false this is the first
    /// iterate beyond the deadline, a lower bound on the true value.
    pub response_ns: u64,
    /// Relative deadline.
    pub deadline_ns: u64,
    /// `response_ns <= deadline_ns`.
    pub schedulable: bool,
    /// `deadline − response`: the headroom (negative: by how much the bound misses).
    pub margin_ns: i64,
    /// Fixed-point iterations needed.
    pub iterations: u32,
}

/// The utilisation `Σ C/T` of one core.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CoreLoad {
    /// Core.
    pub core: usize,
    /// Tasks on it.
    pub tasks: usize,
    /// Utilisation (1.0 = fully loaded).
    pub utilisation: f64,
}

/// The result of [`analyse`]: tasks in input order, cores in increasing order.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Report {
    /// Per task.
    pub tasks: Vec<TaskResult>,
    /// Per core.
    pub cores: Vec<CoreLoad>,
}

impl Report {
    /// True when every task meets its deadline.
    pub fn schedulable(&self) -> bool {
        self.tasks.iter().all(|t| t.schedulable)
    }

    /// The result for the task called `name`.
    pub fn task(&self, name: &str) -> Option<&TaskResult> {
        self.tasks.iter().find(|t| t.name == name)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let head = [
            "task", "core", "prio", "C", "B", "I", "R", "D", "margin", "verdict",
        ];
        let rows: Vec<[String; 10]> = self
            .tasks
            .iter()
            .map(|t| {
                [
                    t.name.clone(),
                    t.core.to_string(),
                    t.priority.to_string(),
                    human_ns(t.wcet_ns as f64),
                    human_ns(t.blocking_ns as f64),
                    human_ns(t.interference_ns as f64),
                    if t.schedulable {
                        human_ns(t.response_ns as f64)
                    } else {
                        format!("> {}", human_ns(t.deadline_ns as f64))
                    },
                    human_ns(t.deadline_ns as f64),
                    human_ns(t.margin_ns as f64),
                    if t.schedulable { "ok" } else { "MISS" }.to_owned(),
                ]
            })
            .collect();
        let mut widths = head.map(str::len);
        for row in &rows {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |f: &mut fmt::Formatter<'_>, cells: [&str; 10]| -> fmt::Result {
            for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
                let pad = " ".repeat(w - c.chars().count());
                if i == 0 {
                    write!(f, "{c}{pad}")?;
                } else {
                    write!(f, "  {pad}{c}")?;
                }
            }
            writeln!(f)
        };
        line(f, head)?;
        for row in &rows {
            line(f, std::array::from_fn(|i| row[i].as_str()))?;
        }
        for c in &self.cores {
            writeln!(
                f,
                "core {}: {} task(s), utilisation {:.1} %",
                c.core,
                c.tasks,
                c.utilisation * 100.0
            )?;
        }
        write!(
            f,
            "{}",
            if self.schedulable() {
                "schedulable: every response-time bound is within its deadline"
            } else {
                "NOT schedulable: see the MISS rows"
            }
        )
    }
}

fn validate(tasks: &[Task]) -> Result<(), RtaError> {
    let mut names = BTreeSet::new();
    for t in tasks {
        if !names.insert(t.name.as_str()) {
            return Err(RtaError::DuplicateName(t.name.clone()));
        }
        if t.period_ns == 0 {
            return Err(RtaError::ZeroPeriod(t.name.clone()));
        }
        if t.deadline_ns == 0 || t.deadline_ns > t.period_ns {
            return Err(RtaError::BadDeadline {
                task: t.name.clone(),
                deadline_ns: t.deadline_ns,
                period_ns: t.period_ns,
            });
        }
        for cs in &t.critical_sections {
            if cs.longest_ns > t.wcet_ns || cs.per_job == 0 {
                return Err(RtaError::BadCriticalSection {
                    task: t.name.clone(),
                    resource: cs.resource.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Resource groups: resources connected through tasks that use several of them.
fn resource_groups(tasks: &[Task]) -> BTreeMap<&str, usize> {
    let mut group: BTreeMap<&str, usize> = BTreeMap::new();
    let mut next = 0;
    for t in tasks {
        let mut ids: Vec<usize> = t
            .critical_sections
            .iter()
            .filter_map(|cs| group.get(cs.resource.as_str()).copied())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let id = ids.first().copied().unwrap_or_else(|| {
            next += 1;
            next - 1
        });
        for g in group.values_mut() {
            if ids.contains(g) {
                *g = id;
            }
        }
        for cs in &t.critical_sections {
            group.insert(cs.resource.as_str(), id);
        }
    }
    group
}

/// Precomputed per-task quantities that do not depend on `R`.
struct Prepared {
    /// `b_i`: one local lower-priority critical section.
    local: u128,
    /// `n_i`: lock requests per job that may suspend (group spans cores), else 0.
    requests: u128,
    /// `W_i`: wait per request for remote holders.
    remote_wait: u128,
    /// Remote higher-priority tasks (index) with their group critical-section time per job.
    remote_hp: Vec<(usize, u128)>,
}

fn prepare(tasks: &[Task]) -> Vec<Prepared> {
    let groups = resource_groups(tasks);
    let mut ceiling: BTreeMap<&str, u8> = BTreeMap::new();
    let mut group_cores: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for t in tasks {
        for cs in &t.critical_sections {
            let c = ceiling.entry(cs.resource.as_str()).or_insert(0);
            *c = (*c).max(t.priority);
            group_cores
                .entry(groups[cs.resource.as_str()])
                .or_default()
                .insert(t.core);
        }
    }
    tasks
        .iter()
        .map(|ti| {
            let p = ti.priority;
            let local = tasks
                .iter()
                .filter(|tj| tj.core == ti.core && tj.priority < p)
                .flat_map(|tj| &tj.critical_sections)
                .filter(|cs| ceiling[cs.resource.as_str()] >= p)
                .map(|cs| u128::from(cs.longest_ns))
                .max()
                .unwrap_or(0);
            // Groups `i` locks that span cores.
            let shared: BTreeSet<usize> = ti
                .critical_sections
                .iter()
                .map(|cs| groups[cs.resource.as_str()])
                .filter(|g| group_cores[g].len() > 1)
                .collect();
            let requests: u128 = ti
                .critical_sections
                .iter()
                .filter(|cs| shared.contains(&groups[cs.resource.as_str()]))
                .map(|cs| u128::from(cs.per_job))
                .sum();
            let in_shared = |cs: &&CriticalSection| shared.contains(&groups[cs.resource.as_str()]);
            let mut remote_wait = 0;
            let mut remote_hp = Vec::new();
            if requests > 0 {
                for (j, tj) in tasks.iter().enumerate() {
                    if tj.core == ti.core {
                        continue;
                    }
                    let sections = || tj.critical_sections.iter().filter(in_shared);
                    remote_wait += sections()
                        .filter(|cs| ceiling[cs.resource.as_str()] >= p)
                        .map(|cs| u128::from(cs.longest_ns))
                        .max()
                        .unwrap_or(0);
                    if tj.priority > p {
                        let demand: u128 = sections()
                            .map(|cs| u128::from(cs.longest_ns) * u128::from(cs.per_job))
                            .sum();
                        if demand > 0 {
                            remote_hp.push((j, demand));
                        }
                    }
                }
            }
            Prepared {
                local,
                requests,
                remote_wait,
                remote_hp,
            }
        })
        .collect()
}

fn ceil_div(a: u128, b: u128) -> u128 {
    a.div_ceil(b)
}

/// Analyses `tasks`. See the module docs for the model.
///
/// # Errors
/// [`RtaError`] for a task set outside the model (duplicate names, zero periods, deadlines
/// beyond periods, critical sections longer than the WCET).
pub fn analyse(tasks: &[Task]) -> Result<Report, RtaError> {
    validate(tasks)?;
    let prep = prepare(tasks);
    let blocking: Vec<u128> = prep
        .iter()
        .map(|p| (1 + p.requests) * p.local + p.requests * p.remote_wait)
        .collect();
    // Remote higher-priority locking over a window of `w`.
    let remote_hp = |i: usize, w: u128| -> u128 {
        prep[i]
            .remote_hp
            .iter()
            .map(|&(h, demand)| ceil_div(w, u128::from(tasks[h].period_ns)) * demand)
            .sum()
    };
    // Higher priorities first, so a suspending higher-priority task's R is known as jitter.
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(tasks[i].priority));
    let mut response: Vec<Option<u128>> = vec![None; tasks.len()];
    let mut results: Vec<Option<TaskResult>> = vec![None; tasks.len()];
    for &i in &order {
        let ti = &tasks[i];
        let c = u128::from(ti.wcet_ns);
        let d = u128::from(ti.deadline_ns);
        let interference = |r: u128| -> u128 {
            let mut sum = remote_hp(i, r);
            for (j, tj) in tasks.iter().enumerate() {
                if j == i || tj.core != ti.core || tj.priority < ti.priority {
                    continue;
                }
                let t = u128::from(tj.period_ns);
                let cj = u128::from(tj.wcet_ns);
                if tj.priority > ti.priority {
                    let jitter = if prep[j].requests > 0 {
                        // R_j − C_j; R_j is known (higher priority, analysed before), and
                        // when j was found unschedulable its deadline bounds nothing, so the
                        // first iterate beyond it is used, which is still a lower bound on
                        // the jitter: the set is unschedulable either way.
                        response[j].unwrap_or(u128::from(tj.deadline_ns)) - cj
                    } else {
                        0
                    };
                    sum += ceil_div(r + jitter, t) * cj;
                } else {
                    // Equal priority: FIFO on one thread; occupies it while suspended too.
                    let dj = u128::from(tj.deadline_ns);
                    let suspension = prep[j].requests * prep[j].remote_wait + remote_hp(j, dj);
                    sum += ceil_div(r, t) * (cj + suspension);
                }
            }
            sum
        };
        let mut r = c + blocking[i];
        let mut iterations = 0;
        let final_interference = loop {
            iterations += 1;
            let i_r = interference(r);
            let next = c + blocking[i] + i_r;
            if next == r || next > d {
                r = next;
                break i_r;
            }
            r = next;
        };
        response[i] = Some(r);
        let schedulable = r <= d;
        let to_u64 = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
        let margin =
            i128::try_from(d).unwrap_or(i128::MAX) - i128::try_from(r).unwrap_or(i128::MAX);
        results[i] = Some(TaskResult {
            name: ti.name.clone(),
            core: ti.core,
            priority: ti.priority,
            wcet_ns: ti.wcet_ns,
            blocking_ns: to_u64(blocking[i]),
            interference_ns: to_u64(final_interference),
            response_ns: to_u64(r),
            deadline_ns: ti.deadline_ns,
            schedulable,
            margin_ns: i64::try_from(margin).unwrap_or(if margin < 0 {
                i64::MIN
            } else {
                i64::MAX
            }),
            iterations,
        });
    }
    let mut cores: BTreeMap<usize, (usize, f64)> = BTreeMap::new();
    for t in tasks {
        let e = cores.entry(t.core).or_default();
        e.0 += 1;
        e.1 += t.wcet_ns as f64 / t.period_ns as f64;
    }
    Ok(Report {
        tasks: results
            .into_iter()
            .map(|r| r.expect("every task analysed"))
            .collect(),
        cores: cores
            .into_iter()
            .map(|(core, (tasks, utilisation))| CoreLoad {
                core,
                tasks,
                utilisation,
            })
            .collect(),
    })
}
