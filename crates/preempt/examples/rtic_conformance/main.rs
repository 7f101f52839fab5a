//! RTIC v2's own example apps (the rtic repository's `examples/lm3s6965/examples`), each
//! ported by hand with only its MCU-specific lines changed (see each file's header), in one
//! binary: `rtic_conformance <example>` runs the app of that name (RTIC's file name, e.g.
//! `only-shared-access`) and exits with its code; `rtic_conformance --list` lists them. `tests/rtic_conformance.rs` runs every
//! one pinned to one CPU and compares its output with what RTIC's CI expects
//! (`ci/expected/lm3s6965/<example>.run`). Differences are listed, with their reasons, in
//! docs/RTIC.md.

#![allow(
    clippy::empty_loop,
    clippy::match_result_ok,
    reason = "RTIC's examples are kept as written (`idle` ends with `loop {}` after the exit)"
)]
#![allow(
    unreachable_pub,
    reason = "RTIC's examples were single-file binaries whose `pub` items are kept as written"
)]
#![allow(
    unexpected_cfgs,
    reason = "RTIC's t-cfg-* examples test `#[cfg(feature = \"feature_x\")]`, a feature no \
              crate declares"
)]

/// RTIC's examples print with semihosting's `hprintln!`, which halts the Cortex-M core for
/// the debugger: no real-time operation there either. Here it is `println!` in a section
/// that `preempt::rt_safety` accepts, so that the apps run clean in `abort` mode and every
/// other finding (an allocation, a lock, a sleep) still stops them. (Its arguments are in a
/// closure: an `.await` in them is taken out into a `let` first, the one change it needs.)
macro_rules! hprintln {
    ($($arg:tt)*) => {
        ::preempt::rt_safety::allow(|| println!($($arg)*))
    };
}

// The apps are `main = false`: the allocator that reports real-time jobs' allocations.
#[global_allocator]
static ALLOCATOR: ::preempt::rt_safety::CheckedAlloc = ::preempt::rt_safety::CheckedAlloc::SYSTEM;

mod async_channel;
mod async_channel_done;
mod async_channel_no_receiver;
mod async_channel_no_sender;
mod async_channel_try;
mod async_delay;
mod async_task;
mod async_task_multiple_prios;
mod async_watch;
mod async_watch_uninitialized;
mod big_struct_opt;
mod binds;
mod complex;
mod declared_locals;
mod destructure;
mod extern_spawn;
mod generics;
mod hardware;
mod idle;
mod idle_wfi;
mod init;
mod locals;
mod lock;
mod lock_free;
mod multilock;
mod not_sync;
mod only_shared_access;
mod preempt;
mod prio_inversion;
mod resource_user_struct;
mod shared;
mod smallest;
mod spawn;
mod spawn_arguments;
mod spawn_err;
mod spawn_local;
mod spawn_loop;
mod static_exec;
mod static_resources_in_divergent;
mod static_resources_in_init;
mod t_binds;
mod t_cfg_resources;
mod t_cfg_tasks;
mod t_htask_main;
mod t_idle_main;
mod task;
mod wait_queue;

/// An app's generated `run`: runs it and returns its exit code.
type Run = fn() -> i32;

/// RTIC's example name -> the `run` of its port.
const APPS: &[(&str, Run)] = &[
    ("async-channel", async_channel::run),
    ("async-channel-done", async_channel_done::run),
    ("async-channel-no-receiver", async_channel_no_receiver::run),
    ("async-channel-no-sender", async_channel_no_sender::run),
    ("async-channel-try", async_channel_try::run),
    ("async-delay", async_delay::run),
    ("async-task", async_task::run),
    ("async-task-multiple-prios", async_task_multiple_prios::run),
    ("async-watch", async_watch::run),
    ("async-watch-uninitialized", async_watch_uninitialized::run),
    ("big-struct-opt", big_struct_opt::run),
    ("binds", binds::run),
    ("complex", complex::run),
    ("declared_locals", declared_locals::run),
    ("destructure", destructure::run),
    ("extern_spawn", extern_spawn::run),
    ("generics", generics::run),
    ("hardware", hardware::run),
    ("idle", idle::run),
    ("idle-wfi", idle_wfi::run),
    ("init", init::run),
    ("locals", locals::run),
    ("lock", lock::run),
    ("lock-free", lock_free::run),
    ("multilock", multilock::run),
    ("not-sync", not_sync::run),
    ("only-shared-access", only_shared_access::run),
    ("preempt", preempt::run),
    ("prio-inversion", prio_inversion::run),
    ("resource-user-struct", resource_user_struct::run),
    ("shared", shared::run),
    ("smallest", smallest::run),
    ("spawn", spawn::run),
    ("spawn_arguments", spawn_arguments::run),
    ("spawn_err", spawn_err::run),
    ("spawn_local", spawn_local::run),
    ("spawn_loop", spawn_loop::run),
    (
        "static-resources-in-divergent",
        static_resources_in_divergent::run,
    ),
    ("static-exec", static_exec::run),
    ("static-resources-in-init", static_resources_in_init::run),
    ("t-binds", t_binds::run),
    ("t-cfg-resources", t_cfg_resources::run),
    ("t-cfg-tasks", t_cfg_tasks::run),
    ("t-htask-main", t_htask_main::run),
    ("t-idle-main", t_idle_main::run),
    ("task", task::run),
    ("wait-queue", wait_queue::run),
];

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    if name == "--list" {
        for (name, _) in APPS {
            println!("{name}");
        }
        return;
    }
    let Some((_, run)) = APPS.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = APPS.iter().map(|(n, _)| *n).collect();
        eprintln!(
            "rtic_conformance: unknown example `{name}`; expected one of: {}",
            names.join(", ")
        );
        std::process::exit(2);
    };
    std::process::exit(run());
}
