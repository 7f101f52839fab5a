//! [`TimerQueue`]: a timed multi-producer single-consumer queue. Any thread pushes a value
//! with an absolute release time; the consumer pops the values that are due, earliest
//! first, and sleeps until the earliest release time or until a push makes an earlier one.
//!
//! It is the `futex-queue` of the thesis (§5.5.1) done right: `futex-queue` takes a
//! `std::sync::Mutex` on every send and receive and wakes the receiver on *every* timed
//! send, "regardless if there are ready items", to let it recompute its timeout. Here:
//!
//! - pushes go into a lock-free [`MpscQueue`] inbox (no lock, no heap allocation);
//! - the consumer moves them into a private fixed-capacity binary heap keyed by
//!   `(release_ns, arrival sequence)`, so equal release times pop in FIFO order;
//! - a push wakes the consumer **only if it sleeps and the new value is due before the
//!   time it sleeps until**; otherwise the push makes no system call.
//!
//! # The sleep protocol
//!
//! The consumer publishes the absolute time it will sleep until in `sleep_until_ns`
//! (`0` = awake, it will look at the inbox before sleeping; `u64::MAX` = sleeps with no
//! deadline). Then, with a `SeqCst` fence between its store and its loads, it drains the
//! inbox once more. A producer pushes, issues a `SeqCst` fence, reads `sleep_until_ns` and
//! notifies the consumer's [`Event`] if its value is due earlier. By the fence rules
//! (store; fence ‖ fence; load — the Dekker pattern) at least one side sees the other:
//! either the consumer finds the value in its second drain and does not sleep past it, or
//! the producer sees the published time and notifies. The [`Event`] protocol makes the
//! notification stick even if it arrives before the consumer is inside `FUTEX_WAIT`.
//!
//! # Capacity
//!
//! At most `N` values are queued in total (inbox plus heap). A counter reserved by each
//! push makes the bound exact; a push beyond it returns `Err(value)`.
//!
//! # Example
//!
//! ```
//! use preempt_sync::timed::TimerQueue;
//!
//! static TQ: TimerQueue<&str, 8> = TimerQueue::new();
//! TQ.push_at(300, "late").unwrap();
//! TQ.push_at(100, "early").unwrap();
//! TQ.push(/* due at once */ "now").unwrap();
//! // SAFETY: this thread is the only consumer.
//! unsafe {
//!     assert_eq!(TQ.pop_due(200), Some("now"));
//!     assert_eq!(TQ.pop_due(200), Some("early"));
//!     assert_eq!(TQ.pop_due(200), None); // "late" is not due yet
//!     assert_eq!(TQ.next_release_ns(), Some(300));
//! }
//! ```

use crate::event::Event;
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};
use crate::queue::MpscQueue;
use core::mem::MaybeUninit;

/// Value of `sleep_until_ns` while the consumer is awake.
const AWAKE: u64 = 0;

struct Entry<T> {
    release_ns: u64,
    seq: u64,
    value: T,
}

impl<T> Entry<T> {
    #[inline(always)]
    fn before(&self, other: &Self) -> bool {
        (self.release_ns, self.seq) < (other.release_ns, other.seq)
    }
}

/// Consumer-private binary min-heap of fixed capacity.
struct Heap<T, const N: usize> {
    len: usize,
    next_seq: u64,
    items: [MaybeUninit<Entry<T>>; N],
}

impl<T, const N: usize> Heap<T, N> {
    const fn new() -> Self {
        Self {
            len: 0,
            next_seq: 0,
            items: [const { MaybeUninit::uninit() }; N],
        }
    }

    #[inline(always)]
    fn get(&self, i: usize) -> &Entry<T> {
        debug_assert!(i < self.len);
        // SAFETY: items[..len] are initialised (heap invariant).
        unsafe { self.items[i].assume_init_ref() }
    }

    fn peek(&self) -> Option<&Entry<T>> {
        (self.len > 0).then(|| self.get(0))
    }

