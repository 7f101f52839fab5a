//! [`Event`]: a futex wake-up for one consumer thread that costs one atomic swap and
//! **no system call** on `notify` unless the consumer is asleep.
//!
//! # The no-lost-wake-up protocol
//!
//! The futex word has three states (the same as `std`'s futex `thread::park`):
//!
//! | state      | value        | meaning                                                   |
//! |------------|--------------|-----------------------------------------------------------|
//! | `EMPTY`    | `0`          | no pending notification; the consumer is awake            |
//! | `NOTIFIED` | `1`          | a notification is pending (a token)                       |
//! | `PARKED`   | `u32::MAX`   | the consumer is asleep in `FUTEX_WAIT` or about to be     |
//!
//! | operation                         | transition                         | system call        |
//! |-----------------------------------|------------------------------------|--------------------|
//! | [`notify`](Event::notify)         | any → `NOTIFIED` (swap, release)   | `FUTEX_WAKE` only if it was `PARKED` |
//! | [`wait_until`](Event::wait_until) | `NOTIFIED` → `EMPTY`: return       | none               |
//! |                                   | `EMPTY` → `PARKED`: sleep while `PARKED` | `FUTEX_WAIT_BITSET` |
//! | (after sleeping)                  | `NOTIFIED` → `EMPTY`: return       |                    |
//! | (deadline passed)                 | any → `EMPTY` (swap): return       |                    |
//!
//! Use it with a queue like this (producers: push, then notify; consumer: drain, then wait):
//!
//! ```text
//! producer:  queue.try_push(x)?;  event.notify();
//! consumer:  loop { while let Some(x) = queue.pop() { run(x) }   event.wait_until(deadline); }
//! ```
//!
//! **Why no wake-up is lost.** A consumer that found the queue empty and calls `wait_until`
//! either (a) finds `NOTIFIED`: some producer notified after the consumer last consumed a
//! token, so the consumer returns at once and drains again; or (b) moves `EMPTY → PARKED`
//! by a read-modify-write. Every `notify` is also a read-modify-write of the same word, so
//! all of them are totally ordered with the consumer's. A producer whose swap comes after
//! (b) reads `PARKED` and issues `FUTEX_WAKE`; the kernel's `FUTEX_WAIT` compares the word
//! with `PARKED` under its bucket lock, so the consumer either sees `NOTIFIED` there and
//! does not sleep, or is asleep and woken. A producer whose swap comes before (b) left
//! `NOTIFIED`, which is case (a). Its push happened before its swap (release) and the
//! consumer's read of `NOTIFIED` is an acquire, so the drained queue contains it.
//!
//! Loom checks this in `tests/loom_event.rs` with a futex model in which a missed wake-up
//! deadlocks.
//!
//! Only one thread may wait on an `Event` at a time (its consumer). `notify` may be called
//! from any thread, including the consumer itself.
//!
//! # Example
//!
//! ```
//! use preempt_sync::event::{Event, Woke};
//!
//! static EV: Event = Event::new();
//! EV.notify(); // nobody sleeps: no system call, a token is left
//! assert_eq!(EV.wait_until(None), Woke::Notified); // consumes the token at once
//! // Nothing pending and a deadline in the past: returns at once.
//! assert_eq!(EV.wait_until(Some(0)), Woke::Deadline);
//! ```

use crate::futex::{self, Wait};
use crate::loom::sync::atomic::{AtomicU32, Ordering};

const EMPTY: u32 = 0;
const NOTIFIED: u32 = 1;
const PARKED: u32 = u32::MAX;

/// Why [`Event::wait_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woke {
    /// A [`notify`](Event::notify) happened since the last return.
    Notified,
    /// The deadline passed without a notification.
    Deadline,
}

/// A futex-based wake-up for one consumer thread (see the [module docs](self)).
#[derive(Debug)]
pub struct Event {
    state: AtomicU32,
}

