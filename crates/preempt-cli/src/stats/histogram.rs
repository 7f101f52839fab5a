//! A log-linear histogram of nanosecond values that records without allocating, locking or
//! capping.
//!
//! # Background
//! cyclictest keeps one bucket per microsecond up to `-h N` and lumps everything above into an
//! "overflow" count, so its histogram loses exactly the samples a real-time engineer cares
//! about. HdrHistogram (Gil Tene) solved this with a *log-linear* layout: values are grouped by
//! their power of two, and each power-of-two range is split into a fixed number of linear
//! sub-buckets, so the relative error is bounded everywhere and the whole `u64` range fits in a
//! few thousand counters.
//!
//! # Solution
//! With [`SUB_BUCKET_BITS`] = 9, values `0..512` ns each get their own bucket (exact), and
//! every range `[2^k, 2^(k+1))` for `k >= 9` is split into 256 equal sub-buckets, so a value is
//! known to within 1/256 (0.39 %) of itself: ±0.2 µs at 50 µs, ±39 µs at 10 ms. The table has
//! [`BUCKET_COUNT`] = 14 592 counters (114 KiB), allocated once by [`Histogram::new`].
//! Recording is an index computation (one `leading_zeros`) and a few relaxed atomic adds, so a
//! reporting thread can read a consistent-enough snapshot for progress bars and partial result
//! files while the measuring thread keeps recording.
//!
//! # Why it works
//! For `v >= 512` with most significant bit `m`, `v >> (m - 8)` lies in `256..512`; subtracting
//! 256 gives the sub-bucket, and `m - 8` (the shift) selects the power-of-two group. Two values
//! share a bucket only if they agree in their 9 most significant bits.
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
//! assert!(s.value_at_quantile(0.5) >= 2_000 && s.value_at_quantile(0.5) < 2_010);
//! ```

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Bits of exact resolution: values below `2^SUB_BUCKET_BITS` ns are exact, larger ones are
/// known to within `2^-(SUB_BUCKET_BITS - 1)` of themselves.
pub const SUB_BUCKET_BITS: u32 = 9;
const SUB: u64 = 1 << SUB_BUCKET_BITS;
const HALF: u64 = SUB / 2;
/// Number of counters needed to cover every `u64` value.
pub const BUCKET_COUNT: usize = (SUB + (64 - SUB_BUCKET_BITS as u64) * HALF) as usize;

/// How many of the largest samples (value and cycle index) are kept.
pub const WORST_KEPT: usize = 8;

/// The bucket index of `value`.
#[inline]
pub fn bucket_index(value: u64) -> usize {
    if value < SUB {
        value as usize
    } else {
        let msb = 63 - value.leading_zeros();
        let shift = msb - (SUB_BUCKET_BITS - 1);
        let sub = (value >> shift) - HALF;
        let index = SUB + u64::from(shift - 1) * HALF + sub;
        debug_assert!(index < BUCKET_COUNT as u64);
        index as usize
    }
}

/// The smallest value that falls into bucket `index`.
pub fn bucket_lower_ns(index: usize) -> u64 {
    let index = index as u64;
    if index < SUB {
        index
    } else {
        let group = (index - SUB) / HALF;
        let sub = (index - SUB) % HALF;
        (HALF + sub) << (group + 1)
    }
}

/// The largest value that falls into bucket `index` (inclusive, so the top bucket does not
/// overflow).
pub fn bucket_upper_ns(index: usize) -> u64 {
    if (index as u64) < SUB {
        index as u64
    } else {
        let group = (index as u64 - SUB) / HALF;
        bucket_lower_ns(index) + ((1u64 << (group + 1)) - 1)
    }
}

/// A concurrent log-linear histogram: one writer records, any thread may [`snapshot`] it.
///
/// Besides the bucket counts it keeps an exact count, sum, minimum and maximum, and the
/// [`WORST_KEPT`] largest samples with their cycle index.
///
/// [`snapshot`]: Histogram::snapshot
pub struct Histogram {
    counts: Box<[AtomicU64]>,
    count: AtomicU64,
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
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
            .field("count", &self.count.load(Relaxed))
            .field("max", &self.max.load(Relaxed))
            .finish_non_exhaustive()
    }
}

