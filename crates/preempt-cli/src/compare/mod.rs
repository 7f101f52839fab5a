//! `preempt compare A B …`: the same figures of several runs side by side, with ratios to the
//! first, and a regression gate for CI.
//!
//! Inputs are result files, directories of them (e.g. two `preempt run` report directories),
//! cyclictest output ([`cyclictest`]) or history run ids (`7` or `run:7`, see
//! [`crate::history`]). Each input becomes a set of named *figures* ([`Figure`]): `latency/all`,
//! `latency/cpu1`, `wakeup/eventfd/idle`, `matrix/heavy/SCHED_FIFO 99`, `micro/mutex_lock`, …
//! Figures with the same name in two inputs are compared; a name that occurs twice in one
//! input (two latency runs in one directory) is qualified with its load, e.g.
//! `latency/all (idle)`.
//!
//! `preempt rtio-bench` results have no histograms: their table's numbers are compared as
//! plain *quantities* with ratios ([`rtio`]), in a second table.
//!
//! Regression mode: `--baseline FILE --max-ratio p99=1.2,max=2` compares every input with the
//! baseline and exits with [`EXIT_REGRESSION`] naming each figure and metric whose ratio
//! exceeds its limit (for rtio-bench cells: their latency p50, p99 and max).
//!
//! ```
//! use preempt_cli::compare::{Metric, parse_limits};
//! let limits = parse_limits(&["p99=1.2".into(), "max=2".into()]).unwrap();
//! assert_eq!(limits, vec![(Metric::P99, 1.2), (Metric::Max, 2.0)]);
//! assert!(parse_limits(&["p98=1.2".into()]).is_err());
//! ```

pub mod rtio;
pub mod sets;

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

pub use crate::error::EXIT_REGRESSION;
use crate::error::usage;
use crate::history::{History, HistoryConfig};
use crate::report::html::{self, Cell, cls, num, td};
use crate::report::plots::{self, HistSeries};
use crate::results::cyclictest;
use crate::results::input::{self, Input, Loaded};
use crate::results::micro::CycleSummary;
use crate::results::{Distribution, RunResult};
use crate::stats::summary::Summary;

/// A statistic of a distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Smallest sample.
    Min,
    /// Mean.
    Mean,
    /// Median.
    P50,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// 99.99th percentile.
    P9999,
    /// Largest sample.
    Max,
}

/// Every metric with its name on the command line.
pub(crate) const METRICS: [(Metric, &str); 8] = [
    (Metric::Min, "min"),
    (Metric::Mean, "mean"),
    (Metric::P50, "p50"),
    (Metric::P90, "p90"),
    (Metric::P99, "p99"),
    (Metric::P999, "p99.9"),
    (Metric::P9999, "p99.99"),
    (Metric::Max, "max"),
];

impl Metric {
    /// Parses `p99`, `p99.9`, `median`, …
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim().to_ascii_lowercase();
        let s = match s.as_str() {
            "median" => "p50",
            "p999" => "p99.9",
            "p9999" => "p99.99",
            other => other,
        };
        METRICS.iter().find(|(_, n)| *n == s).map(|(m, _)| *m)
    }

    /// The name.
    pub fn name(self) -> &'static str {
        METRICS
            .iter()
            .find(|(m, _)| *m == self)
            .map_or("?", |(_, n)| n)
    }

    /// The value in a summary, ns.
    pub fn of(self, s: &Summary) -> f64 {
        match self {
            Self::Min => s.min_ns as f64,
            Self::Mean => s.mean_ns,
            Self::P50 => s.p50_ns as f64,
            Self::P90 => s.p90_ns as f64,
            Self::P99 => s.p99_ns as f64,
            Self::P999 => s.p99_9_ns as f64,
            Self::P9999 => s.p99_99_ns as f64,
            Self::Max => s.max_ns as f64,
        }
    }
}

