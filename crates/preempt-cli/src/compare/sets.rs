//! `preempt compare A1 … An -- B1 … Bm`: two sets of replicated runs, a verdict per figure and
//! metric.
//!
//! One run a side cannot tell an effect from noise: the samples within a run are
//! autocorrelated, and identical runs on a VM differ by 10 % (docs/PERFORMANCE.md). So each run
//! is reduced to its per-run statistics (p50, p99, p99.9, max of a figure; its missed periods),
//! and the two sets of these numbers are compared with rank methods
//! ([`preempt_stats::two_sample`]): the Hodges–Lehmann shift of B against A with its exact
//! distribution-free 95 % interval, and the exact two-sided Mann–Whitney p-value. Nothing is
//! bootstrapped (a bootstrap of a maximum is biased: the resampled maximum can never exceed the
//! observed one).
//!
//! The verdict ([`Verdict`]) weighs the interval against a margin of practical significance
//! per metric (`--gate p99.9=+10%,max=+25%`, [`DEFAULT_GATE`]):
//!
//! * `equivalent`: the whole interval lies within ±margin;
//! * `worse` (`better`): the interval lies above (below) 0 and the shift is beyond +margin
//!   (−margin);
//! * `inconclusive` otherwise, or with fewer than [`MIN_RUNS`] runs on a side, with the number of
//!   runs a side that would decide it at the observed spread ([`runs_needed`]).
//!
//! ```
//! use preempt_cli::compare::sets::{Margin, parse_gate};
//! let g = parse_gate(&["p99.9=+10%".into(), "missed=+2".into()]).unwrap();
//! assert_eq!(g[0].1, Margin::Relative(0.10));
//! assert_eq!(g[1].1, Margin::Absolute(2.0));
//! assert!(parse_gate(&["p99.9=-10%".into()]).is_err());
//! ```

use std::io::Write;

use anyhow::Result;
use preempt_stats::two_sample;
use serde::Serialize;

use super::{METRICS, Metric, Run, figure_keys, fmt_ns, load_inputs, open_history, run_of};
use crate::error::usage;
use crate::history::HistoryConfig;

/// The fewest runs a side for a verdict other than `inconclusive`. With 5 and 5 the 95 %
/// interval is the 3rd to the 23rd of the 25 differences; with 4 and 4 it would be their whole
/// range, and with 3 and 3 no ordering is rare enough to reach 95 % at all.
pub const MIN_RUNS: usize = 5;

/// One minus the confidence level of the interval.
pub const ALPHA: f64 = 0.05;

/// Above this many runs a side, `need N more runs` is not given a number: the shift sits so
/// close to the margin that replicating will not settle it.
pub const MAX_RUNS_ESTIMATE: usize = 1_000;

/// A per-run statistic compared between the sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetMetric {
    /// A statistic of the figure's distribution, ns.
    Dist(Metric),
    /// Missed periods of the run (latency and matrix figures), a count.
    Missed,
}

impl SetMetric {
    /// The name, as in `--gate` and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Dist(m) => m.name(),
            Self::Missed => "missed",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        if s.trim().eq_ignore_ascii_case("missed") {
            Some(Self::Missed)
        } else {
            Metric::parse(s).map(Self::Dist)
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Self::Dist(_) => "ns",
            Self::Missed => "periods",
        }
    }

    fn format(self, v: f64) -> String {
        match self {
            Self::Dist(_) => fmt_ns(v.abs()),
            Self::Missed => format!("{}", v.abs()),
        }
    }

    fn signed(self, v: f64) -> String {
        format!("{}{}", sign(v), self.format(v))
    }
}

/// `+`, `−` or `±` (for 0).
fn sign(v: f64) -> &'static str {
    if v > 0.0 {
        "+"
    } else if v < 0.0 {
        "−"
    } else {
        "±"
    }
}

/// A margin of practical significance: how large a shift must be to matter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Margin {
    /// A fraction of the A side's median (`+10%` is 0.10).
    Relative(f64),
    /// In the metric's unit: ns, or periods for `missed`.
    Absolute(f64),
}

impl Margin {
    fn of(self, median_a: f64) -> f64 {
        match self {
            Self::Relative(f) => f * median_a.abs(),
            Self::Absolute(x) => x,
        }
    }
}

