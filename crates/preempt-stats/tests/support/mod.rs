//! Shared by the tail tests: a seeded random generator with no dependency.

#![allow(
    dead_code,
    reason = "each test binary uses its own subset of these helpers"
)]

/// splitmix64 (Steele, Lea & Flood 2014).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1): 53 random bits, never 0.
    pub(crate) fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Unit Fréchet: P(Z ≤ z) = exp(−1/z).
    pub(crate) fn frechet(&mut self) -> f64 {
        -1.0 / self.uniform().ln()
    }
}
