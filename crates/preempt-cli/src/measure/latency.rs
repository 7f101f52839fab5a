//! `preempt latency`: timer wake-up latency measured the way cyclictest does, done right.
//!
//! # Method
//! Each measuring thread (one per CPU) sleeps with `clock_nanosleep(CLOCK_MONOTONIC,
//! TIMER_ABSTIME)` until its next *intended release*, reads CLOCK_MONOTONIC when it wakes, and
//! records `latency = wake − release`. Releases are absolute (`start + k·interval`), so
//! lateness never accumulates into drift. With `--work-us` the thread then runs a calibrated
//! compute step ([`super::work`]) and records `compute = done − wake` and
//! `response = done − release`.
//!
//! # Where cyclictest is silently wrong, this is explicit
//! - **Missed periods are counted.** A thread that finishes after one or more later releases
//!   have already passed skips them (the next release is the first in the future), exactly as
//!   cyclictest does, but each skipped release is counted in `missed_periods` and the loop's
//!   release count includes them, so "max over N samples" never hides that N was a fraction
//!   of the periods:
//!
//!   ```text
//!   releases   0     1     2     3     4
//!              |-----|-----|-----|-----|
//!   job 0      [=wake late==========]          done after releases 1 and 2
//!   next sleep                      ->  3      missed_periods += 2
//!   ```
//! - **Equal timer slack.** Every measuring thread gets the same `PR_SET_TIMERSLACK`
//!   (default 1 ns), whatever its policy; otherwise SCHED_OTHER rows carry the default 50 µs
//!   slack and look 50 µs worse than they are.
//! - **SCHED_DEADLINE** runs with the given runtime/deadline/period; a period whose
//!   completion comes after release + deadline is counted in `deadline_misses`.
//! - **No cap.** The histogram ([`crate::stats::histogram`]) covers every `u64`, and the
//!   worst samples are kept with their cycle index.
//!
//! # The hot loop
//! [`run_loop`] makes no system call besides the sleep and the clock reads (plus
//! `sched_getcpu`, a vDSO read, when threads are not pinned, and, after a wake-up has been
//! recorded, at most every 10 ms one `pread` of the thread's schedstat), allocates nothing
//! (the trace buffer is preallocated and pre-touched), takes no lock, and checks the stop
//! flags with two relaxed loads.
//!
//! # Throttled windows
//! A wake-up late by 80 % of the kernel's throttling window or more, at which the thread
//! had waited on its runqueue as long (`run_delay`), was held by RT throttling or the fair
//! server ([`ThrottleWatch`], the detector the demos and the apps use): counted per thread
//! in `throttled_windows`, and the ledger's `throttling` entry names them and contaminates
//! the verdict, with or without `--explain`.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{
    AtomicBool, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::{Barrier, mpsc};
use std::time::Duration;

use anyhow::{Context, Result};
use preempt_io::sys::clock::{self, ClockId, monotonic_now_ns};
use preempt_io::sys::schedstat::ThrottleWatch;
use preempt_io::sys::{cpu, mem, sched, thread};

use super::ledger::{self, RunFacts};
use super::work::Controller;
use crate::config::LatencyConfig;
use crate::error::{PrivilegeError, policy_error};
use crate::results::{
    BreakEvent, Distribution, LatencyResult, LatencySettings, Overhead, ThreadResult,
};
use crate::stats::histogram::{Histogram, Snapshot};
use crate::stats::summary::Summary;
use crate::warnings::Warning;

/// Stack touched before the loop starts, so the loop never faults a stack page in.
const PREFAULT_STACK_BYTES: usize = 64 * 1024;
/// Stack size of the measuring threads.
const THREAD_STACK_BYTES: usize = 256 * 1024;
/// Delay from "all threads ready" to the first release, so every thread is asleep in
/// `clock_nanosleep` before its first release.
const START_DELAY_NS: u64 = 20_000_000;
/// How often the coordinator updates the progress bar.
const TICK_NS: u64 = 200_000_000;
/// How often the partial result file is rewritten.
const PARTIAL_EVERY_NS: u64 = 1_000_000_000;

/// Parameters of one measuring loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopParams {
    /// Period.
    pub interval_ns: u64,
    /// Releases to run through (samples + missed).
    pub releases: u64,
    /// Compute step iterations per period (0 = none).
    pub work_iterations: u64,
    /// Completion later than release + this is a deadline miss.
    pub relative_deadline_ns: u64,
    /// `--break-at`.
    pub break_at_ns: Option<u64>,
    /// Whether the thread is pinned (else the CPU is sampled each period).
    pub pinned: bool,
}

