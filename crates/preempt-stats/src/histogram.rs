//! An allocation-free, HdrHistogram-compatible log-linear histogram of nanosecond values.
//!
//! # Background
//! A latency distribution spans five or more orders of magnitude: a wake-up takes 2 µs on a
//! quiet core and 40 ms when the RT throttle fires. cyclictest keeps one counter per
//! microsecond up to `-h N` and lumps everything above into one "overflow" count, so it loses
//! exactly the samples a real-time engineer is looking for. Gil Tene's HdrHistogram solved this
//! with a *log-linear* layout: values are grouped by power of two, each power-of-two range is
//! cut into the same number of linear sub-buckets, and so the *relative* error is bounded
//! everywhere while the whole range fits in a few thousand counters.
//!
//! # Solution
//! [`Histogram`] uses HdrHistogram's layout exactly (same bucket boundaries, same counts-array
//! indices, lowest discernible value 1 ns), so its snapshots can be written in HdrHistogram's V2
//! encoding (feature `hdr-log`, module `hdr`) and read by HdrHistogram's own tools. The
//! precision is a type parameter ([`Digits1`], [`Digits2`], [`Digits3`]); the counters are a
//! fixed-size array inside the histogram, so [`Histogram::new`] is a `const fn` (a histogram can
//! live in a `static`) and nothing is allocated afterwards.
//!
//! The bucket math, for `d` significant decimal digits (HdrHistogram's
//! `numberOfSignificantValueDigits`), all values in ns:
//!
//! * `s = ceil(log2(2 · 10^d))` bits of sub-bucket index; `S = 2^s` sub-buckets, `H = S / 2`.
//! * Values `0 .. S` are counted exactly (one counter per nanosecond).
//! * Each range `[2^k, 2^(k+1))` with `k >= s` is cut into `H` equal sub-buckets of width
//!   `2^(k+1-s)`, so a value is known to within `1/H` of itself, which is better than `10^-d`.
//! * A value `v` lands in bucket `b = (64 - s) - lzcnt(v | (S - 1))` at sub-bucket `v >> b`,
//!   and the counter index is `(b + 1) · H + (v >> b) - H`.
//!
//! | precision   | `s` | exact up to | width of a sub-bucket     | counters (to 1 h) | memory  |
//! |-------------|-----|-------------|---------------------------|-------------------|---------|
//! | [`Digits1`] |  5  | 31 ns       | ≤ 1/16 (6.3 %) of a value |    624            |   5 KiB |
//! | [`Digits2`] |  8  | 255 ns      | ≤ 1/128 (0.78 %)          |  4 608            |  36 KiB |
//! | [`Digits3`] | 11  | 2 047 ns    | ≤ 1/1024 (0.098 %)        | 33 792            | 264 KiB |
//!
//! All three track values up to [`HIGHEST_TRACKABLE_NS`] (one hour). A larger value is counted
//! in the top bucket and in [`Histogram::saturated`]; `max` stays exact. `min`, `max`, the count
//! and the sum (hence the mean) are kept exactly, apart from the buckets.
//!
//! **Concurrency.** [`Histogram::record`] takes `&self` so that one thread (the *single writer*,
//! e.g. the executor running a task) records while other threads read a snapshot. Every counter
//! is an `AtomicU64` updated with a relaxed load and store (no read-modify-write), which compiles
//! to plain loads and stores on x86-64 and AArch64: no `lock` prefix, no syscall, no allocation.
//! Two threads recording into one histogram at the same time can lose counts (never memory
//! safety); readers may see a sample in `count` before it shows up in its bucket, which the
//! queries tolerate by working from the bucket counts they actually read.
//!
//! # Why it works
//! For `v >= S`, `lzcnt(v | (S-1)) = lzcnt(v)`, so `b = msb(v) - (s - 1)` and `v >> b` has its
//! top bit at position `s - 1`: it lies in `H .. S`. Two values share a counter exactly when they
//! agree in their `s` most significant bits, so a counter covers a range of width `2^b` whose
//! lower end is at least `H · 2^b`: the relative width is at most `1/H`. For `v < S` the OR with
//! `S - 1` pins `b` to 0 and the counter index is `v` itself. These are HdrHistogram's
//! `getBucketIndex` / `getSubBucketIndex` / `countsArrayIndex` with a unit magnitude of 0, and a
//! test in this module checks every boundary against the `hdrhistogram` crate.
//!
//! ```
//! use preempt_stats::histogram::{Digits2, Histogram};
//!
//! static LATENCY: Histogram<Digits2> = Histogram::new();
//! for v in [1_000, 2_000, 3_000, 1_000_000] {
//!     LATENCY.record(v);
//! }
//! assert_eq!(LATENCY.count(), 4);
//! assert_eq!(LATENCY.max(), Some(1_000_000));
//! let p50 = LATENCY.value_at_quantile(0.5);
//! assert!((2_000..2_016).contains(&p50)); // within one sub-bucket (1/128) of the true median
//! let s = LATENCY.snapshot();
//! assert_eq!(s.buckets.len(), 4);
//! ```

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The highest value every provided precision tracks at full resolution: one hour, in ns
/// (HdrHistogram's own example range for response times).
pub const HIGHEST_TRACKABLE_NS: u64 = 3_600 * 1_000_000_000;

