//! [`MpscQueue`]: a bounded, lock-free, multi-producer single-consumer FIFO in a fixed
//! array, constructible in a `static` (no heap, ever).
//!
//! It is the run queue of a preempt executor: any thread spawns (pushes) a message, the
//! executor thread pops it. A full queue hands the value back (`Err(value)`), so nothing is
//! dropped silently.
//!
//! # Background
//!
//! The design is Dmitry Vyukov's bounded MPMC queue in the form used by
//! `crossbeam-queue/src/array_queue.rs`: every slot carries a *stamp* that says whether it
//! is free for the producer of the current lap or holds the value of that lap. Producers
//! claim a slot by a CAS on `tail`, then write the value and publish it with a release
//! store of the stamp. There is a single consumer, so `pop` needs no CAS at all.
//!
//! # Solution
//!
//! Positions (`head`, `tail`) are `lap | index` with `index < N` and `lap` a multiple of
//! `ONE_LAP = (N + 1).next_power_of_two()`. Unlike crossbeam, a slot stamp holds only the
//! lap part, so every slot starts at stamp 0 and the array can be built in a `const fn`:
//!
//! | stamp of slot `i`   | meaning (for a position `lap \| i`)                          |
//! |---------------------|--------------------------------------------------------------|
//! | `lap`               | free: the producer of position `lap \| i` may claim it       |
//! | `lap + 1`           | full: holds the value pushed at `lap \| i`                   |
//! | `lap + ONE_LAP`     | consumed: free for position `(lap + ONE_LAP) \| i`           |
//!
//! Two deliberate differences from crossbeam, both for real-time use:
//! - the consumer publishes the freed stamp *before* it advances `head`, and `push`
//!   decides "full" from `head` (never by spinning on the consumer), so a high-priority
//!   producer never waits for a preempted low-priority consumer;
//! - `pop` never waits for a producer that claimed a slot but has not written it yet: it
//!   returns `None` and that producer's own wake-up (see [`crate::event`]) comes after its
//!   write. Values pushed behind such a slot become visible when it is written.
//!
//! # Why it works
//!
//! A slot is written only by the producer whose CAS moved `tail` past it, and read only by
//! the consumer after it saw the `lap + 1` stamp (release/acquire pair on the stamp). FIFO
//! per producer holds because one producer's pushes claim increasing positions, and the
//! consumer takes positions in order. Loom checks these claims in `tests/loom_queue.rs`.
//!
//! # Example
//!
//! ```
//! use preempt_sync::queue::MpscQueue;
//!
//! static Q: MpscQueue<u32, 2> = MpscQueue::new();
//! Q.try_push(1).unwrap();
//! Q.try_push(2).unwrap();
//! assert_eq!(Q.try_push(3), Err(3)); // full: the value comes back
//! // SAFETY: this thread is the only consumer.
//! assert_eq!(unsafe { Q.pop() }, Some(1));
//! assert_eq!(Q.len(), 1);
//! ```

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicUsize, Ordering, fence};
use core::mem::MaybeUninit;

/// Pads and aligns a value to 128 bytes: two x86_64 cache lines, because the L2 spatial
/// prefetcher pulls lines in pairs (Intel optimisation manual, see
/// `crossbeam-utils/src/cache_padded.rs`), so `head` and `tail` never share a prefetch unit.
#[repr(align(128))]
pub(crate) struct CachePadded<T>(pub(crate) T);

struct Slot<T> {
    stamp: AtomicUsize,
    value: UnsafeCell<MaybeUninit<T>>,
}

impl<T> Slot<T> {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Self {
            stamp: AtomicUsize::new(0),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    #[cfg(loom)]
    fn new() -> Self {
        Self {
            stamp: AtomicUsize::new(0),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }
}

/// A bounded lock-free multi-producer single-consumer FIFO of capacity `N` (see the
/// [module docs](self)).
pub struct MpscQueue<T, const N: usize> {
    head: CachePadded<AtomicUsize>,
    tail: CachePadded<AtomicUsize>,
    slots: [Slot<T>; N],
}

// SAFETY: values move between threads through the queue, so `T: Send` is required and
// enough: a value is only ever accessed by one thread at a time (its producer before the
// stamp release, the single consumer after the stamp acquire).
unsafe impl<T: Send, const N: usize> Sync for MpscQueue<T, N> {}
// SAFETY: as above; the queue owns its values.
unsafe impl<T: Send, const N: usize> Send for MpscQueue<T, N> {}

impl<T, const N: usize> MpscQueue<T, N> {
    /// Maximum number of values the queue holds.
    pub const CAPACITY: usize = N;
    const ONE_LAP: usize = (N + 1).next_power_of_two();
    const ASSERT_CAPACITY: () = assert!(N > 0, "MpscQueue capacity N must be at least 1");

