//! Plausibility bounds of imported figures: the one place every importer (cyclictest's
//! histogram text and `--json` output, preempt result files, `history import`) takes its
//! limits from, so a value no run can have produced is refused, naming the field and the
//! value, instead of being reported as "584 000 years, no problem found".
//!
//! # Background
//! A value that parses as a `u64` is not therefore a measurement: `# Max Latencies:
//! 18446744073709551615` parsed, was reported as the run's worst case, and `compare` printed a
//! 3.3e12x ratio against a real run; a histogram bucket of 10^15 samples passed although no
//! run of any length a user waits for can take that many.
//!
//! # Solution
//! - a latency (any sample value of a distribution) is at most [`MAX_LATENCY_NS`], one hour:
//!   a thread that woke an hour late is a hung machine, not a latency to plot;
//! - a count of samples is at most what the run's length holds at one sample per
//!   `spacing_ns` ([`max_samples`]); a format that does not state its length (cyclictest's)
//!   is bounded by [`MAX_RUN_NS`], a year.
//!
//! ```
//! use preempt_cli::results::plausible::{latency_ns, samples};
//! assert!(latency_ns("max", 4_756_000).is_ok());
//! let err = latency_ns("max", u64::MAX).unwrap_err().to_string();
//! assert!(err.contains("max") && err.contains("18446744073709551615"), "{err}");
//! assert!(samples("count", 1_000_000_000_000_000, None, 1_000).is_err());
//! ```

use anyhow::{Result, bail};
use serde_json::Value;

/// Largest latency an import accepts: one hour, in ns. cyclictest's and preempt's worst cases
/// on a loaded non-RT kernel are tens of milliseconds; a wake-up an hour late means the
/// machine hung (or the file is not a measurement), and a figure that large would swamp every
/// comparison it took part in.
pub const MAX_LATENCY_NS: u64 = 3_600 * 1_000_000_000;

/// Length assumed for a run whose file does not state it (cyclictest's output): a year, in
/// ns. Soak tests run for days or weeks; none runs for a year without restarting.
pub const MAX_RUN_NS: u64 = 366 * 24 * 3_600 * 1_000_000_000;

/// Shortest time between two samples of one thread of a preempt run, in ns: one nanosecond
/// (reading the clock alone takes ~20 ns, so this bound holds with margin for every kind,
/// `micro`'s back-to-back samples included).
pub const MIN_SAMPLE_SPACING_NS: u64 = 1;

/// Shortest time between two samples of one cyclictest thread, in ns: its `-i` interval is in
/// whole microseconds, at least 1.
pub const CYCLICTEST_MIN_INTERVAL_NS: u64 = 1_000;

/// Most samples one thread can take in a run of `run_ns` (`None`: [`MAX_RUN_NS`]) at one
/// sample per `spacing_ns`.
pub fn max_samples(run_ns: Option<u64>, spacing_ns: u64) -> u64 {
    (run_ns.unwrap_or(MAX_RUN_NS) / spacing_ns.max(1)).saturating_add(1)
}

/// Refuses a latency above [`MAX_LATENCY_NS`], naming `field` and the value.
///
/// # Errors
/// `value_ns` is above the bound.
pub fn latency_ns(field: &str, value_ns: u64) -> Result<()> {
    if value_ns > MAX_LATENCY_NS {
        bail!(
            "{field} = {value_ns} ns ({}) is not a plausible latency: the bound is one hour \
             ({MAX_LATENCY_NS} ns); the file is corrupt or not a measurement",
            human(value_ns)
        );
    }
    Ok(())
}

/// Refuses a latency given in µs (cyclictest's unit) above [`MAX_LATENCY_NS`], naming `field`
/// and the value as written; returns it in ns (which then cannot overflow).
///
/// # Errors
/// `value_us` is above the bound.
pub fn latency_us(field: &str, value_us: u64) -> Result<u64> {
    if value_us > MAX_LATENCY_NS / 1_000 {
        bail!(
            "{field} = {value_us} us ({}) is not a plausible latency: the bound is one hour \
             ({} us); the file is corrupt or not a measurement",
            human(value_us.saturating_mul(1_000)),
            MAX_LATENCY_NS / 1_000
        );
    }
    Ok(value_us * 1_000)
}

/// Refuses a count of samples above [`max_samples`]`(run_ns, spacing_ns)`, naming `field`
/// and the value.
///
/// # Errors
/// `count` is above the bound.
pub fn samples(field: &str, count: u64, run_ns: Option<u64>, spacing_ns: u64) -> Result<()> {
    let most = max_samples(run_ns, spacing_ns);
    if count > most {
        let run = match run_ns {
            Some(ns) => format!("a run of {}", human(ns)),
            None => "a run of up to a year (the file does not say its length)".to_string(),
        };
        bail!(
            "{field} = {count} samples is more than {run} can hold at one sample per {} ns \
             (at most {most}); the file is corrupt or not a measurement",
            spacing_ns.max(1)
        );
    }
    Ok(())
}