/// The default margins. The median moves least and gets 5 %; the tail percentiles 10 %, the
/// run-to-run spread of identical runs on a VM (docs/PERFORMANCE.md, "host modes about 10 %
/// apart"); the maximum, one sample of each run, 25 %; a missed period always matters (0).
pub const DEFAULT_GATE: [(SetMetric, Margin); 9] = [
    (SetMetric::Dist(Metric::Min), Margin::Relative(0.05)),
    (SetMetric::Dist(Metric::Mean), Margin::Relative(0.05)),
    (SetMetric::Dist(Metric::P50), Margin::Relative(0.05)),
    (SetMetric::Dist(Metric::P90), Margin::Relative(0.10)),
    (SetMetric::Dist(Metric::P99), Margin::Relative(0.10)),
    (SetMetric::Dist(Metric::P999), Margin::Relative(0.10)),
    (SetMetric::Dist(Metric::P9999), Margin::Relative(0.25)),
    (SetMetric::Dist(Metric::Max), Margin::Relative(0.25)),
    (SetMetric::Missed, Margin::Absolute(0.0)),
];

/// Parses `--gate` values: `METRIC=+N%` (relative to A's median) or `METRIC=+N` (ns, or
/// periods for `missed`).
pub fn parse_gate(items: &[String]) -> Result<Vec<(SetMetric, Margin)>> {
    let known = METRICS
        .iter()
        .map(|(_, n)| *n)
        .chain(["missed"])
        .collect::<Vec<_>>()
        .join(", ");
    items
        .iter()
        .map(|it| {
            let (m, v) = it.split_once('=').ok_or_else(|| {
                usage(format!(
                    "--gate '{it}' must look like p99.9=+10% or max=+50000 (METRIC=MARGIN)"
                ))
            })?;
            let metric = SetMetric::parse(m).ok_or_else(|| {
                usage(format!("--gate '{it}': unknown metric '{m}'; known: {known}"))
            })?;
            let v = v.trim();
            let v = v.strip_prefix('+').unwrap_or(v);
            let (num, relative) = match v.strip_suffix('%') {
                Some(n) => (n, true),
                None => (v, false),
            };
            let x: f64 = num.trim().parse().map_err(|_| {
                usage(format!(
                    "--gate '{it}': '{v}' is not a margin; give +10% (of A's median) or a number in ns"
                ))
            })?;
            if !(x.is_finite() && x >= 0.0) {
                return Err(usage(format!(
                    "--gate '{it}': the margin must be a number >= 0 (the band is ±margin)"
                )));
            }
            Ok((
                metric,
                if relative {
                    Margin::Relative(x / 100.0)
                } else {
                    Margin::Absolute(x)
                },
            ))
        })
        .collect()
}

/// The margin of `m`: the `--gate` value, else the default.
fn margin_of(m: SetMetric, gate: &[(SetMetric, Margin)]) -> Margin {
    gate.iter()
        .chain(DEFAULT_GATE.iter())
        .find(|(g, _)| *g == m)
        .map_or(Margin::Relative(0.10), |(_, x)| *x)
}

/// The decision for one figure and metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is lower (a latency or count: lower is better) by more than the margin.
    Better,
    /// B is higher by more than the margin.
    Worse,
    /// The difference lies within ±margin.
    Equivalent,
    /// The runs cannot decide.
    Inconclusive,
}

impl Verdict {
    /// The word printed.
    pub fn name(self) -> &'static str {
        match self {
            Self::Better => "better",
            Self::Worse => "worse",
            Self::Equivalent => "equivalent",
            Self::Inconclusive => "inconclusive",
        }
    }
}

