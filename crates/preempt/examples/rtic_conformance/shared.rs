//! RTIC v2's `examples/lm3s6965/examples/shared.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device` argument, semihosting print and exit; interrupt-bound hardware tasks (`binds = UARTn`) become software tasks and `rtic::pend(Interrupt::UARTn)` becomes a spawn (preempt binds hardware tasks to fds, not interrupts);

#[preempt::app(main = false)]
mod app {
    use heapless::spsc::{Consumer, Producer, Queue};

    #[shared]
    struct Shared {
        p: Producer<'static, u32, 5>,
        c: Consumer<'static, u32, 5>,
    }

    #[local]
    struct Local {}

    #[init(local = [q: Queue<u32, 5> = Queue::new()])]
    fn init(cx: init::Context) -> (Shared, Local) {
        let (p, c) = cx.local.q.split();

        // Initialization of shared resources
        (Shared { p, c }, Local {})
    }

    #[idle(shared = [c])]
    fn idle(mut c: idle::Context) -> ! {
        loop {
            if let Some(byte) = c.shared.c.lock(|c| c.dequeue()) {
                hprintln!("received message: {}", byte);

                preempt::exit(0); // Exit QEMU simulator
            } else {
                uart0::spawn().ok();
            }
        }
    }

    #[task(shared = [p])]
    fn uart0(mut c: uart0::Context) {
        c.shared.p.lock(|p| p.enqueue(42).unwrap());
    }
}
pub(crate) use app::run;
