//! Turns benchmark output into the side-by-side table of issue 3: medians per figure and the
//! ratios preempt is judged on. Used by the `bench_table` binary, which
//! `scripts/bench_framework.sh` calls.
//!
//! Input lines (anything else is ignored):
//!
//! ```text
//! figure=<name> ns_per_op=<f64> samples=<n> [...]      a timing
//! figure=<name>_rss vmhwm_kib=<n> [...]                 a peak RSS (from `peak_rss`)
//! failure=<name> reason=<word>                          a run that hung or failed
//! ```
//!
//! [`normalize`] also accepts the human output of preempt's thesis examples
//! (`Time: 1.23s` + `Switches: N`, or `Release time: 5.4µs` + `after N samples`) so they can
//! be compared before they print `figure=` lines themselves.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// One ratio that issue 3 sets a target for (or that gives context to one).
#[derive(Debug, Clone, Copy)]
pub struct Ratio {
    /// What the ratio compares, in words.
    pub label: &'static str,
    /// Figure whose median is divided …
    pub numerator: &'static str,
    /// … by this figure's median.
    pub denominator: &'static str,
    /// The issue's bound (`ratio <= target`), or `None` for context-only rows.
    pub target: Option<f64>,
}

/// The ratios printed under the table. The targeted ones are issue 3's "Performance" list.
pub const RATIOS: &[Ratio] = &[
    Ratio {
        label: "same-priority switch: preempt / linux-rtic",
        numerator: "preempt_switch_same",
        denominator: "rtic_switch_same",
        target: Some(0.25),
    },
    Ratio {
        label: "cross-priority switch: preempt / raw futex ping-pong",
        numerator: "preempt_switch_cross",
        denominator: "raw_futex_pingpong",
        target: Some(1.1),
    },
    Ratio {
        label: "cross-priority switch, pinned: preempt / raw futex ping-pong",
        numerator: "preempt_switch_cross_pinned",
        denominator: "raw_futex_pingpong_pinned",
        target: Some(1.1),
    },
    Ratio {
        label: "uncontended lock+unlock: preempt / raw PI CAS pair",
        numerator: "preempt_lock_uncontended",
        denominator: "raw_pi_cas",
        target: Some(1.3),
    },
    Ratio {
        label: "same-priority switch, bare runtime (accounting = false): preempt / linux-rtic",
        numerator: "preempt_switch_same_bare",
        denominator: "rtic_switch_same",
        target: Some(0.25),
    },
    Ratio {
        label: "uncontended lock+unlock, bare runtime: preempt / raw PI CAS pair",
        numerator: "preempt_lock_uncontended_bare",
        denominator: "raw_pi_cas",
        target: Some(1.3),
    },
    Ratio {
        label: "contended unlock: preempt / raw FUTEX_UNLOCK_PI",
        numerator: "preempt_contended_unlock",
        denominator: "raw_unlock_pi",
        target: Some(1.1),
    },
    Ratio {
        label: "contended unlock, pinned: preempt / raw FUTEX_UNLOCK_PI",
        numerator: "preempt_contended_unlock_pinned",
        denominator: "raw_unlock_pi_pinned",
        target: None,
    },
    Ratio {
        label: "(context) same-priority switch: linux-rtic / raw VecDeque push+pop",
        numerator: "rtic_switch_same",
        denominator: "vecdeque_push_pop",
        target: None,
    },
    Ratio {
        label: "(context) same-priority switch: preempt / raw VecDeque push+pop",
        numerator: "preempt_switch_same",
        denominator: "vecdeque_push_pop",
        target: None,
    },
    Ratio {
        label: "(context) cross-priority switch: linux-rtic / raw futex ping-pong",
        numerator: "rtic_switch_cross",
        denominator: "raw_futex_pingpong",
        target: None,
    },
    Ratio {
        label: "(context) cross-priority switch, pinned: linux-rtic / raw",
        numerator: "rtic_switch_cross_pinned",
        denominator: "raw_futex_pingpong_pinned",
        target: None,
    },
    Ratio {
        label: "(context) uncontended lock+unlock: pcp-mutex / raw PI CAS pair",
        numerator: "pcp_mutex_uncontended",
        denominator: "raw_pi_cas",
        target: None,
    },
    Ratio {
        label: "(context) contended unlock: linux-rtic / raw FUTEX_UNLOCK_PI",
        numerator: "rtic_contended_unlock",
        denominator: "raw_unlock_pi",
        target: None,
    },
];

