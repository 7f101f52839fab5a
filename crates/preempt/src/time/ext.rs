//! [`DurationExt`]: `1.millis()`, `800.micros()`, `1.seconds()`, the duration syntax of task
//! attributes (`period = 1.millis()`) and of RTIC code (`foo::spawn_after(1.seconds())`).
//!
//! The trait is implemented for `u64` only, so an unsuffixed literal (`1.millis()`) has
//! exactly one candidate type and needs no annotation. It is in the app prelude.
//!
//! ```
//! use preempt::time::DurationExt;
//! use std::time::Duration;
//!
//! assert_eq!(1.millis(), Duration::from_millis(1));
//! assert_eq!(800.micros() + 200.micros(), 1.millis());
//! assert_eq!(2.seconds(), 2.secs());
//! assert_eq!(5.nanos(), Duration::from_nanos(5));
//! ```

use std::time::Duration;

/// Durations from integers: `10.micros()`, `1.seconds()` (see `preempt::time`).
pub trait DurationExt {
    /// `self` nanoseconds.
    fn nanos(self) -> Duration;
    /// `self` microseconds.
    fn micros(self) -> Duration;
    /// `self` milliseconds.
    fn millis(self) -> Duration;
    /// `self` seconds.
    fn secs(self) -> Duration;
    /// `self` seconds (the spelling of RTIC v1 and the thesis's Appendix A).
    fn seconds(self) -> Duration;
}

impl DurationExt for u64 {
    #[inline]
    fn nanos(self) -> Duration {
        Duration::from_nanos(self)
    }

    #[inline]
    fn micros(self) -> Duration {
        Duration::from_micros(self)
    }

    #[inline]
    fn millis(self) -> Duration {
        Duration::from_millis(self)
    }

    #[inline]
    fn secs(self) -> Duration {
        Duration::from_secs(self)
    }

    #[inline]
    fn seconds(self) -> Duration {
        Duration::from_secs(self)
    }
}
