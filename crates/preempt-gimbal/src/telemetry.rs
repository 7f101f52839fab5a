//! The non-real-time side's recording: every sample into an MCAP file (the format Foxglove
//! and the ROS 2 tool chain read), with JSON Schema channels Foxglove plots directly.
//!
//! | topic               | one message per        | content                                  |
//! |---------------------|------------------------|------------------------------------------|
//! | `/gimbal/state`     | real 10 kHz sample     | angles, setpoints, currents, voltages per axis; lateness, exchange, sample and controller times |
//! | `/gimbal/reference` | reference sample       | the same fields from the ideal-timing run |
//! | `/gimbal/tasks`     | run (at the end)       | the app's per-task accounting (`preempt::AppStats`) |
//!
//! Log times are the samples' times on the 10 kHz grid plus the run's wall-clock start, so
//! real and reference line up in Foxglove's plot. The writer is finalised (summary and index
//! written) by [`McapTail::close`], which the demo calls on every way out, Ctrl-C included,
//! once the run's figures are written.
//!
//! The recording itself is the rig's [`JsonMcap`] (`preempt_rig::telemetry`), the one
//! JSON-over-MCAP sink of both demonstrators, with this crate's schemas and channels
//! ([`GIMBAL_CHANNELS`]).

use std::io;
use std::path::Path;

use preempt_rig::telemetry::{Channels, JsonMcap, McapTail};
use serde::Serialize;

use crate::record::SampleRecord;

/// JSON Schema of `/gimbal/state` and `/gimbal/reference`.
pub const STATE_SCHEMA: &str = r##"{
  "title": "preempt.gimbal.State",
  "description": "One 10 kHz sample of the two-axis gimbal demonstrator",
  "type": "object",
  "properties": {
    "k": {"type": "integer", "description": "sample number"},
    "t_s": {"type": "number", "description": "time on the sample grid, s"},
    "pan": {"$ref": "#/$defs/axis"},
    "tilt": {"$ref": "#/$defs/axis"},
    "lateness_us": {"type": "number"},
    "exchange_us": {"type": "number"},
    "sample_us": {"type": "number"},
    "controllers_prev_us": {"type": "number"},
    "late_output": {"type": "boolean"},
    "plant_step": {"type": "integer"},
    "plant_stamp_us": {"type": "integer"}
  },
  "$defs": {
    "axis": {
      "type": "object",
      "properties": {
        "angle_rad": {"type": "number"},
        "setpoint_rad": {"type": "number"},
        "current_a": {"type": "number"},
        "volts": {"type": "number"}
      }
    }
  }
}"##;

/// JSON Schema of `/gimbal/tasks`.
pub(crate) const TASKS_SCHEMA: &str = r#"{
  "title": "preempt.AppStats",
  "description": "Per-task accounting of the controller app (preempt::AppStats)",
  "type": "object"
}"#;

/// Every how many samples the live views (Foxglove `--foxglove`, ROS 2 `--ros2`) get the
/// state: 10, 1 kHz (a viewer draws at 60 Hz; the MCAP keeps every sample).
pub const LIVE_EVERY: u64 = 10;

#[derive(Serialize)]
struct AxisMsg {
    angle_rad: f64,
    setpoint_rad: f64,
    current_a: f32,
    volts: f32,
}

#[derive(Serialize)]
struct StateMsg {
    k: u64,
    t_s: f64,
    pan: AxisMsg,
    tilt: AxisMsg,
    lateness_us: f64,
    exchange_us: f64,
    sample_us: f64,
    controllers_prev_us: f64,
    late_output: bool,
    plant_step: u32,
    plant_stamp_us: u32,
}

