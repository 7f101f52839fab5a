//! RTIC v2's `examples/lm3s6965/examples/t-cfg-resources.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device` argument, semihosting exit, `asm::nop`.

//! [compile-pass] check that `#[cfg]` attributes applied on resources work

#[preempt::app(main = false)]
mod app {

    #[shared]
    struct Shared {
        // A conditionally compiled resource behind feature_x
        #[cfg(feature = "feature_x")]
        x: u32,
    }

    #[local]
    struct Local {}

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        preempt::exit(0); // Exit QEMU simulator

        (
            Shared {
                #[cfg(feature = "feature_x")]
                x: 0,
            },
            Local {},
        )
    }

    #[idle]
    fn idle(_cx: idle::Context) -> ! {
        loop {
            core::hint::spin_loop();
        }
    }
}
pub(crate) use app::run;
