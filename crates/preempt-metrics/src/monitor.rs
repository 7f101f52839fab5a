//! The monitor engine: one `SCHED_FIFO` measuring thread per chosen CPU, running for as long as
//! the process does, with every figure readable at any moment by a scrape.
//!
//! # Method
//! Exactly `preempt latency`'s: each thread is pinned to its CPU, sleeps with
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` until its next intended release
//! (`start + k·interval`, so lateness never accumulates into drift), reads CLOCK_MONOTONIC on
//! waking and records `latency = wake − release`. A wake-up that comes after one or more later
//! releases skips them and counts each in `missed_periods`; a latency above the relative
//! deadline (default: the interval) is a deadline miss. Every thread gets the same timer slack
//! (1 ns), and the process locks its memory (`mlockall`).
//!
//! # Bookkeeping, bounded
//! Per CPU: one [`preempt_stats::histogram::Histogram`] (36 KiB, fixed; the cumulative
//! distribution since start), the exact maximum (in the histogram), a [`SlidingMax`] for the
//! recent maximum, and counters. Nothing grows with the run's length: an hour or a year costs
//! the same memory. A housekeeping thread (`SCHED_OTHER`) samples steal time once a second
//! (a ring of one window) and re-runs the readiness checks every few minutes.
//!
//! # The hot loop
//! `measure` makes no system call but the sleep and the vDSO clock read, allocates nothing,
//! takes no lock: the histogram and the window are relaxed atomic stores by their single writer,
//! read by scrapes on other threads.
//!
//! # Validity
//! The verdict per CPU ([`Verdict`]) says whether the figures measure this machine's real-time
//! behaviour right now: `ok`, or the first reason they do not (the measuring thread stopped or
//! stalled, memory is not locked, or the hypervisor stole time from the CPU within the window,
//! so the latencies include the host's interference).

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use preempt_io::sys::clock::{self, ClockId, monotonic_now_ns};
use preempt_io::sys::sched::{self, Policy};
use preempt_io::sys::{kernel, mem, procstat, thread};
use preempt_stats::histogram::{Histogram, HistogramSnapshot};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use crate::expo::{self, Labels, seconds};
use crate::window::SlidingMax;

/// Default period: 1 ms (`preempt latency`'s and cyclictest's usual interval).
pub(crate) const DEFAULT_INTERVAL_NS: u64 = 1_000_000;
/// Default priority: high, below the kernel's own priority-99 threads (as `preempt latency`).
pub const DEFAULT_PRIORITY: u8 = 80;
/// Default sliding window for the recent maximum and the steal-time verdict: one minute.
pub(crate) const DEFAULT_WINDOW_NS: u64 = 60_000_000_000;
/// Default re-check period of the readiness items: five minutes (the audit reads /proc and
/// /sys, a few milliseconds of CPU; a kernel parameter rarely changes faster).
pub(crate) const DEFAULT_RECHECK_NS: u64 = 300_000_000_000;
/// Shortest interval accepted: below 10 µs the loop measures its own overhead more than the
/// machine (one wake-up costs ~2 µs on a quiet core, ~20 µs on this project's VMs).
pub(crate) const MIN_INTERVAL_NS: u64 = 10_000;
/// A measuring thread whose last wake-up is older than this many intervals (and at least one
/// second) is reported as stalled.
const STALL_INTERVALS: u64 = 100;
/// Stack of a measuring thread, and the part of it touched before the loop.
const THREAD_STACK_BYTES: usize = 256 * 1024;
const PREFAULT_STACK_BYTES: usize = 64 * 1024;
/// From "all threads ready" to the first release.
const START_DELAY_NS: u64 = 20_000_000;
/// Steal-time sampling period of the housekeeping thread.
const STEAL_SAMPLE_NS: u64 = 1_000_000_000;

/// What to monitor and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorConfig {
    /// CPUs to measure, one thread each.
    pub cpus: Vec<usize>,
    /// Period of every thread, ns.
    pub interval_ns: u64,
    /// Real-time policy of the measuring threads (`SCHED_FIFO` or `SCHED_RR`).
    pub policy: Policy,
    /// A latency above this is a deadline miss (default: the interval).
    pub deadline_ns: u64,
    /// Length of the sliding window, ns.
    pub window_ns: u64,
    /// Timer slack of the measuring threads, ns.
    pub timer_slack_ns: u64,
    /// The `host` label.
    pub host: String,
    /// How often the readiness checks are re-run, ns.
    pub recheck_ns: u64,
    /// The machine the figures come from, as the caller detected it (`preempt monitor`: its
    /// virtualisation check). [`Machine::BareMetal`] unless set.
    pub machine: Machine,
}

/// The machine under the measuring threads: a virtual or an emulated machine's figures are
/// never a valid real-time measurement ([`Verdict::VirtualMachine`], [`Verdict::EmulatedCpu`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Machine {
    /// No hypervisor and no emulator found.
    BareMetal,
    /// A virtual machine: a real CPU, scheduled by a host, whose scheduling is in every figure.
    Virtual,
    /// An emulated CPU (qemu TCG, qemu-user): the figures are the emulator's timing.
    Emulated,
}

impl MonitorConfig {
    /// Defaults for `cpus`: 1 ms, `SCHED_FIFO` 80, the host's node name.
    pub fn new(cpus: Vec<usize>) -> MonitorConfig {
        MonitorConfig {
            cpus,
            interval_ns: DEFAULT_INTERVAL_NS,
            policy: Policy::Fifo {
                priority: DEFAULT_PRIORITY,
            },
            deadline_ns: DEFAULT_INTERVAL_NS,
            window_ns: DEFAULT_WINDOW_NS,
            timer_slack_ns: 1,
            host: kernel::uname()
                .map(|u| u.nodename)
                .unwrap_or_else(|_| "localhost".into()),
            recheck_ns: DEFAULT_RECHECK_NS,
            machine: Machine::BareMetal,
        }
    }

    fn validate(&self) -> io::Result<()> {
        let bad = |m: String| Err(io::Error::new(io::ErrorKind::InvalidInput, m));
        if self.cpus.is_empty() {
            return bad("no CPU to monitor: name at least one (e.g. --cpus 0)".into());
        }
        if self.interval_ns < MIN_INTERVAL_NS {
            return bad(format!(
                "interval {} ns is too short: at least {MIN_INTERVAL_NS} ns",
                self.interval_ns
            ));
        }
        if !self.policy.is_real_time() || matches!(self.policy, Policy::Deadline { .. }) {
            return bad(format!(
                "the monitor measures under SCHED_FIFO or SCHED_RR, not {}",
                self.policy.name()
            ));
        }
        if self.window_ns < self.interval_ns {
            return bad("the window must be at least one interval long".into());
        }
        let mut sorted = self.cpus.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != self.cpus.len() {
            return bad("a CPU is named twice".into());
        }
        Ok(())
    }
}

/// Status of a readiness item (`preempt check`), in increasing order of health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CheckStatus {
    /// Fails: real-time behaviour is not to be expected.
    Fail = 0,
    /// A threat to latency.
    Warn = 1,
    /// Noted, no threat.
    Info = 2,
    /// Fine.
    Pass = 3,
}

/// One readiness item as a gauge: its id and status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckItem {
    /// Stable id (`preempt check`'s item id).
    pub id: String,
    /// Status.
    pub status: CheckStatus,
}

/// The readiness audit the monitor re-runs: `preempt check` in the CLI.
pub type Checker = Box<dyn Fn() -> Vec<CheckItem> + Send + Sync>;

/// Why a CPU's figures are or are not a valid measurement right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Valid.
    Ok,
    /// The measuring thread ended (the monitor is stopping, or its sleep failed).
    Stopped,
    /// The measuring thread has not woken for 100 intervals (and at least 1 s): something at a
    /// higher priority (or the RT throttle) holds its CPU.
    Stalled,
    /// `mlockall` failed: page faults may show up as latency.
    MemoryNotLocked,
    /// The hypervisor stole time from this CPU within the window.
    StealTime,
    /// The CPU is emulated ([`Machine::Emulated`]): its timing is the emulator's.
    EmulatedCpu,
    /// The machine is virtual ([`Machine::Virtual`]): the host's scheduling is in every
    /// figure, whether or not it stole time within the window.
    VirtualMachine,
}

impl Verdict {
    /// A CPU's verdict, the first reason that holds: its thread stopped or stalled, memory not
    /// locked, an emulated CPU, steal within the window, a virtual machine; else valid.
    pub fn of(
        running: bool,
        stalled: bool,
        mlocked: bool,
        machine: Machine,
        stolen_in_window: bool,
    ) -> Verdict {
        if !running {
            Verdict::Stopped
        } else if stalled {
            Verdict::Stalled
        } else if !mlocked {
            Verdict::MemoryNotLocked
        } else if machine == Machine::Emulated {
            Verdict::EmulatedCpu
        } else if stolen_in_window {
            Verdict::StealTime
        } else if machine == Machine::Virtual {
            Verdict::VirtualMachine
        } else {
            Verdict::Ok
        }
    }

    /// The `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Stopped => "stopped",
            Verdict::Stalled => "stalled",
            Verdict::MemoryNotLocked => "memory_not_locked",
            Verdict::StealTime => "steal_time",
            Verdict::EmulatedCpu => "emulated_cpu",
            Verdict::VirtualMachine => "virtual_machine",
        }
    }
}