impl Histogram {
    /// Allocates an empty histogram (the only allocation it ever makes).
    pub fn new() -> Self {
        let counts: Box<[AtomicU64]> = (0..BUCKET_COUNT).map(|_| AtomicU64::new(0)).collect();
        Self {
            counts,
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            worst_values: std::array::from_fn(|_| AtomicU64::new(0)),
            worst_cycles: std::array::from_fn(|_| AtomicU64::new(0)),
            worst_floor: AtomicU64::new(0),
        }
    }

    /// Records one sample taken at cycle `cycle`. Allocation-free and lock-free.
    ///
    /// Meant for a single recording thread: the worst-samples list is updated without a
    /// compare-and-swap, so two concurrent writers could lose a worst sample (never a count).
    #[inline]
    pub fn record(&self, value_ns: u64, cycle: u64) {
        self.counts[bucket_index(value_ns)].fetch_add(1, Relaxed);
        self.count.fetch_add(1, Relaxed);
        self.sum.fetch_add(value_ns, Relaxed);
        self.min.fetch_min(value_ns, Relaxed);
        self.max.fetch_max(value_ns, Relaxed);
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
        let count = self.count.load(Relaxed);
        let mut worst: Vec<(u64, u64)> = self
            .worst_values
            .iter()
            .zip(&self.worst_cycles)
            .map(|(v, c)| (v.load(Relaxed), c.load(Relaxed)))
            .collect();
        worst.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        worst.truncate(usize::try_from(count).unwrap_or(usize::MAX).min(WORST_KEPT));
        Snapshot {
            counts: self.counts.iter().map(|c| c.load(Relaxed)).collect(),
            count,
            sum_ns: self.sum.load(Relaxed),
            min_ns: if count == 0 {
                0
            } else {
                self.min.load(Relaxed)
            },
            max_ns: self.max.load(Relaxed),
            worst,
        }
    }
}

