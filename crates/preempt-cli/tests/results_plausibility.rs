//! Issue 40, item 4: implausible imports are refused. A cyclictest log with
//! `# Max Latencies: 18446744073709551615` was reported as a 584 000-year maximum with "No
//! problem found", `compare` printed a 3.3e12x ratio, a bucket of 10^15 samples passed, and a
//! value past 64 bits or negative was "no '# Max Latencies:' line" though the line is there.
//!
//! Each case runs the real binary (`report`, `compare`, `history import`) and checks a nonzero
//! exit and a message naming the line or field and the value; an ordinary cyclictest log is
//! still accepted.

use std::path::{Path, PathBuf};
use std::process::Output;

mod support;

const HIST: &str = include_str!("../src/results/testdata/cyclictest-2.40-h.txt");
const JSON: &str = include_str!("../src/results/testdata/cyclictest-2.40.json");
const MICRO: &str = include_str!("fixtures/micro-v1.json");
const MAX_LINE: &str = "# Max Latencies: 04756 05574";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn run(dir: &Path, args: &[&str], files: &[&Path]) -> Output {
    support::preempt_in(dir)
        .args(args)
        .args(files)
        .output()
        .unwrap()
}

/// `report` and `compare` of `bad` (against the real log) both fail with exit 1 and every one
/// of `needles` on stderr.
#[track_caller]
fn refused(dir: &Path, bad: &Path, needles: &[&str]) {
    let good = write(dir, "good.txt", HIST);
    let out = dir.join("report");
    let o = run(
        dir,
        &["report", "--no-png", "-o", out.to_str().unwrap()],
        &[bad],
    );
    let stderr = support::exits(&o, 1, needles);
    assert!(
        !stderr.contains("no '# Max Latencies:' line"),
        "the line is there: {stderr}"
    );
    assert!(!out.join("index.html").exists(), "no report of bad input");
    let o = run(dir, &["compare"], &[&good, bad]);
    support::exits(&o, 1, needles);
}

#[test]
fn an_ordinary_cyclictest_log_is_still_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.txt", HIST);
    let json = write(dir.path(), "good.json", JSON);
    let out = dir.path().join("report");
    let o = run(
        dir.path(),
        &["report", "--no-png", "-o", out.to_str().unwrap()],
        &[&good],
    );
    support::exits(&o, 0, &[]);
    assert!(out.join("index.html").exists());
    let o = run(dir.path(), &["compare"], &[&good, &json]);
    support::exits(&o, 0, &[]);
}

#[test]
fn u64_max_max_latency_is_refused_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "max.txt",
        &HIST.replace(MAX_LINE, "# Max Latencies: 18446744073709551615 05574"),
    );
    refused(
        dir.path(),
        &bad,
        &[
            "line 206: '# Max Latencies:' of thread 0 = 18446744073709551615 us",
            "not a plausible latency",
        ],
    );
}

#[test]
fn overflowing_and_negative_values_name_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let over = write(
        dir.path(),
        "over.txt",
        &HIST.replace(MAX_LINE, "# Max Latencies: 184467440737095516150 05574"),
    );
    refused(
        dir.path(),
        &over,
        &["line 206", "184467440737095516150 does not fit in 64 bits"],
    );
    let neg = write(
        dir.path(),
        "neg.txt",
        &HIST.replace(MAX_LINE, "# Max Latencies: -4756 05574"),
    );
    refused(dir.path(), &neg, &["line 206", "-4756 is negative"]);
}

#[test]
fn a_bucket_of_ten_to_the_fifteen_samples_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bucket.txt",
        &HIST
            .replace("000007 000011\t", "000007 1000000000000000\t")
            .replace("# Total: 000000297", "# Total: 1000000000000286"),
    );
    refused(
        dir.path(),
        &bad,
        &["line 10: bucket 7 of thread 0 = 1000000000000000 samples"],
    );
    let json = write(
        dir.path(),
        "bucket.json",
        &JSON.replacen("\"7\": 11", "\"7\": 1000000000000000", 1),
    );
    refused(
        dir.path(),
        &json,
        &["histogram count for 7 = 1000000000000000 samples"],
    );
}

#[test]
fn cyclictest_json_with_u64_max_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "max.json",
        &JSON.replacen("\"max\": 4756", "\"max\": 18446744073709551615", 1),
    );
    refused(
        dir.path(),
        &bad,
        &["thread 0: \"max\" = 18446744073709551615 us"],
    );
}

#[test]
fn history_import_refuses_an_implausible_preempt_result() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(MICRO).unwrap();
    v["data"]["benches"][0]["ns"]["summary"]["max_ns"] = u64::MAX.into();
    let bad = write(dir.path(), "max.json", &v.to_string());
    let o = run(dir.path(), &["history", "import"], &[&bad]);
    support::exits(
        &o,
        1,
        &["data.benches[0].ns.summary.max_ns = 18446744073709551615 ns"],
    );
    let mut v: serde_json::Value = serde_json::from_str(MICRO).unwrap();
    v["data"]["benches"][0]["ns"]["histogram"]["buckets"][0]["count"] =
        1_000_000_000_000_000u64.into();
    let bad = write(dir.path(), "bucket.json", &v.to_string());
    let o = run(dir.path(), &["history", "import"], &[&bad]);
    support::exits(&o, 1, &["buckets[0].count = 1000000000000000 samples"]);
    // Nothing was recorded; the real file still is.
    let good = write(dir.path(), "good.json", MICRO);
    let o = run(dir.path(), &["history", "import"], &[&good]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("recorded as run #1"));
}
