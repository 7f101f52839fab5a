//! Raw `VecDeque` push_back + pop_front (figure `vecdeque_push_pop`): the floor for a
//! same-priority spawn that only has to queue a message for its own executor.
//!
//! `--iterations` (100 M by default) pairs on a pre-sized deque of `u64`, each value passed
//! through `black_box` so the pair is not folded away; the loop is timed once. It runs at
//! SCHED_FIFO 1 like every other figure when allowed (otherwise a busy machine time-slices it
//! and the figure doubles), and with a warning under the normal policy when not.

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let iterations = preempt_peers::cli::parse_or_exit(
        "--iterations",
        100_000_000,
        "Raw VecDeque push_back + pop_front",
    );
    if let Err(err) = preempt_peers::sys::set_fifo(1) {
        eprintln!("warning: running under the normal policy, not SCHED_FIFO 1 ({err}): other load will inflate the figure");
    }
    let mut queue: VecDeque<u64> = VecDeque::with_capacity(16);
    let mut sum = 0u64;

    let start = Instant::now();
    for i in 0..iterations {
        black_box(&mut queue).push_back(black_box(i));
        sum = sum.wrapping_add(black_box(&mut queue).pop_front().unwrap_or(u64::MAX));
    }
    let elapsed = start.elapsed();

    // Every pop returned the value just pushed: the sum is 0 + 1 + … + (iterations - 1).
    let expected = (0..iterations).fold(0u64, u64::wrapping_add);
    if sum != expected {
        eprintln!("error: popped values sum to {sum}, expected {expected}");
        std::process::exit(1);
    }
    preempt_peers::report::print_timing("vecdeque_push_pop", elapsed, iterations);
}