/// One raw sample, for `--trace-samples`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceRecord {
    /// Release index.
    pub cycle: u64,
    /// Intended release time (CLOCK_MONOTONIC).
    pub release_ns: u64,
    /// Wake-up time.
    pub wake_ns: u64,
    /// Completion time of the compute step (= wake without `--work-us`).
    pub done_ns: u64,
}

/// State a measuring thread shares with the coordinator (for progress and partial results).
#[derive(Debug)]
pub struct ThreadState {
    /// Wake-up latency.
    pub latency: Histogram,
    /// Release → completion.
    pub response: Option<Histogram>,
    /// Duration of the compute step.
    pub compute: Option<Histogram>,
    /// Releases processed so far (samples + missed).
    pub releases: AtomicU64,
    /// Missed periods so far.
    pub missed: AtomicU64,
    /// Deadline misses so far.
    pub deadline_misses: AtomicU64,
    /// Bit mask of the CPUs seen (CPUs 0..63).
    pub cpus_seen: AtomicU64,
    /// Set with the cycle of a `--break-at` breach.
    pub break_cycle: AtomicU64,
    /// Latency of that breach (0 = none).
    pub break_latency: AtomicU64,
    /// Throttled windows the thread waited out so far ([`ThrottleWatch`]).
    pub throttled: AtomicU64,
}

impl ThreadState {
    /// Fresh state; allocates the histograms.
    pub fn new(with_work: bool) -> Self {
        Self {
            latency: Histogram::new(),
            response: with_work.then(Histogram::new),
            compute: with_work.then(Histogram::new),
            releases: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            deadline_misses: AtomicU64::new(0),
            cpus_seen: AtomicU64::new(0),
            break_cycle: AtomicU64::new(0),
            break_latency: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
        }
    }
}

/// Where `--break-at` leaves its mark: tracefs `trace_marker` and `tracing_on`.
#[derive(Debug)]
pub struct BreakHook {
    marker: Option<File>,
    tracing_on: Option<File>,
}

impl BreakHook {
    /// Opens the tracefs files. When tracefs is not mounted (a fresh boot of many systems), it
    /// is mounted on `/sys/kernel/tracing` if we may (root); otherwise the hook still stops the
    /// run and says exactly how to mount it. Without the right to write the files it is a
    /// privilege error.
    pub fn open() -> Result<(Self, Option<String>)> {
        Self::open_in(
            &[
                Path::new("/sys/kernel/tracing"),
                Path::new("/sys/kernel/debug/tracing"),
            ],
            Path::new("/sys/kernel/tracing"),
        )
    }

    /// [`BreakHook::open`] with the tracefs places to look in and the directory to mount one
    /// on when none is found.
    pub fn open_in(candidates: &[&Path], mount_at: &Path) -> Result<(Self, Option<String>)> {
        let found = candidates
            .iter()
            .find(|d| d.join("trace_marker").exists())
            .map(|d| d.to_path_buf());
        let dir = match found {
            Some(d) => d,
            None => match preempt_io::sys::mount::mount_tracefs(mount_at) {
                Ok(()) => {
                    eprintln!(
                        "preempt: --break-at: mounted tracefs on {} (it was not mounted)",
                        mount_at.display()
                    );
                    mount_at.to_path_buf()
                }
                Err(e) => {
                    let how = if e.kind() == io::ErrorKind::PermissionDenied {
                        "mounting it needs CAP_SYS_ADMIN".to_string()
                    } else {
                        format!("mounting it on {} failed: {e}", mount_at.display())
                    };
                    return Ok((
                        Self {
                            marker: None,
                            tracing_on: None,
                        },
                        Some(format!(
                            "--break-at: tracefs is not mounted and {how}; this run stops at the \
                             break but keeps no trace. Mount it once with `sudo mount -t tracefs \
                             nodev {}`, start a tracer (e.g. `sudo trace-cmd start -e sched -e \
                             irq`) and run again",
                            mount_at.display()
                        )),
                    ));
                }
            },
        };
        let open = |name: &str| -> Result<File> {
            let path = dir.join(name);
            File::options().write(true).open(&path).map_err(|e| {
                if e.kind() == io::ErrorKind::PermissionDenied {
                    anyhow::Error::new(PrivilegeError(format!(
                        "--break-at needs write access to {}: run as root",
                        path.display()
                    )))
                } else {
                    anyhow::Error::new(e).context(format!("cannot open {}", path.display()))
                }
            })
        };
        Ok((
            Self {
                marker: Some(open("trace_marker")?),
                tracing_on: Some(open("tracing_on")?),
            },
            None,
        ))
    }

