//! RTIC v2's `examples/lm3s6965/examples/spawn_local.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device`/`dispatchers` arguments, semihosting print and exit.

#[preempt::app(main = false)]
mod app {
    use super::*;

    #[shared]
    struct Shared {}

    #[local]
    struct Local {}

    #[init]
    fn init(_cx: init::Context) -> (Shared, Local) {
        task1::spawn().unwrap();
        //task2::spawn(Default::default()).ok(); <--- This is rejected since it is a local task
        (Shared {}, Local {})
    }

    #[task(priority = 1)]
    async fn task1(cx: task1::Context) {
        hprintln!("Hello from task1!");
        cx.local_spawner.task2(Default::default()).unwrap();
    }

    #[task(local_task = true, priority = 1)]
    async fn task2(_cx: task2::Context, _nsns: NotSendNotSync) {
        hprintln!("Hello from task2!");
        preempt::exit(0); // Exit QEMU simulator
    }
}

/// A type that cannot cross thread boundaries.
#[derive(Default, Debug)]
struct NotSendNotSync(core::marker::PhantomData<*mut u8>);
pub(crate) use app::run;
