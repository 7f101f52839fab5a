//! RTIC v2's `examples/lm3s6965/examples/async-watch-uninitialized.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device`/`dispatchers` arguments, semihosting print and exit.

#[preempt::app(main = false)]
mod app {
    use rtic_sync::{make_watch, watch::*};

    #[shared]
    struct Shared {}

    #[local]
    struct Local {}

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        let (_s, r) = make_watch!(u32);

        receiver::spawn(r).unwrap();

        (Shared {}, Local {})
    }

    #[task]
    async fn receiver(_c: receiver::Context, mut receiver: WatchReader<'static, u32>) {
        let val = receiver.try_get();
        hprintln!("Receiver got: {:?}", val);

        preempt::exit(0); // Exit QEMU simulator
    }
}
pub(crate) use app::run;
