//! What every microbenchmark shares: the context it runs in ([`Ctx`]), the samples it returns
//! ([`Samples`]), the descriptor of a benchmark ([`Bench`]) and the exact statistics that turn
//! tick samples into a [`MicroBench`] record.

use std::sync::atomic::AtomicBool;

use preempt_io::sys::sched::{self, Policy};

use super::clock::CycleClock;
use super::perf::{Counter, PerfCheck};
use super::{CycleSummary, MicroBench};
use crate::results::Distribution;
use crate::stats::histogram::Histogram;

/// Where and how a benchmark runs.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The calibrated counter.
    pub clock: &'a CycleClock,
    /// The CPU every benchmark thread is pinned to.
    pub cpu: usize,
    /// SCHED_FIFO priority of the measuring thread(s), `None` when real-time policies are
    /// not permitted (then they run as SCHED_OTHER and say so).
    pub priority: Option<u8>,
    /// Multiplier of the seeds' sample counts (1.0 = as in the seeds).
    pub scale: f64,
    /// Median cost of one timing bracket in ticks, subtracted from every sample when
    /// `subtract_overhead` is set.
    pub overhead_ticks: u64,
    /// Subtract `overhead_ticks` from each sample (`--subtract-overhead`).
    pub subtract_overhead: bool,
    /// Set by Ctrl-C: benchmarks stop early and return what they measured.
    pub stop: &'a AtomicBool,
}

impl Ctx<'_> {
    /// The sample count for a seed count `n`, scaled (at least 10).
    pub fn count(&self, n: u64) -> u64 {
        ((n as f64 * self.scale).round() as u64).max(10)
    }

    /// Pins the calling thread to the benchmark CPU and gives it the benchmark policy at
    /// `priority_offset` below the base priority (clamped to 1). Returns the policy used.
    pub(crate) fn enter_thread(&self, priority_offset: u8) -> std::io::Result<Policy> {
        sched::set_current_thread_affinity(&[self.cpu])?;
        let policy = match self.priority {
            Some(p) => Policy::Fifo {
                priority: p.saturating_sub(priority_offset).max(1),
            },
            None => Policy::Other { nice: 0 },
        };
        sched::set_current_thread_policy(&policy)?;
        Ok(policy)
    }
}

