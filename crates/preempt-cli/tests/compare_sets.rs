//! `preempt compare A1 … -- B1 …`: two sets of replicated runs (issue 38, item 1). A clear
//! shift is `worse` (exit 5) or `better`, identical settings are never either, two runs a side
//! are `inconclusive` with the runs needed (exit 6), one run a side keeps the side-by-side
//! table and says it cannot separate an effect from noise; `--json`, directories, history run
//! ids and bad usage.
//!
//! The fixtures are `preempt latency` result files written by the test: the sample run with
//! each thread's histogram drawn afresh from a seed, so every run's p50/p99/p99.9/max differ a
//! little, as replicated runs do.

use std::path::Path;

use assert_cmd::Command;
use preempt_cli::history::History;
use preempt_cli::report::sample;
use preempt_cli::results::{ResultFile, RunResult};
use serde_json::Value;

mod support;
use support::write_result as write;

/// A latency run whose samples sit at `base_ns` and above, drawn from `seed`.
fn run(base_ns: u64, seed: u64, missed: u64) -> ResultFile {
    let mut f = sample::latency(false);
    let RunResult::Latency(l) = &mut f.result else {
        unreachable!("sample::latency is a latency result")
    };
    for (cpu, t) in l.threads.iter_mut().enumerate() {
        t.latency = sample::distribution(seed * 2 + cpu as u64, 5_000, base_ns, 0);
        t.missed_periods = missed;
    }
    l.latency_all = l.threads[0].latency.summary;
    f
}

