//! The one JSON-over-MCAP sink of both demonstrators (MCAP is the format Foxglove and the
//! ROS 2 tool chain read; JSON Schema channels Foxglove plots directly): the file created up
//! front naming its path in the error, schemas and channels added in a fixed order
//! ([`Channels`]), messages JSON-encoded into one reused buffer with their log time on the
//! run's grid, messages counted per channel, the file written as `NAME.part` and renamed into
//! place by [`JsonMcap::finish`] ([`part_path`]). The demos end it after writing their
//! figures ([`McapTail::close`]: finished, or removed when a write failed). Each demonstrator gives it its schemas and channels (`preempt_gimbal::telemetry`,
//! `preempt_uav::telemetry`).
//!
//! ```
//! use preempt_rig::telemetry::{Channels, JsonMcap};
//! let path = std::env::temp_dir().join(format!("preempt-rig-doc-{}.mcap", std::process::id()));
//! let set = Channels {
//!     library: "doc",
//!     schemas: &[("n", r#"{"type": "object"}"#)],
//!     topics: &[("/n", 0)],
//! };
//! let mut rec = JsonMcap::create(&path, 0, set).unwrap();
//! rec.write(0, 0, 1_000, &serde_json::json!({"n": 1})).unwrap();
//! assert_eq!(rec.finish().unwrap(), vec![1]);
//! assert!(path.exists());
//! std::fs::remove_file(&path).unwrap();
//! ```

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use mcap::records::{MessageHeader, Metadata};
use serde::Serialize;

/// An MCAP error as an I/O error.
fn err(e: mcap::McapError) -> io::Error {
    io::Error::other(format!("MCAP: {e}"))
}

/// A recording's layout: the writing library's name, the schemas (name, JSON Schema text)
/// and the channels (topic, index of its schema), added to the file in this order (the
/// channel index is the one [`JsonMcap::write`] takes).
#[derive(Clone, Copy, Debug)]
pub struct Channels<'a> {
    /// The MCAP header's `library`.
    pub library: &'a str,
    /// `(name, JSON Schema)`.
    pub schemas: &'a [(&'a str, &'a str)],
    /// `(topic, index into schemas)`.
    pub topics: &'a [(&'a str, usize)],
}

/// An open MCAP recording of JSON messages (uncompressed, the `mcap` crate's default
/// chunking), counting the messages written per channel.
pub struct JsonMcap {
    w: mcap::Writer<BufWriter<File>>,
    /// The file's name once finished.
    path: PathBuf,
    /// Its name while written ([`part_path`]).
    part: PathBuf,
    channels: Vec<u16>,
    base_ns: u64,
    counts: Vec<u64>,
    buf: Vec<u8>,
}

