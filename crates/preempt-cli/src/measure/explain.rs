//! `preempt latency --explain[=US]`: why were the outliers late, from the kernel trace.
//!
//! A [`preempt_trace::Session`] traces the measured CPUs for the whole run (started before
//! the first release, its history kept for the run's length plus a margin, bounded in count
//! per CPU). The measuring threads keep every `(release, wake)` pair in their preallocated
//! sample buffer (as `--trace-samples` does), so the hot loop is unchanged. After the run,
//! samples above the threshold (`--explain=US`, or by default above the thread's p99.9) are
//! explained, the worst first, at most [`MAX_PER_THREAD`] per thread; each gets the causes
//! that add up to its latency. The per-run `top_causes` aggregate them; `--trace-out FILE`
//! writes the windows as a Chrome/Perfetto JSON trace.

use std::path::Path;

use anyhow::{Context, Result};

use super::latency::{ThreadSamples, TraceRecord};
use crate::config::{ExplainConfig, LatencyConfig};
use crate::results::{ExplainResult, ExplainedSample, LatencyResult, ThreadExplanations};

/// Most outliers explained per thread (the worst ones).
pub const MAX_PER_THREAD: usize = 200;
/// History kept beyond the run's nominal length (start-up, late finish).
const RETAIN_MARGIN_NS: u64 = 5_000_000_000;

/// Starts tracing the measured CPUs, or says why it cannot (with the fix).
///
/// # Errors
/// Not permitted to use tracefs: a [`PrivilegeError`](crate::error::PrivilegeError) (exit 3)
/// naming the fix and that the measurement runs without `--explain`; tracefs missing from
/// the kernel or a fault: exit 1, likewise named.
pub(crate) fn start(cfg: &LatencyConfig) -> Result<preempt_trace::Session> {
    try_start(cfg).map_err(|e| match e {
        preempt_trace::Error::Permission(_) => anyhow::Error::new(crate::error::PrivilegeError(
            format!("--explain: {e}; or measure without --explain"),
        )),
        e if e.is_unavailable() => {
            anyhow::anyhow!("--explain: {e}; or measure without --explain")
        }
        e => anyhow::Error::new(e).context("--explain: cannot start kernel tracing"),
    })
}

/// Starts tracing the measured CPUs for the run `cfg` describes.
///
/// # Errors
/// tracefs missing or not permitted ([`preempt_trace::Error::is_unavailable`]), or a fault.
pub(crate) fn try_start(
    cfg: &LatencyConfig,
) -> Result<preempt_trace::Session, preempt_trace::Error> {
    let run_ns = cfg.releases.saturating_mul(cfg.interval_ns);
    preempt_trace::Session::start(preempt_trace::Options {
        cpus: Some(cfg.cpus.clone()),
        retain_ns: run_ns.saturating_add(RETAIN_MARGIN_NS),
        ..preempt_trace::Options::default()
    })
}

/// What [`explain_run`] found: the lines to print, and the `--trace-out` trace to write once
/// the run's own results are saved ([`write_trace_out`]).
#[derive(Debug, Default)]
pub(crate) struct Explained {
    /// The summary lines (at most five causes).
    pub lines: Vec<String>,
    /// The explained windows as a Chrome/Perfetto trace, when `--trace-out` was given.
    pub trace: Option<preempt_trace::perfetto::ChromeTrace>,
}

