//! Raw two-thread FUTEX_WAIT / FUTEX_WAKE ping-pong at SCHED_FIFO priorities 1 and 2 (figure
//! `raw_futex_pingpong`, or `raw_futex_pingpong_pinned` under `taskset -c 0`): the kernel floor
//! for a cross-priority task switch, which preempt's `preempt_switch_cross` must stay within
//! 1.1× of (issue 3).
//!
//! One private futex word holds whose turn it is (0 = A at priority 1, 1 = B at priority 2, A
//! starts, as task1 → task2 in the thesis's Listing 1). A player waits (`FUTEX_WAIT`) until the
//! word names it, then stores the other player's number and always calls `FUTEX_WAKE(1)`: the
//! textbook hand-off, without a "is anyone sleeping?" flag. `--iterations` (1 M by default,
//! rounded up to an even number) is the number of one-way hand-offs; the figure is time per
//! hand-off.
//!
//! Pinned to one CPU, A's wake-up of B preempts A at once; B's wake-up of A finds A runnable,
//! not waiting, so a round trip costs two wakes, one wait and two context switches.

use preempt_peers::sys::{futex_wait, futex_wake, set_fifo};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

/// Whose turn it is: the player number of the thread that may hand off next.
static TURN: AtomicU32 = AtomicU32::new(0);

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}

/// Waits for `me`'s turn, then hands the turn to the other player; `passes` times.
fn play(me: u32, passes: u64) {
    for _ in 0..passes {
        wait_for_turn(me);
        TURN.store(1 - me, Ordering::Release);
        if let Err(err) = futex_wake(&TURN, 1) {
            fail(&format!("FUTEX_WAKE: {err}"));
        }
    }
}

fn wait_for_turn(me: u32) {
    loop {
        let turn = TURN.load(Ordering::Acquire);
        if turn == me {
            return;
        }
        if let Err(err) = futex_wait(&TURN, turn) {
            fail(&format!("FUTEX_WAIT: {err}"));
        }
    }
}

fn fifo_or_fail(priority: u8) {
    if let Err(err) = set_fifo(priority) {
        fail(&format!("SCHED_FIFO priority {priority}: {err}"));
    }
}

fn main() {
    let handoffs = preempt_peers::cli::parse_or_exit(
        "--iterations",
        1_000_000,
        "Raw FUTEX_WAIT/FUTEX_WAKE ping-pong between SCHED_FIFO 1 and 2",
    );
    let passes = handoffs.div_ceil(2);
    preempt_peers::sys::require_fifo_or_exit(2);
    let ready = Arc::new(Barrier::new(2));

    let b_ready = Arc::clone(&ready);
    let b = std::thread::spawn(move || {
        fifo_or_fail(2);
        b_ready.wait();
        play(1, passes);
    });

    fifo_or_fail(1);
    ready.wait();
    let start = Instant::now();
    play(0, passes);
    // B's last pass hands the turn back to A: the 2 * passes-th hand-off.
    wait_for_turn(0);
    let elapsed = start.elapsed();
    b.join().expect("thread B panicked");
    preempt_peers::report::print_timing("raw_futex_pingpong", elapsed, 2 * passes);
}
