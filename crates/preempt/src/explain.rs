//! Why did a job miss its deadline: kernel-trace attribution of an app's deadline misses.
//!
//! With `#[preempt::app(explain = true)]` or `PREEMPT_EXPLAIN=1` in the environment, the
//! runtime starts a [`preempt_trace::Session`] before `init` (a private tracefs instance,
//! removed at exit however the process ends) and a thread `preempt-explain` (SCHED_FIFO 1 like
//! the session's reader, below every executor: at SCHED_OTHER a load beside the app starved
//! them and the trace lost events; SCHED_OTHER for a soft app). An
//! executor that sees a job miss its deadline, or drops overrun releases of an
//! `on_miss = Skip` task (their deadlines passed unrun; one note per run of dropped
//! releases, from the first of them to the moment the executor got to the task), notes
//! `(task, release, start, tid, cpu)` in its own preallocated note log (`src/note_log.rs`: a
//! `try_lock` and a push within capacity: no allocation, no blocking, no system call; a note
//! that finds the log busy or full is counted as dropped). Each executor has its log (one per
//! priority level), holding 10 passes of that executor's own tasks' release rate (sized once
//! the periods are known, before the executors start): executors that miss at the same
//! instant, as a host stall makes them, never contend for one log. Every 100 ms the explain thread
//! swaps each executor's log in turn for an empty one (allocated beforehand: a note can only
//! find its log busy for the few ns of that swap) and asks the session why each job started
//! only at `start` instead of `release`: the causes (irq, softirq, another thread, the wake-up
//! path, idle exit, timer, lost, invisible) add up to that delay. The job's own execution
//! after its start is in the task statistics (execution, preemption), not here.
//!
//! At exit the summary prints the top causes (at most 5 lines, after one line each for misses
//! only partly traced and misses not noted) and `PREEMPT_STATS_JSON` carries an `explain`
//! object: per task its `explanations` (`[{cycle, release_ns, latency_ns, causes: [{kind,
//! name, pid, ns}], steal_ns, covered}]`, `cycle` being the miss's index), the run's
//! `top_causes`, and what makes it partial (`partly_traced`, `dropped_notes`, `trace_loss`,
//! `partial`; docs/results-schema.md).
//!
//! A program that runs an app and writes its own result (the gimbal demo) asks for
//! explaining with [`request`] and takes the outcome with [`take_outcome`] after the app
//! ended: the report, or why there is none.
//!
//! Without tracefs or the right to use it the app runs without explanations and says why.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use preempt_io::sys::cpu;
use preempt_trace::{Explanation, Loss, Options, Session, TopCause, Window};

use crate::level::Executable;
use crate::note_log::NoteLog;
use serde::{Deserialize, Serialize};

/// The environment variable that turns explaining on for any app (`1`).
pub const EXPLAIN_ENV: &str = "PREEMPT_EXPLAIN";

/// Fewest notes an executor's log keeps between two passes of the explain thread (an
/// executor whose release rate is unknown: software and hardware tasks only).
const LOG_MIN_CAPACITY: usize = 1024;
/// An executor's log holds this many passes' worth of its tasks' releases: the explain thread takes the
/// notes late next to a load, and its own pass (explaining a pass of 1 000 misses) can take longer than the interval, and
/// with a margin of 4 a debug build at 10 kHz of misses dropped notes now and then (2 of
/// 10 000 in one of six runs of `tests/runtime_explain.rs`); 10 passes, one second of
/// releases, is 400 KB of notes at 10 kHz. A note that does not fit is counted and reported.
const LOG_MARGIN: u64 = 10;
/// Most notes an executor's log keeps (≈ 48 MiB of notes: a million releases per second over
/// the margin).
const LOG_MAX_CAPACITY: usize = 1 << 20;
/// Explanations kept per task (the longest delays; the rest only count in `top_causes`).
const KEEP_PER_TASK: usize = 100;
/// Windows explained under one hold of the session's lock (the reader polls in between).
const EXPLAIN_CHUNK: usize = 256;
/// How often the explain thread takes the notes.
const PASS_EVERY: Duration = Duration::from_millis(100);

/// Note logs, one per priority level 0..=99 (the macro's range): an app has one executor per
/// level, so each executor notes into its own log.
const LEVELS: usize = 100;

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The executors' note logs, by priority level ([`log_of`]).
static LOGS: [NoteLog<Miss>; LEVELS] = [const { NoteLog::new() }; LEVELS];
/// [`request`]: explain the next app started in this process.
static REQUESTED: AtomicBool = AtomicBool::new(false);
/// The logs' capacity in all for this run ([`size_log`]), for the report.
static CAPACITY: AtomicUsize = AtomicUsize::new(0);
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