    /// Writes the marker and stops tracing; returns whether tracing was stopped. Formats into
    /// a stack buffer (no allocation) since it runs on the measuring thread.
    fn fire(&self, thread: usize, cycle: u64, latency_ns: u64, threshold_ns: u64) -> bool {
        let mut buf = [0u8; 160];
        let len = {
            let mut cursor = &mut buf[..];
            let before = cursor.len();
            // A marker longer than the buffer is truncated, which is harmless.
            let _ = writeln!(
                cursor,
                "preempt: break-at hit: thread {thread} cycle {cycle} latency {} us > {} us",
                latency_ns / 1_000,
                threshold_ns / 1_000
            );
            before - cursor.len()
        };
        // The marker is best effort: the run stops either way and records the event.
        if let Some(mut m) = self.marker.as_ref() {
            let _ = m.write_all(&buf[..len]);
        }
        match self.tracing_on.as_ref() {
            Some(mut t) => t.write_all(b"0").is_ok(),
            None => false,
        }
    }
}

/// Flags that end a loop early.
#[derive(Debug, Clone, Copy)]
pub struct StopFlags<'a> {
    /// Ctrl-C / SIGTERM.
    pub signal: &'a AtomicBool,
    /// This run's own halt (set by `--break-at`).
    pub halt: &'a AtomicBool,
}

impl StopFlags<'_> {
    #[inline]
    fn stopped(&self) -> bool {
        self.signal.load(Relaxed) || self.halt.load(Relaxed)
    }
}

/// The measuring loop of one thread. Returns when all releases ran or a stop flag was set.
///
/// `trace` must have capacity for `p.releases` records if tracing (it is only pushed to while
/// there is spare capacity, so it never reallocates). `throttle` is the calling thread's
/// detector (opened by it, before the loop: opening allocates).
#[allow(
    clippy::too_many_arguments,
    reason = "the loop's inputs are all distinct; a struct would only rename them"
)]
pub fn run_loop(
    p: &LoopParams,
    st: &ThreadState,
    index: usize,
    start_ns: u64,
    stop: StopFlags<'_>,
    trace: &mut Vec<TraceRecord>,
    brk: Option<&BreakHook>,
    controller: &mut Controller,
    throttle: &mut ThrottleWatch,
) -> io::Result<()> {
    let mut cycle = 0u64;
    let mut release = start_ns;
    while cycle < p.releases && !stop.stopped() {
        clock::sleep_until_ns(ClockId::Monotonic, release)?;
        let wake = monotonic_now_ns();
        let latency = wake.saturating_sub(release);
        let done = if p.work_iterations > 0 {
            controller.step(p.work_iterations);
            let done = monotonic_now_ns();
            if let (Some(c), Some(r)) = (&st.compute, &st.response) {
                c.record(done - wake, cycle);
                r.record(done.saturating_sub(release), cycle);
            }
            done
        } else {
            wake
        };
        st.latency.record(latency, cycle);
        if latency >= throttle.min_ns() {
            if throttle.stall(latency) {
                st.throttled.store(throttle.windows(), Relaxed);
            }
        } else {
            throttle.sample(wake);
        }
        if done.saturating_sub(release) > p.relative_deadline_ns {
            st.deadline_misses.fetch_add(1, Relaxed);
        }
        if !p.pinned {
            if let Ok(c) = cpu::current_cpu() {
                if c < 64 {
                    st.cpus_seen.fetch_or(1 << c, Relaxed);
                }
            }
        }
        if trace.len() < trace.capacity() {
            trace.push(TraceRecord {
                cycle,
                release_ns: release,
                wake_ns: wake,
                done_ns: done,
            });
        }
        if let Some(threshold) = p.break_at_ns {
            if latency > threshold {
                st.break_cycle.store(cycle, Relaxed);
                st.break_latency.store(latency, Release);
                if let Some(hook) = brk {
                    hook.fire(index, cycle, latency, threshold);
                }
                stop.halt.store(true, Relaxed);
                st.releases.store(cycle + 1, Relaxed);
                return Ok(());
            }
        }
        // Next release; skip (and count) those that passed while we were late.
        cycle += 1;
        release += p.interval_ns;
        if done >= release {
            let missed =
                ((done - release) / p.interval_ns + 1).min(p.releases.saturating_sub(cycle));
            st.missed.fetch_add(missed, Relaxed);
            cycle += missed;
            release += missed * p.interval_ns;
        }
        st.releases.store(cycle, Relaxed);
    }
    Ok(())
}

/// What a measuring thread hands back when it ends.
#[derive(Debug, Default)]
struct ThreadEnd {
    tid: i32,
    usage: thread::ThreadUsage,
    trace: Vec<TraceRecord>,
    error: Option<String>,
}

/// What the environment did for the run (for the settings record).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EnvFacts {
    /// mlockall succeeded.
    pub mlock: bool,
    /// /dev/cpu_dma_latency target held.
    pub dma_latency_us: Option<i32>,
}

