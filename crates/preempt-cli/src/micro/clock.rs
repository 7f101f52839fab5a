//! The cycle clock of `preempt micro`: the CPU's own counter, read in a few instructions, with
//! its frequency calibrated against `CLOCK_MONOTONIC_RAW`.
//!
//! # Background
//! The NXP study (seed `003_…`) reports its microbenchmarks in CPU cycles, measured with
//! `clock_gettime` on Linux. A `clock_gettime` call costs 20–40 ns through the vDSO (and far
//! more when the clocksource is not vDSO-capable), the same order as a mutex lock, so the
//! figures of the fastest operations are mostly clock. Every architecture has a cheaper
//! counter readable from user space:
//!
//! | arch      | counter | what one tick is |
//! |-----------|---------|------------------|
//! | `x86_64`  | TSC (`rdtsc`, fenced by `lfence`) | one *reference* cycle at the TSC's nominal frequency; with `constant_tsc` it does not follow turbo or power states, so it equals CPU cycles only at the base clock |
//! | `aarch64` | `CNTVCT_EL0` (after `isb`) | one tick of the generic timer, `CNTFRQ_EL0` Hz (19.2–54 MHz on most boards: *not* CPU cycles; the PMU cycle counter is not readable from EL0 on stock kernels) |
//! | others    | `CLOCK_MONOTONIC_RAW` | one nanosecond |
//!
//! # Solution
//! [`CycleClock::calibrate`] pairs counter reads with `CLOCK_MONOTONIC_RAW` reads over a short
//! window (bracketing each clock read by two counter reads and keeping the tightest bracket),
//! so the frequency is measured, not trusted from `/proc/cpuinfo`. [`CycleClock::overhead`]
//! measures back-to-back counter reads: the floor under every sample, reported beside each
//! figure (STYLE.md item 13). Counter ticks convert to nanoseconds with the calibrated
//! frequency.
//!
//! # Why it works
//! Both the TSC (with `constant_tsc`/`nonstop_tsc`, as on this VM) and the arm generic timer
//! run at a fixed rate and are synchronised across CPUs by the platform, so differences of two
//! reads on one CPU are exact tick counts, and a 20 ms calibration window gives the frequency to
//! well under 0.1 % (the bracket is tens of nanoseconds).
//!
//! ```
//! use preempt_cli::micro::clock::CycleClock;
//! let clock = CycleClock::calibrate().unwrap();
//! let a = clock.read();
//! let b = clock.read();
//! assert!(b >= a);
//! assert!(clock.info().counter_hz > 0.0);
//! ```

use anyhow::{Result, bail};
use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::counter;

pub use crate::results::micro::{ClockInfo, CounterKind};

/// Reads the native counter once, fenced so that it is not reordered with the measured code
/// (`preempt_io::sys::counter::read_fenced`; `CLOCK_MONOTONIC` ns where there is no counter).
#[inline(always)]
pub(crate) fn read_counter() -> u64 {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        counter::read_fenced()
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        clock::now_ns(ClockId::MonotonicRaw)
    }
}

/// The frequency the architecture reports for its counter, if it reports one.
fn declared_hz() -> Option<f64> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        counter::declared_hz().map(|f| f as f64)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Some(1e9)
    }
}

/// A calibrated counter.
#[derive(Debug, Clone)]
pub struct CycleClock {
    info: ClockInfo,
    ns_per_tick: f64,
}

/// Calibration window: long enough for a sub-0.1 % frequency from ~100 ns brackets, short
/// enough to be invisible in a run (20 ms).
pub const CALIBRATION_WINDOW_NS: u64 = 20_000_000;

/// One bracketed sample: the counter before and after a CLOCK_MONOTONIC_RAW read.
fn bracket() -> (u64, u64, u64) {
    let mut best = (0, u64::MAX, 0);
    // The tightest of a few tries: a preemption or an interrupt inside one bracket only
    // widens that bracket.
    for _ in 0..16 {
        let a = read_counter();
        let ns = clock::now_ns(ClockId::MonotonicRaw);
        let b = read_counter();
        if b.saturating_sub(a) < best.1.saturating_sub(best.0) {
            best = (a, b, ns);
        }
    }
    best
}

impl CycleClock {
    /// Measures the counter's frequency against `CLOCK_MONOTONIC_RAW` over
    /// [`CALIBRATION_WINDOW_NS`].
    pub fn calibrate() -> Result<Self> {
        let (a0, b0, t0) = bracket();
        let deadline = t0 + CALIBRATION_WINDOW_NS;
        // Sleeping would do, but spinning keeps the CPU out of deep idle states whose exit
        // could widen the second bracket.
        while clock::now_ns(ClockId::MonotonicRaw) < deadline {
            std::hint::spin_loop();
        }
        let (a1, b1, t1) = bracket();
        let dt = t1.saturating_sub(t0);
        let mid0 = a0 as f64 + (b0 - a0) as f64 / 2.0;
        let mid1 = a1 as f64 + (b1 - a1) as f64 / 2.0;
        let ticks = mid1 - mid0;
        if dt == 0 || ticks <= 0.0 {
            bail!(
                "the cycle counter did not advance during calibration ({ticks} ticks in {dt} ns)"
            );
        }
        let hz = ticks * 1e9 / dt as f64;
        let uncertainty_ppm = ((b0 - a0) + (b1 - a1)) as f64 / 2.0 / ticks * 1e6;
        let info = ClockInfo {
            counter: CounterKind::native(),
            unit: CounterKind::native().unit().into(),
            counter_hz: (hz / 1_000.0).round() * 1_000.0,
            declared_hz: declared_hz(),
            calibrated_against: "CLOCK_MONOTONIC_RAW".into(),
            calibration_window_ns: dt,
            calibration_uncertainty_ppm: (uncertainty_ppm * 10.0).round() / 10.0,
            resolution_ticks: resolution_ticks(),
            counter_flags: counter_flags(),
        };
        Ok(Self {
            ns_per_tick: 1e9 / hz,
            info,
        })
    }

