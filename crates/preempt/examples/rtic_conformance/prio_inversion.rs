//! RTIC v2's `examples/lm3s6965/examples/prio-inversion.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device`/`dispatchers` arguments, semihosting print and exit.

//!
//! Here we test to make sure we don't have priority inversion.

use preempt::app;

// t1 p1 use b, a
// t2 p2 use a
// t3 p3
// t4 p4 use b
//
// so t1 start , take b take a, pend t3
// t3 should not start
// try to see if it starts, IT SHOULD NOT

#[app(main = false)]
mod app {

    #[shared]
    struct Shared {
        a: u32,
        b: u32,
    }

    #[local]
    struct Local {}

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        foo::spawn().unwrap();

        (Shared { a: 0, b: 0 }, Local {})
    }

    #[task(priority = 1, shared = [a, b])]
    async fn foo(cx: foo::Context) {
        let foo::SharedResources { mut a, mut b, .. } = cx.shared;

        hprintln!("foo - start");

        // basepri = 0
        b.lock(|b| {
            // basepri = max(basepri = 0, ceil(b) = 4) = 4
            a.lock(|a| {
                // basepri = max(basepri = 4, ceil(a) = 2) = 4

                hprintln!("pre baz spawn {} {}", a, b);

                // This spawn should be blocked as prio(baz) = 3
                baz::spawn().unwrap();

                hprintln!("post baz spawn {} {}", a, b);
            });
            // basepri = 4
        });
        // basepri = 0

        hprintln!("foo - end");
        preempt::exit(0); // Exit QEMU simulator
    }

    #[task(priority = 2, shared = [a])]
    async fn bar(_: bar::Context) {
        hprintln!(" bar");
    }

    #[task(priority = 3)]
    async fn baz(_: baz::Context) {
        hprintln!(" baz - start");
        hprintln!(" baz - end");
    }

    #[task(priority = 4, shared = [b])]
    async fn pow(_: pow::Context) {
        hprintln!(" pow - start");
        hprintln!(" pow - end");
    }
}
pub(crate) use app::run;