/// The bucket geometry of an HdrHistogram with a lowest discernible value of 1 (ns).
///
/// Computed at compile time from the number of significant digits and the highest trackable
/// value, with HdrHistogram's formulas (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    significant_digits: u8,
    highest_trackable: u64,
    sub_bucket_count_magnitude: u32,
    sub_bucket_half_count: u64,
    bucket_count: u32,
    counts_len: usize,
}

impl Layout {
    /// The layout of an HdrHistogram with `significant_digits` (1..=5) and values up to
    /// `highest_trackable` (at least 2), lowest discernible value 1.
    ///
    /// # Panics
    /// On parameters HdrHistogram rejects; in a `const` context that is a compile error.
    pub const fn new(significant_digits: u8, highest_trackable: u64) -> Layout {
        assert!(
            significant_digits >= 1 && significant_digits <= 5,
            "HdrHistogram supports 1 to 5 significant digits"
        );
        assert!(
            highest_trackable >= 2,
            "the highest trackable value must be at least 2"
        );
        // 2 * 10^d values need single-unit resolution; round up to a power of two.
        let single_unit = 2 * 10_u64.pow(significant_digits as u32);
        let magnitude = 64 - (single_unit - 1).leading_zeros();
        let sub_bucket_count = 1_u64 << magnitude;
        // HdrHistogram's getBucketsNeededToCoverValue, for a unit magnitude of 0.
        let mut smallest_untrackable = sub_bucket_count;
        let mut buckets = 1_u32;
        while smallest_untrackable <= highest_trackable {
            if smallest_untrackable > u64::MAX / 2 {
                buckets += 1;
                break;
            }
            smallest_untrackable <<= 1;
            buckets += 1;
        }
        let half = sub_bucket_count / 2;
        Layout {
            significant_digits,
            highest_trackable,
            sub_bucket_count_magnitude: magnitude,
            sub_bucket_half_count: half,
            bucket_count: buckets,
            counts_len: (buckets as usize + 1) * half as usize,
        }
    }

    /// Significant decimal digits of precision.
    pub const fn significant_digits(&self) -> u8 {
        self.significant_digits
    }

    /// The highest value tracked at full precision, ns; larger values saturate.
    pub const fn highest_trackable_ns(&self) -> u64 {
        self.highest_trackable
    }

    /// Number of counters.
    pub const fn counts_len(&self) -> usize {
        self.counts_len
    }

    /// Number of power-of-two buckets (HdrHistogram's `bucketCount`).
    pub const fn bucket_count(&self) -> u32 {
        self.bucket_count
    }

