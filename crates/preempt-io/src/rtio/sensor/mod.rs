//! Sensor streaming in Zephyr's shape (`sensor_stream`, `sensor_decoder_api`,
//! `sensor_processing_with_callback`), for the simulated IMU's register interface.
//!
//! * [`stream`] sets a device's interrupt sources from a list of [`StreamTrigger`]s
//!   (DataReady / FifoWatermark / FifoFull, each with an Include / Nop / Drop data option) and
//!   returns an [`ImuStream`] whose [`arm`](ImuStream::arm) queues the per-interrupt transfer
//!   as **one linked chain**: write `FIFO_RD` (acknowledge what was consumed) → read the INT
//!   eventfd (waits for the interrupt) → read `STATUS` → read the count block → read the FIFO
//!   burst. Only the last entry reports a completion; on io_uring the kernel runs the whole
//!   chain after the interrupt without waking the consumer in between.
//! * [`stream_spi`] does the same over the simulator's asynchronous SPI bus (see
//!   [`simimu`]): the chain is read INT → (write command, read response) for
//!   STATUS, the count block and `FIFO_DATA` — six bus messages after the interrupt, all
//!   linked, with only the FIFO read reporting. On io_uring each response read is poll-armed
//!   in the kernel and the chain continues from the kernel's task work; the consumer returns
//!   to user space once per chain. [`stream_spi_with`] and [`SpiMode::Queued`] queue the
//!   three commands to the bus before reading the three responses (one bus wake-up per
//!   interrupt instead of three), as an RTIO submission queue in front of a bus driver does.
//! * [`ImuDecoder`] reports frame counts per channel and decodes frames to q31 + shift with
//!   per-frame timestamps back-dated from the interrupt time at the nominal ODR period.
//! * [`processing_loop`] is the ready consume loop: wait, hand each completed read to a
//!   callback with its decoded view, re-arm; [`processing_loop_overlapped`] arms the next
//!   chain before the frames are processed and reaps the kernel's work between frames.
//! * [`iio`] streams from an IIO buffered device (`/dev/iio:deviceN` + `buffer/watermark`),
//!   Linux's own analog of Zephyr's sensor streaming.
//!
//! ```no_run
//! use preempt_io::rtio::sensor::{self, Channel, DataOpt, ImuDecoder, StreamTrigger, Trigger};
//! use preempt_io::rtio::{Rtio, RtioConfig};
//! # fn fds() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) { unimplemented!() }
//! let mut rtio = Rtio::new(RtioConfig::default())?;
//! let (regs, int) = fds(); // e.g. from imu-sim
//! let triggers = [StreamTrigger { trigger: Trigger::DataReady, opt: DataOpt::Include }];
//! let mut streams = vec![sensor::stream(&mut rtio, regs, int, &triggers, 1, 0)?];
//! let dec = ImuDecoder::new(3200);
//! sensor::processing_loop(&mut rtio, &mut streams, |ev| {
//!     let n = dec.frame_count(ev.data, Channel::Accel);
//!     let mut out = [Default::default(); 4];
//!     let mut fit = 0;
//!     dec.decode(&ev.header, ev.data, Channel::Accel, &mut fit, &mut out);
//!     n < 1000 // keep going
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod iio;

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use super::simimu::{self, CountBlock, FIFO_FRAMES, FRAME_LEN, Frame};
use super::{BufferId, Cqe, IodevId, Rtio, RtioError, Sqe};
use crate::sys::fdio;

/// What makes a stream report (Zephyr `enum sensor_trigger_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// A new sample is ready (INT per sample).
    DataReady,
    /// The FIFO reached the watermark.
    FifoWatermark,
    /// The FIFO is full (samples are being lost).
    FifoFull,
}

/// What to do with the FIFO data when a trigger fires (Zephyr `enum sensor_stream_data_opt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataOpt {
    /// Hand the data to the consumer and consume it.
    Include,
    /// Report the trigger, leave the data in the FIFO.
    Nop,
    /// Report the trigger, discard the data (flush).
    Drop,
}

/// One trigger of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamTrigger {
    /// The trigger.
    pub trigger: Trigger,
    /// Its data option.
    pub opt: DataOpt,
}

/// What a completed stream read found (Zephyr's `sensor_data_generic_header` + FIFO status).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadHeader {
    /// CLOCK_MONOTONIC ns of the interrupt (latched by the device in `INT_TS`).
    pub int_timestamp_ns: u64,
    /// `STATUS` at the time of the read.
    pub status: u32,
    /// Whole frames delivered in `data` (0 for Nop / Drop).
    pub frames: u32,
    /// Frames discarded by a Drop option in this read.
    pub flushed: u32,
    /// Samples the device lost to a full FIFO, total.
    pub dropped_total: u64,
    /// Nominal sample period, ns.
    pub period_ns: u64,
}

/// A completed stream read, as the processing callback sees it.
#[derive(Debug)]
pub struct SensorEvent<'a> {
    /// Index of the stream in the slice given to [`processing_loop`].
    pub stream: usize,
    /// Header.
    pub header: ReadHeader,
    /// Raw frames (`header.frames * 20` bytes).
    pub data: &'a [u8],
}

/// How the per-interrupt SPI reads of a [`stream_spi_with`] stream use the bus.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpiMode {
    /// One transfer at a time, as a blocking driver does: (command, response) for STATUS,
    /// then for the count block, then for `FIFO_DATA` — each command is sent only after the
    /// previous response arrived.
    #[default]
    Sequential,
    /// The three read commands are queued to the bus at once and the three responses read
    /// after, in order: what an RTIO submission queue in front of a bus driver does (Zephyr's
    /// SPI iodev runs queued submissions back to back). Still one linked chain; the bus
    /// executes the commands in arrival order, so the responses come back in order and the
    /// data is the same as [`Sequential`](SpiMode::Sequential)'s. The consumer wakes the bus
    /// once per interrupt instead of once per transfer.
    Queued,
}