/// `n` runs at `base_ns` with seeds from `first_seed`, written as `dir/{prefix}{i}.json`.
fn side(dir: &Path, prefix: &str, n: u64, base_ns: u64, first_seed: u64) -> Vec<String> {
    (0..n)
        .map(|i| {
            let p = write(
                dir,
                &format!("{prefix}{i}.json"),
                &run(base_ns, first_seed + i, 0),
            );
            p.to_str().unwrap().to_string()
        })
        .collect()
}

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn compare(dir: &Path, args: &[&str]) -> Out {
    let o = Command::cargo_bin("preempt")
        .unwrap()
        .arg("compare")
        .args(["--history-db", dir.join("h.sqlite").to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    Out {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn sets(dir: &Path, a: &[String], b: &[String], extra: &[&str]) -> Out {
    let mut args: Vec<&str> = extra.to_vec();
    args.extend(a.iter().map(String::as_str));
    args.push("--");
    args.extend(b.iter().map(String::as_str));
    compare(dir, &args)
}

fn json(o: &Out) -> Vec<Value> {
    serde_json::from_str::<Vec<Value>>(&o.stdout)
        .unwrap_or_else(|e| panic!("--json output is a JSON array ({e}): {}", o.stdout))
}

fn verdict<'a>(ds: &'a [Value], figure: &str, metric: &str) -> &'a str {
    ds.iter()
        .find(|d| d["figure"] == figure && d["metric"] == metric)
        .unwrap_or_else(|| panic!("no {figure} {metric} in {ds:?}"))["verdict"]
        .as_str()
        .unwrap()
}

#[test]
fn five_against_five_with_a_doubled_latency_is_worse_and_exits_5() {
    let d = tempfile::tempdir().unwrap();
    let a = side(d.path(), "a", 5, 4_000, 1);
    let b = side(d.path(), "b", 5, 8_000, 101);
    let o = sets(d.path(), &a, &b, &["--json", "--only", "latency/all"]);
    assert_eq!(o.code, Some(5), "{}{}", o.stdout, o.stderr);
    let ds = json(&o);
    for m in ["p50", "p99", "p99.9", "max"] {
        assert_eq!(verdict(&ds, "latency/all", m), "worse", "{m}: {ds:?}");
    }
    let p50 = ds.iter().find(|d| d["metric"] == "p50").unwrap();
    // Every B run above every A run: the smallest p of 5 and 5, 2/252.
    assert!((p50["p_value"].as_f64().unwrap() - 2.0 / 252.0).abs() < 1e-12);
    let rel = p50["shift_rel"].as_f64().unwrap();
    assert!((0.8..1.2).contains(&rel), "about +100 %: {rel}");
    // The same runs the other way round: better, exit 0 (missed periods: 0 and 0, equivalent).
    let o = sets(d.path(), &b, &a, &["--json", "--only", "latency/all"]);
    assert_eq!(o.code, Some(0), "{}{}", o.stdout, o.stderr);
    let ds = json(&o);
    assert_eq!(verdict(&ds, "latency/all", "p99.9"), "better");
    assert_eq!(verdict(&ds, "latency/all", "missed"), "equivalent");
}

#[test]
fn identical_settings_are_never_worse_or_better() {
    let d = tempfile::tempdir().unwrap();
    let a = side(d.path(), "a", 6, 4_000, 1);
    let b = side(d.path(), "b", 6, 4_000, 201);
    let o = sets(d.path(), &a, &b, &["--json"]);
    assert!(matches!(o.code, Some(0 | 6)), "{}{}", o.stdout, o.stderr);
    let ds = json(&o);
    assert!(
        ds.len() >= 15,
        "latency/all, cpu0, cpu1 × 5 metrics: {ds:?}"
    );
    for d in &ds {
        let v = d["verdict"].as_str().unwrap();
        assert!(v == "equivalent" || v == "inconclusive", "{d}");
    }
    // The median of a histogram of 10,000 samples barely moves between seeds.
    assert_eq!(verdict(&ds, "latency/all", "p50"), "equivalent");
}

#[test]
fn two_runs_a_side_are_inconclusive_with_the_runs_needed_and_exit_6() {
    let d = tempfile::tempdir().unwrap();
    let a = side(d.path(), "a", 2, 4_000, 1);
    let b = side(d.path(), "b", 2, 8_000, 101);
    let o = sets(d.path(), &a, &b, &["--only", "latency/all"]);
    assert_eq!(o.code, Some(6), "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains("inconclusive: need 3 more runs a side"),
        "a doubled latency needs only the minimum of 5: {}",
        o.stdout
    );
    assert!(
        !o.stdout.lines().any(|l| l.ends_with("  worse")),
        "{}",
        o.stdout
    );
    let ds = json(&sets(
        d.path(),
        &a,
        &b,
        &["--json", "--only", "latency/all"],
    ));
    for d in &ds {
        assert_eq!(d["verdict"], "inconclusive", "{d}");
        assert_eq!(d["ci95"], Value::Null, "no 95 % interval from 2 and 2: {d}");
        assert_eq!(d["need_runs"], 5, "{d}");
    }
}

#[test]
fn one_run_a_side_keeps_the_side_by_side_table_and_says_it_is_noise() {
    let d = tempfile::tempdir().unwrap();
    let a = side(d.path(), "a", 1, 4_000, 1);
    let b = side(d.path(), "b", 1, 8_000, 101);
    let old = compare(d.path(), &[&a[0], &b[0]]);
    let new = sets(d.path(), &a, &b, &[]);
    assert_eq!(old.code, Some(0), "{}", old.stderr);
    assert_eq!(new.code, Some(0), "{}", new.stderr);
    assert_eq!(new.stdout, old.stdout, "the table of today");
    assert!(old.stdout.contains("ratio") && old.stdout.contains("latency/all"));
    for o in [&old, &new] {
        assert!(
            o.stderr
                .contains("one run per side cannot separate an effect from noise"),
            "{}",
            o.stderr
        );
    }
    // --json as before: rows with ratios, not verdicts.
    let j: Value = serde_json::from_str(&sets(d.path(), &a, &b, &["--json"]).stdout).unwrap();
    assert!(j["rows"].is_array(), "{j}");
}

#[test]
fn json_has_one_object_per_figure_and_metric_with_the_issue_fields() {
    let d = tempfile::tempdir().unwrap();
    let a = side(d.path(), "a", 5, 4_000, 1);
    let b = side(d.path(), "b", 7, 4_400, 301);
    let ds = json(&sets(
        d.path(),
        &a,
        &b,
        &["--json", "--metrics", "p99.9,max", "--only", "latency/all"],
    ));
    let metrics: Vec<&str> = ds.iter().map(|d| d["metric"].as_str().unwrap()).collect();
    assert_eq!(metrics, ["p99.9", "max", "missed"]);
    for d in &ds {
        for k in [
            "metric", "verdict", "shift", "ci95", "p_value", "runs_a", "runs_b",
        ] {
            assert!(d.get(k).is_some(), "{k} missing: {d}");
        }
        assert_eq!(
            (d["runs_a"].as_u64(), d["runs_b"].as_u64()),
            (Some(5), Some(7))
        );
        let [lo, hi] = [0, 1].map(|i| d["ci95"][i].as_f64().unwrap());
        let shift = d["shift"].as_f64().unwrap();
        assert!(lo <= shift && shift <= hi, "{d}");
        let p = d["p_value"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&p), "{d}");
    }
}

#[test]
fn directories_and_history_ids_give_the_same_verdicts_as_files() {
    let d = tempfile::tempdir().unwrap();
    let a = side(&d.path().join("A"), "r", 5, 4_000, 1);
    let b = side(&d.path().join("B"), "r", 5, 8_000, 101);
    let only = ["--json", "--only", "latency/all"];
    let files = json(&sets(d.path(), &a, &b, &only));
    let dirs = sets(
        d.path(),
        &[d.path().join("A").to_str().unwrap().to_string()],
        &[d.path().join("B").to_str().unwrap().to_string()],
        &only,
    );
    assert_eq!(dirs.code, Some(5), "{}", dirs.stderr);
    assert_eq!(json(&dirs), files, "a directory is one run per result file");
    let db = History::open(&d.path().join("h.sqlite")).unwrap();
    let host = preempt_io::sys::kernel::uname().unwrap().nodename;
    let mut ids = Vec::new();
    for p in a.iter().chain(&b) {
        let mut f: ResultFile = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        // Recorded here, for `last:N`.
        f.sysinfo.hostname = host.clone();
        ids.push(db.record(&f, None).unwrap());
    }
    let one = |i: &[i64]| i.iter().map(|i| format!("run:{i}")).collect::<Vec<_>>();
    let hist = sets(d.path(), &one(&ids[..5]), &one(&ids[5..]), &only);
    assert_eq!(hist.code, Some(5), "{}", hist.stderr);
    assert_eq!(json(&hist), files, "history run ids");
    // Queries: a range of ids, and the newest runs of this host.
    let range = format!("run:{}-{}", ids[0], ids[4]);
    let last = sets(d.path(), &[range], &["last:5:latency".to_string()], &only);
    assert_eq!(last.code, Some(5), "{}", last.stderr);
    assert_eq!(json(&last), files, "run:A-B and last:N:KIND");
    let o = sets(d.path(), &["last:11".to_string()], &one(&ids[5..]), &only);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains("holds 10 runs of this host"),
        "{}",
        o.stderr
    );
    let o = sets(
        d.path(),
        &["run:900-999".to_string()],
        &one(&ids[5..]),
        &only,
    );
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains("no stored run has an id from 900 to 999"),
        "{}",
        o.stderr
    );
}