/// The Listing-1 app whose peak RSS issue 3 bounds, and the bound.
pub const RSS_FIGURE: &str = "preempt_switch_same_rss";
/// Issue 3: "RSS of the Listing-1 app under 8 MiB".
pub const RSS_LIMIT_KIB: u64 = 8 * 1024;

/// Parses a `Duration` as Rust's `Debug` prints it: `12ns`, `3.5µs` (or `us`), `1.2ms`, `4.0s`.
///
/// ```
/// use preempt_peers::table::parse_debug_duration;
/// use std::time::Duration;
/// assert_eq!(parse_debug_duration("1.5ms"), Some(Duration::from_micros(1500)));
/// assert_eq!(parse_debug_duration("3.25µs"), Some(Duration::from_nanos(3250)));
/// assert_eq!(parse_debug_duration("7s"), Some(Duration::from_secs(7)));
/// assert_eq!(parse_debug_duration("7 parsecs"), None);
/// ```
pub fn parse_debug_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "ns" => 1e-9,
        "µs" | "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return None,
    };
    let value: f64 = number.parse().ok()?;
    Duration::try_from_secs_f64(value * scale).ok()
}

/// Returns the `figure=` lines in `output` (named for a pinned run when `pinned` is set) and,
/// when none of them is a timing, adds the timing made from the human output of preempt's
/// thesis examples, named `figure`. Errors when the output holds no timing at all.
///
/// ```
/// use preempt_peers::table::normalize;
/// let out = "Time: 2ms\nSwitches: 1000\nfigure=x_rss vmhwm_kib=9\n";
/// assert_eq!(
///     normalize(out, "preempt_switch_same", false).unwrap(),
///     vec![
///         "figure=x_rss vmhwm_kib=9".to_string(),
///         "figure=preempt_switch_same ns_per_op=2000.000 samples=1000".to_string(),
///     ]
/// );
/// ```
pub fn normalize(output: &str, figure: &str, pinned: bool) -> Result<Vec<String>, String> {
    let name = |base: &str| crate::report::figure_name(base, if pinned { 1 } else { 0 });
    let mut lines: Vec<String> = output
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("figure=")?;
            let (base, fields) = rest.split_once(' ').unwrap_or((rest, ""));
            Some(
                format!("figure={} {fields}", name(base))
                    .trim_end()
                    .to_string(),
            )
        })
        .collect();
    if lines.iter().any(|l| field(l, "ns_per_op").is_some()) {
        return Ok(lines);
    }
    let (total, ops) = human_timing(output)?;
    lines.push(crate::report::timing_line(&name(figure), total, ops));
    Ok(lines)
}

/// (total time, operations) from `Time:` + `Switches:` or `Release time:` + `after N samples`.
fn human_timing(output: &str) -> Result<(Duration, u64), String> {
    let value_after = |prefix: &str| {
        output
            .lines()
            .find_map(|l| l.trim().strip_prefix(prefix).map(str::trim))
    };
    let (total, ops) = if let Some(time) = value_after("Time:") {
        let total = parse_debug_duration(time).ok_or(format!("unparsable `Time: {time}`"))?;
        let switches = value_after("Switches:").ok_or("`Time:` without a `Switches:` line")?;
        let ops: u64 = switches
            .parse()
            .map_err(|_| format!("unparsable `Switches: {switches}`"))?;
        (total, ops)
    } else if let Some(time) = value_after("Release time:") {
        // The example prints the mean already; report it as mean × samples over samples.
        let mean =
            parse_debug_duration(time).ok_or(format!("unparsable `Release time: {time}`"))?;
        let samples = output
            .split_whitespace()
            .collect::<Vec<_>>()
            .windows(3)
            .find(|w| w[0] == "after" && w[2] == "samples")
            .and_then(|w| w[1].parse::<u32>().ok())
            .ok_or("`Release time:` without an `after N samples` line")?;
        (mean * samples, u64::from(samples))
    } else {
        return Err(
            "no timing: no `figure=… ns_per_op=` line, no `Time:` and no `Release time:` line"
                .to_string(),
        );
    };
    if ops == 0 {
        return Err("zero operations".to_string());
    }
    Ok((total, ops))
}

