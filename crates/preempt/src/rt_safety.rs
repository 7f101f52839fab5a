//! Real-time safety mode: what a task's job does that a real-time path must not, named
//! where it happens.
//!
//! `#[preempt::app(rt_safety = "warn" | "abort" | "off")]`, overridden by
//! `PREEMPT_RT_SAFETY=warn|abort|off` (so CI can turn it on for an unchanged app). The
//! default is `warn` in debug builds and `off` in release builds.
//!
//! # What is checked, and how
//!
//! Only inside a job of a task on a real-time level (priority 1..=99), not in `init`,
//! `idle`, priority-0 tasks, the simulator or any other thread (the non-real-time side of
//! a [`bridge`](crate::bridge)):
//!
//! | kind            | mechanism                                                         | call site |
//! |-----------------|-------------------------------------------------------------------|-----------|
//! | `allocation`, `deallocation` | [`CheckedAlloc`], the `#[global_allocator]` the app macro installs with the generated `main` | yes |
//! | `lock`, `sleep`, `io`, `thread_spawn`, `fork`, `mmap` | libc entry points interposed by `preempt_io::sys::interpose` (the table there says which call is which kind) | yes |
//! | `page_fault`    | `getrusage(RUSAGE_THREAD)` before and after the job: minor + major faults | no: the task and the job |
//! | `context_switch`| the same delta of voluntary context switches, less the interposed calls of the job (each may block once) and the switches made inside preempt-sync's lock, unlock and wake calls (counted by `getrusage` around each, in this mode only) | no |
//!
//! The framework's own paths inside a job are not reported: preempt-sync's futex calls (the
//! PCP slow path, the doorbell of a spawn to a sleeping level) go to the kernel without
//! libc, so no interposer sees them, and the context switches made inside them
//! (`preempt_sync::futex::framework_switches`) are subtracted from the job's; the
//! doorbell's eventfd write and everything this module does itself run suppressed
//! (`preempt_io::sys::interpose::suppress`).
//!
//! # What it costs
//!
//! Off: nothing in the dispatch path. Each executor loop is compiled twice (a const
//! generic), and the check-free one is chosen once when the level's thread starts. What
//! remains with the mode off: [`CheckedAlloc`] reads one thread-local per allocation and
//! each interposed libc call one thread-local on its way to libc (docs/PERFORMANCE.md).
//! On: two `getrusage` per job (≈ 1 µs) and a backtrace for the first finding of each
//! (task, kind).
//!
//! # Apps with their own global allocator
//!
//! The macro installs `CheckedAlloc<System>` next to the `fn main` it generates. An app
//! with its own allocator writes `#[preempt::app(global_allocator = false)]` and wraps
//! its allocator: `#[global_allocator] static A: preempt::rt_safety::CheckedAlloc<MyAlloc>
//! = preempt::rt_safety::CheckedAlloc::new(MyAlloc);`. An app without the checked
//! allocator (also every `main = false` app that does not declare one) is told at start
//! that allocations are not checked.

use std::alloc::{GlobalAlloc, Layout, System};
use std::backtrace::Backtrace;
use std::cell::Cell;
use std::fmt;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use preempt_io::sys::interpose::{self, Blocking};
use preempt_io::sys::thread as sys_thread;

/// The environment variable that overrides `rt_safety = ..`.
pub const RT_SAFETY_ENV: &str = "PREEMPT_RT_SAFETY";

/// The exit code of an app stopped by its first finding with `rt_safety = "abort"`.
pub const EXIT_RT_SAFETY: i32 = 4;

/// The real-time safety mode of an app.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Nothing is checked.
    Off,
    /// Findings are counted and reported at exit.
    Warn,
    /// The first finding stops the app with [`EXIT_RT_SAFETY`].
    Abort,
}

impl Mode {
    /// `"off"`, `"warn"` or `"abort"`.
    pub fn parse(text: &str) -> Option<Mode> {
        match text {
            "off" => Some(Mode::Off),
            "warn" => Some(Mode::Warn),
            "abort" => Some(Mode::Abort),
            _ => None,
        }
    }

