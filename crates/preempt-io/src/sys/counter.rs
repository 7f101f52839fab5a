//! The CPU's free-running counter (TSC on x86_64, CNTVCT_EL0 on arm64) as a cheap time
//! source, and its calibration against `CLOCK_MONOTONIC`.
//!
//! # Background
//! `clock_gettime(CLOCK_MONOTONIC)` through the vDSO reads this very counter, but fenced
//! (`lfence; rdtsc`) and inside a sequence-lock loop over the kernel's conversion data: about
//! 28 ns on the 2-vCPU VM this project is developed on, against 11 ns for a bare `rdtsc`
//! (measured with a 10 M-iteration loop of each). A runtime that stamps every spawn, job and
//! critical section pays that difference many times per activation.
//!
//! # Solution
//! [`read`] returns the raw counter without fences (a stamp may move by a few instructions,
//! not by a measurable time); [`Calibration::measure`] pairs counter reads with
//! `CLOCK_MONOTONIC` reads over a short window, keeping the tightest bracket at each end, and
//! gives a fixed-point nanoseconds-per-tick factor; [`Calibration::ticks_to_ns`] converts a
//! tick difference with one 64 × 64 → 128-bit multiply. The counter is used only where the
//! kernel itself trusts it: [`usable`] says why not otherwise (x86: the clocksource is not
//! `tsc`, so the kernel found the TSC unstable; arm64 under qemu-user: the emulated counter
//! moves in 1 µs steps; other architectures: no user-readable counter).
//!
//! # Why it works
//! With the `tsc` clocksource the kernel has verified that the TSC runs at a constant rate,
//! does not stop in idle states and is synchronised across CPUs (otherwise it would have
//! switched clocksource), so differences of two reads on any CPUs are exact tick counts. The
//! arm generic timer is constant-rate and system-wide by architecture. A calibration window
//! of a few milliseconds with brackets of tens of nanoseconds gives the rate to ~10 ppm.
//!
//! ```
//! use preempt_io::sys::counter::{self, Calibration};
//! if counter::usable().is_ok() {
//!     let cal = Calibration::measure(2_000_000).unwrap();
//!     let a = counter::read();
//!     let b = counter::read();
//!     assert!(cal.ticks_to_ns(b.wrapping_sub(a)) < 1_000_000_000);
//! }
//! ```

use std::io;

use super::clock::{self, ClockId};

/// Reads the counter, unfenced: the read may be reordered with neighbouring instructions,
/// which moves it by nanoseconds. Returns `CLOCK_MONOTONIC` nanoseconds on architectures
/// without a user-readable counter (where [`usable`] is an error).
#[inline(always)]
pub fn read() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        #[allow(unused_unsafe, reason = "_rdtsc became a safe fn after our MSRV")]
        // SAFETY: `rdtsc` has no preconditions; it faults only when CR4.TSD is set, which
        // Linux does for user space only after PR_SET_TSC asked for it, and then the process
        // gets a SIGSEGV rather than a wrong value.
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let t: u64;
        // SAFETY: reading CNTVCT_EL0 touches no memory and no register but the output; Linux
        // enables EL0 access to the virtual counter on every arm64 system (the vDSO reads it).
        unsafe {
            core::arch::asm!("mrs {t}, cntvct_el0", t = out(reg) t, options(nomem, nostack, preserves_flags));
        }
        t
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        clock::now_ns(ClockId::Monotonic)
    }
}

/// Reads the counter, fenced so that the read is not reordered with the code it brackets
/// (for timing a few instructions: `lfence; rdtsc; lfence` on x86_64, `isb; mrs` on arm64).
/// Costs about twice [`read`] (23 ns against 11 ns on this project's VM).
#[inline(always)]
pub fn read_fenced() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_lfence, _rdtsc};
        // `lfence` before `rdtsc` waits for earlier instructions to complete; the one after
        // keeps later instructions from starting before the read (Intel SDM vol. 2B, RDTSC).
        #[allow(
            unused_unsafe,
            reason = "_rdtsc and _mm_lfence became safe fns after our MSRV"
        )]
        // SAFETY: `lfence` needs SSE2, part of the x86_64 baseline; `rdtsc` has no
        // preconditions (see `read`).
        unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let t: u64;
        // SAFETY: `isb` and reading CNTVCT_EL0 touch no memory and no register but the
        // output (see `read`).
        unsafe {
            core::arch::asm!("isb", "mrs {t}, cntvct_el0", t = out(reg) t, options(nomem, nostack, preserves_flags));
        }
        t
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        clock::now_ns(ClockId::Monotonic)
    }
}

