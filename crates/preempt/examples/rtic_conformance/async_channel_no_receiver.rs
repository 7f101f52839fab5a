//! RTIC v2's `examples/lm3s6965/examples/async-channel-no-receiver.rs`, ported by hand for
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
        let (s, _r) = make_channel!(u32, CAPACITY);

        sender1::spawn(s.clone()).unwrap();

        (Shared {}, Local {})
    }

    #[task]
    async fn sender1(_c: sender1::Context, mut sender: Sender<'static, u32, CAPACITY>) {
        let sent = sender.send(1).await;
        hprintln!("Sender 1 sending: 1 {:?}", sent);
        preempt::exit(0); // Exit QEMU simulator
    }
}
pub(crate) use app::run;
