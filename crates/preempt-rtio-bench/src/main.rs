//! `rtio-bench`: see the library docs and `--help`.
//!
//! Ctrl-C (or SIGTERM) finishes the running cell, then stops: the table of the cells that
//! finished is printed, `--json` holds them with `interrupted: true` (it is rewritten after
//! every cell with `complete: false`), and the exit code is 130 (143 after SIGTERM). A second
//! Ctrl-C quits at once. Exit codes: 0 done, 1 a cell failed, 2 a bad flag, 130 interrupted
//! (Ctrl-C), 143 stopped by SIGTERM.

use std::process::ExitCode;

use clap::Parser;
use preempt_io::sys::signal;
use preempt_rtio_bench::{Args, Config, control};

#[derive(Parser)]
#[command(name = "rtio-bench", about = preempt_rtio_bench::cli::ABOUT)]
struct Cli {
    #[command(flatten)]
    args: Args,
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let cli = match Cli::try_parse_from(&argv) {
        Ok(c) => c,
        Err(e) => {
            // --help / --version print and exit 0; a bad flag exits 2 (clap's convention).
            let code = u8::try_from(e.exit_code()).unwrap_or(2);
            if let Err(pe) = e.print() {
                eprintln!("rtio-bench: {pe}");
            }
            return ExitCode::from(code);
        }
    };
    // Every flag is validated before anything runs; the message names the flag.
    let cfg = match Config::from_args(&cli.args) {
        Ok(c) => c,
        Err(m) => {
            eprintln!("rtio-bench: {m}");
            return ExitCode::from(2);
        }
    };
    let stop = match signal::install_stop_flag() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rtio-bench: cannot install the Ctrl-C handler: {e}");
            return ExitCode::FAILURE;
        }
    };
    let notice = match control::StopNotice::spawn(&stop, "rtio-bench") {
        Ok(n) => n,
        Err(e) => {
            eprintln!("rtio-bench: cannot start the Ctrl-C notice thread: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The --json file is written by the library; nothing else to do per cell here.
    let mut on_cell = |_: &preempt_rtio_bench::report::Document| {};
    let outcome =
        preempt_rtio_bench::run_with(&cfg, argv, &control::RunControl::new(&stop, &mut on_cell));
    drop(notice);
    match outcome {
        Ok(doc) if doc.interrupted => ExitCode::from(signal::stopped_exit_code()),
        Ok(_doc) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rtio-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