/// Why `x` is not a `u64`: negative, too large for 64 bits, or not a number at all.
pub(crate) fn not_u64(x: &str) -> &'static str {
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    if x.strip_prefix('-').is_some_and(digits) {
        "is negative"
    } else if digits(x.strip_prefix('+').unwrap_or(x)) {
        "does not fit in 64 bits"
    } else {
        "is not a number"
    }
}

/// 2^64: the first f64 that no u64 holds (`u64::MAX as f64` rounds up to it).
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

/// A non-negative integer of a JSON value (a float is truncated, as cyclictest writes none);
/// a negative, overflowing or non-numeric value is refused naming `field`.
pub(crate) fn json_u64(x: &Value, field: &str) -> Result<u64> {
    if let Some(n) = x.as_u64() {
        return Ok(n);
    }
    match x.as_f64() {
        Some(f) if f < 0.0 => bail!("{field} = {x} is negative"),
        Some(f) if f >= TWO_POW_64 => bail!("{field} = {x} does not fit in 64 bits"),
        Some(f) => Ok(f as u64),
        None => bail!("{field} = {x} is not a number"),
    }
}

/// Checks every distribution of a preempt result file (as JSON, before it is typed, so a
/// field is named by its path and a negative or overflowing value by what it is): its
/// latencies against [`MAX_LATENCY_NS`], its counts against what the run's `elapsed_ns` holds
/// at [`MIN_SAMPLE_SPACING_NS`] ([`MAX_RUN_NS`] when the file says 0).
///
/// A summary is an object with `count`, `min_ns`, `max_ns` and `p50_ns` (a demo's
/// `TimeSummary`: `count`, `min`, `max`, `p50`, in ns); a histogram an object with a `buckets`
/// array of `lower_ns`/`count`; a distribution's `worst` an array of `value_ns`; an
/// rtio-bench cell has `latency_*_ns` and `samples_processed` within its `duration_ns`. Other
/// fields (`elapsed_ns`, `interval_ns`, `sum_ns`) are not latencies.
///
/// # Errors
/// The first implausible value, with its path (`data.threads[0].latency.summary.max_ns`).
pub fn result_value(file: &Value) -> Result<()> {
    let run_ns = file
        .get("elapsed_ns")
        .and_then(Value::as_u64)
        .filter(|ns| *ns > 0);
    match file.get("data") {
        Some(data) => walk(data, "data", run_ns),
        None => Ok(()),
    }
}

