//! RTIC-style real-time applications on Linux threads.
//!
//! An application is a module of prioritised, run-to-completion **tasks** that communicate
//! through **messages** (spawns with arguments) and **resources**. The [`app`] macro checks
//! it at compile time (every resource is declared, every local resource has one owner,
//! priorities are valid) and computes each shared resource's **priority ceiling**; the
//! runtime runs each priority level on its own SCHED_FIFO thread and protects resources with
//! the original Priority Ceiling Protocol on Linux PI futexes, which bounds priority
//! inversion and makes deadlock impossible by construction.
//!
//! The syntax is RTIC v1's, as in Balciunas (2021), *RTIC for modern application
//! processors*, Listing 1:
//!
//! ```no_run
//! #[preempt::app]
//! mod app {
//!     #[local]
//!     struct Local {
//!         start: Instant,
//!     }
//!
//!     #[init]
//!     fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
//!         task1::spawn(0).unwrap();
//!         (Shared {}, Local { start: Instant::now() }, init::Monotonics())
//!     }
//!
//!     #[task(priority = 1)]
//!     fn task1(_cx: task1::Context, x: i32) {
//!         task2::spawn(x + 1).unwrap();
//!     }
//!
//!     #[task(priority = 1, local = [start])]
//!     fn task2(cx: task2::Context, x: i32) {
//!         if x < 10_000_000 {
//!             task1::spawn(x + 1).unwrap();
//!         } else {
//!             println!("Time: {:?}", cx.local.start.elapsed());
//!             preempt::exit(0);
//!         }
//!     }
//! }
//! ```
//!
//! # Items of an app
//!
//! * `#[shared] struct Shared { .. }`: resources tasks share (optional; a missing struct is
//!   an empty one). `#[lock_free]` on a field gives `&mut T` without locking, allowed when all
//!   its users run at one priority.
//! * `#[local] struct Local { .. }`: resources that each belong to one task (optional).
//! * `#[init] fn init(cx: init::Context) -> (Shared, Local, init::Monotonics)`: runs once,
//!   on the main thread, before any task; it may spawn. `init::Monotonics()` is empty and
//!   kept for RTIC v1 compatibility (timers use CLOCK_MONOTONIC).
//! * `#[idle] fn idle(cx: idle::Context) -> !` (optional): runs on its own SCHED_OTHER
//!   thread, below every task; may use `shared` and `local` resources.
//! * `#[task(priority = N, capacity = K, shared = [a, &b], local = [x, y: T = expr])]
//!   fn t(cx: t::Context, args..)`: a software task. `priority` is 1..=99 (the SCHED_FIFO
//!   priority of its executor thread; default 1), `capacity` how many messages may wait
//!   (default 1), `shared` the shared resources it uses (`&b`: read-only), `local` its local
//!   resources (`y: T = expr` declares one right here, initialised by a constant expression).
//!   Generated: `t::spawn(args) -> Result<(), args>`, `t::spawn_after(Duration, args)`,
//!   `t::spawn_at(Instant, args)`. A full queue gives the arguments back in `Err`.
//! * `#[task(priority = N, ..)] async fn t(cx: t::Context, args..)`: an **async** software
//!   task with RTIC v2 semantics: one live instance, `t::spawn(args)` returns `Err(args)`
//!   while it runs; it awaits [`Mono`] delays, rtic-sync channels, anything (see
//!   [`async_task`]).
//! * `#[task(priority = N, period = 1.millis(), deadline = 800.micros(), on_miss = Skip)]
//!   fn t(cx: t::Context)`: a **periodic** task, released by the runtime on a drift-free
//!   grid; `deadline` defaults to the period; `on_miss` is `Burst` (default), `Skip`,
//!   `Delay` or `Fault` (see [`periodic`]). Durations are `N.nanos()`, `N.micros()`,
//!   `N.millis()`, `N.secs()` ([`time::DurationExt`]) or any `Duration` expression.
//! * `#[task(binds = field, priority = N)] fn t(cx: t::Context)`: a **hardware** task, run
//!   whenever the file descriptor held by the `#[local]` field `field` (a
//!   `preempt_io::fd::FdSource`: timerfd, eventfd, socket, serial port, GPIO line) is
//!   readable; the task owns the field (`cx.local.field`) and reads the event, which
//!   acknowledges it.
//! * `deadline = ..` on any task: a relative deadline from each release (spawn time,
//!   scheduled time, fd readiness), counted in its statistics.
//! * Anything else (functions, `use`, constants, types) is kept as it is.
//!
//! Inside the module, `preempt::prelude::*` is in scope: [`Instant`], [`Duration`],
//! [`Mono`], [`exit`], `DurationExt` and the [`Lock`](resource::Lock) /
//! [`MultiLock2`](resource::MultiLock2) (..8) traits. (An explicit `use` in the module
//! takes precedence over it.)
//!
//! # Resources and locks
//!
//! `cx.shared.r.lock(|r| ..)` locks `r`; `(a, b).lock(|a, b| ..)` locks several (tuples up to
//! eight); `cx.shared.lock_all(|s| ..)` locks all of the task's resources. What a lock costs
//! depends on who uses the resource (see [`resource`]): nothing when every user runs at one
//! priority, two uncontended atomic operations otherwise, and `FUTEX_LOCK_PI` (the kernel
//! boosts the holder) only under contention.
//!
//! # App arguments
//!
//! `#[preempt::app(cores = [p1 = 0, p2 = [0, 1]], on_panic = continue, stack_size = 262144,
//! main = false, idle_policy = [p2 = spin], accounting = true, page_faults = true,
//! summary = true, clock = mock, rt_safety = "warn", global_allocator = false)]`
//!
//! * `cores`: CPU affinity per priority level (`pN` = the executor of priority N): one CPU or
//!   a list. Unbound levels may run on any CPU.
//! * `on_panic = stop` (default): a panicking task is reported (`preempt: task `t` (priority N)
//!   panicked: ..`) and the app stops with exit code 101. `on_panic = continue`: reported, and
//!   the executor goes on with later messages. Locks held by the task are released either way.
//! * `stack_size`: bytes of stack per executor thread (default 1 MiB), prefaulted at start.
//! * `main = false`: no `fn main` is generated; call `app::run()` (returns the exit code).
//! * `idle_policy = [pN = sleep | spin | spin_then_sleep(µs)]`: what a level does with
//!   nothing to run ([`IdlePolicy`]; default `sleep`).
//! * `accounting = false`: no per-job statistics (default on: see [`stats`]);
//!   `page_faults = false`: no `getrusage` per busy period.
//! * `summary = true`: print the task statistics and the response-time analysis at exit.
//! * `clock = mock`: run in the deterministic simulator on virtual time ([`sim`]).
//! * `rt_safety = "warn" | "abort" | "off"`: check every real-time task's jobs for
//!   allocations, blocking calls and page faults ([`rt_safety`]; default `"warn"` in debug
//!   builds, `"off"` in release builds; `PREEMPT_RT_SAFETY` overrides).
//!   `global_allocator = false`: the generated `main` comes without the checking
//!   `#[global_allocator]` (for apps with their own: wrap it in [`rt_safety::CheckedAlloc`]).
//!
//! # Running
//!
//! The generated `main` calls `app::run()` and exits with its code. `run` first checks that
//! the process may use real-time scheduling: a throwaway thread asks the kernel for
//! SCHED_FIFO at the highest priority (CAP_SYS_NICE and RLIMIT_RTPRIO only explain a refusal;
//! a cpu cgroup without real-time budget refuses even root), and RLIMIT_MEMLOCK or
//! CAP_IPC_LOCK allow `mlockall` (a non-PREEMPT_RT kernel is a warning). Otherwise it prints
//! the cause and how to fix it and exits with 1. Setting
//! `PREEMPT_SOFT=1` runs everything under SCHED_OTHER without memory locking instead, with a
//! loud warning (laptops, unprivileged CI).
//!
//! An app runs until a task (or any thread) calls [`exit`]`(code)` or `app::shutdown()`,
//! or a task with `on_miss = Fault` misses a deadline (exit code 3), or, with `rt_safety =
//! "abort"`, a real-time job does something a real-time path must not (exit code 4). `app::stats()` returns
//! the accounting snapshot at any time, `app::rta()` the response-time analysis;
//! `PREEMPT_STATS_JSON=<path>` writes the snapshot as JSON at exit. `#[app(explain = true)]` or
//! `PREEMPT_EXPLAIN=1` explains each deadline miss from the kernel's trace events (see
//! [`explain`]).
//!
//! See the [`executor`] module for how a spawn, a release and an fd event reach a task, and
//! [`resource`] for the lock path.
//!
//! # Features
//!
//! * `critical-section-impl` (default): provides the `critical-section` implementation
//!   (a priority-inheritance futex, see [`critical_section`](mod@crate::critical_section)) that
//!   rtic-sync and other `critical-section` users need.