/// One measuring thread's samples, handed back for `--explain`.
#[derive(Debug, Clone, Default)]
pub struct ThreadSamples {
    /// Kernel thread id.
    pub tid: i32,
    /// CPU it was pinned to.
    pub cpu: Option<usize>,
    /// Every period's release and wake-up.
    pub samples: Vec<TraceRecord>,
}

/// The outcome of a latency run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The result.
    pub result: LatencyResult,
    /// Warnings raised by the run itself (machine warnings are the caller's).
    pub warnings: Vec<Warning>,
    /// Stopped by a signal or `--break-at`.
    pub interrupted: bool,
    /// Monotonic duration of the run.
    pub elapsed_ns: u64,
    /// `--trace-samples` could not be written at the end (the measurement itself is intact;
    /// the caller still writes and prints it, then reports this).
    pub trace_error: Option<String>,
    /// With `--explain`: every thread's samples.
    pub samples: Vec<ThreadSamples>,
}

/// Runs a latency measurement: spawns one measuring thread per CPU, waits (drawing progress
/// with `on_tick(partial, fraction)` every 200 ms; partial results are offered once a
/// second when `cfg.output` names an export file), and assembles the result.
///
/// The steps: `open_break_hook`, `spawn_measuring_threads` (each runs
/// `measuring_thread`), `gather_setup`, `watch_progress`, then `assemble` with the
/// ledger, `write_trace` and `run_warnings`.
pub(crate) fn run(
    cfg: &LatencyConfig,
    work_iterations: u64,
    env: EnvFacts,
    signal_stop: &AtomicBool,
    on_tick: &mut dyn FnMut(Option<&LatencyResult>, f64),
) -> Result<Outcome> {
    let pinned = !cfg.policy.is_deadline();
    let params = LoopParams {
        interval_ns: cfg.interval_ns,
        releases: cfg.releases,
        work_iterations,
        relative_deadline_ns: cfg.policy.relative_deadline_ns(cfg.interval_ns),
        break_at_ns: cfg.break_at_ns,
        pinned,
    };
    let mut warnings = Vec::new();
    let brk = open_break_hook(cfg)?;
    let overhead: Overhead = super::overhead::measure();
    let n = cfg.cpus.len();
    let states: Vec<ThreadState> = (0..n)
        .map(|_| ThreadState::new(work_iterations > 0))
        .collect();
    let shared = Shared {
        params,
        states: &states,
        halt: AtomicBool::new(false),
        start_ns: AtomicU64::new(0),
        finished: AtomicUsize::new(0),
        barrier: Barrier::new(n + 1),
        brk: brk.as_ref(),
        signal_stop,
    };
    let probe = ledger::Probe::start();
    let t0 = monotonic_now_ns();

    let ends: Vec<ThreadEnd> = std::thread::scope(|s| -> Result<Vec<ThreadEnd>> {
        let (tx, rx) = mpsc::channel::<SetupReport>();
        let handles = spawn_measuring_threads(s, cfg, &shared, &tx)?;
        drop(tx);
        let setup_error = gather_setup(&rx, cfg, &mut warnings)?;
        if setup_error.is_none() {
            shared
                .start_ns
                .store(monotonic_now_ns() + START_DELAY_NS, Release);
        }
        shared.barrier.wait();
        if let Some(e) = setup_error {
            for h in handles {
                // The threads return at once (start is 0); a panic would be reported anyway.
                let _ = h.join();
            }
            return Err(if e.contains("permission denied") {
                anyhow::Error::new(PrivilegeError(e))
            } else {
                anyhow::anyhow!(e)
            });
        }
        watch_progress(cfg, work_iterations, env, &overhead, &shared, on_tick)?;
        Ok(handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| ThreadEnd {
                    error: Some("measuring thread panicked".into()),
                    ..ThreadEnd::default()
                })
            })
            .collect())
    })?;
    let elapsed_ns = monotonic_now_ns() - t0;

    if let Some(e) = ends.iter().find_map(|e| e.error.clone()) {
        anyhow::bail!(e);
    }
    let break_event = break_event_of(&states, brk.as_ref());
    let own_ns: u64 = ends
        .iter()
        .map(|e| e.usage.user_ns + e.usage.system_ns)
        .sum();
    let merged = merged_latency(&states);
    let ledger = probe.finish(&RunFacts {
        cpus: cfg.cpus.clone(),
        own_cpu_time: Duration::from_nanos(own_ns),
        stress_requested: !cfg.stress.kinds.is_empty(),
        max_latency_ns: merged.max_ns(),
        virtualization: crate::virt::detect_live().map(|f| f.label()),
        throttled_windows: ThrottleWatch::open()
            .available()
            .then(|| states.iter().map(|s| s.throttled.load(Relaxed)).sum()),
    });
    let result = assemble(
        cfg,
        work_iterations,
        env,
        pinned,
        &overhead,
        &states,
        &ends,
        break_event,
        ledger,
    );
    let trace_error = cfg.trace_samples.as_ref().and_then(|path| {
        write_trace(path, &cfg.cpus, pinned, &ends)
            .map(|()| crate::export::hand_over(path))
            .with_context(|| format!("cannot write --trace-samples {}", path.display()))
            .err()
            .map(|e| format!("{e:#}"))
    });
    let samples = if cfg.explain.is_some() {
        ends.into_iter()
            .enumerate()
            .map(|(i, e)| ThreadSamples {
                tid: e.tid,
                cpu: pinned.then(|| cfg.cpus[i]),
                samples: e.trace,
            })
            .collect()
    } else {
        Vec::new()
    };
    let interrupted = signal_stop.load(Relaxed) || break_event.is_some();
    run_warnings(
        cfg,
        pinned,
        &result,
        interrupted && break_event.is_none(),
        &mut warnings,
    );
    Ok(Outcome {
        result,
        warnings,
        interrupted,
        elapsed_ns,
        trace_error,
        samples,
    })
}

