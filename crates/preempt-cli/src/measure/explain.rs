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

use anyhow::{Context, Result, bail};

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
/// tracefs missing or not permitted: the message names the fix and that the measurement
/// runs without `--explain`.
pub fn start(cfg: &LatencyConfig) -> Result<preempt_trace::Session> {
    try_start(cfg).map_err(|e| {
        if e.is_unavailable() {
            anyhow::anyhow!("--explain: {e}; or measure without --explain")
        } else {
            anyhow::Error::new(e).context("--explain: cannot start kernel tracing")
        }
    })
}

/// Starts tracing the measured CPUs for the run `cfg` describes.
///
/// # Errors
/// tracefs missing or not permitted ([`preempt_trace::Error::is_unavailable`]), or a fault.
pub fn try_start(cfg: &LatencyConfig) -> Result<preempt_trace::Session, preempt_trace::Error> {
    let run_ns = cfg.releases.saturating_mul(cfg.interval_ns);
    preempt_trace::Session::start(preempt_trace::Options {
        cpus: Some(cfg.cpus.clone()),
        retain_ns: run_ns.saturating_add(RETAIN_MARGIN_NS),
        ..preempt_trace::Options::default()
    })
}

/// Explains the outliers of `result` and stores them in `result.explain`; returns the summary
/// lines (at most five) to print.
///
/// # Errors
/// Writing `--trace-out` failed.
pub fn explain_run(
    session: &preempt_trace::Session,
    ex: &ExplainConfig,
    result: &mut LatencyResult,
    threads: &[ThreadSamples],
) -> Result<Vec<String>> {
    let mut out = ExplainResult {
        threshold_ns: ex.threshold_ns,
        threads: Vec::new(),
        top_causes: Vec::new(),
        explained: 0,
        unexplained: 0,
        unexplained_why: None,
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
    result.explain = Some(out);
    if let (Some(path), Some(tr)) = (&ex.trace_out, trace) {
        if tr.is_empty() {
            bail!(
                "--trace-out {}: no outlier could be explained",
                path.display()
            );
        }
        tr.write(path)
            .with_context(|| format!("cannot write --trace-out {}", path.display()))?;
    }
    Ok(lines)
}