/// The comparison of one figure's metric between the sets (one `--json` object).
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    /// Figure, e.g. `latency/all`.
    pub figure: String,
    /// `p50`, `p99`, `p99.9`, `max`, `missed`, …
    pub metric: &'static str,
    /// The decision.
    pub verdict: Verdict,
    /// Hodges–Lehmann shift of B against A, in `unit`.
    pub shift: f64,
    /// The exact distribution-free 95 % interval of the shift (`null` below 4 runs a side).
    pub ci95: Option<[f64; 2]>,
    /// Exact two-sided Mann–Whitney p-value.
    pub p_value: f64,
    /// Runs of A with this figure.
    pub runs_a: usize,
    /// Runs of B with this figure.
    pub runs_b: usize,
    /// `ns`, or `periods` for `missed`.
    pub unit: &'static str,
    /// The shift relative to A's median (`null` when that median is 0).
    pub shift_rel: Option<f64>,
    /// The interval relative to A's median.
    pub ci95_rel: Option<[f64; 2]>,
    /// The interval's actual coverage (at least 0.95: the rank distribution is discrete).
    pub ci_level: Option<f64>,
    /// Median of A's per-run values.
    pub median_a: f64,
    /// Median of B's per-run values.
    pub median_b: f64,
    /// The margin of practical significance, in `unit` (±).
    pub margin: f64,
    /// For `inconclusive`: the runs a side estimated to decide it; `null` otherwise, or when
    /// more than 1000 would be needed.
    pub need_runs: Option<usize>,
    /// `need_runs` minus the runs the smaller side has.
    pub need_more: Option<usize>,
    /// The metric (`metric` is its name).
    #[serde(skip)]
    pub kind: SetMetric,
}

/// The per-run values of `metric` of `figure` on one side.
fn values(side: &[Run], figure: &str, metric: SetMetric) -> Vec<f64> {
    side.iter()
        .filter_map(|r| r.figures.iter().find(|f| f.key == figure))
        .filter_map(|f| match metric {
            SetMetric::Dist(m) => Some(m.of(&f.summary)),
            SetMetric::Missed => f.missed_periods.map(|v| v as f64),
        })
        .collect()
}

/// Runs a side that would make the 95 % interval narrow enough to decide, at the observed
/// spread, or `None` above [`MAX_RUNS_ESTIMATE`].
///
/// The spread is the pooled median absolute deviation of the two sides (×1.4826, a standard
/// deviation for normal data). For n runs a side the Hodges–Lehmann shift has a standard error
/// of about `σ·√(π/3)·√(2/n)` (its efficiency relative to the mean difference is 3/π, Lehmann
/// 1975 §2.5), so the interval's half width is `1.96` of that. To decide, it must shrink below
/// the distance from the shift to the nearer boundary that would settle it: `margin − |shift|`
/// when the shift lies within the margin (→ equivalent), `|shift|` when beyond it (→ the
/// interval leaves 0: worse or better).
pub fn runs_needed(a: &[f64], b: &[f64], shift: f64, margin: f64) -> Option<usize> {
    let have = a.len().min(b.len());
    let floor = MIN_RUNS.max(have + 1);
    let dev = |v: &[f64]| {
        let m = two_sample::median(v);
        v.iter().map(move |x| (x - m).abs()).collect::<Vec<_>>()
    };
    let pooled: Vec<f64> = dev(a).into_iter().chain(dev(b)).collect();
    let sigma = 1.4826 * two_sample::median(&pooled);
    let d = shift.abs();
    let target = if d <= margin { margin - d } else { d };
    if sigma == 0.0 {
        return Some(floor);
    }
    if target <= 0.0 {
        return None;
    }
    let n = 2.0 * (1.96 * sigma / target).powi(2) * std::f64::consts::PI / 3.0;
    if n > MAX_RUNS_ESTIMATE as f64 {
        return None;
    }
    Some((n.ceil() as usize).max(floor))
}

