//! `preempt compare`: two saved runs side by side, the regression gate naming the failed
//! figure with its exit code, cyclictest imports against preempt results, history run ids,
//! and bad input.

use std::path::Path;

use preempt_cli::cli::{CompareArgs, HistoryArgs};
use preempt_cli::compare::{self, EXIT_REGRESSION};
use preempt_cli::error::exit_code_of;
use preempt_cli::history::History;
use preempt_cli::report::sample;

mod support;

fn args(runs: &[&str], db: &Path) -> CompareArgs {
    CompareArgs {
        allow_partial: false,
        runs: runs.iter().map(|s| s.to_string()).collect(),
        against: vec![],
        gate: vec![],
        baseline: None,
        max_ratio: vec![],
        metrics: vec!["p50".into(), "p99".into(), "max".into()],
        only: vec![],
        html: None,
        json: false,
        history: HistoryArgs {
            history_db: Some(db.to_path_buf()),
            no_history: false,
        },
    }
}

use support::write_result as write;

#[test]
fn two_saved_runs_side_by_side_with_html() {
    let d = tempfile::tempdir().unwrap();
    let idle = write(d.path(), "idle.json", &sample::latency(false));
    let stress = write(d.path(), "stress.json", &sample::latency(true));
    let mut a = args(
        &[idle.to_str().unwrap(), stress.to_str().unwrap()],
        &d.path().join("h.sqlite"),
    );
    a.html = Some(d.path().join("cmp.html"));
    assert_eq!(preempt_cli::app::compare::run(&a).unwrap(), 0);
    let runs: Vec<compare::Run> = a
        .runs
        .iter()
        .map(|r| compare::load_run(r, &a.history.config()).unwrap())
        .collect();
    let rows = compare::rows(&runs, &[compare::Metric::P99], &[]);
    let all = rows.iter().find(|r| r.figure == "latency/all").unwrap();
    let (i, s) = (all.values_ns[0].unwrap(), all.values_ns[1].unwrap());
    assert!((all.ratios[1].unwrap() - s / i).abs() < 1e-9);
    let html = std::fs::read_to_string(d.path().join("cmp.html")).unwrap();
    assert!(
        html.contains("Overlaid histograms") && html.matches("<svg").count() >= 3,
        "latency/all, cpu0, cpu1"
    );
}

#[test]
fn regression_gate_fails_naming_the_figure_and_passes_within_tolerance() {
    let d = tempfile::tempdir().unwrap();
    let base = write(d.path(), "base.json", &sample::latency(false));
    let worse = write(d.path(), "worse.json", &sample::latency(true));
    let mut a = args(&[worse.to_str().unwrap()], &d.path().join("h.sqlite"));
    a.baseline = Some(base.to_str().unwrap().into());
    a.max_ratio = vec!["p99=1.2".into()];
    assert_eq!(preempt_cli::app::compare::run(&a).unwrap(), EXIT_REGRESSION);
    let runs = [
        compare::load_run(&a.baseline.clone().unwrap(), &a.history.config()).unwrap(),
        compare::load_run(&a.runs[0], &a.history.config()).unwrap(),
    ];
    let (reg, _) = compare::gate(&runs[0], &runs[1], &[(compare::Metric::P99, 1.2)]);
    assert!(
        reg.iter()
            .any(|r| r.figure == "latency/all" && r.metric == compare::Metric::P99),
        "{reg:?}"
    );
    // Same file as baseline and run: no regression.
    a.runs = vec![base.to_str().unwrap().into()];
    a.max_ratio = vec!["p99=1.0".into(), "max=1.0".into()];
    assert_eq!(preempt_cli::app::compare::run(&a).unwrap(), 0);
}

