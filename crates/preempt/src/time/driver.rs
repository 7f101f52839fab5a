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
//! runs and the system clock otherwise (one relaxed load and a predictable branch). Waiting
//! is not part of the driver: a real executor sleeps in the kernel until an absolute
//! `CLOCK_MONOTONIC` deadline, while the simulator (`preempt::sim`) never sleeps and instead
//! moves the mock's time to the next event. That split is what makes the simulation
//! deterministic: virtual time only moves when every executor is idle or a task says it
//! consumed time (`preempt::sim::advance`).
//!
//! ```
//! use preempt::time::driver::{self, Driver, System};
//!
//! let a = System.now_ns();
//! let b = driver::now_ns(); // no simulated app runs: the system clock
//! assert!(b >= a);
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use preempt_io::sys::clock;

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
    fn system_driver_is_monotonic() {
        let a = System.now_ns();
        let b = System.now_ns();
        assert!(b >= a && a > 0);
    }
}
