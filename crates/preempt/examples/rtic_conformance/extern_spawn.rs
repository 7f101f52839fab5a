//! RTIC v2's `examples/lm3s6965/examples/extern_spawn.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device`/`dispatchers` arguments, semihosting print and exit; the app is a module of the conformance binary, so `crate::foo` is `super::foo`.

// Free function implementing the spawnable task `foo`.
// Notice, you need to indicate an anonymous lifetime <'a_>
async fn foo(_c: app::foo::Context<'_>) {
    hprintln!("foo");
    preempt::exit(0); // Exit QEMU simulator
}

#[preempt::app(main = false)]
mod app {
    use super::foo;

    #[shared]
    struct Shared {}

    #[local]
    struct Local {}

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        foo::spawn().unwrap();

        (Shared {}, Local {})
    }

    extern "Rust" {
        #[task()]
        async fn foo(_c: foo::Context);
    }
}
pub(crate) use app::run;
