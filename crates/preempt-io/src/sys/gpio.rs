//! The Linux GPIO character device, uAPI v2 (`<linux/gpio.h>`, Linux 5.10+): chip and line
//! information, line requests with edge detection, and edge events with kernel timestamps.
//!
//! A GPIO chip is `/dev/gpiochipN`. `GPIO_V2_GET_LINE_IOCTL` on it requests up to 64 lines and
//! returns a new descriptor for them; with edge detection enabled, that descriptor becomes
//! readable when an edge arrives, and `read(2)` returns `struct gpio_v2_line_event` records
//! stamped by the kernel in its interrupt handler (on `CLOCK_MONOTONIC` by default), so a
//! reader learns *when* the edge happened, not only when it was woken. This is the measurement
//! the seeds' GPIO-latency experiments make with a logic analyser.
//!
//! The structures below mirror the kernel's byte for byte; the tests check their sizes and the
//! ioctl numbers against the values the C header gives (`gcc` on `<linux/gpio.h>`, identical on
//! x86-64 and AArch64 because every 64-bit field is `__aligned_u64`).
//!
//! ```no_run
//! use preempt_io::sys::gpio::{chips, Edge, GpioChip, LineRequest};
//! let chip = GpioChip::open(&chips()?[0])?;
//! let line = chip.request_lines(&LineRequest::input(&[17], "preempt").edges(Edge::Both))?;
//! let mut events = [Default::default(); 8];
//! let n = line.read_events(&mut events)?; // blocks until an edge (the descriptor is blocking)
//! println!("edge at {} ns", events[0].timestamp_ns());
//! # let _ = n;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// `GPIO_MAX_NAME_SIZE`.
const NAME_SIZE: usize = 32;
/// `GPIO_V2_LINES_MAX`: lines per request.
pub(crate) const MAX_LINES: usize = 64;
/// `GPIO_V2_LINE_NUM_ATTRS_MAX`.
const NUM_ATTRS: usize = 10;

// Line flags (`enum gpio_v2_line_flag`).
const FLAG_USED: u64 = 1 << 0;
const FLAG_ACTIVE_LOW: u64 = 1 << 1;
const FLAG_INPUT: u64 = 1 << 2;
const FLAG_OUTPUT: u64 = 1 << 3;
const FLAG_EDGE_RISING: u64 = 1 << 4;
const FLAG_EDGE_FALLING: u64 = 1 << 5;
const FLAG_OPEN_DRAIN: u64 = 1 << 6;
const FLAG_OPEN_SOURCE: u64 = 1 << 7;
const FLAG_BIAS_PULL_UP: u64 = 1 << 8;
const FLAG_BIAS_PULL_DOWN: u64 = 1 << 9;
const FLAG_BIAS_DISABLED: u64 = 1 << 10;
const FLAG_EVENT_CLOCK_REALTIME: u64 = 1 << 11;
const FLAG_EVENT_CLOCK_HTE: u64 = 1 << 12;

// Attribute ids (`enum gpio_v2_line_attr_id`).
const ATTR_ID_FLAGS: u32 = 1;
const ATTR_ID_OUTPUT_VALUES: u32 = 2;
const ATTR_ID_DEBOUNCE: u32 = 3;

// Event ids (`enum gpio_v2_line_event_id`).
const EVENT_RISING_EDGE: u32 = 1;
const EVENT_FALLING_EDGE: u32 = 2;

/// `_IOC(dir, 0xB4, nr, size)` as `<asm-generic/ioctl.h>` builds it.
const fn ioc(dir: u64, nr: u64, size: usize) -> u64 {
    (dir << 30) | ((size as u64) << 16) | (0xB4 << 8) | nr
}
const IOC_READ: u64 = 2;
const IOC_READ_WRITE: u64 = 3;
const GPIO_GET_CHIPINFO_IOCTL: u64 = ioc(IOC_READ, 0x01, size_of::<RawChipInfo>());
const GPIO_V2_GET_LINEINFO_IOCTL: u64 = ioc(IOC_READ_WRITE, 0x05, size_of::<RawLineInfo>());
const GPIO_V2_GET_LINE_IOCTL: u64 = ioc(IOC_READ_WRITE, 0x07, size_of::<RawLineRequest>());
const GPIO_V2_LINE_GET_VALUES_IOCTL: u64 = ioc(IOC_READ_WRITE, 0x0E, size_of::<RawLineValues>());
const GPIO_V2_LINE_SET_VALUES_IOCTL: u64 = ioc(IOC_READ_WRITE, 0x0F, size_of::<RawLineValues>());

