//! The real-time → non-real-time bridge: a wait-free single-producer single-consumer ring
//! from a real-time task to an ordinary thread that may block (logging, network, ROS).
//!
//! The real-time side must never wait for the other side, which may be descheduled for
//! milliseconds. So [`Sender::send`] finishes in a fixed number of steps whatever the
//! receiver does: when the ring is full it hands the value back and counts an
//! **overflow**, it never blocks or retries. The receiver blocks in [`Receiver::recv`] (a
//! futex wait) until data arrives or the sender is gone.
//!
//! ```
//! let (mut tx, mut rx) = preempt::bridge::channel::<u32>(2);
//! let logger = std::thread::spawn(move || {
//!     let mut got = Vec::new();
//!     while let Some(v) = rx.recv() {
//!         got.push(v);
//!     }
//!     (got, rx.overflows())
//! });
//! let mut refused = 0;
//! for v in 0..1000 {
//!     if tx.send(v).is_err() {
//!         refused += 1; // full: the RT side goes on; the bridge counted it
//!     }
//! }
//! drop(tx); // the receiver drains what is left, then gets None
//! let (got, overflows) = logger.join().unwrap();
//! assert_eq!(got.len() as u64 + overflows, 1000);
//! assert_eq!(overflows, refused);
//! assert!(got.windows(2).all(|w| w[0] < w[1])); // in order, nothing duplicated
//! ```
//!
//! # The ring
//!
//! `head` (next position to read, written by the receiver) and `tail` (next position to
//! write, written by the sender) are free-running counters; slot = position mod capacity.
//!
//! | side     | step                                                                    |
//! |----------|-------------------------------------------------------------------------|
//! | `send`   | `head` (acquire); full if `tail - head == capacity`: count, return `Err` |
//! |          | write the slot, `tail + 1` (release), notify the receiver's event       |
//! | `try_recv` | `tail` (acquire); empty if equal to `head`                            |
//! |          | read the slot, `head + 1` (release)                                     |
//!
//! **Why it works.** A slot is written only between the sender's acquire of `head` (which
//! proves the receiver finished reading that slot in the previous lap: it read before its
//! release of `head`) and its release of `tail`; it is read only after the receiver's
//! acquire of that `tail`. Each counter has one writer, so no compare-and-swap is needed and
//! both operations are wait-free. The receiver's wake-up is `preempt_sync::event::Event`:
//! the sender's notify is one atomic swap, plus a non-blocking `FUTEX_WAKE` only when the
//! receiver sleeps. The model in `tests/loom_bridge.rs` checks order, no loss besides
//! counted overflows, and no lost wake-up under every interleaving loom explores.

use std::fmt;
use std::mem::MaybeUninit;

use preempt_sync::event::Event;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Pads a counter to 128 bytes (two cache lines: the adjacent-line prefetcher, see
/// `crossbeam-utils/src/cache_padded.rs`) so that the sender's and the receiver's counters
/// never share a line.
#[repr(align(128))]
struct Padded<T>(T);

struct Shared<T> {
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
    head: Padded<AtomicUsize>,
    tail: Padded<AtomicUsize>,
    overflows: AtomicU64,
    sender_gone: AtomicBool,
    receiver_gone: AtomicBool,
    /// The receiver sleeps on it.
    event: Event,
}

// SAFETY: values move from the sender's thread to the receiver's, so `T: Send`; a slot is
// only accessed by one side at a time (module docs, "Why it works").
unsafe impl<T: Send> Sync for Shared<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Shared<T> {}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        // Both sides are gone: drop the values still in the ring.
        let head = self.head.0.load(Ordering::Relaxed);
        let tail = self.tail.0.load(Ordering::Relaxed);
        let cap = self.slots.len();
        for pos in head..tail {
            self.slots[pos % cap].with_mut(|slot| {
                // SAFETY: positions head..tail hold values written by the sender and not yet
                // read; we are the last owner.
                unsafe { (*slot).assume_init_drop() }
            });
        }
    }
}

