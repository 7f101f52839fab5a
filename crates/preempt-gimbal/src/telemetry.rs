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
//! written) by [`McapSink::finish`], which the demo calls on every way out, Ctrl-C included.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;

use mcap::records::MessageHeader;
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
pub const TASKS_SCHEMA: &str = r#"{
  "title": "preempt.AppStats",
  "description": "Per-task accounting of the controller app (preempt::AppStats)",
  "type": "object"
}"#;

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

/// An open MCAP recording.
pub struct McapSink {
    w: mcap::Writer<BufWriter<File>>,
    state: u16,
    reference: u16,
    tasks: u16,
    base_ns: u64,
    counts: Counts,
    buf: Vec<u8>,
}

impl std::fmt::Debug for McapSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McapSink")
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

/// An MCAP error as an I/O error.
pub fn err(e: mcap::McapError) -> io::Error {
    io::Error::other(format!("MCAP: {e}"))
}

/// Creates `path` (truncating it) as an uncompressed MCAP file written by `library`.
///
/// # Errors
/// File creation or MCAP header errors, naming the path.
pub fn create_writer(path: &Path, library: &str) -> io::Result<mcap::Writer<BufWriter<File>>> {
    let file = File::create(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display())))?;
    mcap::WriteOptions::new()
        .library(library)
        .compression(None)
        .create(BufWriter::with_capacity(1 << 20, file))
        .map_err(err)
}

impl McapSink {
    /// Creates `path` (truncating it) with the three channels; `base_ns` is the log time of
    /// sample 0 (ns since the Unix epoch).
    ///
    /// # Errors
    /// File creation or MCAP header errors, naming the path.
    pub fn create(path: &Path, base_ns: u64) -> io::Result<McapSink> {
        let mut w = create_writer(path, concat!("preempt-gimbal ", env!("CARGO_PKG_VERSION")))?;
        let meta = BTreeMap::new();
        let state_schema = w
            .add_schema(
                "preempt.gimbal.State",
                "jsonschema",
                STATE_SCHEMA.as_bytes(),
            )
            .map_err(err)?;
        let tasks_schema = w
            .add_schema("preempt.AppStats", "jsonschema", TASKS_SCHEMA.as_bytes())
            .map_err(err)?;
        let state = w
            .add_channel(state_schema, "/gimbal/state", "json", &meta)
            .map_err(err)?;
        let reference = w
            .add_channel(state_schema, "/gimbal/reference", "json", &meta)
            .map_err(err)?;
        let tasks = w
            .add_channel(tasks_schema, "/gimbal/tasks", "json", &meta)
            .map_err(err)?;
        Ok(McapSink {
            w,
            state,
            reference,
            tasks,
            base_ns,
            counts: Counts::default(),
            buf: Vec::with_capacity(1024),
        })
    }

    fn put(&mut self, channel: u16, sequence: u64, t_ns: u64) -> io::Result<()> {
        let log_time = self.base_ns + t_ns;
        self.w
            .write_to_known_channel(
                &MessageHeader {
                    channel_id: channel,
                    sequence: sequence as u32,
                    log_time,
                    publish_time: log_time,
                },
                &self.buf,
            )
            .map_err(err)
    }

    /// Writes a real sample.
    ///
    /// # Errors
    /// Write errors.
    pub fn state(&mut self, r: &SampleRecord) -> io::Result<()> {
        self.buf.clear();
        state_json(r, &mut self.buf)?;
        self.put(self.state, r.k, r.k * crate::control::SAMPLE_NS)?;
        self.counts.state += 1;
        Ok(())
    }

    /// Writes a reference sample.
    ///
    /// # Errors
    /// Write errors.
    pub fn reference(&mut self, r: &SampleRecord) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, &StateMsg::of(r)).map_err(io::Error::other)?;
        self.put(self.reference, r.k, r.k * crate::control::SAMPLE_NS)?;
        self.counts.reference += 1;
        Ok(())
    }

    /// Writes the app's task statistics (a JSON object) at grid time `t_ns`.
    ///
    /// # Errors
    /// Write errors.
    pub fn tasks(&mut self, json: &str, t_ns: u64) -> io::Result<()> {
        self.buf.clear();
        self.buf.extend_from_slice(json.as_bytes());
        self.put(self.tasks, self.counts.tasks, t_ns)?;
        self.counts.tasks += 1;
        Ok(())
    }

    /// Messages written so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Writes the summary and index and closes the file.
    ///
    /// # Errors
    /// Write errors.
    pub fn finish(mut self) -> io::Result<Counts> {
        self.w.finish().map_err(err)?;
        Ok(self.counts)
    }
}
