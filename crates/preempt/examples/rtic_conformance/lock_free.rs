//! RTIC v2's `examples/lm3s6965/examples/lock-free.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device` argument, semihosting print and exit; interrupt-bound hardware tasks (`binds = UARTn`) become software tasks and `rtic::pend(Interrupt::UARTn)` becomes a spawn (preempt binds hardware tasks to fds, not interrupts);

#[preempt::app(main = false)]
mod app {

    #[shared]
    struct Shared {
        #[lock_free] // <- lock-free shared resource
        counter: u64,
    }

    #[local]
    struct Local {}

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        foo::spawn().ok();

        (Shared { counter: 0 }, Local {})
    }

    #[task(shared = [counter])] // <- same priority
    fn foo(c: foo::Context) {
        bar::spawn().ok();

        *c.shared.counter += 1; // <- no lock API required
        let counter = *c.shared.counter;
        hprintln!("  foo = {}", counter);
    }

    #[task(shared = [counter])] // <- same priority
    fn bar(c: bar::Context) {
        foo::spawn().ok();
        *c.shared.counter += 1; // <- no lock API required
        let counter = *c.shared.counter;
        hprintln!("  bar = {}", counter);

        preempt::exit(0); // Exit QEMU simulator
    }
}
pub(crate) use app::run;