/// What the coordinator shares with every measuring thread for one run.
struct Shared<'a> {
    params: LoopParams,
    states: &'a [ThreadState],
    /// Set by a thread that hit `--break-at`: the others stop too.
    halt: AtomicBool,
    /// The first release (0 = setup failed somewhere: do not measure).
    start_ns: AtomicU64,
    /// Threads that have returned.
    finished: AtomicUsize,
    /// Threads and coordinator meet here once every setup is reported.
    barrier: Barrier,
    brk: Option<&'a BreakHook>,
    signal_stop: &'a AtomicBool,
}

/// One thread's setup outcome: its index, the error if any, a timer-slack warning.
type SetupReport = (usize, Result<(), String>, Option<Warning>);

/// With `--break-at`, opens the tracing hook (and prints its note); else `None`.
fn open_break_hook(cfg: &LatencyConfig) -> Result<Option<BreakHook>> {
    if cfg.break_at_ns.is_none() {
        return Ok(None);
    }
    let (hook, note) = BreakHook::open()?;
    if let Some(n) = note {
        eprintln!("preempt: {n}");
    }
    Ok(Some(hook))
}

/// The `--trace-samples`/`--explain` buffer of one thread, every page touched now so pushes
/// in the loop never fault (empty when neither flag is given).
fn trace_buffer(cfg: &LatencyConfig) -> Result<Vec<TraceRecord>> {
    if cfg.trace_samples.is_none() && cfg.explain.is_none() {
        return Ok(Vec::new());
    }
    let cap = usize::try_from(cfg.releases).context("--loops too large for this machine")?;
    let mut v = Vec::with_capacity(cap);
    v.resize(cap, TraceRecord::default());
    v.clear();
    Ok(v)
}

/// Spawns one measuring thread per configured CPU inside the scope `s`.
fn spawn_measuring_threads<'scope, 'env>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    cfg: &'env LatencyConfig,
    shared: &'env Shared<'env>,
    tx: &mpsc::Sender<SetupReport>,
) -> Result<Vec<std::thread::ScopedJoinHandle<'scope, ThreadEnd>>> {
    let mut handles = Vec::with_capacity(cfg.cpus.len());
    for (i, &cpu_id) in cfg.cpus.iter().enumerate() {
        let tx = tx.clone();
        let trace = trace_buffer(cfg)?;
        let handle = std::thread::Builder::new()
            .name(format!("preempt-lat{i}"))
            .stack_size(THREAD_STACK_BYTES)
            .spawn_scoped(s, move || {
                measuring_thread(shared, cfg, i, cpu_id, &tx, trace)
            })
            .context("cannot spawn a measuring thread")?;
        handles.push(handle);
    }
    Ok(handles)
}

/// Sets up the calling thread for measuring: pin, policy, timer slack, stack prefault.
/// A failed timer slack is a warning (in `slack_warning`), the rest are errors.
fn set_up_thread(
    cfg: &LatencyConfig,
    cpu_id: usize,
    slack_warning: &mut Option<Warning>,
) -> Result<(), String> {
    let policy = &cfg.policy;
    if !policy.is_deadline() {
        sched::set_current_thread_affinity(&[cpu_id])
            .map_err(|e| format!("cannot pin thread to CPU {cpu_id}: {e}"))?;
    }
    sched::set_current_thread_policy(&policy.policy).map_err(|e| {
        format!(
            "{:#}",
            policy_error(e, &policy.policy, &policy.record.label())
        )
    })?;
    if let Err(e) = thread::set_timer_slack_ns(cfg.timer_slack_ns) {
        *slack_warning = Some(Warning::TimerSlackFailed {
            error: e.to_string(),
        });
    }
    mem::prefault_stack(PREFAULT_STACK_BYTES);
    Ok(())
}

