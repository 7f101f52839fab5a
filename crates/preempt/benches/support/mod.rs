//! Helpers every `harness = false` benchmark of this crate needs: its flags and medians.
//! Included with `#[path]` (a benchmark is its own crate root); not every benchmark uses
//! every helper.
#![allow(dead_code, reason = "each benchmark uses its own subset")]

/// The value after `flag` on the command line, if any.
pub(crate) fn flag_value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The median (upper of the two middle values), or `None` for no values.
pub(crate) fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// The 1-, 5- and 15-minute load averages (`/proc/loadavg`), to print beside the figures.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prints a benchmark's title, the machine (kernel, online CPUs, PREEMPT_RT, load average at
/// the start) and the command that reproduces the run: what every committed run records.
pub(crate) fn print_header(title: &str, bench: &str, quick: bool) {
    let uname = preempt_io::sys::kernel::uname()
        .map(|u| format!("{} {} {}", u.sysname, u.release, u.machine))
        .unwrap_or_default();
    let cpus = preempt_io::sys::cpu::online_cpus().map_or(0, |c| c.len());
    println!("{title}");
    println!(
        "  machine: {uname}, {cpus} online CPUs, PREEMPT_RT: {}, load average at start {}",
        preempt_io::sys::kernel::is_preempt_rt(),
        load_average()
    );
    println!(
        "  command: cargo bench -p preempt --bench {bench}{}",
        if quick { " -- --quick" } else { "" }
    );
}
