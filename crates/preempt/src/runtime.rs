//! Application start-up and shutdown: what the generated `app::run()` does.
//!
//! ```text
//! run()
//!  ├─ readiness: RLIMIT_RTPRIO / CAP_SYS_NICE, RLIMIT_MEMLOCK / CAP_IPC_LOCK, PREEMPT_RT
//!  │    missing privilege -> error with the fix on stderr, run() returns 1 (nothing ran)
//!  ├─ mlockall(MCL_CURRENT | MCL_FUTURE), malloc tuned not to trim or mmap
//!  ├─ init()                          on the calling thread; its spawns wait in the queues;
//!  │                                   then async task slots are allocated, periods and
//!  │                                   deadlines set, fds of hardware tasks registered
//!  ├─ one thread per priority level:  name `preempt-p<N>`, SCHED_FIFO N, CPU affinity from
//!  │                                   `cores = [..]`, stack prefaulted; all wait at a gate
//!  ├─ gate opens once every thread is set up (or run() stops them all and returns 1); the
//!  │    opening time is the first release of every periodic task
//!  ├─ idle (if any) on thread `preempt-idle`, SCHED_OTHER
//!  ├─ wait until exit()/shutdown(), a task panic, a deadline fault or SIGINT/SIGTERM;
//!  │    join the executors
//!  └─ `summary = true`: print the statistics and the response-time analysis (stderr);
//!     PREEMPT_STATS_JSON=<path>: write `app::stats()` as JSON; return the code
//! ```
//!
//! SIGINT and SIGTERM are blocked in every thread of the app from before `init` and taken
//! by one thread (module `stop_signals`): the first stops the app like [`exit`] with
//! code 130 / 143 and the statistics are kept (marked `stopped_by`); a second exits at once.
//!
//! With `clock = mock` the app runs in the simulator instead (see [`crate::sim`]): no
//! readiness checks, no threads, virtual time; `idle` does not run.
//!
//! Stopping is cooperative: [`exit`] sets the code (the first caller wins), raises the stop
//! flag and wakes every executor; each finishes the task it is running and returns. Tasks
//! are run-to-completion, so a lock is never abandoned half-way.

use std::cell::Cell;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU8, AtomicU32, Ordering};
use std::thread;

use preempt_io::sys::{mem, sched, thread as sys_thread};
use preempt_sync::futex;

pub use crate::config::{AppConfig, OnPanic};
use crate::explain;
use crate::level::{IdlePolicy, LoopControl};
use crate::metrics::{self, METRICS_ENV};
use crate::readiness;
use crate::rt_safety;
use crate::sim;
use crate::stats::{AppStats, Scheduling};
use crate::stop_signals;
use crate::time::driver;

/// The exit code of an app stopped by a task with `on_miss = Fault`.
pub const EXIT_DEADLINE_FAULT: i32 = 3;

/// The environment variable naming a file to write `app::stats()` to, as JSON, at exit.
pub const STATS_JSON_ENV: &str = "PREEMPT_STATS_JSON";

/// The run-time state of an app.
#[doc(hidden)]
pub struct App {
    config: AppConfig,
    started: AtomicBool,
    /// Stop flag the executors poll between messages.
    stop: AtomicBool,
    /// Futex word the thread in `run` sleeps on: 0 running, 1 stopping.
    stop_word: AtomicU32,
    exit_code: AtomicI32,
    /// The signal that stopped the app (0: none).
    stopped_by_signal: AtomicI32,
    /// How the executors are scheduled: `SCHED_UNSET`, `SCHED_FIFO_LEVELS` or `SCHED_SOFT`.
    scheduling: AtomicU8,
}

/// `App::scheduling`: not started (or simulated), SCHED_FIFO per level, SCHED_OTHER.
const SCHED_UNSET: u8 = 0;
const SCHED_FIFO_LEVELS: u8 = 1;
const SCHED_SOFT: u8 = 2;