/// Decides one figure's metric from the two sides' per-run values.
pub fn decide(
    figure: &str,
    metric: SetMetric,
    a: &[f64],
    b: &[f64],
    margin: Margin,
) -> Result<Decision> {
    let c = two_sample::compare(a, b, ALPHA).map_err(|e| {
        usage(format!(
            "{figure} {}: {e}; compare fewer runs a side",
            metric.name()
        ))
    })?;
    let median_a = two_sample::median(a);
    let median_b = two_sample::median(b);
    let margin = margin.of(median_a);
    let enough = a.len() >= MIN_RUNS && b.len() >= MIN_RUNS;
    let verdict = match c.ci {
        Some((lo, hi)) if enough && lo >= -margin && hi <= margin => Verdict::Equivalent,
        Some((lo, _)) if enough && lo > 0.0 && c.shift > margin => Verdict::Worse,
        Some((_, hi)) if enough && hi < 0.0 && c.shift < -margin => Verdict::Better,
        _ => Verdict::Inconclusive,
    };
    let need_runs = (verdict == Verdict::Inconclusive)
        .then(|| runs_needed(a, b, c.shift, margin))
        .flatten();
    let rel = |v: f64| (median_a != 0.0).then(|| v / median_a.abs());
    Ok(Decision {
        figure: figure.to_string(),
        metric: metric.name(),
        verdict,
        shift: c.shift,
        ci95: c.ci.map(|(l, h)| [l, h]),
        p_value: c.p_value,
        runs_a: a.len(),
        runs_b: b.len(),
        unit: metric.unit(),
        shift_rel: rel(c.shift),
        ci95_rel: c.ci.and_then(|(l, h)| Some([rel(l)?, rel(h)?])),
        ci_level: c.ci_level,
        median_a,
        median_b,
        margin,
        need_runs,
        need_more: need_runs.map(|n| n.saturating_sub(a.len().min(b.len())).max(1)),
        kind: metric,
    })
}

/// Every figure both sides have (in A's order, filtered by `only`), per metric of `metrics`
/// and `missed` where the figure records it.
pub fn decisions(
    a: &[Run],
    b: &[Run],
    metrics: &[Metric],
    gate: &[(SetMetric, Margin)],
    only: &[String],
) -> Result<Vec<Decision>> {
    let mut out = Vec::new();
    for k in figure_keys(a, only) {
        let all: Vec<SetMetric> = metrics
            .iter()
            .map(|m| SetMetric::Dist(*m))
            .chain([SetMetric::Missed])
            .collect();
        for m in all {
            let (va, vb) = (values(a, k, m), values(b, k, m));
            if va.is_empty() || vb.is_empty() {
                continue;
            }
            out.push(decide(k, m, &va, &vb, margin_of(m, gate))?);
        }
    }
    Ok(out)
}

/// The history runs a query names, oldest first: `run:A-B`, every stored run with an id from
/// A to B; `last:N` or `last:N:KIND`, the N newest runs recorded on this host (of KIND, e.g.
/// `latency`). `None` when `arg` is no query (or an existing path).
pub fn history_query(arg: &str, history: &HistoryConfig) -> Result<Option<Vec<i64>>> {
    if std::path::Path::new(arg).exists() {
        return Ok(None);
    }
    if let Some((lo, hi)) = arg.strip_prefix("run:").and_then(|r| r.split_once('-')) {
        let (Ok(lo), Ok(hi)) = (lo.trim().parse::<i64>(), hi.trim().parse::<i64>()) else {
            return Err(usage(format!(
                "'{arg}': a range of history runs looks like run:11-20"
            )));
        };
        let db = open_history(arg, history)?;
        let mut ids: Vec<i64> = db
            .list(usize::MAX, None)?
            .into_iter()
            .map(|r| r.id)
            .filter(|id| (lo..=hi).contains(id))
            .collect();
        if ids.is_empty() {
            return Err(usage(format!(
                "'{arg}': no stored run has an id from {lo} to {hi} (see `preempt history`)"
            )));
        }
        ids.reverse();
        return Ok(Some(ids));
    }
    let Some(q) = arg.strip_prefix("last:") else {
        return Ok(None);
    };
    let (n, kind) = q.split_once(':').map_or((q, None), |(n, k)| (n, Some(k)));
    let n: usize = n.trim().parse().ok().filter(|&n| n > 0).ok_or_else(|| {
        usage(format!(
            "'{arg}': the newest runs of this host look like last:10 or last:10:latency"
        ))
    })?;
    let host = preempt_io::sys::kernel::uname()
        .map(|u| u.nodename)
        .map_err(|e| anyhow::anyhow!("cannot read this host's name (uname): {e}"))?;
    let db = open_history(arg, history)?;
    let mut ids: Vec<i64> = db
        .list(usize::MAX, kind)?
        .into_iter()
        .filter(|r| r.hostname == host)
        .take(n)
        .map(|r| r.id)
        .collect();
    if ids.len() < n {
        return Err(usage(format!(
            "'{arg}': the history holds {} {}run{} of this host ({host}); give fewer, or record \
             more",
            ids.len(),
            kind.map_or(String::new(), |k| format!("{k} ")),
            if ids.len() == 1 { "" } else { "s" }
        )));
    }
    ids.reverse();
    Ok(Some(ids))
}