/// Parses `--max-ratio` values (`METRIC=RATIO`).
pub fn parse_limits(items: &[String]) -> Result<Vec<(Metric, f64)>> {
    let known = METRICS
        .iter()
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(", ");
    items
        .iter()
        .map(|it| {
            let (m, r) = it.split_once('=').ok_or_else(|| {
                usage(format!(
                    "--max-ratio '{it}' must look like p99=1.2 (METRIC=RATIO)"
                ))
            })?;
            let metric = Metric::parse(m).ok_or_else(|| {
                usage(format!(
                    "--max-ratio '{it}': unknown metric '{m}'; known: {known}"
                ))
            })?;
            let ratio: f64 = r
                .trim()
                .parse()
                .map_err(|_| usage(format!("--max-ratio '{it}': '{r}' is not a number")))?;
            if !(ratio.is_finite() && ratio > 0.0) {
                return Err(usage(format!(
                    "--max-ratio '{it}': the ratio must be a positive number"
                )));
            }
            Ok((metric, ratio))
        })
        .collect()
}

/// One comparable figure of a run.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Name, e.g. `latency/all`.
    pub key: String,
    /// Load or context used to disambiguate duplicate names.
    pub qualifier: String,
    /// Statistics, ns.
    pub summary: Summary,
    /// The histogram, when stored.
    pub dist: Option<Distribution>,
    /// Cycle statistics (micro only).
    pub cycles: Option<CycleSummary>,
    /// Periods the measuring thread(s) missed (latency and matrix figures only).
    pub missed_periods: Option<u64>,
}

/// A run: a label and its figures.
#[derive(Debug, Clone)]
pub struct Run {
    /// Label in tables and legends.
    pub label: String,
    /// Where it came from.
    pub source: String,
    /// Figures, keys unique.
    pub figures: Vec<Figure>,
    /// Plain numbers (rtio-bench cells and break points, gimbal control quality),
    /// `(key, quantity)` unique.
    pub scalars: Vec<rtio::Scalar>,
    /// Why the run does not cover what it was asked to measure (empty = complete): a file
    /// written while the run was going (`complete: false`) or a run stopped early
    /// (`interrupted`). `compare --baseline` refuses such runs unless `--allow-partial`.
    pub partial: Vec<String>,
}

fn fig(key: String, qualifier: &str, dist: Option<&Distribution>, summary: Summary) -> Figure {
    Figure {
        key,
        qualifier: qualifier.into(),
        summary,
        dist: dist.cloned(),
        cycles: None,
        missed_periods: None,
    }
}

/// The figures of one input.
pub fn figures_of(i: &Input) -> Vec<Figure> {
    let mut out = Vec::new();
    match &i.loaded {
        Loaded::Result(r) => match &r.result {
            RunResult::Check(_) => {}
            RunResult::Latency(l) => {
                let q = if l.settings.stress.is_empty() {
                    "idle".to_string()
                } else {
                    format!("stress {}", l.settings.stress.join(","))
                };
                let merged = crate::report::merged_latency(l);
                let mut all = fig(
                    "latency/all".into(),
                    &q,
                    merged.as_ref(),
                    merged.as_ref().map_or(l.latency_all, |d| d.summary),
                );
                all.missed_periods = Some(l.threads.iter().map(|t| t.missed_periods).sum());
                out.push(all);
                for (n, t) in l.threads.iter().enumerate() {
                    let name = t.cpu.map_or(format!("thread {n}"), |c| format!("cpu{c}"));
                    let mut f = fig(
                        format!("latency/{name}"),
                        &q,
                        Some(&t.latency),
                        t.latency.summary,
                    );
                    f.missed_periods = Some(t.missed_periods);
                    out.push(f);
                    if let Some(r) = &t.response {
                        out.push(fig(format!("response/{name}"), &q, Some(r), r.summary));
                    }
                }
            }
            RunResult::Matrix(m) => {
                for c in &m.cells {
                    if let Some(l) = c.latency {
                        let mut f = fig(format!("matrix/{}/{}", c.stress, c.row), "", None, l);
                        f.missed_periods = Some(c.missed_periods);
                        out.push(f);
                    }
                }
            }
            RunResult::Wakeup(w) => {
                for c in &w.cases {
                    if let Some(d) = &c.latency {
                        out.push(fig(
                            format!("wakeup/{}/{}", c.source, c.load),
                            "",
                            Some(d),
                            d.summary,
                        ));
                    }
                }
            }
            // No distributions: its numbers are quantities (`rtio::scalars_of`).
            RunResult::RtioBench(_) => {}
            // The controller's CPU per sample and the exchange time are distributions; the
            // control errors and counts are quantities, not compared here.
            RunResult::DemoGimbal(d) => {
                let q = d
                    .stress
                    .as_ref()
                    .map_or("idle".to_string(), |s| format!("stress {s}"));
                let summary = time_summary;
                out.push(fig(
                    "demo_gimbal/controller_cpu_per_sample".into(),
                    &q,
                    None,
                    summary(&d.controller_cpu_per_sample_ns),
                ));
                out.push(fig(
                    "demo_gimbal/exchange".into(),
                    &q,
                    None,
                    summary(&d.exchange_ns),
                ));
            }
            // Per flight: the control step's release latency and compute time.
            RunResult::DemoUav(d) => {
                for c in d.cells.iter().filter(|c| c.flown_steps > 0) {
                    let q = format!("{} {}", c.policy, c.stress);
                    for (what, t) in [("latency", &c.latency), ("compute", &c.compute_ns)] {
                        out.push(fig(format!("demo_uav/{what}"), &q, None, time_summary(t)));
                    }
                }
            }
            RunResult::Micro(m) => {
                let q = if m.stress.is_empty() {
                    "idle".to_string()
                } else {
                    format!("stress {}", m.stress.join(","))
                };
                for b in &m.benches {
                    if let Some(d) = &b.ns {
                        let mut f = fig(format!("micro/{}", b.id), &q, Some(d), d.summary);
                        f.cycles = b.cycles;
                        out.push(f);
                    }
                }
            }
        },
        Loaded::Cyclictest(c) => {
            if let Some(d) = cyclictest::distribution(&c.threads) {
                out.push(fig("latency/all".into(), "cyclictest", Some(&d), d.summary));
            }
            for t in &c.threads {
                if let Some(d) = t.distribution() {
                    out.push(fig(
                        format!("latency/{}", t.name()),
                        "cyclictest",
                        Some(&d),
                        d.summary,
                    ));
                }
            }
        }
    }
    out
}