impl App {
    /// An app that has not started.
    pub const fn new(config: AppConfig) -> Self {
        App {
            config,
            started: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            stop_word: AtomicU32::new(0),
            exit_code: AtomicI32::new(0),
            stopped_by_signal: AtomicI32::new(0),
            scheduling: AtomicU8::new(SCHED_UNSET),
        }
    }

    /// Stops the app with `code`; `true` if this call was the first (its code wins).
    fn request_stop(&self, code: i32) -> bool {
        let first = self.stop_word.swap(1, Ordering::AcqRel) == 0;
        if first {
            self.exit_code.store(code, Ordering::Release);
        }
        self.stop.store(true, Ordering::Release);
        for exec in self.config.executors {
            exec.wake();
        }
        // Wakes `run`, which sleeps on the word. An error here (EFAULT/EINVAL) would mean
        // a bad word address, impossible for a field of a live static.
        if let Err(err) = futex::wake(&self.stop_word, u32::MAX) {
            eprintln!("preempt: futex wake of the stop word failed: {err}");
        }
        first
    }

    /// Stops the app because `signal` (SIGINT/SIGTERM) arrived, unless it is stopping already.
    fn stop_on_signal(&self, signal: i32) {
        self.stopped_by_signal.store(signal, Ordering::Release);
        if !self.request_stop(stop_signals::exit_code(signal)) {
            // Already stopping for another reason: that reason's code and results stand.
            self.stopped_by_signal.store(0, Ordering::Release);
        }
    }

    /// A snapshot of the app's accounting (`app::stats()`).
    pub fn stats(&'static self) -> AppStats {
        let mut stats = AppStats::collect(&self.config);
        match self.scheduling.load(Ordering::Acquire) {
            SCHED_FIFO_LEVELS => stats.scheduling = Scheduling::Fifo,
            SCHED_SOFT => stats.scheduling = Scheduling::Other,
            _ => {}
        }
        stats.stopped_by = match self.stopped_by_signal.load(Ordering::Acquire) {
            0 => None,
            signal => Some(stop_signals::name(signal)),
        };
        stats
    }

    fn wait_for_stop(&self) {
        while self.stop_word.load(Ordering::Acquire) == 0 {
            // Spurious returns and EINTR loop back to the check.
            if let Err(err) = futex::wait(&self.stop_word, 0, None) {
                if err.kind() != io::ErrorKind::Interrupted {
                    eprintln!("preempt: futex wait on the stop word failed: {err}");
                    return;
                }
            }
        }
    }
}

/// The app that is running (null before `run` and if none runs).
static RUNNING: AtomicPtr<App> = AtomicPtr::new(std::ptr::null_mut());

/// Stops the running application with exit code `code`, from anywhere (a task, `idle`, any
/// thread).
///
/// From a task it returns: the calling task runs to completion, no new task starts, and
/// the generated `main` exits the process with `code` once every executor has stopped.
/// From `#[idle]` it does not return: idle ends at once (as RTIC's `debug::exit`, which
/// never returns), by unwinding its thread with a private payload that the runtime catches
/// silently; no panic message is printed. The first call's code wins. With no app running
/// it exits the process at once (`std::process::exit`).
pub fn exit(code: i32) {
    let app = RUNNING.load(Ordering::Acquire);
    if app.is_null() {
        std::process::exit(code);
    }
    // SAFETY: RUNNING only ever holds `&'static App` (set in `run`).
    unsafe { &*app }.request_stop(code);
    if IN_IDLE.with(Cell::get) {
        // `resume_unwind` does not run the panic hook: nothing is printed.
        std::panic::resume_unwind(Box::new(IdleExit));
    }
}

thread_local! {
    /// Set on the idle thread: `exit` called there ends idle.
    static IN_IDLE: Cell<bool> = const { Cell::new(false) };
}

/// The unwinding payload with which `exit` ends `#[idle]`.
struct IdleExit;

