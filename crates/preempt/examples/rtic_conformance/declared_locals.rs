//! RTIC v2's `examples/lm3s6965/examples/declared_locals.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device` argument, semihosting exit; interrupt-bound hardware tasks (`binds = UARTn`) become software tasks and `rtic::pend(Interrupt::UARTn)` becomes a spawn (preempt binds hardware tasks to fds, not interrupts); the task is never spawned, as UART0 is never pended.

#[preempt::app(main = false)]
mod app {

    #[shared]
    struct Shared {}

    #[local]
    struct Local {}

    #[init(local = [a: u32 = 0])]
    fn init(cx: init::Context) -> (Shared, Local) {
        // Locals in `#[init]` have 'static lifetime
        let _a: &'static mut u32 = cx.local.a;

        preempt::exit(0); // Exit QEMU simulator

        (Shared {}, Local {})
    }

    #[idle(local = [a: u32 = 0])]
    fn idle(cx: idle::Context) -> ! {
        // Locals in `#[idle]` have 'static lifetime
        let _a: &'static mut u32 = cx.local.a;

        loop {}
    }

    #[task(local = [a: u32 = 0])]
    fn foo(cx: foo::Context) {
        // Locals in `#[task]`s have a local lifetime
        let _a: &mut u32 = cx.local.a;

        // error: explicit lifetime required in the type of `cx`
        // let _a: &'static mut u32 = cx.local.a;
    }
}
pub(crate) use app::run;
