//! `preempt matrix`: the UAV paper's experiment (seed 001) as one command.
//!
//! A periodic loop (default 4 ms = 250 Hz) with a calibrated control step runs under the
//! paper's eight scheduling rows (SCHED_OTHER nice 0 and −19, SCHED_RR 50 and 99,
//! SCHED_FIFO 50 and 99, SCHED_DEADLINE with 400 µs and 800 µs runtime), first on an idle
//! machine, then under heavy stress (all built-in stressors). Each cell is a full
//! `preempt latency` result written to its own file; the summary holds one row per cell with
//! wake-up latency and the control step's own compute time, which the paper saw grow under
//! memory contention.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use anyhow::Result;

use super::latency::{self, EnvFacts};
use crate::config::StressTool;
use crate::config::{LatencyConfig, PolicyConfig, RtConfig, StressConfig, matrix_rows};
use crate::results::{MatrixCell, MatrixResult};
use crate::stress::StressGuard;
use crate::warnings::Warning;

/// A validated matrix run.
#[derive(Debug, Clone)]
pub(crate) struct MatrixConfig {
    /// Period.
    pub period_ns: u64,
    /// Measuring time per cell.
    pub duration_ns: u64,
    /// Compute step.
    pub work_ns: u64,
    /// CPUs (one thread each).
    pub cpus: Vec<usize>,
    /// Heavy-stress generator.
    pub stress_tool: StressTool,
    /// Memory/power.
    pub rt: RtConfig,
}

/// A finished cell with its full result, for the caller to write.
#[derive(Debug)]
pub(crate) struct CellRun {
    /// Summary row.
    pub cell: MatrixCell,
    /// Full latency outcome, when the cell ran.
    pub outcome: Option<latency::Outcome>,
}

/// A file-name slug for a row, e.g. `sched_fifo_99`.
pub fn slug(row: &str) -> String {
    row.to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect::<String>()
        .replace("__", "_")
}

/// Runs every cell; `on_cell` receives each cell as it completes (to write its file and the
/// partial summary) and `on_progress(done_cells, total_cells)` is called as cells start.
pub(crate) fn run(
    cfg: &MatrixConfig,
    env: EnvFacts,
    stop: &AtomicBool,
    on_cell: &mut dyn FnMut(&mut CellRun) -> Result<()>,
    on_progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<(MatrixResult, Vec<Warning>)> {
    let rows = matrix_rows(cfg.period_ns);
    // Calibrate once on the idle machine: the same amount of work in every cell, so its
    // duration under stress shows interference.
    let work_iterations = super::work::calibrate(cfg.work_ns);
    let levels = [
        ("none", StressConfig::default()),
        ("heavy", StressConfig::heavy(cfg.stress_tool)),
    ];
    let total = rows.len() * levels.len();
    let mut cells = Vec::with_capacity(total);
    let mut warnings = Vec::new();
    'levels: for (level, stress_cfg) in &levels {
        let _stress = StressGuard::start(stress_cfg)?;
        for (row, policy) in &rows {
            if stop.load(Relaxed) {
                break 'levels;
            }
            on_progress(cells.len(), total, &format!("{row}, stress {level}"));
            let mut run = run_cell(
                cfg,
                env,
                row,
                policy,
                level,
                stress_cfg,
                work_iterations,
                stop,
            );
            for w in run.outcome.iter().flat_map(|o| &o.warnings) {
                if !matches!(
                    w,
                    Warning::ShortRun { .. }
                        | Warning::NotRealTimePolicy { .. }
                        | Warning::MissedPeriods { .. }
                ) && !warnings.contains(w)
                {
                    warnings.push(w.clone());
                }
            }
            on_cell(&mut run)?;
            cells.push(run.cell);
        }
    }
    let missed: u64 = cells.iter().map(|c| c.missed_periods).sum();
    if missed > 0 {
        warnings.push(Warning::MissedPeriods { count: missed });
    }
    Ok((
        MatrixResult {
            period_ns: cfg.period_ns,
            duration_per_cell_ns: cfg.duration_ns,
            work_ns: cfg.work_ns,
            cpus: cfg.cpus.clone(),
            cells,
        },
        warnings,
    ))
}

#[allow(
    clippy::too_many_arguments,
    reason = "one cell's coordinates and shared run inputs"
)]
fn run_cell(
    cfg: &MatrixConfig,
    env: EnvFacts,
    row: &str,
    policy: &PolicyConfig,
    level: &str,
    stress_cfg: &StressConfig,
    work_iterations: u64,
    stop: &AtomicBool,
) -> CellRun {
    let mut lc = LatencyConfig::for_matrix_cell(
        policy.clone(),
        cfg.period_ns,
        cfg.duration_ns,
        cfg.cpus.clone(),
        cfg.work_ns,
        cfg.rt,
    );
    lc.stress = stress_cfg.clone();
    let empty = MatrixCell {
        row: row.into(),
        policy: policy.record.clone(),
        stress: level.into(),
        result_file: None,
        latency: None,
        compute: None,
        response: None,
        missed_periods: 0,
        deadline_misses: 0,
        verdict: "not run".into(),
        error: None,
    };
    match latency::run(&lc, work_iterations, env, stop, &mut |_, _| {}) {
        // A cell cut short by Ctrl-C/SIGTERM has too few samples to compare with the others:
        // it is "not measured", never a row of zeros.
        Ok(outcome) if outcome.interrupted => CellRun {
            cell: MatrixCell {
                verdict: "not measured".into(),
                error: Some("interrupted before the cell finished".into()),
                ..empty
            },
            outcome: None,
        },
        Ok(outcome) => {
            let r = &outcome.result;
            let merge =
                |f: fn(&crate::results::ThreadResult) -> Option<&crate::results::Distribution>| {
                    let mut all = crate::stats::histogram::Snapshot::empty();
                    let mut any = false;
                    for d in r.threads.iter().filter_map(f) {
                        if let Some(s) = d.to_snapshot() {
                            all.merge(&s);
                            any = true;
                        }
                    }
                    any.then(|| crate::stats::summary::Summary::from_snapshot(&all))
                };
            let cell = MatrixCell {
                latency: Some(r.latency_all),
                compute: merge(|t| t.compute.as_ref()),
                response: merge(|t| t.response.as_ref()),
                missed_periods: r.threads.iter().map(|t| t.missed_periods).sum(),
                deadline_misses: r.threads.iter().map(|t| t.deadline_misses).sum(),
                verdict: r.ledger.verdict.clone(),
                ..empty
            };
            CellRun {
                cell,
                outcome: Some(outcome),
            }
        }
        Err(e) => CellRun {
            cell: MatrixCell {
                error: Some(format!("{e:#}")),
                ..empty
            },
            outcome: None,
        },
    }
}

/// The path of a cell's result file inside the output directory.
pub(crate) fn cell_file(dir: &Path, level: &str, row: &str) -> std::path::PathBuf {
    dir.join(format!("{level}-{}.json", slug(row)))
}

/// Creates the output directory.
pub(crate) fn prepare_dir(dir: &Path) -> Result<()> {
    crate::export::create_output_dir(dir).map_err(|e| {
        crate::error::usage(format!(
            "--out-dir {}: {e:#}; choose a directory you can write",
            dir.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn slugs_are_file_names() {
        assert_eq!(super::slug("SCHED_DEADLINE 400us"), "sched_deadline_400us");
        assert_eq!(super::slug("SCHED_OTHER nice -19"), "sched_other_nice_19");
    }
}