impl std::fmt::Debug for JsonMcap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonMcap")
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl JsonMcap {
    /// Creates `path` (truncating it) with `set`'s library name, schemas and channels;
    /// `base_ns` is the log time of grid time 0 (ns since the Unix epoch).
    ///
    /// # Errors
    /// File creation (naming the path) or MCAP header errors; a topic naming a schema
    /// `set` does not have.
    pub fn create(path: &Path, base_ns: u64, set: Channels<'_>) -> io::Result<JsonMcap> {
        let part = part_path(path);
        let file = File::create(&part).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", part.display()))
        })?;
        let mut w = mcap::WriteOptions::new()
            .library(set.library)
            .compression(None)
            .create(BufWriter::with_capacity(1 << 20, file))
            .map_err(err)?;
        let schemas = set
            .schemas
            .iter()
            .map(|(name, text)| w.add_schema(name, "jsonschema", text.as_bytes()))
            .collect::<Result<Vec<u16>, _>>()
            .map_err(err)?;
        let meta = BTreeMap::new();
        let mut channels = Vec::with_capacity(set.topics.len());
        for &(topic, schema) in set.topics {
            let id = *schemas.get(schema).ok_or_else(|| {
                io::Error::other(format!("MCAP channel {topic}: no schema #{schema}"))
            })?;
            channels.push(w.add_channel(id, topic, "json", &meta).map_err(err)?);
        }
        Ok(JsonMcap {
            w,
            path: path.to_path_buf(),
            part,
            counts: vec![0; channels.len()],
            channels,
            base_ns,
            buf: Vec::with_capacity(1024),
        })
    }

    /// Writes `msg` (JSON) to channel `channel` with `sequence`, at grid time `t_ns`.
    ///
    /// # Errors
    /// Serialisation or write errors; a channel the recording does not have.
    pub fn write(
        &mut self,
        channel: usize,
        sequence: u64,
        t_ns: u64,
        msg: &impl Serialize,
    ) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, msg).map_err(io::Error::other)?;
        self.put(channel, sequence, t_ns)
    }

    /// Writes `json` (a JSON document already encoded) to channel `channel`, its sequence
    /// being the channel's message count, at grid time `t_ns`.
    ///
    /// # Errors
    /// Write errors; a channel the recording does not have.
    pub fn write_raw(&mut self, channel: usize, json: &[u8], t_ns: u64) -> io::Result<()> {
        self.buf.clear();
        self.buf.extend_from_slice(json);
        let sequence = self.counts.get(channel).copied().unwrap_or(0);
        self.put(channel, sequence, t_ns)
    }

    fn put(&mut self, channel: usize, sequence: u64, t_ns: u64) -> io::Result<()> {
        let id = *self
            .channels
            .get(channel)
            .ok_or_else(|| io::Error::other(format!("MCAP: no channel #{channel}")))?;
        let log_time = self.base_ns + t_ns;
        self.w
            .write_to_known_channel(
                &MessageHeader {
                    channel_id: id,
                    // MCAP's sequence is 32-bit; it wraps after 2^32 messages (5 days at
                    // 10 kHz), as the format intends.
                    sequence: sequence as u32,
                    log_time,
                    publish_time: log_time,
                },
                &self.buf,
            )
            .map_err(err)?;
        self.counts[channel] += 1;
        Ok(())
    }

    /// Writes a metadata record `name` with `fields`.
    ///
    /// # Errors
    /// Write errors.
    pub fn metadata(&mut self, name: &str, fields: &[(&str, String)]) -> io::Result<()> {
        let metadata = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        self.w
            .write_metadata(&Metadata {
                name: name.into(),
                metadata,
            })
            .map_err(err)
    }

    /// Messages written per channel so far, in the channels' order.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Writes the summary and index and closes the file; returns the counts per channel.
    ///
    /// # Errors
    /// Write errors.
    pub fn finish(self) -> io::Result<Vec<u64>> {
        let JsonMcap {
            mut w,
            path,
            part,
            counts,
            ..
        } = self;
        w.finish().map_err(err)?;
        drop(w); // flushes the buffer into the file
        std::fs::rename(&part, &path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot rename {} to {}: {e}",
                    part.display(),
                    path.display()
                ),
            )
        })?;
        Ok(counts)
    }

    /// Ends the writing of messages: what is left is the recording's end ([`McapTail`]).
    /// `failed` is why a write already failed (the recording is then to be removed).
    pub fn into_tail(self, failed: Option<String>) -> McapTail {
        McapTail { mcap: self, failed }
    }

    /// Drops the recording of a run that never started: its file is removed and a file of
    /// the same name from an earlier run, if any, is left as it was.
    pub fn discard(self) {
        let part = self.part.clone();
        drop(self);
        let _ = std::fs::remove_file(part);
    }
}

/// A recording whose messages are all written, and whose end is still to be written: the
/// last chunk, the summary and index, the rename of `NAME.part` into place. The demos write the
/// run's figures (result file and history) *before* [`McapTail::close`], the optional output
/// after the figures, so that a second Ctrl-C while the end is written (which stops the
/// process at once) loses at most the recording, never the figures; until then the result
/// file carries [`McapTail::pending`], which says what a stop in between leaves.
#[derive(Debug)]
pub struct McapTail {
    mcap: JsonMcap,
    failed: Option<String>,
}

impl McapTail {
    /// The recording's final name.
    pub fn path(&self) -> &Path {
        &self.mcap.path
    }

    /// What the run's `output_error` says while the end is being written: the state a run
    /// stopped in between leaves the recording in (cut, as `NAME.part`; or to be removed after
    /// a failed write). [`McapTail::close`] gives the final word.
    pub fn pending(&self) -> String {
        match &self.failed {
            Some(why) => lost(&self.mcap.path, why),
            None => format!(
                "the MCAP recording {} was not finished: the run stopped while its end was \
                 written, so {} is cut (no summary or index); the figures are whole",
                self.mcap.path.display(),
                self.mcap.part.display()
            ),
        }
    }

