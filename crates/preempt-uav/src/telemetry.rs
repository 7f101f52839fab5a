//! The non-real-time side's recording: every control step of the flight and of the reference
//! into an MCAP file, JSON-encoded with a JSON Schema (Foxglove plots it directly).
//!
//! | topic            | one message per      | content                                          |
//! |------------------|----------------------|--------------------------------------------------|
//! | `/uav/state`     | real 250 Hz step     | sensed position, velocity, attitude, rates; setpoint; rotor commands; lateness, compute and exchange times |
//! | `/uav/reference` | reference step       | the same fields from the ideal-timing flight      |
//!
//! Log times are the steps' times on the 250 Hz grid plus the flight's wall-clock start, so
//! flight and reference line up. [`McapSink::finish`] writes the summary and index; the demo
//! calls it on every way out, Ctrl-C included.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;

use mcap::records::MessageHeader;
use serde::Serialize;

use preempt_gimbal::telemetry::{create_writer, err};

use crate::control::PERIOD_NS;
use crate::record::FlightRecord;

/// JSON Schema of both topics.
pub const STATE_SCHEMA: &str = r#"{
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

/// Which topic a record goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topic {
    /// `/uav/state`.
    State = 0,
    /// `/uav/reference`.
    Reference = 1,
}

/// An open MCAP recording.
pub struct McapSink {
    w: mcap::Writer<BufWriter<File>>,
    channels: [u16; 2],
    base_ns: u64,
    /// Messages written per topic.
    pub counts: [u64; 2],
    buf: Vec<u8>,
}

impl std::fmt::Debug for McapSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McapSink")
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl McapSink {
    /// Creates `path` (truncating it); `base_ns` is the log time of step 0 (ns since the
    /// Unix epoch).
    ///
    /// # Errors
    /// File creation or MCAP header errors, naming the path.
    pub fn create(path: &Path, base_ns: u64) -> io::Result<McapSink> {
        let mut w = create_writer(path, concat!("preempt-uav ", env!("CARGO_PKG_VERSION")))?;
        let schema = w
            .add_schema("preempt.uav.State", "jsonschema", STATE_SCHEMA.as_bytes())
            .map_err(err)?;
        let mut channels = [0_u16; 2];
        for (c, topic) in channels.iter_mut().zip(["/uav/state", "/uav/reference"]) {
            *c = w
                .add_channel(schema, topic, "json", &BTreeMap::new())
                .map_err(err)?;
        }
        Ok(McapSink {
            w,
            channels,
            base_ns,
            counts: [0; 2],
            buf: Vec::with_capacity(1024),
        })
    }

    /// Writes the flight's description as an MCAP metadata record `preempt.uav.flight`
    /// (`policy`, `stress`, `seed`, `soft`: a soft-mode recording says so in the file too).
    ///
    /// # Errors
    /// Write errors.
    pub fn describe(&mut self, fields: &[(&str, String)]) -> io::Result<()> {
        let metadata = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        self.w
            .write_metadata(&mcap::records::Metadata {
                name: "preempt.uav.flight".into(),
                metadata,
            })
            .map_err(err)
    }

    /// Writes one record to `topic`.
    ///
    /// # Errors
    /// Write errors.
    pub fn write(&mut self, topic: Topic, r: &FlightRecord) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, &StateMsg::of(r)).map_err(io::Error::other)?;
        let log_time = self.base_ns + r.k * PERIOD_NS;
        let header = MessageHeader {
            channel_id: self.channels[topic as usize],
            sequence: r.k as u32,
            log_time,
            publish_time: log_time,
        };
        self.w
            .write_to_known_channel(&header, &self.buf)
            .map_err(err)?;
        self.counts[topic as usize] += 1;
        Ok(())
    }

    /// Writes the summary and index and closes the file; returns the counts per topic.
    ///
    /// # Errors
    /// Write errors.
    pub fn finish(mut self) -> io::Result<[u64; 2]> {
        self.w.finish().map_err(err)?;
        Ok(self.counts)
    }
}