/// How a stream reaches its device's registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StreamBus {
    /// Register memfd: linked reads on the first device (`O_NONBLOCK`), the FIFO_RD
    /// acknowledgement written on the second (the original description; see [`stream`]).
    Memfd(IodevId, IodevId),
    /// SPI bus socket: command / response messages, in the given mode.
    Spi(IodevId, SpiMode),
    /// SPI bus socket, the three reads as one bus transaction (one command, one response).
    SpiTransaction(IodevId),
}

/// The buffers one chain reads into.
#[derive(Clone, Copy, Debug)]
struct DataBufs {
    status: BufferId,
    count: BufferId,
    fifo: BufferId,
    /// Transaction response ([`stream_spi_transaction`] only).
    resp: Option<BufferId>,
}

impl DataBufs {
    fn new(rtio: &mut Rtio, txn: bool) -> Result<DataBufs, RtioError> {
        Ok(DataBufs {
            status: rtio.alloc_buffer(4)?,
            count: rtio.alloc_buffer(simimu::COUNT_BLOCK_LEN)?,
            fifo: rtio.alloc_buffer(simimu::FIFO_BURST_LEN)?,
            resp: if txn {
                Some(rtio.alloc_buffer(TXN_HEAD + simimu::FIFO_BURST_LEN)?)
            } else {
                None
            },
        })
    }
}

/// Bytes of STATUS + the count block at the start of a transaction response.
const TXN_HEAD: usize = 4 + simimu::COUNT_BLOCK_LEN;

/// A stream on one simulated IMU device (its register memfd or SPI bus socket, and INT
/// eventfd).
#[derive(Debug)]
pub struct ImuStream {
    bus: StreamBus,
    int: IodevId,
    int_buf: BufferId,
    /// The data buffers the next (or in-flight) chain reads into.
    bufs: DataBufs,
    /// A second set for overlap ([`ImuStream::enable_overlap`]): swapped with `bufs` on every
    /// arm, so the frames of the chain that just completed stay untouched while the next
    /// chain runs.
    spare: Option<DataBufs>,
    /// Transaction command buffer ([`stream_spi_transaction`] only).
    txn_buf: Option<BufferId>,
    rd: u32,
    triggers: Vec<StreamTrigger>,
    userdata: u64,
    period_ns: u64,
    armed: bool,
    /// Whether [`arm`](ImuStream::arm) starts the chain with the INT read (false only while
    /// [`processing_loop_coalesced`] arms the transfers after a separately reaped interrupt).
    int_in_chain: bool,
}

/// Starts streaming from a simulated IMU (Zephyr `sensor_stream`): registers its register file
/// and INT line with `rtio` (setup phase), writes `CONFIG` from the triggers, and returns the
/// stream, not yet armed. `userdata` tags its completions; `watermark` is in frames.
///
/// # Errors
/// Bad watermark or no trigger (`InvalidInput`); register write or RTIO setup errors.
pub fn stream(
    rtio: &mut Rtio,
    regs: OwnedFd,
    int: OwnedFd,
    triggers: &[StreamTrigger],
    watermark: u32,
    userdata: u64,
) -> io::Result<ImuStream> {
    let config = trigger_config(triggers, watermark)?;
    let mut odr = [0_u8; 4];
    fdio::pread(regs.as_fd(), &mut odr, simimu::REG_ODR_HZ)?;
    let odr = u32::from_le_bytes(odr).max(1);
    let mut rd = [0_u8; 4];
    fdio::pread(regs.as_fd(), &mut rd, simimu::REG_FIFO_RD)?;
    fdio::pwrite(regs.as_fd(), &config.to_le_bytes(), simimu::REG_CONFIG)?;
    // The reads get a description of their own with O_NONBLOCK: io_uring then runs them
    // inline in the task work that follows the interrupt, instead of punting each to an
    // io-wq worker (see `fdio::reopen_nonblocking`). The FIFO_RD acknowledgement stays on
    // the original (blocking) description, which the executor writes with `pwrite` before
    // handing the rest of the chain to the kernel: a shmem write under IOCB_NOWAIT fails
    // with -EAGAIN whenever the file's mtime must advance (`file_modified_flags`, about once
    // per clock tick) and io_uring then punts it to io-wq — measured on 6.18: one worker
    // wake-up per chain, two wake-ups per interrupt instead of one. Without /proc both use
    // the original description and the executor runs every register transfer with pread.
    let (ack, regs) = match fdio::reopen_nonblocking(regs.as_fd()) {
        Ok(nb) => (
            Some(rtio.register_fd("imu-regs-ack", regs)?),
            rtio.register_fd("imu-regs", nb)?,
        ),
        Err(_) => (None, rtio.register_fd("imu-regs", regs)?),
    };
    ImuStream::new(
        rtio,
        StreamBus::Memfd(regs, ack.unwrap_or(regs)),
        int,
        rd,
        triggers,
        userdata,
        odr,
    )
}

fn trigger_config(triggers: &[StreamTrigger], watermark: u32) -> io::Result<u32> {
    if triggers.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a stream needs at least one trigger",
        ));
    }
    if watermark == 0 || watermark > FIFO_FRAMES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("watermark must be 1..={FIFO_FRAMES} frames"),
        ));
    }
    let mut config = watermark;
    for t in triggers {
        config |= match t.trigger {
            Trigger::DataReady => simimu::CONFIG_INT_DATA_RDY,
            Trigger::FifoWatermark => simimu::CONFIG_INT_WATERMARK,
            Trigger::FifoFull => simimu::CONFIG_INT_FULL,
        };
    }
    Ok(config)
}

/// One blocking SPI read transfer (setup and the thread-based reader): sends the command and
/// waits for the response. Returns the bytes received.
///
/// # Errors
/// Socket errors; `UnexpectedEof` if the bus closed.
pub fn spi_read(bus: BorrowedFd<'_>, reg: u64, buf: &mut [u8]) -> io::Result<usize> {
    fdio::write(bus, &simimu::spi_read_cmd(reg, len32(buf.len())))?;
    let n = fdio::read(bus, buf)?;
    if n == 0 && !buf.is_empty() && reg != simimu::REG_FIFO_DATA {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "SPI bus closed (simulator gone)",
        ));
    }
    Ok(n)
}

