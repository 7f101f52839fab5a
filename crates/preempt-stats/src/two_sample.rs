//! Two samples of per-run statistics (A and B): the exact Mann–Whitney test, the
//! Hodges–Lehmann shift and its exact distribution-free confidence interval.
//!
//! # Background
//!
//! The samples of one latency run are autocorrelated, and the variance that decides whether a
//! setting helped lies *between* runs: the same settings give a p99.9 10 % apart on two
//! identical runs. The unit of comparison is therefore a per-run statistic (p99.9, max, missed
//! periods) over several replicated runs per side, and with 5–20 runs per side the tools are
//! rank methods, which assume nothing about the distribution of that statistic.
//!
//! # Solution
//!
//! * [`null_counts`]: the exact null distribution of the Mann–Whitney statistic `U` for sample
//!   sizes `n` and `m`: how many of the `C(n+m, n)` equally likely orderings of the pooled
//!   sample give `U = u`. They are the coefficients of the Gaussian binomial coefficient
//!   `[n+m choose n]_q = ∏_{i=1..n} (1 − q^{m+i}) / (1 − q^i)` (Andrews, *The Theory of
//!   Partitions*, 1976, §3.3; Mann & Whitney 1947), built one factor at a time: a
//!   multiplication by `1 − q^{m+i}` and a division by `1 − q^i` (a running sum with stride
//!   `i`), in exact integers.
//! * [`mann_whitney`]: `U` (pairs with `a < b`, a tie counting one half) and the exact
//!   two-sided p-value `min(1, 2·P(U₀ ≥ ⌊max(U, nm − U)⌋))`.
//! * [`hodges_lehmann`]: the median of all `n·m` differences `b − a`, and its confidence
//!   interval `[D(k), D(nm+1−k)]` over the sorted differences, `k` the largest integer with
//!   `P(U₀ ≤ k − 1) ≤ α/2` (Lehmann, *Nonparametrics*, 1975, §2.6; Hollander & Wolfe,
//!   *Nonparametric Statistical Methods*, §4.3, the "Moses" interval).
//!
//! # Why it works
//!
//! Under a pure shift `δ` of B against A, `W(δ) = #{(i, j): b_j − δ < a_i}` has the null
//! distribution of `U`, which is symmetric on `0..=nm`. `δ` lies below `D(k)` exactly when
//! fewer than `k` differences are below it, i.e. `W(δ) ≤ k − 1`, and above `D(nm+1−k)` when
//! `W(δ) ≥ nm + 1 − k`; each has probability `P(U₀ ≤ k − 1) ≤ α/2`, so the interval covers `δ`
//! with probability at least `1 − α` whatever the distribution (continuous data). The interval
//! excludes 0 exactly when the two-sided p-value is at most `2·P(U₀ ≤ k − 1)`, so the test and
//! the interval never disagree.
//!
//! # Ties
//!
//! Continuous data have no ties. Per-run integer statistics can tie (two runs with the same
//! max, or no missed period in either): a tie counts one half in `U` (mid-ranks), and the
//! p-value is read from the no-ties null distribution at `⌊U⌋`, as `scipy.stats.mannwhitneyu(…,
//! method="exact")` does. With ties that p-value is approximate (no ties correction is made;
//! the floor makes it err on the large, cautious side). The interval needs no correction: tied
//! differences are simply equal order statistics.
//!
//! ```
//! use preempt_stats::two_sample::{compare, mann_whitney};
//! let a = [10.0, 11.0, 12.0, 13.0, 14.0];
//! let b = [20.0, 21.0, 22.0, 23.0, 24.0];
//! let c = compare(&a, &b, 0.05).unwrap();
//! assert_eq!(c.shift, 10.0);
//! // Every b above every a: the most extreme of the 252 orderings, on both tails.
//! assert!((c.p_value - 2.0 / 252.0).abs() < 1e-15);
//! let (lo, hi) = c.ci.unwrap();
//! assert!(lo > 0.0 && lo <= 10.0 && hi >= 10.0);
//! assert_eq!(mann_whitney(&a, &b).unwrap().u, 25.0);
//! ```

/// The largest `n + m` whose null distribution is computed exactly: `C(120, 60) < 2^97`, so
/// every count and intermediate coefficient fits an `i128`.
pub const MAX_TOTAL: usize = 120;