    /// Inserts; the caller guarantees room (`len < N`).
    fn push(&mut self, release_ns: u64, value: T) {
        debug_assert!(
            self.len < N,
            "TimerQueue heap overflow: capacity accounting is wrong"
        );
        let entry = Entry {
            release_ns,
            seq: self.next_seq,
            value,
        };
        self.next_seq = self.next_seq.wrapping_add(1);
        let mut i = self.len;
        self.items[i].write(entry);
        self.len += 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.get(i).before(self.get(parent)) {
                break;
            }
            self.items.swap(i, parent);
            i = parent;
        }
    }

    fn pop(&mut self) -> Option<Entry<T>> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        self.items.swap(0, self.len);
        // SAFETY: index `len` (the old root) was initialised and is now outside the live
        // range, so it is read exactly once.
        let top = unsafe { self.items[self.len].assume_init_read() };
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < self.len && self.get(l).before(self.get(least)) {
                least = l;
            }
            if r < self.len && self.get(r).before(self.get(least)) {
                least = r;
            }
            if least == i {
                break;
            }
            self.items.swap(i, least);
            i = least;
        }
        Some(top)
    }
}

impl<T, const N: usize> Drop for Heap<T, N> {
    fn drop(&mut self) {
        for item in &mut self.items[..self.len] {
            // SAFETY: items[..len] are initialised and dropped exactly once here.
            unsafe { item.assume_init_drop() };
        }
    }
}

/// A timed MPSC queue of capacity `N` (see the [module docs](self)).
pub struct TimerQueue<T, const N: usize> {
    inbox: MpscQueue<(u64, T), N>,
    /// Values in the inbox plus the heap, reserved before each push.
    count: AtomicUsize,
    /// The time the consumer sleeps until (`AWAKE`, a deadline, or `u64::MAX`).
    sleep_until_ns: AtomicU64,
    event: Event,
    heap: UnsafeCell<Heap<T, N>>,
}

// SAFETY: values cross threads (so `T: Send`); the heap is only touched by the single
// consumer (the `unsafe fn` contracts), everything else is atomic or the `Sync` inbox.
unsafe impl<T: Send, const N: usize> Sync for TimerQueue<T, N> {}
// SAFETY: as above; the queue owns its values.
unsafe impl<T: Send, const N: usize> Send for TimerQueue<T, N> {}

impl<T, const N: usize> TimerQueue<T, N> {
    /// Maximum number of queued values.
    pub const CAPACITY: usize = N;

