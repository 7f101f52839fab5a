//! RTIC v2's `examples/lm3s6965/examples/t-binds.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device` argument, semihosting exit; interrupt-bound hardware tasks (`binds = ..`) become software tasks and `rtic::pend(..)` a spawn (preempt binds hardware tasks to fds, not interrupts); the tasks are never spawned; the app is a module of the conformance binary, so `crate::` is `super::`.

//! [compile-pass] Check that `binds` works as advertised

#[preempt::app(main = false)]
mod app {

    #[shared]
    struct Shared {}

    #[local]
    struct Local {}

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        preempt::exit(0); // Exit QEMU simulator

        (Shared {}, Local {})
    }

    // Cortex-M exception
    #[task]
    fn foo(c: foo::Context) {
        super::foo_trampoline(c)
    }

    // LM3S6965 interrupt
    #[task]
    fn bar(c: bar::Context) {
        super::bar_trampoline(c)
    }
}

#[allow(dead_code)]
fn foo_trampoline(_: app::foo::Context) {}

#[allow(dead_code)]
fn bar_trampoline(_: app::bar::Context) {}
pub(crate) use app::run;
