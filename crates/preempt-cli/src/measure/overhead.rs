//! The tool's own overhead: the cost of reading CLOCK_MONOTONIC, the floor under every
//! latency sample (STYLE.md item 13, after hyperfine's `calibrate`).

use preempt_io::sys::clock::{self, ClockId};

use crate::results::Overhead;
use crate::stats::histogram::Histogram;
use crate::stats::summary::Summary;

/// Back-to-back clock reads measured; enough for stable percentiles, well under 10 ms.
pub const CLOCK_READ_SAMPLES: u64 = 20_000;

/// Measures two back-to-back CLOCK_MONOTONIC reads [`CLOCK_READ_SAMPLES`] times.
pub fn measure() -> Overhead {
    let h = Histogram::new();
    for i in 0..CLOCK_READ_SAMPLES {
        let a = clock::now_ns(ClockId::Monotonic);
        let b = clock::now_ns(ClockId::Monotonic);
        h.record(b.saturating_sub(a), i);
    }
    Overhead {
        clock_read: Summary::from_snapshot(&h.snapshot()),
        clock_resolution_ns: clock::resolution_ns(ClockId::Monotonic).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clock_reads_are_counted_and_ordered() {
        let o = super::measure();
        let s = o.clock_read;
        assert_eq!(s.count, super::CLOCK_READ_SAMPLES);
        assert!(s.min_ns <= s.p50_ns && s.p50_ns <= s.p99_ns && s.p99_ns <= s.max_ns);
        assert!(o.clock_resolution_ns >= 1);
    }
}