/// One CPU's live state, written by its measuring thread.
#[derive(Debug)]
struct CpuState {
    cpu: usize,
    latency: Histogram,
    window: SlidingMax,
    releases: AtomicU64,
    missed: AtomicU64,
    deadline_misses: AtomicU64,
    last_wake_ns: AtomicU64,
    running: AtomicBool,
    /// Set when the measuring thread has returned (stopped, or its sleep failed); `running`
    /// is also false before the thread first runs, which may be long when a higher-priority
    /// task holds its CPU.
    ended: AtomicBool,
}

/// Steal-time bookkeeping of the housekeeping thread.
#[derive(Debug, Default)]
struct Steal {
    /// Ticks per monitored CPU at start.
    at_start: Vec<u64>,
    /// Latest ticks per monitored CPU.
    latest: Vec<u64>,
    /// `(time, ticks per monitored CPU)`, one per second over the window (bounded).
    history: VecDeque<(u64, Vec<u64>)>,
}

struct Shared {
    cfg: MonitorConfig,
    cpus: Vec<CpuState>,
    start_ns: AtomicU64,
    stop: AtomicBool,
    mlocked: bool,
    steal: Mutex<Steal>,
    checks: Mutex<Vec<CheckItem>>,
    check_runs: AtomicU64,
    checker: Option<Checker>,
    wake: (Mutex<bool>, Condvar),
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("cfg", &self.cfg)
            .field("cpus", &self.cpus)
            .finish_non_exhaustive()
    }
}