#[repr(C)]
#[derive(Clone, Copy)]
struct RawChipInfo {
    name: [u8; NAME_SIZE],
    label: [u8; NAME_SIZE],
    lines: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawLineAttribute {
    id: u32,
    padding: u32,
    /// The union of `flags`, `values` and `debounce_period_us` (in its low 32 bits on
    /// little-endian, high on big-endian: see `debounce_us`).
    value: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawLineConfigAttribute {
    attr: RawLineAttribute,
    mask: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawLineConfig {
    flags: u64,
    num_attrs: u32,
    padding: [u32; 5],
    attrs: [RawLineConfigAttribute; NUM_ATTRS],
}

#[repr(C)]
#[derive(Clone, Copy)]
struct RawLineRequest {
    offsets: [u32; MAX_LINES],
    consumer: [u8; NAME_SIZE],
    config: RawLineConfig,
    num_lines: u32,
    event_buffer_size: u32,
    padding: [u32; 5],
    fd: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct RawLineInfo {
    name: [u8; NAME_SIZE],
    consumer: [u8; NAME_SIZE],
    offset: u32,
    num_attrs: u32,
    flags: u64,
    attrs: [RawLineAttribute; NUM_ATTRS],
    padding: [u32; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawLineValues {
    bits: u64,
    mask: u64,
}

/// One edge event as the kernel writes it (`struct gpio_v2_line_event`, 48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineEvent {
    timestamp_ns: u64,
    id: u32,
    offset: u32,
    seqno: u32,
    line_seqno: u32,
    padding: [u32; 6],
}

/// Which edge an event reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Edge {
    /// Inactive to active.
    Rising,
    /// Active to inactive.
    Falling,
    /// Both (only meaningful in a request).
    Both,
}

impl LineEvent {
    /// Kernel time stamp of the edge, ns, on the clock the request chose (`CLOCK_MONOTONIC`
    /// unless [`LineRequest::event_clock`] said otherwise).
    pub fn timestamp_ns(&self) -> u64 {
        self.timestamp_ns
    }

    /// The edge, or `None` for an id this kernel header does not know.
    pub fn edge(&self) -> Option<Edge> {
        match self.id {
            EVENT_RISING_EDGE => Some(Edge::Rising),
            EVENT_FALLING_EDGE => Some(Edge::Falling),
            _ => None,
        }
    }

    /// The line's offset on its chip.
    pub fn offset(&self) -> u32 {
        self.offset
    }

    /// Sequence number of this event among all lines of the request (starts at 1). A gap
    /// means the kernel's event buffer overflowed and events were lost.
    pub fn seqno(&self) -> u32 {
        self.seqno
    }

    /// Sequence number of this event on its line.
    pub fn line_seqno(&self) -> u32 {
        self.line_seqno
    }
}

fn c_str(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn ioctl<T>(fd: BorrowedFd<'_>, request: u64, arg: &mut T, what: &str) -> io::Result<()> {
    // SAFETY: every request used in this module is paired by its caller with the `repr(C)`
    // structure the kernel expects for it (the request number encodes that structure's size,
    // checked by the tests); `arg` is a valid, writable, exclusively borrowed instance for the
    // duration of the call. The `as _` adapts to libc's request type (c_ulong on glibc).
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, std::ptr::from_mut(arg)) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ENOSYS) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{what}: the GPIO ioctls are not implemented here (ENOSYS; qemu-user \
                     translates none of them): run on the target, or in a qemu-system guest"
                ),
            ));
        }
        if err.raw_os_error() == Some(libc::ENOTTY) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{what}: not a GPIO character device (ENOTTY); use a /dev/gpiochipN"),
            ));
        }
        return Err(io::Error::new(err.kind(), format!("{what}: {err}")));
    }
    Ok(())
}