    /// Values below this are counted exactly, one counter per ns.
    pub const fn exact_below_ns(&self) -> u64 {
        1 << self.sub_bucket_count_magnitude
    }

    /// The counter index of `value` (values above the highest trackable one are clamped to it).
    #[inline]
    pub const fn index_of(&self, value: u64) -> usize {
        let value = if value > self.highest_trackable {
            self.highest_trackable
        } else {
            value
        };
        let mask = (1_u64 << self.sub_bucket_count_magnitude) - 1;
        let bucket = (64 - self.sub_bucket_count_magnitude) - (value | mask).leading_zeros();
        let sub = value >> bucket;
        // `sub` is in H..S (or 0..S in bucket 0), so the index is below (bucket + 2) * H.
        let index =
            ((bucket as u64 + 1) * self.sub_bucket_half_count) + sub - self.sub_bucket_half_count;
        index as usize
    }

    /// The smallest value counted by counter `index`.
    pub const fn lowest_value_at(&self, index: usize) -> u64 {
        let half = self.sub_bucket_half_count;
        let index = index as u64;
        let bucket = index / half;
        let sub = index % half;
        if bucket == 0 {
            sub
        } else {
            (sub + half) << (bucket - 1)
        }
    }

    /// The largest value counted by counter `index` (inclusive).
    pub const fn highest_value_at(&self, index: usize) -> u64 {
        let half = self.sub_bucket_half_count;
        let bucket = index as u64 / half;
        let width_log2 = if bucket == 0 { 0 } else { bucket - 1 };
        self.lowest_value_at(index) + ((1_u64 << width_log2) - 1)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A histogram precision: the number of significant digits and the counter array it needs.
///
/// Sealed: pick one of [`Digits1`], [`Digits2`] or [`Digits3`]. (The array length has to be a
/// concrete constant for `Histogram::new` to be a `const fn` on stable Rust, so each precision is
/// its own type.)
pub trait Precision: sealed::Sealed + Send + Sync + 'static {
    /// The bucket geometry.
    const LAYOUT: Layout;
    /// `[AtomicU64; LAYOUT.counts_len()]`.
    type Counts: AsRef<[AtomicU64]> + Send + Sync;
    /// All counters zero.
    const ZERO: Self::Counts;
}

macro_rules! precision {
    ($(#[$doc:meta])* $name:ident, $digits:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name;
        impl sealed::Sealed for $name {}
        impl Precision for $name {
            const LAYOUT: Layout = Layout::new($digits, HIGHEST_TRACKABLE_NS);
            type Counts = [AtomicU64; Layout::new($digits, HIGHEST_TRACKABLE_NS).counts_len()];
            #[allow(
                clippy::declare_interior_mutable_const,
                reason = "used only as the initial value of a histogram, never shared"
            )]
            const ZERO: Self::Counts = [const { AtomicU64::new(0) };
                Layout::new($digits, HIGHEST_TRACKABLE_NS).counts_len()];
        }
    };
}

precision!(
    /// One significant digit: values known to within 6.3 %, 624 counters (5 KiB).
    Digits1,
    1
);
precision!(
    /// Two significant digits: values known to within 0.78 %, 4 608 counters (36 KiB). The
    /// default; what per-task accounting uses.
    Digits2,
    2
);
precision!(
    /// Three significant digits: values known to within 0.098 %, 33 792 counters (264 KiB). For
    /// measurement tools.
    Digits3,
    3
);

/// One non-empty counter: the values it covers and how many samples fell into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Bucket {
    /// Smallest value counted here, ns.
    pub low_ns: u64,
    /// Largest value counted here, ns (inclusive).
    pub high_ns: u64,
    /// Samples in the bucket.
    pub count: u64,
}

/// The usual percentiles of a latency distribution, ns (each the highest value of the bucket
/// holding that rank, clamped to the exact min and max).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Percentiles {
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p99_9_ns: u64,
    /// 99.99th percentile.
    pub p99_99_ns: u64,
}

