//! The exact (Clopper–Pearson) upper bound of `preempt_stats::tail` against an independent
//! implementation: scipy's `beta.ppf(0.95, k+1, n-k)` (Boost's incomplete-beta inverse), on a
//! grid of (k, n) from k = 0 to k = n − 1 and n up to 1e10, within 1e-9 relative.
//!
//! scipy itself is not that exact everywhere: for n from 1e7 to 1e9 and small k its ppf drifts
//! by up to 4e-9 relative (e.g. k = 1, n = 1e9: 4.743864490591013e-9, where the root of the
//! binomial sum in 50-digit mpmath is 4.7438645095103853e-9). So a pair more than 1e-9 from
//! scipy is settled by that 50-digit root (mpmath, `findroot` on `Σ_{j≤k} C(n,j)p^j(1−p)^(n−j)
//! = 0.05`): preempt must then be within 1e-12 of it, and scipy more than 1e-10 off, i.e. the
//! disagreement must be scipy's.
//!
//! scipy and mpmath come from PyPI (`.ci/run` installs them). Without them the test prints why
//! it skipped; under `CI=1` or `PREEMPT_REQUIRE_PRIVILEGED=1` it fails instead, so CI never
//! passes it unrun.

use std::io::Write;
use std::process::{Command, Stdio};

use preempt_stats::tail::{CONFIDENCE_95, upper_bound};

const SCIPY: &str = "import sys
from scipy.stats import beta
for line in sys.stdin:
    k, n = map(int, line.split())
    print(repr(float(beta.ppf(0.95, k + 1, n - k))))
";

/// The 50-digit root of `P(Binomial(n, p) <= k) = 0.05` near `x0` (k small: a direct sum).
const MPMATH: &str = "import sys
import mpmath as mp
mp.mp.dps = 50
for line in sys.stdin:
    k, n, x0 = line.split()
    k, n, x0 = int(k), int(n), mp.mpf(x0)
    cdf = lambda p: mp.fsum(mp.binomial(n, j) * p**j * (1 - p)**(n - j) for j in range(k + 1))
    root = mp.findroot(lambda p: cdf(p) - mp.mpf(5) / 100, (x0 * (1 - mp.mpf(10)**-6), x0 * (1 + mp.mpf(10)**-6)), solver='secant')
    print(mp.nstr(root, 30))
";

fn must_run() -> bool {
    ["CI", "PREEMPT_REQUIRE_PRIVILEGED"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|v| v == "1" || v == "true"))
}

/// The answers of the Python `script` to `lines` (one per line), or `None` (after printing
/// why) where its module is not installed.
fn python_answers(script: &str, lines: &[String]) -> Option<Vec<f64>> {
    let child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            assert!(!must_run(), "python3 cannot run ({e}); CI must have it");
            eprintln!("skipped: python3 cannot run ({e})");
            return None;
        }
    };
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let why = format!("the Python reference is not usable: {}", stderr.trim());
        assert!(
            stderr.contains("No module named") && !must_run(),
            "{why} (under CI=1 or PREEMPT_REQUIRE_PRIVILEGED=1 it must run: pip install scipy \
             mpmath)"
        );
        eprintln!("skipped: {why} (pip install scipy mpmath to run this test)");
        return None;
    }
    let values: Vec<f64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(values.len(), lines.len(), "an answer per line");
    Some(values)
}

fn grid() -> Vec<(u64, u64)> {
    let ns = [
        1u64,
        2,
        3,
        10,
        37,
        100,
        1_000,
        10_000,
        100_000,
        1_000_000,
        10_000_000,
        100_000_000,
        1_000_000_000,
        2_995_732_273,
        10_000_000_000,
    ];
    let mut grid = Vec::new();
    for &n in &ns {
        for k in [0, 1, 2, 3, 5, 10, 30, 100, 1_000, 100_000, n / 2, n - 1] {
            if k < n && !grid.contains(&(k, n)) {
                grid.push((k, n));
            }
        }
    }
    grid
}