/// The GPIO chips of this machine (`/dev/gpiochip*`), sorted; empty when there are none.
///
/// # Errors
/// Whatever reading `/dev` reports.
pub fn chips() -> io::Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/dev")?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("gpiochip"))
        })
        .collect();
    found.sort_by_key(|p| {
        let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        (n.len(), n.to_owned())
    });
    Ok(found)
}

/// What `GPIO_GET_CHIPINFO_IOCTL` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChipInfo {
    /// Kernel name (`gpiochip0`).
    pub name: String,
    /// Driver label (`pinctrl-rp1`, `gpio-sim.0-node0`).
    pub label: String,
    /// Number of lines.
    pub lines: u32,
}

/// What `GPIO_V2_GET_LINEINFO_IOCTL` reports about one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineInfo {
    /// Line name from the device tree or driver (may be empty).
    pub name: String,
    /// Who requested it (empty if free).
    pub consumer: String,
    /// Offset on the chip.
    pub offset: u32,
    /// Requested by someone.
    pub used: bool,
    /// Configured as output.
    pub output: bool,
    /// Active-low.
    pub active_low: bool,
    /// Edge detection configured.
    pub edges: Option<Edge>,
    /// Debounce period, if set.
    pub debounce_us: Option<u32>,
}

/// An open GPIO chip.
#[derive(Debug)]
pub struct GpioChip {
    fd: OwnedFd,
}

impl GpioChip {
    /// Opens a chip device and checks that it is one.
    ///
    /// # Errors
    /// The open error with the path; `InvalidInput` if the file is not a GPIO chip.
    pub fn open(path: impl AsRef<Path>) -> io::Result<GpioChip> {
        let path = path.as_ref();
        let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "a path cannot contain NUL")
        })?;
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            let err = io::Error::last_os_error();
            return Err(io::Error::new(
                err.kind(),
                format!("cannot open GPIO chip {}: {err}", path.display()),
            ));
        }
        // SAFETY: `fd` is a freshly opened descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let chip = GpioChip { fd };
        chip.info()?;
        Ok(chip)
    }

    /// The chip's name, label and line count.
    ///
    /// # Errors
    /// `InvalidInput` if this is not a GPIO chip; whatever the ioctl reports.
    pub fn info(&self) -> io::Result<ChipInfo> {
        let mut raw = RawChipInfo {
            name: [0; NAME_SIZE],
            label: [0; NAME_SIZE],
            lines: 0,
        };
        ioctl(
            self.fd.as_fd(),
            GPIO_GET_CHIPINFO_IOCTL,
            &mut raw,
            "GPIO_GET_CHIPINFO_IOCTL",
        )?;
        Ok(ChipInfo {
            name: c_str(&raw.name),
            label: c_str(&raw.label),
            lines: raw.lines,
        })
    }

    /// Information about line `offset`.
    ///
    /// # Errors
    /// `EINVAL` for an offset beyond the chip's lines; whatever the ioctl reports.
    pub fn line_info(&self, offset: u32) -> io::Result<LineInfo> {
        let mut raw = RawLineInfo {
            name: [0; NAME_SIZE],
            consumer: [0; NAME_SIZE],
            offset,
            num_attrs: 0,
            flags: 0,
            attrs: [RawLineAttribute::default(); NUM_ATTRS],
            padding: [0; 4],
        };
        ioctl(
            self.fd.as_fd(),
            GPIO_V2_GET_LINEINFO_IOCTL,
            &mut raw,
            "GPIO_V2_GET_LINEINFO_IOCTL",
        )?;
        let f = raw.flags;
        let n = (raw.num_attrs as usize).min(NUM_ATTRS);
        let debounce_us = raw.attrs[..n]
            .iter()
            .find(|a| a.id == ATTR_ID_DEBOUNCE)
            .map(debounce_us);
        Ok(LineInfo {
            name: c_str(&raw.name),
            consumer: c_str(&raw.consumer),
            offset: raw.offset,
            used: f & FLAG_USED != 0,
            output: f & FLAG_OUTPUT != 0,
            active_low: f & FLAG_ACTIVE_LOW != 0,
            edges: match (f & FLAG_EDGE_RISING != 0, f & FLAG_EDGE_FALLING != 0) {
                (true, true) => Some(Edge::Both),
                (true, false) => Some(Edge::Rising),
                (false, true) => Some(Edge::Falling),
                (false, false) => None,
            },
            debounce_us,
        })
    }

    /// Requests lines; the returned handle owns them until dropped.
    ///
    /// # Errors
    /// `InvalidInput` for a request the uAPI cannot express; `EBUSY` if a line is already
    /// requested (by another process or by the kernel), with the offsets in the message.
    pub fn request_lines(&self, request: &LineRequest) -> io::Result<LineHandle> {
        let mut raw = request.to_raw()?;
        ioctl(
            self.fd.as_fd(),
            GPIO_V2_GET_LINE_IOCTL,
            &mut raw,
            "GPIO_V2_GET_LINE_IOCTL",
        )
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("requesting lines {:?}: {e}", request.offsets),
            )
        })?;
        if raw.fd < 0 {
            return Err(io::Error::other(
                "GPIO_V2_GET_LINE_IOCTL succeeded without returning a descriptor",
            ));
        }
        // SAFETY: on success the kernel stored a new descriptor in `fd` that the caller owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw.fd) };
        Ok(LineHandle {
            fd,
            offsets: request.offsets.clone(),
        })
    }
}