/// Makes keys unique within a run by appending the qualifier to duplicates.
fn disambiguate(mut figs: Vec<Figure>) -> Vec<Figure> {
    let keys: Vec<String> = figs.iter().map(|f| f.key.clone()).collect();
    for f in &mut figs {
        if keys.iter().filter(|k| **k == f.key).count() > 1 && !f.qualifier.is_empty() {
            f.key = format!("{} ({})", f.key, f.qualifier);
        }
    }
    let mut seen = std::collections::HashSet::new();
    figs.retain(|f| seen.insert(f.key.clone()));
    figs
}

/// Why an input is partial, if it is: `complete: false` (the writer never finished) or
/// `interrupted` (Ctrl-C, SIGTERM, `--break-at`).
pub(crate) fn partial_reason(i: &Input) -> Option<String> {
    let Loaded::Result(r) = &i.loaded else {
        return None;
    };
    match r.status() {
        crate::results::RunStatus::Complete => None,
        s @ crate::results::RunStatus::Partial => Some(format!("{} is {s}", i.label)),
        s => Some(format!(
            "{} is {s}: it covers only part of the planned run",
            i.label
        )),
    }
}

/// Resolves one RUN argument: an existing path, else a history run id.
pub fn load_run(arg: &str, history: &HistoryConfig) -> Result<Run> {
    let path = Path::new(arg);
    let inputs = load_inputs(arg, history)?;
    let label = if inputs.len() == 1 {
        inputs[0].label.clone()
    } else {
        path.file_name()
            .map_or(arg.to_string(), |n| n.to_string_lossy().into_owned())
    };
    Ok(run_of(&inputs, label, arg.to_string()))
}

/// The inputs of one RUN argument: a file, every result file of a directory, or a history
/// run id.
pub(crate) fn load_inputs(arg: &str, history: &HistoryConfig) -> Result<Vec<Input>> {
    let path = Path::new(arg);
    let id = arg
        .strip_prefix("run:")
        .or_else(|| arg.strip_prefix('#'))
        .unwrap_or(arg);
    let inputs: Vec<Input> = if path.exists() {
        input::load_many(&[path.to_path_buf()])?
    } else if let Ok(id) = id.parse::<i64>() {
        let db = open_history(arg, history)?;
        let text = db.result_json(id)?;
        let name = format!("history run #{id}");
        vec![Input {
            label: format!("run #{id}"),
            source: name.clone(),
            dir: None,
            loaded: input::parse_text(&text, &name)?,
        }]
    } else {
        return Err(usage(format!(
            "cannot read {arg}: no such file or directory (and not a history run id); give a \
             result file, a directory of them or a run id of `preempt history`"
        )));
    };
    Ok(inputs)
}

