//! Why did a job miss its deadline: kernel-trace attribution of an app's deadline misses.
//!
//! With `#[preempt::app(explain = true)]` or `PREEMPT_EXPLAIN=1` in the environment, the
//! runtime starts a [`preempt_trace::Session`] before `init` (a private tracefs instance,
//! removed at exit however the process ends) and a SCHED_OTHER thread `preempt-explain`. An
//! executor that sees a job miss its deadline, or drops overrun releases of an
//! `on_miss = Skip` task (their deadlines passed unrun; one note per run of dropped
//! releases, from the first of them to the moment the executor got to the task), notes
//! `(task, release, start, tid, cpu)` in a preallocated log (a `try_lock` and a push within
//! capacity: no allocation, no blocking; a note that finds the log busy or full is counted
//! as dropped). Every 100 ms the
//! explain thread takes the notes and asks the session why the job started only at `start`
//! instead of `release`: the causes (irq, softirq, another thread, the wake-up path, idle
//! exit, timer, invisible) add up to that delay. The job's own execution after its start is
//! in the task statistics (execution, preemption), not here.
//!
//! At exit the summary prints the top causes (at most 5 lines) and `PREEMPT_STATS_JSON`
//! carries an `explain` object: per task its `explanations` (`[{cycle, release_ns,
//! latency_ns, causes: [{kind, name, pid, ns}]}]`, `cycle` being the miss's index) and the
//! run's `top_causes`.
//!
//! A program that runs an app and writes its own result (the gimbal demo) asks for
//! explaining with [`request`] and takes the outcome with [`take_outcome`] after the app
//! ended: the report, or why there is none.
//!
//! Without tracefs or the right to use it the app runs without explanations and says why.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use preempt_io::sys::cpu;
use preempt_trace::{Explanation, Options, Session, TopCause, Window};
use serde::{Deserialize, Serialize};

/// The environment variable that turns explaining on for any app (`1`).
pub const EXPLAIN_ENV: &str = "PREEMPT_EXPLAIN";

/// Notes kept between two passes of the explain thread.
const LOG_CAPACITY: usize = 1024;
/// Explanations kept per task (the longest delays; the rest only count in `top_causes`).
const KEEP_PER_TASK: usize = 100;
/// How often the explain thread takes the notes.
const PASS_EVERY: Duration = Duration::from_millis(100);

static ACTIVE: AtomicBool = AtomicBool::new(false);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static LOG: Mutex<Vec<Miss>> = Mutex::new(Vec::new());
/// [`request`]: explain the next app started in this process.
static REQUESTED: AtomicBool = AtomicBool::new(false);
/// The last run's outcome, for [`take_outcome`].
static OUTCOME: Mutex<Option<Result<Report, String>>> = Mutex::new(None);

/// Asks for the next app started in this process to explain its deadline misses, as
/// `PREEMPT_EXPLAIN=1` does (for a program that runs an app, such as the gimbal demo).
pub fn request() {
    REQUESTED.store(true, Ordering::Release);
}

/// What explaining gave for the last app that asked for it (`None`: explaining was not
/// asked): the report, or why the app ran without explanations (tracefs unusable, ...).
/// Taken once.
pub fn take_outcome() -> Option<Result<Report, String>> {
    OUTCOME
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
}

/// Keeps the run's outcome for [`take_outcome`].
fn keep_outcome(outcome: Result<Report, String>) {
    *OUTCOME.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
}

#[derive(Clone, Copy, Debug)]
struct Miss {
    task: &'static str,
    release_ns: u64,
    start_ns: u64,
    tid: i32,
    cpu: usize,
}

