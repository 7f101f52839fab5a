//! What one 250 Hz control step produces, as it crosses the bridge to the non-real-time
//! side (real flight) or is kept by the reference.

use crate::control::Setpoint;
use crate::frame::{Command, SensorFrame};

/// One control step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlightRecord {
    /// Sample number on the 250 Hz grid.
    pub k: u64,
    /// When the job started, relative to the grid's start, ns.
    pub t_ns: u64,
    /// Start − release, ns.
    pub lateness_ns: u64,
    /// The cascade's compute time (a live waypoint taken from its bridge, position,
    /// attitude, allocator), ns.
    pub compute_ns: u64,
    /// Both bus transactions' wall time (read sensors, write rotor commands), ns.
    pub exchange_ns: u64,
    /// Releases skipped just before this job (missed periods).
    pub skipped: u64,
    /// The sensor frame the step used.
    pub sensors: SensorFrame,
    /// The position setpoint, m.
    pub setpoint: [f32; 3],
    /// The rotor commands sent.
    pub command: Command,
}

impl FlightRecord {
    /// A record of step `k` (times filled in by the caller).
    pub(crate) fn new(
        k: u64,
        sensors: SensorFrame,
        sp: &Setpoint,
        command: Command,
    ) -> FlightRecord {
        FlightRecord {
            k,
            sensors,
            setpoint: sp.p.map(|x| x as f32),
            command,
            ..FlightRecord::default()
        }
    }
}
