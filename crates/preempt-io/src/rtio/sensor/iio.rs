//! The sensor stream on Linux's real analog of Zephyr's sensor streaming: an IIO buffered
//! device (`/dev/iio:deviceN`) with a hardware FIFO watermark.
//!
//! Background: on Zephyr a sensor stream is an RTIO chain the driver runs from the interrupt
//! (read status, count, FIFO) and the application sees one completion per watermark. Linux
//! user space cannot run such a chain in interrupt context (see docs/PERFORMANCE.md, "RTIO on
//! Linux"); the kernel's IIO drivers already do: the device's watermark interrupt runs the
//! driver's threaded handler, which drains the hardware FIFO into the IIO buffer (a kfifo of
//! *scans*), and `poll` on `/dev/iio:deviceN` reports `POLLIN` once `buffer/watermark` scans
//! are queued (`iio_buffer_poll` → `iio_buffer_ready`). The reader then gets a batch of
//! whole scans with one `read`: one wake-up per watermark, no register traffic in user space.
//!
//! Solution: [`setup`] configures the device through sysfs the way `iio_generic_buffer` does
//! (disable the buffer, enable the wanted `scan_elements/*_en`, set `buffer/length` and
//! `buffer/watermark`, enable the buffer), derives the scan layout from
//! `scan_elements/*_index` and `*_type` ([`ScanLayout`]), and opens the character device
//! `O_NONBLOCK`; [`IioStream`] reads it through an [`Rtio`] context: one read per arm, which
//! io_uring poll-arms in the kernel (so it completes when the watermark is reached) and the
//! epoll backend waits for readiness.
//!
//! This machine has no IIO device; the tests use a stand-in that behaves like one: a sysfs
//! directory of plain files and a named pipe fed by the IMU simulator in batches of
//! `watermark` scans (`preempt_imu_sim::iio`). A real device works the same way: pass
//! `/sys/bus/iio/devices/iio:deviceN` and `/dev/iio:deviceN`.
//!
//! ```
//! use preempt_io::rtio::sensor::iio::ScanType;
//! let t = ScanType::parse("le:s16/16>>0").unwrap();
//! assert_eq!((t.signed, t.bits, t.storage_bytes, t.shift), (true, 16, 2, 0));
//! assert_eq!(t.value(&[0x00, 0x08]), 2048);
//! ```

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::super::{BufferId, Cqe, IodevId, Rtio, RtioError, Sqe};
use crate::sys::fdio;

/// One channel's `scan_elements/*_type`: `[be|le]:[s|u]BITS/STORAGE[>>SHIFT]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanType {
    /// Big-endian storage.
    pub big_endian: bool,
    /// Signed value.
    pub signed: bool,
    /// Significant bits.
    pub bits: u32,
    /// Bytes the value occupies in a scan (storage bits / 8).
    pub storage_bytes: usize,
    /// Right shift applied to the stored value.
    pub shift: u32,
}

impl ScanType {
    /// Parses a `*_type` attribute (`le:s16/16>>0`); `None` if it is malformed or a repeat
    /// count (`X`) is present, which this reader does not support.
    pub fn parse(s: &str) -> Option<ScanType> {
        let s = s.trim();
        let (endian, rest) = s.split_once(':')?;
        let big_endian = match endian {
            "be" => true,
            "le" => false,
            _ => return None,
        };
        let signed = match rest.as_bytes().first()? {
            b's' => true,
            b'u' => false,
            _ => return None,
        };
        let (bits, rest) = rest[1..].split_once('/')?;
        let (storage, shift) = rest.split_once(">>").unwrap_or((rest, "0"));
        let storage: u32 = storage.parse().ok()?;
        let bits: u32 = bits.parse().ok()?;
        if storage % 8 != 0 || !(8..=64).contains(&storage) || bits == 0 || bits > storage {
            return None;
        }
        Some(ScanType {
            big_endian,
            signed,
            bits,
            storage_bytes: (storage / 8) as usize,
            shift: shift.parse().ok()?,
        })
    }

    /// The channel's value in `b` (its `storage_bytes`): byte order, shift, sign extension.
    pub fn value(&self, b: &[u8]) -> i64 {
        let mut raw: u64 = 0;
        for i in 0..self.storage_bytes.min(b.len()) {
            let byte = if self.big_endian {
                b[i]
            } else {
                b[self.storage_bytes - 1 - i]
            };
            raw = (raw << 8) | u64::from(byte);
        }
        raw >>= self.shift;
        if self.bits < 64 {
            raw &= (1_u64 << self.bits) - 1;
        }
        if self.signed && self.bits < 64 && raw & (1 << (self.bits - 1)) != 0 {
            // Sign-extend: the reinterpretation of the two's-complement bits is intended.
            (raw | !((1_u64 << self.bits) - 1)) as i64
        } else {
            raw as i64
        }
    }
}