/// An owned copy of a [`Histogram`], for statistics and export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    counts: Vec<u64>,
    count: u64,
    sum_ns: u64,
    min_ns: u64,
    max_ns: u64,
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
            counts: vec![0; BUCKET_COUNT],
            count: 0,
            sum_ns: 0,
            min_ns: 0,
            max_ns: 0,
            worst: Vec::new(),
        }
    }

    /// Rebuilds a snapshot from sparse `(bucket index, count)` pairs plus the exact extremes,
    /// as stored in a results file. Returns `None` if an index is out of range.
    pub fn from_sparse(
        buckets: impl IntoIterator<Item = (usize, u64)>,
        sum_ns: u64,
        min_ns: u64,
        max_ns: u64,
        worst: Vec<(u64, u64)>,
    ) -> Option<Self> {
        let mut s = Self::empty();
        for (index, count) in buckets {
            *s.counts.get_mut(index)? += count;
            s.count += count;
        }
        s.sum_ns = sum_ns;
        s.min_ns = min_ns;
        s.max_ns = max_ns;
        s.worst = worst;
        Some(s)
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }
    /// Smallest sample (0 when empty).
    pub fn min_ns(&self) -> u64 {
        self.min_ns
    }
    /// Largest sample (0 when empty); exact, not bucketed.
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }
    /// Sum of all samples (wraps only after 584 years of accumulated latency).
    pub fn sum_ns(&self) -> u64 {
        self.sum_ns
    }
    /// Mean, or 0 when empty.
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }
    /// The largest samples as `(value_ns, cycle)`, largest first.
    pub fn worst(&self) -> &[(u64, u64)] {
        &self.worst
    }

    /// Non-empty buckets as `(index, count)`.
    pub fn nonzero_buckets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, c)| c != 0)
    }

    /// The value below or at which a fraction `q` (0..=1) of the samples lie.
    ///
    /// Reports the highest value of the bucket holding the sample of rank `ceil(q * count)`,
    /// clamped to the exact min and max, so it never understates a latency (HdrHistogram's
    /// "highest equivalent value" convention).
    pub fn value_at_quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let q = q.clamp(0.0, 1.0);
        // Rank of the wanted sample, 1-based; ceil keeps p100 at the last sample.
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for (index, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_upper_ns(index).clamp(self.min_ns, self.max_ns);
            }
        }
        self.max_ns
    }

    /// Adds another snapshot's samples into this one (for merging threads or runs).
    pub fn merge(&mut self, other: &Snapshot) {
        if other.count == 0 {
            return;
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.min_ns = if self.count == 0 {
            other.min_ns
        } else {
            self.min_ns.min(other.min_ns)
        };
        self.count += other.count;
        self.sum_ns = self.sum_ns.wrapping_add(other.sum_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.worst.extend_from_slice(&other.worst);
        self.worst.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        self.worst.truncate(WORST_KEPT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact() {
        for v in 0..SUB {
            let i = bucket_index(v);
            assert_eq!(bucket_lower_ns(i), v);
            assert_eq!(bucket_upper_ns(i), v);
        }
    }

    #[test]
    fn buckets_tile_the_whole_u64_range() {
        // Every bucket starts right after the previous one ends, and the last ends at u64::MAX.
        for i in 1..BUCKET_COUNT {
            assert_eq!(
                bucket_lower_ns(i),
                bucket_upper_ns(i - 1) + 1,
                "gap before bucket {i}"
            );
        }
        assert_eq!(bucket_upper_ns(BUCKET_COUNT - 1), u64::MAX);
        assert_eq!(bucket_index(u64::MAX), BUCKET_COUNT - 1);
    }

    #[test]
    fn values_fall_inside_their_bucket_with_bounded_error() {
        let mut v = 1u64;
        while v < u64::MAX / 3 {
            for probe in [v, v + 1, v * 3 / 2, v * 2 - 1] {
                let i = bucket_index(probe);
                let (lo, hi) = (bucket_lower_ns(i), bucket_upper_ns(i));
                assert!(lo <= probe && probe <= hi, "{probe} not in [{lo}, {hi}]");
                // Width relative to the value is at most 1/256.
                assert!(
                    (hi - lo) as f64 <= probe as f64 / 256.0 + 1.0,
                    "{probe}: [{lo}, {hi}]"
                );
            }
            v = v * 2 + 1;
        }
    }

    #[test]
    fn no_overflow_bucket_huge_values_are_kept() {
        let h = Histogram::new();
        h.record(10_000_000_000, 7); // 10 s: cyclictest -h 1000 would call this "overflow"
        h.record(u64::MAX, 8);
        let s = h.snapshot();
        assert_eq!(s.max_ns(), u64::MAX);
        assert_eq!(s.worst(), &[(u64::MAX, 8), (10_000_000_000, 7)]);
        let p50 = s.value_at_quantile(0.5);
        assert!((10_000_000_000..10_040_000_000).contains(&p50), "{p50}");
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
                got as f64 <= exact as f64 * (1.0 + 1.0 / 256.0) + 1.0,
                "q={q}: {got} vs {exact}"
            );
        }
        assert_eq!(s.value_at_quantile(1.0), *values.last().unwrap());
        assert_eq!(s.min_ns(), values[0]);
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
    fn empty_and_merge() {
        let e = Histogram::new().snapshot();
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
        let rebuilt = Snapshot::from_sparse(
            m.nonzero_buckets().collect::<Vec<_>>(),
            7_005,
            5,
            7_000,
            m.worst().to_vec(),
        )
        .unwrap();
        assert_eq!(rebuilt, m);
        assert!(Snapshot::from_sparse([(BUCKET_COUNT, 1)], 0, 0, 0, vec![]).is_none());
    }
}
