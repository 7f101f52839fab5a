//! RTIC v2's `examples/lm3s6965/examples/t-cfg-tasks.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device`/`dispatchers` arguments, semihosting exit; interrupt-bound hardware tasks (`binds = ..`) become software tasks and `rtic::pend(..)` a spawn (preempt binds hardware tasks to fds, not interrupts);

//! [compile-pass] check that `#[cfg]` attributes applied on tasks work

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

    #[cfg(feature = "feature_x")]
    #[task]
    async fn opt_sw_task(cx: opt_sw_task::Context) {}

    #[cfg(feature = "feature_x")]
    #[task]
    fn opt_hw_task(cx: opt_hw_task::Context) {}
}
pub(crate) use app::run;
