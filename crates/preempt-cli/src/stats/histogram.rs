//! The CLI's recorder: `preempt-stats`' HdrHistogram-compatible histogram plus the few largest
//! samples with the cycle they occurred in.
//!
//! # Background
//! cyclictest keeps one bucket per microsecond up to `-h N` and lumps everything above into an
//! "overflow" count, so its histogram loses exactly the samples a real-time engineer cares
//! about. The project has one log-linear (HdrHistogram) histogram,
//! [`preempt_stats::histogram::Histogram`]; the CLI records into it and adds only what a
//! measurement report needs on top: the [`WORST_KEPT`] largest samples with their cycle index,
//! so a spike can be found again in a `--trace-samples` file.
//!
//! # Solution
//! Precision [`Digits3`] (HdrHistogram's three significant digits, [`SUB_BUCKET_BITS`] = 11):
//! values `0..2048` ns are exact, every range `[2^k, 2^(k+1))` above is split into 1024 equal
//! sub-buckets, so a value is known to within 1/1024 (0.1 %) of itself: ±0.05 µs at 50 µs,
//! ±10 µs at 10 ms. That is finer everywhere than the CLI's former own layout (exact below 512 ns,
//! 1/256 above, tag 9), whose files still load (see `results::Distribution::to_snapshot`).
//! Values up to one hour are tracked at that precision; larger ones are counted in the top
//! bucket while `max` stays exact. Memory: 33 792 counters, 264 KiB per histogram, allocated
//! once on the heap by [`Histogram::new`]. Recording stays allocation- and lock-free.
//!
//! # Why it works
//! The bucket math and its proof live with the histogram in `preempt-stats`; this module only
//! forwards each sample and keeps the worst ones, which a single comparison with the smallest
//! kept value rejects for almost every sample.
//!
//! ```
//! use preempt_cli::stats::histogram::Histogram;
//! let h = Histogram::new();
//! for v in [1_000, 2_000, 3_000, 1_000_000] {
//!     h.record(v, 0);
//! }
//! let s = h.snapshot();
//! assert_eq!(s.count(), 4);
//! assert_eq!(s.max_ns(), 1_000_000);
//! assert!(s.value_at_quantile(0.5) >= 2_000 && s.value_at_quantile(0.5) < 2_003);
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use preempt_stats::histogram::{
    Bucket, Digits3, Histogram as HdrHistogram, HistogramSnapshot, Layout, Precision,
};

/// The layout every CLI histogram records with.
pub const LAYOUT: Layout = Digits3::LAYOUT;

/// The layout tag stored in result files: values below `2^SUB_BUCKET_BITS` ns are exact, and
/// each power-of-two range above is split into `2^(SUB_BUCKET_BITS - 1)` buckets
/// (HdrHistogram's sub-bucket count magnitude; 11 for three significant digits).
pub const SUB_BUCKET_BITS: u32 = LAYOUT.exact_below_ns().trailing_zeros();

/// How many of the largest samples (value and cycle index) are kept.
pub const WORST_KEPT: usize = 8;

/// A concurrent histogram: one writer records, any thread may [`snapshot`] it.
///
/// The counts, exact count, sum, minimum and maximum are `preempt-stats`' histogram; besides
/// them it keeps the [`WORST_KEPT`] largest samples with their cycle index.
///
/// [`snapshot`]: Histogram::snapshot
pub struct Histogram {
    hdr: Box<HdrHistogram<Digits3>>,
    worst_values: [AtomicU64; WORST_KEPT],
    worst_cycles: [AtomicU64; WORST_KEPT],
    worst_floor: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.hdr.count())
            .field("max", &self.hdr.max())
            .finish_non_exhaustive()
    }
}

impl Histogram {
    /// Allocates an empty histogram (the only allocation it ever makes; on the heap, so it
    /// can be created on a small measuring-thread stack).
    pub fn new() -> Self {
        Self {
            hdr: HdrHistogram::new_boxed(),
            worst_values: std::array::from_fn(|_| AtomicU64::new(0)),
            worst_cycles: std::array::from_fn(|_| AtomicU64::new(0)),
            worst_floor: AtomicU64::new(0),
        }
    }

    /// Records one sample taken at cycle `cycle`. Allocation-free and lock-free.
    ///
    /// Single writer (as `preempt-stats`' histogram): two concurrent writers could lose counts
    /// or a worst sample, never memory safety.
    #[inline]
    pub fn record(&self, value_ns: u64, cycle: u64) {
        self.hdr.record(value_ns);
        // The worst list holds the WORST_KEPT largest values; most samples are below all of
        // them and are rejected by one comparison with the cached floor.
        if value_ns > self.worst_floor.load(Relaxed) {
            self.insert_worst(value_ns, cycle);
        }
    }

