//! A seeded generator of continuous values for the two-sample tests (splitmix64, Steele et
//! al. 2014), shared by the unit tests of `two_sample` and the scipy oracle test.

/// The next uniform value on [0, 1) from `seed` (53 random bits).
pub(crate) fn uniform(seed: &mut u64) -> f64 {
    *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}