/// The history database a run id or query `arg` refers to; a usage error when there is none.
pub(crate) fn open_history(arg: &str, history: &HistoryConfig) -> Result<History> {
    let db_path = history
        .path()
        .ok_or_else(|| usage("no $HOME for the history database: pass --history-db FILE"))?;
    if !db_path.exists() {
        return Err(usage(format!(
            "'{arg}' is neither a file nor a run id: no history database at {}",
            db_path.display()
        )));
    }
    History::open(&db_path)
}

/// One run made of `inputs` (one file, or every file of a directory).
pub(crate) fn run_of(inputs: &[Input], label: String, source: String) -> Run {
    let figures = disambiguate(inputs.iter().flat_map(figures_of).collect());
    let scalars = rtio::disambiguate(
        inputs
            .iter()
            .map(|i| (i.label.clone(), rtio::scalars_of(i)))
            .collect(),
    );
    let partial = inputs.iter().filter_map(partial_reason).collect();
    Run {
        label,
        source,
        figures,
        scalars,
        partial,
    }
}

/// Formats ns for humans: `850 ns`, `12.3 µs`, `4.20 ms`.
pub(crate) fn fmt_ns(v: f64) -> String {
    if v < 10_000.0 {
        format!("{v:.0} ns")
    } else if v < 10_000_000.0 {
        format!("{:.1} µs", v / 1e3)
    } else {
        format!("{:.2} ms", v / 1e6)
    }
}

/// One row of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Figure name.
    pub figure: String,
    /// Metric.
    pub metric: Metric,
    /// Value per run (ns), `None` when the run lacks the figure.
    pub values_ns: Vec<Option<f64>>,
    /// Ratio of each run to the first (`None` when either lacks it or the first is 0).
    pub ratios: Vec<Option<f64>>,
}

/// The figure names of `runs`, each once, in order of appearance; only those starting with
/// one of `only`'s prefixes when it is not empty.
pub(crate) fn figure_keys<'a>(runs: &'a [Run], only: &[String]) -> Vec<&'a str> {
    let mut keys: Vec<&str> = Vec::new();
    for f in runs.iter().flat_map(|r| &r.figures) {
        let k = f.key.as_str();
        if !keys.contains(&k) && (only.is_empty() || only.iter().any(|p| k.starts_with(p.as_str())))
        {
            keys.push(k);
        }
    }
    keys
}

/// Builds the comparison rows: every figure present in at least two runs, in the first
/// run's order.
pub fn rows(runs: &[Run], metrics: &[Metric], only: &[String]) -> Vec<Row> {
    let mut out = Vec::new();
    for k in figure_keys(runs, only) {
        let found: Vec<Option<&Figure>> = runs
            .iter()
            .map(|r| r.figures.iter().find(|f| f.key == k))
            .collect();
        if found.iter().filter(|f| f.is_some()).count() < 2 {
            continue;
        }
        for &m in metrics {
            let values: Vec<Option<f64>> =
                found.iter().map(|f| f.map(|f| m.of(&f.summary))).collect();
            let base = values[0];
            let ratios = values
                .iter()
                .map(|v| match (base, v) {
                    (Some(b), Some(v)) if b > 0.0 => Some(v / b),
                    _ => None,
                })
                .collect();
            out.push(Row {
                figure: k.to_string(),
                metric: m,
                values_ns: values,
                ratios,
            });
        }
    }
    out
}

/// A regression found by the gate.
#[derive(Debug, Clone, Serialize)]
pub struct Regression {
    /// The run that regressed.
    pub run: String,
    /// Figure.
    pub figure: String,
    /// Metric.
    pub metric: Metric,
    /// Baseline value, ns.
    pub baseline_ns: f64,
    /// Run value, ns.
    pub value_ns: f64,
    /// value / baseline.
    pub ratio: f64,
    /// The limit exceeded.
    pub limit: f64,
}