/// Explains the outliers of `result` and stores them in `result.explain`; returns the summary
/// lines (at most five) to print and the `--trace-out` trace. Nothing here can fail: the
/// trace is written by [`write_trace_out`] after the run's results, so that an optional
/// output never costs the measurement.
pub(crate) fn explain_run(
    session: &preempt_trace::Session,
    ex: &ExplainConfig,
    result: &mut LatencyResult,
    threads: &[ThreadSamples],
) -> Explained {
    let mut out = ExplainResult {
        threshold_ns: ex.threshold_ns,
        threads: Vec::new(),
        top_causes: Vec::new(),
        explained: 0,
        unexplained: 0,
        unexplained_why: None,
        throttled: session.throttled(),
    };
    let mut all = Vec::new();
    let mut trace = ex
        .trace_out
        .as_ref()
        .map(|_| preempt_trace::perfetto::ChromeTrace::new());
    for (i, t) in threads.iter().enumerate() {
        let Some(cpu) = t.cpu else {
            continue; // unpinned (SCHED_DEADLINE): the CPU of each sample is not known
        };
        let threshold = ex.threshold_ns.unwrap_or_else(|| {
            result
                .threads
                .get(i)
                .map_or(u64::MAX, |r| r.latency.summary.p99_9_ns)
        });
        let mut late: Vec<&TraceRecord> = t
            .samples
            .iter()
            .filter(|s| s.wake_ns.saturating_sub(s.release_ns) >= threshold.max(1))
            .collect();
        late.sort_by_key(|s| std::cmp::Reverse(s.wake_ns - s.release_ns));
        let skipped = late.len().saturating_sub(MAX_PER_THREAD);
        late.truncate(MAX_PER_THREAD);
        let windows: Vec<(usize, preempt_trace::Window)> = late
            .iter()
            .map(|s| {
                (
                    cpu,
                    preempt_trace::Window {
                        release_ns: s.release_ns,
                        end_ns: s.wake_ns,
                        pid: t.tid,
                    },
                )
            })
            .collect();
        let mut explanations = Vec::new();
        for (s, res) in late.iter().zip(session.explain_all(&windows)) {
            match res {
                Ok(e) => {
                    if let Some(tr) = trace.as_mut() {
                        tr.add_explanation(&e, &format!("thread {i} cycle {}", s.cycle));
                    }
                    explanations.push(ExplainedSample::new(s.cycle, &e));
                    all.push(e);
                }
                Err(e) => {
                    out.unexplained += 1;
                    out.unexplained_why.get_or_insert_with(|| e.to_string());
                }
            }
        }
        out.unexplained += skipped as u64;
        out.threads.push(ThreadExplanations {
            thread: i,
            tid: t.tid,
            cpu,
            threshold_ns: threshold,
            explanations,
        });
    }
    out.explained = all.len() as u64;
    out.top_causes = preempt_trace::top_causes(&all);
    let mut lines = vec![format!(
        "why the outliers were late (kernel trace; {} explained{}):",
        out.explained,
        if out.unexplained > 0 {
            match &out.unexplained_why {
                Some(why) => format!(", {} not: {why}", out.unexplained),
                None => format!(", {} not", out.unexplained),
            }
        } else {
            String::new()
        }
    )];
    let partly = all.iter().filter(|e| !e.covered).count();
    if partly > 0 {
        lines.push(format!(
            "  {partly} of {} outliers only partly traced (events lost: their time is `lost`)",
            all.len()
        ));
    }
    lines.extend(
        preempt_trace::summary_lines(&out.top_causes, all.len(), "outliers", 5)
            .into_iter()
            .map(|l| format!("  {l}")),
    );
    if trace
        .as_ref()
        .is_some_and(preempt_trace::perfetto::ChromeTrace::is_empty)
    {
        lines.push(format!(
            "  --trace-out: no outlier {}, so the trace holds no window",
            if out.unexplained > 0 {
                "could be explained"
            } else {
                "reached the threshold"
            }
        ));
    }
    lines.extend(super::ledger::throttled_line(&out.throttled));
    super::ledger::note_throttled(&mut result.ledger, &out.throttled);
    result.explain = Some(out);
    Explained { lines, trace }
}

/// Writes the `--trace-out` trace (an empty trace too, so that an older file at `path` is
/// never left looking like this run's). Called after the run's results are saved.
///
/// # Errors
/// The file cannot be written; the message names `--trace-out` and the path.
pub fn write_trace_out(path: &Path, trace: &preempt_trace::perfetto::ChromeTrace) -> Result<()> {
    trace
        .write(path)
        .with_context(|| format!("cannot write --trace-out {}", path.display()))?;
    crate::export::hand_over(path);
    Ok(())
}