/// One posted SPI register write (u32).
///
/// # Errors
/// Socket errors.
pub fn spi_write_u32(bus: BorrowedFd<'_>, reg: u64, value: u32) -> io::Result<()> {
    fdio::write(bus, &simimu::spi_write_cmd(reg, value))?;
    Ok(())
}

/// Like [`stream_spi`], but the per-interrupt work is ONE bus transaction (STATUS, count block
/// and FIFO_DATA reads executed back to back by the bus, one response): the chain is read INT
/// → write the transaction command → read the response. This is how a Zephyr SPI RTIO
/// transaction or a Linux `SPI_IOC_MESSAGE(3)` hands the whole sequence to the bus driver.
///
/// # Errors
/// As [`stream_spi`].
pub fn stream_spi_transaction(
    rtio: &mut Rtio,
    bus: OwnedFd,
    int: OwnedFd,
    triggers: &[StreamTrigger],
    watermark: u32,
    userdata: u64,
) -> io::Result<ImuStream> {
    let mut s = stream_spi(rtio, bus, int, triggers, watermark, userdata)?;
    let StreamBus::Spi(bus, _) = s.bus else {
        return Err(io::Error::other("stream_spi built a non-SPI stream"));
    };
    let mut cmd = [0_u8; simimu::SPI_CMD_LEN * 4];
    let reads = [
        (simimu::REG_STATUS, 4),
        (simimu::REG_FIFO_COUNT, len32(simimu::COUNT_BLOCK_LEN)),
        (simimu::REG_FIFO_DATA, len32(simimu::FIFO_BURST_LEN)),
    ];
    let n = simimu::spi_transaction_cmd(&reads, &mut cmd)
        .ok_or_else(|| io::Error::other("transaction command does not fit"))?;
    let txn = rtio.alloc_buffer(n)?;
    rtio.buffer_mut(txn)?.copy_from_slice(&cmd[..n]);
    s.txn_buf = Some(txn);
    s.bufs.resp = Some(rtio.alloc_buffer(TXN_HEAD + simimu::FIFO_BURST_LEN)?);
    s.bus = StreamBus::SpiTransaction(bus);
    Ok(s)
}

/// Starts streaming from a simulated IMU over its SPI bus socket (Zephyr `sensor_stream`):
/// like [`stream`], but every register access is a command/response transfer on `bus` and the
/// FIFO is popped through `FIFO_DATA` (see [`simimu`]). The transfers run one at a time
/// ([`SpiMode::Sequential`]); [`stream_spi_with`] chooses.
///
/// # Errors
/// Bad watermark or no trigger (`InvalidInput`); bus transfer or RTIO setup errors.
pub fn stream_spi(
    rtio: &mut Rtio,
    bus: OwnedFd,
    int: OwnedFd,
    triggers: &[StreamTrigger],
    watermark: u32,
    userdata: u64,
) -> io::Result<ImuStream> {
    stream_spi_with(
        rtio,
        bus,
        int,
        triggers,
        watermark,
        userdata,
        SpiMode::Sequential,
    )
}

/// [`stream_spi`] with the bus usage chosen by `mode`.
///
/// # Errors
/// As [`stream_spi`].
pub fn stream_spi_with(
    rtio: &mut Rtio,
    bus: OwnedFd,
    int: OwnedFd,
    triggers: &[StreamTrigger],
    watermark: u32,
    userdata: u64,
    mode: SpiMode,
) -> io::Result<ImuStream> {
    let config = trigger_config(triggers, watermark)?;
    let mut odr = [0_u8; 4];
    spi_read(bus.as_fd(), simimu::REG_ODR_HZ, &mut odr)?;
    let odr = u32::from_le_bytes(odr).max(1);
    let mut rd = [0_u8; 4];
    spi_read(bus.as_fd(), simimu::REG_FIFO_RD, &mut rd)?;
    spi_write_u32(bus.as_fd(), simimu::REG_CONFIG, config)?;
    let bus = rtio.register_fd("imu-spi", bus)?;
    ImuStream::new(
        rtio,
        StreamBus::Spi(bus, mode),
        int,
        rd,
        triggers,
        userdata,
        odr,
    )
}

fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl ImuStream {
    /// A stream not yet armed on `bus`: registers the INT line `int` with `rtio` and
    /// allocates the stream's buffers. `rd` is the FIFO read pointer read at setup, `odr` the
    /// device's output data rate.
    fn new(
        rtio: &mut Rtio,
        bus: StreamBus,
        int: OwnedFd,
        rd: [u8; 4],
        triggers: &[StreamTrigger],
        userdata: u64,
        odr: u32,
    ) -> io::Result<ImuStream> {
        let int = rtio.register_fd("imu-int", int)?;
        Ok(ImuStream {
            bus,
            int,
            int_buf: rtio.alloc_buffer(8)?,
            bufs: DataBufs::new(rtio, false)?,
            spare: None,
            txn_buf: None,
            rd: u32::from_le_bytes(rd),
            triggers: triggers.to_vec(),
            userdata,
            period_ns: 1_000_000_000 / u64::from(odr),
            armed: false,
            int_in_chain: true,
        })
    }

    /// Queues the per-interrupt chain (see the module docs). Call [`Rtio::submit`] after.
    ///
    /// # Errors
    /// Submission pool full (size it for 5 entries per stream).
    pub fn arm(&mut self, rtio: &mut Rtio) -> Result<(), RtioError> {
        if let Some(spare) = self.spare.as_mut() {
            std::mem::swap(&mut self.bufs, spare);
        }
        let (regs, ack) = match self.bus {
            StreamBus::Memfd(regs, ack) => (regs, ack),
            StreamBus::Spi(bus, SpiMode::Sequential) => return self.arm_spi(rtio, bus),
            StreamBus::Spi(bus, SpiMode::Queued) => return self.arm_spi_queued(rtio, bus),
            StreamBus::SpiTransaction(bus) => return self.arm_transaction(rtio, bus),
        };
        let rd = self.rd.to_le_bytes();
        let include = self.triggers.iter().any(|t| t.opt == DataOpt::Include);
        rtio.prepare(
            Sqe::tiny_write(ack, &rd)
                .at(simimu::REG_FIFO_RD)
                .chained()
                .no_response()
                .userdata(self.userdata),
        )?;
        self.prepare_int(rtio)?;
        rtio.prepare(
            Sqe::read(regs, self.bufs.status, 4)
                .at(simimu::REG_STATUS)
                .chained()
                .no_response()
                .userdata(self.userdata),
        )?;
        let count = Sqe::read(regs, self.bufs.count, len32(simimu::COUNT_BLOCK_LEN))
            .at(simimu::REG_FIFO_COUNT)
            .userdata(self.userdata);
        if include {
            rtio.prepare(count.chained().no_response())?;
            rtio.prepare(
                Sqe::read(regs, self.bufs.fifo, len32(simimu::FIFO_BURST_LEN))
                    .at(simimu::fifo_burst_offset(self.rd))
                    .userdata(self.userdata),
            )?;
        } else {
            rtio.prepare(count)?;
        }
        self.armed = true;
        Ok(())
    }

    /// The chain's first transfer: read the INT eventfd (waits for the interrupt), linked to
    /// the rest; nothing when the interrupt was reaped on its own (coalesced loop).
    fn prepare_int(&self, rtio: &mut Rtio) -> Result<(), RtioError> {
        if self.int_in_chain {
            rtio.prepare(
                Sqe::read(self.int, self.int_buf, 8)
                    .chained()
                    .no_response()
                    .userdata(self.userdata),
            )?;
        }
        Ok(())
    }

    /// Queues this stream's INT read alone, unlinked and reporting (userdata | [`INT_TAG`]):
    /// what [`processing_loop_coalesced`] waits on for several devices at once.
    fn arm_int(&mut self, rtio: &mut Rtio) -> Result<(), RtioError> {
        rtio.prepare(Sqe::read(self.int, self.int_buf, 8).userdata(self.userdata | INT_TAG))?;
        Ok(())
    }

    /// Queues the transfers of [`arm`](Self::arm) without the INT read (the interrupt was
    /// reaped already).
    fn arm_fetch(&mut self, rtio: &mut Rtio) -> Result<(), RtioError> {
        self.int_in_chain = false;
        let r = self.arm(rtio);
        self.int_in_chain = true;
        r
    }

    /// The SPI chain: read INT, then (command, response) for STATUS, count and FIFO_DATA.
    fn arm_spi(&mut self, rtio: &mut Rtio, bus: IodevId) -> Result<(), RtioError> {
        let u = self.userdata;
        let fetch = self.triggers.iter().any(|t| t.opt != DataOpt::Nop);
        self.prepare_int(rtio)?;
        let cmd = |reg, len| Sqe::tiny_write(bus, &simimu::spi_read_cmd(reg, len32(len)));
        rtio.prepare(
            cmd(simimu::REG_STATUS, 4)
                .chained()
                .no_response()
                .userdata(u),
        )?;
        rtio.prepare(
            Sqe::read(bus, self.bufs.status, 4)
                .chained()
                .no_response()
                .userdata(u),
        )?;
        rtio.prepare(
            cmd(simimu::REG_FIFO_COUNT, simimu::COUNT_BLOCK_LEN)
                .chained()
                .no_response()
                .userdata(u),
        )?;
        let count = Sqe::read(bus, self.bufs.count, len32(simimu::COUNT_BLOCK_LEN)).userdata(u);
        if !fetch {
            rtio.prepare(count)?;
        } else {
            rtio.prepare(count.chained().no_response())?;
            rtio.prepare(
                cmd(simimu::REG_FIFO_DATA, simimu::FIFO_BURST_LEN)
                    .chained()
                    .no_response()
                    .userdata(u),
            )?;
            // The bus answers with the whole frames available: a short read, last in the
            // chain, so it breaks nothing.
            rtio.prepare(
                Sqe::read(bus, self.bufs.fifo, len32(simimu::FIFO_BURST_LEN)).userdata(u),
            )?;
        }
        self.armed = true;
        Ok(())
    }

    /// The queued SPI chain: read INT, the three read commands (STATUS, count, FIFO_DATA),
    /// then the three responses, all linked. With only Nop triggers the FIFO is not read.
    fn arm_spi_queued(&mut self, rtio: &mut Rtio, bus: IodevId) -> Result<(), RtioError> {
        let u = self.userdata;
        let fetch = self.triggers.iter().any(|t| t.opt != DataOpt::Nop);
        let link = |sqe: Sqe| sqe.chained().no_response().userdata(u);
        self.prepare_int(rtio)?;
        let cmd = |reg, len| Sqe::tiny_write(bus, &simimu::spi_read_cmd(reg, len32(len)));
        rtio.prepare(link(cmd(simimu::REG_STATUS, 4)))?;
        rtio.prepare(link(cmd(simimu::REG_FIFO_COUNT, simimu::COUNT_BLOCK_LEN)))?;
        if fetch {
            rtio.prepare(link(cmd(simimu::REG_FIFO_DATA, simimu::FIFO_BURST_LEN)))?;
        }
        rtio.prepare(link(Sqe::read(bus, self.bufs.status, 4)))?;
        let count = Sqe::read(bus, self.bufs.count, len32(simimu::COUNT_BLOCK_LEN)).userdata(u);
        if !fetch {
            rtio.prepare(count)?;
        } else {
            rtio.prepare(count.chained().no_response())?;
            // Short read (the frames available), last in the chain: breaks nothing.
            rtio.prepare(
                Sqe::read(bus, self.bufs.fifo, len32(simimu::FIFO_BURST_LEN)).userdata(u),
            )?;
        }
        self.armed = true;
        Ok(())
    }

    /// The transaction chain: read INT → write the transaction command → read the response.
    fn arm_transaction(&mut self, rtio: &mut Rtio, bus: IodevId) -> Result<(), RtioError> {
        let (Some(txn), Some(resp)) = (self.txn_buf, self.bufs.resp) else {
            return Err(RtioError::Invalid("transaction stream without its buffers"));
        };
        let u = self.userdata;
        let cmd_len = len32(simimu::SPI_CMD_LEN * 4);
        self.prepare_int(rtio)?;
        rtio.prepare(
            Sqe::write(bus, txn, cmd_len)
                .chained()
                .no_response()
                .userdata(u),
        )?;
        rtio.prepare(Sqe::read(bus, resp, len32(TXN_HEAD + simimu::FIFO_BURST_LEN)).userdata(u))?;
        self.armed = true;
        Ok(())
    }

    /// The device the stream's register transfers go to (register memfd or SPI socket), e.g.
    /// for [`Rtio::fd_info`].
    pub fn bus_iodev(&self) -> IodevId {
        match self.bus {
            StreamBus::Memfd(d, _) | StreamBus::Spi(d, _) | StreamBus::SpiTransaction(d) => d,
        }
    }

    /// Whether a chain is queued or in flight.
    pub fn is_armed(&self) -> bool {
        self.armed
    }

    /// The userdata tagging this stream's completions.
    pub fn userdata(&self) -> u64 {
        self.userdata
    }

    /// Frames consumed so far (the value written to `FIFO_RD` on the next arm).
    pub fn consumed(&self) -> u32 {
        self.rd
    }

    /// Turns the completion of this stream's chain into a header and data view, and applies
    /// the data option of the trigger that fired (advancing `FIFO_RD` for Include and Drop).
    /// `Err` carries the failed chain's result (`-errno`).
    ///
    /// # Errors
    /// The chain failed (its result), or a buffer is unexpectedly busy.
    pub fn complete<'r>(
        &mut self,
        rtio: &'r Rtio,
        cqe: &Cqe,
    ) -> Result<(ReadHeader, &'r [u8]), i32> {
        let (header, at) = self.complete_at(rtio, cqe)?;
        match at {
            None => Ok((header, &[])),
            Some((buf, range)) => {
                let b = rtio.buffer(buf).map_err(|_| -libc::EBUSY)?;
                Ok((header, &b[range]))
            }
        }
    }

    /// [`complete`](Self::complete), with the data named by its buffer and byte range instead
    /// of borrowed, so the caller can arm the next chain before it processes the frames (with
    /// [`enable_overlap`](Self::enable_overlap), arming does not touch that buffer).
    ///
    /// # Errors
    /// As [`complete`](Self::complete).
    #[allow(
        clippy::type_complexity,
        reason = "header + optional (buffer, range): named once, here"
    )]
    pub fn complete_at(
        &mut self,
        rtio: &Rtio,
        cqe: &Cqe,
    ) -> Result<(ReadHeader, Option<(BufferId, std::ops::Range<usize>)>), i32> {
        self.armed = false;
        if cqe.result < 0 {
            return Err(cqe.result);
        }
        let (status, count, txn_len) = match (self.bus, self.bufs.resp) {
            (StreamBus::SpiTransaction(_), Some(resp)) => {
                let r = rtio.buffer(resp).map_err(|_| -libc::EBUSY)?;
                let len = cqe.result.unsigned_abs() as usize;
                if len < TXN_HEAD {
                    return Err(-libc::EIO);
                }
                let st = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
                (
                    st,
                    CountBlock::parse(&r[4..TXN_HEAD]),
                    Some((resp, len - TXN_HEAD)),
                )
            }
            _ => {
                let st = rtio.buffer(self.bufs.status).map_err(|_| -libc::EBUSY)?;
                let st = u32::from_le_bytes([st[0], st[1], st[2], st[3]]);
                let cb = CountBlock::parse(rtio.buffer(self.bufs.count).map_err(|_| -libc::EBUSY)?);
                (st, cb, None)
            }
        };
        let avail = count.wr.wrapping_sub(self.rd).min(FIFO_FRAMES);
        let fired = |t: Trigger| match t {
            Trigger::DataReady => status & simimu::STATUS_DATA_RDY != 0,
            Trigger::FifoWatermark => status & simimu::STATUS_FIFO_THS != 0,
            Trigger::FifoFull => status & simimu::STATUS_FIFO_FULL != 0,
        };
        // The strongest option among fired triggers wins: Drop > Include > Nop.
        let mut opt = DataOpt::Nop;
        for t in self.triggers.iter().filter(|t| fired(t.trigger)) {
            opt = match (opt, t.opt) {
                (_, DataOpt::Drop) | (DataOpt::Drop, _) => DataOpt::Drop,
                (_, DataOpt::Include) | (DataOpt::Include, _) => DataOpt::Include,
                _ => DataOpt::Nop,
            };
        }
        let mut header = ReadHeader {
            int_timestamp_ns: count.int_ts_ns,
            status,
            frames: 0,
            flushed: 0,
            dropped_total: count.dropped,
            period_ns: self.period_ns,
        };
        if let Some((resp, data_len)) = txn_len {
            let n = data_len / FRAME_LEN;
            self.rd = self.rd.wrapping_add(len32(n));
            if opt == DataOpt::Drop {
                header.flushed = len32(n);
                return Ok((header, None));
            }
            header.frames = len32(n);
            return Ok((header, Some((resp, TXN_HEAD..TXN_HEAD + n * FRAME_LEN))));
        }
        if let StreamBus::Spi(..) = self.bus {
            // The FIFO_DATA read popped the frames already (the bus advanced FIFO_RD): what
            // was read is consumed, whatever the option, so a Nop outcome still delivers it.
            let fetched = self.triggers.iter().any(|t| t.opt != DataOpt::Nop);
            if !fetched {
                return Ok((header, None));
            }
            let n = cqe.result.unsigned_abs() as usize / FRAME_LEN;
            self.rd = self.rd.wrapping_add(len32(n));
            if opt == DataOpt::Drop {
                header.flushed = len32(n);
                return Ok((header, None));
            }
            header.frames = len32(n);
            return Ok((header, Some((self.bufs.fifo, 0..n * FRAME_LEN))));
        }
        match opt {
            DataOpt::Nop => Ok((header, None)),
            DataOpt::Drop => {
                header.flushed = avail;
                self.rd = self.rd.wrapping_add(avail);
                Ok((header, None))
            }
            DataOpt::Include => {
                let fifo = rtio.buffer(self.bufs.fifo).map_err(|_| -libc::EBUSY)?;
                // Whole valid frames up to what the count block reported: a frame the
                // simulator was still writing when the burst was read is left for the next
                // read.
                let mut n = 0;
                while n < avail as usize && Frame::decode(&fifo[n * FRAME_LEN..]).is_some() {
                    n += 1;
                }
                header.frames = len32(n);
                self.rd = self.rd.wrapping_add(header.frames);
                Ok((header, Some((self.bufs.fifo, 0..n * FRAME_LEN))))
            }
        }
    }

    /// Gives the stream a second set of data buffers (setup): from now on every
    /// [`arm`](Self::arm) alternates between the two, so the next chain can be armed — and
    /// run by the kernel — while the frames of the previous one are still being processed
    /// (see [`processing_loop_overlapped`]).
    ///
    /// # Errors
    /// Buffer allocation after setup closed, or out of buffer slots.
    pub fn enable_overlap(&mut self, rtio: &mut Rtio) -> Result<(), RtioError> {
        if self.spare.is_none() {
            self.spare = Some(DataBufs::new(rtio, self.bufs.resp.is_some())?);
        }
        Ok(())
    }
}