impl Event {
    /// A new event with no pending notification. `const`, so it can live in a `static`.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            state: AtomicU32::new(EMPTY),
        }
    }

    /// A new event (loom build).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            state: AtomicU32::new(EMPTY),
        }
    }

    /// Wakes the consumer, or leaves a token so its next [`wait_until`](Self::wait_until)
    /// returns at once. One atomic swap; a `FUTEX_WAKE` system call only if the consumer
    /// is asleep.
    #[inline]
    pub fn notify(&self) {
        if self.state.swap(NOTIFIED, Ordering::Release) == PARKED {
            self.wake_consumer();
        }
    }

    #[cold]
    fn wake_consumer(&self) {
        if let Err(e) = futex::wake(&self.state, 1) {
            futex::unexpected("FUTEX_WAKE", e);
        }
    }

    /// `true` if the consumer is asleep (or about to sleep) in
    /// [`wait_until`](Self::wait_until). Diagnostic only: the answer may be stale at once.
    pub fn consumer_parked(&self) -> bool {
        self.state.load(Ordering::Relaxed) == PARKED
    }

    /// Consumer only: returns when a notification is pending (consuming it), when the
    /// absolute `CLOCK_MONOTONIC` deadline passes (`None` = never), or after a spurious
    /// futex return turned out to be a real notification. Never returns
    /// [`Woke::Notified`] without a `notify` having happened.
    ///
    /// # Panics
    ///
    /// If the kernel rejects the wait (`EINVAL`/`EFAULT`), which for this valid word can
    /// only mean a bug, or (debug builds) if two threads wait at once.
    pub fn wait_until(&self, deadline_ns: Option<u64>) -> Woke {
        let previous = self.state.fetch_sub(1, Ordering::Acquire);
        debug_assert_ne!(previous, PARKED, "two threads wait on one Event");
        if previous == NOTIFIED {
            return Woke::Notified; // NOTIFIED -> EMPTY
        }
        // EMPTY -> PARKED.
        self.wait_slow(deadline_ns)
    }

    #[cold]
    fn wait_slow(&self, deadline_ns: Option<u64>) -> Woke {
        loop {
            match futex::wait(&self.state, PARKED, deadline_ns) {
                Ok(Wait::TimedOut) => {
                    return if self.state.swap(EMPTY, Ordering::Acquire) == NOTIFIED {
                        Woke::Notified
                    } else {
                        Woke::Deadline
                    };
                }
                Ok(Wait::Woken | Wait::ValueChanged | Wait::Interrupted) => {}
                Err(e) => futex::unexpected("FUTEX_WAIT_BITSET", e),
            }
            if self
                .state
                .compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Woke::Notified;
            }
        }
    }
}

impl Default for Event {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    use crate::clock::now_ns;

    #[test]
    fn token_is_consumed_once() {
        let ev = Event::new();
        ev.notify();
        ev.notify();
        assert_eq!(ev.wait_until(None), Woke::Notified);
        assert_eq!(ev.wait_until(Some(now_ns())), Woke::Deadline);
    }

    #[test]
    fn deadline_returns_without_notification() {
        let ev = Event::new();
        let deadline = now_ns() + 2_000_000;
        assert_eq!(ev.wait_until(Some(deadline)), Woke::Deadline);
        assert!(
            now_ns() >= deadline,
            "returned before the absolute deadline"
        );
        assert!(!ev.consumer_parked());
    }

    #[test]
    fn sleeping_consumer_is_woken() {
        let ev = Arc::new(Event::new());
        let done = Arc::new(AtomicBool::new(false));
        let consumer = {
            let (ev, done) = (ev.clone(), done.clone());
            std::thread::spawn(move || {
                assert_eq!(ev.wait_until(None), Woke::Notified);
                done.store(true, Ordering::SeqCst);
            })
        };
        while !ev.consumer_parked() {
            std::thread::yield_now();
        }
        assert!(!done.load(Ordering::SeqCst));
        ev.notify();
        consumer.join().unwrap();
        assert!(done.load(Ordering::SeqCst));
    }
}