/// Why two samples cannot be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// A side has no value.
    Empty,
    /// A value is NaN or infinite.
    NotFinite,
    /// `n + m` exceeds [`MAX_TOTAL`].
    TooMany {
        /// Values on side A.
        n: usize,
        /// Values on side B.
        m: usize,
    },
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Empty => f.write_str("a side has no value"),
            Self::NotFinite => f.write_str("a value is not a finite number"),
            Self::TooMany { n, m } => write!(
                f,
                "{n} + {m} values: the exact distribution is computed for at most {MAX_TOTAL} in all"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// The exact null distribution of the Mann–Whitney `U` for sizes `n` and `m`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NullDistribution {
    /// `counts[u]`: orderings of the pooled sample with `U = u`, `u` in `0..=n·m`.
    pub counts: Vec<u128>,
    /// `C(n + m, n)`, the sum of `counts`.
    pub total: u128,
}

impl NullDistribution {
    /// `P(U₀ ≤ u)`.
    pub fn cdf(&self, u: usize) -> f64 {
        let c: u128 = self.counts.iter().take(u + 1).sum();
        ratio(c, self.total)
    }

    /// `P(U₀ ≥ u)`.
    pub fn sf(&self, u: usize) -> f64 {
        let c: u128 = self.counts.iter().skip(u).sum();
        ratio(c, self.total)
    }
}

/// `c / t` with one rounding for counts beyond 2^53.
fn ratio(c: u128, t: u128) -> f64 {
    // Both convert with a relative error of at most 2^-53; the quotient stays within 1.5e-16.
    c as f64 / t as f64
}

/// The exact null distribution of `U` for `n` values on side A and `m` on side B.
pub fn null_counts(n: usize, m: usize) -> Result<NullDistribution, Error> {
    if n == 0 || m == 0 {
        return Err(Error::Empty);
    }
    if n + m > MAX_TOTAL {
        return Err(Error::TooMany { n, m });
    }
    // Symmetric in n and m; fewer factors with the smaller one.
    let (n, m) = (n.min(m), n.max(m));
    let len = n * m + 1;
    let mut c = vec![0i128; len];
    c[0] = 1;
    for i in 1..=n {
        // Multiply by (1 − q^{m+i}), from the top so each coefficient is read before it is
        // changed; the degree before this factor is (i − 1)·m.
        let shift = m + i;
        for k in (shift..len).rev() {
            c[k] -= c[k - shift];
        }
        // Divide by (1 − q^i): a running sum with stride i.
        for k in i..len {
            c[k] += c[k - i];
        }
    }
    let counts: Vec<u128> = c
        .into_iter()
        .map(|v| u128::try_from(v).expect("Gaussian binomial coefficients are not negative"))
        .collect();
    let total = counts.iter().sum();
    Ok(NullDistribution { counts, total })
}

fn check(a: &[f64], b: &[f64]) -> Result<(), Error> {
    if a.is_empty() || b.is_empty() {
        return Err(Error::Empty);
    }
    if a.iter().chain(b).any(|v| !v.is_finite()) {
        return Err(Error::NotFinite);
    }
    if a.len() + b.len() > MAX_TOTAL {
        return Err(Error::TooMany {
            n: a.len(),
            m: b.len(),
        });
    }
    Ok(())
}

/// The Mann–Whitney test of A against B.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// Pairs `(a, b)` with `a < b`, a tie counting one half (scipy's `U1` with `x = b`, or
    /// `U2` with `x = a`).
    pub u: f64,
    /// Exact two-sided p-value.
    pub p_value: f64,
}

/// The exact two-sided Mann–Whitney test of `a` against `b` (see the module doc for ties).
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Result<MannWhitney, Error> {
    check(a, b)?;
    let null = null_counts(a.len(), b.len())?;
    Ok(mann_whitney_with(a, b, &null))
}

fn mann_whitney_with(a: &[f64], b: &[f64], null: &NullDistribution) -> MannWhitney {
    let mut twice_u = 0u64;
    for x in a {
        for y in b {
            twice_u += match x.partial_cmp(y) {
                Some(core::cmp::Ordering::Less) => 2,
                Some(core::cmp::Ordering::Equal) => 1,
                _ => 0,
            };
        }
    }
    let nm = (a.len() * b.len()) as u64;
    let u = twice_u as f64 / 2.0;
    // The larger of U and nm − U, floored: scipy's `sf(U.astype(int64))`.
    let upper = usize::try_from(twice_u.max(2 * nm - twice_u) / 2).expect("nm fits usize");
    let p_value = (2.0 * null.sf(upper)).min(1.0);
    MannWhitney { u, p_value }
}