/// Checks `run` against `baseline`; returns the regressions and how many figure/metric pairs
/// were checked.
pub fn gate(baseline: &Run, run: &Run, limits: &[(Metric, f64)]) -> (Vec<Regression>, usize) {
    let mut out = Vec::new();
    let mut checked = 0;
    for b in &baseline.figures {
        let Some(f) = run.figures.iter().find(|f| f.key == b.key) else {
            continue;
        };
        for &(m, limit) in limits {
            let (bv, v) = (m.of(&b.summary), m.of(&f.summary));
            checked += 1;
            let ratio = ratio_of(bv, v);
            if ratio > limit {
                out.push(Regression {
                    run: run.label.clone(),
                    figure: b.key.clone(),
                    metric: m,
                    baseline_ns: bv,
                    value_ns: v,
                    ratio,
                    limit,
                });
            }
        }
    }
    // rtio-bench cells: their latency quantities under the p50/p99/max limits.
    for b in &baseline.scalars {
        let Some(m) = b.quantity.metric() else {
            continue;
        };
        let Some(f) = run
            .scalars
            .iter()
            .find(|s| s.key == b.key && s.quantity == b.quantity)
        else {
            continue;
        };
        for &(lm, limit) in limits {
            if lm != m {
                continue;
            }
            checked += 1;
            let ratio = ratio_of(b.value, f.value);
            if ratio > limit {
                out.push(Regression {
                    run: run.label.clone(),
                    figure: b.key.clone(),
                    metric: m,
                    baseline_ns: b.value,
                    value_ns: f.value,
                    ratio,
                    limit,
                });
            }
        }
    }
    (out, checked)
}

/// `v / base` for the gate: a rise from 0 is infinitely worse, 0 to 0 is no change.
pub(crate) fn ratio_of(base: f64, v: f64) -> f64 {
    if base > 0.0 {
        v / base
    } else if v > 0.0 {
        f64::INFINITY
    } else {
        1.0
    }
}

/// A ratio as `1.23x`, or `–` when there is none.
pub(crate) fn ratio_text(r: Option<f64>) -> String {
    r.map_or("–".into(), |r| format!("{r:.2}x"))
}

/// The terminal table's header: one column per run.
pub(crate) fn print_header(
    out: &mut impl Write,
    runs: &[Run],
    w: usize,
    (second, w2): (&str, usize),
) -> Result<()> {
    write!(out, "{:<w$}  {second:<w2$}", "figure")?;
    for (i, r) in runs.iter().enumerate() {
        write!(out, "  {:>12}", truncate(&r.label, 12))?;
        if i > 0 {
            write!(out, "  {:>7}", "ratio")?;
        }
    }
    writeln!(out)?;
    Ok(())
}

/// The terminal table: one row per figure and statistic, ratios to the first run.
pub(crate) fn print_table(
    out: &mut impl Write,
    runs: &[Run],
    rows: &[Row],
    quantities: &[rtio::ScalarRow],
) -> Result<()> {
    if !rows.is_empty() || quantities.is_empty() {
        let w = rows
            .iter()
            .map(|r| r.figure.len())
            .max()
            .unwrap_or(6)
            .max(6);
        print_header(out, runs, w, ("metric", 6))?;
        for row in rows {
            write!(out, "{:<w$}  {:<6}", row.figure, row.metric.name())?;
            for (i, (v, r)) in row.values_ns.iter().zip(&row.ratios).enumerate() {
                write!(out, "  {:>12}", v.map_or("–".into(), fmt_ns))?;
                if i > 0 {
                    write!(out, "  {:>7}", ratio_text(*r))?;
                }
            }
            writeln!(out)?;
        }
    }
    if !quantities.is_empty() {
        if !rows.is_empty() {
            writeln!(out)?;
        }
        let w = quantities
            .iter()
            .map(|r| r.figure.len())
            .max()
            .unwrap_or(6)
            .max(6);
        print_header(out, runs, w, ("quantity", 14))?;
        for row in quantities {
            write!(out, "{:<w$}  {:<14}", row.figure, row.quantity.name())?;
            for (i, (v, r)) in row.values.iter().zip(&row.ratios).enumerate() {
                write!(
                    out,
                    "  {:>12}",
                    v.map_or("–".into(), |v| row.quantity.format(v))
                )?;
                if i > 0 {
                    write!(out, "  {:>7}", ratio_text(*r))?;
                }
            }
            writeln!(out)?;
        }
    }
    for (i, r) in runs.iter().enumerate() {
        writeln!(out, "[{}] {} = {}", i + 1, r.label, r.source)?;
    }
    Ok(())
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).collect::<String>() + "…"
    }
}

