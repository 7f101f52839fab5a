//! The non-real-time side's recording: every control step of the flight and of the reference
//! into an MCAP file, JSON-encoded with a JSON Schema (Foxglove plots it directly).
//!
//! | topic            | one message per      | content                                          |
//! |------------------|----------------------|--------------------------------------------------|
//! | `/uav/state`     | real 250 Hz step     | sensed position, velocity, attitude, rates; setpoint; rotor commands; lateness, compute and exchange times |
//! | `/uav/reference` | reference step       | the same fields from the ideal-timing flight      |
//!
//! Log times are the steps' times on the 250 Hz grid plus the flight's wall-clock start, so
//! flight and reference line up. [`McapTail::close`] writes the summary and index; the demo
//! calls it on every way out, Ctrl-C included, once the flight's figures are written. The
//! writing is the rig's
//! [`JsonMcap`] with this crate's schema and channels ([`UAV_CHANNELS`]).

use std::io;
use std::path::Path;

use serde::Serialize;

use preempt_rig::telemetry::{Channels, JsonMcap, McapTail};

use crate::control::PERIOD_NS;
use crate::record::FlightRecord;

/// JSON Schema of both topics.
pub(crate) const STATE_SCHEMA: &str = r#"{
  "title": "preempt.uav.State",
  "description": "One 250 Hz control step of the UAV demonstrator",
  "type": "object",
  "properties": {
    "k": {"type": "integer"}, "t_s": {"type": "number"},
    "position_m": {"type": "array", "items": {"type": "number"}},
    "velocity_mps": {"type": "array", "items": {"type": "number"}},
    "rpy_rad": {"type": "array", "items": {"type": "number"}},
    "rates_radps": {"type": "array", "items": {"type": "number"}},
    "setpoint_m": {"type": "array", "items": {"type": "number"}},
    "rotor_radps": {"type": "array", "items": {"type": "number"}},
    "lateness_us": {"type": "number"}, "compute_us": {"type": "number"},
    "exchange_us": {"type": "number"}, "crashed": {"type": "boolean"},
    "sim_step": {"type": "integer"}
  }
}"#;

#[derive(Serialize)]
struct StateMsg {
    k: u64,
    t_s: f64,
    position_m: [f32; 3],
    velocity_mps: [f32; 3],
    rpy_rad: [f32; 3],
    rates_radps: [f32; 3],
    setpoint_m: [f32; 3],
    rotor_radps: [f32; 4],
    lateness_us: f64,
    compute_us: f64,
    exchange_us: f64,
    crashed: bool,
    sim_step: u32,
}

impl StateMsg {
    fn of(r: &FlightRecord) -> StateMsg {
        let s = &r.sensors;
        StateMsg {
            k: r.k,
            t_s: (r.k * PERIOD_NS) as f64 / 1e9,
            position_m: s.p,
            velocity_mps: s.v,
            rpy_rad: s.rpy,
            rates_radps: s.w,
            setpoint_m: r.setpoint,
            rotor_radps: r.command.speeds,
            lateness_us: r.lateness_ns as f64 / 1e3,
            compute_us: r.compute_ns as f64 / 1e3,
            exchange_us: r.exchange_ns as f64 / 1e3,
            crashed: s.crashed,
            sim_step: s.step,
        }
    }
}

/// Which topic a record goes to (its index in [`UAV_CHANNELS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Topic {
    /// `/uav/state`.
    State = 0,
    /// `/uav/reference`.
    Reference = 1,
}

/// The UAV's schema and channels.
pub const UAV_CHANNELS: Channels<'static> = Channels {
    library: concat!("preempt-uav ", env!("CARGO_PKG_VERSION")),
    schemas: &[("preempt.uav.State", STATE_SCHEMA)],
    topics: &[("/uav/state", 0), ("/uav/reference", 0)],
};

/// An open flight recording ([`JsonMcap`] with [`UAV_CHANNELS`]).
#[derive(Debug)]
pub(crate) struct McapSink(JsonMcap);

impl McapSink {
    /// A new recording at `path` (truncated), step 0 logged at `base_ns` (Unix ns).
    ///
    /// # Errors
    /// File creation or MCAP header errors, naming the path.
    pub(crate) fn create(path: &Path, base_ns: u64) -> io::Result<McapSink> {
        JsonMcap::create(path, base_ns, UAV_CHANNELS).map(McapSink)
    }

    /// Writes the flight's description as an MCAP metadata record `preempt.uav.flight`
    /// (`policy`, `stress`, `seed`, `soft`: a soft-mode recording says so in the file too).
    ///
    /// # Errors
    /// Write errors.
    pub(crate) fn describe(&mut self, fields: &[(&str, String)]) -> io::Result<()> {
        self.0.metadata("preempt.uav.flight", fields)
    }

    /// Writes one record to `topic`.
    ///
    /// # Errors
    /// Write errors.
    pub(crate) fn write(&mut self, topic: Topic, r: &FlightRecord) -> io::Result<()> {
        self.0
            .write(topic as usize, r.k, r.k * PERIOD_NS, &StateMsg::of(r))
    }

    /// Drops the recording of a flight that never started ([`JsonMcap::discard`]).
    pub(crate) fn discard(self) {
        self.0.discard();
    }

    /// Ends the writing of messages ([`JsonMcap::into_tail`]); `failed`: a write that failed.
    /// The demo writes the figures, then ends the recording ([`McapTail::close`]).
    pub(crate) fn into_tail(self, failed: Option<String>) -> McapTail {
        self.0.into_tail(failed)
    }
}
