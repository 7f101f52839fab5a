//! The note log of one executor: where its thread notes a deadline miss for the
//! [`explain`](crate::explain) thread, without allocating, blocking or calling the kernel.
//!
//! # Background
//!
//! The explainer once had one log for the whole app, a `Mutex<Vec<_>>` each executor noted
//! into with `try_lock` (a note that found it busy was counted as dropped). Misses are
//! correlated: one host stall makes the tasks of several executors, on different CPUs, miss
//! at the same instant, and then executor A's note was dropped because executor B held the
//! lock for its own push.
//!
//! # Solution
//!
//! One [`NoteLog`] per executor (the explainer keeps one per priority level, each sized for
//! that level's own tasks). Only two threads ever touch a log: its executor, which notes with
//! [`note`](NoteLog::note) (a `try_lock`, then a push if the log has room: the log was
//! preallocated, a push never allocates), and the explain thread, which takes the notes with
//! [`take`](NoteLog::take): it gives its own empty batch, allocated beforehand outside the
//! lock, the log's capacity, and holds the lock for one swap of the two vectors. A note
//! can only find its log busy during that swap (a few ns), never because of another
//! executor. A note that finds the log busy or full is counted ([`dropped`](NoteLog::dropped)),
//! so the report says how many misses went unnoted.
//!
//! The lock is only ever taken with `try_lock`, the explain thread retrying in a spin then
//! yield loop: std's futex mutex (`library/std/src/sys/sync/mutex/futex.rs`) makes its unlock
//! a system call (`FUTEX_WAKE`) only when its state says a thread sleeps in `lock`, and
//! `try_lock` never sets that state. So the executor's unlock is one atomic swap, and neither
//! side ever sleeps on the lock.
//!
//! # Why it works
//!
//! Every note either lands in the vector the log holds at that moment, which the next
//! [`take`](NoteLog::take) hands to the explain thread whole, or is counted: never both and
//! never neither, and no batch holds more than the log's capacity. The loom model at the end
//! of this file checks exactly that under every interleaving of two noting threads and the
//! swapping one (`RUSTFLAGS="--cfg loom" cargo test -p preempt --release --lib note_log`);
//! the stress tests check it with real threads.
//!
//! Its use by the explainer, in outline (crate-internal, so not a doctest; the tests below run
//! it):
//!
//! ```text
//! static LOGS: [NoteLog<Miss>; 100] = [const { NoteLog::new() }; 100];
//! LOGS[level].reset(capacity);     // before the executors start: allocates
//! LOGS[level].note(miss);          // executor thread: no allocation, no system call
//! LOGS[level].take(&mut batch);    // explain thread, each level in turn
//! ```

use std::sync::TryLockError;

use crate::loom::hint;
use crate::loom::sync::atomic::{AtomicU64, Ordering};
use crate::loom::sync::{Mutex, MutexGuard};

/// Failed `try_lock`s after which the explain thread yields its CPU instead of spinning.
/// The executor holds the lock for one push (tens of ns), while 64 `PAUSE`s last about 2 µs
/// (≈ 140 cycles each on Skylake and later: Intel's optimization reference manual, "Pause
/// latency in Skylake microarchitecture"): a lock still held then belongs to an executor
/// that was interrupted, and spinning on would only delay whatever runs on this CPU.
const SPINS_BEFORE_YIELD: u32 = 64;

/// One executor's notes between two passes of the explain thread.
///
/// Aligned to 128 bytes, as `crossbeam-utils`' `CachePadded` is on x86-64 (the spatial
/// prefetcher pulls cache lines in pairs), so that the logs of two executors noting at the
/// same instant on different CPUs do not share a cache line.
#[repr(align(128))]
pub(crate) struct NoteLog<T> {
    log: Mutex<Log<T>>,
    dropped: AtomicU64,
}

/// The notes and how many the log may hold (changed only by [`NoteLog::reset`]).
struct Log<T> {
    notes: Vec<T>,
    capacity: usize,
}

impl<T> Log<T> {
    /// Room for one more note without going over the capacity or allocating.
    #[inline]
    fn has_room(&self) -> bool {
        self.notes.len() < self.capacity && self.notes.len() < self.notes.capacity()
    }
}

