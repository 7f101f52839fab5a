//! `preempt tail`: distribution-free statements about a latency tail (issue 39, docs/TAIL.md).
//!
//! How long must a run be to claim a per-cycle exceedance probability (`--plan 1e-9@1kHz`), and
//! what does a run of latencies say about `P(latency > D)`: the cycles, the exceedances of `D`,
//! the extremal index and the effective cycles, the exact 95 % upper bound, and the same per
//! hour of operation at the run's rate. The statistics are `preempt_stats::tail`; this module
//! reads the inputs and says what each number rests on.
//!
//! Inputs: a plain text file of latencies in ns, one per line (what any tool can write; read as
//! a stream, so its length is not bounded by memory: only the exceedance times are kept), or a
//! preempt `latency` result, whose histogram gives the exceedances (exact when `D` is a bucket
//! boundary, else counted conservatively) but no sample order, so no extremal index.
//!
//! ```
//! use preempt_cli::tail::{parse_plan, parse_rate_hz};
//! assert_eq!(parse_plan("1e-9@1kHz").unwrap(), (1e-9, Some(1000.0)));
//! assert_eq!(parse_rate_hz("10 kHz", "--rate").unwrap(), 10_000.0);
//! assert!(parse_plan("1e-9@fast").is_err());
//! ```

use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{Context, Result, bail};
use preempt_stats::tail::{self as stats, CONFIDENCE_95, TailError};
use serde::Serialize;

use crate::error::usage;
use crate::results::RunResult;
use crate::results::input::{Loaded, load_path, open_input};

/// Parses a rate such as `1kHz`, `10 kHz`, `2.5MHz` or `1000` (Hz) given as `flag`.
pub fn parse_rate_hz(text: &str, flag: &str) -> Result<f64> {
    let t = text.trim();
    let split = t
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || {
        usage(format!(
            "{flag} '{text}' is not a rate; write e.g. 1kHz, 10kHz, 1MHz or 1000 (Hz)"
        ))
    };
    let value: f64 = num.trim().parse().map_err(|_| bad())?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "hz" => 1.0,
        "khz" => 1e3,
        "mhz" => 1e6,
        _ => return Err(bad()),
    };
    let hz = value * scale;
    if !(hz.is_finite() && hz > 0.0) {
        return Err(usage(format!(
            "{flag} '{text}' must be a positive rate, e.g. 1kHz"
        )));
    }
    Ok(hz)
}

/// Parses `--plan P@RATE` (`1e-9@1kHz`) or `--plan P`: the per-cycle probability to be shown,
/// in (0, 1), and the rate of the loop.
pub fn parse_plan(text: &str) -> Result<(f64, Option<f64>)> {
    let (p_text, rate) = match text.split_once('@') {
        Some((p, r)) => (p, Some(parse_rate_hz(r, "--plan rate")?)),
        None => (text, None),
    };
    let p: f64 = p_text.trim().parse().map_err(|_| {
        usage(format!(
            "--plan '{text}': '{}' is not a probability; write P@RATE, e.g. 1e-9@1kHz",
            p_text.trim()
        ))
    })?;
    if !(p > 0.0 && p < 1.0) {
        return Err(usage(format!(
            "--plan '{text}': the probability {p} must be between 0 and 1 (exclusive), e.g. \
             1e-9@1kHz"
        )));
    }
    Ok((p, rate))
}

/// Parses `--deadline` (`100us`, `250000ns`, `1.5ms`, `1s`) to ns. A bare number is refused:
/// latencies are in ns, deadlines usually in µs, and a guess either way is off by 1000.
pub fn parse_deadline_ns(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = |why: &str| {
        usage(format!(
            "--deadline '{text}' {why}; write e.g. 100us, 1ms or 250000ns"
        ))
    };
    let value: f64 = num.parse().map_err(|_| bad("is not a duration"))?;
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" => return Err(bad("has no unit")),
        _ => return Err(bad("has an unknown unit")),
    };
    let ns = value * scale;
    if !(0.0..1.8e19).contains(&ns) || ns.fract() != 0.0 {
        return Err(bad("is not a whole number of ns below 584 years"));
    }
    Ok(ns as u64)
}

