//! The `micro` kind's schema: what `preempt micro` measured, as stored in a
//! [`ResultFile`] with `"kind": "micro"`.
//!
//! The engine that fills it lives in `crate::micro`; the schema lives here, below every engine,
//! so that `report`, `compare`, `history` and `export` read micro results without importing the
//! engine.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::{Distribution, ResultFile, RunResult};
use crate::stats::summary::Summary;

/// Which counter `preempt micro` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterKind {
    /// x86 time-stamp counter.
    Tsc,
    /// arm64 generic timer virtual count.
    Cntvct,
    /// No user-readable counter: `CLOCK_MONOTONIC_RAW` nanoseconds.
    MonotonicRaw,
}

impl CounterKind {
    /// The counter of this build's architecture.
    pub const fn native() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            Self::Tsc
        }
        #[cfg(target_arch = "aarch64")]
        {
            Self::Cntvct
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            Self::MonotonicRaw
        }
    }

    /// What one tick of the counter is, for the report.
    pub fn unit(self) -> &'static str {
        match self {
            Self::Tsc => {
                "TSC reference cycles (constant rate; equal to CPU cycles at the base clock)"
            }
            Self::Cntvct => "arm generic-timer ticks (CNTVCT_EL0; not CPU cycles)",
            Self::MonotonicRaw => {
                "nanoseconds of CLOCK_MONOTONIC_RAW (no cycle counter on this architecture)"
            }
        }
    }
}

/// What was measured about the counter, stored in every micro result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockInfo {
    /// The counter read.
    pub counter: CounterKind,
    /// What one tick is.
    pub unit: String,
    /// Calibrated ticks per second.
    pub counter_hz: f64,
    /// The frequency the hardware declares (CNTFRQ_EL0), when it declares one.
    pub declared_hz: Option<f64>,
    /// The reference clock of the calibration.
    pub calibrated_against: String,
    /// Length of the calibration window.
    pub calibration_window_ns: u64,
    /// Uncertainty of the frequency from the read brackets, parts per million.
    pub calibration_uncertainty_ppm: f64,
    /// Smallest non-zero step between two consecutive reads, in ticks. 1 on bare metal; a
    /// virtualised counter may advance in coarser steps (e.g. 24 ticks = 10 ns on a VM whose
    /// host counter runs at 100 MHz), and every figure is then quantised to it.
    pub resolution_ticks: u64,
    /// CPU flags that make the TSC trustworthy (`constant_tsc`, `nonstop_tsc`,
    /// `tsc_known_freq`), as found in /proc/cpuinfo (x86 only).
    pub counter_flags: Vec<String>,
}

/// The perf cross-check of one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerfCheck {
    /// `cycles` (core cycles) or `msr/tsc/` (TSC ticks while the thread ran).
    pub event: String,
    /// Count over the whole loop divided by the operations.
    pub per_op: f64,
    /// What the counter should read per operation if `micro`'s figures are right: the mean
    /// sample plus one timing bracket, in ticks.
    pub expected_ticks_per_op: f64,
    /// `per_op / expected - 1`, in percent (comparable only for `msr/tsc/`, or for `cycles`
    /// when the core runs at the TSC frequency).
    pub deviation_pct: f64,
}

impl PerfCheck {
    /// Builds the check from a counter delta over `ops` operations.
    pub fn new(event: &str, delta: u64, ops: u64, expected_ticks_per_op: f64) -> Option<Self> {
        if ops == 0 || expected_ticks_per_op <= 0.0 {
            return None;
        }
        let per_op = delta as f64 / ops as f64;
        Some(Self {
            event: event.into(),
            per_op: (per_op * 10.0).round() / 10.0,
            expected_ticks_per_op: (expected_ticks_per_op * 10.0).round() / 10.0,
            deviation_pct: ((per_op / expected_ticks_per_op - 1.0) * 1000.0).round() / 10.0,
        })
    }
}

/// Exact statistics of one benchmark in counter ticks ("cycles" of the counter named in
/// [`ClockInfo`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CycleSummary {
    /// Samples.
    pub count: u64,
    /// Smallest sample.
    pub min_cycles: u64,
    /// Median.
    pub p50_cycles: u64,
    /// 90th percentile.
    pub p90_cycles: u64,
    /// 99th percentile.
    pub p99_cycles: u64,
    /// Largest sample.
    pub max_cycles: u64,
    /// Mean (the seeds' only figure).
    pub mean_cycles: f64,
}

