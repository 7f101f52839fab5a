//! RTIC v2's `examples/lm3s6965/examples/binds.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device` argument, semihosting print and exit, `asm::nop`; interrupt-bound hardware tasks (`binds = ..`) become software tasks and `rtic::pend(..)` a spawn (preempt binds hardware tasks to fds, not interrupts);

// `examples/interrupt.rs` rewritten to use `binds`
#[preempt::app(main = false)]
mod app {

    #[shared]
    struct Shared {}

    #[local]
    struct Local {}

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        foo::spawn().ok();

        hprintln!("init");

        (Shared {}, Local {})
    }

    #[idle]
    fn idle(_: idle::Context) -> ! {
        hprintln!("idle");

        foo::spawn().ok();

        loop {
            core::hint::spin_loop();
            preempt::exit(0); // Exit QEMU simulator
        }
    }

    #[task(local = [times: u32 = 0])]
    fn foo(cx: foo::Context) {
        *cx.local.times += 1;

        hprintln!(
            "foo called {} time{}",
            *cx.local.times,
            if *cx.local.times > 1 { "s" } else { "" }
        );
    }
}
pub(crate) use app::run;