/// A log-linear histogram of nanosecond values with `P` precision. See the module docs.
pub struct Histogram<P: Precision = Digits2> {
    counts: P::Counts,
    count: AtomicU64,
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
    saturated: AtomicU64,
}

impl<P: Precision> Default for Histogram<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Precision> fmt::Debug for Histogram<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Histogram")
            .field("significant_digits", &P::LAYOUT.significant_digits())
            .field("count", &self.count())
            .field("min", &self.min())
            .field("max", &self.max())
            .finish_non_exhaustive()
    }
}

/// Adds `n` to a counter that only the calling thread writes.
#[inline(always)]
fn bump(cell: &AtomicU64, n: u64) {
    cell.store(cell.load(Relaxed).saturating_add(n), Relaxed);
}

impl<P: Precision> Histogram<P> {
    /// The bucket geometry of this precision.
    pub const LAYOUT: Layout = P::LAYOUT;

    /// An empty histogram. `const`, so it can be a `static`; allocates nothing.
    pub const fn new() -> Self {
        const {
            assert!(
                size_of::<P::Counts>() == P::LAYOUT.counts_len() * size_of::<AtomicU64>(),
                "a precision's counter array must match its layout"
            );
        }
        Histogram {
            counts: P::ZERO,
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            saturated: AtomicU64::new(0),
        }
    }

    /// An empty histogram built directly on the heap, never on the stack: a [`Digits3`]
    /// histogram is 264 KiB, more than the stack of many measuring threads, and
    /// `Box::new(Histogram::new())` may build the value on the stack first (it does in debug
    /// builds). Allocates once.
    pub fn new_boxed() -> Box<Self> {
        let layout = std::alloc::Layout::new::<Self>();
        // SAFETY: `layout` is that of `Self`, which is not zero-sized (it holds at least the
        // five statistics counters), as `alloc_zeroed` requires; a null result is handled below.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<Self>();
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: `ptr` is a live allocation made with the global allocator for `Self`'s
        // layout, as `Box::from_raw` requires, and it holds a valid `Self`: every field of
        // `Histogram` is an `AtomicU64` or (through the sealed `Precision::Counts`, which only
        // this module implements) an array of `AtomicU64`, and all-zero bytes are a valid
        // `AtomicU64` (it has the layout of `u64`). `reset` below then sets `min` to its empty
        // value, making it equal to `Histogram::new()`.
        let mut h = unsafe { Box::from_raw(ptr) };
        h.reset();
        h
    }

    /// Records one sample. O(1): an index computation and six relaxed loads and stores; no
    /// allocation, no lock, no syscall. Single writer: see the module docs.
    #[inline]
    pub fn record(&self, value_ns: u64) {
        self.record_n(value_ns, 1);
    }

    /// Records `n` samples of the same value (same cost as one).
    #[inline]
    pub fn record_n(&self, value_ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        let index = P::LAYOUT.index_of(value_ns);
        let counts = self.counts.as_ref();
        debug_assert!(index < counts.len());
        bump(&counts[index], n);
        bump(&self.count, n);
        bump(&self.sum, value_ns.saturating_mul(n));
        if value_ns < self.min.load(Relaxed) {
            self.min.store(value_ns, Relaxed);
        }
        if value_ns > self.max.load(Relaxed) {
            self.max.store(value_ns, Relaxed);
        }
        if value_ns > P::LAYOUT.highest_trackable_ns() {
            bump(&self.saturated, n);
        }
    }