fn walk(v: &Value, path: &str, run_ns: Option<u64>) -> Result<()> {
    let count = |x: &Value, field: &str| -> Result<u64> {
        let n = json_u64(x, field)?;
        samples(field, n, run_ns, MIN_SAMPLE_SPACING_NS).map(|()| n)
    };
    let latency = |x: &Value, field: &str| json_u64(x, field).and_then(|ns| latency_ns(field, ns));
    match v {
        Value::Object(o) => {
            // A `Summary` (`min_ns`, ...) or a demo's `TimeSummary` (`min`, ..., in ns).
            for unit in ["_ns", ""] {
                let key = |k: &str| format!("{k}{unit}");
                if !(o.contains_key("count")
                    && ["min", "max", "p50"]
                        .iter()
                        .all(|k| o.contains_key(&key(k))))
                {
                    continue;
                }
                count(&o["count"], &format!("{path}.count"))?;
                for k in ["min", "p50", "p90", "p99", "p99_9", "p99_99", "max"] {
                    if let Some(x) = o.get(&key(k)) {
                        latency(x, &format!("{path}.{}", key(k)))?;
                    }
                }
                if let Some(mean) = o.get(&key("mean")).and_then(Value::as_f64) {
                    if !(0.0..=MAX_LATENCY_NS as f64).contains(&mean) {
                        bail!(
                            "{path}.{} = {mean} is not a plausible latency (negative or above \
                             one hour)",
                            key("mean")
                        );
                    }
                }
            }
            // rtio-bench cells: `latency_p50_ns`, ..., and samples within `duration_ns`.
            for (k, x) in o {
                if k.starts_with("latency_") && k.ends_with("_ns") && x.is_number() {
                    latency(x, &format!("{path}.{k}"))?;
                }
            }
            if let Some(n) = o.get("samples_processed") {
                let field = format!("{path}.samples_processed");
                let cell_ns = o
                    .get("duration_ns")
                    .and_then(Value::as_u64)
                    .filter(|ns| *ns > 0);
                samples(
                    &field,
                    json_u64(n, &field)?,
                    cell_ns.or(run_ns),
                    MIN_SAMPLE_SPACING_NS,
                )?;
            }
            if let Some(buckets) = o.get("buckets").and_then(Value::as_array) {
                let mut sum = 0u64;
                for (i, b) in buckets.iter().enumerate() {
                    let at = format!("{path}.buckets[{i}]");
                    if let Some(x) = b.get("lower_ns") {
                        latency(x, &format!("{at}.lower_ns"))?;
                    }
                    if let Some(x) = b.get("count") {
                        let n = count(x, &format!("{at}.count"))?;
                        sum = sum.saturating_add(n);
                    }
                }
                samples(
                    &format!("{path}.buckets (summed)"),
                    sum,
                    run_ns,
                    MIN_SAMPLE_SPACING_NS,
                )?;
            }
            if let Some(worst) = o.get("worst").and_then(Value::as_array) {
                for (i, w) in worst.iter().enumerate() {
                    if let Some(x) = w.get("value_ns") {
                        latency(x, &format!("{path}.worst[{i}].value_ns"))?;
                    }
                }
            }
            for (k, x) in o {
                if x.is_object() || x.is_array() {
                    walk(x, &format!("{path}.{k}"), run_ns)?;
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                if x.is_object() || x.is_array() {
                    walk(x, &format!("{path}[{i}]"), run_ns)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// `ns` in the largest unit that keeps it readable, for the messages above.
fn human(ns: u64) -> String {
    const YEAR_NS: f64 = 365.25 * 86_400e9;
    let f = ns as f64;
    if f >= YEAR_NS {
        format!("{:.0} years", f / YEAR_NS)
    } else if f >= 86_400e9 {
        format!("{:.1} days", f / 86_400e9)
    } else if f >= 3_600e9 {
        format!("{:.1} h", f / 3_600e9)
    } else if f >= 1e9 {
        format!("{:.1} s", f / 1e9)
    } else {
        format!("{:.1} ms", f / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hour_is_the_latency_bound() {
        assert!(latency_ns("max_ns", MAX_LATENCY_NS).is_ok());
        let e = latency_ns("max_ns", MAX_LATENCY_NS + 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_ns = 3600000000001 ns (1.0 h)"), "{e}");
        assert_eq!(latency_us("max", 3_600_000_000).unwrap(), MAX_LATENCY_NS);
        let e = latency_us("max", u64::MAX).unwrap_err().to_string();
        assert!(
            e.contains("max = 18446744073709551615 us (585 years)"),
            "{e}"
        );
    }

    #[test]
    fn counts_are_bounded_by_the_run_length() {
        // A 10 s run at 1 ms: 10 001 samples at most.
        assert!(samples("count", 10_001, Some(10_000_000_000), 1_000_000).is_ok());
        let e = samples("count", 10_002, Some(10_000_000_000), 1_000_000)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("count = 10002 samples") && e.contains("10.0 s"),
            "{e}"
        );
        // No length: a year at cyclictest's 1 us is 3.2e13; 10^15 is refused.
        assert!(samples("bucket", 10u64.pow(13), None, CYCLICTEST_MIN_INTERVAL_NS).is_ok());
        let e = samples("bucket", 10u64.pow(15), None, CYCLICTEST_MIN_INTERVAL_NS)
            .unwrap_err()
            .to_string();
        assert!(e.contains("up to a year"), "{e}");
    }

    /// Every shape of distribution a result kind writes is bounded: preempt's `Summary`, the
    /// demos' `TimeSummary`, rtio-bench's flat cell figures and histogram buckets.
    #[test]
    fn every_summary_shape_of_a_result_is_checked() {
        let file =
            |data: Value| serde_json::json!({ "elapsed_ns": 1_000_000_000u64, "data": data });
        let ok = serde_json::json!({
            "a": { "count": 10, "min_ns": 1, "p50_ns": 2, "max_ns": 3, "mean_ns": 2.0 },
            "b": { "count": 10, "min": 1, "p50": 2, "max": 3, "mean": 2 },
            "c": [{ "latency_p99_ns": 5, "samples_processed": 10, "duration_ns": 100 }],
            "d": { "buckets": [{ "lower_ns": 1, "upper_ns": 1, "count": 10 }] },
        });
        result_value(&file(ok.clone())).unwrap();
        for (at, to, says) in [
            (
                "/a/max_ns",
                serde_json::json!(u64::MAX),
                "data.a.max_ns = 18446744073709551615 ns",
            ),
            ("/a/mean_ns", serde_json::json!(-1.0), "data.a.mean_ns = -1"),
            (
                "/b/max",
                serde_json::json!(MAX_LATENCY_NS + 1),
                "data.b.max = 3600000000001 ns",
            ),
            (
                "/b/count",
                serde_json::json!(2_000_000_000u64),
                "data.b.count = 2000000000 samples",
            ),
            (
                "/c/0/latency_p99_ns",
                serde_json::json!(-5),
                "data.c[0].latency_p99_ns = -5 is negative",
            ),
            (
                "/c/0/samples_processed",
                serde_json::json!(102),
                "data.c[0].samples_processed = 102",
            ),
            (
                "/d/buckets/0/count",
                serde_json::json!(1e16),
                "data.d.buckets[0].count = 10000000000000000",
            ),
        ] {
            let mut v = ok.clone();
            *v.pointer_mut(at).unwrap() = to;
            let e = format!("{:#}", result_value(&file(v)).unwrap_err());
            assert!(e.contains(says), "{at}: {e}");
        }
    }
}
