//! Log-spaced Prometheus bucket bounds, in seconds, filled from a `preempt-stats` histogram.
//!
//! # Background
//! A Prometheus histogram is a fixed list of cumulative `le` buckets: every bound is a time
//! series on the server, so a fleet cannot afford the 4 608 counters of the histogram preempt
//! records into. Latencies span 1 µs (a quiet wake-up) to tens of milliseconds (a throttled or
//! preempted host), so linear buckets are useless and powers of ten too coarse for
//! `histogram_quantile`.
//!
//! # Solution
//! The bounds are the IEC 60063 E6 series (1, 1.5, 2.2, 3.3, 4.7, 6.8 per decade; successive
//! bounds differ by at most ×1.5) from 1 µs to 10 s: [`BOUNDS_NS`], 43 bounds plus `+Inf`.
//! The measuring thread still records into one [`preempt_stats::histogram::Histogram`] (one
//! histogram in the project); at scrape time each of its buckets is counted in the first
//! Prometheus bucket whose bound is at least the HDR bucket's upper end.
//!
//! # Why it works
//! An HDR bucket is at most 1/128 of its value wide ([`preempt_stats::histogram::Digits2`]), so
//! placing it by its upper end moves a sample at most 0.78 % of its value: a sample that close
//! below (or at) a bound is counted one Prometheus bucket up, never down, so a quantile errs
//! high, never low, and by far less than the ×1.5 spacing of the bounds. `_sum` and `_count` are
//! exact.
//!
//! ```
//! use preempt_metrics::buckets::{prometheus_buckets, BOUNDS_NS};
//! use preempt_stats::histogram::Histogram;
//! let h: Histogram = Histogram::new();
//! h.record(12_000); // 12 µs
//! h.record(900_000); // 0.9 ms
//! let b = prometheus_buckets(&h.snapshot());
//! assert_eq!(b.len(), BOUNDS_NS.len() + 1);
//! assert_eq!(b.iter().map(|(_, n)| n).sum::<u64>(), 2);
//! let le_15us = b.iter().position(|(le, _)| (*le - 15e-6).abs() < 1e-12).unwrap();
//! assert_eq!(b[le_15us].1, 1);
//! ```

use preempt_stats::histogram::HistogramSnapshot;

/// E6 preferred numbers, one decade (IEC 60063).
const E6: [u64; 6] = [10, 15, 22, 33, 47, 68];

/// The bucket bounds, ns: E6 from 1 µs to 6.8 s, then 10 s.
pub const BOUNDS_NS: [u64; 43] = bounds();

const fn bounds() -> [u64; 43] {
    let mut out = [0u64; 43];
    let mut decade = 100; // 1 µs = 10 · 100 ns
    let mut i = 0;
    while i < 42 {
        out[i] = E6[i % 6] * decade;
        i += 1;
        if i % 6 == 0 {
            decade *= 10;
        }
    }
    out[42] = 10_000_000_000;
    out
}

/// Per-bucket (not cumulative) counts at [`BOUNDS_NS`] in seconds, then `+Inf`: the shape
/// `prometheus_client`'s `encode_histogram` takes.
pub fn prometheus_buckets(snapshot: &HistogramSnapshot) -> Vec<(f64, u64)> {
    let mut out: Vec<(f64, u64)> = BOUNDS_NS
        .iter()
        .map(|&b| (b as f64 / 1e9, 0))
        .chain(std::iter::once((f64::INFINITY, 0)))
        .collect();
    for b in &snapshot.buckets {
        let i = BOUNDS_NS.partition_point(|&bound| bound < b.high_ns);
        out[i].1 += b.count;
    }
    out
}

/// Index of the Prometheus bucket a value in ns falls into (`BOUNDS_NS.len()` = `+Inf`).
pub fn bucket_of(value_ns: u64) -> usize {
    BOUNDS_NS.partition_point(|&bound| bound < value_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use preempt_stats::histogram::Histogram;

    #[test]
    fn bounds_are_the_e6_series_and_strictly_increasing() {
        assert_eq!(
            &BOUNDS_NS[..7],
            &[1_000, 1_500, 2_200, 3_300, 4_700, 6_800, 10_000]
        );
        assert_eq!(BOUNDS_NS[41], 6_800_000_000);
        assert_eq!(BOUNDS_NS[42], 10_000_000_000);
        for w in BOUNDS_NS.windows(2) {
            assert!(
                w[1] > w[0] && w[1] * 2 <= w[0] * 3,
                "{w:?}: at most x1.5 apart"
            );
        }
    }

    #[test]
    fn every_sample_lands_in_the_bucket_of_its_value() {
        let h: Histogram = Histogram::new();
        let values = [0, 900, 1_010, 1_400, 20_000, 30_000, 900_000, 9_000_000_000];
        let values = values.into_iter().chain([20_000_000_000, 50_000]);
        let mut want = vec![0u64; BOUNDS_NS.len() + 1];
        for v in values {
            h.record(v);
            want[bucket_of(v)] += 1;
        }
        let got: Vec<u64> = prometheus_buckets(&h.snapshot())
            .iter()
            .map(|b| b.1)
            .collect();
        assert_eq!(got, want);
        assert_eq!(got[BOUNDS_NS.len()], 1, "20 s goes to +Inf");
    }

    #[test]
    fn a_sample_at_a_bound_errs_one_bucket_high_never_low() {
        let h: Histogram = Histogram::new();
        h.record(1_000_000); // exactly 1 ms: its HDR bucket reaches 1.0035 ms
        let got = prometheus_buckets(&h.snapshot());
        let i = got.iter().position(|b| b.1 == 1).unwrap();
        assert_eq!(i, bucket_of(1_000_000) + 1);
    }
}
