//! RTIC v2's own example apps (the rtic repository's `examples/lm3s6965/examples`), each
//! ported by hand with only its MCU-specific lines changed (see each file's header), in one
//! binary: `rtic_conformance <example>` runs the app of that name (RTIC's file name, e.g.
//! `only-shared-access`) and exits with its code. `tests/rtic_conformance.rs` runs every
//! one pinned to one CPU and compares its output with what RTIC's CI expects
//! (`ci/expected/lm3s6965/<example>.run`). Differences are listed, with their reasons, in
//! docs/RTIC.md.

#![allow(
    clippy::empty_loop,
    reason = "RTIC's examples end `idle` with `loop {}` after the exit, kept as written"
)]

mod async_channel;
mod async_delay;
mod async_task;
mod async_task_multiple_prios;
mod declared_locals;
mod destructure;
mod idle;
mod init;
mod locals;
mod lock;
mod lock_free;
mod multilock;
mod only_shared_access;
mod preempt;
mod shared;
mod smallest;
mod spawn;
mod spawn_arguments;
mod spawn_err;
mod spawn_loop;
mod static_resources_in_init;
mod task;

/// An app's generated `run`: runs it and returns its exit code.
type Run = fn() -> i32;

/// RTIC's example name -> the `run` of its port.
const APPS: &[(&str, Run)] = &[
    ("async-channel", async_channel::run),
    ("async-delay", async_delay::run),
    ("async-task", async_task::run),
    ("async-task-multiple-prios", async_task_multiple_prios::run),
    ("declared_locals", declared_locals::run),
    ("destructure", destructure::run),
    ("idle", idle::run),
    ("init", init::run),
    ("lock", lock::run),
    ("lock-free", lock_free::run),
    ("locals", locals::run),
    ("multilock", multilock::run),
    ("only-shared-access", only_shared_access::run),
    ("preempt", preempt::run),
    ("shared", shared::run),
    ("smallest", smallest::run),
    ("spawn", spawn::run),
    ("spawn_arguments", spawn_arguments::run),
    ("spawn_err", spawn_err::run),
    ("spawn_loop", spawn_loop::run),
    ("static-resources-in-init", static_resources_in_init::run),
    ("task", task::run),
];

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
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