/// One benchmark's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MicroBench {
    /// `nxp`, `zephyr` or `framework`.
    pub set: String,
    /// Stable identifier, e.g. `mutex_lock`.
    pub id: String,
    /// Human title.
    pub title: String,
    /// What lies between the two counter reads.
    pub method: String,
    /// In nanoseconds, with the raw histogram (`None` when skipped).
    pub ns: Option<Distribution>,
    /// In counter ticks, exact (`None` when skipped).
    pub cycles: Option<CycleSummary>,
    /// Ticks subtracted from every sample (`--subtract-overhead`), 0 when raw.
    pub overhead_subtracted_cycles: u64,
    /// perf counter cross-check, when a counter was available.
    pub perf: Option<PerfCheck>,
    /// Why there is no perf figure.
    pub perf_note: Option<String>,
    /// Why the benchmark did not run.
    pub skipped: Option<String>,
    /// Observations (e.g. yields that did not switch).
    pub notes: Vec<String>,
}

/// The timing overhead: two back-to-back counter reads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MicroOverhead {
    /// In counter ticks.
    pub cycles: CycleSummary,
    /// In nanoseconds.
    pub ns: Summary,
}

/// Whether a set ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetStatus {
    /// Set name.
    pub set: String,
    /// Benchmarks run.
    pub benches: usize,
    /// Reserved rows without figures (the framework set in files written before it was
    /// measured; empty since).
    pub planned: Vec<String>,
    /// Why the set has no figures.
    pub note: Option<String>,
}

/// `preempt micro` results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MicroResult {
    /// The counter and its calibration.
    pub clock: ClockInfo,
    /// Cost of one timing bracket.
    pub overhead: MicroOverhead,
    /// CPU of the benchmark threads.
    pub cpu: usize,
    /// Policy of the benchmark threads, e.g. `fifo:80` or `other`.
    pub policy: String,
    /// Multiplier of the seeds' counts.
    pub scale: f64,
    /// Stressors running during the measurement (empty = idle).
    pub stress: Vec<String>,
    /// The sets requested.
    pub sets: Vec<SetStatus>,
    /// Every benchmark, in run order.
    pub benches: Vec<MicroBench>,
}

/// The micro result of a results file, or an error naming the kind it holds instead.
pub fn micro_of(file: &ResultFile) -> Result<&MicroResult> {
    match &file.result {
        RunResult::Micro(m) => Ok(m),
        other => anyhow::bail!("expected a micro result, found kind '{}'", other.kind()),
    }
}

impl MicroResult {
    /// A one-line headline (history listings): benchmarks that ran, the context switch's p50.
    pub fn headline(&self) -> String {
        let ran = self.benches.iter().filter(|b| b.cycles.is_some()).count();
        let cs = self
            .benches
            .iter()
            .find(|b| b.id == "context_switch")
            .and_then(|b| b.ns.as_ref());
        format!(
            "{ran} benchmarks{}",
            cs.map(|d| format!(", context switch p50 {} ns", d.summary.p50_ns))
                .unwrap_or_default()
        )
    }

    /// The result as one CSV table (header, rows): one row per benchmark, units in the
    /// column names.
    pub fn csv_table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let m = self;
        let header: Vec<String> = [
            "set",
            "id",
            "title",
            "samples",
            "min_ns",
            "p50_ns",
            "p99_ns",
            "max_ns",
            "mean_ns",
            "min_cycles",
            "p50_cycles",
            "p99_cycles",
            "max_cycles",
            "mean_cycles",
            "overhead_p50_cycles",
            "overhead_subtracted_cycles",
            "counter",
            "counter_hz",
            "perf_event",
            "perf_per_op",
            "skipped",
        ]
        .map(String::from)
        .to_vec();
        let mut rows = Vec::new();
        for b in &m.benches {
            let ns = b.ns.as_ref().map(|d| d.summary);
            let c = b.cycles;
            let f = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
            rows.push(vec![
                b.set.clone(),
                b.id.clone(),
                b.title.clone(),
                f(c.map(|c| c.count)),
                f(ns.map(|s| s.min_ns)),
                f(ns.map(|s| s.p50_ns)),
                f(ns.map(|s| s.p99_ns)),
                f(ns.map(|s| s.max_ns)),
                ns.map(|s| format!("{:.1}", s.mean_ns)).unwrap_or_default(),
                f(c.map(|c| c.min_cycles)),
                f(c.map(|c| c.p50_cycles)),
                f(c.map(|c| c.p99_cycles)),
                f(c.map(|c| c.max_cycles)),
                c.map(|c| format!("{:.1}", c.mean_cycles))
                    .unwrap_or_default(),
                m.overhead.cycles.p50_cycles.to_string(),
                b.overhead_subtracted_cycles.to_string(),
                format!("{:?}", m.clock.counter).to_lowercase(),
                format!("{:.0}", m.clock.counter_hz),
                b.perf.as_ref().map(|p| p.event.clone()).unwrap_or_default(),
                b.perf
                    .as_ref()
                    .map(|p| format!("{:.1}", p.per_op))
                    .unwrap_or_default(),
                b.skipped.clone().unwrap_or_default(),
            ]);
        }
        (header, rows)
    }
}
