//! `preempt compare`: runs side by side, or a CI gate against a baseline.

use std::io::Write;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::cli::CompareArgs;
use crate::compare::*;
use crate::error::{EXIT_OK, usage};

/// `--max-ratio`: the largest ratio to the baseline allowed per metric.
type Limits = Vec<(Metric, f64)>;

/// `preempt compare`: returns the exit code.
pub fn run(args: &CompareArgs) -> Result<u8> {
    let (metrics, limits) = parse_figures(args)?;
    let runs = load_runs(args)?;
    let table = rows(&runs, &metrics, &args.only);
    let scalar_sets: Vec<&[rtio::Scalar]> = runs.iter().map(|r| r.scalars.as_slice()).collect();
    let quantities = rtio::rows(&scalar_sets, &args.only);
    let (regressions, checked) = check_against_baseline(args, &runs, &limits)?;
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
        print_table(&mut out, &runs, &table, &quantities)?;
    }
    if let Some(p) = &args.html {
        let page = html_page(&runs, &table, &quantities, &regressions)?;
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
    out.flush()?;
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
    // A partial run can neither pass nor fail a gate: it measured less than it says.
    for r in &runs {
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
    // Labels must tell runs apart.
    for i in 0..runs.len() {
        if runs.iter().filter(|r| r.label == runs[i].label).count() > 1 {
            runs[i].label = runs[i].source.clone();
        }
    }
    Ok(runs)
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