    /// An empty queue. `const`, so it can live in a `static`.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            inbox: MpscQueue::new(),
            count: AtomicUsize::new(0),
            sleep_until_ns: AtomicU64::new(AWAKE),
            event: Event::new(),
            heap: UnsafeCell::new(Heap::new()),
        }
    }

    /// An empty queue (loom build).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            inbox: MpscQueue::new(),
            count: AtomicUsize::new(0),
            sleep_until_ns: AtomicU64::new(AWAKE),
            event: Event::new(),
            heap: UnsafeCell::new(Heap::new()),
        }
    }

    /// Queues `value` to become due at the absolute `CLOCK_MONOTONIC` time `release_ns`.
    /// Any thread. Wakes the consumer only if it sleeps past `release_ns`.
    ///
    /// # Errors
    ///
    /// `Err(value)` if `N` values are queued.
    #[inline]
    pub fn push_at(&self, release_ns: u64, value: T) -> Result<(), T> {
        if self.count.fetch_add(1, Ordering::Relaxed) >= N {
            self.count.fetch_sub(1, Ordering::Relaxed);
            return Err(value);
        }
        if let Err((_, value)) = self.inbox.try_push((release_ns, value)) {
            // Cannot happen while the count bound holds; give the value back regardless.
            self.count.fetch_sub(1, Ordering::Relaxed);
            return Err(value);
        }
        fence(Ordering::SeqCst);
        let sleeping_until = self.sleep_until_ns.load(Ordering::Relaxed);
        if release_ns < sleeping_until || sleeping_until == u64::MAX {
            self.event.notify();
        }
        Ok(())
    }

    /// Queues `value` as due at once (release time 0): it pops before every timed value,
    /// in FIFO order with other immediate values.
    ///
    /// # Errors
    ///
    /// `Err(value)` if `N` values are queued.
    #[inline]
    pub fn push(&self, value: T) -> Result<(), T> {
        self.push_at(0, value)
    }

    /// Number of queued values (due or not). Any thread; may be stale at once.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed).min(N)
    }

    /// `true` if no value is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Moves everything from the inbox into the heap.
    ///
    /// # Safety
    ///
    /// Single consumer only (same contract as [`pop_due`](Self::pop_due)).
    unsafe fn drain(&self, heap: &mut Heap<T, N>) {
        // SAFETY: single consumer by the caller's contract.
        while let Some((release_ns, value)) = unsafe { self.inbox.pop() } {
            heap.push(release_ns, value);
        }
    }

    /// Consumer only: removes the value with the earliest release time if it is due
    /// (`release_ns <= now_ns`); among equal release times the one pushed first.
    ///
    /// # Safety
    ///
    /// Only one thread may call the consumer methods (`pop_due`, `next_release_ns`,
    /// `wait`) of a queue at a time.
    #[inline]
    pub unsafe fn pop_due(&self, now_ns: u64) -> Option<T> {
        self.heap.with_mut(|heap| {
            // SAFETY: the single-consumer contract gives us exclusive access to the heap.
            let heap = unsafe { &mut *heap };
            if heap.len == 0 {
                // Fast path: an immediate value with nothing older queued needs no heap.
                // SAFETY: single consumer (contract).
                match unsafe { self.inbox.pop() } {
                    None => return None,
                    Some((0, value)) => {
                        self.count.fetch_sub(1, Ordering::Relaxed);
                        return Some(value);
                    }
                    Some((release_ns, value)) => heap.push(release_ns, value),
                }
            }
            // SAFETY: single consumer (contract).
            unsafe { self.drain(heap) };
            if heap.peek()?.release_ns > now_ns {
                return None;
            }
            let entry = heap.pop()?;
            self.count.fetch_sub(1, Ordering::Relaxed);
            Some(entry.value)
        })
    }

    /// Consumer only: the earliest release time queued, or `None` if empty.
    ///
    /// # Safety
    ///
    /// As for [`pop_due`](Self::pop_due).
    pub unsafe fn next_release_ns(&self) -> Option<u64> {
        self.heap.with_mut(|heap| {
            // SAFETY: exclusive heap access by the single-consumer contract.
            let heap = unsafe { &mut *heap };
            // SAFETY: single consumer (contract).
            unsafe { self.drain(heap) };
            heap.peek().map(|e| e.release_ns)
        })
    }

    /// Consumer only: sleeps until the earliest queued release time, or until a push
    /// brings an earlier one (or, with nothing queued, until any push). May return early
    /// (spuriously); call [`pop_due`](Self::pop_due) with the current time afterwards.
    ///
    /// # Safety
    ///
    /// As for [`pop_due`](Self::pop_due).
    pub unsafe fn wait(&self) {
        self.heap.with_mut(|heap| {
            // SAFETY: exclusive heap access by the single-consumer contract.
            let heap = unsafe { &mut *heap };
            loop {
                // SAFETY: single consumer (contract).
                unsafe { self.drain(heap) };
                let until = heap.peek().map_or(u64::MAX, |e| e.release_ns);
                self.sleep_until_ns.store(until, Ordering::Relaxed);
                fence(Ordering::SeqCst);
                // SAFETY: single consumer (contract).
                unsafe { self.drain(heap) };
                if heap.peek().is_some_and(|e| e.release_ns < until) {
                    // A value pushed meanwhile is due earlier: recompute.
                    self.sleep_until_ns.store(AWAKE, Ordering::Relaxed);
                    continue;
                }
                let deadline = (until != u64::MAX).then_some(until);
                self.event.wait_until(deadline);
                self.sleep_until_ns.store(AWAKE, Ordering::Relaxed);
                return;
            }
        });
    }
}