/// Raw samples of one benchmark, in counter ticks.
#[derive(Debug, Default)]
pub struct Samples {
    /// One value per timed operation.
    pub ticks: Vec<u64>,
    /// perf counter delta over the timed loop and the operations it covered.
    pub perf: Option<(&'static str, u64, u64)>,
    /// Ticks the perf window covers per operation beyond this benchmark's own samples and
    /// one timing bracket (e.g. the unlock half of a lock+unlock pair).
    pub perf_extra_ticks: f64,
    /// Why perf has no figure for this benchmark.
    pub perf_note: Option<String>,
    /// Observations worth showing beside the figures.
    pub notes: Vec<String>,
}

/// A benchmark's body: returns `(id, samples)` pairs.
pub type Runner = fn(&Ctx<'_>) -> anyhow::Result<Vec<(&'static str, Samples)>>;

/// A benchmark: identity, what it measures, and the function that runs it.
pub struct Bench {
    /// `nxp`, `zephyr` or `framework`.
    pub set: &'static str,
    /// Stable identifier, e.g. `mutex_lock`.
    pub id: &'static str,
    /// Table title.
    pub title: &'static str,
    /// How the figure is obtained (what lies between the two counter reads).
    pub method: &'static str,
    /// Whether it needs SCHED_FIFO to mean anything (skipped without it).
    pub needs_rt: bool,
    /// Runs it. Several ids may come from one run (malloc and free), so a runner returns
    /// `(id, samples)` pairs.
    pub run: Runner,
}

impl std::fmt::Debug for Bench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bench")
            .field("set", &self.set)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Exact statistics of tick samples (sorts `ticks`).
pub(crate) fn cycle_summary(ticks: &mut [u64]) -> Option<CycleSummary> {
    if ticks.is_empty() {
        return None;
    }
    ticks.sort_unstable();
    let n = ticks.len();
    // Rank ceil(q * n), 1-based: the same convention as the latency histograms.
    let at = |q: f64| ticks[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let sum: u128 = ticks.iter().map(|&t| u128::from(t)).sum();
    Some(CycleSummary {
        count: n as u64,
        min_cycles: ticks[0],
        p50_cycles: at(0.5),
        p90_cycles: at(0.9),
        p99_cycles: at(0.99),
        max_cycles: ticks[n - 1],
        mean_cycles: ((sum as f64 / n as f64) * 10.0).round() / 10.0,
    })
}

/// Turns samples into the stored record: cycles exact, nanoseconds through the shared
/// histogram (so `report` and `compare` read micro figures like every other distribution).
pub fn record(bench: &Bench, id: &str, title: &str, mut s: Samples, ctx: &Ctx<'_>) -> MicroBench {
    let subtracted = if ctx.subtract_overhead {
        ctx.overhead_ticks
    } else {
        0
    };
    if subtracted > 0 {
        for t in &mut s.ticks {
            *t = t.saturating_sub(subtracted);
        }
    }
    let h = Histogram::new();
    for (i, &t) in s.ticks.iter().enumerate() {
        h.record(ctx.clock.ticks_to_ns(t), i as u64);
    }
    let cycles = cycle_summary(&mut s.ticks);
    let perf = s.perf.and_then(|(event, delta, ops)| {
        let mean = cycles.as_ref().map_or(0.0, |c| c.mean_cycles);
        PerfCheck::new(
            event,
            delta,
            ops,
            mean + (subtracted + ctx.overhead_ticks) as f64 + s.perf_extra_ticks,
        )
    });
    MicroBench {
        set: bench.set.into(),
        id: id.into(),
        title: title.into(),
        method: bench.method.into(),
        ns: cycles
            .as_ref()
            .map(|_| Distribution::from_snapshot(&h.snapshot())),
        cycles,
        overhead_subtracted_cycles: subtracted,
        perf,
        perf_note: s.perf_note,
        skipped: None,
        notes: s.notes,
    }
}

/// A record for a benchmark that could not run.
pub fn skipped(bench: &Bench, why: String) -> MicroBench {
    MicroBench {
        set: bench.set.into(),
        id: bench.id.into(),
        title: bench.title.into(),
        method: bench.method.into(),
        ns: None,
        cycles: None,
        overhead_subtracted_cycles: 0,
        perf: None,
        perf_note: None,
        skipped: Some(why),
        notes: Vec::new(),
    }
}

/// Runs `body` between two reads of a perf counter, when one opens; records the delta.
pub(crate) fn with_perf<T>(ops: u64, samples: &mut Samples, body: impl FnOnce() -> T) -> T {
    match Counter::open() {
        Ok(c) => {
            let a = c.read();
            let out = body();
            match (a, c.read()) {
                (Ok(a), Ok(b)) => samples.perf = Some((c.event, b.saturating_sub(a), ops)),
                (Err(e), _) | (_, Err(e)) => {
                    samples.perf_note = Some(format!("perf read failed: {e}"))
                }
            }
            out
        }
        Err(why) => {
            samples.perf_note = Some(why);
            body()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_percentiles() {
        let mut t: Vec<u64> = (1..=1000).rev().collect();
        let s = cycle_summary(&mut t).unwrap();
        assert_eq!(
            (
                s.min_cycles,
                s.p50_cycles,
                s.p90_cycles,
                s.p99_cycles,
                s.max_cycles
            ),
            (1, 500, 900, 990, 1000)
        );
        assert_eq!(s.mean_cycles, 500.5);
        assert!(cycle_summary(&mut []).is_none());
    }
}