/// The median of a non-empty slice (the mean of the middle two for an even length).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// All `n·m` differences `b − a`, sorted.
fn differences(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut d: Vec<f64> = b
        .iter()
        .flat_map(|y| a.iter().map(move |x| y - x))
        .collect();
    d.sort_by(f64::total_cmp);
    d
}

/// The Hodges–Lehmann shift of B against A: the median of all differences `b − a`.
pub fn hodges_lehmann(a: &[f64], b: &[f64]) -> Result<f64, Error> {
    check(a, b)?;
    Ok(median(&differences(a, b)))
}

/// The comparison of two samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Values on side A.
    pub n: usize,
    /// Values on side B.
    pub m: usize,
    /// Hodges–Lehmann shift of B against A (positive: B is larger).
    pub shift: f64,
    /// The exact distribution-free confidence interval of the shift, `None` when the samples
    /// are too small for the level asked (e.g. 3 and 3 at 95 %: the most extreme ordering
    /// alone has probability 1/20 > 2.5 %).
    pub ci: Option<(f64, f64)>,
    /// The interval's actual coverage, `1 − 2·P(U₀ ≤ k − 1)` (at least the level asked).
    pub ci_level: Option<f64>,
    /// Mann–Whitney `U` (pairs with `a < b`, ties one half).
    pub u: f64,
    /// Exact two-sided p-value.
    pub p_value: f64,
}

/// The order statistic `k` of the interval: the largest `k ≥ 1` with `P(U₀ ≤ k − 1) ≤ α/2`,
/// with its actual coverage; `None` when even `k = 1` is too wide a tail.
pub fn ci_rank(null: &NullDistribution, alpha: f64) -> Option<(usize, f64)> {
    let mut cum = 0u128;
    let mut k = 0;
    let mut coverage = None;
    // Half the distribution at most: the interval needs k ≤ nm + 1 − k.
    for (u, &c) in null
        .counts
        .iter()
        .enumerate()
        .take(null.counts.len().div_ceil(2))
    {
        cum += c;
        if ratio(cum, null.total) <= alpha / 2.0 {
            k = u + 1;
            coverage = Some(1.0 - 2.0 * ratio(cum, null.total));
        } else {
            break;
        }
    }
    if k == 0 {
        return None;
    }
    coverage.map(|c| (k, c))
}

/// Compares `b` with `a`: the shift, its `1 − alpha` interval and the exact test.
pub fn compare(a: &[f64], b: &[f64], alpha: f64) -> Result<Comparison, Error> {
    check(a, b)?;
    let null = null_counts(a.len(), b.len())?;
    let mw = mann_whitney_with(a, b, &null);
    let d = differences(a, b);
    let (ci, ci_level) = match ci_rank(&null, alpha) {
        Some((k, level)) => (Some((d[k - 1], d[d.len() - k])), Some(level)),
        None => (None, None),
    };
    Ok(Comparison {
        n: a.len(),
        m: b.len(),
        shift: median(&d),
        ci,
        ci_level,
        u: mw.u,
        p_value: mw.p_value,
    })
}

#[cfg(test)]
#[path = "../tests/support/uniform.rs"]
mod uniform;

#[cfg(test)]
mod tests {
    use super::uniform::uniform;
    use super::*;

    fn binomial(n: u128, k: u128) -> u128 {
        (0..k).fold(1, |acc, i| acc * (n - i) / (i + 1))
    }

    #[test]
    fn null_distribution_is_symmetric_and_sums_to_the_binomial() {
        for n in 1..=12 {
            for m in 1..=12 {
                let d = null_counts(n, m).unwrap();
                assert_eq!(d.total, binomial((n + m) as u128, n as u128), "{n} {m}");
                let rev: Vec<u128> = d.counts.iter().rev().copied().collect();
                assert_eq!(d.counts, rev, "{n} {m}");
            }
        }
        // The largest sizes stay exact.
        let d = null_counts(60, 60).unwrap();
        assert_eq!(d.total, binomial(120, 60));
        assert!(null_counts(61, 60).is_err());
    }

    #[test]
    fn null_distribution_matches_enumeration() {
        // 3 and 4: enumerate all 35 placements of A's values among 7 ranks.
        let (n, m) = (3usize, 4usize);
        let mut counts = vec![0u128; n * m + 1];
        for mask in 0u32..(1 << (n + m)) {
            if mask.count_ones() as usize != n {
                continue;
            }
            // U = pairs (a, b) with a < b: for each A at rank r, the B's above it.
            let mut u = 0;
            for r in 0..(n + m) {
                if mask & (1 << r) != 0 {
                    u += ((r + 1)..(n + m)).filter(|s| mask & (1 << s) == 0).count();
                }
            }
            counts[u] += 1;
        }
        assert_eq!(null_counts(n, m).unwrap().counts, counts);
    }

