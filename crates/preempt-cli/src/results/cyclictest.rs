//! Importers for cyclictest's results, so existing data can be compared with preempt's:
//! its `--json=FILE` output and its histogram output (`-h N` / `-H N` on stdout, or
//! `--histfile`).
//!
//! Formats (rt-tests 2.x; samples in `src/compare/testdata/`, from cyclictest 2.40):
//! - JSON: `{"file_version": 1, "cmdline:": "...", "sysinfo": {...}, "resolution_in_ns": 0,
//!   "thread": {"0": {"histogram": {"7": 11, ...}, "cycles": 300, "min": 7, "max": 4756,
//!   "avg": 47.5, "cpu": 0}}}`; values in µs, or ns when `resolution_in_ns` is 1
//!   (`--nsecs`). Note the colon inside the `"cmdline:"` key, as cyclictest writes it.
//! - histogram text: `# Histogram`, then one line per bucket: the bucket (µs, six digits)
//!   and one count per thread (plus a total column with `-H`/`--histofall`), then
//!   `# Total:`, `# Min Latencies:`, `# Avg Latencies:`, `# Max Latencies:`,
//!   `# Histogram Overflows:` lines. The text does not say its unit: it is taken as µs,
//!   cyclictest's default (`--nsecs` histograms are not recognisable and are refused only if
//!   inconsistent).
//!
//! # What is lost
//! cyclictest's histogram stops at its `-h` limit and only counts the samples above it
//! ("overflows"), without their values. They are placed at the thread's reported maximum (an
//! upper bound), and the import says how many there were: percentiles above the histogram
//! limit are then pessimistic, never optimistic.

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::results::{Distribution, plausible};
use crate::stats::histogram::Snapshot;

/// One cyclictest thread.
#[derive(Debug, Clone, PartialEq)]
pub struct CyclicThread {
    /// Thread index.
    pub index: usize,
    /// CPU it was pinned to (JSON only).
    pub cpu: Option<usize>,
    /// Samples (`cycles`), histogram plus overflows.
    pub count: u64,
    /// Smallest sample, ns.
    pub min_ns: u64,
    /// Mean, ns.
    pub avg_ns: f64,
    /// Largest sample, ns.
    pub max_ns: u64,
    /// Histogram: `(value_ns, count)`, the bucket's lower bound.
    pub buckets: Vec<(u64, u64)>,
    /// Samples above the histogram's range.
    pub overflows: u64,
}

impl CyclicThread {
    /// Display name: `cpuN` when the CPU is known, else `thread N`.
    pub(crate) fn name(&self) -> String {
        self.cpu
            .map_or(format!("thread {}", self.index), |c| format!("cpu{c}"))
    }

    /// The thread as a preempt distribution (`None` without a histogram).
    pub(crate) fn distribution(&self) -> Option<Distribution> {
        distribution(std::slice::from_ref(self))
    }
}

/// Merges threads into one distribution (`None` when no thread has a histogram).
pub(crate) fn distribution(threads: &[CyclicThread]) -> Option<Distribution> {
    let with_hist: Vec<&CyclicThread> = threads
        .iter()
        .filter(|t| !t.buckets.is_empty() || t.overflows > 0)
        .collect();
    if with_hist.is_empty() {
        return None;
    }
    let mut pairs = Vec::new();
    let mut sum = 0u64;
    for t in &with_hist {
        for &(v, c) in &t.buckets {
            pairs.push((v, c));
        }
        if t.overflows > 0 {
            pairs.push((t.max_ns, t.overflows));
        }
        sum = sum.saturating_add((t.avg_ns * t.count as f64).round() as u64);
    }
    let min = with_hist.iter().map(|t| t.min_ns).min().unwrap_or(0);
    let max = with_hist.iter().map(|t| t.max_ns).max().unwrap_or(0);
    let snap = Snapshot::from_values(pairs, sum, min, max, Vec::new());
    Some(Distribution::from_snapshot(&snap))
}

