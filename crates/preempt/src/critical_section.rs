//! A `critical-section` implementation on a priority-inheritance futex, so that crates built
//! on `critical-section` (rtic-sync's `Channel`, `Signal`, `Arbiter`; `heapless`; embedded
//! drivers) work between preempt's threads.
//!
//! On a microcontroller a critical section masks interrupts. On Linux the usual `std`
//! implementation is one global `std::sync::Mutex`, which has no priority inheritance: a
//! low-priority thread inside a critical section, preempted by a medium-priority one, would
//! block a high-priority waiter for an unbounded time. Here the global lock is a PI futex:
//!
//! * uncontended: one compare-and-swap to take it (`0 → tid`), one to release it: no system
//!   call, as fast as the `std` mutex;
//! * contended: `FUTEX_LOCK_PI`, so the kernel boosts the holder to the waiter's priority
//!   for as long as it holds the lock (bounded inversion, thesis §5.5.2);
//! * nested on one thread (critical-section allows it): the owner check (`word & TID_MASK ==
//!   gettid()`) makes the inner section a no-op, and only the outermost one releases.
//!
//! In the simulator (`clock = mock`) every level runs on one thread, so a critical section
//! also holds off simulated preemption, exactly as masking interrupts would.
//!
//! Enabled by the default feature `critical-section-impl`; turn it off if another crate in
//! your binary provides the implementation (the linker reports two).

use std::sync::atomic::{AtomicU32, Ordering};

use preempt_sync::futex;

use crate::sim;

/// The lock word: 0 free, else the owner's tid (plus `futex::WAITERS` under contention).
static WORD: AtomicU32 = AtomicU32::new(0);

struct PiCriticalSection;

critical_section::set_impl!(PiCriticalSection);

// SAFETY: `acquire` returns only once the calling thread owns `WORD` (or already owned it:
// nested), so no two threads are inside a critical section at once; `release` with the
// token of the outermost `acquire` releases it, inner tokens do nothing, as the trait's
// nesting contract requires.
unsafe impl critical_section::Impl for PiCriticalSection {
    unsafe fn acquire() -> bool {
        let tid = futex::current_tid();
        if WORD.load(Ordering::Relaxed) & futex::TID_MASK == tid {
            return true; // nested: we own it already
        }
        if WORD
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            if let Err(err) = futex::lock_pi(&WORD, None) {
                // EDEADLK is excluded by the owner check; anything else means the word is
                // corrupt. Proceeding without the lock would be unsound.
                panic!("preempt: critical section: FUTEX_LOCK_PI failed: {err}");
            }
        }
        sim::critical_section_entered();
        false
    }

    unsafe fn release(nested: bool) {
        if nested {
            return;
        }
        sim::critical_section_left();
        let tid = futex::current_tid();
        if WORD
            .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // Waiters are queued in the kernel: it hands the lock to the highest-priority one.
            if let Err(err) = futex::unlock_pi(&WORD) {
                panic!("preempt: critical section: FUTEX_UNLOCK_PI failed: {err}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn nested_sections_and_mutual_exclusion_across_threads() {
        let counter = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let counter = counter.clone();
                std::thread::spawn(move || {
                    for _ in 0..2_000 {
                        critical_section::with(|_| {
                            // A non-atomic read-modify-write: lost updates would show.
                            let v = counter.load(std::sync::atomic::Ordering::Relaxed);
                            critical_section::with(|_| {}); // nested: must not deadlock
                            counter.store(v + 1, std::sync::atomic::Ordering::Relaxed);
                        });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(counter.load(std::sync::atomic::Ordering::Relaxed), 8_000);
    }
}