    #[test]
    fn five_and_five_take_the_third_difference_from_each_end() {
        // Tables (Hollander & Wolfe, Table A.6): for 5 and 5, P(U ≤ 2) = 4/252 = 0.0159 and
        // P(U ≤ 3) = 7/252 = 0.0278, so the 95 % interval is [D(3), D(23)] at 96.8 %.
        let null = null_counts(5, 5).unwrap();
        let (k, level) = ci_rank(&null, 0.05).unwrap();
        assert_eq!(k, 3);
        assert!((level - (1.0 - 8.0 / 252.0)).abs() < 1e-15);
        assert!(ci_rank(&null_counts(3, 3).unwrap(), 0.05).is_none());
        assert_eq!(ci_rank(&null_counts(4, 4).unwrap(), 0.05).unwrap().0, 1);
    }

    #[test]
    fn known_shift_is_recovered_and_covered() {
        // B is A's distribution moved by +5; 400 seeded trials of 8 and 8 runs.
        let mut seed = 42;
        let (mut covered, mut significant, mut shifts) = (0, 0, Vec::new());
        for _ in 0..400 {
            let a: Vec<f64> = (0..8).map(|_| 100.0 + 10.0 * uniform(&mut seed)).collect();
            let b: Vec<f64> = (0..8).map(|_| 105.0 + 10.0 * uniform(&mut seed)).collect();
            let c = compare(&a, &b, 0.05).unwrap();
            let (lo, hi) = c.ci.unwrap();
            assert!(lo <= c.shift && c.shift <= hi);
            covered += usize::from(lo <= 5.0 && 5.0 <= hi);
            significant += usize::from(c.p_value < 0.05);
            shifts.push(c.shift);
        }
        // Coverage ≥ 95 % up to sampling error (binomial sd over 400 trials ≈ 1.1 %).
        assert!(covered >= 372, "covered {covered} of 400");
        // The median estimate is centred on the true shift.
        assert!((median(&shifts) - 5.0).abs() < 0.5, "{}", median(&shifts));
        // A shift of half the range is detected most of the time with 8 runs a side.
        assert!(significant > 250, "{significant}");
    }

    #[test]
    fn no_shift_rejects_at_most_alpha() {
        let mut seed = 7;
        let mut rejected = 0;
        for _ in 0..1000 {
            let a: Vec<f64> = (0..6).map(|_| uniform(&mut seed)).collect();
            let b: Vec<f64> = (0..6).map(|_| uniform(&mut seed)).collect();
            rejected += usize::from(compare(&a, &b, 0.05).unwrap().p_value <= 0.05);
        }
        // Exact level for 6 and 6: P(p ≤ 0.05) = 2·P(U ≤ 5) = 0.041; sd over 1000 ≈ 0.6 %.
        assert!(rejected <= 60, "{rejected} of 1000");
    }

    #[test]
    fn complete_separation_has_the_smallest_p_value() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [7.0, 8.0, 9.0, 10.0, 11.0, 12.0];
        let lowest = 2.0 / 924.0; // 2 / C(12, 6)
        assert!((mann_whitney(&a, &b).unwrap().p_value - lowest).abs() < 1e-15);
        assert!((mann_whitney(&b, &a).unwrap().p_value - lowest).abs() < 1e-15);
        assert_eq!(mann_whitney(&a, &a).unwrap().p_value, 1.0);
        assert_eq!(hodges_lehmann(&a, &b).unwrap(), 6.0);
        assert_eq!(hodges_lehmann(&b, &a).unwrap(), -6.0);
    }

    #[test]
    fn ties_count_one_half() {
        // No missed period on either side: every pair tied.
        let z = [0.0; 5];
        let m = mann_whitney(&z, &z).unwrap();
        assert_eq!((m.u, m.p_value), (12.5, 1.0));
        let c = compare(&z, &z, 0.05).unwrap();
        assert_eq!((c.shift, c.ci), (0.0, Some((0.0, 0.0))));
    }

    #[test]
    fn bad_input_is_refused() {
        assert_eq!(compare(&[], &[1.0], 0.05), Err(Error::Empty));
        assert_eq!(compare(&[f64::NAN], &[1.0], 0.05), Err(Error::NotFinite));
        assert_eq!(
            compare(&[0.0; 61], &[0.0; 60], 0.05),
            Err(Error::TooMany { n: 61, m: 60 })
        );
    }
}