/// The consume loop (Zephyr `sensor_processing_with_callback`): arms every stream, then
/// waits for completions and hands each to `f` until `f` returns `false`. Streams are
/// re-armed after their callback, so the FIFO read pointer written back covers what `f`
/// consumed. Failed chains are reported to `f` as events with no data and the raw result in
/// `header.status` set to 0 and are re-armed.
///
/// # Errors
/// RTIO submission errors.
pub fn processing_loop(
    rtio: &mut Rtio,
    streams: &mut [ImuStream],
    mut f: impl FnMut(&SensorEvent<'_>) -> bool,
) -> io::Result<()> {
    for s in streams.iter_mut() {
        s.arm(rtio)?;
    }
    loop {
        let (i, cqe) = next_completion(rtio, streams)?;
        if !deliver(rtio, &mut streams[i], i, &cqe, &mut f) {
            return Ok(());
        }
        streams[i].arm(rtio)?;
    }
}

/// Hands the read that `cqe` completed for stream `i` to `f` (a failed chain as
/// [`SensorEvent::failed`]); returns what `f` returned (keep going).
fn deliver(
    rtio: &Rtio,
    stream: &mut ImuStream,
    i: usize,
    cqe: &Cqe,
    f: &mut impl FnMut(&SensorEvent<'_>) -> bool,
) -> bool {
    match stream.complete(rtio, cqe) {
        Ok((header, data)) => f(&SensorEvent {
            stream: i,
            header,
            data,
        }),
        Err(_) => f(&SensorEvent::failed(i)),
    }
}

/// Waits for the next completion of one of `streams`; returns the stream's index and it.
fn next_completion(rtio: &mut Rtio, streams: &[ImuStream]) -> io::Result<(usize, Cqe)> {
    loop {
        while let Some(cqe) = rtio.cqe_consume() {
            if let Some(i) = streams.iter().position(|s| s.userdata == cqe.userdata) {
                return Ok((i, cqe));
            }
        }
        rtio.submit(1)?;
    }
}

impl SensorEvent<'_> {
    /// The event reporting a failed chain of stream `i`: no data, a default header.
    fn failed(i: usize) -> SensorEvent<'static> {
        SensorEvent {
            stream: i,
            header: ReadHeader::default(),
            data: &[],
        }
    }
}

