//! `two_sample` against an independent implementation: scipy's
//! `mannwhitneyu(a, b, method="exact", alternative="two-sided")` for the p-value and numpy's
//! median of all pairwise differences for the Hodges–Lehmann shift, on seeded fixtures of 5 to
//! 20 runs a side; they agree within 1e-9.
//!
//! Needs `python3` with scipy and numpy. Without them the test prints a skip note, and fails
//! when `CI=1` or `PREEMPT_REQUIRE_PRIVILEGED=1` is set (CI installs scipy in `.ci/run`).

use std::io::Write;
use std::process::{Command, Stdio};

use preempt_stats::two_sample;

#[path = "support/uniform.rs"]
mod uniform;
use uniform::uniform;

const ORACLE: &str = r#"
import json, sys
import numpy as np
from scipy.stats import mannwhitneyu
out = []
for f in json.load(sys.stdin):
    a, b = np.array(f["a"], dtype=float), np.array(f["b"], dtype=float)
    r = mannwhitneyu(a, b, method="exact", alternative="two-sided")
    out.append({"p": float(r.pvalue), "hl": float(np.median(np.subtract.outer(b, a)))})
json.dump(out, sys.stdout)
"#;

/// Per-run p99.9 values in ns: a base with a heavy right tail (the cube of a uniform), B
/// shifted by `shift` ns.
fn fixture(seed: u64, n: usize, m: usize, shift: f64) -> (Vec<f64>, Vec<f64>) {
    let mut s = seed;
    let mut draw = |off: f64| 20_000.0 + off + 8_000.0 * uniform(&mut s).powi(3);
    let a = (0..n).map(|_| draw(0.0)).collect();
    let b = (0..m).map(|_| draw(shift)).collect();
    (a, b)
}

fn scipy_available() -> bool {
    Command::new("python3")
        .args(["-c", "import scipy, numpy"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn required() -> bool {
    ["CI", "PREEMPT_REQUIRE_PRIVILEGED"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|x| x == "1" || x == "true"))
}

fn close(ours: f64, theirs: f64) -> bool {
    (ours - theirs).abs() <= 1e-9 * theirs.abs().max(1.0)
}

#[test]
fn p_values_and_shifts_agree_with_scipy_within_1e_9() {
    if !scipy_available() {
        assert!(
            !required(),
            "python3 with scipy and numpy is required here (CI=1 or PREEMPT_REQUIRE_PRIVILEGED=1): \
             pip install scipy"
        );
        eprintln!("skipped: python3 cannot import scipy and numpy (pip install scipy)");
        return;
    }
    let mut fixtures: Vec<(Vec<f64>, Vec<f64>)> = vec![
        fixture(1, 5, 5, 0.0),
        fixture(2, 5, 5, 6_000.0),
        fixture(3, 5, 8, 1_000.0),
        fixture(4, 7, 12, -2_000.0),
        fixture(5, 10, 10, 500.0),
        fixture(6, 13, 6, 3_000.0),
        fixture(7, 20, 20, 0.0),
        fixture(8, 20, 20, 800.0),
        fixture(9, 20, 5, -500.0),
        fixture(10, 5, 20, 10_000.0),
        fixture(11, 16, 17, 250.0),
    ];
    // Ties (integer counts, e.g. missed periods): scipy's exact method reads the no-ties
    // distribution at ⌊U⌋, as two_sample documents. Five tied pairs make U = 8.5, so a p read
    // at ⌈U⌉ would fail here.
    fixtures.push((
        vec![0.0, 0.0, 1.0, 2.0, 0.0, 3.0],
        vec![0.0, 1.0, 4.0, 5.0, 2.0, 6.0, 7.0],
    ));
    let input = serde_json::to_string(
        &fixtures
            .iter()
            .map(|(a, b)| serde_json::json!({"a": a, "b": b}))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let mut child = Command::new("python3")
        .args(["-c", ORACLE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the scipy oracle failed");
    let theirs: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(theirs.len(), fixtures.len());
    for (i, ((a, b), t)) in fixtures.iter().zip(&theirs).enumerate() {
        let c = two_sample::compare(a, b, 0.05).unwrap();
        let (p, hl) = (t["p"].as_f64().unwrap(), t["hl"].as_f64().unwrap());
        assert!(
            close(c.p_value, p),
            "fixture {i} ({} vs {}): p {} vs scipy {p}",
            a.len(),
            b.len(),
            c.p_value
        );
        assert!(
            close(c.shift, hl),
            "fixture {i}: shift {} vs numpy {hl}",
            c.shift
        );
    }
    // The fixtures span the whole range of p: a test that always said 1 would not pass.
    let ps: Vec<f64> = theirs.iter().map(|t| t["p"].as_f64().unwrap()).collect();
    assert!(
        ps.iter().any(|&p| p < 0.01) && ps.iter().any(|&p| p > 0.3),
        "{ps:?}"
    );
}