/// Whether explaining is on (one relaxed load; checked only on a miss).
#[inline]
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Notes a deadline miss of `task` (called by the executor that ran the job, on its thread
/// `tid`; `cpu` is the executor's CPU when its affinity is one CPU). No system call: the
/// executor read `tid` and its affinity at start, and an unpinned executor's CPU comes from
/// `sched_getcpu`, which glibc answers from the rseq area or the vDSO.
#[cold]
pub(crate) fn note_miss(
    task: &'static str,
    release_ns: u64,
    start_ns: u64,
    tid: i32,
    cpu: Option<usize>,
) {
    let miss = Miss {
        task,
        release_ns,
        start_ns,
        tid,
        cpu: cpu.unwrap_or_else(|| cpu::current_cpu().unwrap_or(usize::MAX)),
    };
    match LOG.try_lock() {
        Ok(mut log) if log.len() < log.capacity() => log.push(miss),
        _ => {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Explanations of one task's misses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskExplanations {
    /// Task name.
    pub task: String,
    /// Its misses explained (the 100 with the longest delays, in the order they happened).
    pub explanations: Vec<Explained>,
}

/// One explained miss.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explained {
    /// Index of the miss among the task's misses.
    pub cycle: u64,
    /// The job's release, CLOCK_MONOTONIC ns.
    pub release_ns: u64,
    /// Release to start of the job.
    pub latency_ns: u64,
    /// The causes, largest first.
    pub causes: Vec<preempt_trace::Cause>,
    /// Steal time of the CPU around the window, where `/proc/stat` has it.
    pub steal_ns: Option<u64>,
}

/// What the explain thread found over the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// Per task.
    pub tasks: Vec<TaskExplanations>,
    /// Aggregated over every explained miss.
    pub top_causes: Vec<TopCause>,
    /// Misses explained.
    pub explained: u64,
    /// Misses that could not be explained (not in the trace, or noted while the log was busy).
    pub unexplained: u64,
}

impl Report {
    /// At most five lines naming the top causes, for the exit summary.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "why the deadline misses were late (kernel trace; {} explained, {} not):\n",
            self.explained, self.unexplained
        );
        for line in preempt_trace::summary_lines(&self.top_causes, self.explained as usize, 5) {
            out.push_str("  ");
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

/// The running explainer.
pub(crate) struct Explainer {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Report>,
}

/// Starts the explainer if `#[app(explain = true)]` or `PREEMPT_EXPLAIN=1` asks for it; on
/// failure says why on stderr and returns `None` (the app runs without explanations).
pub(crate) fn start(app: &str, configured: bool) -> Option<Explainer> {
    let from_env = std::env::var(EXPLAIN_ENV).is_ok_and(|v| v == "1");
    if !(configured || from_env || REQUESTED.load(Ordering::Acquire)) {
        return None;
    }
    let session = match Session::start(Options::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "preempt: app `{app}`: cannot explain deadline misses: {e}; the app runs \
                 without explanations"
            );
            keep_outcome(Err(format!("kernel tracing unavailable: {e}")));
            return None;
        }
    };
    LOG.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .reserve_exact(LOG_CAPACITY);
    DROPPED.store(0, Ordering::Relaxed);
    ACTIVE.store(true, Ordering::Release);
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("preempt-explain".into())
            .spawn(move || explain_loop(session, &stop))
    };
    match thread {
        Ok(thread) => Some(Explainer { stop, thread }),
        Err(e) => {
            ACTIVE.store(false, Ordering::Release);
            eprintln!("preempt: app `{app}`: cannot start the explain thread ({e})");
            keep_outcome(Err(format!("cannot start the explain thread ({e})")));
            None
        }
    }
}

impl Explainer {
    /// Explains the last notes, removes the trace instance and returns the report (also
    /// kept for [`take_outcome`]).
    pub(crate) fn finish(self) -> Report {
        ACTIVE.store(false, Ordering::Release);
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        let report = self.thread.join().unwrap_or_else(|_| Report {
            unexplained: DROPPED.load(Ordering::Relaxed),
            ..Report::default()
        });
        keep_outcome(Ok(report.clone()));
        report
    }
}