    /// A clock with a given frequency (tests).
    #[cfg(test)]
    pub(crate) fn with_frequency(counter_hz: f64) -> Self {
        Self {
            ns_per_tick: 1e9 / counter_hz,
            info: ClockInfo {
                counter: CounterKind::native(),
                unit: CounterKind::native().unit().into(),
                counter_hz,
                declared_hz: None,
                calibrated_against: "given".into(),
                calibration_window_ns: 0,
                calibration_uncertainty_ppm: 0.0,
                resolution_ticks: 1,
                counter_flags: Vec::new(),
            },
        }
    }

    /// Reads the counter.
    #[inline(always)]
    pub fn read(&self) -> u64 {
        read_counter()
    }

    /// Converts a tick count to nanoseconds (rounded).
    #[inline]
    pub(crate) fn ticks_to_ns(&self, ticks: u64) -> u64 {
        (ticks as f64 * self.ns_per_tick).round() as u64
    }

    /// The calibration record.
    pub fn info(&self) -> &ClockInfo {
        &self.info
    }

    /// Measures `samples` pairs of back-to-back counter reads: the cost of one timing
    /// bracket, in ticks.
    pub fn overhead(&self, samples: usize) -> Vec<u64> {
        let mut out = Vec::with_capacity(samples);
        for _ in 0..samples {
            let a = read_counter();
            let b = read_counter();
            out.push(b.saturating_sub(a));
        }
        out
    }
}

/// The counter's step: the most common gap between the distinct small differences of
/// consecutive reads (over 20 000 reads). A counter that ticks by 1 shows differences like
/// 36, 37, 38 (gap 1); a virtualised TSC scaled from a 100 MHz host counter shows 49, 73, 98
/// (gap 24, with ±1 from rounding, which the mode ignores).
fn resolution_ticks() -> u64 {
    let mut deltas = std::collections::BTreeSet::new();
    let mut last = read_counter();
    for _ in 0..20_000 {
        let now = read_counter();
        deltas.insert(now.wrapping_sub(last));
        last = now;
    }
    let small: Vec<u64> = deltas.into_iter().filter(|&d| d > 0).take(64).collect();
    let mut gaps: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    for w in small.windows(2) {
        *gaps.entry(w[1] - w[0]).or_default() += 1;
    }
    // Gaps of 1 next to larger ones are rounding of a scaled counter, not its step.
    let coarse = gaps
        .iter()
        .filter(|(g, _)| **g > 2)
        .max_by_key(|(_, n)| **n)
        .map(|(g, _)| *g);
    match (gaps.get(&1).copied().unwrap_or(0), coarse) {
        (ones, Some(g)) if ones < gaps.values().sum::<usize>() / 2 => g,
        _ => 1,
    }
}

/// The TSC-related CPU flags present in /proc/cpuinfo.
fn counter_flags() -> Vec<String> {
    if CounterKind::native() != CounterKind::Tsc {
        return Vec::new();
    }
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = text
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, f)| f)
        .unwrap_or_default();
    ["constant_tsc", "nonstop_tsc", "tsc_known_freq", "rdtscp"]
        .into_iter()
        .filter(|f| flags.split_whitespace().any(|x| x == *f))
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_is_monotonic_on_one_thread() {
        let mut last = read_counter();
        for _ in 0..10_000 {
            let now = read_counter();
            assert!(now >= last, "counter went back: {last} -> {now}");
            last = now;
        }
    }

    #[test]
    fn calibration_agrees_with_the_reference_clock() {
        let clock = CycleClock::calibrate().unwrap();
        // Behaviour, not speed: over a measured interval, ticks converted to ns must match
        // CLOCK_MONOTONIC_RAW to within 2 % (a wrong frequency or unit would be off by 10x+).
        let t0 = clock::now_ns(ClockId::MonotonicRaw);
        let c0 = clock.read();
        while clock::now_ns(ClockId::MonotonicRaw) < t0 + 5_000_000 {
            std::hint::spin_loop();
        }
        let c1 = clock.read();
        let t1 = clock::now_ns(ClockId::MonotonicRaw);
        let ns = clock.ticks_to_ns(c1 - c0) as f64;
        let reference = (t1 - t0) as f64;
        assert!(
            (ns / reference - 1.0).abs() < 0.02,
            "{ns} ns by counter vs {reference} ns"
        );
        assert_eq!(clock.info().calibrated_against, "CLOCK_MONOTONIC_RAW");
    }

    #[test]
    fn conversion_uses_the_frequency() {
        let c = CycleClock::with_frequency(2e9);
        assert_eq!(c.ticks_to_ns(2_000), 1_000);
        assert_eq!(c.overhead(10).len(), 10);
    }
}