#[test]
fn clopper_pearson_upper_bound_matches_scipy_beta_ppf() {
    let grid = grid();
    let lines: Vec<String> = grid.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let Some(scipy) = python_answers(SCIPY, &lines) else {
        return;
    };
    let ours: Vec<f64> = grid
        .iter()
        .map(|&(k, n)| upper_bound(k, n, CONFIDENCE_95).unwrap())
        .collect();
    let rel = |a: f64, b: f64| (a - b).abs() / b;
    // Pairs off scipy by more than 1e-9: settle them with the 50-digit root.
    let disputed: Vec<usize> = (0..grid.len())
        .filter(|&i| rel(ours[i], scipy[i]) > 1e-9)
        .collect();
    let mut worst_agreed = 0.0f64;
    for i in (0..grid.len()).filter(|i| !disputed.contains(i)) {
        worst_agreed = worst_agreed.max(rel(ours[i], scipy[i]));
    }
    let lines: Vec<String> = disputed
        .iter()
        .map(|&i| format!("{} {} {:e}", grid[i].0, grid[i].1, ours[i]))
        .collect();
    for &i in &disputed {
        let (k, n) = grid[i];
        assert!(
            k <= 100,
            "k = {k}, n = {n}: preempt {:e}, scipy {:e}",
            ours[i],
            scipy[i]
        );
    }
    let exact = if lines.is_empty() {
        Vec::new()
    } else {
        let Some(exact) = python_answers(MPMATH, &lines) else {
            return;
        };
        exact
    };
    for (&i, &root) in disputed.iter().zip(&exact) {
        let (k, n) = grid[i];
        assert!(
            rel(ours[i], root) <= 1e-12 && rel(scipy[i], root) > 1e-10,
            "k = {k}, n = {n}: preempt {:e}, scipy {:e}, 50-digit root {root:e}",
            ours[i],
            scipy[i]
        );
    }
    eprintln!(
        "{} pairs: {} within {worst_agreed:e} of scipy; {} where scipy drifts, all within 1e-12 \
         of the 50-digit root",
        grid.len(),
        grid.len() - disputed.len(),
        disputed.len()
    );
}

#[test]
fn clopper_pearson_upper_bound_matches_a_50_digit_root() {
    // Independent of scipy: the root of the binomial sum in 50-digit arithmetic, for small k
    // (where the sum is short) over the whole range of n.
    let mut pairs = Vec::new();
    for n in [
        20u64,
        1_000,
        1_000_000,
        100_000_000,
        1_000_000_000,
        10_000_000_000,
    ] {
        for k in [1u64, 3, 10, 30] {
            if k < n {
                pairs.push((k, n, upper_bound(k, n, CONFIDENCE_95).unwrap()));
            }
        }
    }
    let lines: Vec<String> = pairs
        .iter()
        .map(|(k, n, ours)| format!("{k} {n} {ours:e}"))
        .collect();
    let Some(exact) = python_answers(MPMATH, &lines) else {
        return;
    };
    for (&(k, n, ours), &root) in pairs.iter().zip(&exact) {
        let rel = (ours - root).abs() / root;
        assert!(
            rel <= 1e-12,
            "k = {k}, n = {n}: preempt {ours:e}, 50-digit root {root:e} (relative {rel:e})"
        );
    }
}

#[test]
fn zero_exceedances_give_the_rule_of_three() {
    // 1 − 0.05^(1/n) → −ln(0.05)/n = 2.9957/n.
    for n in [1_000u64, 1_000_000, 10_000_000_000] {
        let u = upper_bound(0, n, CONFIDENCE_95).unwrap();
        assert!(
            (u * n as f64 / 2.995_732_273_553_991 - 1.0).abs() < 2e-3,
            "{n}: {u}"
        );
    }
}