impl<T, const N: usize> Default for TimerQueue<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> core::fmt::Debug for TimerQueue<T, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TimerQueue")
            .field("len", &self.len())
            .field("capacity", &N)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::clock::now_ns;

    #[test]
    fn earliest_first_and_fifo_among_equal_times() {
        let q: TimerQueue<u32, 16> = TimerQueue::new();
        for (t, v) in [(50, 1), (10, 2), (50, 3), (10, 4), (30, 5), (50, 6)] {
            q.push_at(t, v).unwrap();
        }
        let mut out = Vec::new();
        // SAFETY: single consumer.
        while let Some(v) = unsafe { q.pop_due(100) } {
            out.push(v);
        }
        assert_eq!(out, [2, 4, 5, 1, 3, 6]);
    }

    #[test]
    fn not_due_stays_and_capacity_is_exact() {
        let q: TimerQueue<u32, 3> = TimerQueue::new();
        q.push_at(100, 1).unwrap();
        q.push_at(200, 2).unwrap();
        q.push(3).unwrap();
        assert_eq!(q.push_at(5, 4), Err(4));
        // SAFETY: single consumer.
        unsafe {
            assert_eq!(q.pop_due(50), Some(3));
            assert_eq!(q.pop_due(50), None);
            assert_eq!(q.next_release_ns(), Some(100));
            q.push_at(1, 9).unwrap(); // room again after one pop
            assert_eq!(q.push_at(1, 10), Err(10));
            assert_eq!(q.pop_due(150), Some(9));
            assert_eq!(q.pop_due(150), Some(1));
            assert_eq!(q.pop_due(150), None);
            assert_eq!(q.pop_due(u64::MAX), Some(2));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn drop_releases_values_in_heap_and_inbox() {
        let w = Arc::new(());
        {
            let q: TimerQueue<Arc<()>, 4> = TimerQueue::new();
            q.push_at(10, w.clone()).unwrap();
            // SAFETY: single consumer: moves the first into the heap.
            assert_eq!(unsafe { q.next_release_ns() }, Some(10));
            q.push_at(20, w.clone()).unwrap();
            assert_eq!(Arc::strong_count(&w), 3);
        }
        assert_eq!(Arc::strong_count(&w), 1);
    }

    #[test]
    fn consumer_sleeps_until_release_time() {
        let q: TimerQueue<u32, 4> = TimerQueue::new();
        let release = now_ns() + 3_000_000;
        q.push_at(release, 7).unwrap();
        loop {
            // SAFETY: single consumer.
            if let Some(v) = unsafe { q.pop_due(now_ns()) } {
                assert_eq!(v, 7);
                break;
            }
            // SAFETY: single consumer.
            unsafe { q.wait() };
        }
        assert!(now_ns() >= release);
    }

    #[test]
    fn earlier_push_wakes_a_sleeping_consumer() {
        let q: Arc<TimerQueue<u32, 4>> = Arc::new(TimerQueue::new());
        // Far in the future: the consumer would sleep an hour without the wake-up.
        q.push_at(now_ns() + 3_600_000_000_000, 1).unwrap();
        let consumer = {
            let q = q.clone();
            std::thread::spawn(move || {
                loop {
                    // SAFETY: this thread is the only consumer.
                    if let Some(v) = unsafe { q.pop_due(now_ns()) } {
                        return v;
                    }
                    // SAFETY: as above.
                    unsafe { q.wait() };
                }
            })
        };
        while !q.event.consumer_parked() {
            std::thread::yield_now();
        }
        q.push(2).unwrap();
        assert_eq!(consumer.join().unwrap(), 2);
    }
}