/// Median of a non-empty slice (mean of the two middle values for an even count).
///
/// ```
/// assert_eq!(preempt_peers::table::median(&[3.0, 1.0, 2.0]), Some(2.0));
/// assert_eq!(preempt_peers::table::median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
/// assert_eq!(preempt_peers::table::median(&[]), None);
/// ```
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// Everything collected for one figure name.
#[derive(Debug, Default)]
struct Series {
    ns_per_op: Vec<f64>,
    kib: Vec<f64>,
    failures: Vec<String>,
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

fn collect(input: &str) -> BTreeMap<String, Series> {
    let mut series: BTreeMap<String, Series> = BTreeMap::new();
    for line in input.lines() {
        if let Some(name) = field(line, "failure").filter(|_| line.starts_with("failure=")) {
            let reason = field(line, "reason").unwrap_or("unknown");
            series
                .entry(name.to_string())
                .or_default()
                .failures
                .push(reason.to_string());
            continue;
        }
        let Some(name) = field(line, "figure").filter(|_| line.starts_with("figure=")) else {
            continue;
        };
        let entry = series.entry(name.to_string()).or_default();
        if let Some(ns) = field(line, "ns_per_op").and_then(|v| v.parse().ok()) {
            entry.ns_per_op.push(ns);
        } else if let Some(kib) = field(line, "vmhwm_kib").and_then(|v| v.parse::<u64>().ok()) {
            // KiB counts fit f64 exactly far beyond any RSS.
            entry.kib.push(kib as f64);
        }
    }
    series
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 100.0 {
        format!("{ns:.0}")
    } else {
        format!("{ns:.1}")
    }
}

/// The CPU model of this machine from `/proc/cpuinfo` (`model name` on x86; on arm64, where
/// there is none, the implementer and part numbers), or `unknown`.
pub fn host_cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    field("model name")
        .or_else(|| {
            let part = field("CPU part")?;
            Some(format!(
                "CPU implementer {} part {part}",
                field("CPU implementer").unwrap_or_default()
            ))
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// Renders the medians table and the ratio list (Markdown, so it can go into
/// docs/PERFORMANCE.md as is).
pub fn summarize(input: &str) -> String {
    let series = collect(input);
    let mut out = String::new();
    let mut medians: BTreeMap<&str, f64> = BTreeMap::new();

    out.push_str("| figure | runs | median ns/op | min | max | failed runs |\n");
    out.push_str("|---|---:|---:|---:|---:|---|\n");
    for (name, s) in &series {
        if !s.kib.is_empty() || (s.ns_per_op.is_empty() && name.ends_with("_rss")) {
            continue;
        }
        let failed = if s.failures.is_empty() {
            String::new()
        } else {
            format!("{} ({})", s.failures.len(), s.failures.join(", "))
        };
        if let Some(m) = median(&s.ns_per_op) {
            medians.insert(name, m);
            let min = s.ns_per_op.iter().copied().fold(f64::INFINITY, f64::min);
            let max = s
                .ns_per_op
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            writeln!(
                out,
                "| {name} | {} | {} | {} | {} | {failed} |",
                s.ns_per_op.len(),
                fmt_ns(m),
                fmt_ns(min),
                fmt_ns(max)
            )
            .expect("writing to a String cannot fail");
        } else {
            writeln!(out, "| {name} | 0 | – | – | – | {failed} |")
                .expect("writing to a String cannot fail");
        }
    }

    out.push_str("\n| peak RSS (VmHWM) | runs | median KiB | max KiB |\n|---|---:|---:|---:|\n");
    for (name, s) in series.iter().filter(|(_, s)| !s.kib.is_empty()) {
        let max = s.kib.iter().copied().fold(0.0, f64::max);
        let m = median(&s.kib).unwrap_or(max);
        writeln!(out, "| {name} | {} | {m:.0} | {max:.0} |", s.kib.len())
            .expect("writing to a String cannot fail");
    }

    // The host CPU beside every ratio: the same code gives other ratios on another host CPU
    // (a VM's host can change between sessions), so a ratio means little without it.
    let cpu = host_cpu();
    out.push_str(
        "\n| ratio of medians | value | target | verdict | host CPU |\n|---|---:|---:|---|---|\n",
    );
    for r in RATIOS {
        let target = r
            .target
            .map_or_else(|| "–".to_string(), |t| format!("≤ {t}"));
        let (value, verdict) = match (medians.get(r.numerator), medians.get(r.denominator)) {
            (Some(n), Some(d)) if *d > 0.0 => {
                let v = n / d;
                let verdict = match r.target {
                    Some(t) if v <= t => "meets",
                    Some(_) => "MISSES",
                    None => "",
                };
                (format!("{v:.3}"), verdict.to_string())
            }
            (n, d) => {
                let missing: Vec<&str> = [(n.is_none(), r.numerator), (d.is_none(), r.denominator)]
                    .into_iter()
                    .filter_map(|(absent, name)| absent.then_some(name))
                    .collect();
                ("n/a".to_string(), format!("missing {}", missing.join(", ")))
            }
        };
        writeln!(
            out,
            "| {} ({} / {}) | {value} | {target} | {verdict} | {cpu} |",
            r.label, r.numerator, r.denominator
        )
        .expect("writing to a String cannot fail");
    }
    let rss = series.get(RSS_FIGURE).filter(|s| !s.kib.is_empty());
    let (value, verdict) = match rss {
        Some(s) => {
            let max = s.kib.iter().copied().fold(0.0, f64::max);
            let ok = max < RSS_LIMIT_KIB as f64;
            (
                format!("{max:.0} KiB (max)"),
                if ok { "meets" } else { "MISSES" }.to_string(),
            )
        }
        None => ("n/a".to_string(), format!("missing {RSS_FIGURE}")),
    };
    writeln!(
        out,
        "| peak RSS of the Listing-1 app ({RSS_FIGURE}) | {value} | < {RSS_LIMIT_KIB} KiB | {verdict} |"
    )
            .expect("writing to a String cannot fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_lines_pass_through_and_get_the_pinned_suffix() {
        let out =
            "hello\nfigure=a ns_per_op=1.0 samples=3\nfigure=b_pinned ns_per_op=2 samples=1\n";
        assert_eq!(
            normalize(out, "ignored", true).unwrap(),
            vec![
                "figure=a_pinned ns_per_op=1.0 samples=3",
                "figure=b_pinned ns_per_op=2 samples=1"
            ]
        );
    }

    #[test]
    fn release_time_output_is_converted() {
        let out = "Release time: 2.5µs\na = 1001 after 500 samples\n";
        let lines = normalize(out, "preempt_contended_unlock", true).unwrap();
        assert_eq!(
            lines,
            vec!["figure=preempt_contended_unlock_pinned ns_per_op=2500.000 samples=500"]
        );
    }

    #[test]
    fn unrecognised_output_is_an_error_not_a_figure() {
        assert!(normalize("Time: soon\nSwitches: 3\n", "x", false).is_err());
        assert!(normalize("Time: 3s\n", "x", false)
            .unwrap_err()
            .contains("Switches"));
        assert!(normalize("nothing here\n", "x", false).is_err());
        assert!(normalize("figure=x_rss vmhwm_kib=3\n", "x", false).is_err());
    }

    #[test]
    fn summary_has_medians_ratios_verdicts_and_failures() {
        let input = "\
figure=preempt_switch_same ns_per_op=10 samples=1
figure=preempt_switch_same ns_per_op=30 samples=1
figure=preempt_switch_same ns_per_op=20 samples=1
figure=rtic_switch_same ns_per_op=100 samples=1
figure=raw_unlock_pi ns_per_op=1000 samples=1
figure=preempt_contended_unlock ns_per_op=1200 samples=1
failure=rtic_contended_unlock_pinned reason=timeout
figure=preempt_switch_same_rss vmhwm_kib=3000 source=exit-stop
";
        let table = summarize(input);
        assert!(
            table.contains("| preempt_switch_same | 3 | 20.0 | 10.0 | 30.0 |  |"),
            "{table}"
        );
        assert!(table.contains("| 0.200 | ≤ 0.25 | meets |"), "{table}");
        assert!(table.contains("| 1.200 | ≤ 1.1 | MISSES |"), "{table}");
        assert!(table.contains("| rtic_contended_unlock_pinned | 0 | – | – | – | 1 (timeout) |"));
        assert!(
            table.contains("missing preempt_lock_uncontended, raw_pi_cas"),
            "{table}"
        );
        assert!(
            table.contains("| 3000 KiB (max) | < 8192 KiB | meets |"),
            "{table}"
        );
    }
}