#[test]
fn every_exit_code_table_lists_6_for_inconclusive() {
    assert_eq!(preempt_cli::error::EXIT_INCONCLUSIVE, 6);
    let help = |args: &[&str]| {
        let o = Command::cargo_bin("preempt")
            .unwrap()
            .args(args)
            .output()
            .unwrap();
        // Unwrapped: clap wraps the text to the terminal's width.
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let top = help(&["--help"]);
    assert!(
        top.contains("6 `preempt compare A… -- B…` found a metric inconclusive"),
        "{top}"
    );
    let cmp = help(&["compare", "--help"]);
    assert!(cmp.contains("6 a set comparison was inconclusive"), "{cmp}");
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/MEASURING.md"),
    )
    .unwrap();
    assert!(
        doc.contains("| 6 | `preempt compare A… -- B…` found a metric `inconclusive`"),
        "docs/MEASURING.md's exit-code table"
    );
}

#[test]
fn bad_set_usage_exits_2_naming_the_flag() {
    let d = tempfile::tempdir().unwrap();
    let a = side(d.path(), "a", 5, 4_000, 1);
    let b = side(d.path(), "b", 5, 4_000, 101);
    for (extra, needle) in [
        (vec!["--gate", "p99.9=-10%"], "--gate"),
        (vec!["--gate", "p98=+10%"], "unknown metric"),
        (vec!["--baseline", a[0].as_str()], "--gate METRIC=MARGIN"),
        (vec!["--html", "x.html"], "--html"),
    ] {
        let o = sets(d.path(), &a, &b, &extra);
        assert_eq!(o.code, Some(2), "{extra:?}: {}", o.stderr);
        assert!(o.stderr.contains(needle), "{extra:?}: {}", o.stderr);
    }
    let o = compare(d.path(), &["--gate", "max=+25%", &a[0], &b[0]]);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.stderr.contains("two sets of runs"), "{}", o.stderr);
    // Flags are checked before any run is read.
    let o = compare(
        d.path(),
        &["--gate", "p99=x", "no-a.json", "--", "no-b.json"],
    );
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.stderr.contains("--gate 'p99=x'"), "{}", o.stderr);
    let o = compare(d.path(), &["--", &b[0], &b[1]]);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.stderr.contains("no runs before `--`"), "{}", o.stderr);
}

#[test]
fn a_wide_gate_makes_a_small_shift_equivalent_and_a_narrow_one_worse() {
    let d = tempfile::tempdir().unwrap();
    let a = side(d.path(), "a", 5, 4_000, 1);
    // +25 %: beyond p50's default 5 % margin, inside a 60 % one.
    let b = side(d.path(), "b", 5, 5_000, 101);
    let base = ["--json", "--only", "latency/all", "--metrics", "p50"];
    let ds = json(&sets(d.path(), &a, &b, &base));
    assert_eq!(verdict(&ds, "latency/all", "p50"), "worse");
    let mut wide = base.to_vec();
    wide.extend(["--gate", "p50=+60%"]);
    let o = sets(d.path(), &a, &b, &wide);
    assert_eq!(o.code, Some(0), "{}", o.stdout);
    assert_eq!(verdict(&json(&o), "latency/all", "p50"), "equivalent");
}