#[cfg(not(loom))]
pub mod async_task;
pub mod bridge;
#[cfg(not(loom))]
mod config;
#[cfg(all(not(loom), feature = "critical-section-impl"))]
pub mod critical_section;
#[cfg(not(loom))]
pub mod executor;
#[cfg(not(loom))]
pub mod explain;
#[cfg(not(loom))]
mod level;
mod loom;
#[cfg(not(loom))]
pub mod metrics;
#[cfg(not(loom))]
pub mod mono;
#[cfg_attr(
    loom,
    allow(
        dead_code,
        reason = "under loom only its model uses it, the explainer is not compiled"
    )
)]
mod note_log;
#[cfg(not(loom))]
pub mod periodic;
#[cfg(not(loom))]
mod readiness;
#[cfg(not(loom))]
pub mod resource;
#[cfg(not(loom))]
pub mod rt_safety;
#[cfg(not(loom))]
pub mod runtime;
#[cfg(not(loom))]
pub mod sim;
#[cfg(not(loom))]
pub mod stats;
#[cfg(not(loom))]
mod stop_signals;
#[cfg(not(loom))]
pub mod task;
#[cfg(not(loom))]
pub mod time;

#[cfg(not(loom))]
pub use executor::IdlePolicy;
#[cfg(not(loom))]
pub use explain::EXPLAIN_ENV;
#[cfg(not(loom))]
pub use mono::Mono;
#[cfg(not(loom))]
pub use periodic::OnMiss;
/// Event sources for hardware tasks (`binds = ..`): timerfd, eventfd, UDP and UNIX
/// sockets, serial ports, GPIO lines (re-exported from `preempt_io::fd`).
#[cfg(not(loom))]
pub use preempt_io::fd;
#[cfg(not(loom))]
pub use preempt_macros::app;
#[cfg(not(loom))]
pub use preempt_stats::{rta, task_stats};
#[cfg(not(loom))]
pub use readiness::{SOFT_ENV, soft_requested};
#[cfg(not(loom))]
pub use resource::Mutex;
#[cfg(not(loom))]
pub use rt_safety::{EXIT_RT_SAFETY, RT_SAFETY_ENV};
#[cfg(not(loom))]
pub use runtime::{EXIT_DEADLINE_FAULT, OnPanic, STATS_JSON_ENV, exit};
#[cfg(not(loom))]
pub use stats::AppStats;
pub use std::time::Duration;
#[cfg(not(loom))]
pub use time::Instant;