/// A cyclictest run.
#[derive(Debug, Clone, PartialEq)]
pub struct CyclicRun {
    /// `json` or `histogram`.
    pub format: &'static str,
    /// The command line, when recorded.
    pub cmdline: Option<String>,
    /// `uname -r` of the machine, when recorded.
    pub kernel_release: Option<String>,
    /// Threads.
    pub threads: Vec<CyclicThread>,
}

impl CyclicRun {
    /// Samples that overflowed the histogram, over all threads.
    #[cfg(test)]
    fn overflows(&self) -> u64 {
        self.threads.iter().map(|t| t.overflows).sum()
    }
}

/// Whether a JSON value looks like cyclictest's `--json` output.
pub(crate) fn looks_like_json(v: &Value) -> bool {
    v.get("thread").is_some_and(Value::is_object)
        && (v.get("file_version").is_some() || v.get("num_threads").is_some())
}

fn u(v: &Value, k: &str, thread: &str) -> Result<u64> {
    let x = v
        .get(k)
        .with_context(|| format!("thread {thread}: missing \"{k}\""))?;
    plausible::json_u64(x, &format!("thread {thread}: \"{k}\""))
}

/// A latency of the JSON file in its unit (`scale` ns: 1 or 1 000), in ns, bounded by
/// [`plausible::MAX_LATENCY_NS`].
fn latency(field: &str, value: u64, scale: u64) -> Result<u64> {
    if scale == 1 {
        plausible::latency_ns(field, value).map(|()| value)
    } else {
        plausible::latency_us(field, value)
    }
}

/// A count of samples of one cyclictest thread, bounded by [`plausible::samples`].
fn count(field: &str, n: u64) -> Result<u64> {
    plausible::samples(field, n, None, plausible::CYCLICTEST_MIN_INTERVAL_NS).map(|()| n)
}

