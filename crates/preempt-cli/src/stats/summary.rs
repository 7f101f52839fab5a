//! The percentile summary of a distribution, as reported on the terminal and in result files.
//!
//! ```
//! use preempt_cli::stats::{histogram::Histogram, summary::Summary};
//! let h = Histogram::new();
//! (1..=100u64).for_each(|v| h.record(v * 1_000, v));
//! let s = Summary::from_snapshot(&h.snapshot());
//! assert_eq!(s.count, 100);
//! assert_eq!(s.max_ns, 100_000);
//! assert_eq!(s.max_cycle, Some(100));
//! ```

use serde::{Deserialize, Serialize};

use super::histogram::Snapshot;

/// Count, extremes, mean and percentiles of a set of nanosecond samples.
///
/// Percentiles are bucket upper bounds (never below the true value, at most 0.1 % above it);
/// `min_ns` and `max_ns` are exact.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min_ns: u64,
    /// Arithmetic mean.
    pub mean_ns: f64,
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
    /// Largest sample.
    pub max_ns: u64,
    /// Cycle (period index) of the largest sample, when known.
    pub max_cycle: Option<u64>,
}

impl Summary {
    /// Computes the summary of a histogram snapshot.
    pub fn from_snapshot(s: &Snapshot) -> Self {
        Self {
            count: s.count(),
            min_ns: s.min_ns(),
            mean_ns: (s.mean_ns() * 10.0).round() / 10.0,
            p50_ns: s.value_at_quantile(0.5),
            p90_ns: s.value_at_quantile(0.9),
            p99_ns: s.value_at_quantile(0.99),
            p99_9_ns: s.value_at_quantile(0.999),
            p99_99_ns: s.value_at_quantile(0.9999),
            max_ns: s.max_ns(),
            max_cycle: s.worst().first().map(|&(_, cycle)| cycle),
        }
    }
}

/// Formats nanoseconds as microseconds with one decimal, the unit of the terminal tables.
pub fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1_000.0)
}
