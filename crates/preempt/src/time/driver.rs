//! The clock driver: where the runtime's "now" comes from, kept apart from the user API
//! ([`Instant`](super::Instant), `Mono`, task attributes), as `embassy-time-driver` keeps
//! its `Driver` trait apart from `embassy-time`.
//!
//! Two drivers ship:
//!
//! | driver     | time line                                   | used by                              |
//! |------------|---------------------------------------------|--------------------------------------|
//! | [`System`] | `CLOCK_MONOTONIC` (vDSO, no system call)     | every real app                       |
//! | [`Mock`]   | virtual nanoseconds, moved only by the simulator | apps with `#[preempt::app(clock = mock)]` |
//!
//! The runtime reads the time through [`now_ns`], which asks the mock while a simulated app
//! runs and the system clock otherwise (one relaxed load and a predictable branch).
//!
//! # Accounting stamps
//! The accounting (release stamps of spawns, job start and end, critical sections) reads
//! [`stamp_ns`] instead: the same time line, served from the CPU's counter
//! (`preempt_io::sys::counter`: an unfenced `rdtsc` or `CNTVCT_EL0`, 11 ns against 28 ns for
//! the vDSO's `clock_gettime` on this project's VM) converted with a rate calibrated against
//! `CLOCK_MONOTONIC` when an app starts. Each thread keeps an anchor (a counter reading and
//! the `CLOCK_MONOTONIC` time it corresponds to) and re-reads `CLOCK_MONOTONIC` once its
//! anchor is [`STAMP_ANCHOR_NS`] old, so a stamp can differ from `CLOCK_MONOTONIC` only by
//! the rate's error over that window (10 ppm × 100 µs = 1 ns) plus the skew of one anchor
//! read (under 1 µs: a wider bracket is retried; tens of ns typically), whatever NTP does to
//! the clock's rate. Where the kernel does not trust the counter (x86 clocksource other than `tsc`) or `PREEMPT_STAMP_CLOCK=monotonic` is set,
//! stamps are plain `CLOCK_MONOTONIC` reads. Waiting
//! is not part of the driver: a real executor sleeps in the kernel until an absolute
//! `CLOCK_MONOTONIC` deadline, while the simulator (`preempt::sim`) never sleeps and instead
//! moves the mock's time to the next event. That split is what makes the simulation
//! deterministic: virtual time only moves when every executor is idle or a task says it
//! consumed time (`preempt::sim::advance`).
//!
//! ```standalone_crate
//! // Its own process: a simulated app of another doctest would install the mock clock.
//! use preempt::time::driver::{self, Driver, System};
//!
//! let a = System.now_ns();
//! let b = driver::now_ns(); // no simulated app runs: the system clock
//! assert!(b >= a);
//! ```

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use preempt_io::sys::clock;
use preempt_io::sys::counter::{self, Calibration};

/// A source of "now" for the runtime, in nanoseconds on a monotonic time line.
pub trait Driver: Sync {
    /// The current time. Must never go backwards.
    fn now_ns(&self) -> u64;
}

/// The system clock: `CLOCK_MONOTONIC`, read through the vDSO.
#[derive(Clone, Copy, Debug, Default)]
pub struct System;

impl Driver for System {
    #[inline]
    fn now_ns(&self) -> u64 {
        clock::monotonic_now_ns()
    }
}

/// A virtual clock for deterministic tests: its time moves only when the simulator moves it.
#[derive(Debug)]
pub struct Mock {
    now: AtomicU64,
}

impl Mock {
    const fn new() -> Mock {
        Mock {
            now: AtomicU64::new(0),
        }
    }

    /// Moves the time to `t` (never backwards: an earlier `t` leaves it where it is).
    pub(crate) fn set_ns(&self, t: u64) {
        self.now.fetch_max(t, Ordering::AcqRel);
    }

    /// Restarts the time line at 0 (a new simulated app).
    pub(crate) fn reset(&self) {
        self.now.store(0, Ordering::Release);
    }
}

impl Driver for Mock {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::Acquire)
    }
}

/// The process's mock clock.
pub static MOCK: Mock = Mock::new();

/// Whether [`MOCK`] is the runtime's clock (a simulated app runs).
static MOCK_INSTALLED: AtomicBool = AtomicBool::new(false);

/// Makes [`MOCK`] the runtime's clock, starting at 0.
pub(crate) fn install_mock() {
    MOCK.reset();
    MOCK_INSTALLED.store(true, Ordering::Release);
}

/// Makes the system clock the runtime's clock again.
pub(crate) fn uninstall_mock() {
    MOCK_INSTALLED.store(false, Ordering::Release);
}

/// `true` while a simulated app runs.
#[inline]
pub fn mock_installed() -> bool {
    MOCK_INSTALLED.load(Ordering::Relaxed)
}

/// The runtime's "now": the mock's time while a simulated app runs, else `CLOCK_MONOTONIC`.
#[inline]
pub fn now_ns() -> u64 {
    if mock_installed() {
        MOCK.now_ns()
    } else {
        System.now_ns()
    }
}

