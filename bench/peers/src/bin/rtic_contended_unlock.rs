//! The thesis's Listing 2 on linux-rtic 0.1.1 (figure `rtic_contended_unlock`): the time to
//! unlock a pcp-mutex resource while a lower-priority task is blocked on it, averaged over
//! `--samples` contended unlocks (50 000 by default, as in the thesis).
//!
//! task1 (priority 2) locks `a`, spawns task2 (priority 1) and sleeps 20 µs inside the lock so
//! task2 can run and block in `FUTEX_LOCK_PI`; it then reads the clock, unlocks, and adds the
//! elapsed time. The figure therefore includes one clock read, exactly like the listing and like
//! the `raw_unlock_pi` baseline.
//!
//! Known peer defect this binary reproduces (issue 3): pinned to one CPU (`taskset -c 0`) it
//! often never finishes. `bench/peers/repro.sh` runs it under a timeout and counts the hangs.
//!
//! Changes from the listing, all outside the timed region: the sample count comes from
//! `--samples`, the result is a `figure=` line, and the process exits.

// linux-rtic's `#[rtic::app]` expands to undocumented items and tests `feature = "profiling"`
// of THIS crate; neither is ours to fix.
#![allow(missing_docs, unexpected_cfgs)]

#[rtic::app]
mod app {
    use std::time::{Duration, Instant};

    #[shared]
    struct Shared {
        a: u32,
    }

    #[local]
    struct Local {
        release_time: Duration,
        samples: u32,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        let samples = preempt_peers::cli::parse_or_exit(
            "--samples",
            50_000,
            "Listing 2 (thesis §6.2.2) on linux-rtic 0.1.1: contended unlock of a pcp-mutex resource",
        );
        let Ok(samples) = u32::try_from(samples) else {
            eprintln!(
                "error: `--samples {samples}` is too large; at most {}",
                u32::MAX - 1
            );
            std::process::exit(2);
        };
        preempt_peers::sys::require_fifo_or_exit(2);
        task1::spawn(0).unwrap();
        (
            Shared { a: 0 },
            Local {
                release_time: Duration::ZERO,
                samples,
            },
            init::Monotonics(),
        )
    }

    #[task(priority = 2, shared = [a], local = [release_time, samples])]
    fn task1(mut cx: task1::Context, x: u32) {
        let samples = *cx.local.samples;
        let release_time = *cx.local.release_time;
        let start = cx.shared.a.lock(|a| {
            *a += 1;

            if x < samples {
                task2::spawn(x + 1).unwrap();
            } else {
                // task1(0..samples) each made one contended unlock: `samples` of them.
                preempt_peers::report::print_timing(
                    "rtic_contended_unlock",
                    release_time,
                    u64::from(samples),
                );
                // Both tasks incremented `a` once per sample, plus this call's increment.
                // (No assert!: a panic in a linux-rtic task kills its thread and hangs the app.)
                let expected = 2 * samples + 1;
                if *a != expected {
                    eprintln!(
                        "error: a = {}, expected {expected}: the lock lost an update",
                        *a
                    );
                    std::process::exit(1);
                }
                std::process::exit(0);
            }

            // Sleep so that task2 is able to run and block on the shared resource.
            #[allow(
                clippy::disallowed_methods,
                reason = "the thesis's Listing 2, verbatim"
            )]
            std::thread::sleep(Duration::from_micros(20));
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