    /// An empty queue. `const`, so it can live in a `static`.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        #[allow(
            clippy::let_unit_value,
            reason = "forces the compile-time capacity check"
        )]
        let () = Self::ASSERT_CAPACITY;
        Self {
            head: CachePadded(AtomicUsize::new(0)),
            tail: CachePadded(AtomicUsize::new(0)),
            slots: [const { Slot::new() }; N],
        }
    }

    /// An empty queue (loom build: loom atomics cannot be built in a `const fn`).
    #[cfg(loom)]
    pub fn new() -> Self {
        #[allow(
            clippy::let_unit_value,
            reason = "forces the compile-time capacity check"
        )]
        let () = Self::ASSERT_CAPACITY;
        Self {
            head: CachePadded(AtomicUsize::new(0)),
            tail: CachePadded(AtomicUsize::new(0)),
            slots: core::array::from_fn(|_| Slot::new()),
        }
    }

    #[inline(always)]
    const fn next(pos: usize) -> usize {
        let index = pos & (Self::ONE_LAP - 1);
        if index + 1 < N {
            pos + 1
        } else {
            (pos & !(Self::ONE_LAP - 1)).wrapping_add(Self::ONE_LAP)
        }
    }

    /// Appends `value`; any number of threads may push concurrently. Lock-free: a failed
    /// CAS means another producer succeeded.
    ///
    /// # Errors
    ///
    /// `Err(value)` if the queue holds `N` values (the value is handed back untouched).
    #[inline]
    pub fn try_push(&self, value: T) -> Result<(), T> {
        let mut tail = self.tail.0.load(Ordering::Relaxed);
        loop {
            let index = tail & (Self::ONE_LAP - 1);
            let lap = tail & !(Self::ONE_LAP - 1);
            debug_assert!(index < N);
            let slot = &self.slots[index];
            let stamp = slot.stamp.load(Ordering::Acquire);
            if stamp == lap {
                match self.tail.0.compare_exchange(
                    tail,
                    Self::next(tail),
                    Ordering::SeqCst,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        // SAFETY: our CAS moved `tail` past this position, so no other
                        // producer writes this slot in this lap, and the consumer reads it
                        // only after the stamp below says `lap + 1`.
                        slot.value
                            .with_mut(|p| unsafe { p.write(MaybeUninit::new(value)) });
                        slot.stamp.store(lap.wrapping_add(1), Ordering::Release);
                        return Ok(());
                    }
                    Err(current) => tail = current,
                }
            } else if stamp.wrapping_add(Self::ONE_LAP) == lap.wrapping_add(1)
                || stamp.wrapping_add(Self::ONE_LAP) == lap
            {
                // The slot still holds (or is being filled with) the previous lap's value.
                // Full if `head` is a whole lap behind; otherwise our view is stale.
                fence(Ordering::SeqCst);
                let head = self.head.0.load(Ordering::Acquire);
                if head.wrapping_add(Self::ONE_LAP) == tail {
                    return Err(value);
                }
                tail = self.tail.0.load(Ordering::Relaxed);
            } else {
                // Another producer already used this position: reload.
                tail = self.tail.0.load(Ordering::Relaxed);
            }
        }
    }

    /// Removes the oldest published value, or `None` if there is none. Wait-free.
    ///
    /// `None` also when the oldest claimed slot is still being written by a producer that
    /// was preempted between its claim and its write (see the module docs).
    ///
    /// # Safety
    ///
    /// Only one thread may pop at a time (single consumer). Concurrent pops race on the
    /// same slot and may return one value twice.
    #[inline]
    pub unsafe fn pop(&self) -> Option<T> {
        let head = self.head.0.load(Ordering::Relaxed);
        let index = head & (Self::ONE_LAP - 1);
        let lap = head & !(Self::ONE_LAP - 1);
        debug_assert!(index < N);
        let slot = &self.slots[index];
        if slot.stamp.load(Ordering::Acquire) != lap.wrapping_add(1) {
            return None;
        }
        // SAFETY: the stamp `lap + 1` (acquire) says the producer finished writing this
        // slot; we are the only consumer (caller's contract), so nobody else reads it, and
        // no producer writes it until the stamp below frees it.
        let value = slot.value.with(|p| unsafe { p.read().assume_init() });
        slot.stamp
            .store(lap.wrapping_add(Self::ONE_LAP), Ordering::Release);
        self.head.0.store(Self::next(head), Ordering::Release);
        Some(value)
    }

    /// Number of values in the queue (claimed slots included). Exact when no push or pop
    /// runs concurrently; otherwise a value that was true at some instant during the call.
    pub fn len(&self) -> usize {
        loop {
            let tail = self.tail.0.load(Ordering::SeqCst);
            let head = self.head.0.load(Ordering::SeqCst);
            if self.tail.0.load(Ordering::SeqCst) != tail {
                continue;
            }
            let hix = head & (Self::ONE_LAP - 1);
            let tix = tail & (Self::ONE_LAP - 1);
            return if hix < tix {
                tix - hix
            } else if hix > tix {
                N - hix + tix
            } else if tail == head {
                0
            } else {
                N
            };
        }
    }

    /// `true` if [`len`](Self::len) is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T, const N: usize> Default for MpscQueue<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> Drop for MpscQueue<T, N> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no other thread can push or pop any more.
        while unsafe { self.pop() }.is_some() {}
    }
}