    /// Number of samples recorded.
    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }

    /// The exact smallest sample, or `None` when empty.
    pub fn min(&self) -> Option<u64> {
        (self.count() > 0).then(|| self.min.load(Relaxed))
    }

    /// The exact largest sample, or `None` when empty.
    pub fn max(&self) -> Option<u64> {
        (self.count() > 0).then(|| self.max.load(Relaxed))
    }

    /// The exact sum of all samples, ns (saturating at `u64::MAX`, 584 years).
    pub fn sum(&self) -> u64 {
        self.sum.load(Relaxed)
    }

    /// The exact mean, or `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        let count = self.count();
        (count > 0).then(|| self.sum() as f64 / count as f64)
    }

    /// Samples above [`Layout::highest_trackable_ns`], counted in the top bucket.
    pub fn saturated(&self) -> u64 {
        self.saturated.load(Relaxed)
    }

    /// The non-empty buckets in increasing value order.
    pub fn buckets(&self) -> impl Iterator<Item = Bucket> + '_ {
        self.counts
            .as_ref()
            .iter()
            .enumerate()
            .filter_map(|(index, cell)| {
                let count = cell.load(Relaxed);
                (count > 0).then(|| Bucket {
                    low_ns: P::LAYOUT.lowest_value_at(index),
                    high_ns: P::LAYOUT.highest_value_at(index),
                    count,
                })
            })
    }

    /// The value below or at which a fraction `quantile` (0.0..=1.0, clamped) of the samples
    /// lie, as HdrHistogram computes it: the highest value of the bucket holding the
    /// `ceil(quantile · count)`-th sample, clamped to the exact min and max (and the exact max
    /// itself when that sample is the last one). 0 when empty.
    /// Allocation-free; walks the counters twice.
    pub fn value_at_quantile(&self, quantile: f64) -> u64 {
        let total: u64 = self.buckets().map(|b| b.count).sum();
        quantile_of(
            self.buckets(),
            total,
            quantile,
            self.min.load(Relaxed),
            self.max.load(Relaxed),
        )
    }

    /// [`Self::value_at_quantile`] with a percentage (0.0..=100.0).
    pub fn value_at_percentile(&self, percentile: f64) -> u64 {
        self.value_at_quantile(percentile / 100.0)
    }

    /// p50, p90, p99, p99.9 and p99.99 in one pass over the counters.
    pub fn percentiles(&self) -> Percentiles {
        let total: u64 = self.buckets().map(|b| b.count).sum();
        percentiles_of(
            self.buckets(),
            total,
            self.min.load(Relaxed),
            self.max.load(Relaxed),
        )
    }

    /// Adds every sample of `other` to this histogram (min, max, count and sum included).
    pub fn merge(&mut self, other: &Histogram<P>) {
        for (mine, theirs) in self.counts.as_ref().iter().zip(other.counts.as_ref()) {
            bump(mine, theirs.load(Relaxed));
        }
        bump(&self.count, other.count());
        bump(&self.sum, other.sum());
        bump(&self.saturated, other.saturated());
        if other.count() > 0 {
            let min = other.min.load(Relaxed);
            if min < self.min.load(Relaxed) {
                self.min.store(min, Relaxed);
            }
            let max = other.max.load(Relaxed);
            if max > self.max.load(Relaxed) {
                self.max.store(max, Relaxed);
            }
        }
    }

    /// Forgets every sample.
    pub fn reset(&mut self) {
        for cell in self.counts.as_ref() {
            cell.store(0, Relaxed);
        }
        self.count.store(0, Relaxed);
        self.sum.store(0, Relaxed);
        self.saturated.store(0, Relaxed);
        self.min.store(u64::MAX, Relaxed);
        self.max.store(0, Relaxed);
    }

    /// An owned copy of the non-empty buckets and the exact statistics (allocates; not for the
    /// hot path). Taken while another thread records, it is consistent bucket by bucket, and its
    /// `count` is the sum of the buckets it read.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let buckets: Vec<Bucket> = self.buckets().collect();
        let count = buckets.iter().map(|b| b.count).sum();
        HistogramSnapshot {
            significant_digits: P::LAYOUT.significant_digits(),
            highest_trackable_ns: P::LAYOUT.highest_trackable_ns(),
            count,
            min_ns: (count > 0).then(|| self.min.load(Relaxed)),
            max_ns: (count > 0).then(|| self.max.load(Relaxed)),
            sum_ns: self.sum(),
            saturated: self.saturated(),
            buckets,
        }
    }
}