#[test]
fn cyclictest_json_and_histogram_compare_with_preempt() {
    let d = tempfile::tempdir().unwrap();
    let json =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/results/testdata/cyclictest-2.40.json");
    let hist =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/results/testdata/cyclictest-2.40-h.txt");
    let ours = write(d.path(), "ours.json", &sample::latency(false));
    let a = args(
        &[
            ours.to_str().unwrap(),
            json.to_str().unwrap(),
            hist.to_str().unwrap(),
        ],
        &d.path().join("h.sqlite"),
    );
    assert_eq!(preempt_cli::app::compare::run(&a).unwrap(), 0);
    let runs: Vec<compare::Run> = a
        .runs
        .iter()
        .map(|r| compare::load_run(r, &a.history.config()).unwrap())
        .collect();
    let rows = compare::rows(&runs, &[compare::Metric::Max], &[]);
    let all = rows.iter().find(|r| r.figure == "latency/all").unwrap();
    // cyclictest's max (5574 µs on thread 1) in both of its formats.
    assert_eq!(all.values_ns[1], Some(5_574_000.0));
    assert_eq!(all.values_ns[2], Some(5_574_000.0));
    // The JSON knows the CPUs, so per-CPU figures match preempt's.
    assert!(rows.iter().any(|r| r.figure == "latency/cpu1"
        && r.values_ns[0].is_some()
        && r.values_ns[1].is_some()));
}

#[test]
fn history_run_ids_are_accepted() {
    let d = tempfile::tempdir().unwrap();
    let db_path = d.path().join("h.sqlite");
    let db = History::open(&db_path).unwrap();
    let a_id = db.record(&sample::latency(false), None).unwrap();
    let b_id = db.record(&sample::micro(), None).unwrap();
    let c_id = db.record(&sample::latency(true), None).unwrap();
    let a = args(&[&a_id.to_string(), &format!("run:{c_id}")], &db_path);
    assert_eq!(preempt_cli::app::compare::run(&a).unwrap(), 0);
    let r = compare::load_run(&b_id.to_string(), &a.history.config()).unwrap();
    assert_eq!(r.label, format!("run #{b_id}"));
    assert!(
        r.figures
            .iter()
            .any(|f| f.key == "micro/context_switch" && f.cycles.is_some())
    );
    let e = compare::load_run("999", &a.history.config()).unwrap_err();
    assert!(format!("{e:#}").contains("no run #999"), "{e:#}");
}

#[test]
fn bad_input_is_named() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("h.sqlite");
    let ok = write(d.path(), "ok.json", &sample::latency(false));
    let check = write(d.path(), "check.json", &sample::check());
    let ok = ok.to_str().unwrap();
    let usage = |a: &CompareArgs, expect: &str| {
        let e = preempt_cli::app::compare::run(a).unwrap_err();
        assert!(format!("{e:#}").contains(expect), "{e:#}");
        assert_eq!(exit_code_of(&e), 2, "{e:#}");
    };
    usage(&args(&[ok], &db), "at least two RUNs");
    let mut a = args(&[ok, ok], &db);
    a.max_ratio = vec!["p99=1.2".into()];
    usage(&a, "--max-ratio needs --baseline");
    a.baseline = Some(ok.into());
    a.max_ratio = vec!["p98=1.2".into()];
    usage(&a, "unknown metric 'p98'");
    let mut a = args(&[ok, ok], &db);
    a.metrics = vec!["p42".into()];
    usage(&a, "--metrics: unknown metric 'p42'");

    let e = preempt_cli::app::compare::run(&args(&[ok, "/nonexistent/run.json"], &db)).unwrap_err();
    assert!(
        format!("{e:#}").contains("cannot read /nonexistent/run.json"),
        "{e:#}"
    );
    let e = preempt_cli::app::compare::run(&args(&[ok, check.to_str().unwrap()], &db)).unwrap_err();
    assert!(format!("{e:#}").contains("no figure in common"), "{e:#}");
    let corrupt = d.path().join("corrupt.json");
    std::fs::write(
        &corrupt,
        "{\"schema_version\": 1, \"kind\": \"latency\", \"data\": {}}",
    )
    .unwrap();
    let e =
        preempt_cli::app::compare::run(&args(&[ok, corrupt.to_str().unwrap()], &db)).unwrap_err();
    assert!(
        format!("{e:#}").contains(&corrupt.display().to_string()),
        "{e:#}"
    );
}
