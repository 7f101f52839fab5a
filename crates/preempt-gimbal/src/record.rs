//! What both controller apps (real and reference) share: the voltage resource, the setpoint
//! command, and the telemetry record one sample produces (the sample grid that labels it is
//! the rig's, `preempt_rig::grid`).
//!
//! ```
//! use preempt_gimbal::record::Volts;
//! let mut v = Volts::new();
//! assert!(!v.answers(0));
//! v.answered = [0, 0];
//! assert!(v.answers(0));
//! ```

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
