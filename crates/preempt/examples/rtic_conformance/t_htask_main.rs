//! RTIC v2's `examples/lm3s6965/examples/t-htask-main.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device` argument, semihosting exit; interrupt-bound hardware tasks (`binds = ..`) become software tasks and `rtic::pend(..)` a spawn (preempt binds hardware tasks to fds, not interrupts);

#[preempt::app(main = false)]
mod app {

    #[shared]
    struct Shared {}

    #[local]
    struct Local {}

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        taskmain::spawn().ok();

        (Shared {}, Local {})
    }

    #[task]
    fn taskmain(_: taskmain::Context) {
        preempt::exit(0); // Exit QEMU simulator
    }
}
pub(crate) use app::run;
