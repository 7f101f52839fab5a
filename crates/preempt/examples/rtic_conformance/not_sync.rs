//! RTIC v2's `examples/lm3s6965/examples/not-sync.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device`/`dispatchers` arguments, semihosting print and exit; the `unsafe impl` gets the `// SAFETY:` comment this workspace's lints require.

//! `examples/not-sync.rs`

use core::marker::PhantomData;

/// Not sync
pub struct NotSync {
    _0: PhantomData<*const ()>,
    data: u32,
}

// SAFETY: (added for this workspace's lints) `NotSync` holds a `u32` and a marker; only
// `Sync` is withheld, and the tasks that share it only read it.
unsafe impl Send for NotSync {}

#[preempt::app(main = false)]
mod app {
    use super::NotSync;
    use core::marker::PhantomData;

    #[shared]
    struct Shared {
        shared: NotSync,
    }

    #[local]
    struct Local {}

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        hprintln!("init");

        foo::spawn().unwrap();
        bar::spawn().unwrap();
        (
            Shared {
                shared: NotSync {
                    _0: PhantomData,
                    data: 13,
                },
            },
            Local {},
        )
    }

    #[idle]
    fn idle(_: idle::Context) -> ! {
        preempt::exit(0); // Exit QEMU simulator
        loop {}
    }

    #[task(shared = [&shared], priority = 1)]
    async fn foo(c: foo::Context) {
        let shared: &NotSync = c.shared.shared;
        hprintln!("foo a {}", shared.data);
    }

    #[task(shared = [&shared], priority = 1)]
    async fn bar(c: bar::Context) {
        let shared: &NotSync = c.shared.shared;
        hprintln!("bar a {}", shared.data);
    }
}
pub(crate) use app::run;
