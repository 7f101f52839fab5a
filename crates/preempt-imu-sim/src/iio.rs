//! A stand-in IIO buffered device fed by the simulator, for testing
//! `preempt_io::rtio::sensor::iio` on a machine without IIO hardware.
//!
//! It behaves like an accelerometer's IIO device as far as a reader can tell: a sysfs-like
//! directory (`scan_elements/in_accel_{x,y,z}_{en,index,type}`, `in_timestamp_*`,
//! `buffer/{enable,length,watermark}`) and a character-device stand-in, a named pipe, that
//! delivers whole scans (`le:s16` x, y, z, then an `le:s64` timestamp: 16 bytes, the layout
//! the kernel's accelerometer drivers produce) in batches of `buffer/watermark` scans — the
//! moment a real device's poll would report `POLLIN`. A difference: a real buffer drops scans
//! when full, this one makes the feed wait. [`StandIn::feed`] starts when the reader
//! enables the buffer, honours the channels and watermark it configured, samples at the ODR
//! from an absolute periodic timerfd (the simulator's sample generator) and writes each batch
//! with one `write` (atomic up to `PIPE_BUF`, so a read never sees half a batch).
//!
//! ```no_run
//! # fn main() -> std::io::Result<()> {
//! use preempt_imu_sim::iio::StandIn;
//! let s = StandIn::create(std::path::Path::new("/tmp/iio-standin"))?;
//! // A reader calls preempt_io::rtio::sensor::iio::setup(&s.device, ...) meanwhile.
//! let written = s.feed(3200, 1000)?;
//! # Ok(()) }
//! ```

use std::io;
use std::os::fd::AsFd;
use std::path::Path;

use preempt_io::rtio::sensor::iio::{IioDevice, ScanLayout, ScanType};
use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::fdio;
use preempt_io::sys::timerfd::TimerFd;

/// Channels of the stand-in: (attribute prefix, scan index, `*_type`).
pub(crate) const CHANNELS: [(&str, u32, &str); 4] = [
    ("in_accel_x", 0, "le:s16/16>>0"),
    ("in_accel_y", 1, "le:s16/16>>0"),
    ("in_accel_z", 2, "le:s16/16>>0"),
    ("in_timestamp", 3, "le:s64/64>>0"),
];

/// Bytes a pipe write delivers atomically (POSIX `PIPE_BUF` on Linux).
const PIPE_BUF: usize = 4096;

/// How long [`StandIn::feed`] waits for the reader to enable the buffer.
const ENABLE_TIMEOUT_NS: u64 = 10_000_000_000;

/// A stand-in device on disk.
#[derive(Debug)]
pub struct StandIn {
    /// Its sysfs directory and device node, as a reader opens them.
    pub device: IioDevice,
    /// The pipe, held open read-write from creation: a reader never sees end-of-file before
    /// the feed starts (a real device has no "writer" to wait for), and writes never fail
    /// with EPIPE after the reader left (the feed stops at its scan count).
    pipe: std::fs::File,
}

