//! `preempt check`: the readiness audit of [`crate::check`].

use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::Result;

use super::print_json;
use crate::check;
use crate::cli::CheckArgs;
use crate::error::{EXIT_CHECK_FAILED, EXIT_OK};
use crate::export::Sink;
use crate::measure;
use crate::results::{RunResult, Status};
use crate::session::Session;
use crate::warnings::Warning;

/// `preempt check`: the audit, its table (or JSON), the result file and the history. Ctrl-C
/// or SIGTERM stops the measured item (the others only read files): what was found is
/// written, marked interrupted, and the exit is 130/143 as for every measuring command.
pub(crate) fn run(a: &CheckArgs, argv: Vec<String>) -> Result<u8> {
    let mut session = Session::start(
        "check",
        argv,
        Sink::new(a.export_json.as_deref(), None),
        &[],
        a.history.config(),
    )?;
    let stop = measure::install_stop_flag()?;
    measure::test_pause("check", &stop);
    let report = check::run(&stop);
    let failed = check::has_failures(&report);
    let interrupted = stop.load(Relaxed);
    if interrupted {
        session.warnings.push(Warning::Interrupted);
    }
    let mut file = session.file(RunResult::Check(report.clone()));
    file.interrupted = interrupted;
    let saved = session.save(&file);
    let info = &session.info;
    let mut out = std::io::stdout().lock();
    if a.json {
        drop(out);
        print_json(&file)?;
    } else {
        writeln!(
            out,
            "preempt check: real-time readiness of {} (Linux {}, {}, {})",
            info.hostname, info.kernel_release, info.machine, info.cpu_model
        )?;
        let width = report
            .items
            .iter()
            .map(|i| i.title.len())
            .max()
            .unwrap_or(0);
        for i in &report.items {
            let tag = match i.status {
                Status::Pass => "PASS",
                Status::Info => "INFO",
                Status::Warn => "WARN",
                Status::Fail => "FAIL",
            };
            writeln!(out, "  {tag}  {:width$}  {}", i.title, i.value)?;
            if !i.fix.is_empty() {
                writeln!(out, "        {:width$}  fix: {}", "", i.fix)?;
            }
        }
        let count = |s| report.items.iter().filter(|i| i.status == s).count();
        writeln!(
            out,
            "summary: {} pass, {} info, {} warn, {} fail",
            count(Status::Pass),
            count(Status::Info),
            count(Status::Warn),
            count(Status::Fail)
        )?;
        out.flush()?;
    }
    saved.exit(if interrupted {
        measure::interrupted_exit_code()
    } else if failed {
        EXIT_CHECK_FAILED
    } else {
        EXIT_OK
    })
}