    /// Ends a recording that is optional to its run: finished and renamed into place when
    /// every write succeeded, else removed, so that its disk space goes to the run's figures
    /// (a full disk is the usual cause). Returns the messages written per channel and, when
    /// the recording is lost, why (the run's `output_error`).
    pub fn close(self) -> (Vec<u64>, Option<String>) {
        let McapTail { mcap, failed } = self;
        let (path, part, counts) = (mcap.path.clone(), mcap.part.clone(), mcap.counts.clone());
        let why = match failed {
            Some(why) => {
                mcap.discard();
                why
            }
            None => match mcap.finish() {
                Ok(counts) => return (counts, None),
                Err(e) => {
                    let _ = std::fs::remove_file(&part);
                    format!("finishing it: {e}")
                }
            },
        };
        (counts, Some(lost(&path, &why)))
    }
}

/// The `output_error` of a recording removed after a failed write (`why`).
fn lost(path: &Path, why: &str) -> String {
    format!(
        "the MCAP recording {} could not be written ({why}); it was removed, the figures are \
         kept",
        path.display()
    )
}

/// Where a recording to `path` is written until [`JsonMcap::finish`] renames it into place
/// (`NAME.part` beside it): a run that cannot start, or dies, leaves an earlier run's file
/// whole.
pub fn part_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SET: Channels<'static> = Channels {
        library: "test",
        schemas: &[("t.A", "{}"), ("t.B", "{}")],
        topics: &[("/a", 0), ("/b", 1), ("/a2", 0)],
    };

    #[test]
    fn json_mcap_writes_its_channels_in_order_and_counts_them() {
        let path =
            std::env::temp_dir().join(format!("preempt-jsonmcap-{}.mcap", std::process::id()));
        let mut m = JsonMcap::create(&path, 1_000, SET).unwrap();
        m.write(0, 7, 10, &serde_json::json!({"x": 1})).unwrap();
        m.write(2, 8, 20, &serde_json::json!({"x": 2})).unwrap();
        m.write_raw(1, br#"{"y":3}"#, 30).unwrap();
        m.metadata("t.meta", &[("k", "v".into())]).unwrap();
        let bad = m.write(3, 0, 0, &1).unwrap_err();
        assert!(bad.to_string().contains("no channel #3"), "{bad}");
        assert_eq!(m.counts(), &[1, 1, 1]);
        assert_eq!(m.finish().unwrap(), vec![1, 1, 1]);

        let bytes = std::fs::read(&path).unwrap();
        let got: Vec<(String, String, u32, u64, Vec<u8>)> = mcap::MessageStream::new(&bytes)
            .unwrap()
            .map(|m| {
                let m = m.unwrap();
                let schema = m.channel.schema.as_ref().unwrap().name.clone();
                (
                    m.channel.topic.clone(),
                    schema,
                    m.sequence,
                    m.log_time,
                    m.data.to_vec(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("/a".into(), "t.A".into(), 7, 1_010, br#"{"x":1}"#.to_vec()),
                ("/a2".into(), "t.A".into(), 8, 1_020, br#"{"x":2}"#.to_vec()),
                ("/b".into(), "t.B".into(), 0, 1_030, br#"{"y":3}"#.to_vec()),
            ]
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn json_mcap_is_written_beside_and_renamed_into_place_or_discarded() {
        let dir =
            std::env::temp_dir().join(format!("preempt-jsonmcap-part-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.mcap");
        std::fs::write(&path, b"an earlier run").unwrap();
        let part = dir.join("r.mcap.part");
        assert_eq!(part_path(&path), part);
        let mut m = JsonMcap::create(&path, 0, SET).unwrap();
        m.write(0, 0, 0, &1).unwrap();
        assert!(part.exists());
        m.discard();
        assert!(!part.exists());
        assert_eq!(std::fs::read(&path).unwrap(), b"an earlier run");
        let m = JsonMcap::create(&path, 0, SET).unwrap();
        assert_eq!(m.finish().unwrap(), vec![0, 0, 0]);
        assert!(!part.exists());
        assert!(std::fs::read(&path).unwrap().starts_with(b"\x89MCAP0\r\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn json_mcap_errors_name_the_path_and_the_schema() {
        let e = JsonMcap::create(Path::new("/nonexistent-dir/x.mcap"), 0, SET).unwrap_err();
        assert!(
            e.to_string()
                .contains("cannot create /nonexistent-dir/x.mcap"),
            "{e}"
        );
        let path =
            std::env::temp_dir().join(format!("preempt-jsonmcap-bad-{}.mcap", std::process::id()));
        let bad = Channels {
            library: "t",
            schemas: &[("t.A", "{}")],
            topics: &[("/a", 1)],
        };
        let e = JsonMcap::create(&path, 0, bad).unwrap_err();
        assert!(e.to_string().contains("/a: no schema #1"), "{e}");
        let _ = std::fs::remove_file(&path);
    }
}