/// The runs of one side: a file or a history run id is one run; a directory gives one run per
/// result file in it, a history query ([`history_query`]) one per run it names.
pub fn load_side(args: &[String], history: &HistoryConfig) -> Result<Vec<Run>> {
    let mut out = Vec::new();
    for arg in args {
        if let Some(ids) = history_query(arg, history)? {
            for id in ids {
                let id = format!("run:{id}");
                let inputs = load_inputs(&id, history)?;
                let label = inputs.first().map_or(id.clone(), |i| i.label.clone());
                out.push(run_of(&inputs, label, id));
            }
            continue;
        }
        let inputs = load_inputs(arg, history)?;
        if std::path::Path::new(arg).is_dir() {
            out.extend(
                inputs
                    .iter()
                    .map(|i| run_of(std::slice::from_ref(i), i.label.clone(), i.source.clone())),
            );
        } else {
            let label = inputs.first().map_or(arg.clone(), |i| i.label.clone());
            out.push(run_of(&inputs, label, arg.clone()));
        }
    }
    // Labels must tell runs apart: files of the same name in two directories.
    for i in 0..out.len() {
        if out.iter().filter(|r| r.label == out[i].label).count() > 1 {
            out[i].label = out[i].source.clone();
        }
    }
    Ok(out)
}

/// One line naming a side's runs.
pub fn side_text(name: &str, side: &[Run]) -> String {
    let labels: Vec<&str> = side.iter().map(|r| r.label.as_str()).collect();
    format!(
        "{name}: {} run{}: {}",
        side.len(),
        if side.len() == 1 { "" } else { "s" },
        labels.join(", ")
    )
}

/// The terminal table of the decisions.
pub fn print(out: &mut impl Write, a: &[Run], b: &[Run], ds: &[Decision]) -> Result<()> {
    writeln!(out, "{}", side_text("A", a))?;
    writeln!(out, "{}", side_text("B", b))?;
    let w = ds.iter().map(|d| d.figure.len()).max().unwrap_or(6).max(6);
    writeln!(
        out,
        "{:<w$}  {:<6}  {:>10}  {:>10}  {:>20}  {:>24}  {:>7}  verdict",
        "figure", "metric", "A median", "B median", "shift B−A", "95% CI", "p"
    )?;
    for d in ds {
        let m = d.kind;
        let shift = match d.shift_rel {
            Some(r) => format!("{} ({}{:.1}%)", m.signed(d.shift), sign(r), 100.0 * r.abs()),
            None => m.signed(d.shift),
        };
        let ci = d.ci95.map_or("–".to_string(), |[l, h]| {
            format!("[{}, {}]", m.signed(l), m.signed(h))
        });
        let verdict = match (d.verdict, d.need_more) {
            (Verdict::Inconclusive, Some(n)) => format!(
                "inconclusive: need {n} more run{} a side",
                if n == 1 { "" } else { "s" }
            ),
            (Verdict::Inconclusive, None) => {
                "inconclusive: the shift sits at the margin; more runs will not settle it"
                    .to_string()
            }
            (v, _) => v.name().to_string(),
        };
        writeln!(
            out,
            "{:<w$}  {:<6}  {:>10}  {:>10}  {:>20}  {:>24}  {:>7.4}  {verdict}",
            d.figure,
            d.metric,
            m.format(d.median_a),
            m.format(d.median_b),
            shift,
            ci,
            d.p_value,
        )?;
    }
    let margins: Vec<String> = {
        let mut seen: Vec<&str> = Vec::new();
        ds.iter()
            .filter(|d| {
                let new = !seen.contains(&d.metric);
                seen.push(d.metric);
                new
            })
            .map(|d| format!("{} {}", d.metric, d.margin_text()))
            .collect()
    };
    writeln!(
        out,
        "shift: Hodges–Lehmann (median of all run pairs' B−A), relative to A's median; 95% CI: \
         exact, distribution-free (Lehmann/Moses); p: exact two-sided Mann–Whitney.\n\
         equivalent: the CI lies within ±margin; worse/better: the CI excludes 0 and the shift \
         exceeds the margin; at least {MIN_RUNS} runs a side for a verdict. Margins (--gate): {}",
        margins.join(", ")
    )?;
    Ok(())
}