    /// The mode's name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Warn => "warn",
            Mode::Abort => "abort",
        }
    }

    /// `app` unless [`RT_SAFETY_ENV`] says otherwise.
    ///
    /// # Errors
    /// A value of the variable that is not a mode, with what to write instead.
    pub fn resolve(app: Mode) -> Result<Mode, String> {
        match std::env::var(RT_SAFETY_ENV) {
            Err(std::env::VarError::NotPresent) => Ok(app),
            Ok(value) if value.is_empty() => Ok(app),
            Ok(value) => Mode::parse(value.trim()).ok_or_else(|| {
                format!(
                    "{RT_SAFETY_ENV}={value:?} is not a real-time safety mode: write \
                     {RT_SAFETY_ENV}=warn, abort or off"
                )
            }),
            Err(std::env::VarError::NotUnicode(value)) => Err(format!(
                "{RT_SAFETY_ENV}={value:?} is not a real-time safety mode: write \
                 {RT_SAFETY_ENV}=warn, abort or off"
            )),
        }
    }
}

/// What a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A heap allocation (or reallocation).
    Allocation,
    /// A heap deallocation.
    Deallocation,
    /// An ordinary lock or a wait: `pthread_mutex_lock`, a futex wait (a contended
    /// `std::sync::Mutex`, `Condvar::wait`).
    Lock,
    /// A sleep, or a wait for descriptors with a timeout.
    Sleep,
    /// File, terminal (`println!`) or socket I/O that can block.
    Io,
    /// A thread was created.
    ThreadSpawn,
    /// A process was created.
    Fork,
    /// `mmap`/`munmap`.
    Mmap,
    /// Page faults taken during the job.
    PageFault,
    /// Voluntary context switches during the job that no interposed call explains.
    ContextSwitch,
}

impl Kind {
    fn of(blocking: Blocking) -> Kind {
        match blocking {
            Blocking::Lock => Kind::Lock,
            Blocking::Sleep => Kind::Sleep,
            Blocking::Io => Kind::Io,
            Blocking::ThreadSpawn => Kind::ThreadSpawn,
            Blocking::Fork => Kind::Fork,
            Blocking::Mmap => Kind::Mmap,
        }
    }

    /// The name used in the report and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Allocation => "allocation",
            Kind::Deallocation => "deallocation",
            Kind::Lock => "lock",
            Kind::Sleep => "sleep",
            Kind::Io => "io",
            Kind::ThreadSpawn => "thread_spawn",
            Kind::Fork => "fork",
            Kind::Mmap => "mmap",
            Kind::PageFault => "page_fault",
            Kind::ContextSwitch => "context_switch",
        }
    }
}

/// Everything one kind of finding of one task amounts to.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Finding {
    /// The task's name.
    pub task: String,
    /// Its priority.
    pub priority: u8,
    /// What it did.
    pub kind: Kind,
    /// How often (allocations, calls, page faults, context switches).
    pub count: u64,
    /// The first occurrence.
    pub first: First,
}

/// The first occurrence of a finding.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct First {
    /// The task's job it happened in, counted from 1 (the task's n-th job on this run).
    pub cycle: u64,
    /// The interposed libc function (`write`, `clock_nanosleep`, ..), for calls.
    pub call: Option<String>,
    /// The first frame of the backtrace in the app's own code (`function at file:line`, or
    /// `function (no file:line)` in a build without line tables); `None` for page faults
    /// and context switches, which are counted over the whole job.
    pub site: Option<String>,
    /// The symbolised backtrace, innermost frame first (empty for counted kinds).
    pub backtrace: Vec<String>,
}

/// One (task, kind) as recorded.
struct Record {
    task: &'static str,
    priority: u8,
    kind: Kind,
    count: u64,
    cycle: u64,
    call: Option<&'static str>,
    backtrace: Option<Backtrace>,
}

static RECORDS: Mutex<Vec<Record>> = Mutex::new(Vec::new());

/// [`Mode`] of the running app as `u8` (`Off` until [`start`]).
static MODE: AtomicU8 = AtomicU8::new(0);

/// Called once, with [`EXIT_RT_SAFETY`], at the first finding in `abort` mode (0: none).
static STOP: AtomicUsize = AtomicUsize::new(0);
static STOPPED: AtomicBool = AtomicBool::new(false);

/// What [`start`] found out: bit 0 allocations checked, bit 1 calls checked, bit 2 page
/// faults and context switches counted.
static COVERAGE: AtomicU8 = AtomicU8::new(0);