/// A running monitor. [`Monitor::collector`] serves its figures; [`Monitor::stop`] (or drop)
/// ends the measuring threads.
#[derive(Debug)]
pub struct Monitor {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<io::Result<()>>>,
    housekeeping: Option<JoinHandle<()>>,
}

/// One CPU's figures at a moment (for the JSON result and tests).
#[derive(Debug, Clone, PartialEq)]
pub struct CpuReport {
    /// The CPU.
    pub cpu: usize,
    /// Releases passed (samples + missed).
    pub releases: u64,
    /// Missed periods.
    pub missed_periods: u64,
    /// Deadline misses.
    pub deadline_misses: u64,
    /// The latency distribution since start.
    pub latency: HistogramSnapshot,
    /// Maximum over the sliding window, ns.
    pub window_max_ns: u64,
    /// Steal time since start, seconds.
    pub steal_seconds: f64,
    /// The validity verdict.
    pub verdict: Verdict,
}

/// The monitor's figures at a moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Per CPU, in the configured order.
    pub cpus: Vec<CpuReport>,
    /// Monotonic time measured, ns.
    pub elapsed_ns: u64,
    /// `mlockall` succeeded.
    pub mlocked: bool,
    /// The latest readiness items.
    pub checks: Vec<CheckItem>,
}