/// Stops the running app at the first real-time safety finding in `abort` mode.
fn stop_for_rt_safety(code: i32) {
    let app = RUNNING.load(Ordering::Acquire);
    if !app.is_null() {
        // SAFETY: RUNNING only ever holds `&'static App` (set in `run`).
        let app = unsafe { &*app };
        app.request_stop(code);
        // A finding counted at the end of a job that called `exit(0)` still aborts; a
        // failure code that stopped the app first (a panic, a deadline fault) stands.
        let _ = app
            .exit_code
            .compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire);
    }
}

/// `app::shutdown()`: stops `app` with `code`.
#[doc(hidden)]
pub fn shutdown(app: &'static App, code: i32) {
    app.request_stop(code);
}

/// One executor thread's set-up outcome, reported to `run` through a futex-backed gate.
struct Gate {
    /// Threads still setting up.
    pending: AtomicU32,
    /// 0 closed, 1 go, 2 abort.
    state: AtomicU32,
}

impl Gate {
    fn arrive(&self) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Last one: wake `run`. Failure of a wake on a valid word cannot happen.
            if let Err(err) = futex::wake(&self.pending, u32::MAX) {
                eprintln!("preempt: futex wake failed: {err}");
            }
        }
    }

    fn wait_all_arrived(&self) {
        loop {
            let pending = self.pending.load(Ordering::Acquire);
            if pending == 0 {
                return;
            }
            if let Err(err) = futex::wait(&self.pending, pending, None) {
                if err.kind() != io::ErrorKind::Interrupted {
                    eprintln!("preempt: futex wait failed: {err}");
                    return;
                }
            }
        }
    }

    fn open(&self, go: bool) {
        self.state.store(if go { 1 } else { 2 }, Ordering::Release);
        if let Err(err) = futex::wake(&self.state, u32::MAX) {
            eprintln!("preempt: futex wake failed: {err}");
        }
    }

    fn wait_open(&self) -> bool {
        loop {
            match self.state.load(Ordering::Acquire) {
                0 => {
                    if let Err(err) = futex::wait(&self.state, 0, None) {
                        if err.kind() != io::ErrorKind::Interrupted {
                            eprintln!("preempt: futex wait failed: {err}");
                            return false;
                        }
                    }
                }
                state => return state == 1,
            }
        }
    }
}

/// Configures the calling executor thread: name, policy, affinity, stack.
fn set_up_thread(priority: u8, soft: bool, cpus: Option<&[usize]>, stack: usize) -> io::Result<()> {
    sys_thread::set_current_thread_name(&format!("preempt-p{priority}"))?;
    if let Some(cpus) = cpus {
        sched::set_current_thread_affinity(cpus).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot pin executor p{priority} to CPU(s) {cpus:?} ({e}); check `cores = \
                     [..]` against the online CPUs (/sys/devices/system/cpu/online)"
                ),
            )
        })?;
    }
    // Priority 0 (async tasks that run when nothing else does, RTIC v2's priority-0 tasks)
    // stays SCHED_OTHER, like idle.
    if !soft && priority > 0 {
        sched::set_current_thread_policy(&sched::Policy::Fifo { priority }).map_err(|e| {
            io::Error::new(
                e.kind(),
                // `e` names the cause the kernel refused for and its fix (sys::rtcause).
                format!("cannot make executor p{priority} SCHED_FIFO {priority}: {e}"),
            )
        })?;
        // Real-time threads get exact timer expiry (the default slack is 50 µs for
        // SCHED_OTHER; the kernel ignores slack for RT threads, but say so explicitly).
        sys_thread::set_timer_slack_ns(1)?;
    }
    // Touch most of the stack now (locked by MCL_FUTURE as it faults in), leaving a margin
    // for the frames above this call.
    mem::prefault_stack(stack - stack / 4);
    Ok(())
}