/// The overlapped consume loop: like [`processing_loop`], but the next chain of a stream is
/// armed and handed to the kernel *before* the frames of the chain that just completed are
/// processed, and the kernel's pending work is reaped between frames without sleeping
/// ([`Rtio::run_pending`]). The bus (or register file) is read for the next interrupt while
/// the consumer computes — the "decouple acquisition from processing" of Zephyr's RTIO.
///
/// `f` is called once per frame (`data` holds one 20-byte frame, `header` is that of the read
/// it came from, so `header.frames` counts the read's frames), and once with no data for a read
/// that delivered no frames or failed (`period_ns` = 0 on failure). Each stream gets a second
/// buffer set ([`ImuStream::enable_overlap`]); the stream must still be in its setup phase
/// (before the context's first submit).
///
/// Why per frame: with `IORING_SETUP_DEFER_TASKRUN` the kernel advances a chain only when the
/// owner enters `io_uring_enter` with `GETEVENTS`; a poll-armed step that became ready while
/// the owner computes just sets `IORING_SQ_TASKRUN`. Checking that flag after each frame
/// (a load from the shared ring) and entering with `min_complete = 0` only when it is set
/// keeps the chain moving at frame granularity for one syscall per pending step.
///
/// # Errors
/// RTIO submission errors; buffer allocation errors from [`ImuStream::enable_overlap`].
pub fn processing_loop_overlapped(
    rtio: &mut Rtio,
    streams: &mut [ImuStream],
    mut f: impl FnMut(&SensorEvent<'_>) -> bool,
) -> io::Result<()> {
    for s in streams.iter_mut() {
        s.enable_overlap(rtio)?;
        s.arm(rtio)?;
    }
    loop {
        let (i, cqe) = next_completion(rtio, streams)?;
        let done = streams[i].complete_at(rtio, &cqe);
        // The next chain goes to the kernel now, into the other buffer set.
        streams[i].arm(rtio)?;
        rtio.submit(0)?;
        let (header, buf, range) = match done {
            Ok((h, Some((buf, range)))) if !range.is_empty() => (h, buf, range),
            Ok((header, _)) => {
                let empty = SensorEvent {
                    stream: i,
                    header,
                    data: &[],
                };
                if !f(&empty) {
                    return Ok(());
                }
                continue;
            }
            Err(_) if !f(&SensorEvent::failed(i)) => return Ok(()),
            Err(_) => continue,
        };
        let mut frame = [0_u8; FRAME_LEN];
        for at in range.step_by(FRAME_LEN) {
            // One frame copied out (20 bytes), so the context is free to reap below.
            frame.copy_from_slice(&rtio.buffer(buf)?[at..at + FRAME_LEN]);
            let ev = SensorEvent {
                stream: i,
                header,
                data: &frame,
            };
            if !f(&ev) {
                return Ok(());
            }
            rtio.run_pending()?;
        }
    }
}

/// Marks the userdata of a coalesced stream's INT read (stream userdata must leave bit 63
/// clear).
const INT_TAG: u64 = 1 << 63;

/// The cross-device coalesced consume loop: each stream's interrupt read is queued on its own,
/// **unlinked**, and all of them are waited for with ONE sleep
/// ([`Rtio::submit_coalesced`]: one `io_uring_enter` with `min_complete` = the interrupts still
/// pending, bounded by `max_wait_ns`); then the transfers of every stream whose interrupt
/// arrived are queued and run (on the `O_NONBLOCK` register memfd they complete inline, in the
/// same `io_uring_enter`, without sleeping), each read is handed to `f` as in
/// [`processing_loop`], and the interrupt reads are re-armed.
///
/// Why: a linked chain's task work wakes its owner per chain (`io_req_local_work_add` clears
/// the lazy-wake flag for linked requests), so per-device chains cost one wake-up per device
/// interrupt. Unlinked interrupt reads are lazily woken: several devices' interrupts cost one
/// wake-up. Where it fits: devices whose interrupts may wait for each other — the same or
/// similar rates, and a deadline longer than the spread of their interrupts. `max_wait_ns`
/// bounds what a device waits for the others (e.g. one period of the slowest); a device that
/// fires twice meanwhile loses nothing (its FIFO holds the frames, the INT eventfd counts).
/// It does not fit a fast device next to slow ones: the fast one would wait for the slow.
///
/// # Errors
/// RTIO submission errors.
pub fn processing_loop_coalesced(
    rtio: &mut Rtio,
    streams: &mut [ImuStream],
    max_wait_ns: u64,
    mut f: impl FnMut(&SensorEvent<'_>) -> bool,
) -> io::Result<()> {
    if streams.iter().any(|s| s.userdata & INT_TAG != 0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "coalesced streams need userdata below 2^63",
        ));
    }
    for s in streams.iter_mut() {
        s.arm_int(rtio)?;
    }
    let mut pending = streams.len();
    loop {
        rtio.submit_coalesced(pending, max_wait_ns)?;
        let mut fetching = 0_usize;
        loop {
            while let Some(c) = rtio.cqe_consume() {
                if let Some(i) = streams
                    .iter()
                    .position(|s| s.userdata | INT_TAG == c.userdata)
                {
                    // An interrupt: fetch that device's data.
                    pending -= 1;
                    if c.result < 0 {
                        if !f(&SensorEvent::failed(i)) {
                            return Ok(());
                        }
                        streams[i].arm_int(rtio)?;
                        pending += 1;
                    } else {
                        streams[i].arm_fetch(rtio)?;
                        fetching += 1;
                    }
                } else if let Some(i) = streams.iter().position(|s| s.userdata == c.userdata) {
                    // A device's data: process it, then wait for its next interrupt.
                    fetching = fetching.saturating_sub(1);
                    if !deliver(rtio, &mut streams[i], i, &c, &mut f) {
                        return Ok(());
                    }
                    streams[i].arm_int(rtio)?;
                    pending += 1;
                }
            }
            if fetching == 0 {
                break;
            }
            // The transfers: inline on the register memfd, so this does not sleep there.
            rtio.submit(1)?;
        }
    }
}