/// Why a note was not kept (it is counted in [`NoteLog::dropped`] either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dropped {
    /// The explain thread was swapping the log out.
    Busy,
    /// The log held its capacity of notes.
    Full,
}

impl<T> NoteLog<T> {
    /// An empty log of capacity 0 (every note is dropped until [`reset`](Self::reset)).
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        NoteLog {
            log: Mutex::new(Log {
                notes: Vec::new(),
                capacity: 0,
            }),
            dropped: AtomicU64::new(0),
        }
    }

    /// An empty log of capacity 0 (loom's mutex has no `const` constructor).
    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        NoteLog {
            log: Mutex::new(Log {
                notes: Vec::new(),
                capacity: 0,
            }),
            dropped: AtomicU64::new(0),
        }
    }

    /// Notes `note` if the log is free and has room, else counts it as dropped and says why.
    /// No allocation, no blocking, no system call: the executor's path.
    #[inline]
    pub(crate) fn note(&self, note: T) -> Result<(), Dropped> {
        let why = match self.try_acquire() {
            Some(mut log) if log.has_room() => {
                log.notes.push(note);
                return Ok(());
            }
            Some(_) => Dropped::Full,
            None => Dropped::Busy,
        };
        self.dropped.fetch_add(1, Ordering::Relaxed);
        Err(why)
    }

    /// Hands the notes to `batch`, which must be empty: it takes the log's place with room for
    /// the log's capacity (allocated here outside the lock if it lacks it), and the lock is
    /// held for the swap alone. The explain thread's path.
    pub(crate) fn take(&self, batch: &mut Vec<T>) {
        debug_assert!(batch.is_empty(), "the batch still holds notes");
        loop {
            let mut log = self.acquire();
            if batch.capacity() >= log.capacity {
                std::mem::swap(&mut log.notes, batch);
                return;
            }
            let room = log.capacity;
            drop(log);
            batch.reserve_exact(room);
        }
    }

    /// Empties the log, forgets its dropped notes and gives it room for `capacity` notes
    /// (and no more than that from an earlier run). Allocates: call it before the executor
    /// runs, never on its path.
    pub(crate) fn reset(&self, capacity: usize) {
        let mut log = self.acquire();
        log.notes.clear();
        log.notes.shrink_to(capacity);
        log.notes.reserve_exact(capacity);
        log.capacity = capacity;
        self.dropped.store(0, Ordering::Relaxed);
    }

    /// Notes dropped since the last [`reset`](Self::reset), log busy or full.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The lock if it is free. (Poisoning cannot happen, nothing panics while holding it;
    /// were it poisoned, the notes would still be whole.)
    #[inline]
    fn try_acquire(&self) -> Option<MutexGuard<'_, Log<T>>> {
        match self.log.try_lock() {
            Ok(log) => Some(log),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// The lock, waiting for it by spinning then yielding, never by sleeping in the kernel
    /// (which would make the holder's unlock a system call: see the module docs).
    #[cold]
    fn acquire(&self) -> MutexGuard<'_, Log<T>> {
        let mut tries = 0u32;
        loop {
            if let Some(log) = self.try_acquire() {
                return log;
            }
            if tries < SPINS_BEFORE_YIELD {
                tries += 1;
                hint::spin_loop();
            } else {
                hint::yield_now();
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn a_note_is_kept_within_capacity_and_dropped_when_full_or_busy() {
        let log = NoteLog::new();
        assert_eq!(
            log.note(1u32),
            Err(Dropped::Full),
            "capacity 0 before a reset"
        );
        log.reset(2);
        assert_eq!(log.dropped(), 0);
        assert_eq!(log.note(2), Ok(()));
        assert_eq!(log.note(3), Ok(()));
        assert_eq!(log.note(4), Err(Dropped::Full));
        {
            let _held = log.acquire();
            assert_eq!(log.note(5), Err(Dropped::Busy));
        }
        assert_eq!(log.dropped(), 2);
        let mut batch = Vec::new();
        log.take(&mut batch);
        assert_eq!(batch, [2, 3]);
        // The log now holds the empty batch given to it, with room for the capacity.
        assert_eq!(log.note(6), Ok(()));
        batch.clear();
        log.take(&mut batch);
        assert_eq!(batch, [6]);
        // A smaller capacity later: the log keeps no more than that.
        log.reset(1);
        assert_eq!(log.note(7), Ok(()));
        assert_eq!(log.note(8), Err(Dropped::Full));
        assert_eq!(log.dropped(), 1);
    }

    /// Notes `(thread, 0..notes)` into `log`; returns the refused sequence numbers and why.
    fn note_many(log: &NoteLog<(usize, u32)>, thread: usize, notes: u32) -> Vec<(u32, Dropped)> {
        let mut refused = Vec::with_capacity(notes as usize);
        for seq in 0..notes {
            if let Err(why) = log.note((thread, seq)) {
                refused.push((seq, why));
            }
        }
        refused
    }

    /// Takes the notes of every log in turn until `stop`, then once more; returns each log's
    /// batches concatenated, checking that no batch is over `capacity`.
    fn swap_until(
        logs: &[NoteLog<(usize, u32)>],
        stop: &AtomicBool,
        capacity: usize,
    ) -> Vec<Vec<(usize, u32)>> {
        let mut got = vec![Vec::new(); logs.len()];
        let mut batch = Vec::new();
        loop {
            let last = stop.load(Ordering::Acquire);
            for (log, got) in logs.iter().zip(&mut got) {
                log.take(&mut batch);
                assert!(batch.len() <= capacity, "a batch of {}", batch.len());
                got.append(&mut batch);
            }
            if last {
                return got;
            }
            std::thread::yield_now();
        }
    }

    /// Checks that thread `thread`'s notes `0..notes` are each either delivered (once, in
    /// order) or refused, never both; returns how many were refused.
    fn accounted(
        delivered: &[(usize, u32)],
        thread: usize,
        refused: &[(u32, Dropped)],
        notes: u32,
    ) -> u64 {
        let mine: Vec<u32> = delivered
            .iter()
            .filter(|(t, _)| *t == thread)
            .map(|&(_, seq)| seq)
            .collect();
        assert!(
            mine.windows(2).all(|w| w[0] < w[1]),
            "thread {thread}: a note delivered out of order or twice"
        );
        let mut all: Vec<u32> = mine
            .into_iter()
            .chain(refused.iter().map(|r| r.0))
            .collect();
        all.sort_unstable();
        assert_eq!(
            all,
            (0..notes).collect::<Vec<_>>(),
            "thread {thread}: a note both delivered and refused, or neither"
        );
        refused.len() as u64
    }

    /// Several threads note into one log as fast as they can while another swaps it out:
    /// every note is delivered once or counted dropped (busy or full), never both or neither.
    #[test]
    fn stress_one_log_many_noters_every_note_accounted() {
        const THREADS: usize = 4;
        const NOTES: u32 = 50_000;
        const CAPACITY: usize = 512;
        let logs = [NoteLog::new()];
        logs[0].reset(CAPACITY);
        let stop = AtomicBool::new(false);
        let (delivered, refused) = std::thread::scope(|s| {
            let swapper = s.spawn(|| swap_until(&logs, &stop, CAPACITY));
            let noters: Vec<_> = (0..THREADS)
                .map(|t| {
                    let log = &logs[0];
                    s.spawn(move || note_many(log, t, NOTES))
                })
                .collect();
            let refused: Vec<_> = noters.into_iter().map(|h| h.join().unwrap()).collect();
            stop.store(true, Ordering::Release);
            (swapper.join().unwrap(), refused)
        });
        let dropped: u64 = (0..THREADS)
            .map(|t| accounted(&delivered[0], t, &refused[t], NOTES))
            .sum();
        assert_eq!(logs[0].dropped(), dropped);
        assert_eq!(
            delivered[0].len() as u64 + dropped,
            THREADS as u64 * u64::from(NOTES)
        );
    }

    /// One noting thread per log (one executor each), each log large enough never to fill:
    /// with nobody swapping, not one note is dropped however the threads collide in time;
    /// with a thread taking every log in turn, the only drops are notes that met a swap of
    /// their own log (`Busy`).
    #[test]
    fn stress_one_log_per_noter_drops_only_at_a_swap() {
        const THREADS: usize = 4;
        const NOTES: u32 = 50_000;
        let capacity = NOTES as usize;
        let logs: Vec<NoteLog<(usize, u32)>> = (0..THREADS).map(|_| NoteLog::new()).collect();
        for swapping in [false, true] {
            for log in &logs {
                log.reset(capacity);
            }
            let stop = AtomicBool::new(false);
            let (delivered, refused) = std::thread::scope(|s| {
                let swapper = swapping.then(|| s.spawn(|| swap_until(&logs, &stop, capacity)));
                let noters: Vec<_> = logs
                    .iter()
                    .enumerate()
                    .map(|(t, log)| s.spawn(move || note_many(log, t, NOTES)))
                    .collect();
                let refused: Vec<_> = noters.into_iter().map(|h| h.join().unwrap()).collect();
                stop.store(true, Ordering::Release);
                let delivered = match swapper {
                    Some(h) => h.join().unwrap(),
                    None => swap_until(&logs, &stop, capacity),
                };
                (delivered, refused)
            });
            for (t, log) in logs.iter().enumerate() {
                let dropped = accounted(&delivered[t], t, &refused[t], NOTES);
                assert_eq!(log.dropped(), dropped, "log {t}");
                assert_eq!(delivered[t].len() as u64 + dropped, u64::from(NOTES));
                if !swapping {
                    assert_eq!(dropped, 0, "log {t}: a note dropped with nobody swapping");
                }
                assert!(
                    refused[t].iter().all(|&(_, why)| why == Dropped::Busy),
                    "log {t}: a note dropped for another reason than a swap"
                );
            }
        }
    }
}

/// The loom model: two executors note into one log while the explain thread swaps it out.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        if b.preemption_bound.is_none() {
            b.preemption_bound = Some(3);
        }
        b.check(f);
    }

    /// Notes `(who, 0..notes)` on a new thread; it returns the sequence numbers refused.
    fn noter(log: &Arc<NoteLog<(u8, u8)>>, who: u8, notes: u8) -> thread::JoinHandle<Vec<u8>> {
        let log = Arc::clone(log);
        thread::spawn(move || {
            (0..notes)
                .filter(|&seq| log.note((who, seq)).is_err())
                .collect()
        })
    }

    /// Every note ends up in a swapped batch or counted dropped, never both, never neither;
    /// no batch holds more than the capacity; a thread's notes arrive in order.
    #[test]
    fn every_note_is_delivered_or_counted_dropped() {
        model(|| {
            const CAPACITY: usize = 2;
            let log = Arc::new(NoteLog::new());
            log.reset(CAPACITY);
            // Three notes for a capacity of two: some interleavings fill the log.
            let a = noter(&log, 0, 2);
            let b = noter(&log, 1, 1);
            let mut delivered = Vec::new();
            // The explain thread: one swap while the executors note (its batch has no room
            // yet, so the reserve-and-retry path runs too) ...
            let mut batch = Vec::new();
            log.take(&mut batch);
            assert!(batch.len() <= CAPACITY, "{batch:?}");
            delivered.append(&mut batch);
            let refused = [a.join().unwrap(), b.join().unwrap()];
            // ... and one after they are done.
            log.take(&mut batch);
            assert!(batch.len() <= CAPACITY, "{batch:?}");
            delivered.append(&mut batch);
            for (who, notes) in [(0u8, 2u8), (1, 1)] {
                let refused = &refused[usize::from(who)];
                let mine: Vec<u8> = delivered
                    .iter()
                    .filter(|(w, _)| *w == who)
                    .map(|&(_, seq)| seq)
                    .collect();
                assert!(mine.windows(2).all(|w| w[0] < w[1]), "{delivered:?}");
                let mut all: Vec<u8> = mine.iter().chain(refused).copied().collect();
                all.sort_unstable();
                assert_eq!(
                    all,
                    (0..notes).collect::<Vec<_>>(),
                    "delivered {delivered:?}, refused {refused:?}"
                );
            }
            let dropped = refused.iter().map(Vec::len).sum::<usize>();
            assert_eq!(log.dropped(), dropped as u64);
        });
    }
}
