//! HdrHistogram's V2 binary encoding and interval-log format (feature `hdr-log`).
//!
//! # Background
//! HdrHistogram's ecosystem (the Java `HistogramLogProcessor`, `HistogramLogAnalyzer`, the
//! `hdrhistogram` Rust crate, HdrHistogram_c, the `hdr-plot` scripts, wrk2 and others) reads
//! histograms in one encoding: a 40-byte big-endian header followed by the counts array as
//! ZigZag LEB128 varints, with runs of empty counters written as one negative number; usually
//! zlib-compressed, base64-encoded and written one line per interval into an *interval log*.
//! Writing that format lets a preempt measurement be plotted and merged with those tools instead
//! of with ad-hoc scripts.
//!
//! # Solution
//! [`Histogram`](crate::histogram::Histogram) uses HdrHistogram's bucket layout, so a
//! [`HistogramSnapshot`] maps to the counts array index by index:
//!
//! * [`encode_v2`]: cookie `0x1c849313`, payload length, normalizing index offset 0, significant
//!   digits, lowest discernible value 1, highest trackable value, integer-to-double ratio 1.0,
//!   then the counts from index 0 to the highest non-empty one.
//! * [`encode_v2_compressed`]: cookie `0x1c849314`, compressed length, then the zlib stream of
//!   the [`encode_v2`] bytes (what interval logs contain).
//! * [`IntervalLogWriter`]: the text log, `#[Histogram log format version 1.3]`, an optional
//!   `#[StartTime: …]`, the column legend, and one line per interval
//!   `[Tag=…,]start_s,length_s,max_ms,base64(compressed histogram)`.
//!   The max column is in milliseconds (the Java writer's default ratio of 10⁶ for ns data).
//!
//! # Why it works
//! The bucket index of a snapshot bucket is `layout.index_of(low_ns)`, the same
//! `countsArrayIndex` HdrHistogram computes; the tests decode our bytes with the `hdrhistogram`
//! crate and compare every count, the min, the max and the percentiles.
//!
//! ```
//! use preempt_stats::hdr::{encode_v2_compressed, IntervalLogWriter};
//! use preempt_stats::histogram::{Digits3, Histogram};
//!
//! let h: Histogram<Digits3> = Histogram::new();
//! h.record(12_345);
//! let bytes = encode_v2_compressed(&h.snapshot())?;
//! assert_eq!(&bytes[..4], &[0x1c, 0x84, 0x93, 0x14]);
//!
//! let mut log = Vec::new();
//! let mut writer = IntervalLogWriter::new(&mut log, Some(1_700_000_000.0))?;
//! writer.write_interval(&h.snapshot(), 0.0, 1.0, Some("cpu0"))?;
//! let text = String::from_utf8(log).unwrap();
//! assert!(text.lines().last().unwrap().starts_with("Tag=cpu0,0.000,1.000,0.012,HISTF"));
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{self, Write};

use base64::Engine as _;

use crate::histogram::HistogramSnapshot;

/// Cookie of the uncompressed V2 encoding (`V2EncodingCookieBase | 0x10`).
pub const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
/// Cookie of the zlib-compressed V2 encoding (`V2CompressedEncodingCookieBase | 0x10`).
pub const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;

