//! End to end: real result files written by the `preempt` binary (`check`, `latency` with
//! `--trace-samples`) and by `micro` are turned into a report, and the figures on the page are
//! the ones in the files.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use assert_cmd::Command;
use preempt_cli::config::SetArg;
use preempt_cli::micro::{self, MicroConfig};
use preempt_cli::results::input;

mod support;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn latency(dir: &Path, name: &str) {
    let mut cmd = Command::cargo_bin("preempt").unwrap();
    cmd.env("PREEMPT_HISTORY", support::test_history());
    cmd.args([
        "latency",
        "-D",
        "300ms",
        "-i",
        "1000",
        "--no-progress",
        "--export-json",
    ])
    .arg(dir.join(format!("{name}.json")))
    .arg("--trace-samples")
    .arg(dir.join(format!("{name}-trace.csv")));
    if !is_root() {
        support::skip_unprivileged(
            "not root: measuring with --policy other (SCHED_FIFO needs CAP_SYS_NICE)",
        );
        cmd.args(["--policy", "other", "--no-mlock"]);
    }
    cmd.assert().success();
}

#[test]
fn report_of_real_latency_check_and_micro_files() {
    let d = tempfile::tempdir().unwrap();
    latency(d.path(), "latency");
    Command::cargo_bin("preempt")
        .unwrap()
        .env("PREEMPT_HISTORY", support::test_history())
        .args(["check", "--export-json"])
        .arg(d.path().join("check.json"))
        .assert()
        .code(predicates::ord::lt(5)); // 4 = a failing item, still a complete file
    let cfg = MicroConfig {
        sets: vec![SetArg::Nxp, SetArg::Zephyr, SetArg::Framework],
        only: vec!["mutex".into(), "sem_give_switch".into()],
        scale: 0.05,
        cpu: 0,
        priority: if is_root() { 80 } else { 0 },
        subtract_overhead: false,
        stress: Default::default(),
    };
    // Measured and saved as `preempt micro`'s run session does.
    let (m, _) = micro::measure(&cfg, &AtomicBool::new(false), &mut |_, _, _| {}).unwrap();
    let s = preempt_cli::session::Session::start(
        "micro",
        vec!["test".into()],
        preempt_cli::export::Sink::new(Some(&d.path().join("micro.json")), None),
        &[],
        preempt_cli::history::HistoryConfig {
            history_db: None,
            no_history: true,
        },
    )
    .unwrap();
    let f = s.file(preempt_cli::results::RunResult::Micro(Box::new(m)));
    assert_eq!(s.save(&f).exit(0).unwrap(), 0);

    let out = d.path().join("out");
    let a = preempt_cli::cli::ReportArgs {
        inputs: vec![d.path().to_path_buf()],
        out: out.clone(),
        trace: vec![d.path().join("latency-trace.csv")],
        title: None,
        no_png: true,
    };
    assert_eq!(preempt_cli::app::report::run(&a).unwrap(), 0);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    for section in [
        "Readiness check",
        "Timer wake-up latency",
        "Microbenchmarks",
        "System",
        "Latency per iteration",
    ] {
        assert!(html.contains(section), "missing {section}");
    }
    // The merged p99 of the latency file is on the page, in µs with one decimal.
    let inputs = input::load_many(&[d.path().join("latency.json")]).unwrap();
    let input::Loaded::Result(r) = &inputs[0].loaded else {
        panic!("latency file")
    };
    let preempt_cli::results::RunResult::Latency(l) = &r.result else {
        panic!("latency kind")
    };
    let p99 = format!(
        ">{:.1}</td>",
        l.threads[0].latency.summary.p99_ns as f64 / 1000.0
    );
    assert!(html.contains(&p99), "{p99} not on the page");
    // And the mutex figure of the micro file, in ns and in cycles.
    let m = micro::micro_of(&f)
        .unwrap()
        .benches
        .iter()
        .find(|b| b.id == "mutex_lock")
        .unwrap();
    assert!(html.contains(&format!(">{}</td>", m.cycles.unwrap().p50_cycles)));
}
