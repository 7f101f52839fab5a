//! The thesis's listings compile with only the crate path changed (Listing 1 verbatim;
//! Appendix A without its Cortex-M `device`/`dispatchers`, with `1.seconds()` as
//! `Duration::from_secs(1)` and `mut cx` where it locks: `lock` takes `&mut self`), and their generated spawn functions have RTIC's signatures.

#![allow(dead_code, unused_variables, reason = "verbatim thesis listings")]

mod listing1 {
    #[preempt::app]
    pub(crate) mod app {
        #[local]
        struct Local {
            start: Instant,
        }

        #[init]
        fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
            task1::spawn(0).unwrap();
            (
                Shared {},
                Local {
                    start: Instant::now(),
                },
                init::Monotonics(),
            )
        }

        #[task(priority = 1)]
        fn task1(_cx: task1::Context, x: i32) {
            task2::spawn(x + 1).unwrap();
        }

        #[task(priority = 1, local = [start])]
        fn task2(cx: task2::Context, x: i32) {
            if x < 10_000_000 {
                task1::spawn(x + 1).unwrap();
            } else {
                println!("Time: {:?}", cx.local.start.elapsed());
            }
        }
    }
}

mod appendix_a {
    #[preempt::app]
    pub(crate) mod app {
        #[shared]
        struct Shared {
            counter: u32,
        }

        #[local]
        struct Local {}

        #[init]
        fn init(cx: init::Context) -> (Shared, Local, init::Monotonics) {
            foo::spawn_after(Duration::from_secs(1)).unwrap();

            (Shared { counter: 0 }, Local {}, init::Monotonics())
        }

        #[task(priority = 10, shared = [counter], local = [counter: u32 = 0])]
        fn foo(mut cx: foo::Context) {
            println!("counter: {}", *cx.local.counter);
            // Access to local resource is lock-free
            *cx.local.counter += 1;

            // Access to shared resource requires locking
            cx.shared.counter.lock(|counter| {
                // Set shared counter to equal local counter
                *counter = *cx.local.counter;
            });

            // Spawn task instantly (with argument)
            bar::spawn(*cx.local.counter).unwrap();

            // Periodic every 1 second
            foo::spawn_after(Duration::from_secs(1)).unwrap();
        }

        #[task(priority = 15, shared = [counter])]
        fn bar(mut cx: bar::Context, counter: u32) {
            // Print value passed as an argument
            println!("counter arg: {}", counter);

            // Print value from shared resource
            cx.shared.counter.lock(|counter| {
                println!("counter shared: {}", counter);
            });
        }
    }
}

#[test]
fn generated_spawn_functions_have_rtic_signatures() {
    let spawn: fn(i32) -> Result<(), i32> = listing1::app::task1::spawn;
    let after: fn(preempt::Duration, u32) -> Result<(), u32> = appendix_a::app::bar::spawn_after;
    let at: fn(preempt::Instant) -> Result<(), ()> = appendix_a::app::foo::spawn_at;
    // The functions exist with these types; calling them outside a running app would only
    // queue messages, so the test checks the types and that the run entry points exist.
    let runs: [fn() -> i32; 2] = [listing1::app::run, appendix_a::app::run];
    assert_eq!(runs.len(), 2);
    assert_ne!(spawn as usize, 0);
    assert_ne!(after as usize, 0);
    assert_ne!(at as usize, 0);
}