/// One enabled channel of a scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanChannel {
    /// Attribute prefix, e.g. `in_accel_x` or `in_timestamp`.
    pub name: String,
    /// `*_index`: the channel's position in the scan order.
    pub index: u32,
    /// Byte offset in a scan.
    pub offset: usize,
    /// Storage format.
    pub ty: ScanType,
}

/// Where each enabled channel sits in a scan: IIO packs channels in index order, each aligned
/// to its own storage size, and pads the scan to its largest element (`iio_compute_scan_bytes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanLayout {
    /// Enabled channels, in scan order.
    pub channels: Vec<ScanChannel>,
    /// Bytes per scan.
    pub scan_bytes: usize,
}

impl ScanLayout {
    /// The layout of channels given as (name, index, type).
    ///
    /// # Errors
    /// `InvalidInput` if there is no channel.
    pub fn new(mut chans: Vec<(String, u32, ScanType)>) -> io::Result<ScanLayout> {
        if chans.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an IIO scan needs at least one enabled channel",
            ));
        }
        chans.sort_by_key(|c| c.1);
        let (mut at, mut largest) = (0_usize, 1_usize);
        let mut channels = Vec::new();
        for (name, index, ty) in chans {
            let n = ty.storage_bytes;
            at = at.next_multiple_of(n);
            channels.push(ScanChannel {
                name,
                index,
                offset: at,
                ty,
            });
            at += n;
            largest = largest.max(n);
        }
        Ok(ScanLayout {
            channels,
            scan_bytes: at.next_multiple_of(largest),
        })
    }

    /// Position of the channel named `name` in [`channels`](Self::channels).
    pub fn position(&self, name: &str) -> Option<usize> {
        self.channels.iter().position(|c| c.name == name)
    }

    /// Value of channel `ch` (a [`position`](Self::position)) in one scan.
    pub fn value(&self, scan: &[u8], ch: usize) -> i64 {
        let c = &self.channels[ch];
        c.ty.value(&scan[c.offset..c.offset + c.ty.storage_bytes])
    }
}

/// An IIO device: its sysfs directory and character device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IioDevice {
    /// `/sys/bus/iio/devices/iio:deviceN` (or a stand-in directory).
    pub sysfs: PathBuf,
    /// `/dev/iio:deviceN` (or a stand-in named pipe).
    pub dev: PathBuf,
}

fn attr_path(dev: &IioDevice, rel: &str) -> PathBuf {
    dev.sysfs.join(rel)
}

fn write_attr(dev: &IioDevice, rel: &str, value: &str) -> io::Result<()> {
    use std::io::Write;
    let p = attr_path(dev, rel);
    // No O_CREAT: a sysfs attribute exists or the device lacks it.
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&p)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(|e| named(&p, e))
}

fn read_attr(dev: &IioDevice, rel: &str) -> io::Result<String> {
    let p = attr_path(dev, rel);
    std::fs::read_to_string(&p).map_err(|e| named(&p, e))
}

fn named(p: &Path, e: io::Error) -> io::Error {
    let hint = if e.kind() == io::ErrorKind::PermissionDenied {
        " (IIO sysfs attributes are root-owned: run as root or chown them with a udev rule)"
    } else {
        ""
    };
    io::Error::new(e.kind(), format!("{}: {e}{hint}", p.display()))
}

/// Configures `dev`'s buffer for `channels` (attribute prefixes such as `in_accel_x`,
/// `in_timestamp`) with `length` scans of buffer and a `watermark` (scans per wake-up), enables
/// it and opens the character device `O_NONBLOCK`. Returns the descriptor and the layout.
///
/// # Errors
/// A sysfs attribute that cannot be read or written (the message names it), a malformed
/// `*_type`, `watermark` 0 or above `length`, or the open of the device failing.
pub fn setup(
    dev: &IioDevice,
    channels: &[&str],
    watermark: u32,
    length: u32,
) -> io::Result<(OwnedFd, ScanLayout)> {
    if watermark == 0 || watermark > length {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("IIO watermark {watermark}: must be 1..=buffer length ({length})"),
        ));
    }
    // Scan elements and buffer geometry can only change while the buffer is disabled.
    write_attr(dev, "buffer/enable", "0")?;
    let mut chans = Vec::new();
    for name in channels {
        write_attr(dev, &format!("scan_elements/{name}_en"), "1")?;
        let index: u32 = read_attr(dev, &format!("scan_elements/{name}_index"))?
            .trim()
            .parse()
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("scan_elements/{name}_index is not a number"),
                )
            })?;
        let ty_s = read_attr(dev, &format!("scan_elements/{name}_type"))?;
        let ty = ScanType::parse(&ty_s).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "scan_elements/{name}_type '{}' is not supported",
                    ty_s.trim()
                ),
            )
        })?;
        chans.push(((*name).to_owned(), index, ty));
    }
    let layout = ScanLayout::new(chans)?;
    write_attr(dev, "buffer/length", &length.to_string())?;
    write_attr(dev, "buffer/watermark", &watermark.to_string())?;
    write_attr(dev, "buffer/enable", "1")?;
    let fd = fdio::open_read_nonblocking(&dev.dev).map_err(|e| named(&dev.dev, e))?;
    Ok((fd, layout))
}

