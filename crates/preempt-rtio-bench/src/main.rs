//! `rtio-bench`: see the library docs and `--help`.

use std::process::ExitCode;

use clap::Parser;
use preempt_rtio_bench::Args;

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
    match preempt_rtio_bench::run(&cli.args, argv) {
        Ok(_doc) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rtio-bench: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
