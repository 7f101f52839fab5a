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
//! * Anything else (functions, `use`, constants, types) is kept as it is.
//!
//! Inside the module, `preempt::prelude::*` is in scope: [`Instant`], [`Duration`],
//! [`exit`] and the [`Lock`](resource::Lock) / [`MultiLock2`](resource::MultiLock2) (..8) traits.
//! (An explicit `use` in the module takes precedence over it.)
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
//! main = false)]`
//!
//! * `cores`: CPU affinity per priority level (`pN` = the executor of priority N): one CPU or
//!   a list. Unbound levels may run on any CPU.
//! * `on_panic = stop` (default): a panicking task is reported (`preempt: task `t` (priority N)
//!   panicked: ..`) and the app stops with exit code 101. `on_panic = continue`: reported, and
//!   the executor goes on with later messages. Locks held by the task are released either way.
//! * `stack_size`: bytes of stack per executor thread (default 1 MiB), prefaulted at start.
//! * `main = false`: no `fn main` is generated; call `app::run()` (returns the exit code).
//!
//! # Running
//!
//! The generated `main` calls `app::run()` and exits with its code. `run` first checks that
//! the process may use real-time scheduling (RLIMIT_RTPRIO or CAP_SYS_NICE for the highest
//! priority, RLIMIT_MEMLOCK or CAP_IPC_LOCK for `mlockall`; a non-PREEMPT_RT kernel is a
//! warning) and otherwise prints what is missing and how to fix it and exits with 1. Setting
//! `PREEMPT_SOFT=1` runs everything under SCHED_OTHER without memory locking instead, with a
//! loud warning (laptops, unprivileged CI).
//!
//! An app runs until a task (or any thread) calls [`exit`]`(code)` or `app::shutdown()`.
//!
//! See the [`executor`] module for the queue path of a spawn and [`resource`] for the lock
//! path.

pub mod executor;
mod readiness;
pub mod resource;
pub mod runtime;
pub mod time;

pub use preempt_macros::app;
pub use readiness::SOFT_ENV;
pub use runtime::{OnPanic, exit};
pub use std::time::Duration;
pub use time::Instant;

/// What every app module sees (`use preempt::prelude::*` is injected by the macro).
pub mod prelude {
    pub use crate::resource::{
        Lock as _, MultiLock2 as _, MultiLock3 as _, MultiLock4 as _, MultiLock5 as _,
        MultiLock6 as _, MultiLock7 as _, MultiLock8 as _,
    };
    pub use crate::{Duration, Instant, exit};
}

/// Items the generated code uses. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::executor::{Executable, Executor, Message, TaskSlots};
    pub use crate::resource::{PcpCell, StaticCell};
    pub use crate::runtime::{App, AppConfig, OnPanic, run, shutdown};
    pub use preempt_sync::pcp::PcpGroup;

    /// Compile-time check that a message argument can move to the executor thread.
    pub const fn assert_send<T: Send>() {}

    /// Compile-time check that a read-only resource may be read from several threads.
    pub const fn assert_sync<T: Sync>() {}
}
