//! `preempt matrix`: the UAV-loop experiment of [`crate::measure::matrix`].

use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::{Context, Result};

use super::{online, print_json};
use crate::cli::MatrixArgs;
use crate::config::{self, OutputConfig, RtConfig, parse_cpus};
use crate::error::{EXIT_OK, PrivilegeError, usage};
use crate::export::{Exporter, Sink, json::JsonExporter, write_atomically};
use crate::measure::latency::EnvFacts;
use crate::measure::{self, RtEnvironment, matrix};
use crate::progress::Progress;
use crate::results::RunResult;
use crate::session::Session;
use crate::stats::summary::us;
use crate::warnings::Warning;

/// `preempt matrix`: the 8 policies x 2 loads experiment, one file per cell and a summary.
///
/// The steps: `matrix_config` validates the flags, the session starts, `matrix::run`
/// measures (each cell's file written as it ends), the summaries are written, and
/// `check_cells_ran` turns cells that could not run into the exit code.
pub(crate) fn run(a: &MatrixArgs, argv: Vec<String>) -> Result<u8> {
    let cfg = matrix_config(a)?;
    let cpus = cfg.cpus.clone();
    let output = OutputConfig::from(&a.output);
    matrix::prepare_dir(&a.out_dir)?;
    let summary_json = a.out_dir.join("summary.json");
    let summary_csv = a.out_dir.join("summary.csv");
    let mut session = Session::start(
        "matrix",
        argv,
        Sink::new(output.export_json.as_deref(), output.export_csv.as_deref()),
        &[&summary_json, &summary_csv],
        a.history.config(),
    )?;
    session.lock_dir(&a.out_dir, "--out-dir")?;
    let stop = measure::install_stop_flag()?;
    let env = RtEnvironment::prepare(cfg.rt);
    session.warnings.extend(env.warnings.iter().cloned());
    session.add_machine_warnings(&cpus);
    let facts = EnvFacts {
        mlock: env.memory_locked(),
        dma_latency_us: env.dma_latency_us(),
    };
    eprintln!(
        "preempt: matrix of 8 policies x 2 stress levels, period {} us, {:.1} s per cell on CPU {:?}",
        a.period,
        cfg.duration_ns as f64 / 1e9,
        cpus
    );
    let mut progress = Progress::new("matrix", output.progress);
    let dir = a.out_dir.clone();
    let (result, run_warns) = matrix::run(
        &cfg,
        facts,
        &stop,
        &mut |cell| {
            if let Some(o) = &cell.outcome {
                let path = matrix::cell_file(&dir, &cell.cell.stress, &cell.cell.row);
                let mut f = session.file(RunResult::Latency(Box::new(o.result.clone())));
                f.warnings
                    .extend(o.warnings.iter().map(|w| w.to_record_in("matrix")));
                f.interrupted = o.interrupted;
                crate::export::write_atomically(&path, &JsonExporter.serialize(&f)?)?;
                cell.cell.result_file = path.file_name().map(|n| n.to_string_lossy().into_owned());
            }
            Ok(())
        },
        &mut |done, total, what| progress.update(done as f64 / total as f64, what),
    )?;
    progress.finish();
    session.warnings.extend(run_warns);
    if stop.load(Relaxed) {
        session.warnings.push(Warning::Interrupted);
    }
    let mut file = session.file(RunResult::Matrix(Box::new(result.clone())));
    file.interrupted = stop.load(Relaxed);
    let summaries =
        write_atomically(&summary_json, &JsonExporter.serialize(&file)?).and_then(|()| {
            write_atomically(
                &summary_csv,
                &crate::export::csv::CsvExporter.serialize(&file)?,
            )
        });
    let saved = session.save(&file);
    session.print_warnings();
    if output.json_stdout {
        print_json(&file)?;
    } else {
        print_matrix(&result, &dir)?;
    }
    if let Err(e) = summaries {
        eprintln!("preempt: {e:#}");
        if saved.error.is_none() {
            return Err(e);
        }
    }
    if stop.load(Relaxed) {
        return saved.exit(measure::interrupted_exit_code());
    }
    check_cells_ran(&result)?;
    saved.exit(EXIT_OK)
}