/// How long a thread's stamp anchor is trusted before `CLOCK_MONOTONIC` is read again.
pub const STAMP_ANCHOR_NS: u64 = 100_000;

/// The environment variable that makes accounting stamps plain `CLOCK_MONOTONIC` reads.
pub const STAMP_CLOCK_ENV: &str = "PREEMPT_STAMP_CLOCK";

/// The calibrated counter behind [`stamp_ns`].
#[derive(Debug)]
struct StampCounter {
    calibration: Calibration,
    anchor_ticks: u64,
}

/// Set once per process by [`install_stamp_counter`]: `Ok` with the counter, or why not.
static STAMP_COUNTER: OnceLock<Result<StampCounter, String>> = OnceLock::new();

thread_local! {
    /// This thread's (counter reading, CLOCK_MONOTONIC ns) anchor; (0, 0) until the first
    /// stamp, which is then older than any window and re-anchors.
    static ANCHOR: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Calibrates the counter for [`stamp_ns`] (once per process: ~2 ms of busy waiting) unless
/// `PREEMPT_STAMP_CLOCK=monotonic`; returns a description of the stamp clock in use.
pub fn install_stamp_counter() -> String {
    let installed = STAMP_COUNTER.get_or_init(|| {
        if std::env::var(STAMP_CLOCK_ENV).is_ok_and(|v| v == "monotonic") {
            return Err(format!("{STAMP_CLOCK_ENV}=monotonic"));
        }
        counter::usable()?;
        let calibration = Calibration::measure(2_000_000).map_err(|e| e.to_string())?;
        Ok(StampCounter {
            calibration,
            anchor_ticks: calibration.ns_to_ticks(STAMP_ANCHOR_NS),
        })
    });
    describe(installed)
}

/// What accounting stamps are read from in this process, e.g. for an exit summary.
pub fn stamp_clock_description() -> String {
    match STAMP_COUNTER.get() {
        Some(installed) => describe(installed),
        None => "CLOCK_MONOTONIC (no counter installed)".to_string(),
    }
}

fn describe(installed: &Result<StampCounter, String>) -> String {
    match installed {
        Ok(c) => format!(
            "CPU counter at {:.3} MHz (±{:.1} ppm), re-anchored to CLOCK_MONOTONIC every {} µs",
            c.calibration.hz() as f64 / 1e6,
            c.calibration.uncertainty_ppm(),
            STAMP_ANCHOR_NS / 1000
        ),
        Err(why) => format!("CLOCK_MONOTONIC ({why})"),
    }
}

/// An accounting time stamp: the mock's time while a simulated app runs, else
/// `CLOCK_MONOTONIC` as read through the calibrated CPU counter (see the module docs,
/// "Accounting stamps"), or read directly when no counter is installed.
#[inline]
pub fn stamp_ns() -> u64 {
    if mock_installed() {
        return MOCK.now_ns();
    }
    match STAMP_COUNTER.get() {
        Some(Ok(c)) => {
            let t = counter::read();
            let (t0, ns0) = ANCHOR.get();
            let elapsed = t.wrapping_sub(t0);
            if elapsed < c.anchor_ticks {
                ns0 + c.calibration.ticks_to_ns(elapsed)
            } else {
                reanchor(c)
            }
        }
        _ => System.now_ns(),
    }
}

/// Re-reads `CLOCK_MONOTONIC` between two counter reads and makes the pair this thread's
/// anchor. A preemption inside the bracket would skew every stamp of the window, so a
/// bracket wider than 1 µs is retried (the tightest of four is kept).
#[cold]
#[inline(never)]
fn reanchor(c: &StampCounter) -> u64 {
    let (a, b, ns) = counter::bracket_clock(4, c.calibration.ns_to_ticks(1_000));
    let half = b.wrapping_sub(a) / 2;
    ANCHOR.set((a.wrapping_add(half), ns));
    // The stamp is "now", after the bracket: its end.
    ns + c.calibration.ticks_to_ns(half)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mock_time_never_goes_backwards() {
        let mock = Mock::new();
        assert_eq!(mock.now_ns(), 0);
        mock.set_ns(500);
        mock.set_ns(100);
        assert_eq!(mock.now_ns(), 500);
        mock.reset();
        assert_eq!(mock.now_ns(), 0);
    }

    #[test]
    fn stamps_follow_the_system_clock() {
        let what = install_stamp_counter();
        assert!(!what.is_empty());
        // Across several anchor windows, stamps stay between two clock reads around them
        // (with a small margin for the anchor read's skew).
        for _ in 0..1000 {
            let before = System.now_ns();
            let stamp = stamp_ns();
            let after = System.now_ns();
            assert!(
                stamp + 2_000 >= before && stamp <= after + 2_000,
                "{before} <= {stamp} <= {after} ({what})"
            );
        }
    }

    #[test]
    fn system_driver_is_monotonic() {
        let a = System.now_ns();
        let b = System.now_ns();
        assert!(b >= a && a > 0);
    }
}
