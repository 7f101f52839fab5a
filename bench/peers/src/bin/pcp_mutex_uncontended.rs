//! pcp-mutex 0.2.0, uncontended lock + unlock (figure `pcp_mutex_uncontended`).
//!
//! One SCHED_FIFO thread at priority 1 locks and unlocks one `PcpMutex` (ceiling 1, the
//! process-wide default group, as linux-rtic uses it) `--iterations` times (10 M by default),
//! incrementing the protected counter. The whole loop is timed once, so no clock read is in the
//! figure. The raw floor is `raw_pi_cas`: one CAS to lock and one to unlock.
//!
//! Per lock, pcp-mutex 0.2.0 does much more than the two CASes: it takes and releases a global
//! `BLOCKED_LOCKER` futex word to read the group's highest locker, clones and drops an `Arc`,
//! and updates the group's `highest_locker` twice, all with SeqCst atomics.

use pcp_mutex::PcpMutex;
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let iterations = preempt_peers::cli::parse_or_exit(
        "--iterations",
        10_000_000,
        "pcp-mutex 0.2.0: uncontended lock+unlock loop at SCHED_FIFO priority 1",
    );
    preempt_peers::sys::require_fifo_or_exit(1);
    if let Err(err) = pcp_mutex::thread::init_fifo_priority(1) {
        eprintln!("error: pcp_mutex::thread::init_fifo_priority(1) failed: {err}");
        std::process::exit(1);
    }
    // `lock` borrows the mutex for the lifetime of its group ('static for the default group).
    let mutex: &'static PcpMutex<'static, u64> = Box::leak(Box::new(PcpMutex::new(0, 1)));

    let start = Instant::now();
    for _ in 0..iterations {
        black_box(mutex).lock(|value| *value += 1);
    }
    let elapsed = start.elapsed();

    let count = mutex.lock(|value| *value);
    if count != iterations {
        eprintln!("error: counter is {count} after {iterations} locked increments");
        std::process::exit(1);
    }
    preempt_peers::report::print_timing("pcp_mutex_uncontended", elapsed, iterations);
}
