//! Why did a job miss its deadline: kernel-trace attribution of an app's deadline misses.
//!
//! With `#[preempt::app(explain = true)]` or `PREEMPT_EXPLAIN=1` in the environment, the
//! runtime starts a [`preempt_trace::Session`] before `init` (a private tracefs instance,
//! removed at exit however the process ends) and a SCHED_OTHER thread `preempt-explain`. An
//! executor that sees a job miss its deadline notes `(task, release, start, end, tid, cpu)`
//! in a preallocated log (a `try_lock` and a push within capacity: no allocation, no
//! blocking; a note that finds the log busy or full is counted as dropped). Every 100 ms the
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
//! Without tracefs or the right to use it the app runs without explanations and says why.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use preempt_io::sys::cpu;
use preempt_trace::{Explanation, Options, Session, TopCause, Window};
use serde::Serialize;

/// The environment variable that turns explaining on for any app (`1`).
pub const EXPLAIN_ENV: &str = "PREEMPT_EXPLAIN";

/// Notes kept between two passes of the explain thread.
const LOG_CAPACITY: usize = 1024;
/// Explanations kept per task (the first ones; the rest only count in `top_causes`).
const KEEP_PER_TASK: usize = 100;
/// How often the explain thread takes the notes.
const PASS_EVERY: Duration = Duration::from_millis(100);

static ACTIVE: AtomicBool = AtomicBool::new(false);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static LOG: Mutex<Vec<Miss>> = Mutex::new(Vec::new());

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
#[derive(Debug, Serialize)]
pub struct TaskExplanations {
    /// Task name.
    pub task: &'static str,
    /// Its misses explained (the first 100).
    pub explanations: Vec<Explained>,
}

/// One explained miss.
#[derive(Debug, Serialize)]
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
#[derive(Debug, Default, Serialize)]
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
    if !(configured || from_env) {
        return None;
    }
    let session = match Session::start(Options::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "preempt: app `{app}`: cannot explain deadline misses: {e}; the app runs \
                 without explanations"
            );
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
            None
        }
    }
}

impl Explainer {
    /// Explains the last notes, removes the trace instance and returns the report.
    pub(crate) fn finish(self) -> Report {
        ACTIVE.store(false, Ordering::Release);
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        self.thread.join().unwrap_or_else(|_| Report {
            unexplained: DROPPED.load(Ordering::Relaxed),
            ..Report::default()
        })
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
                    if kept.len() < KEEP_PER_TASK {
                        kept.push(Explained {
                            cycle: *count,
                            release_ns: ex.release_ns,
                            latency_ns: ex.latency_ns,
                            causes: ex.causes.clone(),
                            steal_ns: ex.steal_ns,
                        });
                    }
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
            .map(|(task, _, explanations)| TaskExplanations { task, explanations })
            .collect(),
    }
}