/// What `preempt tail FILE --deadline D` read: the cycles and the exceedances of `D`.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// Cycles (samples) of the run.
    pub cycles: u64,
    /// Samples above `D`.
    pub exceedances: u64,
    /// The cycle indices of the exceedances, where the input keeps the sample order.
    pub times: Option<Vec<u64>>,
    /// Whether `exceedances` is exact; `false` where a histogram bucket straddles `D` and its
    /// samples were all counted as exceedances (conservative).
    pub exact: bool,
    /// The rate of the run, Hz, where the input records it (a result's interval).
    pub rate_hz: Option<f64>,
    /// What the input is, for the report.
    pub source: String,
}

/// Reads latencies in ns, one per line, and keeps the cycle indices of those above
/// `deadline_ns`. Blank lines are skipped (they are not cycles); anything else that is not a
/// whole non-negative number of ns below 2^64 is refused naming its line.
pub fn read_text<R: BufRead>(reader: R, name: &str, deadline_ns: u64) -> Result<Observed> {
    let mut cycles = 0u64;
    let mut times = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let line_no = index + 1;
        let line = line.with_context(|| format!("cannot read {name} at line {line_no}"))?;
        let value = line.trim();
        if value.is_empty() {
            continue;
        }
        let ns = parse_sample(value).map_err(|why| {
            anyhow::anyhow!(
                "{name} line {line_no}: '{}' {why}; the file must hold one latency in ns per \
                 line (a whole number)",
                shorten(value)
            )
        })?;
        if ns > deadline_ns {
            times.push(cycles);
        }
        cycles += 1;
    }
    if cycles == 0 {
        bail!("{name} holds no latency: give one latency in ns per line");
    }
    Ok(Observed {
        cycles,
        exceedances: times.len() as u64,
        times: Some(times),
        exact: true,
        rate_hz: None,
        source: format!("{name} (text, one latency in ns per line)"),
    })
}

fn parse_sample(value: &str) -> Result<u64, &'static str> {
    if let Some(rest) = value.strip_prefix('-') {
        return if rest.parse::<f64>().is_ok() {
            Err("is negative, and a latency cannot be")
        } else {
            Err("is not a number")
        };
    }
    let digits = value.strip_prefix('+').unwrap_or(value);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return digits
            .parse()
            .map_err(|_| "overflows 64 bits (more than 584 years in ns)");
    }
    if digits.parse::<f64>().is_ok() {
        Err("is not a whole number of ns")
    } else {
        Err("is not a number")
    }
}

fn shorten(value: &str) -> String {
    if value.chars().count() > 40 {
        format!("{}…", value.chars().take(40).collect::<String>())
    } else {
        value.to_string()
    }
}

/// Reads `path`: a preempt `latency` result (JSON, its histogram) or a text file of latencies.
pub fn read_input(path: &Path, deadline_ns: u64) -> Result<Observed> {
    let name = path.display().to_string();
    let mut reader = BufReader::new(open_input(path)?);
    let head = reader
        .fill_buf()
        .with_context(|| format!("cannot read {name}"))?;
    if head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        return from_result(path, deadline_ns);
    }
    read_text(reader, &name, deadline_ns)
}

/// The exceedances of `deadline_ns` in a latency result's histograms, all threads pooled (each
/// thread's cycle is a trial; the rate is threads / interval).
fn from_result(path: &Path, deadline_ns: u64) -> Result<Observed> {
    let input = load_path(path)?;
    let name = path.display().to_string();
    let Loaded::Result(file) = &input.loaded else {
        bail!(
            "{name} is {} output, not a preempt latency result: give a `preempt latency` \
             result or a text file of latencies in ns",
            input.loaded.kind()
        );
    };
    let RunResult::Latency(run) = &file.result else {
        bail!(
            "{name} is a preempt '{}' result; `preempt tail` reads a latency result (its \
             histogram) or a text file of latencies in ns",
            file.result.kind()
        );
    };
    let (mut cycles, mut exceedances, mut exact, mut missed) = (0u64, 0u64, true, 0u64);
    for thread in &run.threads {
        let h = &thread.latency.histogram;
        // A missed period was never served: it exceeds every deadline.
        missed += thread.missed_periods;
        cycles += h.buckets.iter().map(|b| b.count).sum::<u64>() + thread.missed_periods;
        exceedances += thread.missed_periods;
        for b in &h.buckets {
            if b.lower_ns > deadline_ns {
                exceedances += b.count;
            } else if b.upper_ns > deadline_ns {
                // The bucket straddles D: some of its samples may lie at or below it.
                exceedances += b.count;
                exact = false;
            }
        }
    }
    let interval = run.settings.interval_ns;
    let rate_hz = (interval > 0 && !run.threads.is_empty())
        .then(|| run.threads.len() as f64 * 1e9 / interval as f64);
    Ok(Observed {
        cycles,
        exceedances,
        times: None,
        exact,
        rate_hz,
        source: format!(
            "{name} (latency result, {} thread{} pooled, histogram{})",
            run.threads.len(),
            if run.threads.len() == 1 { "" } else { "s" },
            if missed > 0 {
                format!("; {missed} missed periods counted as exceedances")
            } else {
                String::new()
            }
        ),
    })
}