/// Creates a bridge of `capacity` values (allocated here, once: create it in `init`).
///
/// # Panics
/// If `capacity` is 0.
pub fn channel<T: Send>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    assert!(capacity > 0, "a bridge needs a capacity of at least 1");
    let slots = (0..capacity)
        .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
        .collect();
    let shared = Arc::new(Shared {
        slots,
        head: Padded(AtomicUsize::new(0)),
        tail: Padded(AtomicUsize::new(0)),
        overflows: AtomicU64::new(0),
        sender_gone: AtomicBool::new(false),
        receiver_gone: AtomicBool::new(false),
        event: Event::new(),
    });
    (
        Sender {
            shared: shared.clone(),
            tail: 0,
        },
        Receiver { shared, head: 0 },
    )
}

/// The real-time end. Put it in a `#[local]` resource of the task that produces.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
    /// The sender's own copy of `tail`.
    tail: usize,
}

/// The ordinary-thread end.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    /// The receiver's own copy of `head`.
    head: usize,
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("capacity", &self.shared.slots.len())
            .field("overflows", &self.overflows())
            .finish()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("capacity", &self.shared.slots.len())
            .field("overflows", &self.overflows())
            .finish()
    }
}

impl<T> Sender<T> {
    /// Puts `value` in the ring, or, if it is full, counts an overflow and gives `value`
    /// back. Wait-free: a bounded number of steps, no lock, and a system call only to wake a
    /// sleeping receiver (`FUTEX_WAKE`, which does not block).
    ///
    /// # Errors
    /// `Err(value)` when the ring is full (the receiver is behind).
    pub fn send(&mut self, value: T) -> Result<(), T> {
        let s = &*self.shared;
        let head = s.head.0.load(Ordering::Acquire);
        let cap = s.slots.len();
        debug_assert!(self.tail.wrapping_sub(head) <= cap);
        if self.tail.wrapping_sub(head) == cap {
            s.overflows.fetch_add(1, Ordering::Relaxed);
            return Err(value);
        }
        s.slots[self.tail % cap].with_mut(|slot| {
            // SAFETY: the slot at `tail` is free: the receiver released it (its `head` store,
            // acquired above, is past it) and only this sender writes.
            unsafe { (*slot).write(value) };
        });
        self.tail = self.tail.wrapping_add(1);
        s.tail.0.store(self.tail, Ordering::Release);
        s.event.notify();
        Ok(())
    }

    /// Values refused because the ring was full, since creation.
    pub fn overflows(&self) -> u64 {
        self.shared.overflows.load(Ordering::Relaxed)
    }

    /// `true` once the receiver has been dropped (sends still succeed or overflow; nobody
    /// reads them).
    pub fn is_disconnected(&self) -> bool {
        self.shared.receiver_gone.load(Ordering::Relaxed)
    }

    /// The ring's capacity.
    pub fn capacity(&self) -> usize {
        self.shared.slots.len()
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        self.shared.sender_gone.store(true, Ordering::Release);
        self.shared.event.notify();
    }
}

impl<T> Receiver<T> {
    /// Takes the oldest value, if any, without blocking.
    pub fn try_recv(&mut self) -> Option<T> {
        let s = &*self.shared;
        let tail = s.tail.0.load(Ordering::Acquire);
        if tail == self.head {
            return None;
        }
        let cap = s.slots.len();
        let value = s.slots[self.head % cap].with(|slot| {
            // SAFETY: `head < tail`: the sender wrote this slot before its release of `tail`,
            // which we acquired; it does not touch it again until we release `head`.
            unsafe { (*slot).assume_init_read() }
        });
        self.head = self.head.wrapping_add(1);
        s.head.0.store(self.head, Ordering::Release);
        Some(value)
    }

