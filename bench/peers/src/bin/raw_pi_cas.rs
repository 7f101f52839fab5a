//! Raw PI-futex CAS pair, uncontended (figure `raw_pi_cas`): the floor for an uncontended
//! lock + unlock of any PI-futex mutex.
//!
//! Lock is `compare_exchange(0 -> tid, Acquire)` on a PI futex word, unlock is
//! `compare_exchange(tid -> 0, Release)`; with no other thread neither CAS can fail, so neither
//! enters the kernel. One SCHED_FIFO thread at priority 1 (as `pcp_mutex_uncontended`) repeats
//! the pair `--iterations` times (10 M by default) around a counter increment; the loop is
//! timed once, with no clock read per operation.

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

fn main() {
    let iterations = preempt_peers::cli::parse_or_exit(
        "--iterations",
        10_000_000,
        "Raw PI-futex CAS pair (lock 0->tid, unlock tid->0), uncontended",
    );
    preempt_peers::sys::require_fifo_or_exit(1);
    if let Err(err) = preempt_peers::sys::set_fifo(1) {
        eprintln!("error: SCHED_FIFO priority 1: {err}");
        std::process::exit(1);
    }
    let tid = preempt_peers::sys::gettid();
    let word = AtomicU32::new(0);
    let mut counter = 0u64;

    let start = Instant::now();
    for _ in 0..iterations {
        let word = black_box(&word);
        if word
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            unreachable_contention("lock");
        }
        counter = black_box(counter + 1);
        if word
            .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            unreachable_contention("unlock");
        }
    }
    let elapsed = start.elapsed();

    if counter != iterations {
        eprintln!("error: counter is {counter} after {iterations} locked increments");
        std::process::exit(1);
    }
    preempt_peers::report::print_timing("raw_pi_cas", elapsed, iterations);
}

#[cold]
fn unreachable_contention(what: &str) -> ! {
    eprintln!("error: the {what} CAS failed, but this futex word has a single user");
    std::process::exit(1);
}
