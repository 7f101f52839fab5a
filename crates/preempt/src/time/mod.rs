//! Time: [`Instant`] (a point on CLOCK_MONOTONIC, the clock of every release, timed spawn
//! and `Mono` delay), [`DurationExt`] (`1.millis()`, the duration syntax of task attributes)
//! and the clock [`driver`] behind them (the system clock, or a mock for deterministic tests).
//!
//! `std::time::Instant` reads the same clock on Linux but hides its value; the executors'
//! timer queues need it as nanoseconds (`preempt_sync::timed::TimerQueue` takes absolute
//! CLOCK_MONOTONIC deadlines in `u64` nanoseconds), so preempt has its own type with the same
//! API. `u64` nanoseconds cover 584 years of uptime.
//!
//! ```standalone_crate
//! // Its own process: a simulated app of another doctest would install the mock clock.
//! use preempt::Instant;
//! use std::time::Duration;
//!
//! let start = Instant::now();
//! let deadline = start + Duration::from_millis(1);
//! assert!(deadline > start);
//! assert_eq!(deadline - start, Duration::from_millis(1));
//! assert!(start.elapsed() < Duration::from_secs(3600));
//! ```

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

pub mod driver;
mod ext;

pub use ext::DurationExt;

/// A CLOCK_MONOTONIC time stamp, in nanoseconds since the clock's (boot-time) origin.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The current time: `clock_gettime(CLOCK_MONOTONIC)` (served by the vDSO: no system
    /// call), or the virtual time of an app that runs on the mock clock (see [`driver`]).
    #[inline]
    pub fn now() -> Instant {
        Instant(driver::now_ns())
    }

    /// The instant `nanos` nanoseconds after the clock's origin.
    #[inline]
    pub const fn from_nanos(nanos: u64) -> Instant {
        Instant(nanos)
    }

    /// Nanoseconds since the clock's origin (what the timer queues and futexes take).
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time elapsed since `self` (zero if `self` is in the future).
    #[inline]
    pub fn elapsed(self) -> Duration {
        Instant::now().saturating_duration_since(self)
    }

    /// `self - earlier`.
    ///
    /// # Panics
    /// If `earlier` is later than `self`, like `std::time::Instant` did before Rust 1.60;
    /// use [`saturating_duration_since`](Self::saturating_duration_since) when that can happen.
    #[inline]
    pub fn duration_since(self, earlier: Instant) -> Duration {
        self.checked_duration_since(earlier)
            .expect("Instant::duration_since: `earlier` is later than `self`")
    }

    /// `self - earlier`, or `None` if `earlier` is later.
    #[inline]
    pub fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        self.0.checked_sub(earlier.0).map(Duration::from_nanos)
    }

    /// `self - earlier`, or zero if `earlier` is later.
    #[inline]
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// `self + duration`, or `None` on overflow.
    #[inline]
    pub fn checked_add(self, duration: Duration) -> Option<Instant> {
        let nanos = u64::try_from(duration.as_nanos()).ok()?;
        self.0.checked_add(nanos).map(Instant)
    }

    /// `self - duration`, or `None` before the clock's origin.
    #[inline]
    pub fn checked_sub(self, duration: Duration) -> Option<Instant> {
        let nanos = u64::try_from(duration.as_nanos()).ok()?;
        self.0.checked_sub(nanos).map(Instant)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    /// On overflow (584 years of uptime).
    #[inline]
    fn add(self, rhs: Duration) -> Instant {
        self.checked_add(rhs)
            .expect("overflow when adding a Duration to an Instant")
    }
}

impl AddAssign<Duration> for Instant {
    #[inline]
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    /// When the result would precede the clock's origin.
    #[inline]
    fn sub(self, rhs: Duration) -> Instant {
        self.checked_sub(rhs)
            .expect("overflow when subtracting a Duration from an Instant")
    }
}

impl SubAssign<Duration> for Instant {
    #[inline]
    fn sub_assign(&mut self, rhs: Duration) {
        *self = *self - rhs;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    /// # Panics
    /// If `rhs` is later than `self` (see [`Instant::duration_since`]).
    #[inline]
    fn sub(self, rhs: Instant) -> Duration {
        self.duration_since(rhs)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Instant({:?} since boot)", Duration::from_nanos(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_round_trips() {
        let a = Instant::from_nanos(1_000);
        let b = a + Duration::from_nanos(500);
        assert_eq!(b.as_nanos(), 1_500);
        assert_eq!(b - a, Duration::from_nanos(500));
        assert_eq!(b - Duration::from_nanos(500), a);
        assert_eq!(a.checked_duration_since(b), None);
        assert_eq!(a.saturating_duration_since(b), Duration::ZERO);
        assert_eq!(
            Instant::from_nanos(u64::MAX).checked_add(Duration::from_nanos(1)),
            None
        );
        assert_eq!(a.checked_sub(Duration::from_secs(1)), None);
        let mut c = a;
        c += Duration::from_nanos(7);
        c -= Duration::from_nanos(2);
        assert_eq!(c.as_nanos(), 1_005);
    }

    #[test]
    fn now_is_monotonic_and_matches_std() {
        let a = Instant::now();
        let std_a = std::time::Instant::now();
        let b = Instant::now();
        assert!(b >= a);
        // Both read CLOCK_MONOTONIC: the elapsed times agree to well within a second.
        let ours = a.elapsed();
        let theirs = std_a.elapsed();
        assert!(ours.abs_diff(theirs) < Duration::from_secs(1));
    }

    #[test]
    #[should_panic(expected = "later than")]
    fn duration_since_a_later_instant_panics() {
        let _ = Instant::from_nanos(1) - Instant::from_nanos(2);
    }
}