/// `getrusage` per job: off under user-mode emulation (qemu-user), where the thread's page
/// faults and voluntary switches are the emulator's (translating code, its own locks): 5 to
/// 11 faults and 19 to 372 switches per task of the examples under qemu-aarch64 7.2, none
/// natively.
static COUNT_USAGE: AtomicBool = AtomicBool::new(true);

/// The host of a user-mode emulator running this binary (`""`: none), for the report.
static EMULATOR_HOST: Mutex<&'static str> = Mutex::new("");

/// The mode of the running app (`Off` before [`start`]).
pub fn mode() -> Mode {
    match MODE.load(Ordering::Acquire) {
        1 => Mode::Warn,
        2 => Mode::Abort,
        _ => Mode::Off,
    }
}

thread_local! {
    /// The job the thread runs: task, priority, its job number.
    static JOB: Cell<(&'static str, u8, u64)> = const { Cell::new(("", 0, 0)) };
    /// `getrusage` at the job's start: faults (minor + major), voluntary switches.
    static BASE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    /// Page faults and voluntary switches of the job's [`allow`]ed sections.
    static EXCUSED: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    /// `preempt_sync::futex::framework_switches()` at the job's start.
    static FRAMEWORK: Cell<u64> = const { Cell::new(0) };
    /// Set by [`probe`]: the next finding only marks `PROBED`.
    static PROBING: Cell<bool> = const { Cell::new(false) };
    static PROBED: Cell<bool> = const { Cell::new(false) };
}

/// What [`start`] found out about the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coverage {
    /// Allocations go through [`CheckedAlloc`].
    pub allocations: bool,
    /// The libc interposers bind.
    pub calls: bool,
}

/// Starts checking in `mode` (from the app's setting and the environment): registers the
/// reporting hook and `stop` (called with [`EXIT_RT_SAFETY`] at the first finding in
/// `abort` mode), and says what can be seen. Call it before any executor runs.
pub fn start(mode: Mode, stop: fn(i32)) -> Coverage {
    MODE.store(
        match mode {
            Mode::Off => 0,
            Mode::Warn => 1,
            Mode::Abort => 2,
        },
        Ordering::Release,
    );
    STOP.store(stop as usize, Ordering::Release);
    STOPPED.store(false, Ordering::Release);
    RECORDS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
    if mode == Mode::Off {
        return Coverage {
            allocations: false,
            calls: false,
        };
    }
    interpose::set_hook(on_call);
    let emulated = preempt_io::sys::cpu::user_mode_emulation();
    *EMULATOR_HOST.lock().unwrap_or_else(PoisonError::into_inner) = emulated.unwrap_or("");
    COUNT_USAGE.store(emulated.is_none(), Ordering::Release);
    let coverage = Coverage {
        allocations: probe_allocator(),
        calls: interpose::probe(),
    };
    COVERAGE.store(
        u8::from(coverage.allocations)
            | (u8::from(coverage.calls) << 1)
            | (u8::from(emulated.is_none()) << 2),
        Ordering::Release,
    );
    coverage
}

/// Whether something could not be checked in this run (allocations, calls, or page faults
/// and context switches): the report says what.
pub fn coverage_incomplete() -> bool {
    COVERAGE.load(Ordering::Acquire) != 0b111
}

/// Whether checks are on (executor threads ask once, at start).
pub fn active() -> bool {
    mode() != Mode::Off
}

/// Whether the global allocator is a [`CheckedAlloc`]: allocates while armed and probing.
fn probe_allocator() -> bool {
    PROBING.with(|p| p.set(true));
    PROBED.with(|p| p.set(false));
    interpose::arm();
    let boxed = std::hint::black_box(Box::new(std::hint::black_box(7u64)));
    interpose::disarm();
    drop(boxed);
    PROBING.with(|p| p.set(false));
    PROBED.with(Cell::get)
}

fn usage() -> (u64, u64) {
    if !COUNT_USAGE.load(Ordering::Relaxed) {
        return (0, 0);
    }
    match sys_thread::rusage_thread() {
        Ok(u) => (u.minor_faults + u.major_faults, u.voluntary_switches),
        // getrusage(RUSAGE_THREAD) cannot fail for the calling thread; should it, the job
        // is checked for calls and allocations only (the delta is zero).
        Err(_) => BASE.with(Cell::get),
    }
}

