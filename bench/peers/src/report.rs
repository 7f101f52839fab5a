//! The one output format every benchmark binary prints, read by `scripts/bench_framework.sh`.
//!
//! ```text
//! figure=<name> ns_per_op=<f64> samples=<n>
//! figure=<name>_vmhwm vmhwm_kib=<n>
//! ```
//!
//! One line per figure, space-separated `key=value` pairs, `figure` first. Everything else a
//! binary prints (progress, observations) must not start with `figure=`.

use crate::sys;
use std::time::Duration;

/// The figure name as printed: `base`, plus `_pinned` when the process may run on exactly one
/// CPU (`allowed_cpus == 1`). Names already ending in `_pinned` are left alone.
pub fn figure_name(base: &str, allowed_cpus: usize) -> String {
    if allowed_cpus == 1 && !base.ends_with("_pinned") {
        format!("{base}_pinned")
    } else {
        base.to_string()
    }
}

/// Formats one timing line: `total` spread over `ops` operations.
///
/// ```
/// use std::time::Duration;
/// let line = preempt_peers::report::timing_line("x", Duration::from_micros(3), 1000);
/// assert_eq!(line, "figure=x ns_per_op=3.000 samples=1000");
/// ```
pub fn timing_line(figure: &str, total: Duration, ops: u64) -> String {
    assert!(ops > 0, "a figure needs at least one operation");
    // u128 -> f64 loses precision only above 2^53 ns (104 days): not a benchmark length.
    let ns_per_op = total.as_nanos() as f64 / ops as f64;
    format!("figure={figure} ns_per_op={ns_per_op:.3} samples={ops}")
}

/// Prints the timing line for `base` (pinned suffix added from the current affinity mask).
pub fn print_timing(base: &str, total: Duration, ops: u64) {
    let cpus = allowed_cpus_or_exit();
    println!("{}", timing_line(&figure_name(base, cpus), total, ops));
}

/// Prints `figure=<base>_vmhwm[_pinned] vmhwm_kib=<n>`: the process's peak resident set so far, read
/// from `VmHWM` in `/proc/self/status`. Call it right before the process exits.
pub fn print_vmhwm(base: &str) {
    let cpus = allowed_cpus_or_exit();
    match sys::vmhwm_kib() {
        Ok(kib) => {
            let name = figure_name(&format!("{base}_vmhwm"), cpus);
            println!("figure={name} vmhwm_kib={kib}");
        }
        Err(err) => eprintln!("warning: cannot read VmHWM from /proc/self/status: {err}"),
    }
}

fn allowed_cpus_or_exit() -> usize {
    match sys::allowed_cpus() {
        Ok(n) => n,
        Err(err) => {
            eprintln!("error: sched_getaffinity failed ({err}); cannot tell a pinned run apart");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_suffix_only_for_one_cpu() {
        assert_eq!(figure_name("a", 0), "a");
        assert_eq!(figure_name("a", 1), "a_pinned");
        assert_eq!(figure_name("a_pinned", 1), "a_pinned");
        assert_eq!(figure_name("a", 64), "a");
    }

    #[test]
    fn timing_line_divides_by_ops() {
        let line = timing_line("f", Duration::from_nanos(10), 4);
        assert_eq!(line, "figure=f ns_per_op=2.500 samples=4");
    }
}
