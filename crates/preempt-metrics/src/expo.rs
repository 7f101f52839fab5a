//! Writing metric families with `prometheus-client`'s encoder, from values read at scrape time.
//!
//! preempt's figures already live in atomics and [`preempt_stats`] histograms written by
//! real-time threads; copying them into `prometheus-client`'s own metric types would add a
//! second writer (or a lock) to the real-time path. So every source is a
//! [`prometheus_client::collector::Collector`] that reads its atomics when scraped and writes
//! each family through these helpers, and the encoder (OpenMetrics 1.0 or Prometheus text
//! 0.0.4, chosen by the scraper's `Accept` header, see [`crate::http`]) is the maintained
//! client's.
//!
//! ```
//! use preempt_metrics::expo::{self, Labels};
//! use prometheus_client::{collector::Collector, encoding::DescriptorEncoder, registry::Registry};
//! use prometheus_client::metrics::MetricType;
//!
//! #[derive(Debug)]
//! struct Answer;
//! impl Collector for Answer {
//!     fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
//!         let series = [(Labels::from([("host", "a")]), 42.0)];
//!         expo::scalars(&mut enc, "answer", "The answer.", None, MetricType::Gauge, &series)
//!     }
//! }
//! let mut registry = Registry::default();
//! registry.register_collector(Box::new(Answer));
//! let text = expo::render(&registry, expo::Format::OpenMetrics).unwrap();
//! assert!(text.contains("answer{host=\"a\"} 42.0"), "{text}");
//! assert!(text.ends_with("# EOF\n"));
//! ```

use std::fmt;

use preempt_stats::histogram::HistogramSnapshot;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use crate::buckets::prometheus_buckets;

/// A series' label set: `(name, value)` pairs, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels(pub Vec<(String, String)>);

impl Labels {
    /// These labels plus one more.
    pub fn with(&self, name: &str, value: impl Into<String>) -> Labels {
        let mut l = self.0.clone();
        l.push((name.into(), value.into()));
        Labels(l)
    }
}

impl<const N: usize> From<[(&str, &str); N]> for Labels {
    fn from(pairs: [(&str, &str); N]) -> Self {
        Labels(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }
}

/// The two text formats a scraper may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 (`application/openmetrics-text; version=1.0.0`), what Prometheus asks
    /// for first.
    OpenMetrics,
    /// The Prometheus text format 0.0.4 (`text/plain; version=0.0.4`), for curl and older tools.
    PrometheusText,
}

impl Format {
    /// The `Content-Type` of a response in this format.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::PrometheusText => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// The format an `Accept` header asks for (OpenMetrics only when it is named).
    pub(crate) fn from_accept(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::PrometheusText,
        }
    }
}

/// Encodes every collector of `registry` in `format`.
pub fn render(registry: &Registry, format: Format) -> Result<String, fmt::Error> {
    let mut out = String::with_capacity(16 * 1024);
    match format {
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, registry)?,
        Format::PrometheusText => {
            prometheus_client::encoding::prometheus_text::encode(&mut out, registry)?
        }
    }
    Ok(out)
}

/// A gauge or counter family: one value per label set (a counter's name gets `_total`).
pub fn scalars(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    kind: MetricType,
    series: &[(Labels, f64)],
) -> fmt::Result {
    if series.is_empty() {
        return Ok(());
    }
    let counter = matches!(kind, MetricType::Counter);
    let mut m = enc.encode_descriptor(name, help, unit, kind)?;
    for (labels, v) in series {
        let mut e = m.encode_family(&labels.0)?;
        if counter {
            e.encode_counter::<NoLabelSet, _, f64>(v, None)?;
        } else {
            e.encode_gauge(v)?;
        }
    }
    Ok(())
}

/// A histogram family in seconds, from nanosecond snapshots, with the log-spaced bounds of
/// [`crate::buckets`].
pub fn histogram_seconds(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: &[(Labels, &HistogramSnapshot)],
) -> fmt::Result {
    if series.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
    for (labels, snap) in series {
        let buckets = prometheus_buckets(snap);
        m.encode_family(&labels.0)?.encode_histogram::<NoLabelSet>(
            snap.sum_ns as f64 / 1e9,
            snap.count,
            &buckets,
            None,
        )?;
    }
    Ok(())
}

/// Seconds from nanoseconds.
pub fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}
