//! Raw contended unlock of a PI futex (figure `raw_unlock_pi`, or `raw_unlock_pi_pinned` under
//! `taskset -c 0`): the kernel floor for the thesis's Listing 2, which preempt's
//! `preempt_contended_unlock` must stay within 1.1× of (issue 3).
//!
//! Per sample, mirroring Listing 2: the holder (SCHED_FIFO 2) takes the PI futex word with a
//! CAS 0 → tid and lets the waiter (SCHED_FIFO 1) go; the waiter blocks in `FUTEX_LOCK_PI`.
//! The holder polls, sleeping 20 µs at a time like the listing, until the kernel has set
//! `FUTEX_WAITERS` in the word, then reads the clock, unlocks the way every PI mutex does (CAS
//! tid → 0, which fails because of the waiter, then `FUTEX_UNLOCK_PI`), and reads the clock
//! again. The waiter, now owner, unlocks and reports back. So the figure is one failed CAS, one
//! `FUTEX_UNLOCK_PI` and one clock read, as in Listing 2. `--samples` defaults to 50 000.

use preempt_peers::sys::{
    futex_lock_pi, futex_unlock_pi, futex_wait, futex_wake, gettid, set_fifo, FUTEX_WAITERS,
};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The PI futex word: 0 when free, else the owner's tid (plus `FUTEX_WAITERS`).
static LOCK: AtomicU32 = AtomicU32::new(0);
/// The sample number the waiter may start (holder → waiter).
static GO: AtomicU32 = AtomicU32::new(0);
/// The last sample the waiter finished (waiter → holder).
static DONE: AtomicU32 = AtomicU32::new(0);

/// How long the holder sleeps between checks for a blocked waiter (Listing 2's 20 µs).
const POLL: Duration = Duration::from_micros(20);

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}

fn check<T>(what: &str, result: std::io::Result<T>) -> T {
    result.unwrap_or_else(|err| fail(&format!("{what}: {err}")))
}

/// Blocks until `word` holds `value` (a sequence number that only moves forward).
fn wait_until(word: &AtomicU32, value: u32) {
    loop {
        let now = word.load(Ordering::Acquire);
        if now == value {
            return;
        }
        check("FUTEX_WAIT", futex_wait(word, now));
    }
}

fn waiter(samples: u32) {
    check("SCHED_FIFO priority 1", set_fifo(1));
    let tid = gettid();
    for i in 1..=samples {
        wait_until(&GO, i);
        // The holder owns LOCK now, so this goes to the kernel and blocks.
        if LOCK
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            check("FUTEX_LOCK_PI", futex_lock_pi(&LOCK));
        }
        let owner = LOCK.load(Ordering::Relaxed) & libc::FUTEX_TID_MASK;
        if owner != tid {
            fail(&format!(
                "FUTEX_LOCK_PI returned but the word names tid {owner}, not {tid}"
            ));
        }
        if LOCK
            .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            check("FUTEX_UNLOCK_PI (waiter)", futex_unlock_pi(&LOCK));
        }
        DONE.store(i, Ordering::Release);
        check("FUTEX_WAKE", futex_wake(&DONE, 1));
    }
}

fn main() {
    let samples = preempt_peers::cli::parse_or_exit(
        "--samples",
        50_000,
        "Raw FUTEX_UNLOCK_PI with a waiter blocked in FUTEX_LOCK_PI (Listing 2's floor)",
    );
    let Ok(samples) = u32::try_from(samples) else {
        fail(&format!(
            "`--samples {samples}` is too large; at most {}",
            u32::MAX
        ));
    };
    preempt_peers::sys::require_fifo_or_exit(2);
    check("SCHED_FIFO priority 2", set_fifo(2));
    let tid = gettid();
    let waiter = std::thread::spawn(move || waiter(samples));

    let mut total = Duration::ZERO;
    for i in 1..=samples {
        if LOCK
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            fail("the lock is still held at the start of a sample");
        }
        GO.store(i, Ordering::Release);
        check("FUTEX_WAKE", futex_wake(&GO, 1));
        while LOCK.load(Ordering::Relaxed) & FUTEX_WAITERS == 0 {
            #[allow(
                clippy::disallowed_methods,
                reason = "the thesis's Listing 2 sleeps 20 µs too"
            )]
            std::thread::sleep(POLL);
        }

        let start = Instant::now();
        if LOCK
            .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            fail("the unlock CAS succeeded although FUTEX_WAITERS was set");
        }
        check("FUTEX_UNLOCK_PI", futex_unlock_pi(&LOCK));
        total += start.elapsed();

        wait_until(&DONE, i);
    }
    waiter.join().expect("waiter thread panicked");
    preempt_peers::report::print_timing("raw_unlock_pi", total, u64::from(samples));
}