impl Monitor {
    /// Starts one measuring thread per CPU of `cfg` and the housekeeping thread; `checker`
    /// (if any) is run now and every `cfg.recheck_ns`.
    ///
    /// # Errors
    /// An invalid configuration, or a thread that cannot be pinned or given its real-time
    /// policy (the message names the CPU and, for `EPERM`, how to grant the privilege).
    pub fn start(cfg: MonitorConfig, checker: Option<Checker>) -> io::Result<Monitor> {
        cfg.validate()?;
        // A failure is reported by the verdict, not fatal: the figures are still worth having.
        let mlocked = mem::lock_all_memory().is_ok();
        let cpus = cfg
            .cpus
            .iter()
            .map(|&cpu| CpuState {
                cpu,
                latency: Histogram::new(),
                window: SlidingMax::new(cfg.window_ns),
                releases: AtomicU64::new(0),
                missed: AtomicU64::new(0),
                deadline_misses: AtomicU64::new(0),
                last_wake_ns: AtomicU64::new(0),
                running: AtomicBool::new(false),
                ended: AtomicBool::new(false),
            })
            .collect();
        let shared = Arc::new(Shared {
            cpus,
            start_ns: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            mlocked,
            steal: Mutex::new(Steal::default()),
            checks: Mutex::new(Vec::new()),
            check_runs: AtomicU64::new(0),
            checker,
            wake: (Mutex::new(false), Condvar::new()),
            cfg,
        });
        let n = shared.cpus.len();
        // The start gate: `Some(first release)`, or `Some(0)` to abort.
        let gate = Arc::new((Mutex::new(None::<u64>), Condvar::new()));
        let open = |at: u64| {
            *gate.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(at);
            gate.1.notify_all();
        };
        let (tx, rx) = mpsc::channel::<(usize, Result<(), io::Error>)>();
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let (shared, gate, tx) = (Arc::clone(&shared), Arc::clone(&gate), tx.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("preempt-mon{}", shared.cpus[i].cpu))
                .stack_size(THREAD_STACK_BYTES)
                .spawn(move || {
                    let st = &shared.cpus[i];
                    let setup = setup_thread(st.cpu, &shared.cfg);
                    let ok = setup.is_ok();
                    // The starter waits for exactly one message per thread.
                    let _ = tx.send((i, setup));
                    let start = {
                        let g = gate.0.lock().unwrap_or_else(|e| e.into_inner());
                        let g = gate
                            .1
                            .wait_while(g, |at| at.is_none())
                            .unwrap_or_else(|e| e.into_inner());
                        g.unwrap_or(0)
                    };
                    if !ok || start == 0 {
                        st.ended.store(true, Release);
                        return Ok(());
                    }
                    shared.start_ns.store(start, Release);
                    st.last_wake_ns.store(start, Relaxed);
                    st.running.store(true, Release);
                    let r = measure(st, start, &shared.cfg, &shared.stop);
                    st.running.store(false, Release);
                    st.ended.store(true, Release);
                    r
                });
            match spawned {
                Ok(h) => threads.push(h),
                Err(e) => {
                    open(0);
                    for h in threads {
                        let _ = h.join();
                    }
                    return Err(io::Error::new(
                        e.kind(),
                        format!("cannot spawn a measuring thread: {e}"),
                    ));
                }
            }
        }
        drop(tx);
        let mut first_error = None;
        for _ in 0..n {
            let Ok((i, r)) = rx.recv() else { break };
            if let Err(e) = r {
                first_error.get_or_insert(io::Error::new(
                    e.kind(),
                    format!("measuring thread for CPU {}: {e}", shared.cpus[i].cpu),
                ));
            }
        }
        if let Some(e) = first_error {
            open(0);
            for h in threads {
                let _ = h.join();
            }
            return Err(e);
        }
        open(monotonic_now_ns() + START_DELAY_NS);
        sample_steal(&shared);
        // The readiness items are there from the first scrape on: a scrape right after the
        // start found no `preempt_check_status` while the housekeeping thread had not run
        // its first check yet (seen under load in crates/preempt-metrics/tests/
        // monitor_prometheus.rs).
        run_checker(&shared);
        let housekeeping = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("preempt-mon-hk".into())
                .spawn(move || housekeeping(&shared))?
        };
        Ok(Monitor {
            shared,
            threads,
            housekeeping: Some(housekeeping),
        })
    }

    /// A collector for a [`prometheus_client::registry::Registry`]: reads the live figures at
    /// every scrape (it stays valid after [`Monitor::stop`], serving the final figures).
    pub fn collector(&self) -> Box<dyn Collector> {
        Box::new(MonitorCollector(Arc::clone(&self.shared)))
    }

    /// The figures now.
    pub fn report(&self) -> Report {
        report(&self.shared, monotonic_now_ns())
    }

    /// Whether no measuring thread has ended (false after a failed sleep or stop). A thread
    /// that has not run yet, its CPU held by a higher-priority task, has not ended: it counted
    /// as stopped, and `preempt monitor` ended at once with nothing measured.
    pub fn running(&self) -> bool {
        !self.shared.cpus.iter().any(|c| c.ended.load(Acquire))
    }

    /// Stops the measuring and housekeeping threads and returns the final figures.
    ///
    /// # Errors
    /// A measuring thread's sleep failed (the figures up to then are still in the collector).
    pub fn stop(&mut self) -> io::Result<Report> {
        self.shared.stop.store(true, Release);
        {
            let (lock, cv) = &self.shared.wake;
            *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cv.notify_all();
        }
        let mut result = Ok(());
        for h in self.threads.drain(..) {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a measuring thread panicked")));
            if result.is_ok() {
                result = r;
            }
        }
        if let Some(h) = self.housekeeping.take() {
            let _ = h.join();
        }
        result.map(|()| self.report())
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn setup_thread(cpu: usize, cfg: &MonitorConfig) -> io::Result<()> {
    sched::set_current_thread_affinity(&[cpu]).map_err(|e| {
        io::Error::new(e.kind(), format!("cannot pin the thread to CPU {cpu}: {e}"))
    })?;
    sched::set_current_thread_policy(&cfg.policy)?;
    // Equal slack for every thread; failing to set it only makes wake-ups coarser, which the
    // measurement then shows.
    let _ = thread::set_timer_slack_ns(cfg.timer_slack_ns);
    mem::prefault_stack(PREFAULT_STACK_BYTES);
    Ok(())
}

/// The measuring loop of one CPU (see the module docs). Returns when `stop` is set.
///
/// # Errors
/// `clock_nanosleep` failed (only with an invalid time, i.e. never in practice).
fn measure(st: &CpuState, start_ns: u64, cfg: &MonitorConfig, stop: &AtomicBool) -> io::Result<()> {
    let interval = cfg.interval_ns;
    let (mut releases, mut missed, mut misses) = (0u64, 0u64, 0u64);
    let mut release = start_ns;
    while !stop.load(Relaxed) {
        clock::sleep_until_ns(ClockId::Monotonic, release)?;
        let wake = monotonic_now_ns();
        let latency = wake.saturating_sub(release);
        st.latency.record(latency);
        st.window.record(release, latency);
        if latency > cfg.deadline_ns {
            misses += 1;
            st.deadline_misses.store(misses, Relaxed);
        }
        st.last_wake_ns.store(wake, Relaxed);
        releases += 1;
        release += interval;
        if wake >= release {
            // Releases that passed while we were late: skipped, and counted.
            let skipped = (wake - release) / interval + 1;
            missed += skipped;
            releases += skipped;
            release += skipped * interval;
            st.missed.store(missed, Relaxed);
        }
        st.releases.store(releases, Relaxed);
    }
    Ok(())
}

/// Runs the readiness checker, if there is one, and publishes its items.
fn run_checker(shared: &Shared) {
    if let Some(checker) = &shared.checker {
        let items = checker();
        *shared.checks.lock().unwrap_or_else(|e| e.into_inner()) = items;
        shared.check_runs.fetch_add(1, Relaxed);
    }
}

fn housekeeping(shared: &Shared) {
    // Reading /proc and /sys is not real-time work.
    let _ = sched::set_current_thread_policy(&Policy::Other { nice: 0 });
    // `Monitor::start` ran the first check.
    let mut next_check = monotonic_now_ns() + shared.cfg.recheck_ns;
    loop {
        if monotonic_now_ns() >= next_check {
            run_checker(shared);
            next_check = monotonic_now_ns() + shared.cfg.recheck_ns;
        }
        sample_steal(shared);
        let (lock, cv) = &shared.wake;
        let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = cv
            .wait_timeout_while(guard, Duration::from_nanos(STEAL_SAMPLE_NS), |stop| !*stop)
            .unwrap_or_else(|e| e.into_inner());
        if *guard {
            return;
        }
    }
}

fn sample_steal(shared: &Shared) {
    let all = procstat::read().unwrap_or_default();
    let ticks: Vec<u64> = shared
        .cpus
        .iter()
        .map(|c| procstat::steal_ticks(&all, c.cpu).unwrap_or(0))
        .collect();
    let now = monotonic_now_ns();
    let mut s = shared.steal.lock().unwrap_or_else(|e| e.into_inner());
    if s.at_start.is_empty() {
        s.at_start = ticks.clone();
    }
    s.latest = ticks.clone();
    s.history.push_back((now, ticks));
    let window = shared.cfg.window_ns;
    while s.history.len() > 1 && s.history.front().is_some_and(|(t, _)| now - t > window) {
        s.history.pop_front();
    }
}

fn report(shared: &Shared, now: u64) -> Report {
    let start = shared.start_ns.load(Acquire);
    let steal = shared.steal.lock().unwrap_or_else(|e| e.into_inner());
    let stall_ns = (shared.cfg.interval_ns * STALL_INTERVALS).max(1_000_000_000);
    let cpus = shared
        .cpus
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let get = |v: &Vec<u64>| v.get(i).copied().unwrap_or(0);
            let steal_seconds = get(&steal.latest).saturating_sub(get(&steal.at_start)) as f64
                / procstat::USER_HZ as f64;
            let window_steal = steal.history.front().map_or(0, |(_, first)| {
                get(&steal.latest).saturating_sub(get(first))
            });
            let last_wake = c.last_wake_ns.load(Relaxed).max(start);
            let verdict = Verdict::of(
                c.running.load(Acquire),
                now.saturating_sub(last_wake) > stall_ns,
                shared.mlocked,
                shared.cfg.machine,
                window_steal > 0,
            );
            CpuReport {
                cpu: c.cpu,
                releases: c.releases.load(Relaxed),
                missed_periods: c.missed.load(Relaxed),
                deadline_misses: c.deadline_misses.load(Relaxed),
                latency: c.latency.snapshot(),
                window_max_ns: c.window.max_at(now),
                steal_seconds,
                verdict,
            }
        })
        .collect();
    Report {
        cpus,
        elapsed_ns: if start == 0 {
            0
        } else {
            now.saturating_sub(start)
        },
        mlocked: shared.mlocked,
        checks: shared
            .checks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
    }
}