/// Channels a decoder can extract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    /// Acceleration, m/s².
    Accel,
    /// Angular rate, rad/s.
    Gyro,
}

/// One decoded three-axis reading: `value_si = values[k] * 2^shift / 2^31`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Q31Sample {
    /// Back-dated timestamp (CLOCK_MONOTONIC ns).
    pub timestamp_ns: u64,
    /// Power-of-two scale of the q31 values.
    pub shift: i8,
    /// x, y, z.
    pub values: [i32; 3],
    /// The frame's sequence number.
    pub seq: u16,
}

/// Decoder for the simulated IMU's frames (Zephyr `sensor_decoder_api`).
#[derive(Clone, Copy, Debug)]
pub struct ImuDecoder {
    odr_hz: u32,
}

/// Accel full scale in µm/s² (16 g × 9.80665 m/s²).
const ACCEL_FS_UM_S2: i64 = simimu::ACCEL_FS_G as i64 * 9_806_650;
/// Gyro full scale in µrad/s (2000 °/s × π/180).
const GYRO_FS_URAD_S: i64 = 34_906_585;
/// Shifts: 2^8 = 256 m/s² > 156.9 m/s² (16 g); 2^6 = 64 rad/s > 34.9 rad/s (2000 dps).
const ACCEL_SHIFT: i8 = 8;
const GYRO_SHIFT: i8 = 6;

