//! The maximum of a value over a sliding time window, written by one real-time thread and read
//! by others, with no lock and no allocation.
//!
//! # Background
//! "The worst latency since start" only grows: after one bad minute it hides whether the machine
//! is fine now. Operators want the worst of the last minute too, but a true sliding maximum
//! needs the samples of the whole window (60 000 at 1 kHz), or a monotonic deque that the
//! writer would have to share with readers.
//!
//! # Solution
//! Time is cut into [`SLOTS`] slots of `window / SLOTS`. Each slot holds the sequence number of
//! the time slot it describes and the maximum recorded in it. The writer, on entering a new
//! slot, overwrites the recycled slot's maximum and then publishes the new sequence number; a
//! reader takes the maximum of the slots whose sequence number lies within the last `SLOTS`
//! slots of *its* clock, so slots the writer never reached (it stalled, or stopped) age out.
//!
//! # Why it works
//! The reported maximum covers between `window − window/SLOTS` and `window` of the past, the
//! usual ring-of-buckets approximation (as in Prometheus' own `max_over_time` over scrapes).
//! A reader racing the writer's slot change may see the new sequence number with the old
//! maximum or the reverse: for one read, the value of that single slot is off by one slot's
//! worth of data, never torn (each field is one atomic word).
//!
//! ```
//! use preempt_metrics::window::SlidingMax;
//! let w = SlidingMax::new(60_000_000_000); // 60 s window, 1 s slots
//! w.record(1_000_000_000, 50);
//! w.record(30_000_000_000, 20);
//! assert_eq!(w.max_at(31_000_000_000), 50);
//! assert_eq!(w.max_at(70_000_000_000), 20, "the 50 aged out");
//! assert_eq!(w.max_at(200_000_000_000), 0);
//! ```

use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

/// Slots per window: one second per slot for the default one-minute window.
pub const SLOTS: usize = 60;

#[derive(Debug, Default)]
struct Slot {
    /// Time slot number + 1 (0 = never written).
    seq: AtomicU64,
    max: AtomicU64,
}

/// A sliding-window maximum (see the module docs). Single writer.
#[derive(Debug)]
pub struct SlidingMax {
    slot_ns: u64,
    slots: [Slot; SLOTS],
}

impl SlidingMax {
    /// A window of `window_ns` (rounded down to a multiple of [`SLOTS`] ns, at least `SLOTS`).
    pub fn new(window_ns: u64) -> SlidingMax {
        SlidingMax {
            slot_ns: (window_ns / SLOTS as u64).max(1),
            slots: std::array::from_fn(|_| Slot::default()),
        }
    }

    /// The window's length, ns.
    pub fn window_ns(&self) -> u64 {
        self.slot_ns * SLOTS as u64
    }

    /// Records `value` at time `at_ns`. Only one thread may call this. No allocation, no lock,
    /// no syscall: two or three relaxed loads and stores.
    #[inline]
    pub fn record(&self, at_ns: u64, value: u64) {
        let seq = at_ns / self.slot_ns + 1;
        let slot = &self.slots[(seq % SLOTS as u64) as usize];
        if slot.seq.load(Relaxed) != seq {
            slot.max.store(value, Relaxed);
            slot.seq.store(seq, Release);
        } else if value > slot.max.load(Relaxed) {
            slot.max.store(value, Relaxed);
        }
    }

    /// The maximum recorded within the window ending at `now_ns` (0 if nothing was).
    pub fn max_at(&self, now_ns: u64) -> u64 {
        let current = now_ns / self.slot_ns + 1;
        self.slots
            .iter()
            .filter_map(|s| {
                let seq = s.seq.load(Acquire);
                (seq != 0 && seq <= current && current - seq < SLOTS as u64)
                    .then(|| s.max.load(Relaxed))
            })
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_reused_only_for_its_own_time() {
        let w = SlidingMax::new(60);
        w.record(0, 9);
        w.record(0, 3);
        assert_eq!(w.max_at(0), 9);
        w.record(60, 1); // same ring slot, one window later: overwrites
        assert_eq!(w.max_at(60), 1);
    }

    #[test]
    fn matches_a_brute_force_window_on_a_random_walk() {
        let w = SlidingMax::new(6_000);
        let mut samples = Vec::new();
        let mut x = 12345u64;
        let mut t = 0;
        for _ in 0..5_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            t += x >> 60; // 0..15 ns steps
            let v = (x >> 33) % 1000;
            w.record(t, v);
            samples.push((t, v));
            let slot = 100; // 6000 / SLOTS
            let lo = (t / slot + 1).saturating_sub(SLOTS as u64 - 1);
            let want = samples
                .iter()
                .filter(|(at, _)| at / slot + 1 >= lo)
                .map(|s| s.1)
                .max()
                .unwrap();
            assert_eq!(w.max_at(t), want, "at {t}");
        }
    }
}