/// Converts cyclictest's `--json` output.
pub(crate) fn from_json(v: &Value) -> Result<CyclicRun> {
    let scale = match v.get("resolution_in_ns").and_then(Value::as_u64) {
        Some(1) => 1,
        _ => 1_000,
    };
    let threads_obj = v
        .get("thread")
        .and_then(Value::as_object)
        .context("no \"thread\" object")?;
    let mut threads = Vec::new();
    for (key, t) in threads_obj {
        let index: usize = key
            .parse()
            .with_context(|| format!("thread key '{key}' is not a number"))?;
        let count = count(&format!("thread {key}: \"cycles\""), u(t, "cycles", key)?)?;
        let mut buckets: Vec<(u64, u64)> = match t.get("histogram").and_then(Value::as_object) {
            Some(h) => h
                .iter()
                .map(|(b, c)| {
                    let b: u64 = b.parse().map_err(|_| {
                        anyhow::anyhow!(
                            "thread {key}: histogram bucket '{b}' {}",
                            plausible::not_u64(b)
                        )
                    })?;
                    let field = format!("thread {key}: histogram count for {b}");
                    let c = self::count(&field, plausible::json_u64(c, &field)?)?;
                    Ok((
                        latency(&format!("thread {key}: histogram bucket"), b, scale)?,
                        c,
                    ))
                })
                .collect::<Result<_>>()?,
            None => Vec::new(),
        };
        buckets.sort_unstable();
        let in_hist = buckets
            .iter()
            .try_fold(0u64, |sum, b| sum.checked_add(b.1))
            .unwrap_or(u64::MAX);
        if in_hist > count {
            bail!("thread {key}: histogram holds {in_hist} samples but cycles is {count}");
        }
        let avg = match t.get("avg") {
            None => 0.0,
            Some(a) => a
                .as_f64()
                .filter(|a| (0.0..=(plausible::MAX_LATENCY_NS / scale) as f64).contains(a))
                .with_context(|| {
                    format!(
                        "thread {key}: \"avg\" = {a} is not a plausible latency (negative, \
                         not a number, or above one hour)"
                    )
                })?,
        };
        threads.push(CyclicThread {
            index,
            cpu: t
                .get("cpu")
                .and_then(Value::as_u64)
                .and_then(|c| usize::try_from(c).ok()),
            count,
            min_ns: latency(&format!("thread {key}: \"min\""), u(t, "min", key)?, scale)?,
            avg_ns: avg * scale as f64,
            max_ns: latency(&format!("thread {key}: \"max\""), u(t, "max", key)?, scale)?,
            overflows: if buckets.is_empty() {
                0
            } else {
                count - in_hist
            },
            buckets,
        });
    }
    threads.sort_by_key(|t| t.index);
    if threads.is_empty() {
        bail!("the \"thread\" object is empty");
    }
    let cmdline = ["cmdline:", "cmdline"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .map(String::from);
    Ok(CyclicRun {
        format: "json",
        cmdline,
        kernel_release: v
            .pointer("/sysinfo/release")
            .and_then(Value::as_str)
            .map(String::from),
        threads,
    })
}

/// Whether text looks like cyclictest's histogram output.
pub(crate) fn looks_like_histogram(text: &str) -> bool {
    text.lines().any(|l| l.trim() == "# Histogram")
        || text.lines().any(|l| l.starts_with("# Total:"))
}

/// A summary line of the histogram text: its 1-based line number and its numbers.
type SummaryLine = (usize, Vec<u64>);

/// The numbers after `prefix` on `line` (line `n`), or `None` when it is another line; a
/// number that is negative, overflows 64 bits or is not one is refused naming the line.
fn numbers(line: &str, n: usize, prefix: &str) -> Option<Result<SummaryLine>> {
    let rest = line.strip_prefix(prefix)?;
    Some(
        rest.split_whitespace()
            .map(|x| number(x, n, line))
            .collect::<Result<Vec<_>>>()
            .map(|v| (n, v)),
    )
}

fn number(x: &str, n: usize, line: &str) -> Result<u64> {
    x.parse()
        .map_err(|_| anyhow::anyhow!("line {n}: '{line}': {x} {}", plausible::not_u64(x)))
}

/// Converts cyclictest's histogram output (µs buckets).
pub(crate) fn from_histogram(text: &str) -> Result<CyclicRun> {
    // (line number, bucket in µs, counts)
    let mut rows: Vec<(usize, u64, Vec<u64>)> = Vec::new();
    let (mut total, mut min, mut avg, mut max, mut over) = (None, None, None, None, None);
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            for (slot, prefix) in [
                (&mut total, "# Total:"),
                (&mut min, "# Min Latencies:"),
                (&mut avg, "# Avg Latencies:"),
                (&mut max, "# Max Latencies:"),
                (&mut over, "# Histogram Overflows:"),
            ] {
                if slot.is_none() {
                    if let Some(found) = numbers(line, n, prefix) {
                        *slot = Some(found?);
                    }
                }
            }
            continue;
        }
        let mut f = line.split_whitespace();
        let bucket = f
            .next()
            .filter(|b| {
                b.bytes()
                    .all(|c| c.is_ascii_digit() || c == b'-' || c == b'+')
            })
            .with_context(|| format!("line {n}: '{line}' is not a histogram row"))?;
        let bucket = number(bucket, n, line)?;
        let counts: Vec<u64> = f.map(|x| number(x, n, line)).collect::<Result<_>>()?;
        rows.push((n, bucket, counts));
    }
    let (min_line, min) =
        min.context("no '# Min Latencies:' line (is this the complete output of cyclictest -h?)")?;
    let (max_line, max) = max.context("no '# Max Latencies:' line")?;
    let (avg_line, avg) = avg.unwrap_or_default();
    let n_threads = min.len();
    if n_threads == 0 {
        bail!("'# Min Latencies:' lists no thread");
    }
    let columns = rows.first().map_or(n_threads, |r| r.2.len());
    // With -H/--histofall there is one more column: the total over threads; it is ignored.
    if columns != n_threads && columns != n_threads + 1 {
        bail!("histogram rows have {columns} count columns for {n_threads} threads");
    }
    if let Some((_, b, r)) = rows.iter().find(|r| r.2.len() != columns) {
        bail!(
            "histogram row {b} has {} columns, expected {columns}",
            r.len()
        );
    }
    for (n, bucket, counts) in &rows {
        plausible::latency_us(&format!("line {n}: bucket"), *bucket)?;
        for (i, c) in counts.iter().take(n_threads).enumerate() {
            count(&format!("line {n}: bucket {bucket} of thread {i}"), *c)?;
        }
    }
    let (over_line, over) = over.unwrap_or_default();
    let threads = (0..n_threads)
        .map(|i| {
            let buckets: Vec<(u64, u64)> = rows
                .iter()
                .filter(|r| r.2[i] > 0)
                .map(|r| (r.1 * 1_000, r.2[i]))
                .collect();
            let in_hist = buckets
                .iter()
                .try_fold(0u64, |sum, b| sum.checked_add(b.1))
                .unwrap_or(u64::MAX);
            count(
                &format!("thread {i}: the sum of its histogram rows"),
                in_hist,
            )?;
            let overflows = count(
                &format!("line {over_line}: '# Histogram Overflows:' of thread {i}"),
                over.get(i).copied().unwrap_or(0),
            )?;
            if let Some((total_line, t)) = total.as_ref().and_then(|(n, t)| Some((n, t.get(i)?))) {
                if *t != in_hist {
                    bail!(
                        "line {total_line}: thread {i}: '# Total:' says {t} samples but the rows \
                         sum to {in_hist}"
                    );
                }
            }
            let field = |what: &str, line: usize| {
                format!("line {line}: '# {what} Latencies:' of thread {i}")
            };
            Ok(CyclicThread {
                index: i,
                cpu: None,
                count: count(
                    &format!("thread {i}: the histogram and its overflows"),
                    in_hist.saturating_add(overflows),
                )?,
                min_ns: plausible::latency_us(&field("Min", min_line), min[i])?,
                avg_ns: plausible::latency_us(
                    &field("Avg", avg_line),
                    avg.get(i).copied().unwrap_or(0),
                )? as f64,
                max_ns: plausible::latency_us(
                    &field("Max", max_line),
                    max.get(i).copied().unwrap_or(0),
                )?,
                buckets,
                overflows,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(CyclicRun {
        format: "histogram",
        cmdline: None,
        kernel_release: None,
        threads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: &str = include_str!("testdata/cyclictest-2.40.json");
    const HIST: &str = include_str!("testdata/cyclictest-2.40-h.txt");
    const HISTOFALL: &str = include_str!("testdata/cyclictest-2.40-histofall.txt");

    #[test]
    fn json_of_cyclictest_2_40() {
        let v: Value = serde_json::from_str(JSON).unwrap();
        assert!(looks_like_json(&v));
        let r = from_json(&v).unwrap();
        assert_eq!(r.threads.len(), 2);
        let t = &r.threads[0];
        assert_eq!(
            (t.cpu, t.count, t.min_ns, t.max_ns),
            (Some(0), 300, 7_000, 4_756_000)
        );
        // 3 samples above the 200 µs histogram: placed at the max.
        assert_eq!(t.overflows, 3);
        let d = t.distribution().unwrap();
        assert_eq!(d.summary.count, 300);
        assert_eq!(d.summary.max_ns, 4_756_000);
        assert_eq!(d.summary.min_ns, 7_000);
        assert!(r.cmdline.unwrap().starts_with("cyclictest -m -p 80"));
    }

    #[test]
    fn histogram_output_of_the_same_run() {
        assert!(looks_like_histogram(HIST));
        let h = from_histogram(HIST).unwrap();
        let v: Value = serde_json::from_str(JSON).unwrap();
        let j = from_json(&v).unwrap();
        // The same run written both ways gives the same distribution.
        for (a, b) in h.threads.iter().zip(&j.threads) {
            assert_eq!(a.buckets, b.buckets);
            assert_eq!(
                (a.count, a.min_ns, a.max_ns, a.overflows),
                (b.count, b.min_ns, b.max_ns, b.overflows)
            );
        }
    }

    #[test]
    fn histofall_total_column_is_ignored() {
        let h = from_histogram(HISTOFALL).unwrap();
        assert_eq!(h.threads.len(), 2);
        assert_eq!(h.threads[0].count, 200);
        assert_eq!(h.threads[1].max_ns, 2_424_000);
        assert_eq!(h.overflows(), 4);
    }

    #[test]
    fn inconsistent_or_truncated_input_is_refused() {
        let truncated: String = HIST.lines().take(50).collect::<Vec<_>>().join("\n");
        assert!(
            from_histogram(&truncated)
                .unwrap_err()
                .to_string()
                .contains("Min Latencies")
        );
        let bad_total = HIST.replace("# Total: 000000297", "# Total: 000000298");
        assert!(
            from_histogram(&bad_total)
                .unwrap_err()
                .to_string()
                .contains("Total")
        );
        let v: Value =
            serde_json::from_str(&JSON.replace("\"cycles\": 300", "\"cycles\": 3")).unwrap();
        assert!(from_json(&v).unwrap_err().to_string().contains("cycles"));
    }

    /// Issue 40: `# Max Latencies: 18446744073709551615` was reported as 584 000 years with
    /// "No problem found"; a value past u64 or negative was "no '# Max Latencies:' line".
    #[test]
    fn implausible_or_unparsable_histogram_values_name_their_line() {
        let err = |text: &str| format!("{:#}", from_histogram(text).unwrap_err());
        let max = "# Max Latencies: 04756 05574";
        for (bad, says) in [
            (
                "# Max Latencies: 18446744073709551615 05574",
                "18446744073709551615 us",
            ),
            (
                "# Max Latencies: 99999999999999999999999 05574",
                "does not fit in 64 bits",
            ),
            ("# Max Latencies: -1 05574", "-1 is negative"),
            (
                "# Max Latencies: 3600000001 05574",
                "not a plausible latency",
            ),
        ] {
            let e = err(&HIST.replace(max, bad));
            assert!(e.contains("line 206") && e.contains(says), "{bad}: {e}");
            assert!(!e.contains("no '# Max Latencies:' line"), "{e}");
        }
        // 10^15 samples in one bucket (and the total to match): no run holds that many.
        let e = err(&HIST
            .replace("000007 000011\t", "000007 1000000000000000\t")
            .replace("# Total: 000000297", "# Total: 1000000000000286"));
        assert!(
            e.contains("line 10: bucket 7 of thread 0 = 1000000000000000 samples"),
            "{e}"
        );
        let e = err(&HIST.replace("# Histogram Overflows: 00003", "# Histogram Overflows: -3"));
        assert!(
            e.contains("line 207") && e.contains("-3 is negative"),
            "{e}"
        );
        let e = err(&HIST.replace("000007 000011", "000007 -1"));
        assert!(e.contains("line 10") && e.contains("-1 is negative"), "{e}");
    }

    #[test]
    fn implausible_or_unparsable_json_values_name_their_field() {
        let err = |from: &str, to: &str| {
            let v: Value = serde_json::from_str(&JSON.replacen(from, to, 1)).unwrap();
            format!("{:#}", from_json(&v).unwrap_err())
        };
        for (to, says) in [
            (
                "\"max\": 18446744073709551615",
                "\"max\" = 18446744073709551615 us",
            ),
            ("\"max\": 1e30", "does not fit in 64 bits"),
            ("\"max\": -4756", "is negative"),
        ] {
            let e = err("\"max\": 4756", to);
            assert!(e.contains("thread 0") && e.contains(says), "{to}: {e}");
        }
        let e = err("\"cycles\": 300", "\"cycles\": 1000000000000000");
        assert!(e.contains("\"cycles\" = 1000000000000000 samples"), "{e}");
        let e = err("\"7\": 11", "\"7\": 1000000000000000");
        assert!(
            e.contains("histogram count for 7 = 1000000000000000"),
            "{e}"
        );
        let e = err("\"7\": 11", "\"7\": -11");
        assert!(e.contains("histogram count for 7 = -11 is negative"), "{e}");
    }
}