impl AsFd for GpioChip {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The debounce period of an attribute (a `__u32` in a union with `__aligned_u64`s).
fn debounce_us(a: &RawLineAttribute) -> u32 {
    // The u32 member sits at the union's first bytes: the low half on little-endian.
    let bytes = a.value.to_ne_bytes();
    u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn debounce_value(us: u32) -> u64 {
    let mut bytes = [0_u8; 8];
    bytes[..4].copy_from_slice(&us.to_ne_bytes());
    u64::from_ne_bytes(bytes)
}

/// Electrical bias of input lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bias {
    /// Pull-up.
    PullUp,
    /// Pull-down.
    PullDown,
    /// Neither.
    Disabled,
}

/// The clock edge events are stamped with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EventClock {
    /// `CLOCK_MONOTONIC`, comparable with every preempt deadline (the default).
    #[default]
    Monotonic,
    /// `CLOCK_REALTIME`.
    Realtime,
    /// The hardware timestamp engine, where the SoC has one.
    Hte,
}

/// What to request: lines, direction, edges, bias, debounce, event clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineRequest {
    offsets: Vec<u32>,
    consumer: String,
    output: Option<u64>,
    edges: Option<Edge>,
    bias: Option<Bias>,
    active_low: bool,
    open_drain: bool,
    open_source: bool,
    debounce_us: Option<u32>,
    clock: EventClock,
    event_buffer_size: u32,
}

impl LineRequest {
    /// Inputs at `offsets`, labelled `consumer` (shown by `gpioinfo`).
    pub fn input(offsets: &[u32], consumer: &str) -> LineRequest {
        LineRequest {
            offsets: offsets.to_vec(),
            consumer: consumer.to_owned(),
            output: None,
            edges: None,
            bias: None,
            active_low: false,
            open_drain: false,
            open_source: false,
            debounce_us: None,
            clock: EventClock::Monotonic,
            event_buffer_size: 0,
        }
    }

    /// Outputs at `offsets`, initially driven to `values` (bit `i` = `offsets[i]`).
    pub fn output(offsets: &[u32], consumer: &str, values: u64) -> LineRequest {
        LineRequest {
            output: Some(values),
            ..LineRequest::input(offsets, consumer)
        }
    }

    /// Whether edge detection is enabled.
    pub(crate) fn has_edges(&self) -> bool {
        self.edges.is_some()
    }

    /// Enables edge detection (inputs only).
    #[must_use]
    pub fn edges(mut self, edge: Edge) -> LineRequest {
        self.edges = Some(edge);
        self
    }

    /// Sets the bias.
    #[must_use]
    pub fn bias(mut self, bias: Bias) -> LineRequest {
        self.bias = Some(bias);
        self
    }

    /// Inverts the logical value.
    #[must_use]
    pub fn active_low(mut self) -> LineRequest {
        self.active_low = true;
        self
    }

    /// Drives outputs open-drain.
    #[must_use]
    pub fn open_drain(mut self) -> LineRequest {
        self.open_drain = true;
        self
    }

    /// Drives outputs open-source.
    #[must_use]
    pub fn open_source(mut self) -> LineRequest {
        self.open_source = true;
        self
    }