/// The note log of the executor of priority `level` (a level past 99, which the macro does
/// not allow, shares the last log: still correct, only more likely to find it busy).
fn log_of(level: u8) -> &'static NoteLog<Miss> {
    debug_assert!(usize::from(level) < LEVELS, "priority {level} past 99");
    &LOGS[usize::from(level).min(LEVELS - 1)]
}

/// Notes a deadline miss of `task` in the log of the executor of priority `level` (called by
/// that executor, which ran the job, on its thread `tid`; `cpu` is the executor's CPU when
/// its affinity is one CPU). No system call: the executor read `tid` and its affinity at
/// start, an unpinned executor's CPU comes from `sched_getcpu`, which glibc answers from the
/// rseq area or the vDSO, and the log's lock is only ever tried ([`NoteLog`]).
#[cold]
pub(crate) fn note_miss(
    level: u8,
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
    // Dropped (busy or full): counted in the log, reported as `dropped_notes`.
    let _ = log_of(level).note(miss);
}

/// Notes dropped over the run, every executor's log together.
fn dropped_notes() -> u64 {
    LOGS.iter().map(NoteLog::dropped).sum()
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
    /// Whether the trace held every event of the window (false: events were lost in it, and
    /// that time is charged to `lost`).
    #[serde(default = "yes")]
    pub covered: bool,
    /// Where the window has `throttled` time: the stretch in which the kernel stopped the
    /// real-time class on the CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled: Option<preempt_trace::Stretch>,
}

fn yes() -> bool {
    true
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
    /// Misses that could not be explained (not in the trace, or not noted: `dropped_notes`).
    pub unexplained: u64,
    /// Of the explained misses, those whose window the trace did not fully hold (events lost;
    /// their `covered` is false and the time is charged to `lost`).
    #[serde(default)]
    pub partly_traced: u64,
    /// Misses never noted because the executor's note log was full or busy when they happened
    /// (counted in `unexplained` too). Any: the explanations are partial.
    #[serde(default)]
    pub dropped_notes: u64,
    /// The note logs' capacity, every executor's together (notes between two passes of the
    /// explain thread).
    #[serde(default)]
    pub log_capacity: u64,
    /// What the trace lost over the run (events overwritten before the reader took them).
    #[serde(default)]
    pub trace_loss: Option<Loss>,
    /// Some misses are explained only in part or not at all (`partly_traced`,
    /// `dropped_notes` or `unexplained` above zero).
    #[serde(default)]
    pub partial: bool,
    /// The stretches in which the kernel stopped the real-time class on a CPU during the run
    /// (RT throttling or the fair server), from the trace: any, and the app's figures are the
    /// throttle's as much as its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttled: Vec<preempt_trace::Stretch>,
}

