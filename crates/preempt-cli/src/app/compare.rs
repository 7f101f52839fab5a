//! `preempt compare`: runs side by side, a CI gate against a baseline, or two sets of runs
//! (`A… -- B…`) with a verdict per figure and metric ([`crate::compare::sets`]).

use std::io::Write;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::cli::CompareArgs;
use crate::compare::sets::{self, Verdict};
use crate::compare::*;
use crate::error::{EXIT_INCONCLUSIVE, EXIT_OK, usage};

/// `--max-ratio`: the largest ratio to the baseline allowed per metric.
type Limits = Vec<(Metric, f64)>;

/// Said whenever one run is compared with one run.
pub const ONE_RUN_NOTE: &str = "preempt: note: one run per side cannot separate an effect from \
noise (identical runs differ by about 10 % on a VM); for a verdict give at least 5 runs a side: \
preempt compare A1 … A5 -- B1 … B5";

/// `preempt compare`: returns the exit code.
pub fn run(args: &CompareArgs) -> Result<u8> {
    let (metrics, limits) = parse_figures(args)?;
    if !args.against.is_empty() {
        let gate = sets::parse_gate(&args.gate)?;
        let config = args.history.config();
        let a = sets::load_side(&args.runs, &config)?;
        let b = sets::load_side(&args.against, &config)?;
        if a.len() == 1 && b.len() == 1 {
            let runs = label_apart(a.into_iter().chain(b).collect());
            note_partial(args, &runs)?;
            return side_by_side(args, &runs, &metrics, &limits);
        }
        return compare_sets(args, (&a, &b), &metrics, &gate);
    }
    let runs = load_runs(args)?;
    side_by_side(args, &runs, &metrics, &limits)
}

/// Two sets of runs: a verdict per figure and metric; exit 5 if one is worse, else 6 if one is
/// inconclusive.
fn compare_sets(
    args: &CompareArgs,
    (a, b): (&[Run], &[Run]),
    metrics: &[Metric],
    gate: &[(sets::SetMetric, sets::Margin)],
) -> Result<u8> {
    for r in a.iter().chain(b) {
        for why in &r.partial {
            if !args.allow_partial {
                bail!(
                    "{why}; a partial run cannot be one of a set of replicated runs: re-run it \
                     to completion, or pass --allow-partial"
                );
            }
            eprintln!("preempt: note: {why}");
        }
    }
    let ds = sets::decisions(a, b, metrics, gate, &args.only)?;
    if ds.is_empty() {
        bail!(
            "the two sets have no figure in common (A: {}; B: {})",
            figure_names(a),
            figure_names(b)
        );
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &ds)?;
        writeln!(out)?;
    } else {
        sets::print(&mut out, a, b, &ds)?;
    }
    out.flush()?;
    Ok(if ds.iter().any(|d| d.verdict == Verdict::Worse) {
        EXIT_REGRESSION
    } else if ds.iter().any(|d| d.verdict == Verdict::Inconclusive) {
        EXIT_INCONCLUSIVE
    } else {
        EXIT_OK
    })
}

fn figure_names(side: &[Run]) -> String {
    figure_keys(side, &[]).join(", ")
}

/// Runs side by side (ratios to the first) and the `--baseline` gate.
fn side_by_side(
    args: &CompareArgs,
    runs: &[Run],
    metrics: &[Metric],
    limits: &[(Metric, f64)],
) -> Result<u8> {
    let table = rows(runs, metrics, &args.only);
    let scalar_sets: Vec<&[rtio::Scalar]> = runs.iter().map(|r| r.scalars.as_slice()).collect();
    let quantities = rtio::rows(&scalar_sets, &args.only);
    let (regressions, checked) = check_against_baseline(args, runs, limits)?;
    if table.is_empty() && quantities.is_empty() && limits.is_empty() {
        bail!(
            "the runs have no figure in common (figures: {})",
            runs.iter()
                .map(|r| {
                    let mut keys: Vec<&str> = r.figures.iter().map(|f| f.key.as_str()).collect();
                    for s in &r.scalars {
                        if !keys.contains(&s.key.as_str()) {
                            keys.push(&s.key);
                        }
                    }
                    format!("{}: {}", r.label, keys.join(", "))
                })
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        #[derive(Serialize)]
        struct Doc<'a> {
            runs: Vec<&'a str>,
            rows: &'a [Row],
            quantities: &'a [rtio::ScalarRow],
            regressions: &'a [Regression],
            checked: usize,
        }
        serde_json::to_writer_pretty(
            &mut out,
            &Doc {
                runs: runs.iter().map(|r| r.label.as_str()).collect(),
                rows: &table,
                quantities: &quantities,
                regressions: &regressions,
                checked,
            },
        )?;
        writeln!(out)?;
    } else {
        print_table(&mut out, runs, &table, &quantities)?;
    }
    out.flush()?;
    eprintln!("{ONE_RUN_NOTE}");
    if let Some(p) = &args.html {
        let page = html_page(runs, &table, &quantities, &regressions)?;
        crate::export::write_atomically(p, page.as_bytes())?;
        eprintln!("preempt: comparison written to {}", p.display());
    }
    if !limits.is_empty() {
        for r in &regressions {
            eprintln!(
                "preempt: REGRESSION {}: {} {} = {} vs baseline {} (ratio {:.2} > {})",
                r.run,
                r.figure,
                r.metric.name(),
                fmt_ns(r.value_ns),
                fmt_ns(r.baseline_ns),
                r.ratio,
                r.limit
            );
        }
        if regressions.is_empty() {
            eprintln!(
                "preempt: no regression ({checked} figure/metric pairs checked against {})",
                runs[0].source
            );
        } else {
            return Ok(EXIT_REGRESSION);
        }
    }
    Ok(EXIT_OK)
}