impl Decision {
    fn margin_text(&self) -> String {
        let m = self.kind;
        let rel = if self.median_a != 0.0 && m != SetMetric::Missed {
            format!(" ({:.0}%)", 100.0 * self.margin / self.median_a.abs())
        } else {
            String::new()
        };
        format!("±{}{rel}", m.format(self.margin))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(base: f64, n: usize) -> Vec<f64> {
        // Evenly spread values base + 0, 7, 14, … (%101): no ties, a known spread.
        (0..n).map(|i| base + ((i * 37) % 101) as f64).collect()
    }

    #[test]
    fn a_clear_rise_is_worse_and_a_fall_better() {
        let a = spread(10_000.0, 6);
        let b = spread(20_000.0, 6);
        let m = Margin::Relative(0.10);
        let d = decide("latency/all", SetMetric::Dist(Metric::P999), &a, &b, m).unwrap();
        assert_eq!(d.verdict, Verdict::Worse);
        assert_eq!(d.shift, 10_000.0);
        let d = decide("latency/all", SetMetric::Dist(Metric::P999), &b, &a, m).unwrap();
        assert_eq!(d.verdict, Verdict::Better);
    }

    #[test]
    fn a_significant_rise_within_the_margin_is_not_worse() {
        // +1 % everywhere, far outside the noise (p = 0.002) but inside a 10 % margin.
        let a = spread(10_000.0, 6);
        let b: Vec<f64> = a.iter().map(|x| x + 150.0).collect();
        let d = decide(
            "f",
            SetMetric::Dist(Metric::P99),
            &a,
            &b,
            Margin::Relative(0.10),
        )
        .unwrap();
        assert!(d.p_value < 0.01);
        assert_eq!(d.verdict, Verdict::Equivalent);
    }

    #[test]
    fn fewer_than_five_runs_are_inconclusive_with_a_count() {
        let a = spread(10_000.0, 2);
        let b = spread(20_000.0, 2);
        let d = decide(
            "f",
            SetMetric::Dist(Metric::Max),
            &a,
            &b,
            Margin::Relative(0.25),
        )
        .unwrap();
        assert_eq!(d.verdict, Verdict::Inconclusive);
        assert_eq!(d.ci95, None);
        assert!(d.need_runs.unwrap() >= MIN_RUNS);
        assert_eq!(d.need_more, Some(d.need_runs.unwrap() - 2));
    }

    #[test]
    fn more_runs_are_needed_the_closer_the_shift_is_to_the_margin() {
        let a = [100.0, 110.0, 90.0, 105.0, 95.0];
        let far = runs_needed(&a, &a, 0.0, 50.0).unwrap();
        let near = runs_needed(&a, &a, 0.0, 3.0).unwrap();
        assert!(near > far, "{near} {far}");
        assert_eq!(runs_needed(&a, &a, 10.0, 10.0), None);
        // No spread: the minimum.
        assert_eq!(runs_needed(&[1.0; 2], &[1.0; 2], 0.0, 0.0), Some(MIN_RUNS));
    }

    #[test]
    fn no_missed_period_on_either_side_is_equivalent() {
        let z = [0.0; 5];
        let d = decide("f", SetMetric::Missed, &z, &z, Margin::Absolute(0.0)).unwrap();
        assert_eq!(d.verdict, Verdict::Equivalent);
        assert_eq!(d.shift_rel, None);
    }

    #[test]
    fn gate_values_are_checked() {
        assert!(parse_gate(&["p99".into()]).is_err());
        assert!(parse_gate(&["p98=+10%".into()]).is_err());
        assert!(parse_gate(&["max=+x%".into()]).is_err());
        assert_eq!(
            parse_gate(&["max=25%".into()]).unwrap(),
            vec![(SetMetric::Dist(Metric::Max), Margin::Relative(0.25))]
        );
        assert_eq!(
            margin_of(SetMetric::Dist(Metric::Max), &[]),
            Margin::Relative(0.25)
        );
    }
}