/// The ratio cell of a comparison: red when more than 1.2x worse, green when more than 1.2x
/// better (`higher_is_better` flips the sense).
fn ratio_cell(r: Option<f64>, higher_is_better: bool) -> Cell {
    let r2 = r.map(|r| {
        if higher_is_better && r > 0.0 {
            1.0 / r
        } else {
            r
        }
    });
    let class = match r2 {
        Some(r) if r > 1.2 => "fail",
        Some(r) if r < 1.0 / 1.2 => "pass",
        _ => "num",
    };
    cls(ratio_text(r), class)
}

/// The comparison as a self-contained HTML page.
pub(crate) fn html_page(
    runs: &[Run],
    rows: &[Row],
    quantities: &[rtio::ScalarRow],
    regressions: &[Regression],
) -> Result<String> {
    let mut body = String::new();
    let mut headers = vec!["figure".to_string(), "metric".to_string()];
    for (i, r) in runs.iter().enumerate() {
        headers.push(r.label.clone());
        if i > 0 {
            headers.push(format!("{} / {}", r.label, runs[0].label));
        }
    }
    let cells: Vec<Vec<Cell>> = rows
        .iter()
        .map(|row| {
            let mut c = vec![td(&row.figure), td(row.metric.name())];
            for (i, (v, r)) in row.values_ns.iter().zip(&row.ratios).enumerate() {
                c.push(num(v.map_or("–".into(), fmt_ns)));
                if i > 0 {
                    c.push(ratio_cell(*r, false));
                }
            }
            c
        })
        .collect();
    let _ = write!(
        body,
        "<h2 id=\"table\">Side by side</h2>\n<p>Ratios are relative to {} (red: more than 1.2x worse, green: more than 1.2x better).</p>\n",
        html::esc(&runs[0].label)
    );
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    if !rows.is_empty() || quantities.is_empty() {
        body.push_str(&html::table(&h, &cells));
    }
    if !quantities.is_empty() {
        let q: Vec<Vec<Cell>> = quantities
            .iter()
            .map(|row| {
                let mut c = vec![td(&row.figure), td(row.quantity.name())];
                for (i, (v, r)) in row.values.iter().zip(&row.ratios).enumerate() {
                    c.push(num(v.map_or("–".into(), |v| row.quantity.format(v))));
                    if i > 0 {
                        c.push(ratio_cell(*r, row.quantity.higher_is_better()));
                    }
                }
                c
            })
            .collect();
        let mut qh = h.clone();
        qh[1] = "quantity";
        body.push_str(
            "<h3>rtio-bench</h3>\n<p>Every number of the thread-vs-RTIO table (and each sweep's largest sustained workload, where higher is better), per cell.</p>\n",
        );
        body.push_str(&html::table(&qh, &q));
    }
    if !regressions.is_empty() {
        let r: Vec<Vec<Cell>> = regressions
            .iter()
            .map(|r| {
                vec![
                    td(&r.run),
                    td(&r.figure),
                    td(r.metric.name()),
                    num(fmt_ns(r.value_ns)),
                    num(fmt_ns(r.baseline_ns)),
                    cls(format!("{:.2}x > {}", r.ratio, r.limit), "fail"),
                ]
            })
            .collect();
        body.push_str("<h2 id=\"regressions\">Regressions</h2>\n");
        body.push_str(&html::table(
            &["run", "figure", "metric", "value", "baseline", "ratio"],
            &r,
        ));
    }
    body.push_str("<h2 id=\"histograms\">Overlaid histograms</h2>\n");
    let mut keys: Vec<&str> = rows.iter().map(|r| r.figure.as_str()).collect();
    keys.dedup();
    let mut n = 0;
    for k in keys {
        let series: Vec<HistSeries> = runs
            .iter()
            .filter_map(|r| {
                let f = r.figures.iter().find(|f| f.key == k)?;
                Some(HistSeries {
                    label: r.label.clone(),
                    buckets: f.dist.as_ref()?.histogram.buckets.clone(),
                })
            })
            .collect();
        if series.len() < 2 {
            continue;
        }
        n += 1;
        let svg = plots::histogram(k, &series)?;
        body.push_str(&html::figure(
            n,
            &svg,
            &format!("{k}: every run's histogram on a log count axis."),
            None,
        ));
    }
    let sources = runs
        .iter()
        .map(|r| format!("{} = {}", r.label, r.source))
        .collect::<Vec<_>>()
        .join("; ");
    let nav = vec![
        ("table".to_string(), "Table".to_string()),
        ("histograms".to_string(), "Histograms".to_string()),
    ];
    Ok(html::page(
        "preempt compare",
        &sources,
        &nav,
        &body,
        &format!("Generated by preempt {}.", env!("CARGO_PKG_VERSION")),
    ))
}