/// A checked job of `task` (priority `priority`, its `cycle`-th) starts on this thread.
#[inline(never)]
pub fn job_begin(task: &'static str, priority: u8, cycle: u64) {
    JOB.with(|j| j.set((task, priority, cycle)));
    let base = usage();
    BASE.with(|b| b.set(base));
    EXCUSED.with(|e| e.set((0, 0)));
    preempt_sync::futex::count_framework_switches();
    FRAMEWORK.with(|f| f.set(preempt_sync::futex::framework_switches()));
    interpose::arm();
}

/// The checked job ends: page faults and unexplained voluntary context switches of the
/// job are findings.
#[inline(never)]
pub fn job_end() {
    let calls = interpose::disarm();
    let framework =
        preempt_sync::futex::framework_switches().wrapping_sub(FRAMEWORK.with(Cell::get));
    let (faults, switches) = usage();
    let (faults0, switches0) = BASE.with(Cell::get);
    let (excused_faults, excused_switches) = EXCUSED.with(Cell::get);
    let faults = faults
        .saturating_sub(faults0)
        .saturating_sub(excused_faults);
    let switches = switches
        .saturating_sub(switches0)
        .saturating_sub(excused_switches)
        .saturating_sub(u64::from(calls))
        .saturating_sub(framework);
    if faults > 0 {
        record(Kind::PageFault, faults, None, false);
    }
    if switches > 0 {
        record(Kind::ContextSwitch, switches, None, false);
    }
}

/// The checked job panicked: disarm without judging it.
pub fn job_abandon() {
    interpose::disarm();
}

/// Runs `f` unchecked: what it does inside a real-time job is not a finding. For what is
/// known and accepted on a real-time path (an example's output, a one-off diagnostic
/// before `preempt::exit`), never to silence a finding that is not understood: a print
/// still blocks, it is only no longer reported.
///
/// ```
/// preempt::rt_safety::allow(|| println!("done"));
/// ```
pub fn allow<R>(f: impl FnOnce() -> R) -> R {
    if !interpose::armed() {
        // Not in a checked job (or nested in `allow`): nothing to excuse.
        let _accepted = interpose::suppress();
        return f();
    }
    let (faults0, switches0) = usage();
    let result = {
        let _accepted = interpose::suppress();
        f()
    };
    let (faults, switches) = usage();
    // The page faults and context switches of `f` are excused at the job's end too.
    EXCUSED.with(|e| {
        let (f0, s0) = e.get();
        e.set((
            f0 + faults.saturating_sub(faults0),
            s0 + switches.saturating_sub(switches0),
        ));
    });
    result
}

/// The hook the interposers call (inside a suppressed path).
fn on_call(kind: Blocking, name: &'static str) {
    violation(Kind::of(kind), Some(name));
}

/// A finding at its call site (allocator, interposer), on the armed thread.
#[cold]
#[inline(never)]
fn violation(kind: Kind, call: Option<&'static str>) {
    if PROBING.with(Cell::get) {
        PROBED.with(|p| p.set(true));
        return;
    }
    if std::thread::panicking() {
        // The panic machinery allocates and prints; its backtrace lock may be held.
        return;
    }
    let _framework = interpose::suppress();
    // Never unwind into the allocator or libc's caller.
    let _ = std::panic::catch_unwind(|| record(kind, 1, call, true));
}

fn record(kind: Kind, count: u64, call: Option<&'static str>, capture: bool) {
    let _framework = interpose::suppress();
    let (task, priority, cycle) = JOB.with(Cell::get);
    let first = {
        let mut records = RECORDS.lock().unwrap_or_else(PoisonError::into_inner);
        match records
            .iter_mut()
            .find(|r| r.task == task && r.kind == kind)
        {
            Some(r) => {
                r.count += count;
                false
            }
            None => {
                records.push(Record {
                    task,
                    priority,
                    kind,
                    count,
                    cycle,
                    call,
                    backtrace: capture.then(Backtrace::force_capture),
                });
                true
            }
        }
    };
    if first && mode() == Mode::Abort && !STOPPED.swap(true, Ordering::AcqRel) {
        let what = match call {
            Some(call) => format!("{} (`{call}`)", kind.name()),
            None => kind.name().to_string(),
        };
        let _ = writeln!(
            std::io::stderr(),
            "preempt: real-time safety: task `{task}` (priority {priority}), job {cycle}: \
             {what}; stopping the app ({RT_SAFETY_ENV}=abort / rt_safety = \"abort\", \
             exit code {EXIT_RT_SAFETY})"
        );
        let stop = STOP.load(Ordering::Acquire);
        if stop != 0 {
            // SAFETY: STOP only holds 0 (checked) or a `fn(i32)` stored by `start`.
            let stop: fn(i32) = unsafe { std::mem::transmute::<usize, fn(i32)>(stop) };
            stop(EXIT_RT_SAFETY);
        }
    }
}