    #[cold]
    fn insert_worst(&self, value_ns: u64, cycle: u64) {
        let (slot, _) = self
            .worst_values
            .iter()
            .enumerate()
            .min_by_key(|(_, v)| v.load(Relaxed))
            .expect("WORST_KEPT > 0");
        self.worst_cycles[slot].store(cycle, Relaxed);
        self.worst_values[slot].store(value_ns, Relaxed);
        let floor = self
            .worst_values
            .iter()
            .map(|v| v.load(Relaxed))
            .min()
            .unwrap_or(0);
        self.worst_floor.store(floor, Relaxed);
    }

    /// Copies the current state into an owned [`Snapshot`] (allocates; not for the hot path).
    pub fn snapshot(&self) -> Snapshot {
        let hdr = self.hdr.snapshot();
        let mut worst: Vec<(u64, u64)> = self
            .worst_values
            .iter()
            .zip(&self.worst_cycles)
            .map(|(v, c)| (v.load(Relaxed), c.load(Relaxed)))
            .collect();
        sort_worst(&mut worst);
        worst.truncate(
            usize::try_from(hdr.count)
                .unwrap_or(usize::MAX)
                .min(WORST_KEPT),
        );
        Snapshot { hdr, worst }
    }
}

/// Largest first; equal values by earliest cycle.
fn sort_worst(worst: &mut [(u64, u64)]) {
    worst.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
}

/// An owned copy of a [`Histogram`], for statistics and export: `preempt-stats`' snapshot
/// (always in [`LAYOUT`]) plus the worst samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    hdr: HistogramSnapshot,
    /// `(value_ns, cycle)`, largest first.
    worst: Vec<(u64, u64)>,
}

impl Default for Snapshot {
    fn default() -> Self {
        Self::empty()
    }
}

impl Snapshot {
    /// A snapshot with no samples.
    pub fn empty() -> Self {
        Self {
            hdr: HistogramSnapshot::empty(LAYOUT),
            worst: Vec::new(),
        }
    }

    /// Rebuilds a snapshot from `(value_ns, count)` pairs (each count goes into the bucket of
    /// [`LAYOUT`] holding `value_ns`) plus the exact sum and extremes, as stored in a results
    /// file or a cyclictest histogram.
    pub(crate) fn from_values(
        values: impl IntoIterator<Item = (u64, u64)>,
        sum_ns: u64,
        min_ns: u64,
        max_ns: u64,
        mut worst: Vec<(u64, u64)>,
    ) -> Self {
        let mut counts: BTreeMap<usize, u64> = BTreeMap::new();
        let mut saturated = 0u64;
        for (value, count) in values {
            if count == 0 {
                continue;
            }
            *counts.entry(LAYOUT.index_of(value)).or_default() += count;
            if value > LAYOUT.highest_trackable_ns() {
                saturated += count;
            }
        }
        let buckets: Vec<Bucket> = counts
            .into_iter()
            .map(|(index, count)| Bucket {
                low_ns: LAYOUT.lowest_value_at(index),
                high_ns: LAYOUT.highest_value_at(index),
                count,
            })
            .collect();
        let count: u64 = buckets.iter().map(|b| b.count).sum();
        sort_worst(&mut worst);
        Self {
            hdr: HistogramSnapshot {
                count,
                min_ns: (count > 0).then_some(min_ns),
                max_ns: (count > 0).then_some(max_ns),
                sum_ns,
                saturated,
                buckets,
                ..Self::empty().hdr
            },
            worst,
        }
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.hdr.count
    }
    /// Smallest sample (0 when empty).
    pub fn min_ns(&self) -> u64 {
        self.hdr.min_ns.unwrap_or(0)
    }
    /// Largest sample (0 when empty); exact, not bucketed.
    pub fn max_ns(&self) -> u64 {
        self.hdr.max_ns.unwrap_or(0)
    }
    /// Sum of all samples (saturates only after 584 years of accumulated latency).
    pub fn sum_ns(&self) -> u64 {
        self.hdr.sum_ns
    }
    /// Mean, or 0 when empty.
    pub(crate) fn mean_ns(&self) -> f64 {
        self.hdr.mean_ns().unwrap_or(0.0)
    }
    /// The largest samples as `(value_ns, cycle)`, largest first.
    pub fn worst(&self) -> &[(u64, u64)] {
        &self.worst
    }

    /// Non-empty buckets in increasing value order.
    pub fn buckets(&self) -> &[Bucket] {
        &self.hdr.buckets
    }

    /// The value below or at which a fraction `q` (0..=1) of the samples lie.
    ///
    /// Reports the highest value of the bucket holding the sample of rank `ceil(q * count)`,
    /// clamped to the exact min and max, so it never understates a latency (HdrHistogram's
    /// "highest equivalent value" convention).
    pub fn value_at_quantile(&self, q: f64) -> u64 {
        self.hdr.value_at_quantile(q)
    }