/// The `--metrics` and `--max-ratio` flags, checked against the runs given (exit 2 naming
/// the flag).
fn parse_figures(args: &CompareArgs) -> Result<(Vec<Metric>, Limits)> {
    let metrics: Vec<Metric> = args
        .metrics
        .iter()
        .map(|m| Metric::parse(m).ok_or_else(|| usage(format!("--metrics: unknown metric '{m}'; known: min, mean, p50, p90, p99, p99.9, p99.99, max"))))
        .collect::<Result<_>>()?;
    let limits = parse_limits(&args.max_ratio)?;
    if !args.against.is_empty() {
        if args.baseline.is_some() || !limits.is_empty() {
            return Err(usage(
                "--baseline and --max-ratio compare single runs; two sets of runs (A… -- B…) \
                 are gated with --gate METRIC=MARGIN",
            ));
        }
        if args.runs.is_empty() {
            return Err(usage(
                "no runs before `--`: give side A's runs, then `--` and side B's",
            ));
        }
        if args.html.is_some() {
            return Err(usage(
                "--html shows runs side by side; for two sets of runs (A… -- B…) use the table \
                 or --json",
            ));
        }
        return Ok((metrics, limits));
    }
    if !args.gate.is_empty() {
        return Err(usage(
            "--gate applies to two sets of runs: preempt compare A1 … A5 -- B1 … B5",
        ));
    }
    if !limits.is_empty() && args.baseline.is_none() {
        return Err(usage(
            "--max-ratio needs --baseline FILE (the run to compare against)",
        ));
    }
    if args.baseline.is_some() && args.runs.is_empty() {
        return Err(usage(
            "--baseline needs at least one RUN to check against it",
        ));
    }
    if args.baseline.is_none() && args.runs.len() < 2 {
        return Err(usage(
            "compare needs at least two RUNs (or --baseline FILE and one RUN)",
        ));
    }
    Ok((metrics, limits))
}

/// Loads the baseline (first) and the runs; refuses a partial run in a gate unless
/// `--allow-partial`, and labels runs that share a label by their source.
fn load_runs(args: &CompareArgs) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    if let Some(b) = &args.baseline {
        runs.push(load_run(b, &args.history.config()).with_context(|| format!("--baseline {b}"))?);
    }
    for r in &args.runs {
        runs.push(load_run(r, &args.history.config())?);
    }
    note_partial(args, &runs)?;
    Ok(label_apart(runs))
}

/// A partial run can neither pass nor fail a gate: it measured less than it says. Refused in
/// a gate unless `--allow-partial`, else noted.
fn note_partial(args: &CompareArgs, runs: &[Run]) -> Result<()> {
    for r in runs {
        for why in &r.partial {
            if args.baseline.is_some() && !args.allow_partial {
                bail!(
                    "{why}; a partial run cannot be a baseline or be checked against one: \
                     re-run it to completion, or pass --allow-partial"
                );
            }
            eprintln!("preempt: note: {why}");
        }
    }
    Ok(())
}

/// Labels must tell runs apart: duplicates are replaced by their source.
fn label_apart(mut runs: Vec<Run>) -> Vec<Run> {
    for i in 0..runs.len() {
        if runs.iter().filter(|r| r.label == runs[i].label).count() > 1 {
            runs[i].label = runs[i].source.clone();
        }
    }
    runs
}

/// With `--baseline` and `--max-ratio`: every run against the baseline; returns the
/// regressions and how many figure/metric pairs were checked.
fn check_against_baseline(
    args: &CompareArgs,
    runs: &[Run],
    limits: &[(Metric, f64)],
) -> Result<(Vec<Regression>, usize)> {
    let mut regressions = Vec::new();
    let mut checked = 0;
    if args.baseline.is_some() && !limits.is_empty() {
        for r in &runs[1..] {
            let (reg, n) = gate(&runs[0], r, limits);
            if n == 0 {
                bail!(
                    "{} and the baseline {} have no figure in common; nothing to check",
                    r.source,
                    runs[0].source
                );
            }
            checked += n;
            regressions.extend(reg);
        }
    }
    Ok((regressions, checked))
}