/// The `distribution_free` block of `preempt tail --json`.
#[derive(Debug, Clone, Serialize)]
pub struct DistributionFree {
    /// What was read.
    pub source: String,
    /// Cycles (samples) of the run.
    pub cycles: u64,
    /// The level D.
    pub deadline_ns: u64,
    /// Samples above D.
    pub exceedances: u64,
    /// Whether `exceedances` is exact (false: a histogram bucket straddles D, counted whole).
    pub exceedances_exact: bool,
    /// The extremal index θ (intervals estimator), or `null` (see `extremal_index_why`).
    pub extremal_index: Option<f64>,
    /// Clusters of exceedances after declustering, or `null`.
    pub clusters: Option<u64>,
    /// Run length of the declustering, cycles, or `null`.
    pub run_length_cycles: Option<u64>,
    /// Why θ was not estimated, or `null`.
    pub extremal_index_why: Option<String>,
    /// The trials of the bound: ⌊cycles·e/k⌋ with `e = events`, or `cycles` where θ is not
    /// estimated.
    pub effective_cycles: u64,
    /// The independent events of the bound: ⌊k²/Σ(cluster size)²⌋ (the clusters when all
    /// have the same size), or the exceedances where θ is not estimated.
    pub events: u64,
    /// Whether the bound rests on independent cycles (θ not estimated).
    pub assumes_independence: bool,
    /// The confidence of the bound (0.95).
    pub confidence: f64,
    /// Exact one-sided upper confidence bound on P(latency > D) per cycle.
    pub upper_bound: f64,
    /// The rate used for the per-hour figure, Hz, or `null`.
    pub rate_hz: Option<f64>,
    /// Upper bound on the expected exceedances per hour at `rate_hz`, or `null`.
    pub per_hour_upper: Option<f64>,
    /// Why there is no per-hour figure, or `null`.
    pub per_hour_why: Option<String>,
}

/// The statement about `P(latency > deadline_ns)` of what was read; `rate_hz` (from `--rate`)
/// overrides the input's own rate.
pub fn distribution_free(
    observed: &Observed,
    deadline_ns: u64,
    rate_hz: Option<f64>,
) -> Result<DistributionFree> {
    let s = stats::statement(
        observed.cycles,
        observed.exceedances,
        observed.times.as_deref(),
        CONFIDENCE_95,
    )
    .map_err(|e| anyhow::anyhow!("{}: {e}", observed.source))?;
    let rate_hz = rate_hz.or(observed.rate_hz);
    let per_hour = stats::per_hour(s.upper_bound, rate_hz);
    let why = |e: TailError| e.to_string();
    Ok(DistributionFree {
        source: observed.source.clone(),
        cycles: s.cycles,
        deadline_ns,
        exceedances: s.exceedances,
        exceedances_exact: observed.exact,
        extremal_index: s.extremal_index.ok().map(|e| e.theta),
        clusters: s.extremal_index.ok().map(|e| e.clusters),
        run_length_cycles: s.extremal_index.ok().map(|e| e.run_length),
        extremal_index_why: s.extremal_index.err().map(why),
        effective_cycles: s.effective_cycles,
        events: s.events,
        assumes_independence: s.assumes_independence,
        confidence: s.confidence,
        upper_bound: s.upper_bound,
        rate_hz,
        per_hour_upper: per_hour.ok(),
        per_hour_why: per_hour.err().map(why),
    })
}

