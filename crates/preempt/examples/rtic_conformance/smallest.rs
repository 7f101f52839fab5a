//! RTIC v2's `examples/lm3s6965/examples/smallest.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device` argument, semihosting exit; the `no_std` `#[panic_handler]` is removed (std's handler reports panics).

use preempt::app;

#[app(main = false)]
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
}

pub(crate) use app::run;
