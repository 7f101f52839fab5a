//! `bench_table`: the two text-processing steps of `scripts/bench_framework.sh`.
//!
//! ```text
//! bench_table normalize --figure NAME [--pinned] < program-output   # -> figure= lines
//! bench_table summarize FILE                                        # -> Markdown table
//! ```
//!
//! `normalize` passes `figure=` lines through (adding `_pinned` for a pinned run) or converts
//! the human output of preempt's thesis examples; it exits 1 with a message when the output
//! holds no figure. `summarize` prints medians and the issue-3 ratios (see
//! `preempt_peers::table`).

use std::io::Read as _;

const USAGE: &str = "usage: bench_table normalize --figure NAME [--pinned] < OUTPUT\n       \
                     bench_table summarize FILE";

fn usage_error(msg: &str) -> ! {
    eprintln!("bench_table: {msg}\n{USAGE}");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("normalize") => {
            let mut figure = None;
            let mut pinned = false;
            let mut rest = args[1..].iter();
            while let Some(arg) = rest.next() {
                match arg.as_str() {
                    "--figure" => figure = rest.next().cloned(),
                    "--pinned" => pinned = true,
                    other => usage_error(&format!("unknown argument `{other}`")),
                }
            }
            let figure = figure.unwrap_or_else(|| usage_error("normalize needs `--figure NAME`"));
            let mut output = String::new();
            if let Err(err) = std::io::stdin().read_to_string(&mut output) {
                eprintln!("bench_table: reading standard input: {err}");
                std::process::exit(1);
            }
            match preempt_peers::table::normalize(&output, &figure, pinned) {
                Ok(lines) => lines.iter().for_each(|l| println!("{l}")),
                Err(err) => {
                    eprintln!("bench_table: no figure for `{figure}`: {err}");
                    std::process::exit(1);
                }
            }
        }
        Some("summarize") => {
            let [_, path] = args.as_slice() else {
                usage_error("summarize takes exactly one FILE");
            };
            match std::fs::read_to_string(path) {
                Ok(input) => print!("{}", preempt_peers::table::summarize(&input)),
                Err(err) => {
                    eprintln!("bench_table: cannot read `{path}`: {err}");
                    std::process::exit(1);
                }
            }
        }
        Some("--help" | "-h") => println!("{USAGE}"),
        Some(other) => usage_error(&format!("unknown command `{other}`")),
        None => usage_error("missing command"),
    }
}