impl<T, const N: usize> core::fmt::Debug for MpscQueue<T, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MpscQueue")
            .field("len", &self.len())
            .field("capacity", &N)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_and_full() {
        let q: MpscQueue<u32, 3> = MpscQueue::new();
        for round in 0..10u32 {
            for i in 0..3 {
                q.try_push(round * 10 + i).unwrap();
            }
            assert_eq!(q.len(), 3);
            assert_eq!(q.try_push(99), Err(99));
            for i in 0..3 {
                // SAFETY: single consumer (this thread).
                assert_eq!(unsafe { q.pop() }, Some(round * 10 + i));
            }
            // SAFETY: single consumer.
            assert_eq!(unsafe { q.pop() }, None);
            assert!(q.is_empty());
        }
    }

    #[test]
    fn capacity_one_and_non_power_of_two() {
        let q: MpscQueue<u8, 1> = MpscQueue::new();
        for i in 0..5 {
            q.try_push(i).unwrap();
            assert_eq!(q.try_push(7), Err(7));
            // SAFETY: single consumer.
            assert_eq!(unsafe { q.pop() }, Some(i));
        }
        let q: MpscQueue<usize, 5> = MpscQueue::new();
        for i in 0..1000 {
            q.try_push(i).unwrap();
            if i % 3 == 0 {
                q.try_push(i + 10_000).unwrap();
                // SAFETY: single consumer.
                unsafe { q.pop() }.unwrap();
            }
            // SAFETY: single consumer.
            unsafe { q.pop() }.unwrap();
        }
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn drop_releases_remaining_values() {
        let witness = Arc::new(());
        {
            let q: MpscQueue<Arc<()>, 4> = MpscQueue::new();
            q.try_push(witness.clone()).unwrap();
            q.try_push(witness.clone()).unwrap();
            assert_eq!(Arc::strong_count(&witness), 3);
        }
        assert_eq!(Arc::strong_count(&witness), 1);
    }

    #[test]
    fn many_producers_keep_per_producer_order_and_lose_nothing() {
        const PRODUCERS: usize = 4;
        const PER: usize = 5_000;
        let q: Arc<MpscQueue<(usize, usize), 64>> = Arc::new(MpscQueue::new());
        let handles: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let q = q.clone();
                std::thread::spawn(move || {
                    for i in 0..PER {
                        let mut v = (p, i);
                        while let Err(back) = q.try_push(v) {
                            v = back;
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut next = [0usize; PRODUCERS];
        let mut got = 0;
        while got < PRODUCERS * PER {
            // SAFETY: this thread is the only consumer.
            match unsafe { q.pop() } {
                Some((p, i)) => {
                    assert_eq!(i, next[p], "producer {p} out of order");
                    next[p] += 1;
                    got += 1;
                }
                None => std::thread::yield_now(),
            }
        }
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(next, [PER; PRODUCERS]);
    }
}