impl ImuDecoder {
    /// A decoder for a device sampling at `odr_hz` (used to back-date timestamps).
    pub fn new(odr_hz: u32) -> ImuDecoder {
        ImuDecoder {
            odr_hz: odr_hz.max(1),
        }
    }

    /// Frames in `data` that carry `channel` (Zephyr `get_frame_count`).
    pub fn frame_count(&self, data: &[u8], channel: Channel) -> usize {
        let bit = match channel {
            Channel::Accel => simimu::HDR_ACCEL,
            Channel::Gyro => simimu::HDR_GYRO,
        };
        data.chunks_exact(FRAME_LEN)
            .filter(|f| f[0] & simimu::HDR_VALID != 0 && f[0] & bit != 0)
            .count()
    }

    /// Converts a raw count to q31 at `shift` given the full scale in micro-units.
    pub fn q31(raw: i16, fs_micro: i64, shift: i8) -> i32 {
        // value = raw / 32768 * fs; q31 = value / 2^shift * 2^31 = raw * fs * 2^(16 - shift).
        let v = i64::from(raw) * fs_micro * (1_i64 << (16 - i32::from(shift))) / 1_000_000;
        i32::try_from(v.clamp(i64::from(i32::MIN), i64::from(i32::MAX))).unwrap_or(i32::MAX)
    }

    /// Decodes frames carrying `channel`, starting at frame index `*fit`, into `out`; advances
    /// `*fit` past what was decoded and returns how many samples were written (Zephyr
    /// `decode`). Timestamps are back-dated from `header.int_timestamp_ns`: the last frame of
    /// the read is taken as sampled at the interrupt, each earlier one a period before.
    pub fn decode(
        &self,
        header: &ReadHeader,
        data: &[u8],
        channel: Channel,
        fit: &mut usize,
        out: &mut [Q31Sample],
    ) -> usize {
        let total = data.len() / FRAME_LEN;
        let period = 1_000_000_000 / u64::from(self.odr_hz);
        let mut n = 0;
        while *fit < total && n < out.len() {
            let i = *fit;
            *fit += 1;
            let Some(f) = Frame::decode(&data[i * FRAME_LEN..]) else {
                continue;
            };
            let (raw, fs, shift, bit) = match channel {
                Channel::Accel => (f.accel, ACCEL_FS_UM_S2, ACCEL_SHIFT, simimu::HDR_ACCEL),
                Channel::Gyro => (f.gyro, GYRO_FS_URAD_S, GYRO_SHIFT, simimu::HDR_GYRO),
            };
            if f.header & bit == 0 {
                continue;
            }
            let back = (total - 1 - i) as u64 * period;
            out[n] = Q31Sample {
                timestamp_ns: header.int_timestamp_ns.saturating_sub(back),
                shift,
                values: raw.map(|r| Self::q31(r, fs, shift)),
                seq: f.seq,
            };
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: u16, header: u8, ax: i16, gz: i16) -> [u8; FRAME_LEN] {
        Frame {
            header: simimu::HDR_VALID | header,
            seq,
            accel: [ax, 0, -ax],
            gyro: [0, 0, gz],
            ..Frame::default()
        }
        .encode()
    }

    #[test]
    fn decoder_counts_frames_and_converts_to_q31() {
        let mut data = Vec::new();
        data.extend_from_slice(&frame(1, simimu::HDR_ACCEL | simimu::HDR_GYRO, 2048, 16384));
        data.extend_from_slice(&frame(2, simimu::HDR_ACCEL, 2048, 0));
        data.extend_from_slice(&frame(3, simimu::HDR_ACCEL | simimu::HDR_GYRO, 0, -16384));
        let dec = ImuDecoder::new(1000);
        assert_eq!(dec.frame_count(&data, Channel::Accel), 3);
        assert_eq!(dec.frame_count(&data, Channel::Gyro), 2);
        let hdr = ReadHeader {
            int_timestamp_ns: 10_000_000,
            frames: 3,
            ..ReadHeader::default()
        };
        let mut out = [Q31Sample::default(); 2];
        let mut fit = 0;
        assert_eq!(
            dec.decode(&hdr, &data, Channel::Accel, &mut fit, &mut out),
            2
        );
        assert_eq!(fit, 2);
        // 2048 counts at ±16 g = 1 g = 9.80665 m/s²; q31 * 2^8 / 2^31 recovers it.
        let si = f64::from(out[0].values[0]) * 2_f64.powi(i32::from(out[0].shift)) / 2_f64.powi(31);
        assert!((si - 9.80665).abs() < 1e-4, "{si}");
        assert_eq!(out[0].values[2], -out[0].values[0]);
        // Back-dated: frame 0 of 3 at 1 kHz is two periods before the interrupt.
        assert_eq!(out[0].timestamp_ns, 8_000_000);
        assert_eq!(out[1].timestamp_ns, 9_000_000);
        let mut rest = [Q31Sample::default(); 4];
        assert_eq!(
            dec.decode(&hdr, &data, Channel::Accel, &mut fit, &mut rest),
            1
        );
        assert_eq!(rest[0].timestamp_ns, 10_000_000);
        let mut fit = 0;
        let mut gyro = [Q31Sample::default(); 4];
        assert_eq!(
            dec.decode(&hdr, &data, Channel::Gyro, &mut fit, &mut gyro),
            2
        );
        // 16384 counts at ±2000 dps = 1000 dps = 17.453 rad/s.
        let si =
            f64::from(gyro[0].values[2]) * 2_f64.powi(i32::from(gyro[0].shift)) / 2_f64.powi(31);
        assert!((si - 17.453_292).abs() < 1e-3, "{si}");
        assert_eq!(gyro[1].seq, 3);
    }

    #[test]
    fn full_scale_does_not_overflow() {
        assert!(ImuDecoder::q31(i16::MIN, ACCEL_FS_UM_S2, ACCEL_SHIFT) < 0);
        assert!(ImuDecoder::q31(i16::MAX, GYRO_FS_URAD_S, GYRO_SHIFT) > 0);
    }
}