    /// Debounces inputs for `us` microseconds.
    #[must_use]
    pub fn debounce_us(mut self, us: u32) -> LineRequest {
        self.debounce_us = Some(us);
        self
    }

    /// Chooses the event time stamp clock.
    #[must_use]
    pub fn event_clock(mut self, clock: EventClock) -> LineRequest {
        self.clock = clock;
        self
    }

    /// Kernel event buffer size (0 = the kernel's default, 16 events per line).
    #[must_use]
    pub fn event_buffer_size(mut self, events: u32) -> LineRequest {
        self.event_buffer_size = events;
        self
    }

    fn to_raw(&self) -> io::Result<RawLineRequest> {
        let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
        if self.offsets.is_empty() || self.offsets.len() > MAX_LINES {
            return Err(invalid(format!(
                "a GPIO request takes 1 to {MAX_LINES} lines, not {}",
                self.offsets.len()
            )));
        }
        let mut sorted = self.offsets.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(invalid(format!(
                "GPIO line offsets {:?} contain a duplicate",
                self.offsets
            )));
        }
        if self.consumer.len() >= NAME_SIZE || self.consumer.contains('\0') {
            return Err(invalid(format!(
                "GPIO consumer label {:?} must be under {NAME_SIZE} bytes, without NUL",
                self.consumer
            )));
        }
        if self.output.is_some() && (self.edges.is_some() || self.debounce_us.is_some()) {
            return Err(invalid(
                "edge detection and debounce apply to inputs, not outputs".to_owned(),
            ));
        }
        let mut flags = if self.output.is_some() {
            FLAG_OUTPUT
        } else {
            FLAG_INPUT
        };
        if self.active_low {
            flags |= FLAG_ACTIVE_LOW;
        }
        if self.open_drain && self.open_source {
            return Err(invalid(
                "a GPIO output is open-drain or open-source, not both".to_owned(),
            ));
        }
        if self.open_drain {
            flags |= FLAG_OPEN_DRAIN;
        }
        if self.open_source {
            flags |= FLAG_OPEN_SOURCE;
        }
        flags |= match self.edges {
            Some(Edge::Rising) => FLAG_EDGE_RISING,
            Some(Edge::Falling) => FLAG_EDGE_FALLING,
            Some(Edge::Both) => FLAG_EDGE_RISING | FLAG_EDGE_FALLING,
            None => 0,
        };
        flags |= match self.bias {
            Some(Bias::PullUp) => FLAG_BIAS_PULL_UP,
            Some(Bias::PullDown) => FLAG_BIAS_PULL_DOWN,
            Some(Bias::Disabled) => FLAG_BIAS_DISABLED,
            None => 0,
        };
        if self.edges.is_some() {
            flags |= match self.clock {
                EventClock::Monotonic => 0,
                EventClock::Realtime => FLAG_EVENT_CLOCK_REALTIME,
                EventClock::Hte => FLAG_EVENT_CLOCK_HTE,
            };
        }
        let all = if self.offsets.len() == 64 {
            u64::MAX
        } else {
            (1_u64 << self.offsets.len()) - 1
        };
        let mut config = RawLineConfig {
            flags,
            ..RawLineConfig::default()
        };
        let mut n = 0;
        if let Some(values) = self.output {
            config.attrs[n] = RawLineConfigAttribute {
                attr: RawLineAttribute {
                    id: ATTR_ID_OUTPUT_VALUES,
                    padding: 0,
                    value: values & all,
                },
                mask: all,
            };
            n += 1;
        }
        if let Some(us) = self.debounce_us {
            config.attrs[n] = RawLineConfigAttribute {
                attr: RawLineAttribute {
                    id: ATTR_ID_DEBOUNCE,
                    padding: 0,
                    value: debounce_value(us),
                },
                mask: all,
            };
            n += 1;
        }
        // ATTR_ID_FLAGS would override `flags` per line; every line here shares them.
        debug_assert!(n <= NUM_ATTRS && ATTR_ID_FLAGS == 1);
        config.num_attrs = n as u32;
        let mut raw = RawLineRequest {
            offsets: [0; MAX_LINES],
            consumer: [0; NAME_SIZE],
            config,
            num_lines: self.offsets.len() as u32,
            event_buffer_size: self.event_buffer_size,
            padding: [0; 5],
            fd: -1,
        };
        raw.offsets[..self.offsets.len()].copy_from_slice(&self.offsets);
        raw.consumer[..self.consumer.len()].copy_from_slice(self.consumer.as_bytes());
        Ok(raw)
    }
}