    /// Takes the oldest value, sleeping until one arrives; `None` once the sender is gone
    /// and the ring is empty.
    pub fn recv(&mut self) -> Option<T> {
        loop {
            if let Some(v) = self.try_recv() {
                return Some(v);
            }
            if self.shared.sender_gone.load(Ordering::Acquire) {
                // Values sent before the drop are visible after this acquire.
                return self.try_recv();
            }
            // Woken by a send or the sender's drop (both notify after publishing).
            self.shared.event.wait_until(None);
        }
    }

    /// Like [`recv`](Self::recv), but gives up at the absolute `CLOCK_MONOTONIC` time
    /// `deadline_ns`: `Err(RecvTimeout::Timeout)`; `Err(RecvTimeout::Disconnected)` once the
    /// sender is gone and the ring is empty.
    ///
    /// # Errors
    /// As described.
    #[cfg(not(loom))]
    pub fn recv_until(&mut self, deadline_ns: u64) -> Result<T, RecvTimeout> {
        use preempt_sync::event::Woke;
        loop {
            if let Some(v) = self.try_recv() {
                return Ok(v);
            }
            if self.shared.sender_gone.load(Ordering::Acquire) {
                return self.try_recv().ok_or(RecvTimeout::Disconnected);
            }
            if self.shared.event.wait_until(Some(deadline_ns)) == Woke::Deadline {
                return self.try_recv().ok_or(RecvTimeout::Timeout);
            }
        }
    }

    /// Values the sender could not put in the ring because it was full.
    pub fn overflows(&self) -> u64 {
        self.shared.overflows.load(Ordering::Relaxed)
    }

    /// Values waiting in the ring.
    pub fn len(&self) -> usize {
        self.shared
            .tail
            .0
            .load(Ordering::Acquire)
            .wrapping_sub(self.head)
    }

    /// `true` if nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.shared.receiver_gone.store(true, Ordering::Relaxed);
    }
}

/// Why [`Receiver::recv_until`] returned no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvTimeout {
    /// The deadline passed.
    Timeout,
    /// The sender is gone and the ring is empty.
    Disconnected,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fills_overflows_and_drains_in_order() {
        let (mut tx, mut rx) = channel::<String>(3);
        for i in 0..5 {
            let r = tx.send(i.to_string());
            assert_eq!(r.is_ok(), i < 3, "send {i}");
        }
        assert_eq!(tx.overflows(), 2);
        assert_eq!(rx.len(), 3);
        assert_eq!(rx.try_recv().as_deref(), Some("0"));
        tx.send("5".into()).unwrap();
        let rest: Vec<String> = std::iter::from_fn(|| rx.try_recv()).collect();
        assert_eq!(rest, ["1", "2", "5"]);
        assert!(rx.is_empty());
        // Values left in the ring are dropped with it (no leak: Miri/valgrind would say).
        tx.send("left".into()).unwrap();
        drop(rx);
        assert!(tx.is_disconnected());
    }

    #[test]
    fn recv_until_times_out_then_reports_disconnection() {
        let (tx, mut rx) = channel::<u8>(1);
        let deadline = preempt_io::sys::clock::monotonic_now_ns() + 2_000_000;
        assert_eq!(rx.recv_until(deadline), Err(RecvTimeout::Timeout));
        assert!(preempt_io::sys::clock::monotonic_now_ns() >= deadline);
        drop(tx);
        assert_eq!(rx.recv_until(u64::MAX), Err(RecvTimeout::Disconnected));
        assert_eq!(rx.recv(), None);
    }

    #[test]
    fn a_sleeping_receiver_is_woken_by_send() {
        let (mut tx, mut rx) = channel::<u64>(4);
        let t = std::thread::spawn(move || rx.recv());
        // Whether the receiver already sleeps or not, the value reaches it.
        tx.send(42).unwrap();
        assert_eq!(t.join().unwrap(), Some(42));
    }
}
