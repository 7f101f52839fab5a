//! RTIC v2's `examples/lm3s6965/examples/complex.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device` argument, semihosting print and exit, `asm::nop`; interrupt-bound hardware tasks (`binds = ..`) become software tasks and `rtic::pend(..)` a spawn (preempt binds hardware tasks to fds, not interrupts);

#[preempt::app(main = false)]
mod app {

    #[shared]
    struct Shared {
        s2: u32, // shared with ceiling 2
        s3: u32, // shared with ceiling 3
        s4: u32, // shared with ceiling 4
    }

    #[local]
    struct Local {}

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        println!("init");

        (
            Shared {
                s2: 0,
                s3: 0,
                s4: 0,
            },
            Local {},
        )
    }

    #[idle(shared = [s2, s3])]
    fn idle(mut cx: idle::Context) -> ! {
        println!("idle p0 started");
        t2::spawn().ok();
        cx.shared.s3.lock(|s| {
            println!("idle enter lock s3 {}", s);
            println!("idle pend t0");
            t0::spawn().ok(); // t0 p2, with shared ceiling 3
            println!("idle pend t1");
            t1::spawn().ok(); // t1 p3, with shared ceiling 3
            println!("idle pend t2");
            t2::spawn().ok(); // t2 p4, no sharing
            println!("idle still in lock s3 {}", s);
        });
        println!("\nback in idle");

        cx.shared.s2.lock(|s| {
            println!("enter lock s2 {}", s);
            println!("idle pend t0");
            t0::spawn().ok(); // t0 p2, with shared ceiling 2
            println!("idle pend t1");
            t1::spawn().ok(); // t1 p3, no sharing
            println!("idle pend t2");
            t2::spawn().ok(); // t2 p4, no sharing
            println!("idle still in lock s2 {}", s);
        });
        println!("\nidle exit");

        preempt::exit(0); // Exit QEMU simulator

        loop {
            core::hint::spin_loop();
        }
    }

    #[task(priority = 2, local = [times: u32 = 0], shared = [s2, s3])]
    fn t0(cx: t0::Context) {
        // Safe access to local `static mut` variable
        *cx.local.times += 1;

        println!(
            "t0 p2 called {} time{}",
            *cx.local.times,
            if *cx.local.times > 1 { "s" } else { "" }
        );
        println!("t0 p2 exit");
    }

    #[task(priority = 3, local = [times: u32 = 0], shared = [s3, s4])]
    fn t1(mut cx: t1::Context) {
        // Safe access to local `static mut` variable
        *cx.local.times += 1;

        println!(
            "t1 p3 called {} time{}",
            *cx.local.times,
            if *cx.local.times > 1 { "s" } else { "" }
        );

        cx.shared.s4.lock(|s| {
            println!("t1 enter lock s4 {}", s);
            println!("t1 pend t0");
            t0::spawn().ok(); // t0 p2, with shared ceiling 2
            println!("t1 pend t2");
            t2::spawn().ok(); // t2 p4, no sharing
            println!("t1 still in lock s4 {}", s);
        });

        println!("t1 p3 exit");
    }

    #[task(priority = 4, local = [times: u32 = 0], shared = [s4])]
    fn t2(mut cx: t2::Context) {
        // Safe access to local `static mut` variable
        *cx.local.times += 1;

        println!(
            "t2 p4 called {} time{}",
            *cx.local.times,
            if *cx.local.times > 1 { "s" } else { "" }
        );

        cx.shared.s4.lock(|s| {
            println!("enter lock s4 {}", s);
            *s += 1;
        });
        println!("t3 p4 exit");
    }
}
pub(crate) use app::run;