/// Requested lines; released when dropped. Readable when an edge event is pending.
#[derive(Debug)]
pub struct LineHandle {
    fd: OwnedFd,
    offsets: Vec<u32>,
}

impl LineHandle {
    /// A handle over any descriptor that yields `gpio_v2_line_event` records (a socket pair in
    /// tests, standing in for the kernel).
    #[cfg(test)]
    pub(crate) fn from_fd_for_test(fd: OwnedFd, offsets: &[u32]) -> LineHandle {
        LineHandle {
            fd,
            offsets: offsets.to_vec(),
        }
    }

    /// The offsets requested, in request order (bit i of values = `offsets()[i]`).
    pub fn offsets(&self) -> &[u32] {
        &self.offsets
    }

    /// Logical values of all requested lines (bit i = `offsets()[i]`, 1 = active).
    ///
    /// # Errors
    /// Whatever the ioctl reports.
    pub fn values(&self) -> io::Result<u64> {
        let all = if self.offsets.len() == 64 {
            u64::MAX
        } else {
            (1_u64 << self.offsets.len()) - 1
        };
        let mut v = RawLineValues { bits: 0, mask: all };
        ioctl(
            self.fd.as_fd(),
            GPIO_V2_LINE_GET_VALUES_IOCTL,
            &mut v,
            "GPIO_V2_LINE_GET_VALUES_IOCTL",
        )?;
        Ok(v.bits & all)
    }

    /// Drives the output lines selected by `mask` to `bits`.
    ///
    /// # Errors
    /// `EPERM` for input lines; whatever the ioctl reports.
    pub fn set_values(&self, bits: u64, mask: u64) -> io::Result<()> {
        let mut v = RawLineValues { bits, mask };
        ioctl(
            self.fd.as_fd(),
            GPIO_V2_LINE_SET_VALUES_IOCTL,
            &mut v,
            "GPIO_V2_LINE_SET_VALUES_IOCTL",
        )
    }

    /// Reads pending edge events into `events` and returns how many; blocks for the first one
    /// unless the descriptor was made non-blocking ([`LineHandle::set_nonblocking`]), which
    /// returns `WouldBlock` instead. One `read(2)`; `EINTR` is retried.
    ///
    /// # Errors
    /// `WouldBlock` (non-blocking, nothing pending); whatever `read` reports.
    pub fn read_events(&self, events: &mut [LineEvent]) -> io::Result<usize> {
        if events.is_empty() {
            return Ok(0);
        }
        let bytes = std::mem::size_of_val(events);
        loop {
            // SAFETY: `events` is a writable buffer of `bytes` bytes; LineEvent is plain
            // repr(C) data for which any bit pattern the kernel writes is valid.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), events.as_mut_ptr().cast(), bytes) };
            if n >= 0 {
                let n = n.unsigned_abs();
                if n % size_of::<LineEvent>() != 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("GPIO event read returned {n} bytes, not a multiple of 48"),
                    ));
                }
                return Ok(n / size_of::<LineEvent>());
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }

    /// Switches the descriptor between blocking and non-blocking reads.
    ///
    /// # Errors
    /// Whatever `fcntl` reports.
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        super::fdio::set_nonblocking(self.fd.as_fd(), on)
    }
}