/// Validates the flags into the matrix's configuration (exit 2 naming the flag).
fn matrix_config(a: &MatrixArgs) -> Result<matrix::MatrixConfig> {
    let online = online()?;
    if a.period < 100 {
        return Err(usage("--period must be at least 100 us"));
    }
    let period_ns = config::us_to_ns(a.period, "--period")?;
    let duration_ns = match &a.duration {
        Some(d) => config::parse_duration_ns(d)?,
        None => config::DEFAULT_DURATION_NS,
    };
    if duration_ns < period_ns {
        return Err(usage(format!(
            "--duration must cover at least one --period ({} us)",
            a.period
        )));
    }
    let work_ns = config::us_to_ns(a.work_us, "--work-us")?;
    if work_ns >= 400_000.min(period_ns) {
        return Err(usage(format!(
            "--work-us {} must stay below the smallest SCHED_DEADLINE runtime of the matrix (400 us) and the period",
            a.work_us
        )));
    }
    let cpus = match &a.cpus {
        Some(l) => parse_cpus(l, &online)?,
        None => vec![*online.last().context("no online CPU")?],
    };
    Ok(matrix::MatrixConfig {
        period_ns,
        duration_ns,
        work_ns,
        cpus,
        stress_tool: a.stress_tool,
        rt: RtConfig::from(&a.rt),
    })
}

/// Fails when no cell could run, with a privilege error (exit 3) when cells were denied for
/// lack of privilege.
fn check_cells_ran(result: &crate::results::MatrixResult) -> Result<()> {
    if result.cells.iter().all(|c| c.error.is_some()) {
        eprintln!(
            "preempt: no cell of the matrix could run: {}",
            result
                .cells
                .first()
                .and_then(|c| c.error.clone())
                .unwrap_or_default()
        );
    }
    let denied: Vec<&str> = result
        .cells
        .iter()
        .filter(|c| {
            c.error
                .as_deref()
                .is_some_and(|e| e.contains("permission denied"))
        })
        .map(|c| c.row.as_str())
        .collect();
    if !denied.is_empty() {
        let mut rows = denied.clone();
        rows.dedup();
        return Err(anyhow::Error::new(PrivilegeError(format!(
            "{} of {} cells could not run for lack of privilege ({}); each cell's error names \
             the capability or limit it needs (SCHED_FIFO/RR: RLIMIT_RTPRIO or CAP_SYS_NICE; \
             SCHED_DEADLINE and nice -19: CAP_SYS_NICE)",
            denied.len(),
            result.cells.len(),
            rows.join(", ")
        ))));
    }
    if result.cells.iter().all(|c| c.error.is_some()) {
        anyhow::bail!("no cell of the matrix could run");
    }
    Ok(())
}

fn print_matrix(r: &crate::results::MatrixResult, dir: &Path) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<22} {:<6} {:>8} {:>8} {:>8} {:>9} {:>7} {:>10} {:>10}  verdict",
        "policy",
        "stress",
        "p50_us",
        "p99_us",
        "p99.9_us",
        "max_us",
        "missed",
        "work_p50us",
        "work_maxus"
    )?;
    for c in &r.cells {
        match (&c.latency, &c.error) {
            (Some(l), _) => writeln!(
                out,
                "{:<22} {:<6} {:>8} {:>8} {:>8} {:>9} {:>7} {:>10} {:>10}  {}",
                c.row,
                c.stress,
                us(l.p50_ns),
                us(l.p99_ns),
                us(l.p99_9_ns),
                us(l.max_ns),
                c.missed_periods,
                c.compute
                    .map(|s| us(s.p50_ns))
                    .unwrap_or_else(|| "-".into()),
                c.compute
                    .map(|s| us(s.max_ns))
                    .unwrap_or_else(|| "-".into()),
                if c.verdict == "clean" {
                    "clean"
                } else {
                    "contaminated"
                }
            )?,
            (None, Some(e)) => writeln!(out, "{:<22} {:<6} not measured: {e}", c.row, c.stress)?,
            (None, None) => writeln!(out, "{:<22} {:<6} not measured", c.row, c.stress)?,
        }
    }
    writeln!(
        out,
        "results: {}/summary.json, summary.csv and one file per cell",
        dir.display()
    )?;
    out.flush()?;
    Ok(())
}
