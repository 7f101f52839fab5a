//! Reading the per-CPU ring buffers in their binary page format, without stopping them.
//!
//! # Background
//! Each CPU's ring buffer is exposed as `per_cpu/cpuN/trace_pipe_raw`. A `read` of one page
//! size swaps the reader page out of the ring (a consuming read: the writer never stops and
//! never waits) and returns it as the kernel wrote it: a header (base timestamp, commit word)
//! followed by compressed event headers (kernel/trace/ring_buffer.c, `struct
//! ring_buffer_event`):
//!
//! ```text
//! u32: type_len:5 | time_delta:27     type_len 1..=28: payload of type_len*4 bytes follows
//!                                     type_len 0: u32 length (+4) follows, then the payload
//!                                     29 padding, 30 time extend, 31 absolute time stamp
//! ```
//!
//! A non-blocking read returns a partly filled page too (the kernel copies out what is
//! committed), so a poll every few tens of milliseconds keeps up with any event rate the
//! buffer can hold for that long; when it cannot, the kernel sets a "missed events" flag in the
//! commit word, which [`Page::missed`] reports.
//!
//! # Why it works
//! The timestamps are deltas from the page's base, so decoding needs only the page itself; with
//! the instance's clock set to `mono`, they are CLOCK_MONOTONIC nanoseconds, the clock every
//! preempt measurement uses.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsFd;
use std::path::Path;

use crate::format::PageHeader;

/// Event header `type_len` values (kernel/trace/ring_buffer.c, `enum ring_buffer_type`).
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
/// `time_delta` is 27 bits wide (`TS_SHIFT` in ring_buffer.c).
const TS_SHIFT: u32 = 27;
/// Flag bits of the commit word (`RB_MISSED_EVENTS`, `RB_MISSED_STORED`).
const RB_MISSED_FLAGS: u64 = (1 << 31) | (1 << 30);
const RB_MISSED_EVENTS: u64 = 1 << 31;

/// What a decoded page held besides its events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Page {
    /// Events the kernel overwrote or dropped before this page (the reader fell behind).
    pub missed: bool,
    /// Records found on the page.
    pub records: usize,
}