impl AsFd for LineHandle {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for LineHandle {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes and ioctl numbers printed by a C program including `<linux/gpio.h>` (kernel
    /// headers 6.1, x86-64; the layout has no architecture-dependent padding).
    #[test]
    fn layouts_and_ioctl_numbers_match_the_kernel_header() {
        assert_eq!(size_of::<RawChipInfo>(), 68);
        assert_eq!(size_of::<RawLineInfo>(), 256);
        assert_eq!(size_of::<RawLineRequest>(), 592);
        assert_eq!(size_of::<RawLineConfig>(), 272);
        assert_eq!(size_of::<RawLineAttribute>(), 16);
        assert_eq!(size_of::<RawLineConfigAttribute>(), 24);
        assert_eq!(size_of::<RawLineValues>(), 16);
        assert_eq!(size_of::<LineEvent>(), 48);
        assert_eq!(GPIO_GET_CHIPINFO_IOCTL, 0x8044_b401);
        assert_eq!(GPIO_V2_GET_LINEINFO_IOCTL, 0xc100_b405);
        assert_eq!(GPIO_V2_GET_LINE_IOCTL, 0xc250_b407);
        assert_eq!(GPIO_V2_LINE_GET_VALUES_IOCTL, 0xc010_b40e);
        assert_eq!(GPIO_V2_LINE_SET_VALUES_IOCTL, 0xc010_b40f);
    }

    #[test]
    fn requests_encode_flags_and_attributes() {
        let raw = LineRequest::input(&[3, 5], "preempt-test")
            .edges(Edge::Both)
            .bias(Bias::PullUp)
            .debounce_us(250)
            .event_buffer_size(64)
            .to_raw()
            .unwrap();
        assert_eq!(&raw.offsets[..3], &[3, 5, 0]);
        assert_eq!(raw.num_lines, 2);
        assert_eq!(c_str(&raw.consumer), "preempt-test");
        assert_eq!(
            raw.config.flags,
            FLAG_INPUT | FLAG_EDGE_RISING | FLAG_EDGE_FALLING | FLAG_BIAS_PULL_UP
        );
        assert_eq!(raw.config.num_attrs, 1);
        assert_eq!(raw.config.attrs[0].attr.id, ATTR_ID_DEBOUNCE);
        assert_eq!(debounce_us(&raw.config.attrs[0].attr), 250);
        assert_eq!(raw.config.attrs[0].mask, 0b11);
        assert_eq!(raw.event_buffer_size, 64);

        let raw = LineRequest::output(&[7], "out", 1).to_raw().unwrap();
        assert_eq!(raw.config.flags, FLAG_OUTPUT);
        assert_eq!(raw.config.attrs[0].attr.id, ATTR_ID_OUTPUT_VALUES);
        assert_eq!(raw.config.attrs[0].attr.value, 1);
    }

    #[test]
    fn impossible_requests_are_refused_with_the_reason() {
        let too_many: Vec<u32> = (0..65).collect();
        for (req, needle) in [
            (LineRequest::input(&[], "x"), "1 to 64"),
            (LineRequest::input(&too_many, "x"), "1 to 64"),
            (LineRequest::input(&[1, 1], "x"), "duplicate"),
            (LineRequest::input(&[1], &"c".repeat(40)), "under 32 bytes"),
            (
                LineRequest::output(&[1], "x", 0).edges(Edge::Rising),
                "inputs",
            ),
            (
                LineRequest::output(&[1], "x", 0).open_drain().open_source(),
                "not both",
            ),
        ] {
            let Err(err) = req.to_raw() else {
                panic!("{req:?} was accepted")
            };
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains(needle), "{err}");
        }
    }

    #[test]
    fn a_file_that_is_not_a_chip_is_named_as_such() {
        let err = GpioChip::open("/dev/null").unwrap_err();
        let expected = match crate::sys::cpu::user_mode_emulation() {
            // qemu-user answers ENOSYS to every ioctl it does not translate, before the
            // kernel could say ENOTTY: the error must then name the emulator.
            Some(_) => "not implemented here (ENOSYS; qemu-user",
            None => "not a GPIO character device",
        };
        assert!(err.to_string().contains(expected), "{err}");
        let err = GpioChip::open("/nonexistent/gpiochip9").unwrap_err();
        assert!(err.to_string().contains("/nonexistent/gpiochip9"), "{err}");
    }

    #[test]
    fn every_chip_reports_its_lines() {
        let chips = chips().unwrap();
        if chips.is_empty() {
            eprintln!("skipped: no /dev/gpiochip* on this machine (CONFIG_GPIO_CDEV, gpio-sim)");
            return;
        }
        for path in chips {
            let chip = GpioChip::open(&path).unwrap();
            let info = chip.info().unwrap();
            assert!(info.name.starts_with("gpiochip"), "{info:?}");
            for offset in 0..info.lines {
                assert_eq!(chip.line_info(offset).unwrap().offset, offset);
            }
            assert!(chip.line_info(info.lines).is_err());
        }
    }
}
