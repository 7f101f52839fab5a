//! The thesis's Listing 2 (§6.2.2, contended resource unlocking): task1 (priority 2) locks
//! the shared resource, spawns task2 (priority 1) and sleeps 20 µs inside the lock so that
//! task2 runs and blocks on it; then task1 unlocks (a contended unlock: the kernel hands the
//! PI futex to task2) and measures how long the unlock took.
//!
//! Changes to the listing: the crate path, the completion of the parts the thesis left out
//! (`init`, the resource structs), the sample count can be lowered with
//! `PREEMPT_EXAMPLE_SAMPLES` (default 50 000, as in the thesis), and the app prints the
//! resource's final value and exits.
//!
//! Run it pinned to one CPU, where the peer crate livelocks:
//!
//! ```sh
//! cargo build --release -p preempt --example listing2_contended_unlock
//! taskset -c 0 target/release/examples/listing2_contended_unlock
//! ```

#[preempt::app]
mod app {
    #[shared]
    struct Shared {
        a: u32,
    }

    #[local]
    struct Local {
        samples: u32,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        task1::spawn(0).unwrap();
        (
            Shared { a: 0 },
            Local {
                samples: super::samples(),
            },
            init::Monotonics(),
        )
    }

    #[task(priority = 2, shared = [a], local = [release_time: Duration = Duration::ZERO, samples])]
    fn task1(mut cx: task1::Context, x: u32) {
        let samples = *cx.local.samples;
        let start = cx.shared.a.lock(|a| {
            *a += 1;

            if x < samples {
                task2::spawn(x + 1).unwrap();
            } else {
                preempt::rt_safety::allow(|| {
                    println!("Release time: {:?}", *cx.local.release_time / samples)
                });
                preempt::rt_safety::allow(|| println!("a = {a} after {samples} samples"));
                preempt::exit(0);
            }

            // Sleep so that task2 is able to run and block on the shared resource.
            preempt::rt_safety::allow(|| super::sleep(Duration::from_micros(20)));
            Instant::now()
        });
        *cx.local.release_time += start.elapsed();
    }

    #[task(priority = 1, shared = [a])]
    fn task2(mut cx: task2::Context, x: u32) {
        cx.shared.a.lock(|a| {
            *a += 1;
        });
        task1::spawn(x).unwrap();
    }
}

/// The thesis sleeps with `std::thread::sleep` inside the lock: a relative sleep is exactly
/// what this benchmark wants (it only has to outlast task2's wake-up).
#[allow(
    clippy::disallowed_methods,
    reason = "the benchmark's deliberate relative sleep"
)]
fn sleep(duration: std::time::Duration) {
    std::thread::sleep(duration);
}

/// 50 000, as in the thesis, unless `PREEMPT_EXAMPLE_SAMPLES` says otherwise.
fn samples() -> u32 {
    std::env::var("PREEMPT_EXAMPLE_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(50_000)
}