/// Appends `v` as LEB128-64b9B: seven bits per byte for the first eight bytes, then the last
/// eight bits whole, so any `u64` takes at most 9 bytes.
fn put_varint(mut v: u64, out: &mut Vec<u8>) {
    for _ in 0..8 {
        if v >> 7 == 0 {
            out.push(v as u8);
            return;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zig_zag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Encodes `snapshot` in HdrHistogram's uncompressed V2 format.
///
/// A bucket count above `i64::MAX` (not reachable: 292 years of samples at 1 GHz) is written
/// as `i64::MAX`, the largest value the format can hold.
pub fn encode_v2(snapshot: &HistogramSnapshot) -> Vec<u8> {
    let layout = snapshot.layout();
    let mut payload = Vec::with_capacity(snapshot.buckets.len() * 4 + 8);
    let mut next_index = 0_usize;
    for b in &snapshot.buckets {
        let index = layout.index_of(b.low_ns);
        debug_assert!(index >= next_index, "buckets are sorted and distinct");
        let zeros = index - next_index;
        if zeros == 1 {
            put_varint(zig_zag(0), &mut payload);
        } else if zeros > 1 {
            // The counts array is at most a few million long, so this fits an i64.
            put_varint(zig_zag(-(zeros as i64)), &mut payload);
        }
        put_varint(
            zig_zag(i64::try_from(b.count).unwrap_or(i64::MAX)),
            &mut payload,
        );
        next_index = index + 1;
    }
    let mut out = Vec::with_capacity(40 + payload.len());
    out.extend_from_slice(&V2_COOKIE.to_be_bytes());
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&0_u32.to_be_bytes()); // normalizing index offset
    out.extend_from_slice(&u32::from(snapshot.significant_digits).to_be_bytes());
    out.extend_from_slice(&1_u64.to_be_bytes()); // lowest discernible value: 1 ns
    out.extend_from_slice(&snapshot.highest_trackable_ns.to_be_bytes());
    out.extend_from_slice(&1.0_f64.to_be_bytes()); // integer to double conversion ratio
    out.extend_from_slice(&payload);
    out
}

/// Encodes `snapshot` in HdrHistogram's compressed V2 format (zlib around [`encode_v2`]).
///
/// # Errors
/// Only if the compressor fails, which writing into memory does not.
pub fn encode_v2_compressed(snapshot: &HistogramSnapshot) -> io::Result<Vec<u8>> {
    let plain = encode_v2(snapshot);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&plain)?;
    let compressed = z.finish()?;
    let mut out = Vec::with_capacity(8 + compressed.len());
    out.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
    let len = u32::try_from(compressed.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "histogram too large"))?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&compressed);
    Ok(out)
}

/// Writes an HdrHistogram interval log (format version 1.3), one histogram per interval.
#[derive(Debug)]
pub struct IntervalLogWriter<W: Write> {
    out: W,
}

impl<W: Write> IntervalLogWriter<W> {
    /// Writes the log header. `start_time_s` (seconds since the Unix epoch, if you have it)
    /// becomes the `#[StartTime: …]` line that interval timestamps are relative to.
    ///
    /// # Errors
    /// Whatever writing to `out` reports.
    pub fn new(mut out: W, start_time_s: Option<f64>) -> io::Result<Self> {
        writeln!(out, "#[Histogram log format version 1.3]")?;
        if let Some(t) = start_time_s {
            writeln!(out, "#[StartTime: {t:.3} (seconds since epoch)]")?;
        }
        writeln!(
            out,
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        )?;
        Ok(IntervalLogWriter { out })
    }

    /// Writes a `#` comment line.
    ///
    /// # Errors
    /// `InvalidInput` for a comment with a line break; whatever writing reports.
    pub fn write_comment(&mut self, comment: &str) -> io::Result<()> {
        if comment.contains(['\n', '\r']) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an interval-log comment must be one line",
            ));
        }
        writeln!(self.out, "#{comment}")
    }

    /// Writes one interval: it started `start_s` seconds after the log's start time and lasted
    /// `length_s` seconds. `tag` names the series (no commas, spaces or line breaks).
    ///
    /// # Errors
    /// `InvalidInput` for a bad tag; whatever writing reports.
    pub fn write_interval(
        &mut self,
        snapshot: &HistogramSnapshot,
        start_s: f64,
        length_s: f64,
        tag: Option<&str>,
    ) -> io::Result<()> {
        if let Some(tag) = tag {
            if tag.is_empty() || tag.contains([',', ' ', '\r', '\n']) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "interval-log tag {tag:?} must be non-empty, without ',', ' ' or line breaks"
                    ),
                ));
            }
            write!(self.out, "Tag={tag},")?;
        }
        let max_ms = snapshot.max_ns.unwrap_or(0) as f64 / 1e6;
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(encode_v2_compressed(snapshot)?);
        writeln!(self.out, "{start_s:.3},{length_s:.3},{max_ms:.3},{encoded}")
    }

    /// Flushes and returns the writer.
    ///
    /// # Errors
    /// Whatever flushing reports.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_leb128_64b9b() {
        let enc = |v| {
            let mut out = Vec::new();
            put_varint(v, &mut out);
            out
        };
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(127), [127]);
        assert_eq!(enc(128), [0x80, 1]);
        assert_eq!(enc(300), [0xac, 0x02]);
        assert_eq!(enc(u64::MAX).len(), 9);
        assert_eq!(enc(u64::MAX), [0xff; 9]);
        assert_eq!(
            (zig_zag(0), zig_zag(-1), zig_zag(1), zig_zag(-2)),
            (0, 1, 2, 3)
        );
    }
}
