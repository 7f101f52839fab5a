//! Command-line parsing shared by the benchmark binaries: one size flag and `--help`.
//!
//! Each binary takes exactly one size flag (`--iterations N` or `--samples N`, also written
//! `--iterations=N`). Anything else is an error that names the flag, printed by [`parse_or_exit`]
//! with exit code 2, so a typo in `scripts/bench_framework.sh` fails loudly instead of silently
//! running the default size.

use std::fmt;

/// What went wrong while reading the command line.
#[derive(Debug, PartialEq, Eq)]
pub enum CliError {
    /// `--help` or `-h` was given; not an error, the caller prints usage and exits 0.
    Help,
    /// An argument that this binary does not know.
    UnknownArgument(String),
    /// The size flag was given without a value.
    MissingValue(&'static str),
    /// The size flag's value is not a positive integer.
    BadValue {
        /// The flag, e.g. `--iterations`.
        flag: &'static str,
        /// What the user wrote.
        value: String,
    },
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Help => write!(f, "help requested"),
            CliError::UnknownArgument(arg) => write!(f, "unknown argument `{arg}`"),
            CliError::MissingValue(flag) => {
                write!(f, "`{flag}` needs a value, e.g. `{flag} 100000`")
            }
            CliError::BadValue { flag, value } => write!(
                f,
                "`{flag} {value}`: expected a positive integer (underscores allowed, e.g. 1_000_000)"
            ),
        }
    }
}

impl std::error::Error for CliError {}

/// Reads the single size flag `flag` (e.g. `"--iterations"`) from `args` (without the program
/// name); returns `default` when the flag is absent.
///
/// ```
/// use preempt_peers::cli::{parse_size, CliError};
/// let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
/// assert_eq!(parse_size(args(&[]), "--iterations", 7), Ok(7));
/// assert_eq!(parse_size(args(&["--iterations", "1_000"]), "--iterations", 7), Ok(1000));
/// assert_eq!(parse_size(args(&["--iterations=5"]), "--iterations", 7), Ok(5));
/// assert!(matches!(parse_size(args(&["--iterations", "0"]), "--iterations", 7), Err(CliError::BadValue { .. })));
/// assert!(matches!(parse_size(args(&["--samples", "3"]), "--iterations", 7), Err(CliError::UnknownArgument(_))));
/// ```
pub fn parse_size(
    args: impl IntoIterator<Item = String>,
    flag: &'static str,
    default: u64,
) -> Result<u64, CliError> {
    let mut size = default;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let value = if arg == "--help" || arg == "-h" {
            return Err(CliError::Help);
        } else if arg == flag {
            args.next().ok_or(CliError::MissingValue(flag))?
        } else if let Some(value) = arg.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            value.to_string()
        } else {
            return Err(CliError::UnknownArgument(arg));
        };
        size = value
            .replace('_', "")
            .parse::<u64>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or(CliError::BadValue { flag, value })?;
    }
    Ok(size)
}

/// [`parse_size`] on the process's arguments; prints usage (exit 0) for `--help` and a clear
/// error (exit 2) for bad input. `what` describes the binary in the usage text.
pub fn parse_or_exit(flag: &'static str, default: u64, what: &str) -> u64 {
    let program = std::env::args()
        .next()
        .unwrap_or_else(|| "bench".to_string());
    match parse_size(std::env::args().skip(1), flag, default) {
        Ok(size) => size,
        Err(CliError::Help) => {
            println!("{what}\n\nusage: {program} [{flag} N]   (default {default})");
            std::process::exit(0);
        }
        Err(err) => {
            eprintln!("{program}: {err}\nusage: {program} [{flag} N]   (default {default})");
            std::process::exit(2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn missing_value_names_the_flag() {
        let err = parse_size(args(&["--samples"]), "--samples", 1).unwrap_err();
        assert_eq!(err, CliError::MissingValue("--samples"));
        assert!(err.to_string().contains("--samples"));
    }

    #[test]
    fn bad_values_are_rejected_not_defaulted() {
        for bad in ["abc", "-3", "0", "1.5", ""] {
            let err = parse_size(args(&["--iterations", bad]), "--iterations", 9).unwrap_err();
            assert!(matches!(err, CliError::BadValue { .. }), "{bad}: {err:?}");
        }
    }

    #[test]
    fn last_flag_wins_and_help_is_reported() {
        let got = parse_size(
            args(&["--iterations", "2", "--iterations=3"]),
            "--iterations",
            1,
        );
        assert_eq!(got, Ok(3));
        assert_eq!(
            parse_size(args(&["-h"]), "--iterations", 1),
            Err(CliError::Help)
        );
    }
}
