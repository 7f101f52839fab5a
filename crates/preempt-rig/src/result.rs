//! The parts of a demonstrator's result that both demonstrators report: percentiles of a
//! per-sample time ([`TimeSummary`], on the project's one histogram) and the outcome of
//! explaining the app's deadline misses from the kernel trace ([`ExplainOutcome`]). The
//! gimbal's `demo_gimbal` and the UAV's `demo_uav` results embed them; `preempt compare`
//! and `preempt report` read them back.
//!
//! ```
//! use preempt_rig::result::TimeSummary;
//! let t = TimeSummary::of([10_u64, 20, 30].into_iter());
//! assert_eq!((t.count, t.min, t.max), (3, 10, 30));
//! ```

use serde::{Deserialize, Serialize};

use preempt_stats::histogram::{Histogram, HistogramSnapshot};

/// What a demonstrator's ROS 2 node (`--ros2`, cargo feature `ros2`) did, counted on the
/// non-real-time side: a stalled or absent subscriber costs `dropped` messages here, never a
/// sample. The gimbal's setpoints and the UAV's waypoints are its inbound commands
/// (`setpoints_*`); `published` sums the node's state topics.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ros2Counts {
    /// The node's fully qualified name.
    pub node: String,
    /// Its DDS domain (`ROS_DOMAIN_ID`).
    pub domain_id: u16,
    /// State messages handed to DDS.
    pub published: u64,
    /// State messages dropped before DDS (the publisher thread's queue was full).
    pub dropped: u64,
    /// State messages DDS refused.
    pub failed: u64,
    /// Setpoints received and handed to the controller.
    pub setpoints_accepted: u64,
    /// Setpoints received and refused (out of range, NaN, the controller's queue full): the
    /// sum of `setpoints_refused`.
    pub setpoints_rejected: u64,
    /// The refused setpoints by reason (issue 40).
    #[serde(default)]
    pub setpoints_refused: crate::intake::Refusals,
    /// Setpoint samples that could not be deserialised.
    pub setpoint_errors: u64,
}

#[cfg(feature = "ros2")]
impl Ros2Counts {
    /// Node `/name` on `domain_id`: what its publishers sent (`published`, summed over its
    /// topics), what its command subscriptions took (`inbound`) and why its intake refused
    /// what it refused (`refused`).
    pub fn of(
        name: &str,
        domain_id: u16,
        published: preempt_ros2::PublisherCounts,
        inbound: preempt_ros2::SubscriptionCounts,
        refused: crate::intake::Refusals,
    ) -> Ros2Counts {
        Ros2Counts {
            node: format!("/{name}"),
            domain_id,
            published: published.published,
            dropped: published.dropped,
            failed: published.failed,
            setpoints_accepted: inbound.accepted,
            setpoints_rejected: inbound.rejected,
            setpoints_refused: refused,
            setpoint_errors: inbound.errors,
        }
    }
}

/// Percentiles of a per-sample time, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeSummary {
    /// Values.
    pub count: u64,
    /// Smallest.
    pub min: u64,
    /// Mean.
    pub mean: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p99_9: u64,
    /// 99.99th percentile.
    pub p99_99: u64,
    /// Largest.
    pub max: u64,
}

impl TimeSummary {
    /// From values (ns).
    pub fn of(values: impl Iterator<Item = u64>) -> TimeSummary {
        let h: Histogram = Histogram::new();
        for v in values {
            h.record(v);
        }
        if h.count() == 0 {
            return TimeSummary::default();
        }
        let p = h.percentiles();
        TimeSummary {
            count: h.count(),
            min: h.min().unwrap_or(0),
            mean: h.mean().unwrap_or(0.0).round() as u64,
            p50: p.p50_ns,
            p90: p.p90_ns,
            p99: p.p99_ns,
            p99_9: p.p99_9_ns,
            p99_99: p.p99_99_ns,
            max: h.max().unwrap_or(0),
        }
    }

    /// From a snapshot of preempt's accounting (a task's release latency or execution
    /// time); none when it is empty.
    pub fn of_snapshot(h: &HistogramSnapshot) -> Option<TimeSummary> {
        if h.count == 0 {
            return None;
        }
        let p = h.percentiles();
        Some(TimeSummary {
            count: h.count,
            min: h.min_ns.unwrap_or(0),
            mean: h.mean_ns().unwrap_or(0.0) as u64,
            p50: p.p50_ns,
            p90: p.p90_ns,
            p99: p.p99_ns,
            p99_9: p.p99_9_ns,
            p99_99: p.p99_99_ns,
            max: h.max_ns.unwrap_or(0),
        })
    }
}

/// A demo's explain outcome (the gimbal's run, each UAV flight), flattened into its result
/// as the fields `explain` and `explain_skipped`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExplainOutcome {
    /// Why the app's deadline misses were late, from the kernel trace (`--explain` /
    /// `PREEMPT_EXPLAIN=1` and a usable tracefs): per task its explained misses, the run's
    /// top causes (the app statistics' `explain` object, docs/results-schema.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<preempt::explain::Report>,
    /// Why explaining was asked but the misses were not explained (tracefs unusable, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain_skipped: Option<String>,
}

impl ExplainOutcome {
    /// Of [`preempt::explain::take_outcome`]'s answer.
    pub fn of(outcome: Option<Result<preempt::explain::Report, String>>) -> ExplainOutcome {
        match outcome {
            Some(Ok(report)) => ExplainOutcome {
                explain: Some(report),
                explain_skipped: None,
            },
            Some(Err(why)) => ExplainOutcome {
                explain: None,
                explain_skipped: Some(why),
            },
            None => ExplainOutcome::default(),
        }
    }

    /// For the terminal summary: the report's top causes, or why the misses were not
    /// explained; `None` when explaining was not asked.
    pub fn summary(&self) -> Option<String> {
        match (&self.explain, &self.explain_skipped) {
            (Some(report), _) => Some(report.summary()),
            (None, Some(why)) => Some(format!("deadline misses not explained: {why}\n")),
            (None, None) => None,
        }
    }
}
