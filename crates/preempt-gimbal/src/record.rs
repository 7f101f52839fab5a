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

use preempt::bridge::Receiver;
use preempt_rig::intake::Taken;

/// A setpoint sent from the non-real-time side (a Foxglove client) to `sample` through the
/// bridge: from the next sample on, `axis` follows `rad` instead of the script.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SetpointCmd {
    /// 0 pan, 1 tilt.
    pub axis: usize,
    /// The new setpoint, rad.
    pub rad: f64,
}

/// Takes every setpoint waiting in `rx` (never blocks: `try_recv`) into `live`, the
/// setpoint in force per axis: the last one per axis wins; the ones it replaced in this call
/// were never in force and count as superseded in `taken`. Real-time safe: no allocation,
/// no lock.
pub fn take_setpoints(rx: &mut Receiver<SetpointCmd>, live: &mut [Option<f64>; 2], taken: &Taken) {
    let mut got = [false; 2];
    while let Some(c) = rx.try_recv() {
        if let Some(slot) = live.get_mut(c.axis) {
            *slot = Some(c.rad);
            taken.take();
            if std::mem::replace(&mut got[c.axis], true) {
                taken.supersede();
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use preempt_rig::intake::Intake;

    /// Issue 40: every setpoint received lands in one counter: refused by reason, taken and
    /// in force, taken and superseded in the same sample, or accepted and never taken.
    #[test]
    fn every_setpoint_is_counted_once_through_the_intake() {
        let (tx, mut rx) = preempt::bridge::channel(8);
        let intake = Intake::new("test: setpoint", tx);
        let taken = Taken::new();
        let mut live = [None; 2];
        let offer = |axis, rad| {
            intake.offer(crate::control::check_setpoint(rad).map(|rad| SetpointCmd { axis, rad }))
        };
        // Sample 1: pan twice (the first superseded), tilt out of range, a NaN.
        assert!(offer(0, 0.1));
        assert!(offer(0, 0.2));
        assert!(!offer(1, 1e308));
        assert!(!offer(1, f64::NAN));
        take_setpoints(&mut rx, &mut live, &taken);
        assert_eq!(live, [Some(0.2), None]);
        // Sample 2: tilt once; then one more that the run ends before taking.
        assert!(offer(1, -0.0));
        take_setpoints(&mut rx, &mut live, &taken);
        assert_eq!(live, [Some(0.2), Some(-0.0)]);
        assert!(offer(0, 0.3));
        let c = intake.finish();
        let (took, superseded) = taken.get();
        assert_eq!((took, superseded), (3, 1));
        assert_eq!(c.accepted, 4);
        assert_eq!((c.refused.nan, c.refused.out_of_range), (1, 1));
        let not_taken = c.accepted - took;
        assert_eq!(not_taken, 1);
        assert_eq!(
            (took - superseded) + superseded + not_taken + c.refused.total() + c.undecodable,
            6,
            "every message received, in exactly one counter"
        );
    }
}
