//! RTIC v2's `examples/lm3s6965/examples/generics.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device` argument, semihosting print and exit, `asm::nop`, `rtic::Mutex` is `preempt::Mutex`; interrupt-bound hardware tasks (`binds = ..`) become software tasks and `rtic::pend(..)` a spawn (preempt binds hardware tasks to fds, not interrupts);

use preempt::Mutex;

#[preempt::app(main = false)]
mod app {

    #[shared]
    struct Shared {
        shared: u32,
    }

    #[local]
    struct Local {}

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        uart0::spawn().ok();
        uart1::spawn().ok();

        (Shared { shared: 0 }, Local {})
    }

    #[task(shared = [shared], local = [state: u32 = 0])]
    fn uart0(c: uart0::Context) {
        hprintln!("UART0(STATE = {})", *c.local.state);

        // second argument has type `shared::shared`
        super::advance(c.local.state, c.shared.shared);

        uart1::spawn().ok();

        core::hint::spin_loop();
        preempt::exit(0); // Exit QEMU simulator
    }

    #[task(priority = 2, shared = [shared], local = [state: u32 = 0])]
    fn uart1(c: uart1::Context) {
        hprintln!("UART1(STATE = {})", *c.local.state);

        // second argument has type `shared::shared`
        super::advance(c.local.state, c.shared.shared);
    }
}

// the second parameter is generic: it can be any type that implements the `Mutex` trait
fn advance(state: &mut u32, mut shared: impl Mutex<T = u32>) {
    *state += 1;

    let (old, new) = shared.lock(|shared: &mut u32| {
        let old = *shared;
        *shared += *state;
        (old, *shared)
    });

    hprintln!("shared: {} -> {}", old, new);
}
pub(crate) use app::run;