/// The `ceil(q · total)`-th sample's bucket, HdrHistogram's `getValueAtPercentile`.
fn quantile_of(
    buckets: impl Iterator<Item = Bucket>,
    total: u64,
    quantile: f64,
    min: u64,
    max: u64,
) -> u64 {
    if total == 0 {
        return 0;
    }
    let rank = rank_of(quantile, total);
    if rank == total {
        // The last sample is the exact max (which may lie above the highest trackable value).
        return max;
    }
    let mut seen = 0;
    for b in buckets {
        seen += b.count;
        if seen >= rank {
            return b.high_ns.clamp(min, max.max(min));
        }
    }
    max
}

fn rank_of(quantile: f64, total: u64) -> u64 {
    let q = if quantile.is_nan() {
        1.0
    } else {
        quantile.clamp(0.0, 1.0)
    };
    // total < 2^53 in any realistic run, so the product is exact enough; the cast saturates.
    ((q * total as f64).ceil() as u64).clamp(1, total)
}

fn percentiles_of(
    buckets: impl Iterator<Item = Bucket>,
    total: u64,
    min: u64,
    max: u64,
) -> Percentiles {
    if total == 0 {
        return Percentiles::default();
    }
    const QUANTILES: [f64; 5] = [0.5, 0.9, 0.99, 0.999, 0.9999];
    let ranks = QUANTILES.map(|q| rank_of(q, total));
    let mut out = [max; 5];
    let mut next = 0;
    let mut seen = 0;
    for b in buckets {
        seen += b.count;
        while next < ranks.len() && seen >= ranks[next] {
            out[next] = if ranks[next] == total {
                max
            } else {
                b.high_ns.clamp(min, max.max(min))
            };
            next += 1;
        }
        if next == ranks.len() {
            break;
        }
    }
    Percentiles {
        p50_ns: out[0],
        p90_ns: out[1],
        p99_ns: out[2],
        p99_9_ns: out[3],
        p99_99_ns: out[4],
    }
}

/// An owned, serializable copy of a [`Histogram`]: its precision, exact statistics and the
/// non-empty buckets (a compact list: a 10-minute 1 kHz latency run typically has a few hundred).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HistogramSnapshot {
    /// Significant decimal digits of the histogram that was copied.
    pub significant_digits: u8,
    /// Its highest trackable value, ns.
    pub highest_trackable_ns: u64,
    /// Samples (the sum of the bucket counts).
    pub count: u64,
    /// Exact smallest sample.
    pub min_ns: Option<u64>,
    /// Exact largest sample.
    pub max_ns: Option<u64>,
    /// Exact sum of the samples, ns.
    pub sum_ns: u64,
    /// Samples above the highest trackable value (counted in the top bucket).
    pub saturated: u64,
    /// Non-empty buckets, in increasing value order.
    pub buckets: Vec<Bucket>,
}

/// Two snapshots of different precision cannot be merged bucket by bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutMismatch {
    /// (significant digits, highest trackable) of the snapshot merged into.
    pub into: (u8, u64),
    /// The same for the snapshot merged from.
    pub from: (u8, u64),
}

impl fmt::Display for LayoutMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot merge a histogram with {} significant digits up to {} ns into one with {} \
             digits up to {} ns: record both with the same precision",
            self.from.0, self.from.1, self.into.0, self.into.1
        )
    }
}

impl std::error::Error for LayoutMismatch {}

impl HistogramSnapshot {
    /// An empty snapshot of a histogram with this `layout` (e.g. `Digits2::LAYOUT`), for
    /// instance for a field missing from an older result file.
    pub fn empty(layout: Layout) -> HistogramSnapshot {
        HistogramSnapshot {
            significant_digits: layout.significant_digits(),
            highest_trackable_ns: layout.highest_trackable_ns(),
            count: 0,
            min_ns: None,
            max_ns: None,
            sum_ns: 0,
            saturated: 0,
            buckets: Vec::new(),
        }
    }

