//! The thesis's Listing 1 on linux-rtic 0.1.1, both tasks at the SAME priority (figure
//! `rtic_switch_same`): two tasks spawn each other `--iterations` times (10 M by default) on one
//! executor thread, so the figure is linux-rtic's own per-spawn cost (futex-queue send + recv
//! under a std Mutex, slab, dispatch) with no kernel context switch.
//!
//! Changes from the listing, all outside the timed work: the count comes from `--iterations`
//! (carried in a local resource), the result is printed as a `figure=` line plus the process's
//! `VmHWM`, and the process exits (linux-rtic's `main` otherwise parks until Ctrl-C). Timing
//! starts in `init`, as in the listing, so it includes the executor thread's start-up
//! (tens of µs, under 0.01 ns per switch at 1 M switches).

// linux-rtic's `#[rtic::app]` expands to undocumented items and tests `feature = "profiling"`
// of THIS crate; neither is ours to fix.
#![allow(missing_docs, unexpected_cfgs)]

#[rtic::app]
mod app {
    use std::time::Instant;

    #[shared]
    struct Shared {}

    #[local]
    struct Local {
        start: Instant,
        iterations: u64,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        let iterations = preempt_peers::cli::parse_or_exit(
            "--iterations",
            10_000_000,
            "Listing 1 (thesis §6.2.1) on linux-rtic 0.1.1, both tasks at priority 1",
        );
        preempt_peers::sys::require_fifo_or_exit(1);
        task1::spawn(0).unwrap();
        (
            Shared {},
            Local {
                start: Instant::now(),
                iterations,
            },
            init::Monotonics(),
        )
    }

    #[task(priority = 1)]
    fn task1(_cx: task1::Context, x: u64) {
        task2::spawn(x + 1).unwrap();
    }

    #[task(priority = 1, local = [start, iterations])]
    fn task2(cx: task2::Context, x: u64) {
        if x < *cx.local.iterations {
            task1::spawn(x + 1).unwrap();
        } else {
            // x spawns happened, each one a task switch.
            preempt_peers::report::print_timing("rtic_switch_same", cx.local.start.elapsed(), x);
            preempt_peers::report::print_vmhwm("rtic_switch_same");
            std::process::exit(0);
        }
    }
}