impl StateMsg {
    fn of(r: &SampleRecord) -> StateMsg {
        let axis = |a: usize| AxisMsg {
            angle_rad: r.angle[a],
            setpoint_rad: r.setpoint[a],
            current_a: r.current[a],
            volts: r.volts[a],
        };
        let us = |ns: u64| ns as f64 / 1e3;
        StateMsg {
            k: r.k,
            t_s: r.k as f64 * crate::control::SAMPLE_S,
            pan: axis(0),
            tilt: axis(1),
            lateness_us: us(r.lateness_ns),
            exchange_us: us(r.exchange_ns),
            sample_us: us(r.sample_ns),
            controllers_prev_us: us(r.controllers_prev_ns),
            late_output: r.late_output,
            plant_step: r.plant_step,
            plant_stamp_us: r.plant_stamp_us,
        }
    }
}

/// Appends `r` as a `/gimbal/state` message (JSON, [`STATE_SCHEMA`]) to `buf`: the MCAP's
/// and the live Foxglove server's encoding.
///
/// # Errors
/// Serialisation errors (none for finite numbers).
pub fn state_json(r: &SampleRecord, buf: &mut Vec<u8>) -> io::Result<()> {
    serde_json::to_writer(buf, &StateMsg::of(r)).map_err(io::Error::other)
}

/// Messages written per channel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// `/gimbal/state`.
    pub state: u64,
    /// `/gimbal/reference`.
    pub reference: u64,
    /// `/gimbal/tasks`.
    pub tasks: u64,
}

/// The gimbal's channels, in [`GIMBAL_CHANNELS`]' order.
const STATE: usize = 0;
const REFERENCE: usize = 1;
const TASKS: usize = 2;

/// The gimbal's schemas and channels.
pub const GIMBAL_CHANNELS: Channels<'static> = Channels {
    library: concat!("preempt-gimbal ", env!("CARGO_PKG_VERSION")),
    schemas: &[
        ("preempt.gimbal.State", STATE_SCHEMA),
        ("preempt.AppStats", TASKS_SCHEMA),
    ],
    topics: &[
        ("/gimbal/state", 0),
        ("/gimbal/reference", 0),
        ("/gimbal/tasks", 1),
    ],
};

/// An open gimbal recording ([`JsonMcap`] with [`GIMBAL_CHANNELS`]).
#[derive(Debug)]
pub(crate) struct McapSink(JsonMcap);

impl McapSink {
    /// Creates `path` (truncating it) with the three channels; sample 0 is logged at
    /// `base_ns` (ns since the Unix epoch). Errors name the path.
    pub(crate) fn create(path: &Path, base_ns: u64) -> io::Result<McapSink> {
        JsonMcap::create(path, base_ns, GIMBAL_CHANNELS).map(McapSink)
    }

    /// Writes a real sample.
    ///
    /// # Errors
    /// Write errors.
    pub(crate) fn state(&mut self, r: &SampleRecord) -> io::Result<()> {
        let t = r.k * crate::control::SAMPLE_NS;
        self.0.write(STATE, r.k, t, &StateMsg::of(r))
    }

    /// Writes a reference sample.
    ///
    /// # Errors
    /// Write errors.
    pub(crate) fn reference(&mut self, r: &SampleRecord) -> io::Result<()> {
        let t = r.k * crate::control::SAMPLE_NS;
        self.0.write(REFERENCE, r.k, t, &StateMsg::of(r))
    }

    /// Writes the app's task statistics (a JSON object) at grid time `t_ns`.
    ///
    /// # Errors
    /// Write errors.
    pub(crate) fn tasks(&mut self, json: &str, t_ns: u64) -> io::Result<()> {
        self.0.write_raw(TASKS, json.as_bytes(), t_ns)
    }

    /// Messages written so far.
    pub(crate) fn counts(&self) -> Counts {
        Counts::of(self.0.counts())
    }

    /// Ends the writing of messages ([`JsonMcap::into_tail`]); `failed`: a write that failed.
    pub(crate) fn into_tail(self, failed: Option<String>) -> McapTail {
        self.0.into_tail(failed)
    }

    /// Drops the recording of a run that never started ([`JsonMcap::discard`]).
    pub(crate) fn discard(self) {
        self.0.discard();
    }
}

impl Counts {
    fn of(c: &[u64]) -> Counts {
        Counts {
            state: c[STATE],
            reference: c[REFERENCE],
            tasks: c[TASKS],
        }
    }
}
