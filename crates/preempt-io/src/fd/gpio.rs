//! [`GpioSource`]: edge events of GPIO lines as a hardware-task event source.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use super::FdSource;
use crate::sys::gpio::{Edge, GpioChip, LineEvent, LineHandle, LineRequest};

/// Events fetched per `read(2)`: the kernel's default per-line event buffer (16).
const BATCH: usize = 16;

/// One edge, time-stamped by the kernel when the interrupt fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpioEdge {
    /// Line offset on the chip.
    pub offset: u32,
    /// Rising or falling.
    pub edge: Edge,
    /// Kernel time stamp, ns on the request's event clock (`CLOCK_MONOTONIC` by default), so
    /// `task start − timestamp_ns` is the edge-to-task latency.
    pub timestamp_ns: u64,
    /// Sequence number across the request's lines.
    pub seqno: u32,
    /// Sequence number on this line.
    pub line_seqno: u32,
}

/// Requested GPIO lines with edge detection, non-blocking.
#[derive(Debug)]
pub struct GpioSource {
    line: LineHandle,
    buf: [LineEvent; BATCH],
    next: usize,
    len: usize,
    last_seqno: u32,
    lost: u64,
}

impl GpioSource {
    /// Opens `chip` and requests the lines of `request`, which must enable edge detection.
    ///
    /// # Errors
    /// `InvalidInput` without edge detection; as [`GpioChip::open`] and
    /// [`GpioChip::request_lines`].
    pub fn open(chip: impl AsRef<Path>, request: &LineRequest) -> io::Result<GpioSource> {
        if !request.has_edges() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a GPIO event source needs edge detection: add .edges(Edge::Rising | Falling | Both)",
            ));
        }
        let chip = GpioChip::open(chip)?;
        Self::from_handle(chip.request_lines(request)?)
    }

    /// Wraps lines already requested with edge detection and makes them non-blocking.
    ///
    /// # Errors
    /// Whatever `fcntl` reports.
    pub fn from_handle(line: LineHandle) -> io::Result<GpioSource> {
        line.set_nonblocking(true)?;
        Ok(GpioSource {
            line,
            buf: [LineEvent::default(); BATCH],
            next: 0,
            len: 0,
            last_seqno: 0,
            lost: 0,
        })
    }

    /// The lines, for reading their values.
    pub fn lines(&self) -> &LineHandle {
        &self.line
    }

    /// Events the kernel dropped because its buffer was full (gaps in the sequence numbers).
    pub fn lost_events(&self) -> u64 {
        self.lost
    }
}

impl FdSource for GpioSource {
    type Event<'a> = GpioEdge;

    fn read_event(&mut self) -> io::Result<Option<GpioEdge>> {
        if self.next == self.len {
            match self.line.read_events(&mut self.buf) {
                Ok(n) => {
                    self.next = 0;
                    self.len = n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(e),
            }
            if self.len == 0 {
                return Ok(None);
            }
        }
        let raw = self.buf[self.next];
        self.next += 1;
        let gap = raw.seqno().wrapping_sub(self.last_seqno).wrapping_sub(1);
        self.lost += u64::from(gap);
        self.last_seqno = raw.seqno();
        let edge = raw.edge().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("GPIO event with unknown edge id on line {}", raw.offset()),
            )
        })?;
        Ok(Some(GpioEdge {
            offset: raw.offset(),
            edge,
            timestamp_ns: raw.timestamp_ns(),
            seqno: raw.seqno(),
            line_seqno: raw.line_seqno(),
        }))
    }
}

impl AsFd for GpioSource {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.line.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fd::Poller;
    use crate::sys::gpio::chips;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    /// A `struct gpio_v2_line_event` as the kernel writes it.
    fn record(timestamp_ns: u64, id: u32, offset: u32, seqno: u32, line_seqno: u32) -> Vec<u8> {
        let mut b = Vec::with_capacity(48);
        b.extend_from_slice(&timestamp_ns.to_ne_bytes());
        for v in [id, offset, seqno, line_seqno] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.resize(48, 0);
        b
    }

    /// The decoding path, fed by a socket standing in for the kernel's line descriptor.
    #[test]
    fn edge_records_decode_and_sequence_gaps_count_as_lost() {
        let (kernel, line) = UnixStream::pair().unwrap();
        let handle = LineHandle::from_fd_for_test(line.into(), &[17, 27]);
        let mut source = GpioSource::from_handle(handle).unwrap();
        let mut poller = Poller::new().unwrap();
        poller.register(&source, 17).unwrap();
        assert_eq!(source.read_event().unwrap(), None);
        let mut bytes = record(1_000, 1, 17, 1, 1);
        bytes.extend(record(2_000, 2, 27, 2, 1));
        bytes.extend(record(5_000, 1, 17, 5, 3)); // seqno 3 and 4 were dropped
        (&kernel).write_all(&bytes).unwrap();
        let mut ready = [Default::default(); 1];
        assert_eq!(poller.wait_until(&mut ready, None).unwrap(), 1);
        let mut edges = Vec::new();
        assert_eq!(source.drain(16, |e| edges.push(e)).unwrap(), 3);
        assert_eq!(
            edges[1],
            GpioEdge {
                offset: 27,
                edge: Edge::Falling,
                timestamp_ns: 2_000,
                seqno: 2,
                line_seqno: 1
            }
        );
        assert_eq!(edges[0].edge, Edge::Rising);
        assert_eq!(edges[2].timestamp_ns, 5_000);
        assert_eq!(source.lost_events(), 2);
        (&kernel).write_all(&record(6_000, 9, 17, 6, 4)).unwrap();
        let err = loop {
            match source.read_event() {
                Ok(None) => std::thread::yield_now(),
                Ok(Some(e)) => panic!("unknown edge id accepted: {e:?}"),
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn requests_without_edge_detection_are_refused() {
        let err = GpioSource::open("/dev/gpiochip0", &LineRequest::input(&[0], "t")).unwrap_err();
        assert!(err.to_string().contains("edge detection"), "{err}");
    }

    /// On a machine with a GPIO chip: request line 0 as an input with edge detection and check
    /// that the descriptor polls and reads without error (no edge can be generated without a
    /// loop-back wire or gpio-sim, so none is expected).
    #[test]
    fn a_real_chip_line_can_be_requested_for_edges() {
        let chips = chips().unwrap();
        let Some(path) = chips.first() else {
            eprintln!(
                "skipped: no /dev/gpiochip* here (kernel without CONFIG_GPIO_CDEV; on a Pi or \
                 with `modprobe gpio-sim` this test requests a real line)"
            );
            return;
        };
        let chip = GpioChip::open(path).unwrap();
        let free = (0..chip.info().unwrap().lines).find(|&o| !chip.line_info(o).unwrap().used);
        let Some(offset) = free else {
            eprintln!("skipped: every line of {} is in use", path.display());
            return;
        };
        let request = LineRequest::input(&[offset], "preempt-test").edges(Edge::Both);
        let mut source = GpioSource::open(path, &request).unwrap();
        assert!(source.lines().values().unwrap() <= 1);
        assert_eq!(chip.line_info(offset).unwrap().consumer, "preempt-test");
        let mut poller = Poller::new().unwrap();
        poller.register(&source, 1).unwrap();
        let mut ready = [Default::default(); 1];
        let deadline = crate::sys::clock::monotonic_now_ns() + 1_000_000;
        let n = poller.wait_until(&mut ready, Some(deadline)).unwrap();
        if n == 0 {
            assert_eq!(source.read_event().unwrap(), None);
        }
    }
}
