//! Compatibility with HdrHistogram, checked against the `hdrhistogram` crate (a port of Gil
//! Tene's Java reference): same bucket boundaries, same percentiles, and our V2 encoding and
//! interval log decode to the same histogram.

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use preempt_stats::hdr::{IntervalLogWriter, encode_v2, encode_v2_compressed};
use preempt_stats::histogram::{
    Digits1, Digits2, Digits3, HIGHEST_TRACKABLE_NS, Histogram, HistogramSnapshot, Precision,
};
use proptest::prelude::*;

fn reference(digits: u8) -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_NS, digits).unwrap()
}

fn check_boundaries<P: Precision>(values: &[u64]) {
    let l = P::LAYOUT;
    let h = reference(l.significant_digits());
    assert_eq!(h.distinct_values(), l.counts_len(), "counts array length");
    assert_eq!(u32::from(h.buckets()), l.bucket_count());
    for &v in values {
        let i = l.index_of(v);
        assert_eq!(
            l.lowest_value_at(i),
            h.lowest_equivalent(v),
            "lowest of {v}"
        );
        assert_eq!(
            l.highest_value_at(i),
            h.highest_equivalent(v),
            "highest of {v}"
        );
    }
}

/// Every power of two, its neighbours, and the bucket edges of the first few octaves.
fn edge_values() -> Vec<u64> {
    let mut v: Vec<u64> = (0..5_000).collect();
    for k in 0..42 {
        let p = 1_u64 << k;
        v.extend([p - 1, p, p + 1, p + p / 3, 2 * p - 1]);
    }
    v.push(HIGHEST_TRACKABLE_NS);
    v.push(HIGHEST_TRACKABLE_NS - 1);
    v.retain(|&x| x <= HIGHEST_TRACKABLE_NS);
    v
}

#[test]
fn bucket_boundaries_match_hdrhistogram() {
    let values = edge_values();
    check_boundaries::<Digits1>(&values);
    check_boundaries::<Digits2>(&values);
    check_boundaries::<Digits3>(&values);
}

proptest! {
    #[test]
    fn random_values_land_in_hdrhistograms_buckets(v in 0..=HIGHEST_TRACKABLE_NS) {
        check_boundaries::<Digits2>(&[v]);
        check_boundaries::<Digits3>(&[v]);
    }

    #[test]
    fn percentiles_fall_in_hdrhistograms_bucket(
        values in prop::collection::vec(1_u64..50_000_000, 1..400),
        q in 0.0_f64..=1.0,
    ) {
        let ours: Histogram<Digits2> = Histogram::new();
        let mut theirs = reference(2);
        for &v in &values {
            ours.record(v);
            theirs.record(v).unwrap();
        }
        let a = ours.value_at_quantile(q);
        let b = theirs.value_at_quantile(q);
        // Same bucket; ours is additionally clamped to the exact min and max.
        prop_assert_eq!(theirs.lowest_equivalent(a), theirs.lowest_equivalent(b), "q = {}", q);
        prop_assert!(a >= *values.iter().min().unwrap() && a <= *values.iter().max().unwrap());
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
        let exact = sorted[rank - 1];
        // Within one sub-bucket (1/128) of the exact order statistic.
        prop_assert!(a >= exact && a - exact <= exact / 128 + 1, "{} vs exact {}", a, exact);
    }
}

fn decode(bytes: &[u8]) -> hdrhistogram::Histogram<u64> {
    Deserializer::new().deserialize(&mut &bytes[..]).unwrap()
}

fn assert_same(ours: &HistogramSnapshot, theirs: &hdrhistogram::Histogram<u64>) {
    assert_eq!(theirs.len(), ours.count);
    for b in &ours.buckets {
        assert_eq!(
            theirs.count_at(b.low_ns),
            b.count,
            "bucket {}..={}",
            b.low_ns,
            b.high_ns
        );
    }
    let min = ours.min_ns.unwrap();
    assert_eq!(
        theirs.lowest_equivalent(theirs.min()),
        theirs.lowest_equivalent(min)
    );
    assert_eq!(
        theirs.highest_equivalent(theirs.max()),
        ours.buckets.last().unwrap().high_ns
    );
}

#[test]
fn v2_encodings_decode_to_the_same_histogram() {
    let h: Histogram<Digits3> = Histogram::new();
    // Gaps of every size: single empty counters, long zero runs, repeated values.
    for v in [
        1,
        3,
        4,
        2_047,
        2_048,
        2_049,
        10_000,
        10_000,
        10_000,
        1 << 30,
        123_456_789,
    ] {
        h.record(v);
    }
    h.record_n(77_777, 1_000_000);
    let s = h.snapshot();
    assert_same(&s, &decode(&encode_v2(&s)));
    assert_same(&s, &decode(&encode_v2_compressed(&s).unwrap()));
}

#[test]
fn an_empty_histogram_encodes() {
    let h: Histogram<Digits2> = Histogram::new();
    let decoded = decode(&encode_v2(&h.snapshot()));
    assert_eq!(decoded.len(), 0);
}

#[test]
fn interval_logs_parse_with_hdrhistograms_reader() {
    let a: Histogram<Digits2> = Histogram::new();
    let b: Histogram<Digits2> = Histogram::new();
    for v in 1..1_000 {
        a.record(v * 1_000);
    }
    b.record(5_500_000);
    let mut log = Vec::new();
    let mut w = IntervalLogWriter::new(&mut log, Some(1_000.0)).unwrap();
    w.write_comment("preempt latency, cpu 0").unwrap();
    w.write_interval(&a.snapshot(), 0.0, 1.0, Some("cpu0"))
        .unwrap();
    w.write_interval(&b.snapshot(), 1.0, 1.0, None).unwrap();
    assert!(
        w.write_interval(&b.snapshot(), 2.0, 1.0, Some("bad tag"))
            .is_err()
    );
    assert!(w.write_comment("two\nlines").is_err());
    w.into_inner().unwrap();

    let intervals: Vec<_> = IntervalLogIterator::new(&log)
        .map(|e| e.unwrap())
        .filter_map(|e| match e {
            LogEntry::Interval(i) => Some(i),
            _ => None,
        })
        .collect();
    assert_eq!(intervals.len(), 2);
    assert_eq!(intervals[0].tag().map(|t| t.as_str()), Some("cpu0"));
    assert_eq!(
        intervals[1].start_timestamp(),
        std::time::Duration::from_secs(1)
    );
    assert_eq!(intervals[1].max(), 5.5);
    use base64::Engine as _;
    for (interval, ours) in intervals.iter().zip([a.snapshot(), b.snapshot()]) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(interval.encoded_histogram())
            .unwrap();
        assert_same(&ours, &decode(&bytes));
    }
}