/// The terminal form of a statement.
pub fn render(d: &DistributionFree) -> String {
    let mut out = String::new();
    let line = |out: &mut String, label: &str, value: String| {
        out.push_str(&format!("  {label:<34} {value}\n"));
    };
    out.push_str(&format!(
        "Distribution-free statement (no model), P(latency > {}):\n",
        fmt_ns(d.deadline_ns)
    ));
    line(&mut out, "input", d.source.clone());
    line(&mut out, "cycles", d.cycles.to_string());
    line(
        &mut out,
        &format!("exceedances (> {} ns)", d.deadline_ns),
        if d.exceedances_exact {
            d.exceedances.to_string()
        } else {
            format!(
                "at most {} (a histogram bucket straddles the deadline; all its samples are \
                 counted: conservative)",
                d.exceedances
            )
        },
    );
    match (d.extremal_index, d.clusters, &d.extremal_index_why) {
        (Some(theta), Some(clusters), _) => {
            line(
                &mut out,
                "extremal index θ (Ferro-Segers)",
                format!(
                    "{theta:.3} ({clusters} cluster{} of exceedances, run length {} cycle{})",
                    plural(clusters),
                    d.run_length_cycles.unwrap_or(0),
                    plural(d.run_length_cycles.unwrap_or(0))
                ),
            );
            line(
                &mut out,
                "independent events e",
                format!(
                    "{} (k²/Σ cluster size²: the clusters, fewer where their sizes vary)",
                    d.events
                ),
            );
            line(
                &mut out,
                "effective cycles n·e/k",
                d.effective_cycles.to_string(),
            );
        }
        (_, _, why) => line(
            &mut out,
            "extremal index θ",
            why.clone().unwrap_or_default(),
        ),
    }
    line(
        &mut out,
        &format!("{:.0} % upper bound, per cycle", d.confidence * 100.0),
        format!(
            "{} ({} event{} in {} {}cycles, exact binomial)",
            fmt_prob(d.upper_bound),
            d.events,
            plural(d.events),
            d.effective_cycles,
            if d.assumes_independence {
                "independent "
            } else {
                "effective "
            }
        ),
    );
    match (d.per_hour_upper, d.rate_hz, &d.per_hour_why) {
        (Some(h), Some(rate), _) => line(
            &mut out,
            "per hour of operation",
            format!("at most {} exceedances at {}", fmt_count(h), fmt_rate(rate)),
        ),
        (_, _, why) => line(
            &mut out,
            "per hour of operation",
            format!("not stated: {}", why.clone().unwrap_or_default()),
        ),
    }
    out.push_str(
        "  (an upper confidence bound, not a guarantee: it holds for independent cycles, or \
         clusters, under the conditions of this run)\n",
    );
    out
}

/// The `plan` block of `preempt tail --plan --json`.
#[derive(Debug, Clone, Serialize)]
pub struct PlanReport {
    /// The per-cycle probability to be shown.
    pub probability: f64,
    /// The confidence (0.95).
    pub confidence: f64,
    /// Cycles without an exceedance needed.
    pub cycles: u64,
    /// The rate, Hz, or `null`.
    pub rate_hz: Option<f64>,
    /// Wall time at the rate, seconds, or `null`.
    pub seconds: Option<f64>,
    /// Wall time at the rate, days, or `null`.
    pub days: Option<f64>,
}

/// The plan for `--plan P@RATE`.
pub fn plan(p: f64, rate_hz: Option<f64>) -> Result<PlanReport> {
    let plan = stats::plan(p, CONFIDENCE_95, rate_hz).map_err(|e| usage(format!("--plan: {e}")))?;
    Ok(PlanReport {
        probability: plan.probability,
        confidence: plan.confidence,
        cycles: plan.cycles,
        rate_hz: plan.rate_hz,
        seconds: plan.seconds,
        days: plan.seconds.map(|s| s / 86_400.0),
    })
}

