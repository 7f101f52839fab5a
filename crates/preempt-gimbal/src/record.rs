//! What both controller apps (real and reference) share: the voltage resource, the sample
//! grid, and the telemetry record one sample produces.
//!
//! ```
//! use preempt_gimbal::record::Grid;
//! let mut g = Grid::new(1_000);
//! assert_eq!(g.label(1_000 + 5_000), (0, 0));          // first sample, 5 µs late
//! assert_eq!(g.label(1_000 + 100_000 + 7_000), (1, 0));
//! assert_eq!(g.label(1_000 + 300_000 + 1_000), (3, 1)); // sample 2 was skipped
//! ```

use crate::control::SAMPLE_NS;

/// A setpoint sent from the non-real-time side (a Foxglove client) to `sample` through the
/// bridge: from the next sample on, `axis` follows `rad` instead of the script.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SetpointCmd {
    /// 0 pan, 1 tilt.
    pub axis: usize,
    /// The new setpoint, rad.
    pub rad: f64,
}

/// The voltage commands, a resource shared by `sample` (reads) and the current controllers
/// (write): PCP in the real app.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Volts {
    /// Pan, tilt, V.
    pub volts: [f32; 2],
    /// The sample each axis's command answers (`u64::MAX`: none yet).
    pub answered: [u64; 2],
}

impl Volts {
    /// No command yet: 0 V.
    pub const fn new() -> Volts {
        Volts {
            volts: [0.0; 2],
            answered: [u64::MAX; 2],
        }
    }

    /// Whether both controllers answered sample `k`.
    pub fn answers(&self, k: u64) -> bool {
        self.answered == [k, k]
    }
}

/// Labels each `sample` job with the release it serves on the 10 kHz grid that starts at
/// `t0`: the executor's releases are `gate + k·100 µs` and `t0` is taken just after the gate
/// opens, so a job that starts at `now` serves release `⌊(now − t0 + 20 µs) / 100 µs⌋` (the
/// 20 µs guard covers the few microseconds between the gate and `t0`), and at least the one
/// after the previous job's.
/// The period is the gimbal's 100 µs by default ([`Grid::new`]); [`Grid::with_period`]
/// serves other loops (`preempt-uav`'s 4 ms).
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    t0: u64,
    next: u64,
    period: u64,
}

/// The guard of [`Grid::label`], ns.
const GUARD_NS: u64 = 20_000;

impl Grid {
    /// A 10 kHz grid starting at `t0_ns`.
    pub const fn new(t0_ns: u64) -> Grid {
        Grid::with_period(t0_ns, SAMPLE_NS)
    }

    /// A grid of `period_ns` starting at `t0_ns`.
    pub const fn with_period(t0_ns: u64, period_ns: u64) -> Grid {
        Grid {
            t0: t0_ns,
            next: 0,
            period: period_ns,
        }
    }

    /// The grid's start, ns.
    pub fn t0(&self) -> u64 {
        self.t0
    }

    /// (sample number, releases skipped since the previous job) for a job starting at `now_ns`.
    pub fn label(&mut self, now_ns: u64) -> (u64, u64) {
        let by_time = (now_ns.saturating_sub(self.t0) + GUARD_NS) / self.period;
        let k = by_time.max(self.next);
        let skipped = k - self.next;
        self.next = k + 1;
        (k, skipped)
    }

    /// The release time of sample `k`, ns.
    pub fn release_ns(&self, k: u64) -> u64 {
        self.t0 + k * self.period
    }
}

/// One 10 kHz sample, as it crosses the bridge to the non-real-time side.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SampleRecord {
    /// Sample number on the 10 kHz grid.
    pub k: u64,
    /// When the job started, relative to the grid's start, ns.
    pub t_ns: u64,
    /// Start − release, ns.
    pub lateness_ns: u64,
    /// The exchange's wall time (bus time plus both wake-ups), ns.
    pub exchange_ns: u64,
    /// The job's own time, exchange excluded, ns.
    pub sample_ns: u64,
    /// The controllers' time for the previous sample (sum of the four tasks' jobs), ns.
    pub controllers_prev_ns: u64,
    /// The controllers had not answered the previous sample in time: a stale voltage went out.
    pub late_output: bool,
    /// Plant step counter and time stamp (µs on the plant's clock) of the received frame.
    pub plant_step: u32,
    /// See `plant_step`.
    pub plant_stamp_us: u32,
    /// Measured angles (encoder), rad.
    pub angle: [f64; 2],
    /// Measured currents, A.
    pub current: [f32; 2],
    /// Voltages sent in this exchange, V.
    pub volts: [f32; 2],
    /// Position setpoints in force, rad.
    pub setpoint: [f64; 2],
}