/// A demo's percentile summary as the comparison's summary.
fn time_summary(t: &preempt_rig::result::TimeSummary) -> Summary {
    Summary {
        count: t.count,
        min_ns: t.min,
        mean_ns: t.mean as f64,
        p50_ns: t.p50,
        p90_ns: t.p90,
        p99_ns: t.p99,
        p99_9_ns: t.p99_9,
        p99_99_ns: t.p99_99,
        max_ns: t.max,
        max_cycle: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(p99: u64) -> Summary {
        Summary {
            count: 10,
            min_ns: 1,
            mean_ns: 5.0,
            p50_ns: 5,
            p90_ns: 9,
            p99_ns: p99,
            p99_9_ns: p99,
            p99_99_ns: p99,
            max_ns: p99,
            max_cycle: None,
        }
    }

    fn run(label: &str, figs: &[(&str, u64)]) -> Run {
        Run {
            label: label.into(),
            source: label.into(),
            figures: figs
                .iter()
                .map(|(k, v)| Figure {
                    key: (*k).into(),
                    qualifier: String::new(),
                    summary: summary(*v),
                    dist: None,
                    cycles: None,
                    missed_periods: None,
                })
                .collect(),
            scalars: Vec::new(),
            partial: Vec::new(),
        }
    }

    #[test]
    fn gate_names_the_failed_figure() {
        let base = run("base", &[("latency/all", 100), ("micro/free", 50)]);
        let cand = run(
            "new",
            &[("latency/all", 130), ("micro/free", 50), ("other", 1)],
        );
        let (reg, checked) = gate(&base, &cand, &[(Metric::P99, 1.2)]);
        assert_eq!(checked, 2);
        assert_eq!(reg.len(), 1);
        assert_eq!(
            (reg[0].figure.as_str(), reg[0].metric),
            ("latency/all", Metric::P99)
        );
        assert!((reg[0].ratio - 1.3).abs() < 1e-9);
        let (reg, _) = gate(&base, &cand, &[(Metric::P99, 1.3)]);
        assert!(reg.is_empty(), "a ratio equal to the limit passes");
    }

    #[test]
    fn rows_need_two_runs_and_compute_ratios() {
        let a = run("a", &[("x", 100), ("only-a", 1)]);
        let b = run("b", &[("x", 250)]);
        let r = rows(&[a, b], &[Metric::P99], &[]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].ratios, vec![Some(1.0), Some(2.5)]);
    }

    #[test]
    fn duplicate_keys_get_their_qualifier() {
        let f = |q: &str| Figure {
            key: "latency/all".into(),
            qualifier: q.into(),
            summary: summary(1),
            dist: None,
            cycles: None,
            missed_periods: None,
        };
        let d = disambiguate(vec![f("idle"), f("stress cpu")]);
        assert_eq!(
            d.iter().map(|f| f.key.as_str()).collect::<Vec<_>>(),
            vec!["latency/all (idle)", "latency/all (stress cpu)"]
        );
    }

    #[test]
    fn metric_names_round_trip() {
        for (m, n) in METRICS {
            assert_eq!(Metric::parse(n), Some(m));
            assert_eq!(m.name(), n);
        }
        assert_eq!(Metric::parse("median"), Some(Metric::P50));
        assert!(parse_limits(&["p99".into()]).is_err());
        assert!(parse_limits(&["p99=-1".into()]).is_err());
        assert!(parse_limits(&["p99=x".into()]).is_err());
    }

    #[test]
    fn units() {
        assert_eq!(fmt_ns(850.0), "850 ns");
        assert_eq!(fmt_ns(12_345.0), "12.3 µs");
        assert_eq!(fmt_ns(42_000_000.0), "42.00 ms");
    }
}