/// The terminal form of a plan.
pub fn render_plan(p: &PlanReport) -> String {
    let mut out = format!(
        "To bound P(exceedance) per cycle at {} with {:.0} % confidence: {} cycles ({:.3e}) \
         without an exceedance",
        fmt_prob(p.probability),
        p.confidence * 100.0,
        p.cycles,
        p.cycles as f64
    );
    match (p.rate_hz, p.seconds) {
        (Some(rate), Some(s)) => {
            out.push_str(&format!(", {} at {}.\n", fmt_duration(s), fmt_rate(rate)))
        }
        _ => out.push_str(".\n"),
    }
    out.push_str(
        "(Exact binomial, zero exceedances, independent cycles; clustered stalls need more: \
         divide by the extremal index θ.)\n",
    );
    out
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn fmt_prob(p: f64) -> String {
    if p >= 0.01 {
        format!("{p:.3}")
    } else {
        format!("{p:.3e}")
    }
}

fn fmt_count(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 0.01 {
        format!("{x:.3}")
    } else {
        format!("{x:.3e}")
    }
}

fn fmt_ns(ns: u64) -> String {
    if ns >= 1_000_000 && ns % 1_000 == 0 {
        format!("{} ms", ns as f64 / 1e6)
    } else if ns >= 1_000 && ns % 1_000 == 0 {
        format!("{} us", ns / 1_000)
    } else {
        format!("{ns} ns")
    }
}

fn fmt_rate(hz: f64) -> String {
    if hz >= 1e6 {
        format!("{} MHz", hz / 1e6)
    } else if hz >= 1e3 {
        format!("{} kHz", hz / 1e3)
    } else {
        format!("{hz} Hz")
    }
}

fn fmt_duration(s: f64) -> String {
    if s >= 2.0 * 86_400.0 {
        format!("{:.1} days", s / 86_400.0)
    } else if s >= 2.0 * 3600.0 {
        format!("{:.1} hours", s / 3600.0)
    } else if s >= 120.0 {
        format!("{:.1} minutes", s / 60.0)
    } else {
        format!("{s:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_values_name_the_bad_part() {
        assert_eq!(parse_plan("1e-9@1kHz").unwrap(), (1e-9, Some(1e3)));
        assert_eq!(parse_plan("1e-6").unwrap(), (1e-6, None));
        assert_eq!(parse_plan("1e-9@2.5MHz").unwrap(), (1e-9, Some(2.5e6)));
        let e = format!("{:#}", parse_plan("often@1kHz").unwrap_err());
        assert!(e.contains("'often' is not a probability"), "{e}");
        let e = format!("{:#}", parse_plan("2@1kHz").unwrap_err());
        assert!(e.contains("must be between 0 and 1"), "{e}");
        let e = format!("{:#}", parse_plan("1e-9@1kHertz").unwrap_err());
        assert!(e.contains("'1kHertz' is not a rate"), "{e}");
        let e = format!("{:#}", parse_plan("1e-9@0Hz").unwrap_err());
        assert!(e.contains("must be a positive rate"), "{e}");
    }

    #[test]
    fn deadlines_need_a_unit() {
        assert_eq!(parse_deadline_ns("100us").unwrap(), 100_000);
        assert_eq!(parse_deadline_ns("1.5ms").unwrap(), 1_500_000);
        assert_eq!(parse_deadline_ns("250ns").unwrap(), 250);
        assert!(format!("{:#}", parse_deadline_ns("100").unwrap_err()).contains("no unit"));
        assert!(parse_deadline_ns("1.5ns").is_err());
        assert!(parse_deadline_ns("soon").is_err());
    }

    #[test]
    fn samples_are_whole_non_negative_ns() {
        assert_eq!(parse_sample("123"), Ok(123));
        assert_eq!(parse_sample("+7"), Ok(7));
        assert!(parse_sample("-5").unwrap_err().contains("negative"));
        assert!(
            parse_sample("18446744073709551616")
                .unwrap_err()
                .contains("overflows")
        );
        assert!(parse_sample("12.5").unwrap_err().contains("whole"));
        assert!(parse_sample("abc").unwrap_err().contains("not a number"));
    }

    #[test]
    fn text_input_keeps_exceedance_times_and_skips_blank_lines() {
        let text = "10\n200\n\n30\n150\n";
        let o = read_text(text.as_bytes(), "t.txt", 100).unwrap();
        assert_eq!((o.cycles, o.exceedances), (4, 2));
        assert_eq!(o.times, Some(vec![1, 3]));
        let e = read_text("1\n2\nx\n".as_bytes(), "t.txt", 100).unwrap_err();
        assert!(
            format!("{e:#}").contains("t.txt line 3: 'x' is not a number"),
            "{e:#}"
        );
        assert!(read_text("\n\n".as_bytes(), "t.txt", 100).is_err());
    }
}
