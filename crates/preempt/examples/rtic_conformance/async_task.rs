//! RTIC v2's `examples/lm3s6965/examples/async-task.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device`/`dispatchers`/`peripherals` arguments, semihosting print and exit, `asm::wfi`; interrupt-bound hardware tasks (`binds = UARTn`) become software tasks and `rtic::pend(Interrupt::UARTn)` becomes a spawn (preempt binds hardware tasks to fds, not interrupts); `hw_task` is never spawned, as UART1 is never pended.

// NOTES:
//
// - Async tasks cannot have `#[lock_free]` resources, as they can interleave and each async
//   task can have a mutable reference stored.
// - Spawning an async task equates to it being polled once.

#[preempt::app(main = false)]
mod app {

    #[shared]
    struct Shared {
        a: u32,
    }

    #[local]
    struct Local {}

    #[init]
    fn init(_cx: init::Context) -> (Shared, Local) {
        hprintln!("init");

        async_task::spawn().unwrap();
        async_task_args::spawn(1, 2).unwrap();
        async_task2::spawn().unwrap();

        (Shared { a: 0 }, Local {})
    }

    #[idle(shared = [a])]
    fn idle(_: idle::Context) -> ! {
        loop {
            hprintln!("idle");
            preempt::exit(0);
            core::hint::spin_loop();
        }
    }

    #[task(shared = [a])]
    fn hw_task(cx: hw_task::Context) {
        let hw_task::SharedResources { a: _, .. } = cx.shared;
        hprintln!("hello from hw");
    }

    #[task(shared = [a], priority = 1)]
    async fn async_task(cx: async_task::Context) {
        let async_task::SharedResources { a: _, .. } = cx.shared;
        hprintln!("hello from async");
    }

    #[task(priority = 1)]
    async fn async_task_args(_cx: async_task_args::Context, a: u32, b: i32) {
        hprintln!("hello from async with args a: {}, b: {}", a, b);
    }

    #[task(priority = 2, shared = [a])]
    async fn async_task2(cx: async_task2::Context) {
        let async_task2::SharedResources { a: _, .. } = cx.shared;
        hprintln!("hello from async2");
    }
}
pub(crate) use app::run;