/// What the generated `run` hands the runtime: `init` (runs the user's `init`, writes the
/// resources), then `prepare` (allocates async slots, sets periods and deadlines, registers
/// fds; an error names the task and stops the app before any task runs).
#[doc(hidden)]
pub struct Entry<'a> {
    /// Runs `#[init]` and stores the resources.
    pub init: &'a mut dyn FnMut(),
    /// Prepares the tasks after `init`.
    pub prepare: &'a mut dyn FnMut() -> Result<(), String>,
    /// `#[idle]`, if any.
    pub idle: Option<fn()>,
}

/// Starts the app described by `app` and blocks until it stops; returns the exit code.
#[doc(hidden)]
pub fn run(app: &'static App, entry: Entry<'_>) -> i32 {
    let config = &app.config;
    if app.started.swap(true, Ordering::AcqRel) {
        eprintln!(
            "preempt: app `{}` was already run once in this process",
            config.name
        );
        return 1;
    }
    let rt_mode = match rt_safety::Mode::resolve(config.rt_safety) {
        Ok(mode) => mode,
        Err(err) => {
            eprintln!("preempt: app `{}`: {err}", config.name);
            return 1;
        }
    };
    if config.mock_clock {
        // The simulator runs every level on one thread: no real-time path to check.
        rt_safety::start(rt_safety::Mode::Off, stop_for_rt_safety);
        let code = run_simulated(app, entry);
        return finish(app, code, None);
    }
    let coverage = rt_safety::start(rt_mode, stop_for_rt_safety);
    // Asked for explicitly (CI): say at once what cannot be seen. With the debug-build
    // default the exit report says it.
    if rt_mode != rt_safety::Mode::Off && std::env::var_os(rt_safety::RT_SAFETY_ENV).is_some() {
        if !coverage.allocations {
            eprintln!(
                "preempt: app `{}`: real-time safety ({}): allocations are not checked: the \
                 global allocator is not `preempt::rt_safety::CheckedAlloc` (declare one, or \
                 let the app macro's `main` do it)",
                config.name,
                rt_mode.name()
            );
        }
        if !coverage.calls {
            eprintln!(
                "preempt: app `{}`: real-time safety ({}): blocking calls are not checked: \
                 libc's entry points are not interposed on this target",
                config.name,
                rt_mode.name()
            );
        }
    }
    if config.accounting {
        driver::install_stamp_counter();
    }
    if let Err(err) = crate::resource::configure_lock_sampling() {
        eprintln!("preempt: app `{}`: {err}", config.name);
        return 1;
    }
    // Before `init`, so that every thread of the app inherits the blocked mask.
    let signals = match stop_signals::install(config.name, move |signal| {
        app.stop_on_signal(signal);
    }) {
        Ok(signals) => signals,
        Err(err) => {
            eprintln!("preempt: app `{}`: {err}", config.name);
            return 1;
        }
    };
    let explainer = explain::start(config.name, config.explain);
    let code = run_threads(app, entry);
    let report = explainer.map(explain::Explainer::finish);
    let code = finish(app, code, report.as_ref());
    if let Err(err) = signals.remove() {
        eprintln!(
            "preempt: app `{}`: ending the stop-signal thread failed: {err}",
            config.name
        );
    }
    code
}

