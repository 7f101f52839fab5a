//! The thesis's Listing 1 (task switching benchmark): two tasks of equal priority exchange a
//! counter through spawns, 10 million times, then print the elapsed time.
//!
//! Changes to the listing: the crate path (`preempt::app`), the iteration count can be
//! lowered with `PREEMPT_EXAMPLE_ITERATIONS` (for the tests), and the app exits after
//! printing (an RTIC app on a microcontroller never ends; a Linux process should).
//!
//! ```sh
//! cargo run --release -p preempt --example listing1_same_priority
//! ```

#[preempt::app]
mod app {
    #[local]
    struct Local {
        start: Instant,
        iterations: i32,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        task1::spawn(0).unwrap();
        (
            Shared {},
            Local {
                start: Instant::now(),
                iterations: super::iterations(),
            },
            init::Monotonics(),
        )
    }

    #[task(priority = 1)]
    fn task1(_cx: task1::Context, x: i32) {
        task2::spawn(x + 1).unwrap();
    }

    #[task(priority = 1, local = [start, iterations])]
    fn task2(cx: task2::Context, x: i32) {
        if x < *cx.local.iterations {
            task1::spawn(x + 1).unwrap();
        } else {
            preempt::rt_safety::allow(|| println!("Time: {:?}", cx.local.start.elapsed()));
            preempt::rt_safety::allow(|| println!("Switches: {x}"));
            preempt::exit(0);
        }
    }
}

/// 10 million, as in the thesis, unless `PREEMPT_EXAMPLE_ITERATIONS` says otherwise.
fn iterations() -> i32 {
    std::env::var("PREEMPT_EXAMPLE_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000)
}