    /// Adds another snapshot's samples into this one (for merging threads or runs).
    pub(crate) fn merge(&mut self, other: &Snapshot) {
        self.hdr
            .merge(&other.hdr)
            .expect("every CLI snapshot is in LAYOUT (the fields are private to this module)");
        self.worst.extend_from_slice(&other.worst);
        sort_worst(&mut self.worst);
        self.worst.truncate(WORST_KEPT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_tag_and_resolution() {
        assert_eq!(SUB_BUCKET_BITS, 11);
        for v in 0..2_048 {
            let i = LAYOUT.index_of(v);
            assert_eq!(
                (LAYOUT.lowest_value_at(i), LAYOUT.highest_value_at(i)),
                (v, v)
            );
        }
        // At least the former CLI layout's resolution (1/256) everywhere: in fact 1/1024.
        let mut v = 2_048u64;
        while v * 2 <= LAYOUT.highest_trackable_ns() {
            for probe in [v, v + 1, v * 3 / 2, v * 2 - 1] {
                let i = LAYOUT.index_of(probe);
                let (lo, hi) = (LAYOUT.lowest_value_at(i), LAYOUT.highest_value_at(i));
                assert!(lo <= probe && probe <= hi, "{probe} not in [{lo}, {hi}]");
                assert!(
                    (hi - lo) as f64 <= probe as f64 / 1024.0,
                    "{probe}: [{lo}, {hi}]"
                );
            }
            v = v * 2 + 1;
        }
    }

    #[test]
    fn huge_values_keep_their_exact_max() {
        let h = Histogram::new();
        h.record(10_000_000_000, 7); // 10 s: cyclictest -h 1000 would call this "overflow"
        h.record(u64::MAX, 8);
        let s = h.snapshot();
        assert_eq!(s.max_ns(), u64::MAX);
        assert_eq!(s.worst(), &[(u64::MAX, 8), (10_000_000_000, 7)]);
        let p50 = s.value_at_quantile(0.5);
        assert!((10_000_000_000..10_010_000_000).contains(&p50), "{p50}");
        assert_eq!(s.value_at_quantile(1.0), u64::MAX);
    }

    #[test]
    fn quantiles_match_a_sorted_reference() {
        let h = Histogram::new();
        // A deterministic spread from 1 µs to ~5 ms.
        let mut values: Vec<u64> = (0..10_000u64)
            .map(|i| 1_000 + (i * i * 37) % 5_000_000)
            .collect();
        for (cycle, &v) in values.iter().enumerate() {
            h.record(v, cycle as u64);
        }
        values.sort_unstable();
        let s = h.snapshot();
        for q in [0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            let rank = ((q * values.len() as f64).ceil() as usize).max(1);
            let exact = values[rank - 1];
            let got = s.value_at_quantile(q);
            assert!(got >= exact, "q={q}: {got} < exact {exact}");
            assert!(
                got as f64 <= exact as f64 * (1.0 + 1.0 / 1024.0) + 1.0,
                "q={q}: {got} vs {exact}"
            );
        }
        assert_eq!(s.value_at_quantile(1.0), *values.last().unwrap());
        assert_eq!(s.min_ns(), values[0]);
        assert_eq!(s.sum_ns(), values.iter().sum::<u64>());
    }

    #[test]
    fn worst_samples_keep_the_largest_with_their_cycle() {
        let h = Histogram::new();
        for cycle in 0..1000u64 {
            h.record(1_000 + cycle % 10, cycle);
        }
        h.record(900_000, 1000);
        h.record(50_000, 1001);
        let s = h.snapshot();
        assert_eq!(s.worst()[0], (900_000, 1000));
        assert_eq!(s.worst()[1], (50_000, 1001));
        assert_eq!(s.worst().len(), WORST_KEPT);
        assert!(s.worst()[2..].iter().all(|&(v, _)| v == 1_009));
    }

    #[test]
    fn empty_merge_and_rebuild() {
        let e = Histogram::new().snapshot();
        assert_eq!(e, Snapshot::empty());
        assert_eq!(
            (e.count(), e.min_ns(), e.max_ns(), e.value_at_quantile(0.99)),
            (0, 0, 0, 0)
        );
        assert!(e.worst().is_empty());
        let a = Histogram::new();
        a.record(5, 0);
        let b = Histogram::new();
        b.record(7_000, 3);
        let mut m = a.snapshot();
        m.merge(&b.snapshot());
        m.merge(&e);
        assert_eq!(
            (m.count(), m.min_ns(), m.max_ns(), m.sum_ns()),
            (2, 5, 7_000, 7_005)
        );
        assert_eq!(m.worst(), &[(7_000, 3), (5, 0)]);
        let rebuilt = Snapshot::from_values(
            m.buckets().iter().map(|b| (b.low_ns, b.count)),
            7_005,
            5,
            7_000,
            m.worst().to_vec(),
        );
        assert_eq!(rebuilt, m);
        let mut from_empty = Snapshot::empty();
        from_empty.merge(&m);
        assert_eq!(from_empty, m);
    }
}