    /// The exact mean, or `None` when empty.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64)
    }

    /// See [`Histogram::value_at_quantile`].
    pub fn value_at_quantile(&self, quantile: f64) -> u64 {
        quantile_of(
            self.buckets.iter().copied(),
            self.count,
            quantile,
            self.min_ns.unwrap_or(0),
            self.max_ns.unwrap_or(0),
        )
    }

    /// See [`Histogram::percentiles`].
    pub fn percentiles(&self) -> Percentiles {
        percentiles_of(
            self.buckets.iter().copied(),
            self.count,
            self.min_ns.unwrap_or(0),
            self.max_ns.unwrap_or(0),
        )
    }

    /// The layout the snapshot was taken with.
    pub fn layout(&self) -> Layout {
        Layout::new(self.significant_digits, self.highest_trackable_ns)
    }

    /// Adds `other`'s samples to this snapshot.
    ///
    /// # Errors
    /// [`LayoutMismatch`] when the two were recorded with different precisions.
    pub fn merge(&mut self, other: &HistogramSnapshot) -> Result<(), LayoutMismatch> {
        let key = |s: &HistogramSnapshot| (s.significant_digits, s.highest_trackable_ns);
        if key(self) != key(other) {
            return Err(LayoutMismatch {
                into: key(self),
                from: key(other),
            });
        }
        let (a, b) = (&self.buckets, &other.buckets);
        let mut merged = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            if j == b.len() || (i < a.len() && a[i].low_ns < b[j].low_ns) {
                merged.push(a[i]);
                i += 1;
            } else if i == a.len() || b[j].low_ns < a[i].low_ns {
                merged.push(b[j]);
                j += 1;
            } else {
                merged.push(Bucket {
                    count: a[i].count + b[j].count,
                    ..a[i]
                });
                i += 1;
                j += 1;
            }
        }
        self.buckets = merged;
        self.count += other.count;
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.saturated += other.saturated;
        self.min_ns = match (self.min_ns, other.min_ns) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        self.max_ns = match (self.max_ns, other.max_ns) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_boxed_equals_new() {
        let b = Histogram::<Digits3>::new_boxed();
        let n = Histogram::<Digits3>::new();
        assert_eq!(b.snapshot(), n.snapshot());
        assert_eq!(b.min(), None);
        b.record(5_000);
        b.record(7);
        assert_eq!((b.min(), b.max(), b.count()), (Some(7), Some(5_000), 2));
    }

    #[test]
    fn layouts_match_the_documented_table() {
        for (layout, exact, len) in [
            (Digits1::LAYOUT, 32, 624),
            (Digits2::LAYOUT, 256, 4_608),
            (Digits3::LAYOUT, 2_048, 33_792),
        ] {
            assert_eq!(layout.exact_below_ns(), exact);
            assert_eq!(layout.counts_len(), len);
            assert_eq!(
                layout.index_of(u64::MAX),
                layout.index_of(HIGHEST_TRACKABLE_NS)
            );
            assert!(layout.index_of(HIGHEST_TRACKABLE_NS) < len);
        }
    }

    #[test]
    fn every_index_covers_a_contiguous_range() {
        let l = Digits2::LAYOUT;
        let mut expected_low = 0;
        let top = l.index_of(HIGHEST_TRACKABLE_NS);
        for index in 0..=top {
            let (lo, hi) = (l.lowest_value_at(index), l.highest_value_at(index));
            assert_eq!(lo, expected_low, "index {index}");
            assert_eq!(l.index_of(lo), index);
            assert_eq!(l.index_of(hi), index);
            // Relative width bounded by 1/H = 1/128.
            assert!(
                (hi - lo + 1) * 128 <= lo.max(128),
                "index {index}: {lo}..={hi}"
            );
            expected_low = hi + 1;
        }
        assert!(expected_low > HIGHEST_TRACKABLE_NS);
    }

    #[test]
    fn min_max_count_mean_are_exact() {
        let h: Histogram<Digits2> = Histogram::new();
        assert_eq!((h.min(), h.max(), h.mean()), (None, None, None));
        assert_eq!(h.value_at_quantile(0.5), 0);
        for v in [1_234_567, 89, 1_000_001] {
            h.record(v);
        }
        assert_eq!(h.count(), 3);
        assert_eq!(h.min(), Some(89));
        assert_eq!(h.max(), Some(1_234_567));
        assert_eq!(h.sum(), 2_234_657);
        assert_eq!(h.value_at_quantile(1.0), 1_234_567);
        assert_eq!(h.value_at_quantile(0.0), 89);
    }

    #[test]
    fn saturating_values_keep_the_exact_max() {
        let h: Histogram<Digits1> = Histogram::new();
        h.record(u64::MAX);
        h.record(5);
        assert_eq!(h.saturated(), 1);
        assert_eq!(h.max(), Some(u64::MAX));
        assert_eq!(h.value_at_quantile(1.0), u64::MAX);
        let top = h.buckets().last().unwrap();
        assert!(top.low_ns <= HIGHEST_TRACKABLE_NS && HIGHEST_TRACKABLE_NS <= top.high_ns);
    }

    #[test]
    fn percentiles_agree_with_value_at_quantile() {
        let h: Histogram<Digits3> = Histogram::new();
        for v in 1..=100_000_u64 {
            h.record(v * 7);
        }
        let p = h.percentiles();
        assert_eq!(p.p50_ns, h.value_at_quantile(0.5));
        assert_eq!(p.p90_ns, h.value_at_quantile(0.9));
        assert_eq!(p.p99_ns, h.value_at_quantile(0.99));
        assert_eq!(p.p99_9_ns, h.value_at_quantile(0.999));
        assert_eq!(p.p99_99_ns, h.value_at_quantile(0.9999));
        // True p99 is 693 000; three digits put it within 0.1 %.
        assert!(p.p99_ns >= 693_000 && p.p99_ns <= 693_700, "{}", p.p99_ns);
        assert_eq!(h.snapshot().percentiles(), p);
    }

    #[test]
    fn merge_adds_everything() {
        let mut a: Histogram<Digits2> = Histogram::new();
        let b: Histogram<Digits2> = Histogram::new();
        a.record(10);
        b.record(5);
        b.record(1_000_000);
        let (mut sa, sb) = (a.snapshot(), b.snapshot());
        a.merge(&b);
        assert_eq!((a.count(), a.min(), a.max()), (3, Some(5), Some(1_000_000)));
        assert_eq!(a.sum(), 1_000_015);
        sa.merge(&sb).unwrap();
        assert_eq!(sa, a.snapshot());
        a.reset();
        assert_eq!((a.count(), a.min(), a.buckets().count()), (0, None, 0));
    }

    #[test]
    fn snapshots_of_different_precision_do_not_merge() {
        let a: Histogram<Digits2> = Histogram::new();
        let b: Histogram<Digits3> = Histogram::new();
        let err = a.snapshot().merge(&b.snapshot()).unwrap_err();
        assert!(err.to_string().contains("same precision"), "{err}");
    }

    #[test]
    fn a_reader_sees_consistent_buckets_while_the_writer_records() {
        let h: &'static Histogram<Digits2> = Box::leak(Box::new(Histogram::new()));
        let writer = std::thread::spawn(move || {
            for v in 0..200_000_u64 {
                h.record(v % 5_000);
            }
        });
        let mut last = 0;
        while !writer.is_finished() {
            let s = h.snapshot();
            assert!(s.count >= last);
            assert_eq!(s.count, s.buckets.iter().map(|b| b.count).sum::<u64>());
            last = s.count;
        }
        writer.join().unwrap();
        assert_eq!(h.count(), 200_000);
        assert_eq!(h.snapshot().count, 200_000);
    }
}