impl Report {
    /// At most five lines naming the top causes, for the exit summary.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "why the deadline misses were late (kernel trace; {} explained, {} not{}):\n",
            self.explained,
            self.unexplained,
            if self.partial { "; PARTIAL" } else { "" }
        );
        if self.partly_traced > 0 {
            out.push_str(&format!(
                "  {} of {} misses only partly traced (events lost: their time is `lost`{})\n",
                self.partly_traced,
                self.explained,
                match &self.trace_loss {
                    Some(l) if l.any() => format!(
                        "; the trace lost {} stretches, {:.1} ms in all",
                        l.lost_stretches,
                        l.lost_ns as f64 / 1e6
                    ),
                    _ => String::new(),
                }
            ));
        }
        if self.dropped_notes > 0 {
            out.push_str(&format!(
                "  {} misses not noted (the note logs, {} notes in all, were full or busy): not \
                 explained\n",
                self.dropped_notes, self.log_capacity
            ));
        }
        for line in
            preempt_trace::summary_lines(&self.top_causes, self.explained as usize, "misses", 5)
        {
            out.push_str("  ");
            out.push_str(&line);
            out.push('\n');
        }
        // After the top causes (the first line below the header stays the main cause).
        if !self.throttled.is_empty() {
            out.push_str(&format!(
                "  THROTTLED: {}\n",
                preempt_trace::describe_throttled(&self.throttled)
            ));
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
    // Real-time apps: the reader and this thread at SCHED_FIFO 1, below every executor and
    // above the load beside the app (a starved reader loses events, and this thread holds
    // the session's lock while explaining: at SCHED_OTHER it held the reader off). A soft
    // app's executors are SCHED_OTHER: nothing of the explainer goes above them.
    let soft = crate::readiness::soft_requested();
    let priority = if soft {
        None
    } else {
        preempt_trace::DEFAULT_READER_PRIORITY
    };
    let session = match Session::start(Options {
        reader_priority: priority,
        ..Options::default()
    }) {
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
    // Every log empty and of capacity 0 (no executor notes before `size_log` sized its log),
    // its dropped notes forgotten, its memory of an earlier run freed.
    for log in &LOGS {
        log.reset(0);
    }
    CAPACITY.store(0, Ordering::Relaxed);
    ACTIVE.store(true, Ordering::Release);
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("preempt-explain".into())
            .spawn(move || {
                if let Some(priority) = priority {
                    // Best effort: without the right it stays SCHED_OTHER, and what the
                    // trace lost then shows in the report (`trace_loss`, `lost`).
                    let _ = preempt_io::sys::sched::set_current_thread_policy(
                        &preempt_io::sys::sched::Policy::Fifo { priority },
                    );
                }
                explain_loop(session, &stop)
            })
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

/// Gives each executor's note log room for every release of its tasks over [`LOG_MARGIN`]
/// passes of the explain thread (called once the tasks' periods are set, before the
/// executors start: the executors never allocate to note a miss). Tasks without a period or
/// declared minimum inter-arrival time add nothing; each log holds at least
/// [`LOG_MIN_CAPACITY`].
pub(crate) fn size_log(executors: &[&dyn Executable]) {
    if !active() {
        return;
    }
    // Releases per second by log (executors sharing a log, which only a priority past 99
    // would make, share its room too).
    let mut per_second = [None::<u64>; LEVELS];
    for e in executors {
        let rate: u64 = e
            .tasks()
            .iter()
            .filter_map(|t| t.period_ns().or_else(|| t.declared_interarrival_ns()))
            .map(|ns| 1_000_000_000u64.div_ceil(ns.max(1)))
            .sum();
        let slot = &mut per_second[usize::from(e.priority()).min(LEVELS - 1)];
        *slot = Some(slot.unwrap_or(0).saturating_add(rate));
    }
    let mut total = 0usize;
    for (log, rate) in LOGS.iter().zip(per_second) {
        if let Some(rate) = rate {
            let capacity = log_capacity(rate);
            log.reset(capacity);
            total = total.saturating_add(capacity);
        }
    }
    CAPACITY.store(total, Ordering::Relaxed);
}

/// Notes for `per_second` releases over [`LOG_MARGIN`] passes, at least [`LOG_MIN_CAPACITY`].
fn log_capacity(per_second: u64) -> usize {
    let pass_ms = u64::try_from(PASS_EVERY.as_millis()).unwrap_or(u64::MAX);
    let n = per_second
        .saturating_mul(pass_ms)
        .div_ceil(1000)
        .saturating_mul(LOG_MARGIN);
    usize::try_from(n)
        .unwrap_or(usize::MAX)
        .clamp(LOG_MIN_CAPACITY, LOG_MAX_CAPACITY)
}

impl Explainer {
    /// Explains the last notes, removes the trace instance and returns the report (also
    /// kept for [`take_outcome`]).
    pub(crate) fn finish(self) -> Report {
        ACTIVE.store(false, Ordering::Release);
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        let report = self.thread.join().unwrap_or_else(|_| {
            let dropped = dropped_notes();
            Report {
                unexplained: dropped,
                dropped_notes: dropped,
                partial: true,
                ..Report::default()
            }
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
    let mut tally = Tally::default();
    // One batch per log: each takes its log's place with that log's room (kept from pass to
    // pass, so after the first pass no batch allocates).
    let mut batches: Vec<Vec<Miss>> = std::iter::repeat_with(Vec::new).take(LEVELS).collect();
    loop {
        let last = stop.load(Ordering::Acquire);
        // Each executor's log in turn: its lock is held for a swap, so an executor noting a
        // miss meanwhile rarely finds it busy, and never because of another executor. (Logs
        // of levels the app does not have are empty, of capacity 0: a swap of two empty
        // vectors.)
        for (log, batch) in LOGS.iter().zip(&mut batches) {
            log.take(batch);
        }
        // A task's misses all come from its executor's log, in the order they were noted.
        for batch in &mut batches {
            tally.explain(&session, batch);
        }
        if last {
            break;
        }
        std::thread::park_timeout(PASS_EVERY);
    }
    let trace_loss = session.loss();
    let throttled = session.throttled();
    if let Err(e) = session.finish() {
        eprintln!("preempt: {e}");
    }
    Report {
        throttled,
        ..tally.report(trace_loss)
    }
}

/// What the explain thread found so far.
#[derive(Default)]
struct Tally {
    /// Per task: its misses so far and the explanations kept ([`keep_longest`]).
    per_task: Vec<(&'static str, u64, Vec<Explained>)>,
    /// Every explanation, without its segments (for `top_causes`).
    all: Vec<Explanation>,
    unexplained: u64,
    partly_traced: u64,
}

impl Tally {
    /// Asks the session why each miss of `batch` was late and adds the answers up; leaves
    /// `batch` empty, with its room.
    fn explain(&mut self, session: &Session, batch: &mut Vec<Miss>) {
        if batch.is_empty() {
            return;
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
        // A chunk at a time: the session's lock is held while explaining, and the reader
        // waits for it; at 10 kHz of misses a whole pass at once kept it waiting for as long
        // as the explaining took.
        let results = windows
            .chunks(EXPLAIN_CHUNK)
            .flat_map(|chunk| session.explain_all(chunk));
        for (m, res) in batch.drain(..).zip(results) {
            let slot = match self.per_task.iter().position(|(t, _, _)| *t == m.task) {
                Some(i) => i,
                None => {
                    self.per_task.push((m.task, 0, Vec::new()));
                    self.per_task.len() - 1
                }
            };
            let (_, count, kept) = &mut self.per_task[slot];
            match res {
                Ok(ex) => {
                    self.partly_traced += u64::from(!ex.covered);
                    keep_longest(
                        kept,
                        Explained {
                            cycle: *count,
                            release_ns: ex.release_ns,
                            latency_ns: ex.latency_ns,
                            causes: ex.causes.clone(),
                            steal_ns: ex.steal_ns,
                            covered: ex.covered,
                            throttled: ex.throttled,
                        },
                    );
                    self.all.push(Explanation {
                        segments: Vec::new(),
                        ..ex
                    });
                }
                Err(_) => self.unexplained += 1,
            }
            *count += 1;
        }
    }

    /// The run's report, once every log was taken for the last time.
    fn report(self, trace_loss: Loss) -> Report {
        let dropped_notes = dropped_notes();
        let unexplained = self.unexplained + dropped_notes;
        Report {
            top_causes: preempt_trace::top_causes(&self.all),
            explained: self.all.len() as u64,
            unexplained,
            partly_traced: self.partly_traced,
            dropped_notes,
            log_capacity: CAPACITY.load(Ordering::Relaxed) as u64,
            trace_loss: Some(trace_loss),
            partial: unexplained + self.partly_traced > 0,
            throttled: Vec::new(),
            tasks: self
                .per_task
                .into_iter()
                .map(|(task, _, explanations)| TaskExplanations {
                    task: task.to_string(),
                    explanations,
                })
                .collect(),
        }
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
            covered: true,
            throttled: None,
        }
    }

    #[test]
    fn the_summary_names_a_throttled_run() {
        let quiet = Report::default();
        assert!(
            !quiet.summary().contains("THROTTLED"),
            "{}",
            quiet.summary()
        );
        let throttled = Report {
            throttled: vec![preempt_trace::Stretch {
                cpu: 1,
                start_ns: 2_000_000_000,
                end_ns: 2_051_500_000,
            }],
            ..Report::default()
        };
        let text = throttled.summary();
        assert!(
            text.contains("THROTTLED: the kernel stopped the real-time class 1 time(s), 51.5 ms"),
            "{text}"
        );
        assert!(text.contains("CPU 1: 51.5 ms"), "{text}");
    }

    #[test]
    fn the_summary_says_what_is_partial() {
        let full = Report {
            explained: 120,
            log_capacity: 4_000,
            ..Report::default()
        };
        assert!(!full.summary().contains("PARTIAL"), "{}", full.summary());
        let partial = Report {
            partly_traced: 3,
            dropped_notes: 2,
            unexplained: 2,
            partial: true,
            trace_loss: Some(Loss {
                lost_stretches: 4,
                lost_ns: 12_500_000,
                ..Loss::default()
            }),
            ..full
        };
        let text = partial.summary();
        assert!(text.contains("120 explained, 2 not; PARTIAL"), "{text}");
        assert!(
            text.contains("3 of 120 misses only partly traced (events lost"),
            "{text}"
        );
        assert!(text.contains("4 stretches, 12.5 ms"), "{text}");
        assert!(
            text.contains(
                "2 misses not noted (the note logs, 4000 notes in all, were full or busy)"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_log_holds_ten_passes_of_releases() {
        // A 10 kHz and a 1 kHz task: 11 000 releases/s, 1 100 per 100 ms pass, 10 passes.
        assert_eq!(log_capacity(11_000), 11_000);
        assert_eq!(log_capacity(0), LOG_MIN_CAPACITY);
        assert_eq!(log_capacity(u64::MAX), LOG_MAX_CAPACITY);
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
