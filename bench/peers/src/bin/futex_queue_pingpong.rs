//! futex-queue 0.1.1, two-thread ping-pong at SCHED_FIFO priorities 1 and 2 (figure
//! `futex_queue_pingpong`, or `futex_queue_pingpong_pinned` under `taskset -c 0`): linux-rtic's
//! cross-priority task switch (`rtic_switch_cross`) with only the queues left.
//!
//! Thread A (priority 1) sends a counter to thread B's queue and waits on its own; B (priority
//! 2) receives it and sends it back incremented. `--iterations` (1 M by default, rounded up to
//! an even number) is the number of one-way hand-offs; the figure is time per hand-off, the
//! same unit as `raw_futex_pingpong` and `rtic_switch_cross`.
//!
//! A failure in either thread ends the process at once (exit 1): the other thread would
//! otherwise wait forever for a message that never comes.

use futex_queue::FutexQueue;
use std::sync::{Arc, Barrier};
use std::time::Instant;

/// Tells thread B to stop; never a real counter value (the counter stays below 2^63).
const STOP: u64 = u64::MAX;

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}

fn fifo_or_fail(priority: u8) {
    if let Err(err) = preempt_peers::sys::set_fifo(priority) {
        fail(&format!("SCHED_FIFO priority {priority}: {err}"));
    }
}

fn main() {
    let handoffs = preempt_peers::cli::parse_or_exit(
        "--iterations",
        1_000_000,
        "futex-queue 0.1.1: two-thread send/recv ping-pong, SCHED_FIFO 1 and 2",
    );
    let rounds = handoffs.div_ceil(2);
    preempt_peers::sys::require_fifo_or_exit(2);

    let (to_b, mut b_inbox) = FutexQueue::<u64, 4>::new();
    let (to_a, mut a_inbox) = FutexQueue::<u64, 4>::new();
    let ready = Arc::new(Barrier::new(2));

    let b_ready = Arc::clone(&ready);
    let b = std::thread::spawn(move || {
        fifo_or_fail(2);
        b_ready.wait();
        let mut echoed = 0u64;
        loop {
            let value = b_inbox.recv().into_value();
            if value == STOP {
                return echoed;
            }
            if to_a.send(value + 1).is_err() {
                fail("B: A's queue is full");
            }
            echoed += 1;
        }
    });

    fifo_or_fail(1);
    ready.wait();
    let start = Instant::now();
    let mut value = 0u64;
    for _ in 0..rounds {
        if to_b.send(value).is_err() {
            fail("A: B's queue is full");
        }
        value = a_inbox.recv().into_value();
    }
    let elapsed = start.elapsed();
    if to_b.send(STOP).is_err() {
        fail("A: B's queue is full");
    }
    let echoed = b.join().expect("thread B panicked");
    if value != rounds || echoed != rounds {
        fail(&format!(
            "after {rounds} round trips A holds {value} and B echoed {echoed}"
        ));
    }
    preempt_peers::report::print_timing("futex_queue_pingpong", elapsed, 2 * rounds);
}