/// What every app module sees (`use preempt::prelude::*` is injected by the macro).
#[cfg(not(loom))]
pub mod prelude {
    pub use crate::resource::{
        Lock as _, MultiLock2 as _, MultiLock3 as _, MultiLock4 as _, MultiLock5 as _,
        MultiLock6 as _, MultiLock7 as _, MultiLock8 as _,
    };
    pub use crate::time::DurationExt as _;
    pub use crate::{Duration, Instant, Mono, exit};
}

/// Items the generated code uses. Not a stable API.
#[doc(hidden)]
#[cfg(not(loom))]
pub mod __private {
    pub use crate::async_task::AsyncTask;
    pub use crate::executor::{Dispatched, Executable, Executor, IdlePolicy, Message, MsgKind};
    pub use crate::periodic::OnMiss;
    pub use crate::resource::{LockStats, PcpCell, StaticCell};
    pub use crate::runtime::{App, AppConfig, Entry, OnPanic, run, shutdown};
    pub use crate::task::{TaskControl, TaskKind};
    pub use preempt_sync::pcp::PcpGroup;

    /// Compile-time check that a message argument can move to the executor thread.
    pub const fn assert_send<T: Send>() {}

    /// Compile-time check that a read-only resource may be read from several threads.
    pub const fn assert_sync<T: Sync>() {}

    /// The arguments of a `local_task` (RTIC v2) in its level's message queue: they need not
    /// be `Send`, because only tasks of that level spawn it (`cx.local_spawner`), on the
    /// level's own thread, and that thread dispatches the message.
    pub struct LocalMsg<T>(T);

    // SAFETY: a `LocalMsg` is only created by `LocalMsg::new`, whose contract is that it is
    // created on the executor thread that will dispatch it; it sits in that executor's
    // queue (a static, hence the `Send` bound the queue needs) but never moves to or is
    // touched by another thread.
    unsafe impl<T> Send for LocalMsg<T> {}

    impl<T> LocalMsg<T> {
        /// Wraps a local task's arguments.
        ///
        /// # Safety
        ///
        /// Call it on the executor thread of the local task's level, and spawn the message
        /// from that thread (so it goes to that thread's ready ring and is dispatched there).
        #[inline(always)]
        pub unsafe fn new(args: T) -> Self {
            LocalMsg(args)
        }

        /// The arguments, on the dispatching (same) thread.
        #[inline(always)]
        pub fn into_inner(self) -> T {
            self.0
        }
    }

    /// Compile-time check that a `binds = ..` field holds an fd event source.
    pub const fn assert_fd_source<T: preempt_io::fd::FdSource>() {}

    /// The descriptor of a `binds = ..` field.
    pub fn fd_of<T: preempt_io::fd::FdSource>(source: &T) -> std::os::fd::BorrowedFd<'_> {
        source.as_fd()
    }

    /// A duration attribute (`period`, `deadline`) in ns, from the expression's value.
    pub fn duration_ns(what: &str, d: core::time::Duration) -> Result<u64, String> {
        match u64::try_from(d.as_nanos()) {
            Ok(0) => Err(format!("{what} is zero: give a positive duration")),
            Ok(ns) => Ok(ns),
            Err(_) => Err(format!("{what} {d:?} is too long (over 584 years)")),
        }
    }
}
