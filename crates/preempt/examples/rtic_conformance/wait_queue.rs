//! RTIC v2's `examples/lm3s6965/examples/wait-queue.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device`/`dispatchers` arguments, the systick monotonic set-up (`systick_monotonic!`, `Mono::start`, its prelude import: preempt's `Mono` runs on CLOCK_MONOTONIC and is in the app's prelude), semihosting print and exit.

#[preempt::app(main = false)]
mod app {
    use rtic_common::wait_queue::WaitQueue;

    #[shared]
    struct Shared {
        count: u32,
    }

    #[local]
    struct Local {}

    #[init(local = [wait_queue: WaitQueue = WaitQueue::new()])]
    fn init(cx: init::Context) -> (Shared, Local) {
        incrementer::spawn(cx.local.wait_queue).ok().unwrap();
        waiter::spawn(cx.local.wait_queue).ok().unwrap();

        let count = 0;

        (Shared { count }, Local {})
    }

    #[task(shared = [count])]
    async fn incrementer(mut c: incrementer::Context, wait_queue: &'static WaitQueue) {
        loop {
            hprintln!("Inc");

            c.shared.count.lock(|c| *c += 1);

            while let Some(waker) = wait_queue.pop() {
                waker.wake();
            }

            Mono::delay(10.millis()).await;
        }
    }

    #[task(shared = [count])]
    async fn waiter(mut c: waiter::Context, wait_queue: &'static WaitQueue) {
        let value = wait_queue
            .wait_until(|| c.shared.count.lock(|c| (*c >= 3).then_some(*c)))
            .await;

        hprintln!("Got {}", value);

        preempt::exit(0); // Exit QEMU simulator
    }
}
pub(crate) use app::run;
