//! The thesis's Listing 1 on linux-rtic 0.1.1 with the two tasks at DIFFERENT priorities
//! (figure `rtic_switch_cross`; `rtic_switch_cross_pinned` under `taskset -c 0`): task1
//! (priority 1) and task2 (priority 2) spawn each other `--iterations` times (10 M by default)
//! across two SCHED_FIFO executor threads, so every spawn is a futex wake-up plus a kernel
//! context switch. The raw floor for the same hand-off is `raw_futex_pingpong`.
//!
//! Changes from the listing, all outside the timed work: the count comes from `--iterations`
//! (carried in a local resource), the result is printed as a `figure=` line plus the process's
//! `VmHWM`, and the process exits (linux-rtic's `main` otherwise parks until Ctrl-C). Timing
//! starts in `init`, as in the listing, so it includes the executor threads' start-up
//! (well under 1 ns per switch at 100 k switches).

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
            "Listing 1 (thesis §6.2.1) on linux-rtic 0.1.1, task1 at priority 1, task2 at priority 2",
        );
        preempt_peers::sys::require_fifo_or_exit(2);
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

    #[task(priority = 2, local = [start, iterations])]
    fn task2(cx: task2::Context, x: u64) {
        if x < *cx.local.iterations {
            task1::spawn(x + 1).unwrap();
        } else {
            // x spawns happened, each one a task switch.
            preempt_peers::report::print_timing("rtic_switch_cross", cx.local.start.elapsed(), x);
            preempt_peers::report::print_vmhwm("rtic_switch_cross");
            std::process::exit(0);
        }
    }
}
