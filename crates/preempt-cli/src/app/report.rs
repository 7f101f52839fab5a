//! `preempt report`: result files in, a self-contained HTML report out.

use anyhow::Result;

use crate::cli::ReportArgs;
use crate::error::{EXIT_OK, usage};
use crate::report::{Trace, build, load_trace, write};
use crate::results::input;

/// `preempt report`: returns the exit code.
pub fn run(args: &ReportArgs) -> Result<u8> {
    if args.out.exists() && !args.out.is_dir() {
        return Err(usage(format!(
            "--out {} exists and is not a directory",
            args.out.display()
        )));
    }
    let inputs = input::load_many(&args.inputs)?;
    let traces: Vec<Trace> = args
        .trace
        .iter()
        .map(|p| load_trace(p))
        .collect::<Result<_>>()?;
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| "preempt report".into());
    let report = build(&inputs, &traces, &title)?;
    let w = write(&report, &args.out, !args.no_png)?;
    println!(
        "report: {} ({} figures: {} SVG, {} PNG)",
        w.index.display(),
        report.plots.len(),
        w.svg,
        w.png
    );
    if let Some(n) = w.png_note {
        eprintln!("preempt: {n}");
    }
    Ok(EXIT_OK)
}