/// Reads a monitor's figures at scrape time.
#[derive(Debug)]
struct MonitorCollector(Arc<Shared>);

impl Collector for MonitorCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        let shared = &self.0;
        let r = report(shared, monotonic_now_ns());
        let gauge =
            |enc: &mut DescriptorEncoder<'_>, name, help, unit, series: &[(Labels, f64)]| {
                expo::scalars(enc, name, help, unit, MetricType::Gauge, series)
            };
        let counter =
            |enc: &mut DescriptorEncoder<'_>, name, help, unit, series: &[(Labels, f64)]| {
                expo::scalars(enc, name, help, unit, MetricType::Counter, series)
            };
        let host = Labels::from([("host", shared.cfg.host.as_str())]);
        let per_cpu = |f: &dyn Fn(&CpuReport) -> f64| -> Vec<(Labels, f64)> {
            r.cpus
                .iter()
                .map(|c| (host.with("cpu", c.cpu.to_string()), f(c)))
                .collect()
        };
        let hist: Vec<(Labels, &HistogramSnapshot)> = r
            .cpus
            .iter()
            .map(|c| (host.with("cpu", c.cpu.to_string()), &c.latency))
            .collect();
        expo::histogram_seconds(
            &mut enc,
            "preempt_monitor_latency",
            "Timer wake-up latency (wake - intended release) of the measuring thread",
            &hist,
        )?;
        let s = Some(&Unit::Seconds);
        gauge(
            &mut enc,
            "preempt_monitor_max_latency",
            "Largest latency since start",
            s,
            &per_cpu(&|c| seconds(c.latency.max_ns.unwrap_or(0))),
        )?;
        gauge(
            &mut enc,
            "preempt_monitor_window_max_latency",
            "Largest latency over the sliding window (preempt_monitor_window_seconds)",
            s,
            &per_cpu(&|c| seconds(c.window_max_ns)),
        )?;
        counter(
            &mut enc,
            "preempt_monitor_releases",
            "Releases passed (samples + missed periods)",
            None,
            &per_cpu(&|c| c.releases as f64),
        )?;
        counter(
            &mut enc,
            "preempt_monitor_missed_periods",
            "Releases skipped because the thread woke after a later release had passed",
            None,
            &per_cpu(&|c| c.missed_periods as f64),
        )?;
        counter(
            &mut enc,
            "preempt_monitor_deadline_misses",
            "Wake-ups later than the relative deadline",
            None,
            &per_cpu(&|c| c.deadline_misses as f64),
        )?;
        counter(
            &mut enc,
            "preempt_monitor_steal",
            "Time the hypervisor ran something else on this vCPU (/proc/stat)",
            s,
            &per_cpu(&|c| c.steal_seconds),
        )?;
        let verdicts: Vec<(Labels, f64)> = r
            .cpus
            .iter()
            .map(|c| {
                let l = host
                    .with("cpu", c.cpu.to_string())
                    .with("reason", c.verdict.label());
                (l, if c.verdict == Verdict::Ok { 1.0 } else { 0.0 })
            })
            .collect();
        gauge(
            &mut enc,
            "preempt_monitor_valid",
            "1 when the figures are a valid real-time measurement now; reason says why not",
            None,
            &verdicts,
        )?;
        let host_only = |v: f64| [(host.clone(), v)];
        gauge(
            &mut enc,
            "preempt_monitor_interval",
            "Measuring period",
            s,
            &host_only(seconds(shared.cfg.interval_ns)),
        )?;
        gauge(
            &mut enc,
            "preempt_monitor_window",
            "Length of the sliding window",
            s,
            &host_only(seconds(shared.cpus[0].window.window_ns())),
        )?;
        gauge(
            &mut enc,
            "preempt_monitor_uptime",
            "Time since the first release",
            s,
            &host_only(seconds(r.elapsed_ns)),
        )?;
        let checks: Vec<(Labels, f64)> = r
            .checks
            .iter()
            .map(|c| (host.with("item", c.id.clone()), c.status as i32 as f64))
            .collect();
        gauge(
            &mut enc,
            "preempt_check_status",
            "Readiness item of preempt check: 0 fail, 1 warn, 2 info, 3 pass",
            None,
            &checks,
        )?;
        counter(
            &mut enc,
            "preempt_check_runs",
            "Runs of the readiness audit",
            None,
            &host_only(shared.check_runs.load(Relaxed) as f64),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_or_emulated_machine_is_never_valid_and_says_why() {
        use Machine::{BareMetal, Emulated, Virtual};
        let of = |machine, steal| Verdict::of(true, false, true, machine, steal);
        assert_eq!(of(BareMetal, false), Verdict::Ok);
        assert_eq!(of(BareMetal, true), Verdict::StealTime);
        assert_eq!(of(Virtual, false), Verdict::VirtualMachine);
        assert_eq!(of(Virtual, true), Verdict::StealTime);
        assert_eq!(of(Emulated, false), Verdict::EmulatedCpu);
        assert_eq!(of(Emulated, true), Verdict::EmulatedCpu);
        assert_eq!(Verdict::VirtualMachine.label(), "virtual_machine");
        assert_eq!(Verdict::EmulatedCpu.label(), "emulated_cpu");
        // A stopped or stalled thread, or unlocked memory, comes first on any machine.
        assert_eq!(
            Verdict::of(false, true, false, Virtual, true),
            Verdict::Stopped
        );
        assert_eq!(
            Verdict::of(true, true, false, Emulated, true),
            Verdict::Stalled
        );
        assert_eq!(
            Verdict::of(true, false, false, Virtual, false),
            Verdict::MemoryNotLocked
        );
    }

    #[test]
    fn invalid_configurations_are_refused_with_the_fix() {
        let err = |f: &dyn Fn(&mut MonitorConfig)| {
            let mut c = MonitorConfig::new(vec![0]);
            f(&mut c);
            c.validate().unwrap_err().to_string()
        };
        assert!(err(&|c| c.cpus.clear()).contains("--cpus"));
        assert!(err(&|c| c.interval_ns = 1_000).contains("at least 10000 ns"));
        assert!(err(&|c| c.policy = Policy::Other { nice: 0 }).contains("SCHED_OTHER"));
        assert!(err(&|c| c.cpus = vec![0, 0]).contains("twice"));
        assert!(MonitorConfig::new(vec![0]).validate().is_ok());
    }
}
