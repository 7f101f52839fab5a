//! `preempt run` explains its latency runs' outliers by default (issue 13, "`preempt run`
//! explains the outliers of its latency runs by default when it can"): the quick suite's two
//! latency results carry `explain` (causes adding up to each outlier's latency) and the
//! verdict names the largest cause.
//!
//! Needs root (tracefs, SCHED_FIFO): skips with a message without it, fails under
//! `PREEMPT_REQUIRE_PRIVILEGED=1`.

use std::process::Command;

use serde_json::Value;

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_preempt");

#[test]
fn the_quick_suite_explains_its_latency_outliers() {
    if !support::has_capability(
        preempt_io::sys::caps::Capability::SysAdmin,
        "needs root for tracefs",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .env("PREEMPT_HISTORY", support::test_history())
        .args([
            "run",
            "--quick",
            "--no-png",
            "--no-progress",
            "--no-history",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some(), "{stderr}");
    for name in ["latency-idle.json", "latency-stress.json"] {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let d = &v["data"];
        assert!(
            d["explain_skipped"].is_null(),
            "{name}: {}",
            d["explain_skipped"]
        );
        let x = &d["explain"];
        assert!(
            x["threshold_ns"].is_null(),
            "default threshold: each thread's p99.9"
        );
        let explained = x["explained"].as_u64().unwrap();
        assert!(explained > 0, "{name}: nothing explained: {x}");
        let mut seen = 0;
        for t in x["threads"].as_array().unwrap() {
            for e in t["explanations"].as_array().unwrap() {
                let sum = support::causes_ns(e);
                assert_eq!(sum, e["latency_ns"].as_u64().unwrap(), "{name}: {e}");
                seen += 1;
            }
        }
        assert_eq!(seen, explained);
        assert!(!x["top_causes"].as_array().unwrap().is_empty());
    }
    assert!(
        stdout.contains("explained from the kernel trace"),
        "the verdict names the causes: {stdout}"
    );
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert!(
        html.contains("Why the outliers were late"),
        "report section"
    );
}