/// A stream of scans from an IIO buffer through an [`Rtio`] context.
#[derive(Debug)]
pub struct IioStream {
    dev: IodevId,
    buf: BufferId,
    layout: ScanLayout,
    max_scans: usize,
    userdata: u64,
}

impl IioStream {
    /// Registers the IIO character device `fd` (from [`setup`]) with `rtio` (setup phase) and
    /// a buffer for up to `max_scans` scans per read.
    ///
    /// # Errors
    /// `max_scans` = 0; RTIO setup errors.
    pub fn new(
        rtio: &mut Rtio,
        fd: OwnedFd,
        layout: ScanLayout,
        max_scans: usize,
        userdata: u64,
    ) -> io::Result<IioStream> {
        if max_scans == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an IIO stream reads at least one scan",
            ));
        }
        let dev = rtio.register_fd("iio", fd)?;
        let buf = rtio.alloc_buffer(max_scans * layout.scan_bytes)?;
        Ok(IioStream {
            dev,
            buf,
            layout,
            max_scans,
            userdata,
        })
    }

    /// Queues one read of up to `max_scans` scans; it completes when the buffer has data (on
    /// a real device: `buffer/watermark` scans). Call [`Rtio::submit`] after.
    ///
    /// # Errors
    /// Submission pool full.
    pub fn arm(&self, rtio: &mut Rtio) -> Result<(), RtioError> {
        let len = u32::try_from(self.max_scans * self.layout.scan_bytes).unwrap_or(u32::MAX);
        rtio.prepare(Sqe::read(self.dev, self.buf, len).userdata(self.userdata))?;
        Ok(())
    }

    /// The scans a completed read delivered (whole scans, `layout().scan_bytes` each).
    ///
    /// # Errors
    /// The read's `-errno`; `-EIO` for a read that ended mid-scan (an IIO buffer only hands
    /// out whole scans) or end of file (the device went away).
    pub fn complete<'r>(&self, rtio: &'r Rtio, cqe: &Cqe) -> Result<&'r [u8], i32> {
        if cqe.result < 0 {
            return Err(cqe.result);
        }
        let n = cqe.result.unsigned_abs() as usize;
        if n == 0 || n % self.layout.scan_bytes != 0 {
            return Err(-libc::EIO);
        }
        let b = rtio.buffer(self.buf).map_err(|_| -libc::EBUSY)?;
        Ok(&b[..n])
    }

    /// The scan layout.
    pub fn layout(&self) -> &ScanLayout {
        &self.layout
    }

    /// The userdata tagging this stream's completions.
    pub fn userdata(&self) -> u64 {
        self.userdata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_types_and_layout_follow_iio() {
        let s16 = ScanType::parse("le:s16/16>>0").unwrap();
        let ts = ScanType::parse("le:s64/64>>0").unwrap();
        assert_eq!(s16.value(&(-3_i16).to_le_bytes()), -3);
        assert_eq!(ts.value(&(-5_i64).to_le_bytes()), -5);
        // 12 significant bits stored left-aligned in 16, big-endian (e.g. an ADXL345 mode).
        let be = ScanType::parse("be:s12/16>>4").unwrap();
        assert_eq!(be.value(&[0xff, 0xf0]), -1);
        assert_eq!(ScanType::parse("le:u8/8").unwrap().value(&[200]), 200);
        for bad in [
            "xx:s16/16>>0",
            "le:q16/16",
            "le:s16/12>>0",
            "le:s0/8",
            "le:s16",
        ] {
            assert_eq!(ScanType::parse(bad), None, "{bad}");
        }
        // x, y, z (s16) then the timestamp (s64), aligned to 8: 16-byte scans, as the kernel's
        // accelerometer drivers produce.
        let l = ScanLayout::new(vec![
            ("in_timestamp".into(), 3, ts),
            ("in_accel_x".into(), 0, s16),
            ("in_accel_y".into(), 1, s16),
            ("in_accel_z".into(), 2, s16),
        ])
        .unwrap();
        let offs: Vec<usize> = l.channels.iter().map(|c| c.offset).collect();
        assert_eq!((offs, l.scan_bytes), (vec![0, 2, 4, 8], 16));
        let mut scan = [0_u8; 16];
        scan[4..6].copy_from_slice(&2048_i16.to_le_bytes());
        assert_eq!(l.value(&scan, l.position("in_accel_z").unwrap()), 2048);
        assert!(ScanLayout::new(Vec::new()).is_err());
    }
}