/// The body of measuring thread `i` on `cpu_id`: set up, report to the coordinator, meet at
/// the barrier, then run [`run_loop`] and hand back its usage and samples.
fn measuring_thread(
    shared: &Shared<'_>,
    cfg: &LatencyConfig,
    i: usize,
    cpu_id: usize,
    tx: &mpsc::Sender<SetupReport>,
    mut trace: Vec<TraceRecord>,
) -> ThreadEnd {
    struct Done<'a>(&'a AtomicUsize);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Release);
        }
    }
    let _done = Done(&shared.finished);
    let tid = sched::current_tid();
    let mut slack_warning = None;
    let setup = set_up_thread(cfg, cpu_id, &mut slack_warning);
    let ok = setup.is_ok();
    // The coordinator is waiting for exactly one message per thread.
    let _ = tx.send((i, setup, slack_warning));
    shared.barrier.wait();
    let start = shared.start_ns.load(Acquire);
    if !ok || start == 0 {
        return ThreadEnd {
            tid,
            ..ThreadEnd::default()
        };
    }
    let st = &shared.states[i];
    if shared.params.pinned {
        st.cpus_seen
            .store(1u64.checked_shl(cpu_id as u32).unwrap_or(0), Relaxed);
    }
    let usage0 = thread::rusage_thread().unwrap_or_default();
    let mut controller = Controller::default();
    let mut throttle = ThrottleWatch::open();
    let stop = StopFlags {
        signal: shared.signal_stop,
        halt: &shared.halt,
    };
    let error = run_loop(
        &shared.params,
        st,
        i,
        start,
        stop,
        &mut trace,
        shared.brk,
        &mut controller,
        &mut throttle,
    )
    .err()
    .map(|e| format!("clock_nanosleep failed: {e}"));
    let usage1 = thread::rusage_thread().unwrap_or_default();
    ThreadEnd {
        tid,
        usage: usage_since(usage0, usage1),
        trace,
        error,
    }
}

/// The resource usage between two `getrusage` readings.
fn usage_since(usage0: thread::ThreadUsage, usage1: thread::ThreadUsage) -> thread::ThreadUsage {
    thread::ThreadUsage {
        minor_faults: usage1.minor_faults.saturating_sub(usage0.minor_faults),
        major_faults: usage1.major_faults.saturating_sub(usage0.major_faults),
        voluntary_switches: usage1
            .voluntary_switches
            .saturating_sub(usage0.voluntary_switches),
        involuntary_switches: usage1
            .involuntary_switches
            .saturating_sub(usage0.involuntary_switches),
        user_ns: usage1.user_ns.saturating_sub(usage0.user_ns),
        system_ns: usage1.system_ns.saturating_sub(usage0.system_ns),
    }
}

