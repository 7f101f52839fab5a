//! `preempt tail` end to end (issue 39, first slice): the plan, a text file of latencies, its
//! bad lines, `--json`, and a latency result's histogram. The numbers are checked against
//! closed forms and against `preempt_stats::tail` (itself checked against scipy in
//! `crates/preempt-stats/tests/tail_scipy.rs`).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use preempt_stats::tail::{CONFIDENCE_95, upper_bound};
use serde_json::Value;

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_preempt");

fn preempt() -> Command {
    let mut c = Command::new(BIN);
    c.env("PREEMPT_HISTORY", support::test_history());
    c.env_remove("RUST_BACKTRACE");
    c
}

/// Runs `preempt tail <args>`: (exit code, stdout, stderr).
fn tail(args: &[&str]) -> (i32, String, String) {
    let out = preempt().arg("tail").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(args: &[&str]) -> Value {
    let (code, stdout, stderr) = tail(args);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// 100 000 cycles at about 50 µs with 100 stalls of two late samples each (180 µs), at
/// exponential gaps of mean 1000 cycles (uniforms from the golden-ratio sequence): θ ≈ 1/2.
fn clustered_run() -> (String, Vec<u64>) {
    let mut late = Vec::new();
    let mut t = 0u64;
    for i in 1..=100 {
        let u = (f64::from(i) * 0.618_033_988_75).fract();
        t += 3 + (-1000.0 * u.ln()) as u64;
        late.extend([t, t + 1]);
    }
    let text: String = (0..100_000u64)
        .map(|c| {
            if late.binary_search(&c).is_ok() {
                "180000\n".to_string()
            } else {
                format!("{}\n", 50_000 + c % 7)
            }
        })
        .collect();
    (text, late)
}

#[test]
fn plan_1e9_at_1khz_needs_3e9_cycles_and_34_7_days() {
    let (code, stdout, stderr) = tail(&["--plan", "1e-9@1kHz"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("2995732273 cycles"), "{stdout}");
    assert!(stdout.contains("34.7 days at 1 kHz"), "{stdout}");
    let v = json(&["--plan", "1e-9@10kHz", "--json"]);
    assert_eq!(v["plan"]["cycles"], 2_995_732_273u64);
    let days = v["plan"]["days"].as_f64().unwrap();
    assert!((days - 3.467).abs() < 0.001, "{days}");
}

#[test]
fn bad_plan_values_exit_2_naming_the_value() {
    for (arg, names) in [
        ("1e-9@fast", "'fast' is not a rate"),
        ("often@1kHz", "'often' is not a probability"),
        ("1.5@1kHz", "must be between 0 and 1"),
        ("1e-9@-3kHz", "must be a positive rate"),
    ] {
        let (code, _, stderr) = tail(&["--plan", arg]);
        assert_eq!(code, 2, "{arg}: {stderr}");
        assert!(stderr.contains(names), "{arg}: {stderr}");
        assert!(stderr.starts_with("preempt: "), "{stderr}");
    }
}

#[test]
fn text_file_without_exceedances_gives_the_exact_bound_and_per_hour() {
    let d = tempfile::tempdir().unwrap();
    let text: String = (0..3000)
        .map(|i| format!("{}\n", 40_000 + i % 13))
        .collect();
    let p = write(d.path(), "lat.txt", &text);
    let v = json(&[
        p.to_str().unwrap(),
        "--deadline",
        "100us",
        "--rate",
        "1kHz",
        "--json",
    ]);
    let df = &v["distribution_free"];
    assert_eq!(df["cycles"], 3000);
    assert_eq!(df["exceedances"], 0);
    assert_eq!(df["deadline_ns"], 100_000);
    assert_eq!(df["assumes_independence"], true);
    assert!(df["extremal_index"].is_null());
    assert!(
        df["extremal_index_why"]
            .as_str()
            .unwrap()
            .contains("0 exceedances")
    );
    let u = df["upper_bound"].as_f64().unwrap();
    let closed_form = 1.0 - 0.05f64.powf(1.0 / 3000.0);
    assert!(
        (u / closed_form - 1.0).abs() < 1e-12,
        "{u} vs {closed_form}"
    );
    let h = df["per_hour_upper"].as_f64().unwrap();
    assert!((h / (u * 1000.0 * 3600.0) - 1.0).abs() < 1e-12);
    assert!(df["per_hour_why"].is_null());
}

#[test]
fn clustered_stalls_are_declustered_and_lower_the_effective_cycles() {
    let d = tempfile::tempdir().unwrap();
    let (text, late) = clustered_run();
    let p = write(d.path(), "lat.txt", &text);
    let v = json(&[p.to_str().unwrap(), "--deadline", "100us", "--json"]);
    let df = &v["distribution_free"];
    assert_eq!(df["cycles"], 100_000);
    assert_eq!(df["exceedances"], late.len());
    assert_eq!(df["clusters"], 100);
    let theta = df["extremal_index"].as_f64().unwrap();
    assert!((theta - 0.5).abs() < 0.02, "{theta}");
    // Every stall is 2 cycles: 100 independent events in half the cycles.
    let eff = df["effective_cycles"].as_u64().unwrap();
    assert_eq!(eff, 50_000);
    assert_eq!(df["events"], 100);
    let want = upper_bound(100, eff, CONFIDENCE_95).unwrap();
    assert_eq!(df["upper_bound"].as_f64().unwrap(), want);
    // No rate: no per-hour figure, and it says why.
    assert!(df["per_hour_upper"].is_null());
    assert!(df["per_hour_why"].as_str().unwrap().contains("--rate"));

    let (code, stdout, _) = tail(&[p.to_str().unwrap(), "--deadline", "100us"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("100 clusters"), "{stdout}");
    assert!(stdout.contains("per hour of operation"), "{stdout}");
    assert!(
        stdout.contains("not stated: the rate is unknown"),
        "{stdout}"
    );
}

#[test]
fn bad_lines_are_refused_naming_the_line() {
    let d = tempfile::tempdir().unwrap();
    for (text, names) in [
        ("100\n200\nabc\n", "line 3: 'abc' is not a number"),
        ("100\n-5\n", "line 2: '-5' is negative"),
        (
            "1\n2\n3\n18446744073709551616\n",
            "line 4: '18446744073709551616' overflows",
        ),
        ("100\n12.5\n", "line 2: '12.5' is not a whole number"),
    ] {
        let p = write(d.path(), "bad.txt", text);
        let (code, stdout, stderr) = tail(&[p.to_str().unwrap(), "--deadline", "100us"]);
        // Malformed content is a failed run (1), as for a corrupt result in `report`; a
        // missing file is bad usage (2, below).
        assert_eq!(code, 1, "{text:?} must be refused");
        assert!(stdout.is_empty(), "no statement from bad input: {stdout}");
        assert!(stderr.contains(names), "{text:?}: {stderr}");
        assert!(stderr.contains("bad.txt"), "{stderr}");
    }
}

#[test]
fn usage_errors_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "lat.txt", "1\n2\n");
    let file = p.to_str().unwrap();
    for (args, names) in [
        (vec![file], "needs --deadline"),
        (vec![file, "--deadline", "100"], "has no unit"),
        (
            vec![file, "--deadline", "100us", "--rate", "fast"],
            "--rate 'fast'",
        ),
        (
            vec!["/nonexistent/lat.txt", "--deadline", "1us"],
            "no such file",
        ),
    ] {
        let (code, _, stderr) = tail(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?}: {stderr}");
    }
    let (code, _, _) = tail(&[]);
    assert_eq!(code, 2);
}

#[test]
fn latency_result_histogram_counts_exactly_at_a_bucket_boundary() {
    let d = tempfile::tempdir().unwrap();
    let (_, bytes) = preempt_cli::report::sample::all()
        .into_iter()
        .find(|(n, _)| n == "latency-idle.json")
        .unwrap();
    let p = d.path().join("latency.json");
    std::fs::write(&p, &bytes).unwrap();
    let result: Value = serde_json::from_slice(&bytes).unwrap();
    let threads = result["data"]["threads"].as_array().unwrap();
    let buckets: Vec<(u64, u64, u64)> = threads
        .iter()
        .flat_map(|t| {
            t["latency"]["histogram"]["buckets"]
                .as_array()
                .unwrap()
                .clone()
        })
        .map(|b| {
            (
                b["lower_ns"].as_u64().unwrap(),
                b["upper_ns"].as_u64().unwrap(),
                b["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let missed: u64 = threads
        .iter()
        .map(|t| t["missed_periods"].as_u64().unwrap())
        .sum();
    let cycles: u64 = buckets.iter().map(|b| b.2).sum::<u64>() + missed;
    // D = the top of a wide bucket in the upper part: a boundary.
    let &(lower, upper, _) = buckets
        .iter()
        .rev()
        .find(|b| b.1 > b.0)
        .expect("a bucket wider than 1 ns");
    let above = |d: u64| buckets.iter().filter(|b| b.0 > d).map(|b| b.2).sum::<u64>();
    let at = format!("{upper}ns");
    let df = json(&[p.to_str().unwrap(), "--deadline", &at, "--json"])["distribution_free"].clone();
    assert_eq!(df["cycles"], cycles);
    assert_eq!(df["exceedances"], above(upper) + missed);
    assert_eq!(df["exceedances_exact"], true);
    assert!(
        df["extremal_index_why"].as_str().unwrap().contains("order") || above(upper) + missed < 2
    );
    // The rate comes from the result's interval and threads.
    assert!(df["rate_hz"].as_f64().unwrap() > 0.0);
    // D inside that bucket: the bucket is counted whole, and said to be.
    let inside = format!("{lower}ns");
    let df =
        json(&[p.to_str().unwrap(), "--deadline", &inside, "--json"])["distribution_free"].clone();
    assert_eq!(df["exceedances_exact"], false);
    assert!(df["exceedances"].as_u64().unwrap() >= above(upper) + missed);
}