/// Source locations of the checker and of the standard library (and the crates it
/// vendors): a frame there is not the app's call site.
const NOT_APP_FILES: &[&str] = &[
    "/rustc/",
    "/library/std/",
    "/library/core/",
    "/library/alloc/",
    "sys/interpose.rs",
    "src/rt_safety.rs",
];

/// Frames of the checker, the runtime and the standard library: the first frame not among
/// them is the call site in the app's code.
const NOT_APP: &[&str] = &[
    "std::",
    "core::",
    "alloc::",
    "<std::",
    "<core::",
    "<alloc::",
    "<&",
    "<T as ",
    "__rust",
    "__rdl",
    "__rg_",
    "rust_",
    "preempt::rt_safety",
    "<preempt::rt_safety",
    "preempt_io::sys::interpose",
    "backtrace::",
    "hashbrown::",
    "_start",
    "__libc",
];

/// The frames of `bt` as `function at file:line`, innermost first.
fn frames(bt: &Backtrace) -> Vec<String> {
    frames_of(&bt.to_string())
}

/// The frames of a backtrace's text (std's format: `  N: function` then `at file:line`).
fn frames_of(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(location) = trimmed.strip_prefix("at ") {
            if let Some(last) = out.last_mut() {
                if !last.contains(" at ") {
                    last.push_str(" at ");
                    last.push_str(location);
                }
            }
        } else if let Some((number, function)) = trimmed.split_once(": ") {
            if number.chars().all(|c| c.is_ascii_digit()) {
                out.push(function.to_string());
            }
        }
    }
    out
}

/// Frames of the C library (thread start-up, system-call wrappers): with its debug
/// information installed they have locations, and they are never the app's call site.
const C_LIBRARY: &[&str] = &["start_thread", "clone", "__clone", "__GI_", "__libc"];

/// Source locations of the C library as its debug information names them (glibc's build
/// tree: `./nptl/pthread_create.c`, `../sysdeps/...`).
const C_LIBRARY_FILES: &[&str] = &["./nptl/", "../sysdeps/", "./csu/", "../nptl/", "./misc/"];

/// Frames of the runtime around a task (its executor, the macro's dispatch): the task's own
/// function is inside them.
const RUNTIME: &[&str] = &["preempt::", "<preempt::", "preempt_"];

/// Said after a call site named without a file and line.
pub const NO_LINE_TABLES: &str = "(no file:line)";

/// How to get a file and line, said once under findings that have none.
const LINE_TABLES_ADVICE: &str = "  (no file:line of the app: this build has no line \
     tables; add `debug = \"line-tables-only\"` to `[profile.release]` in the app's \
     Cargo.toml and rebuild)";

/// The first frame of `frames` in the app's code: with a source location where the build
/// has line tables; otherwise the first function that is not the checker's, the standard
/// library's, the C library's or the runtime's (a user crate's plain `cargo build --release`
/// has no line tables, and the first frame with a location is then glibc's `start_thread`),
/// followed by [`NO_LINE_TABLES`].
fn site(frames: &[String]) -> Option<String> {
    let app_function = |function: &str| {
        !NOT_APP.iter().any(|p| function.starts_with(p))
            && !C_LIBRARY.iter().any(|p| function.starts_with(p))
    };
    let located = frames
        .iter()
        .filter_map(|f| {
            f.split_once(" at ")
                .map(|(function, file)| (f, function, file))
        })
        .find(|(_, function, file)| {
            app_function(function)
                && !NOT_APP_FILES.iter().any(|p| file.contains(p))
                && !C_LIBRARY_FILES.iter().any(|p| file.starts_with(p))
        })
        .map(|(f, _, _)| f.clone());
    located.or_else(|| {
        frames
            .iter()
            .map(|f| {
                f.split_once(" at ")
                    .map_or(f.as_str(), |(function, _)| function)
            })
            .find(|function| {
                app_function(function) && !RUNTIME.iter().any(|p| function.starts_with(p))
            })
            .map(|function| format!("{function} {NO_LINE_TABLES}"))
    })
}

