//! The extremal index of `preempt_stats::tail` on series whose answer is known.
//!
//! * i.i.d. values: exceedances do not cluster, θ = 1.
//! * The max-autoregressive series `X_t = max(a·X_{t−1}, (1−a)·Z_t)` with unit Fréchet `Z`
//!   (ARMAX; Davis & Resnick 1989, Ferro & Segers 2003 §5): its marginal is unit Fréchet and
//!   its extremal index is `1 − a` (a large `Z` is followed by the geometrically decaying run
//!   `a^j Z`, so the mean cluster size is `1/(1−a)`).
//!
//! 10^6 samples, seeded, at the level exceeded with probability 1 % (`u = −1/ln 0.99`, the
//! exact Fréchet quantile), so about 10^4 exceedances. Tolerances: over 20 seeds of the same
//! series, numpy's evaluation of the same estimator gave θ̂ = 0.4998 ± 0.0069 (SD) for a = 0.5
//! and 0.9960 ± 0.0060 for i.i.d.; at this level the finite-level index of the a = 0.5 series
//! is P(X₁ ≤ u | X₀ > u) = 0.496, 0.004 below the limit. So |θ̂ − 0.5| ≤ 0.03 (over 4 SD plus
//! that bias) and θ̂ ≥ 0.97 for i.i.d. (4 SD below its mean) fail only on a broken estimator.

use preempt_stats::tail::{CONFIDENCE_95, extremal_index, statement, upper_bound};

mod support;

use support::Rng;

const N: usize = 1_000_000;

fn level() -> f64 {
    -1.0 / 0.99f64.ln()
}

fn armax(a: f64, seed: u64) -> Vec<f64> {
    let mut rng = Rng(seed);
    let mut x = rng.frechet();
    (0..N)
        .map(|_| {
            x = (a * x).max((1.0 - a) * rng.frechet());
            x
        })
        .collect()
}

fn exceedances(x: &[f64], u: f64) -> Vec<u64> {
    x.iter()
        .enumerate()
        .filter(|&(_, &v)| v > u)
        .map(|(i, _)| i as u64)
        .collect()
}

#[test]
fn iid_series_has_extremal_index_one() {
    let mut rng = Rng(7);
    let x: Vec<f64> = (0..N).map(|_| rng.frechet()).collect();
    let times = exceedances(&x, level());
    let ei = extremal_index(&times).unwrap();
    eprintln!("i.i.d.: {ei:?}");
    assert!(ei.theta >= 0.97, "θ = {}", ei.theta);
    // Isolated exceedances: nearly every one is its own cluster.
    assert!(ei.clusters as f64 >= 0.97 * times.len() as f64, "{ei:?}");
}

#[test]
fn armax_series_has_extremal_index_one_minus_a() {
    for seed in [1, 2, 3] {
        let x = armax(0.5, seed);
        let times = exceedances(&x, level());
        // About 1 % of the samples exceed the exact 99 % quantile of the Fréchet marginal.
        assert!((9_000..11_000).contains(&times.len()), "{}", times.len());
        let ei = extremal_index(&times).unwrap();
        eprintln!("ARMAX a = 0.5, seed {seed}: {ei:?}");
        assert!(
            (ei.theta - 0.5).abs() <= 0.03,
            "seed {seed}: θ = {} (1 − a = 0.5)",
            ei.theta
        );
        // Declustering gives C ≈ θ·N clusters (Ferro & Segers §4: at most 1 + ⌊θ(N−1)⌋).
        let expected = 1.0 + (ei.theta * (times.len() - 1) as f64).floor();
        assert!(ei.clusters as f64 <= expected, "{ei:?}");
        assert!(ei.clusters as f64 >= 0.9 * expected, "{ei:?}");
    }
}

#[test]
fn armax_clusters_halve_the_effective_cycles_of_the_bound() {
    let x = armax(0.5, 11);
    let times = exceedances(&x, level());
    let s = statement(N as u64, times.len() as u64, Some(&times), CONFIDENCE_95).unwrap();
    let ei = s.extremal_index.unwrap();
    assert!(!s.assumes_independence);
    // e independent events (at most the clusters, fewer as ARMAX cluster sizes vary) in
    // ⌊n·e/k⌋ cycles: about half the cycles or fewer.
    assert_eq!(s.events, ei.independent_events);
    assert!(ei.independent_events <= ei.clusters, "{ei:?}");
    assert_eq!(
        s.effective_cycles,
        (N as u64 * s.events) / times.len() as u64
    );
    assert!(s.effective_cycles < N as u64 * 55 / 100, "{s:?}");
    // The point estimate stays k/n; the bound is wider than the one that assumes independence.
    let independent = upper_bound(times.len() as u64, N as u64, CONFIDENCE_95).unwrap();
    assert!(
        s.upper_bound > independent,
        "{} vs {independent}",
        s.upper_bound
    );
    let k_over_n = times.len() as f64 / N as f64;
    assert!(s.upper_bound > k_over_n && s.upper_bound < 1.1 * k_over_n);
}