/// The end of every run: summary, JSON export, `RUNNING` cleared.
fn finish(app: &'static App, code: i32, explained: Option<&explain::Report>) -> i32 {
    let config = &app.config;
    let started = RUNNING.load(Ordering::Acquire) == (app as *const App).cast_mut();
    let rt_mode = rt_safety::mode();
    if started && rt_mode != rt_safety::Mode::Off {
        let findings = rt_safety::findings();
        // What could not be seen is said when the mode was asked for (not the debug default).
        let gaps = rt_safety::coverage_incomplete()
            && std::env::var_os(rt_safety::RT_SAFETY_ENV).is_some();
        if !findings.is_empty() || config.summary || gaps {
            eprint!("{}", rt_safety::report(rt_mode, &findings));
        }
    }
    if started && (config.summary || std::env::var_os(STATS_JSON_ENV).is_some()) {
        let stats = app.stats();
        if config.summary {
            eprint!("{}", stats.summary());
            if config.accounting {
                let source = if config.mock_clock {
                    "the mock clock".to_string()
                } else {
                    driver::stamp_clock_description()
                };
                eprintln!("time stamps: {source}");
            }
            match explained {
                Some(report) => eprint!("{}", report.summary()),
                None => {
                    if let Some(hint) = unexplained_misses_hint(&stats) {
                        eprintln!("{hint}");
                    }
                }
            }
        }
        if let Some(path) = std::env::var_os(STATS_JSON_ENV) {
            let json = match explained {
                Some(report) => with_explanations(&stats.to_json(), report),
                None => stats.to_json(),
            };
            // Whole or not at all: a second signal during the write (which ends the
            // process) or a full disk leaves the previous file, never a cut one.
            let path = std::path::Path::new(&path);
            if let Err(err) = preempt_io::sys::file::write_atomically(path, json.as_bytes()) {
                eprintln!("preempt: cannot write the statistics ({STATS_JSON_ENV}): {err}");
            }
        }
    }
    if started {
        RUNNING.store(std::ptr::null_mut(), Ordering::Release);
    }
    code
}

/// What to do about deadline misses that nothing explained: the summary counts them, and
/// the explainer (kernel trace events) says what delayed each one.
fn unexplained_misses_hint(stats: &crate::stats::AppStats) -> Option<String> {
    let misses: u64 = stats.tasks.iter().map(|t| t.stats.deadline_misses).sum();
    (misses > 0).then(|| {
        format!(
            "{misses} deadline miss(es), not explained: run again with {}=1 (root or \
             CAP_SYS_ADMIN: it reads the kernel's trace events) and the summary names what \
             delayed each job (another thread, an interrupt, RT throttling); docs/MEASURING.md, \
             \"Why was it late\"",
            explain::EXPLAIN_ENV
        )
    })
}

/// The statistics JSON with the `explain` object added.
fn with_explanations(stats_json: &str, report: &explain::Report) -> String {
    let parsed: Result<serde_json::Map<String, serde_json::Value>, _> =
        serde_json::from_str(stats_json);
    match (parsed, serde_json::to_value(report)) {
        (Ok(mut map), Ok(value)) => {
            map.insert("explain".into(), value);
            serde_json::Value::Object(map).to_string()
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("preempt: cannot add the explanations to the statistics JSON: {e}");
            stats_json.to_string()
        }
    }
}

/// What a metrics scrape shows of `app`: its statistics and their analysis.
fn figures(app: &'static App) -> metrics::Figures {
    let stats = app.stats();
    metrics::Figures {
        rta: stats.rta().map_err(|e| e.to_string()),
        app: stats.app,
        tasks: stats.tasks.into_iter().map(|t| t.stats).collect(),
    }
}