impl StandIn {
    /// Creates the directory tree and the named pipe under `dir` (which must not hold a
    /// previous stand-in).
    ///
    /// # Errors
    /// Directory, file or `mkfifo` errors.
    pub fn create(dir: &Path) -> io::Result<StandIn> {
        let sysfs = dir.join("iio:device0");
        std::fs::create_dir_all(sysfs.join("scan_elements"))?;
        std::fs::create_dir_all(sysfs.join("buffer"))?;
        for (name, index, ty) in CHANNELS {
            let se = sysfs.join("scan_elements");
            std::fs::write(se.join(format!("{name}_en")), "0\n")?;
            std::fs::write(se.join(format!("{name}_index")), format!("{index}\n"))?;
            std::fs::write(se.join(format!("{name}_type")), format!("{ty}\n"))?;
        }
        std::fs::write(sysfs.join("name"), "imu-sim-standin\n")?;
        for (attr, v) in [("enable", "0"), ("length", "128"), ("watermark", "1")] {
            std::fs::write(sysfs.join("buffer").join(attr), format!("{v}\n"))?;
        }
        let dev = dir.join("dev-iio:device0");
        fdio::mkfifo(&dev)?;
        // O_RDWR on a FIFO does not wait for a peer (Linux, fifo(7)).
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&dev)?;
        Ok(StandIn {
            device: IioDevice { sysfs, dev },
            pipe,
        })
    }

    fn attr(&self, rel: &str) -> io::Result<String> {
        Ok(std::fs::read_to_string(self.device.sysfs.join(rel))?
            .trim()
            .to_owned())
    }

    /// Waits for the reader to enable the buffer, then samples at `odr_hz` and writes `scans`
    /// scans of the enabled channels in batches of `buffer/watermark`; returns the scans
    /// written (a last partial batch is not written, as a device below its watermark does
    /// not wake its reader). A reader that stops reading blocks the feed once the pipe
    /// (64 KiB) is full, as a full IIO buffer stops taking scans.
    ///
    /// # Errors
    /// The buffer not enabled within 10 s; an attribute missing or malformed; a batch larger
    /// than `PIPE_BUF`; timer or write errors.
    pub fn feed(&self, odr_hz: u32, scans: u64) -> io::Result<u64> {
        let t0 = clock::monotonic_now_ns();
        while self.attr("buffer/enable")? != "1" {
            if clock::monotonic_now_ns() - t0 > ENABLE_TIMEOUT_NS {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "stand-in IIO device: the reader never enabled buffer/enable",
                ));
            }
            clock::sleep_until_ns(ClockId::Monotonic, clock::monotonic_now_ns() + 1_000_000)?;
        }
        let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        let watermark: usize = self
            .attr("buffer/watermark")?
            .parse()
            .map_err(|_| bad("buffer/watermark is not a number".into()))?;
        let mut enabled = Vec::new();
        for (name, index, ty) in CHANNELS {
            if self.attr(&format!("scan_elements/{name}_en"))? == "1" {
                let t = ScanType::parse(ty).ok_or_else(|| bad(format!("{name}_type")))?;
                enabled.push((name.to_owned(), index, t));
            }
        }
        let layout = ScanLayout::new(enabled)?;
        let batch_len = watermark.max(1) * layout.scan_bytes;
        if batch_len > PIPE_BUF {
            return Err(bad(format!(
                "watermark {watermark} x {} bytes exceeds PIPE_BUF ({PIPE_BUF}): a read could see half a batch",
                layout.scan_bytes
            )));
        }
        let out = &self.pipe;
        let period = 1_000_000_000 / u64::from(odr_hz.max(1));
        let timer = TimerFd::new(ClockId::Monotonic, false)?;
        timer.set_absolute_ns(clock::monotonic_now_ns() + period, period)?;
        let mut batch = vec![0_u8; batch_len];
        let (mut k, mut fill) = (0_u64, 0_usize);
        while k < scans {
            let n = timer.read_expirations()?;
            let now = clock::now_ns(ClockId::Monotonic);
            let due = n.min(scans - k);
            for j in 0..due {
                // A late tick (n > 1) stands for n samples, one period apart, ending now.
                let t = now - (due - 1 - j) * period;
                let f = crate::sim::sample(0, false, k, t);
                let scan = &mut batch[fill * layout.scan_bytes..(fill + 1) * layout.scan_bytes];
                scan.fill(0);
                for c in &layout.channels {
                    let v: [u8; 8] = match c.name.as_str() {
                        "in_accel_x" => i64::from(f.accel[0]).to_le_bytes(),
                        "in_accel_y" => i64::from(f.accel[1]).to_le_bytes(),
                        "in_accel_z" => i64::from(f.accel[2]).to_le_bytes(),
                        _ => t.to_le_bytes(),
                    };
                    let w = c.ty.storage_bytes;
                    scan[c.offset..c.offset + w].copy_from_slice(&v[..w]);
                }
                k += 1;
                fill += 1;
                if fill == watermark {
                    fdio::write(out.as_fd(), &batch)?;
                    fill = 0;
                }
            }
        }
        Ok(k - u64::try_from(fill).unwrap_or(0))
    }
}