/// Walks the records of one page, calling `each(timestamp_ns, record)`.
///
/// # Errors
/// A message if the page is shorter than its header says.
pub(crate) fn parse_page(
    page: &[u8],
    hdr: &PageHeader,
    mut each: impl FnMut(u64, &[u8]),
) -> Result<Page, String> {
    let word = |off: usize, size: usize| -> Result<u64, String> {
        let b = page
            .get(off..off + size)
            .ok_or_else(|| format!("page too short for a {size}-byte word at {off}"))?;
        let mut v = [0u8; 8];
        v[..size].copy_from_slice(b);
        Ok(u64::from_ne_bytes(v))
    };
    let mut ts = word(hdr.timestamp_offset, 8)?;
    let commit = word(hdr.commit_offset, hdr.commit_size)?;
    let len = usize::try_from(commit & !RB_MISSED_FLAGS).map_err(|e| e.to_string())?;
    let data = page
        .get(hdr.data_offset..hdr.data_offset + len.min(hdr.data_size))
        .ok_or("page shorter than its commit")?;
    let mut out = Page {
        missed: commit & RB_MISSED_EVENTS != 0,
        records: 0,
    };
    let u32_at = |off: usize| -> Option<u32> {
        data.get(off..off + 4)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut pos = 0;
    while let Some(head) = u32_at(pos) {
        let type_len = head & 0x1f;
        let delta = u64::from(head >> 5);
        match type_len {
            TYPE_PADDING => {
                if delta == 0 {
                    break; // the rest of the page is empty
                }
                let Some(skip) = u32_at(pos + 4) else { break };
                pos += 4 + skip as usize;
            }
            TYPE_TIME_EXTEND => {
                let Some(hi) = u32_at(pos + 4) else { break };
                ts += delta + (u64::from(hi) << TS_SHIFT);
                pos += 8;
            }
            TYPE_TIME_STAMP => {
                let Some(hi) = u32_at(pos + 4) else { break };
                // Absolute stamp: the low 59 bits; keep the page's upper bits (ring_buffer.c,
                // `rb_fix_abs_ts`).
                let abs = delta | (u64::from(hi) << TS_SHIFT);
                ts = (ts & !((1u64 << 59) - 1)) | abs;
                pos += 8;
            }
            0 => {
                let Some(total) = u32_at(pos + 4) else { break };
                let plen = (total as usize).saturating_sub(4);
                ts += delta;
                let Some(rec) = data.get(pos + 8..pos + 8 + plen) else {
                    break;
                };
                each(ts, rec);
                out.records += 1;
                pos += 8 + ((plen + 3) & !3);
            }
            n => {
                let plen = n as usize * 4;
                ts += delta;
                let Some(rec) = data.get(pos + 4..pos + 4 + plen) else {
                    break;
                };
                each(ts, rec);
                out.records += 1;
                pos += 4 + plen;
            }
        }
    }
    Ok(out)
}

/// A non-blocking reader of one CPU's `trace_pipe_raw`.
#[derive(Debug)]
pub struct CpuReader {
    /// The CPU.
    pub cpu: usize,
    file: File,
    buf: Vec<u8>,
}

impl CpuReader {
    /// Opens `path` (an instance's `per_cpu/cpuN/trace_pipe_raw`) for non-blocking reads.
    ///
    /// # Errors
    /// Whatever `open` reports.
    pub fn open(path: &Path, cpu: usize, hdr: &PageHeader) -> io::Result<CpuReader> {
        let file = File::open(path)?;
        preempt_io::sys::fdio::set_nonblocking(file.as_fd(), true)?;
        Ok(CpuReader {
            cpu,
            file,
            buf: vec![0; hdr.page_size()],
        })
    }

    /// Reads the pages available now, at most `max_pages` of them, calling `each(Item::Record(timestamp_ns, record))` per
    /// record and `each(Item::Lost)` before the records of a page the kernel marked as coming
    /// after lost events (so the caller knows *where* the gap is: between the last record it
    /// saw and the next one); returns the pages read.
    ///
    /// The bound matters when the writer outpaces the reader: "until empty" would then never
    /// end (seen: a reader starved by a load, unable to catch up, held its session's lock for
    /// ten minutes while the buffer overran). With a ring's worth of pages per call, a slow
    /// reader loses events (the kernel marks them) but always returns.
    ///
    /// # Errors
    /// A read error other than "nothing to read", or a malformed page.
    pub fn drain(
        &mut self,
        hdr: &PageHeader,
        max_pages: usize,
        mut each: impl FnMut(Item<'_>),
    ) -> io::Result<usize> {
        let mut pages = 0;
        while pages < max_pages {
            match self.file.read(&mut self.buf) {
                Ok(0) => return Ok(pages),
                Ok(n) => {
                    pages += 1;
                    let page = &self.buf[..n];
                    if missed_before(page, hdr) {
                        each(Item::Lost);
                    }
                    parse_page(page, hdr, |ts, rec| each(Item::Record(ts, rec)))
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(pages),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(pages)
    }
}

/// What [`CpuReader::drain`] hands over, in ring order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// Events were lost here (the writer overwrote pages the reader had not read yet).
    Lost,
    /// One record and its time stamp.
    Record(u64, &'a [u8]),
}

/// Whether the page's commit word carries the "missed events" flag.
fn missed_before(page: &[u8], hdr: &PageHeader) -> bool {
    let mut v = [0u8; 8];
    match page.get(hdr.commit_offset..hdr.commit_offset + hdr.commit_size.min(8)) {
        Some(b) => {
            v[..b.len()].copy_from_slice(b);
            u64::from_ne_bytes(v) & RB_MISSED_EVENTS != 0
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr() -> PageHeader {
        PageHeader {
            timestamp_offset: 0,
            commit_offset: 8,
            commit_size: 8,
            data_offset: 16,
            data_size: 4080,
        }
    }

    fn page(events: &[u32], flags: u64) -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        p[0..8].copy_from_slice(&1_000u64.to_ne_bytes());
        let len = (events.len() * 4) as u64 | flags;
        p[8..16].copy_from_slice(&len.to_ne_bytes());
        for (i, w) in events.iter().enumerate() {
            p[16 + i * 4..20 + i * 4].copy_from_slice(&w.to_ne_bytes());
        }
        p
    }

    #[test]
    fn decodes_deltas_extends_and_long_records() {
        let events = [
            (5 << 5) | 2, // delta 5, 8-byte payload
            0xaaaa,
            0xbbbb,
            (3 << 5) | TYPE_TIME_EXTEND, // +3 + (1 << 27)
            1,
            (7 << 5), // type_len 0: length word then payload
            8,        // 4 + 4 bytes
            0xcccc,
        ];
        let mut seen = Vec::new();
        let p = parse_page(&page(&events, 0), &hdr(), |ts, rec| {
            seen.push((ts, rec.to_vec()));
        })
        .unwrap();
        assert_eq!(p.records, 2);
        assert!(!p.missed);
        assert_eq!(seen[0].0, 1_005);
        assert_eq!(&seen[0].1[..4], &0xaaaau32.to_ne_bytes());
        assert_eq!(seen[1].0, 1_005 + 3 + (1 << 27) + 7);
        assert_eq!(seen[1].1, 0xccccu32.to_ne_bytes());
    }

    #[test]
    fn reports_missed_events_and_stops_at_padding() {
        let events = [(1 << 5) | 1, 7, TYPE_PADDING, 0];
        let mut n = 0;
        let p = parse_page(&page(&events, RB_MISSED_EVENTS), &hdr(), |_, _| n += 1).unwrap();
        assert!(p.missed);
        assert_eq!(n, 1);
    }
}