/// The counter frequency the architecture declares, if it declares one: `CNTFRQ_EL0` on
/// arm64; `None` on x86_64, where the kernel's refined TSC frequency is not exported (and
/// /proc/cpuinfo's "cpu MHz" is the current core clock), so calibration is the source of
/// truth.
pub fn declared_hz() -> Option<u64> {
    #[cfg(target_arch = "aarch64")]
    {
        let f: u64;
        // SAFETY: reading CNTFRQ_EL0 is allowed at EL0 whenever CNTVCT_EL0 is, has no side
        // effects and touches no memory.
        unsafe {
            core::arch::asm!("mrs {f}, cntfrq_el0", f = out(reg) f, options(nomem, nostack, preserves_flags));
        }
        (f > 0).then_some(f)
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        None
    }
}

/// Whether [`read`] is a trustworthy constant-rate counter here; the error says why not.
pub fn usable() -> Result<(), String> {
    #[cfg(target_arch = "x86_64")]
    {
        const PATH: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
        match std::fs::read_to_string(PATH) {
            Ok(s) if s.trim() == "tsc" => Ok(()),
            Ok(s) => Err(format!(
                "the kernel's clocksource is `{}`, not `tsc` ({PATH}): it does not trust the TSC",
                s.trim()
            )),
            Err(e) => Err(format!("cannot read {PATH}: {e}")),
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        // qemu-user (7.2) computes CNTVCT_EL0 from the host's gettimeofday: it advances in
        // 1 µs steps (62 or 63 ticks at its 62.5 MHz CNTFRQ_EL0, measured) and follows the
        // wall clock, which can be set back. CLOCK_MONOTONIC, passed to the host kernel, is
        // the better clock there.
        match super::cpu::user_mode_emulation() {
            Some(host) => Err(format!(
                "this arm64 binary runs under user-mode emulation on an {host} host, whose \
                 CNTVCT_EL0 advances in 1 µs steps of the wall clock"
            )),
            None => Ok(()),
        }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Err("no user-readable cycle counter on this architecture".to_string())
    }
}

/// Fixed-point bits of [`Calibration`]'s factor.
const FRACTION_BITS: u32 = 32;

/// A measured conversion from counter ticks to `CLOCK_MONOTONIC` nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    /// Nanoseconds per tick × 2^32.
    ns_per_tick_fixed: u64,
    /// Ticks per second, rounded.
    hz: u64,
    /// Uncertainty of the rate from the brackets, parts per billion.
    uncertainty_ppb: u64,
}