/// The findings so far, symbolised (the first call symbolises each backtrace: slow).
pub fn findings() -> Vec<Finding> {
    // A task may ask (`app::stats()`): what this does under the lock must not be a finding,
    // which would take the lock again.
    let _framework = interpose::suppress();
    let records = RECORDS.lock().unwrap_or_else(PoisonError::into_inner);
    records
        .iter()
        .map(|r| {
            let backtrace = r.backtrace.as_ref().map(frames).unwrap_or_default();
            Finding {
                task: r.task.to_string(),
                priority: r.priority,
                kind: r.kind,
                count: r.count,
                first: First {
                    cycle: r.cycle,
                    call: r.call.map(str::to_string),
                    site: site(&backtrace),
                    backtrace,
                },
            }
        })
        .collect()
}

/// The report of `findings` for the terminal.
pub fn report(mode: Mode, findings: &[Finding]) -> impl fmt::Display + '_ {
    Report(mode, findings)
}

struct Report<'a>(Mode, &'a [Finding]);

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Report(mode, findings) = *self;
        let coverage = COVERAGE.load(Ordering::Acquire);
        if coverage & 1 == 0 {
            writeln!(
                f,
                "preempt: real-time safety ({}): allocations were not checked (the global \
                 allocator is not preempt::rt_safety::CheckedAlloc)",
                mode.name()
            )?;
        }
        if coverage & 2 == 0 {
            writeln!(
                f,
                "preempt: real-time safety ({}): blocking calls were not checked (libc is not \
                 interposed on this target)",
                mode.name()
            )?;
        }
        if coverage & 4 == 0 {
            let host = *EMULATOR_HOST.lock().unwrap_or_else(PoisonError::into_inner);
            writeln!(
                f,
                "preempt: real-time safety ({}): page faults and context switches were not \
                 counted: this binary runs under user-mode emulation (on a {host} host), whose \
                 own faults and waits getrusage would count",
                mode.name()
            )?;
        }
        if findings.is_empty() {
            return writeln!(f, "preempt: real-time safety ({}): no finding", mode.name());
        }
        writeln!(
            f,
            "preempt: real-time safety ({}): {} finding(s) in real-time jobs \
             (docs/RT-SAFETY.md says what to use instead):",
            mode.name(),
            findings.len()
        )?;
        for x in findings {
            let call = x
                .first
                .call
                .as_deref()
                .map(|c| format!(" `{c}`"))
                .unwrap_or_default();
            writeln!(
                f,
                "  task `{}` (priority {}): {}{call} x{}, first in job {}",
                x.task,
                x.priority,
                x.kind.name(),
                x.count,
                x.first.cycle
            )?;
            match &x.first.site {
                Some(site) => writeln!(f, "    at {site}")?,
                None if x.first.backtrace.is_empty() => {
                    writeln!(f, "    (counted by getrusage over the job: no call site)")?;
                }
                None => {
                    for frame in x.first.backtrace.iter().take(12) {
                        writeln!(f, "    {frame}")?;
                    }
                }
            }
        }
        // No file and line, or no frame of the app at all (its function inlined into the
        // executor's loop, which only line tables' inline records can name).
        let unlocated = findings.iter().any(|x| match x.first.site.as_deref() {
            Some(site) => site.ends_with(NO_LINE_TABLES),
            None => !x.first.backtrace.is_empty(),
        });
        if unlocated {
            writeln!(f, "{LINE_TABLES_ADVICE}")?;
        }
        Ok(())
    }
}

/// A global allocator that reports the allocations and deallocations of real-time jobs
/// and forwards every call to `A`.
///
/// ```
/// // What `#[preempt::app]` emits with its `fn main` (unless `global_allocator = false`):
/// #[global_allocator]
/// static ALLOCATOR: preempt::rt_safety::CheckedAlloc = preempt::rt_safety::CheckedAlloc::SYSTEM;
/// # fn main() {}
/// ```
///
/// With checks off, or outside a checked job, it costs one thread-local read per call.
pub struct CheckedAlloc<A = System>(A);