/// Reads one setup report per thread; returns the first error (naming its CPU) and adds
/// each distinct warning to `warnings`.
fn gather_setup(
    rx: &mpsc::Receiver<SetupReport>,
    cfg: &LatencyConfig,
    warnings: &mut Vec<Warning>,
) -> Result<Option<String>> {
    let mut setup_error = None;
    for _ in 0..cfg.cpus.len() {
        let (i, r, w) = rx.recv().context("a measuring thread died during setup")?;
        if let Err(e) = r {
            setup_error.get_or_insert(format!("measuring thread for CPU {}: {e}", cfg.cpus[i]));
        }
        if let Some(w) = w {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    Ok(setup_error)
}

/// Until every thread has returned: every 200 ms calls `on_tick` with the fraction done and,
/// once a second when an export file wants it, a partial result.
fn watch_progress(
    cfg: &LatencyConfig,
    work_iterations: u64,
    env: EnvFacts,
    overhead: &Overhead,
    shared: &Shared<'_>,
    on_tick: &mut dyn FnMut(Option<&LatencyResult>, f64),
) -> Result<()> {
    let states = shared.states;
    let n = states.len();
    let total = (cfg.releases * n as u64).max(1);
    let want_partial = cfg.output.export_json.is_some() || cfg.output.export_csv.is_some();
    let mut next_tick = monotonic_now_ns() + TICK_NS;
    let mut next_partial = monotonic_now_ns() + PARTIAL_EVERY_NS;
    while shared.finished.load(Acquire) < n {
        clock::sleep_until_ns(ClockId::Monotonic, next_tick).context("clock_nanosleep")?;
        next_tick += TICK_NS;
        let done: u64 = states.iter().map(|s| s.releases.load(Relaxed)).sum();
        let now = monotonic_now_ns();
        // Snapshots cost ~350 KB of copying per thread: only when a file wants them.
        let partial = (want_partial && now >= next_partial).then(|| {
            next_partial = now + PARTIAL_EVERY_NS;
            assemble(
                cfg,
                work_iterations,
                env,
                shared.params.pinned,
                overhead,
                states,
                &[],
                None,
                ledger_placeholder(),
            )
        });
        on_tick(partial.as_ref(), done as f64 / total as f64);
    }
    Ok(())
}

/// The `--break-at` event, if a thread recorded one.
fn break_event_of(states: &[ThreadState], brk: Option<&BreakHook>) -> Option<BreakEvent> {
    states.iter().enumerate().find_map(|(i, s)| {
        let latency_ns = s.break_latency.load(Acquire);
        (latency_ns > 0).then(|| BreakEvent {
            thread: i,
            cycle: s.break_cycle.load(Relaxed),
            latency_ns,
            tracing_stopped: brk.is_some_and(|b| b.tracing_on.is_some()),
        })
    })
}

/// The run's own threats to validity: missed periods, no real-time policy, unpinned
/// deadline threads, a short run, an interruption by a signal.
fn run_warnings(
    cfg: &LatencyConfig,
    pinned: bool,
    result: &LatencyResult,
    by_signal: bool,
    warnings: &mut Vec<Warning>,
) {
    let missed: u64 = result.threads.iter().map(|t| t.missed_periods).sum();
    if missed > 0 {
        warnings.push(Warning::MissedPeriods { count: missed });
    }
    if !cfg.policy.policy.is_real_time() {
        warnings.push(Warning::NotRealTimePolicy {
            policy: cfg.policy.record.label(),
        });
    }
    if !pinned {
        warnings.push(Warning::DeadlineUnpinned);
    }
    let min_samples = result.threads.iter().map(|t| t.samples).min().unwrap_or(0);
    if min_samples < 60_000 {
        warnings.push(Warning::ShortRun {
            samples: min_samples,
        });
    }
    if by_signal {
        warnings.push(Warning::Interrupted);
    }
}

fn ledger_placeholder() -> crate::results::Ledger {
    crate::results::Ledger {
        verdict: "pending: run in progress".into(),
        entries: Vec::new(),
    }
}

fn merged_latency(states: &[ThreadState]) -> Snapshot {
    let mut all = Snapshot::empty();
    for s in states {
        all.merge(&s.latency.snapshot());
    }
    all
}

#[allow(
    clippy::too_many_arguments,
    reason = "internal assembly of one record from its parts"
)]
fn assemble(
    cfg: &LatencyConfig,
    work_iterations: u64,
    env: EnvFacts,
    pinned: bool,
    overhead: &Overhead,
    states: &[ThreadState],
    ends: &[ThreadEnd],
    break_event: Option<BreakEvent>,
    ledger: crate::results::Ledger,
) -> LatencyResult {
    let threads = states
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let end = ends.get(i);
            let usage = end.map(|e| e.usage).unwrap_or_default();
            let latency = s.latency.snapshot();
            let mask = s.cpus_seen.load(Relaxed);
            ThreadResult {
                cpu: pinned.then_some(cfg.cpus[i]),
                cpus_seen: (0..64).filter(|b| mask & (1u64 << b) != 0).collect(),
                tid: end.map_or(0, |e| e.tid),
                releases: s.releases.load(Relaxed),
                samples: latency.count(),
                missed_periods: s.missed.load(Relaxed),
                deadline_misses: s.deadline_misses.load(Relaxed),
                response: s
                    .response
                    .as_ref()
                    .map(|h| Distribution::from_snapshot(&h.snapshot())),
                compute: s
                    .compute
                    .as_ref()
                    .map(|h| Distribution::from_snapshot(&h.snapshot())),
                latency: Distribution::from_snapshot(&latency),
                minor_faults: usage.minor_faults,
                major_faults: usage.major_faults,
                involuntary_switches: usage.involuntary_switches,
                throttled_windows: s.throttled.load(Relaxed),
            }
        })
        .collect();
    LatencyResult {
        settings: LatencySettings {
            policy: cfg.policy.record.clone(),
            interval_ns: cfg.interval_ns,
            releases_per_thread: cfg.releases,
            cpus: cfg.cpus.clone(),
            pinned,
            work_ns: cfg.work_ns,
            work_iterations,
            timer_slack_ns: cfg.timer_slack_ns,
            mlock: env.mlock,
            cpu_dma_latency_us: env.dma_latency_us,
            stress: cfg.stress.names(),
            stress_tool: cfg.stress.tool_name().into(),
            break_at_ns: cfg.break_at_ns,
        },
        overhead: *overhead,
        threads,
        latency_all: Summary::from_snapshot(&merged_latency(states)),
        ledger,
        break_event,
        explain: None,
        explain_skipped: None,
    }
}