impl Calibration {
    /// Measures the counter's rate against `CLOCK_MONOTONIC` over about `window_ns`
    /// (busy-waits that long; a few ms give ~10 ppm).
    ///
    /// # Errors
    /// `InvalidInput` for a window under 100 µs; `Other` when the counter did not advance
    /// (a broken or trapped counter).
    pub fn measure(window_ns: u64) -> io::Result<Calibration> {
        if window_ns < 100_000 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "calibration window under 100 µs",
            ));
        }
        let (a0, b0, ns0) = bracket();
        while clock::now_ns(ClockId::Monotonic) < ns0 + window_ns {
            std::hint::spin_loop();
        }
        let (a1, b1, ns1) = bracket();
        // The clock reads happened between a and b of each bracket: take the midpoints.
        let ticks = (a1 / 2 + b1 / 2).saturating_sub(a0 / 2 + b0 / 2);
        let ns = ns1 - ns0;
        if ticks == 0 {
            return Err(io::Error::other("the cycle counter did not advance"));
        }
        let fixed = ((u128::from(ns) << FRACTION_BITS) / u128::from(ticks)) as u64;
        let width = (b0 - a0) + (b1 - a1);
        Ok(Calibration {
            ns_per_tick_fixed: fixed,
            hz: (u128::from(ticks) * 1_000_000_000 / u128::from(ns)) as u64,
            uncertainty_ppb: (u128::from(width) * 1_000_000_000 / u128::from(ticks)) as u64,
        })
    }

    /// Converts a difference of two [`read`]s to nanoseconds.
    #[inline(always)]
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        ((u128::from(ticks) * u128::from(self.ns_per_tick_fixed)) >> FRACTION_BITS) as u64
    }

    /// The number of ticks in `ns` nanoseconds (rounded down).
    pub fn ns_to_ticks(&self, ns: u64) -> u64 {
        ((u128::from(ns) << FRACTION_BITS) / u128::from(self.ns_per_tick_fixed.max(1))) as u64
    }

    /// The measured rate, ticks per second.
    pub fn hz(&self) -> u64 {
        self.hz
    }

    /// Uncertainty of the rate from the width of the read brackets, parts per million.
    pub fn uncertainty_ppm(&self) -> f64 {
        self.uncertainty_ppb as f64 / 1000.0
    }
}

/// The tightest of up to `tries` (counter, `CLOCK_MONOTONIC`, counter) brackets, stopping
/// early at one no wider than `good_enough` ticks: (before, after, clock ns). A preemption or
/// interrupt inside one try only widens that try.
pub fn bracket_clock(tries: usize, good_enough: u64) -> (u64, u64, u64) {
    let mut best = (0, u64::MAX, 0);
    for _ in 0..tries.max(1) {
        let a = read();
        let ns = clock::now_ns(ClockId::Monotonic);
        let b = read();
        let width = b.wrapping_sub(a);
        if width < best.1.wrapping_sub(best.0) {
            best = (a, b, ns);
        }
        if width <= good_enough {
            break;
        }
    }
    best
}

/// The tightest of 16 brackets (calibration).
fn bracket() -> (u64, u64, u64) {
    bracket_clock(16, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_agrees_with_the_clock_over_an_interval() {
        if let Err(why) = usable() {
            eprintln!("skipped: {why}");
            return;
        }
        let cal = Calibration::measure(2_000_000).unwrap();
        assert!(cal.hz() > 1_000_000, "{cal:?}");
        // Convert a measured interval both ways: equal within the calibration's uncertainty
        // plus the brackets (generous: this is a behaviour test, not a benchmark).
        let (a0, b0, ns0) = bracket();
        while clock::now_ns(ClockId::Monotonic) < ns0 + 5_000_000 {
            std::hint::spin_loop();
        }
        let (a1, b1, ns1) = bracket();
        let by_counter = cal.ticks_to_ns((a1 / 2 + b1 / 2) - (a0 / 2 + b0 / 2));
        let by_clock = ns1 - ns0;
        let diff = by_counter.abs_diff(by_clock);
        assert!(
            diff < by_clock / 100,
            "{by_counter} vs {by_clock} ns ({cal:?})"
        );
    }

    #[test]
    fn conversions_round_trip() {
        let cal = Calibration {
            ns_per_tick_fixed: (1u64 << FRACTION_BITS) / 3, // 3 GHz
            hz: 3_000_000_000,
            uncertainty_ppb: 0,
        };
        let ticks = cal.ns_to_ticks(1_000_000);
        assert!(ticks.abs_diff(3_000_000) <= 1, "{ticks}");
        assert!(cal.ticks_to_ns(ticks).abs_diff(1_000_000) <= 1);
        // Large differences do not overflow.
        assert!(cal.ticks_to_ns(u64::MAX) > u64::MAX / 4);
    }

    #[test]
    fn fenced_and_unfenced_reads_advance_together() {
        let a = read_fenced();
        let b = read();
        let c = read_fenced();
        assert!(a <= c, "{a} {c}");
        if usable().is_ok() {
            assert!(a <= b && b <= c, "{a} {b} {c}");
        }
    }

    #[test]
    fn a_too_short_window_is_refused() {
        assert_eq!(
            Calibration::measure(10).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }
}
