//! RTIC v2's `examples/lm3s6965/examples/big-struct-opt.rs`, ported by hand for
//! `tests/rtic_conformance.rs`. Original: https://github.com/rtic-rs/rtic (commit 48136831),
//! © the RTIC developers, MIT OR Apache-2.0.
//! Changed (MCU-specific): `device`/`dispatchers` arguments, semihosting print and exit; interrupt-bound hardware tasks (`binds = ..`) become software tasks and `rtic::pend(..)` a spawn (preempt binds hardware tasks to fds, not interrupts); the `unsafe` block gets the `// SAFETY:` comment this workspace's lints require.

//!
//! Example on how to initialize a large struct without needing to copy it via `LateResources`,
//! effectively saving stack space needed for the copies.

/// Some big struct
pub struct BigStruct {
    /// Big content
    pub data: [u8; 2048],
}

impl BigStruct {
    fn new() -> Self {
        BigStruct { data: [22; 2048] }
    }
}

#[preempt::app(main = false)]
mod app {
    use super::BigStruct;
    use core::mem::MaybeUninit;

    #[shared]
    struct Shared {
        big_struct: &'static mut BigStruct,
    }

    #[local]
    struct Local {}

    #[init(local = [bs: MaybeUninit<BigStruct> = MaybeUninit::uninit()])]
    fn init(cx: init::Context) -> (Shared, Local) {
        // SAFETY: `bs` is init's own static, written here before the reference is made.
        let big_struct = unsafe {
            // write directly into the static storage
            cx.local.bs.as_mut_ptr().write(BigStruct::new());
            &mut *cx.local.bs.as_mut_ptr()
        };

        uart0::spawn().ok();
        async_task::spawn().unwrap();
        (
            Shared {
                // assign the reference so we can use the resource
                big_struct,
            },
            Local {},
        )
    }

    #[idle]
    fn idle(_: idle::Context) -> ! {
        loop {
            hprintln!("idle");
            preempt::exit(0);
        }
    }

    #[task(shared = [big_struct])]
    fn uart0(mut cx: uart0::Context) {
        cx.shared
            .big_struct
            .lock(|b| hprintln!("uart0 data:{:?}", &b.data[0..5]));
    }

    #[task(shared = [big_struct], priority = 2)]
    async fn async_task(mut cx: async_task::Context) {
        cx.shared
            .big_struct
            .lock(|b| hprintln!("async_task data:{:?}", &b.data[0..5]));
    }
}
pub(crate) use app::run;
