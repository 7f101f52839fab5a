//! RTIC v2's `examples/lm3s6965/examples/static-resources-in-divergent.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device`/`dispatchers` arguments, the systick monotonic set-up (`systick_monotonic!`, `Mono::start` (so `cx` is unused: `_cx`), its prelude import and the `use super::*` that reached it: preempt's `Mono` runs on CLOCK_MONOTONIC and is in the app's prelude), semihosting print and exit.

#[preempt::app(main = false)]
mod app {

    use rtic_sync::channel::{Channel, Receiver};

    #[shared]
    struct Shared {}

    #[local]
    struct Local {}

    #[init]
    fn init(_cx: init::Context) -> (Shared, Local) {
        divergent::spawn().ok();

        (Shared {}, Local {})
    }

    #[task(local = [q: Channel<u32, 5> = Channel::new()], priority = 1)]
    async fn divergent(cx: divergent::Context) -> ! {
        // `q` has `'static` lifetime. You can put references to it in `static` variables,
        // structs with references to `q` do not need a generic lifetime parameter, etc.

        let (mut tx, rx) = cx.local.q.split();
        let mut state = 0;

        bar::spawn(rx).unwrap();

        loop {
            tx.send(state).await.unwrap();
            state += 1;
            Mono::delay(100.millis()).await;
        }
    }

    #[task(priority = 1)]
    async fn bar(_cx: bar::Context, mut rx: Receiver<'static, u32, 5>) -> ! {
        loop {
            // Lock-free access to the same underlying queue!
            if let Some(data) = rx.recv().await.ok() {
                hprintln!("received message: {}", data);

                if data == 3 {
                    preempt::exit(0); // Exit QEMU simulator
                } else {
                    Mono::delay(100.millis()).await;
                }
            }
        }
    }
}
pub(crate) use app::run;