/// Makes `app` the running app; `false` if another one runs.
fn claim_running(app: &'static App) -> bool {
    let claimed = RUNNING
        .compare_exchange(
            std::ptr::null_mut(),
            (app as *const App).cast_mut(),
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_ok();
    if !claimed {
        eprintln!("preempt: another app is already running in this process");
    }
    claimed
}

/// Runs a `clock = mock` app in the simulator on the calling thread.
fn run_simulated(app: &'static App, entry: Entry<'_>) -> i32 {
    let config = &app.config;
    if !claim_running(app) {
        return 1;
    }
    driver::install_mock();
    sim::take_trace();
    (entry.init)();
    if let Err(err) = (entry.prepare)() {
        eprintln!("preempt: app `{}`: {err}", config.name);
        driver::uninstall_mock();
        return 1;
    }
    if entry.idle.is_some() {
        eprintln!(
            "preempt: app `{}` runs on the mock clock: #[idle] is not simulated",
            config.name
        );
    }
    let on_panic = panic_handler(app);
    let on_fault = fault_handler(app);
    let control = LoopControl {
        stop: &app.stop,
        on_panic: &on_panic,
        on_fault: &on_fault,
        epoch_ns: driver::now_ns(),
        idle: IdlePolicy::Sleep,
    };
    match sim::run(config.executors, &control) {
        sim::Ended::Stopped => {}
        sim::Ended::Starved(at) => {
            eprintln!(
                "preempt: simulated app `{}` has nothing left to run at {at} ns (no queued \
                 message, release, delay or scripted action): end it with preempt::exit",
                config.name
            );
            app.request_stop(1);
        }
    }
    sim::reset_actions();
    driver::uninstall_mock();
    app.exit_code.load(Ordering::Acquire)
}

fn panic_handler(
    app: &'static App,
) -> impl Fn(&'static str, u8, &str) -> bool + Sync + Send + Copy + 'static {
    let config = &app.config;
    move |task: &'static str, priority: u8, message: &str| -> bool {
        eprintln!("preempt: task `{task}` (priority {priority}) panicked: {message}");
        match config.on_panic {
            OnPanic::Stop => {
                eprintln!("preempt: stopping app `{}` (on_panic = stop)", config.name);
                app.request_stop(101);
                false
            }
            OnPanic::Continue => true,
        }
    }
}

fn fault_handler(app: &'static App) -> impl Fn(&str) + Sync + Send + Copy + 'static {
    move |what: &str| {
        eprintln!("preempt: {what}; stopping app `{}`", app.config.name);
        app.request_stop(EXIT_DEADLINE_FAULT);
    }
}

/// Runs the app on real-time threads.
fn run_threads(app: &'static App, entry: Entry<'_>) -> i32 {
    let config = &app.config;

    // 1. Readiness, before anything of the app runs.
    let soft = readiness::soft_requested();
    app.scheduling.store(
        if soft { SCHED_SOFT } else { SCHED_FIFO_LEVELS },
        Ordering::Release,
    );
    let max_priority = config.executors.iter().map(|e| e.priority()).max();
    if soft {
        eprintln!("{}", readiness::soft_mode_warning(config.name));
    } else {
        let facts = readiness::Facts::gather(max_priority);
        let spinning: Vec<u8> = config
            .executors
            .iter()
            .map(|e| e.priority())
            .filter(|&p| p > 0 && config.idle_policy(p) == crate::level::IdlePolicy::Spin)
            .collect();
        let assessment = readiness::assess(&facts, max_priority, &spinning);
        if !assessment.problems.is_empty() {
            eprintln!(
                "{}",
                readiness::render_problems(config.name, &facts, &assessment.problems)
            );
            return 1;
        }
        for warning in &assessment.warnings {
            eprintln!("{}", readiness::render_warning(warning));
        }
        // 2. Memory: no page fault after start-up.
        if let Err(err) = mem::lock_all_memory() {
            eprintln!("preempt: app `{}`: {err}", config.name);
            return 1;
        }
        if let Err(err) = mem::tune_allocator_for_real_time() {
            eprintln!("preempt: warning: {err}; freed memory may be returned to the kernel");
        }
    }
    let online = preempt_io::sys::cpu::online_cpus().unwrap_or_default();
    for (priority, cpus) in config.cores {
        if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
            eprintln!(
                "preempt: app `{}`: `cores = [p{priority} = ..]` names CPU {bad}, which is not \
                 online (online: {online:?})",
                config.name
            );
            return 1;
        }
    }

    // Before anything of the app runs, so a bad address loses nothing.
    let _metrics_server = match metrics::address(config.metrics) {
        Some(addr) => match metrics::serve(Box::new(move || figures(app)), &addr) {
            Ok(server) => {
                eprintln!(
                    "preempt: app `{}` serves its metrics at http://{}/metrics",
                    config.name,
                    server.local_addr()
                );
                Some(server)
            }
            Err(err) => {
                eprintln!(
                    "preempt: app `{}`: metrics ({METRICS_ENV} or `metrics = ..`): {err}",
                    config.name
                );
                return 1;
            }
        },
        None => None,
    };

    if !claim_running(app) {
        return 1;
    }

    // 3. init, on this thread, then the tasks' run-time set-up.
    (entry.init)();
    if let Err(err) = (entry.prepare)() {
        eprintln!("preempt: app `{}`: {err}", config.name);
        return 1;
    }
    // The periods are known now: room for the deadline-miss notes before any executor runs.
    explain::size_log(config.executors);
    let idle = entry.idle;

    // 4. Executors.
    let gate: &'static Gate = Box::leak(Box::new(Gate {
        pending: AtomicU32::new(u32::try_from(config.executors.len()).unwrap_or(u32::MAX)),
        state: AtomicU32::new(0),
    }));
    let failed: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let epoch: &'static std::sync::atomic::AtomicU64 =
        Box::leak(Box::new(std::sync::atomic::AtomicU64::new(0)));
    let on_panic = panic_handler(app);
    let on_fault = fault_handler(app);
    let mut handles = Vec::with_capacity(config.executors.len());
    for &exec in config.executors {
        let priority = exec.priority();
        let cpus = config
            .cores
            .iter()
            .find(|(p, _)| *p == priority)
            .map(|(_, cpus)| *cpus);
        let stack = config.stack_size;
        let idle_policy = config.idle_policy(priority);
        let spawned = thread::Builder::new()
            .name(format!("preempt-p{priority}"))
            .stack_size(stack)
            .spawn(move || {
                let setup = set_up_thread(priority, soft, cpus, stack);
                if let Err(err) = &setup {
                    eprintln!("preempt: app `{}`: {err}", config.name);
                    failed.store(true, Ordering::Release);
                }
                gate.arrive();
                if setup.is_err() || !gate.wait_open() {
                    return;
                }
                let control = LoopControl {
                    stop: &app.stop,
                    on_panic: &on_panic,
                    on_fault: &on_fault,
                    epoch_ns: epoch.load(Ordering::Acquire),
                    idle: idle_policy,
                };
                // A panic in the runtime itself (task panics are caught inside the loop)
                // must stop the app: an executor thread that just died would leave `run`
                // waiting for a stop that never comes.
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    exec.run_loop(&control);
                }));
                if ran.is_err() {
                    eprintln!(
                        "preempt: executor p{priority} of app `{}` panicked in the runtime; \
                         stopping the app",
                        config.name
                    );
                    app.request_stop(101);
                }
            });
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(err) => {
                eprintln!("preempt: cannot start executor p{priority}: {err}");
                failed.store(true, Ordering::Release);
                gate.arrive();
            }
        }
    }
    gate.wait_all_arrived();
    let go = !failed.load(Ordering::Acquire);
    // The first release of every periodic task: now, when every level is ready.
    epoch.store(driver::now_ns(), Ordering::Release);
    gate.open(go);
    if !go {
        app.request_stop(1);
    }

    // 5. idle, at the lowest priority, on its own thread.
    if let (true, Some(idle)) = (go, idle) {
        let spawned = thread::Builder::new()
            .name("preempt-idle".into())
            .spawn(move || {
                IN_IDLE.with(|flag| flag.set(true));
                if let Err(payload) = std::panic::catch_unwind(idle) {
                    if payload.is::<IdleExit>() {
                        return; // `exit` ended idle; the stop is already requested.
                    }
                    let text = payload
                        .downcast_ref::<&str>()
                        .copied()
                        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                        .unwrap_or("(non-string panic payload)");
                    eprintln!("preempt: idle panicked: {text}");
                    app.request_stop(101);
                }
            });
        if let Err(err) = spawned {
            eprintln!("preempt: cannot start the idle thread: {err}");
            app.request_stop(1);
        }
    }

    // 6. Wait for the end.
    app.wait_for_stop();
    for handle in handles {
        // An executor thread only ends by returning from its loop (task panics are caught);
        // a join error would be a panic in the runtime itself, which the hook has reported.
        if handle.join().is_err() {
            app.exit_code.store(101, Ordering::Release);
        }
    }
    app.exit_code.load(Ordering::Acquire)
}