impl CheckedAlloc<System> {
    /// Over the system allocator.
    pub const SYSTEM: CheckedAlloc<System> = CheckedAlloc(System);
}

impl<A> CheckedAlloc<A> {
    /// Over `inner` (an app's own allocator).
    pub const fn new(inner: A) -> Self {
        CheckedAlloc(inner)
    }
}

// SAFETY: every method forwards to `A`'s with the same arguments and returns its result
// unchanged, so `A`'s guarantees are ours; the check before it neither allocates through
// `self` while armed (the recording path runs suppressed, so its own allocations are not
// armed) nor unwinds (`violation` catches panics).
unsafe impl<A: GlobalAlloc> GlobalAlloc for CheckedAlloc<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if interpose::armed() {
            violation(Kind::Allocation, None);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.0.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if interpose::armed() {
            violation(Kind::Allocation, None);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if interpose::armed() {
            violation(Kind::Deallocation, None);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if interpose::armed() {
            violation(Kind::Allocation, None);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_name_round_trip() {
        for mode in [Mode::Off, Mode::Warn, Mode::Abort] {
            assert_eq!(Mode::parse(mode.name()), Some(mode));
        }
        assert_eq!(Mode::parse("on"), None);
    }

    #[test]
    fn call_site_is_the_first_frame_outside_std_and_the_checker() {
        let frames = vec![
            "std::backtrace::Backtrace::force_capture at /rustc/x/library/std/src/backtrace.rs:1:1"
                .to_string(),
            "preempt::rt_safety::record at crates/preempt/src/rt_safety.rs:2:2".to_string(),
            "<preempt::rt_safety::CheckedAlloc<A> as core::alloc::global::GlobalAlloc>::alloc at x.rs:3:3".to_string(),
            "alloc::alloc::alloc at /rustc/x/library/alloc/src/alloc.rs:4:4".to_string(),
            "rt_alloc::app::sample at crates/preempt/examples/a.rs:12:9".to_string(),
        ];
        assert_eq!(
            site(&frames).as_deref(),
            Some("rt_alloc::app::sample at crates/preempt/examples/a.rs:12:9")
        );
    }

    #[test]
    fn without_line_tables_the_call_site_is_the_task_function_not_libc() {
        // A user crate's plain release build: the app's frames have no location, glibc's
        // (with its debug information) have one.
        let frames = vec![
            "std::backtrace::Backtrace::force_capture".to_string(),
            "preempt::rt_safety::record".to_string(),
            "alloc::alloc::alloc".to_string(),
            "ctrl::app::control".to_string(),
            "preempt::executor::Executor<M,_>::run_message".to_string(),
            "start_thread at ./nptl/pthread_create.c:442:8".to_string(),
            "clone3 at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81".to_string(),
        ];
        let site = site(&frames).unwrap();
        assert_eq!(site, format!("ctrl::app::control {NO_LINE_TABLES}"));
        // Only runtime and library frames: no call site to name.
        assert_eq!(super::site(&frames[4..]), None);
    }

    #[test]
    fn the_report_says_once_how_to_get_file_and_line() {
        let finding = |task: &str| Finding {
            task: task.to_string(),
            priority: 2,
            kind: Kind::Allocation,
            count: 1,
            first: First {
                cycle: 1,
                call: None,
                site: Some(format!("ctrl::app::{task} {NO_LINE_TABLES}")),
                backtrace: vec![format!("ctrl::app::{task}")],
            },
        };
        let text = report(Mode::Warn, &[finding("control"), finding("log")]).to_string();
        assert!(
            text.contains("at ctrl::app::control (no file:line)"),
            "{text}"
        );
        assert_eq!(text.matches("line-tables-only").count(), 1, "{text}");
    }

    #[test]
    fn frames_pair_functions_with_locations() {
        let text = "   0: a::b\n             at ./src/x.rs:1:2\n   1: c::d\n   2: e\n             at y.rs:3:4\n";
        assert_eq!(
            frames_of(text),
            vec!["a::b at ./src/x.rs:1:2", "c::d", "e at y.rs:3:4"]
        );
    }
}
