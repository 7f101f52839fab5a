//! `preempt rtio-bench`: the thread-vs-RTIO benchmark of [`crate::rtio`], written as a
//! preempt result file after every finished cell.

use std::sync::atomic::Ordering::Relaxed;

use anyhow::{Context, Result};
use preempt_rtio_bench::Config;
use preempt_rtio_bench::control::{RunControl, StopNotice};
use preempt_rtio_bench::report::Document;

use crate::cli::RtioBenchArgs;
use crate::error::{EXIT_OK, PrivilegeError, privilege_hint, usage};
use crate::export::Sink;
use crate::results::rtio::RtioBenchResult;
use crate::results::{RunResult, WarningRecord};
use crate::rtio::{bench_error, cell_warnings, groups, settings};
use crate::session::Session;
use crate::warnings::Warning;
use crate::{measure, sysinfo};
use preempt_io::sys::sched::Policy;

/// `preempt rtio-bench`: returns the exit code.
pub(crate) fn run(args: &RtioBenchArgs, argv: Vec<String>) -> Result<u8> {
    // Validate every flag before anything runs (the benchmark repeats this per group).
    let cfg = Config::from_args(&args.bench).map_err(usage)?;
    let session = Session::start(
        "rtio_bench",
        argv.clone(),
        Sink::new(cfg.json.as_deref(), None),
        &[],
        args.history.config(),
    )?;
    let machine: Vec<WarningRecord> = sysinfo::machine_warnings(&session.info, &[cfg.consumer_cpu])
        .iter()
        .map(|w| w.to_record_in("rtio_bench"))
        .collect();
    let mut result = RtioBenchResult {
        settings: settings(&cfg),
        ..RtioBenchResult::default()
    };
    let file = |r: &RtioBenchResult, complete: bool, interrupted: bool| {
        let mut f = session.file(RunResult::RtioBench(Box::new(r.clone())));
        f.complete = complete;
        f.interrupted = interrupted;
        f.warnings = machine.clone();
        f.warnings.extend(cell_warnings(r));
        if interrupted {
            f.warnings.push(Warning::Interrupted.to_record());
        }
        f
    };
    let stop = measure::install_stop_flag()?;
    let notice = StopNotice::spawn(&stop, "preempt").context("cannot start the Ctrl-C notice")?;
    let groups = groups(&cfg);
    let mut interrupted = false;
    for g in &groups {
        if stop.load(Relaxed) {
            interrupted = true;
            break;
        }
        // After every finished cell: the groups so far plus this group's document so far. A
        // failed write is kept and reported after the group (the callback cannot return it).
        let mut write_error: Option<anyhow::Error> = None;
        let mut wrote = false;
        let mut on_cell = |doc: &Document| {
            let mut so_far = result.clone();
            so_far.absorb(doc);
            match session.write_partial(&file(&so_far, false, false)) {
                Ok(()) => wrote = true,
                Err(e) => {
                    write_error.get_or_insert(e);
                }
            }
        };
        let outcome =
            preempt_rtio_bench::run_with(g, argv.clone(), &RunControl::new(&stop, &mut on_cell));
        if let Some(e) = write_error {
            return Err(e);
        }
        match outcome {
            Ok(doc) => {
                result.absorb(&doc);
                if doc.interrupted {
                    interrupted = true;
                    break;
                }
            }
            Err(e) => {
                if !wrote && (!result.cells.is_empty() || !result.sweep.is_empty()) {
                    // Keep the groups that finished before the failure. (When the failing
                    // group finished a cell, the file holds those and the group's finished
                    // cells already, from its last `on_cell`.)
                    session.write_partial(&file(&result, false, false))?;
                }
                return Err(bench_error(e));
            }
        }
    }
    drop(notice);
    let f = file(&result, true, interrupted);
    let saved = session.save(&f);
    // Same lines as `warnings::print`, from the records (some are the cells' own).
    for w in &f.warnings {
        eprintln!("warning: {}\n  hint: {}", w.message, w.hint);
    }
    match &cfg.json {
        Some(p) => eprintln!(
            "preempt: results in {} (kind rtio_bench: `preempt report {}` draws them)",
            p.display(),
            p.display()
        ),
        None => eprintln!(
            "preempt: pass --json FILE to keep these results for `preempt report` and \
             `preempt compare`"
        ),
    }
    if interrupted {
        return saved.exit(measure::interrupted_exit_code());
    }
    // The table's exit 3: the real-time part could not run (the results are written, and
    // their warning says so), e.g. as a user without CAP_SYS_NICE or RLIMIT_RTPRIO.
    let refused = result
        .cells
        .iter()
        .filter(|c| !c.consumer_sched_fifo)
        .count();
    saved.exit(EXIT_OK)?;
    if refused > 0 {
        return Err(anyhow::Error::new(PrivilegeError(format!(
            "the consumer did not get SCHED_FIFO {} in {refused} of {} cells, which measured \
             SCHED_OTHER instead (results written, marked with a warning): {}",
            cfg.priority,
            result.cells.len(),
            privilege_hint(&Policy::Fifo {
                priority: cfg.priority
            })
        ))));
    }
    Ok(EXIT_OK)
}
