//! Bad input to `preempt report` (issue 6, "Done when": missing or corrupt result files give a
//! clear error naming the file). Each case goes through `app::report::run`, the entry point of the
//! subcommand, and checks the one-line message and the exit code class.

use std::path::{Path, PathBuf};

use preempt_cli::cli::ReportArgs as Args;
use preempt_cli::error::exit_code_of;
use preempt_cli::report;

fn args(inputs: Vec<PathBuf>, out: &Path) -> Args {
    Args {
        inputs,
        out: out.to_path_buf(),
        trace: vec![],
        title: None,
        no_png: true,
    }
}

fn err(a: &Args) -> (String, u8) {
    let e = preempt_cli::app::report::run(a).expect_err("must fail");
    (format!("{e:#}"), exit_code_of(&e))
}

fn sample(dir: &Path, name: &str) -> PathBuf {
    let (_, bytes) = report::sample::all()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn missing_file_is_named() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("nope.json");
    let (msg, code) = err(&args(vec![missing.clone()], &d.path().join("out")));
    assert!(
        msg.contains(&format!("cannot read {}", missing.display())),
        "{msg}"
    );
    // A bad argument (docs/MEASURING.md, exit codes): 2.
    assert_eq!(code, 2);
    assert!(
        !d.path().join("out/index.html").exists(),
        "no page from bad input"
    );
}

#[test]
fn truncated_json_is_named() {
    let d = tempfile::tempdir().unwrap();
    let p = sample(d.path(), "latency-idle.json");
    let text = std::fs::read(&p).unwrap();
    std::fs::write(&p, &text[..text.len() / 2]).unwrap();
    let (msg, _) = err(&args(vec![p.clone()], &d.path().join("out")));
    assert!(
        msg.contains(&format!("{} is not valid JSON", p.display())),
        "{msg}"
    );
}

#[test]
fn wrong_shape_newer_schema_binary_and_empty_files_are_named() {
    let d = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], &str); 5] = [
        (
            "shape.json",
            br#"{"schema_version": 1, "kind": "latency", "data": {"threads": 3}}"#,
            "is not a valid preempt result (kind 'latency')",
        ),
        (
            "future.json",
            br#"{"schema_version": 7, "kind": "latency", "data": {}}"#,
            "has schema_version 7; this preempt reads version 1",
        ),
        (
            "binary.json",
            b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe",
            "is not text",
        ),
        ("empty.json", b"   \n", "is empty"),
        (
            "other.json",
            br#"{"name": "not ours"}"#,
            "neither a preempt result",
        ),
    ];
    for (name, bytes, expect) in cases {
        let p = d.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let (msg, _) = err(&args(vec![p.clone()], &d.path().join("out")));
        assert!(
            msg.contains(&p.display().to_string()) && msg.contains(expect),
            "{name}: {msg}"
        );
    }
}

#[test]
fn a_corrupt_file_in_a_directory_is_named() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path(), "check.json");
    let bad = d.path().join("wakeup.json");
    std::fs::write(&bad, "{\"schema_version\": 1, \"kind\": \"wakeup\"").unwrap();
    let (msg, _) = err(&args(vec![d.path().to_path_buf()], &d.path().join("out")));
    assert!(msg.contains(&bad.display().to_string()), "{msg}");
}

#[test]
fn empty_directory_and_bad_out_and_bad_trace() {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (msg, _) = err(&args(vec![empty.clone()], &d.path().join("out")));
    assert!(
        msg.contains(&format!("{} holds no result file", empty.display())),
        "{msg}"
    );

    let ok = sample(d.path(), "check.json");
    let (msg, code) = err(&args(vec![ok.clone()], &ok));
    assert!(
        msg.contains("--out") && msg.contains("not a directory"),
        "{msg}"
    );
    assert_eq!(code, 2, "usage error");

    let trace = d.path().join("t.csv");
    std::fs::write(
        &trace,
        "thread,cpu,cycle,release_ns,wake_ns,latency_ns\n0,1,0,10,20,10\n0,1,x,1,2,3\n",
    )
    .unwrap();
    let mut a = args(vec![ok.clone()], &d.path().join("out"));
    a.trace = vec![trace.clone()];
    let (msg, _) = err(&a);
    assert!(
        msg.contains(&format!("{}: line 3 is malformed", trace.display())),
        "{msg}"
    );
    std::fs::write(&trace, "a,b\n1,2\n").unwrap();
    let (msg, _) = err(&a);
    assert!(
        msg.contains("is not a preempt --trace-samples file"),
        "{msg}"
    );
}

#[test]
fn good_input_writes_the_page() {
    let d = tempfile::tempdir().unwrap();
    let p = sample(d.path(), "micro.json");
    let out = d.path().join("out");
    assert_eq!(
        preempt_cli::app::report::run(&args(vec![p], &out)).unwrap(),
        0
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("Microbenchmarks") && html.contains("context switch (sched_yield)"));
}