/// Writes the raw samples as CSV: one line per measured period.
fn write_trace(path: &Path, cpus: &[usize], pinned: bool, ends: &[ThreadEnd]) -> io::Result<()> {
    let mut w = BufWriter::new(File::create(path)?);
    writeln!(
        w,
        "thread,cpu,cycle,release_ns,wake_ns,latency_ns,done_ns,response_ns"
    )?;
    for (i, e) in ends.iter().enumerate() {
        let cpu = if pinned {
            cpus[i].to_string()
        } else {
            String::new()
        };
        for r in &e.trace {
            writeln!(
                w,
                "{i},{cpu},{},{},{},{},{},{}",
                r.cycle,
                r.release_ns,
                r.wake_ns,
                r.wake_ns.saturating_sub(r.release_ns),
                r.done_ns,
                r.done_ns.saturating_sub(r.release_ns)
            )?;
        }
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(releases: u64) -> LoopParams {
        LoopParams {
            interval_ns: 200_000,
            releases,
            work_iterations: 0,
            relative_deadline_ns: 200_000,
            break_at_ns: None,
            pinned: true,
        }
    }

    #[test]
    fn loop_runs_every_release_and_traces_it() {
        let st = ThreadState::new(false);
        let (sig, halt) = (AtomicBool::new(false), AtomicBool::new(false));
        let mut trace = Vec::with_capacity(50);
        let start = monotonic_now_ns() + 1_000_000;
        run_loop(
            &params(50),
            &st,
            0,
            start,
            StopFlags {
                signal: &sig,
                halt: &halt,
            },
            &mut trace,
            None,
            &mut Controller::default(),
            &mut ThrottleWatch::open(),
        )
        .unwrap();
        let s = st.latency.snapshot();
        assert_eq!(st.releases.load(Relaxed), 50);
        assert_eq!(s.count() + st.missed.load(Relaxed), 50);
        assert_eq!(trace.len() as u64, s.count());
        for r in &trace {
            assert_eq!(
                r.release_ns,
                start + r.cycle * 200_000,
                "absolute releases, no drift"
            );
            assert!(r.wake_ns >= r.release_ns, "TIMER_ABSTIME never wakes early");
        }
    }

    #[test]
    fn late_completion_counts_missed_periods() {
        // A compute step far longer than the period: every completion passes later releases.
        let st = ThreadState::new(true);
        let (sig, halt) = (AtomicBool::new(false), AtomicBool::new(false));
        let p = LoopParams {
            interval_ns: 50_000,
            work_iterations: super::super::work::calibrate(400_000),
            ..params(40)
        };
        run_loop(
            &p,
            &st,
            0,
            monotonic_now_ns() + 1_000_000,
            StopFlags {
                signal: &sig,
                halt: &halt,
            },
            &mut Vec::new(),
            None,
            &mut Controller::default(),
            &mut ThrottleWatch::open(),
        )
        .unwrap();
        let samples = st.latency.snapshot().count();
        let missed = st.missed.load(Relaxed);
        assert_eq!(
            samples + missed,
            40,
            "every release is either measured or counted as missed"
        );
        assert!(missed > samples, "samples {samples}, missed {missed}");
        assert!(st.deadline_misses.load(Relaxed) >= samples - 1);
    }

    #[test]
    fn break_at_halts_the_run_and_records_the_cycle() {
        let st = ThreadState::new(false);
        let (sig, halt) = (AtomicBool::new(false), AtomicBool::new(false));
        // Threshold 0 ns is exceeded by the first sample (the clock read alone costs more).
        let p = LoopParams {
            break_at_ns: Some(0),
            ..params(100)
        };
        run_loop(
            &p,
            &st,
            0,
            monotonic_now_ns(),
            StopFlags {
                signal: &sig,
                halt: &halt,
            },
            &mut Vec::new(),
            None,
            &mut Controller::default(),
            &mut ThrottleWatch::open(),
        )
        .unwrap();
        assert!(halt.load(Relaxed));
        assert_eq!(st.latency.snapshot().count(), 1);
        assert_eq!(st.break_cycle.load(Relaxed), 0);
        assert!(st.break_latency.load(Relaxed) > 0);
    }

    #[test]
    fn a_set_stop_flag_ends_the_loop_before_the_first_sleep() {
        let st = ThreadState::new(false);
        let (sig, halt) = (AtomicBool::new(true), AtomicBool::new(false));
        run_loop(
            &params(1_000_000),
            &st,
            0,
            monotonic_now_ns() + 3_600_000_000_000,
            StopFlags {
                signal: &sig,
                halt: &halt,
            },
            &mut Vec::new(),
            None,
            &mut Controller::default(),
            &mut ThrottleWatch::open(),
        )
        .unwrap();
        assert_eq!(st.latency.snapshot().count(), 0);
    }
}
