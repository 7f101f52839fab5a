//! futex-queue 0.1.1, send + recv on ONE thread (figure `futex_queue_send_recv`): the queue part
//! of linux-rtic's same-priority task switch (`rtic_switch_same`), without the slab and dispatch.
//!
//! `--iterations` (10 M by default) times: `send` one item, `recv` it back. Each send takes the
//! queue's std `Mutex`, pushes onto a `heapless::BinaryHeap` and swaps the reader-state futex
//! word; each recv takes the Mutex again and pops. The reader never parks (an item is always
//! there), so no syscall is made. Compare with `vecdeque_push_pop`.

use futex_queue::FutexQueue;
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let iterations = preempt_peers::cli::parse_or_exit(
        "--iterations",
        10_000_000,
        "futex-queue 0.1.1: send + recv on one thread (no parking)",
    );
    preempt_peers::sys::require_fifo_or_exit(1);
    if let Err(err) = preempt_peers::sys::set_fifo(1) {
        eprintln!("error: SCHED_FIFO priority 1: {err}");
        std::process::exit(1);
    }
    let (tx, mut rx) = FutexQueue::<u64, 16>::new();
    let mut sum = 0u64;

    let start = Instant::now();
    for i in 0..iterations {
        if tx.send(black_box(i)).is_err() {
            eprintln!("error: send {i} refused although the queue was empty");
            std::process::exit(1);
        }
        sum = sum.wrapping_add(rx.recv().into_value());
    }
    let elapsed = start.elapsed();

    let expected = (0..iterations).fold(0u64, u64::wrapping_add);
    if sum != expected {
        eprintln!("error: received values sum to {sum}, expected {expected}");
        std::process::exit(1);
    }
    preempt_peers::report::print_timing("futex_queue_send_recv", elapsed, iterations);
}