/// Adds `e` to `kept` while it holds fewer than [`KEEP_PER_TASK`], else in place of the
/// shortest delay kept when `e`'s is longer: a loaded run's many small misses do not push its
/// long stalls out. `kept` stays in the order of the misses.
fn keep_longest(kept: &mut Vec<Explained>, e: Explained) {
    if kept.len() < KEEP_PER_TASK {
        kept.push(e);
        return;
    }
    let Some((i, shortest)) = kept.iter().enumerate().min_by_key(|(_, k)| k.latency_ns) else {
        return;
    };
    if e.latency_ns > shortest.latency_ns {
        kept.remove(i);
        kept.push(e);
    }
}

fn explain_loop(session: Session, stop: &AtomicBool) -> Report {
    let mut per_task: Vec<(&'static str, u64, Vec<Explained>)> = Vec::new();
    let mut all: Vec<Explanation> = Vec::new();
    let mut unexplained = 0u64;
    let mut batch: Vec<Miss> = Vec::with_capacity(LOG_CAPACITY);
    loop {
        let last = stop.load(Ordering::Acquire);
        {
            let mut log = LOG.lock().unwrap_or_else(PoisonError::into_inner);
            batch.extend(log.drain(..));
        }
        let windows: Vec<(usize, Window)> = batch
            .iter()
            .map(|m| {
                (
                    m.cpu,
                    Window {
                        release_ns: m.release_ns,
                        end_ns: m.start_ns.max(m.release_ns),
                        pid: m.tid,
                    },
                )
            })
            .collect();
        for (m, res) in batch.drain(..).zip(session.explain_all(&windows)) {
            let slot = match per_task.iter().position(|(t, _, _)| *t == m.task) {
                Some(i) => i,
                None => {
                    per_task.push((m.task, 0, Vec::new()));
                    per_task.len() - 1
                }
            };
            let (_, count, kept) = &mut per_task[slot];
            match res {
                Ok(ex) => {
                    keep_longest(
                        kept,
                        Explained {
                            cycle: *count,
                            release_ns: ex.release_ns,
                            latency_ns: ex.latency_ns,
                            causes: ex.causes.clone(),
                            steal_ns: ex.steal_ns,
                        },
                    );
                    all.push(Explanation {
                        segments: Vec::new(),
                        ..ex
                    });
                }
                Err(_) => unexplained += 1,
            }
            *count += 1;
        }
        if last {
            break;
        }
        std::thread::park_timeout(PASS_EVERY);
    }
    if let Err(e) = session.finish() {
        eprintln!("preempt: {e}");
    }
    Report {
        top_causes: preempt_trace::top_causes(&all),
        explained: all.len() as u64,
        unexplained: unexplained + DROPPED.load(Ordering::Relaxed),
        tasks: per_task
            .into_iter()
            .map(|(task, _, explanations)| TaskExplanations {
                task: task.to_string(),
                explanations,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn miss(cycle: u64, latency_ns: u64) -> Explained {
        Explained {
            cycle,
            release_ns: cycle * 100,
            latency_ns,
            causes: Vec::new(),
            steal_ns: None,
        }
    }

    #[test]
    fn the_longest_delays_are_kept_in_order() {
        let mut kept = Vec::new();
        // Many short misses with two long stalls among them, at 7 and 150.
        for cycle in 0..300 {
            let latency = match cycle {
                7 => 5_000_000,
                150 => 4_000_000,
                c => 10_000 + c,
            };
            keep_longest(&mut kept, miss(cycle, latency));
        }
        assert_eq!(kept.len(), KEEP_PER_TASK);
        let cycles: Vec<u64> = kept.iter().map(|e| e.cycle).collect();
        assert!(cycles.windows(2).all(|w| w[0] < w[1]), "{cycles:?}");
        assert!(cycles.contains(&7) && cycles.contains(&150), "{cycles:?}");
        // The rest are the longest of the short ones: the last 98 short misses.
        assert_eq!(&cycles[..3], &[7, 150, 202], "{cycles:?}");
    }
}
