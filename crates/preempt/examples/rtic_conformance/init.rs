//! RTIC v2's `examples/lm3s6965/examples/init.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device`/`peripherals` arguments; the `cx.core`, `cx.device` and `cx.cs` lines (Cortex-M peripherals, the interrupt-free token) are removed; semihosting print and exit.

#[preempt::app(main = false)]
mod app {

    #[shared]
    struct Shared {}

    #[local]
    struct Local {}

    #[init(local = [x: u32 = 0])]
    fn init(cx: init::Context) -> (Shared, Local) {
        // Locals in `init` have 'static lifetime
        let _x: &'static mut u32 = cx.local.x;

        hprintln!("init");

        preempt::exit(0); // Exit QEMU simulator

        (Shared {}, Local {})
    }
}
pub(crate) use app::run;
