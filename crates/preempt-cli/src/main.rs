//! `preempt`: is this machine real-time ready, and how late will my loop be?
//!
//! A thin shell over the `preempt_cli` library: parse the command line, run, and map the
//! outcome to an exit code (documented in `preempt --help` and `preempt_cli::error`). Errors
//! print as one line, `preempt: {:#}`; a closed stdout (broken pipe) exits 0.

use std::process::ExitCode;

use clap::Parser;
use preempt_cli::cli::Cli;
use preempt_cli::error::{EXIT_USAGE, exit_code_of, is_broken_pipe};

// The demos' apps (`main = false`) run here: this allocator reports their real-time jobs'
// allocations (preempt::rt_safety; one thread-local read per allocation otherwise).
#[global_allocator]
static ALLOCATOR: preempt::rt_safety::CheckedAlloc = preempt::rt_safety::CheckedAlloc::SYSTEM;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                // Help text to stdout; a closed pipe here is not an error.
                let _ = e.print();
                return ExitCode::from(
                    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                        EXIT_USAGE
                    } else {
                        0
                    },
                );
            }
            // One line: clap's first line without its "error: " prefix, plus where to look.
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("preempt: {first} (see preempt --help)");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match preempt_cli::app::run(cli, argv) {
        Ok(code) => ExitCode::from(code),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("preempt: {e:#}");
            ExitCode::from(exit_code_of(&e))
        }
    }
}
