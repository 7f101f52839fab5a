//! RTIC v2's `examples/lm3s6965/examples/async-channel-no-sender.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed: the `.await` out of `hprintln!`'s arguments (see main.rs); MCU-specific: `device`/`dispatchers` arguments, semihosting print and exit.

#[preempt::app(main = false)]
mod app {
    use rtic_sync::{channel::*, make_channel};

    #[shared]
    struct Shared {}

    #[local]
    struct Local {}

    const CAPACITY: usize = 1;
    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        let (_s, r) = make_channel!(u32, CAPACITY);

        receiver::spawn(r).unwrap();

        (Shared {}, Local {})
    }

    #[task]
    async fn receiver(_c: receiver::Context, mut receiver: Receiver<'static, u32, CAPACITY>) {
        let got = receiver.recv().await;
        hprintln!("Receiver got: {:?}", got);

        preempt::exit(0); // Exit QEMU simulator
    }
}
pub(crate) use app::run;
