//! One benchmark cell: spawn the simulator, run a consumer design, measure.

use std::io;
use std::os::fd::AsFd;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

use preempt_imu_sim::sim::{Bus, SimConfig};
use preempt_imu_sim::spawn::SimProcess;
use preempt_io::rtio::sensor::{
    self, Channel, DataOpt, ImuDecoder, Q31Sample, SpiMode, StreamTrigger, Trigger,
};
use preempt_io::rtio::simimu::{self, CountBlock, FIFO_FRAMES, FRAME_LEN, Frame};
use preempt_io::rtio::{BackendChoice, Rtio, RtioConfig, TaskRun};
use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::fdio;
use preempt_io::sys::procstat;
use preempt_io::sys::sched::{self, Policy};
use serde::{Deserialize, Serialize};

/// Consumer design.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Design {
    /// One blocking thread per device, reading and processing.
    ThreadBased,
    /// Per device a blocking reader thread, plus one processing thread below them.
    Pipelined,
    /// One RTIO context, one thread, overlapped: the next chain is armed before a read's
    /// frames are processed and reaped between frames.
    RtioBased,
    /// One RTIO context, one thread, each chain re-armed after its read was processed.
    RtioSerial,
    /// One RTIO context, one thread, cross-device coalescing: every device's interrupt read
    /// unlinked, all reaped with one wait (bounded by one period of the slowest device), then
    /// the transfers (`sensor::processing_loop_coalesced`).
    RtioCoalesced,
}

impl Design {
    /// Table label.
    pub fn label(self) -> &'static str {
        match self {
            Design::ThreadBased => "thread",
            Design::Pipelined => "pipelined",
            Design::RtioBased => "rtio",
            Design::RtioSerial => "rtio-serial",
            Design::RtioCoalesced => "rtio-coalesced",
        }
    }
}

/// What one cell runs.
#[derive(Clone, Debug)]
pub struct CellSpec {
    /// IMU ODR.
    pub odr_hz: u32,
    /// Extra accelerometer rates.
    pub extra_hz: Vec<u32>,
    /// Design.
    pub design: Design,
    /// Measurement window, ns.
    pub duration_ns: u64,
    /// Per-sample compute, µs.
    pub work_us: u32,
    /// CPU of the consumer.
    pub consumer_cpu: usize,
    /// CPU of the simulator.
    pub sim_cpu: usize,
    /// Consumer SCHED_FIFO priority (the simulator gets one more).
    pub priority: u8,
    /// RTIO backend.
    pub backend: BackendChoice,
    /// Register bus.
    pub bus: Bus,
    /// SPI: one bus transaction per sample (both designs) instead of a message pair per
    /// transfer.
    pub transaction: bool,
    /// SPI bus time per byte, ns.
    pub bus_ns_per_byte: u32,
    /// RTIO design on the `spi` bus: queued or sequential transfers.
    pub rtio_spi: SpiMode,
    /// Thread designs on the `spi` bus: queued or sequential transfers.
    pub thread_spi: SpiMode,
    /// Only the extra accelerometers are read; the IMU's interrupts are off and its figures
    /// (latency, jitter, "IMU" samples) are those of the first extra accelerometer.
    pub extras_only: bool,
}

/// Results of one cell (units in field names). Also the cell type of preempt's results schema
/// (`preempt_cli::results::rtio::RtioCell` is this type), so it deserializes too.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// IMU output data rate.
    pub odr_hz: u32,
    /// Extra accelerometer streams, e.g. `none`, `1@100Hz`, `2@400Hz`.
    pub extra_streams: String,
    /// `thread` or `rtio` (or another [`Design::label`]).
    pub design: String,
    /// `spi`, `spi-txn` or `memfd`.
    pub bus: String,
    /// SPI bus time per byte (0 for memfd).
    pub bus_ns_per_byte: u32,
    /// RTIO backend used and why (RTIO cells only).
    pub rtio_backend: Option<String>,
    /// Per-sample compute load.
    pub work_us: u32,
    /// Measured window.
    pub duration_ns: u64,
    /// Frames processed, all devices.
    pub samples_processed: u64,
    /// IMU frames processed.
    pub imu_samples_processed: u64,
    /// Busy share of the consumer CPU from `/proc/stat` (includes irq/softirq time, like
    /// Zephyr's `cpu_load`).
    pub consumer_cpu_load_pct: f64,
    /// Process CPU time over wall time (all consumer threads, io_uring workers included).
    pub process_cpu_pct: f64,
    /// Process CPU time per processed frame, ns: the cost of one sample, independent of how
    /// many samples the simulator generated on a loaded machine (0 in files written before
    /// the field existed).
    #[serde(default)]
    pub process_cpu_per_sample_ns: f64,
    /// Latency sample stored (= interrupt) → processed, IMU frames: median.
    pub latency_p50_ns: u64,
    /// 99th percentile.
    pub latency_p99_ns: u64,
    /// Maximum.
    pub latency_max_ns: u64,
    /// Peak-to-peak of the IMU's processing period.
    pub jitter_pp_ns: u64,
    /// Standard deviation of the processing period around 1/ODR.
    pub jitter_sigma_ns: f64,
    /// Samples never processed (sequence gaps, all devices).
    pub missed_events: u64,
    /// Samples the simulated FIFOs dropped when full (simulator counter).
    pub fifo_full_drops: u64,
    /// Simulator timer ticks served late (a threat to validity).
    pub sim_overruns: u64,
    /// Process context switches per processed sample.
    pub context_switches_per_sample: f64,
    /// Whether the consumer got SCHED_FIFO.
    pub consumer_sched_fifo: bool,
    /// io_uring io-wq worker threads (`iou-wrk-*`) alive in the process at the end of the
    /// window: 0 means every transfer ran inline or poll-armed, none was punted to a worker.
    pub iowq_workers: u32,
    /// SPI transfers served by the simulator's bus thread in the window, per processed frame.
    pub bus_transfers_per_sample: f64,
}

impl CellResult {
    /// Events lost, counted once: sequence gaps, or the FIFO's drops where those are more
    /// (the benchmark's table and preempt's report show this number).
    pub fn missed_total(&self) -> u64 {
        self.missed_events.max(self.fifo_full_drops)
    }

    /// Whether any event was missed (the talk's "Missing events").
    pub fn missed(&self) -> bool {
        self.missed_events > 0 || self.fifo_full_drops > 0
    }
}

/// Label for extra streams.
pub(crate) fn extra_label(extra: &[u32]) -> String {
    match extra {
        [] => "none".into(),
        [a, rest @ ..] if rest.iter().all(|r| r == a) => format!("{}@{}Hz", extra.len(), a),
        _ => extra
            .iter()
            .map(|h| format!("1@{h}Hz"))
            .collect::<Vec<_>>()
            .join("+"),
    }
}

/// Per-device bookkeeping of a consumer; preallocated, so recording never allocates.
#[derive(Debug)]
pub struct DevState {
    /// Whether latencies and periods are recorded (the first device read).
    record: bool,
    expected: Option<u16>,
    /// Samples missing from the sequence.
    pub gaps: u64,
    /// Frames processed.
    pub processed: u64,
    /// Latencies (IMU only), ns.
    pub latencies: Vec<u64>,
    /// Processing periods (IMU only), ns.
    pub periods: Vec<u64>,
    last_done: u64,
    work_ns: u64,
    decoder: ImuDecoder,
    out: [Q31Sample; 8],
    /// Sum of decoded values (kept so the decode is not optimised away).
    pub checksum: i64,
}

impl DevState {
    /// State for `device` at `odr_hz`, with room for `capacity` recorded samples (device 0
    /// records latencies and periods; see [`DevState::recording`]).
    pub fn new(device: usize, odr_hz: u32, work_us: u32, capacity: usize) -> DevState {
        let cap = if device == 0 { capacity } else { 0 };
        DevState {
            record: device == 0,
            expected: None,
            gaps: 0,
            processed: 0,
            latencies: Vec::with_capacity(cap),
            periods: Vec::with_capacity(cap),
            last_done: 0,
            work_ns: u64::from(work_us) * 1000,
            decoder: ImuDecoder::new(odr_hz),
            out: [Q31Sample::default(); 8],
            checksum: 0,
        }
    }

    /// This device records latencies and periods (room for `capacity`): the first device
    /// read when the IMU is not.
    pub fn recording(mut self, capacity: usize) -> DevState {
        self.record = true;
        self.latencies = Vec::with_capacity(capacity);
        self.periods = Vec::with_capacity(capacity);
        self
    }

    /// Processes the whole frames of one FIFO read: sequence check, decode to q31, the
    /// configured compute, latency and period recording.
    pub fn process(&mut self, header: &sensor::ReadHeader, data: &[u8]) {
        let mut fit = 0;
        let total = data.len() / FRAME_LEN;
        while fit < total {
            let start = fit;
            let n = self
                .decoder
                .decode(header, data, Channel::Accel, &mut fit, &mut self.out);
            for k in 0..n {
                self.checksum = self.checksum.wrapping_add(i64::from(self.out[k].values[2]));
            }
            for i in start..fit {
                let Some(f) = Frame::decode(&data[i * FRAME_LEN..]) else {
                    continue;
                };
                self.one(&f);
            }
        }
    }

    fn one(&mut self, f: &Frame) {
        if let Some(e) = self.expected {
            self.gaps += u64::from(f.seq.wrapping_sub(e));
        }
        self.expected = Some(f.seq.wrapping_add(1));
        if self.work_ns > 0 {
            let until = clock::now_ns(ClockId::Monotonic) + self.work_ns;
            while clock::now_ns(ClockId::Monotonic) < until {
                std::hint::spin_loop();
            }
        }
        let now = clock::now_ns(ClockId::Monotonic);
        self.processed += 1;
        if self.record {
            let lat = now.saturating_sub(simimu::extend_timestamp(f.ts_low, now));
            if self.latencies.len() < self.latencies.capacity() {
                self.latencies.push(lat);
            }
            if self.last_done != 0 && self.periods.len() < self.periods.capacity() {
                self.periods.push(now - self.last_done);
            }
            self.last_done = now;
        }
    }
}

fn cpu_times(cpu: usize) -> io::Result<(u64, u64)> {
    let t = procstat::cpu(&procstat::read()?, cpu).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("cpu{cpu} not in /proc/stat (--consumer-cpu)"),
        )
    })?;
    Ok((t.total(), t.idle))
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn setup_consumer_thread(cpu: usize, priority: u8) -> bool {
    // Pinning failure shows in the /proc/stat load; SCHED_FIFO failure is reported per cell.
    if let Err(e) = sched::set_current_thread_affinity(&[cpu]) {
        eprintln!("rtio-bench: cannot pin consumer to CPU {cpu}: {e}");
    }
    sched::set_current_thread_policy(&Policy::Fifo { priority }).is_ok()
}

/// How a thread-design reader reaches its device.
enum ReaderBus {
    /// `pread`s of the register memfd (and a `pwrite` of FIFO_RD).
    Memfd(preempt_io::sys::memfd::MemFd),
    /// Blocking SPI transfers: one (command, response) at a time, or the three commands
    /// queued to the bus before the three responses are read.
    Spi(OwnedFd, SpiMode),
    /// One bus transaction (one command, one response).
    Txn(OwnedFd),
}

/// The blocking reader of the thread designs: waits on INT, reads STATUS, the count block and
/// the FIFO over `bus`, and hands each read to `sink`, until `stop` (checked after every
/// interrupt; the caller raises INT to wake it).
fn thread_reader(
    bus: ReaderBus,
    int: &EventFd,
    stop: &AtomicBool,
    mut sink: impl FnMut(&sensor::ReadHeader, &[u8]),
) -> io::Result<()> {
    let mut status = [0_u8; 4];
    let mut count = [0_u8; simimu::COUNT_BLOCK_LEN];
    let head = 4 + simimu::COUNT_BLOCK_LEN;
    let mut fifo = vec![0_u8; head + simimu::FIFO_BURST_LEN];
    let mut txn = [0_u8; simimu::SPI_CMD_LEN * 4];
    let txn_len = simimu::spi_transaction_cmd(
        &[
            (simimu::REG_STATUS, 4),
            (simimu::REG_FIFO_COUNT, simimu::COUNT_BLOCK_LEN as u32),
            (simimu::REG_FIFO_DATA, simimu::FIFO_BURST_LEN as u32),
        ],
        &mut txn,
    )
    .ok_or_else(|| io::Error::other("transaction command does not fit"))?;
    let mut rd = match &bus {
        ReaderBus::Memfd(regs) => {
            let mut b = [0_u8; 4];
            fdio::pread(regs.as_fd(), &mut b, simimu::REG_FIFO_RD)?;
            u32::from_le_bytes(b)
        }
        _ => 0,
    };
    let eof = || {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "SPI bus closed (simulator gone?)",
        )
    };
    loop {
        int.read()?;
        if stop.load(Ordering::Acquire) {
            return Ok(());
        }
        // (frames start, frames end) in `fifo`, after STATUS and the count block are known.
        let (lo, hi) = match &bus {
            ReaderBus::Memfd(regs) => {
                fdio::pread(regs.as_fd(), &mut status, simimu::REG_STATUS)?;
                fdio::pread(regs.as_fd(), &mut count, simimu::REG_FIFO_COUNT)?;
                let burst = &mut fifo[..simimu::FIFO_BURST_LEN];
                fdio::pread(regs.as_fd(), burst, simimu::fifo_burst_offset(rd))?;
                let n = CountBlock::parse(&count)
                    .wr
                    .wrapping_sub(rd)
                    .min(FIFO_FRAMES) as usize;
                let mut valid = 0;
                while valid < n && Frame::decode(&fifo[valid * FRAME_LEN..]).is_some() {
                    valid += 1;
                }
                rd = rd.wrapping_add(u32::try_from(valid).unwrap_or(0));
                (0, valid * FRAME_LEN)
            }
            ReaderBus::Spi(b, SpiMode::Sequential) => {
                let b = b.as_fd();
                sensor::spi_read(b, simimu::REG_STATUS, &mut status)?;
                sensor::spi_read(b, simimu::REG_FIFO_COUNT, &mut count)?;
                let cb = CountBlock::parse(&count);
                let n = cb.wr.wrapping_sub(cb.rd).min(FIFO_FRAMES) as usize;
                if n == 0 {
                    continue;
                }
                let got = sensor::spi_read(b, simimu::REG_FIFO_DATA, &mut fifo[..n * FRAME_LEN])?;
                (0, got / FRAME_LEN * FRAME_LEN)
            }
            ReaderBus::Spi(b, SpiMode::Queued) => {
                // As the RTIO chain: all three commands to the bus, then the responses.
                let b = b.as_fd();
                let burst = simimu::FIFO_BURST_LEN as u32;
                fdio::write(b, &simimu::spi_read_cmd(simimu::REG_STATUS, 4))?;
                let count_len = simimu::COUNT_BLOCK_LEN as u32;
                fdio::write(b, &simimu::spi_read_cmd(simimu::REG_FIFO_COUNT, count_len))?;
                fdio::write(b, &simimu::spi_read_cmd(simimu::REG_FIFO_DATA, burst))?;
                if fdio::read(b, &mut status)? == 0 || fdio::read(b, &mut count)? == 0 {
                    return Err(eof());
                }
                let got = fdio::read(b, &mut fifo[..simimu::FIFO_BURST_LEN])?;
                (0, got / FRAME_LEN * FRAME_LEN)
            }
            ReaderBus::Txn(b) => {
                fdio::write(b.as_fd(), &txn[..txn_len])?;
                let got = fdio::read(b.as_fd(), &mut fifo)?;
                if got < head {
                    return Err(eof());
                }
                status.copy_from_slice(&fifo[..4]);
                count.copy_from_slice(&fifo[4..head]);
                (head, head + (got - head) / FRAME_LEN * FRAME_LEN)
            }
        };
        let cb = CountBlock::parse(&count);
        let header = sensor::ReadHeader {
            int_timestamp_ns: cb.int_ts_ns,
            status: u32::from_le_bytes(status),
            frames: u32::try_from((hi - lo) / FRAME_LEN).unwrap_or(0),
            flushed: 0,
            dropped_total: cb.dropped,
            period_ns: 0,
        };
        sink(&header, &fifo[lo..hi]);
        if let ReaderBus::Memfd(regs) = &bus {
            fdio::pwrite(regs.as_fd(), &rd.to_le_bytes(), simimu::REG_FIFO_RD)?;
        }
    }
}

/// The serial thread design: one thread per device reads and processes.
fn thread_consumer(
    bus: ReaderBus,
    int: EventFd,
    mut st: DevState,
    stop: Arc<AtomicBool>,
    cpu: usize,
    priority: u8,
) -> io::Result<(DevState, bool)> {
    let fifo_ok = setup_consumer_thread(cpu, priority);
    thread_reader(bus, &int, &stop, |h, d| st.process(h, d))?;
    Ok((st, fifo_ok))
}

/// One frame on its way from a pipelined reader to the processing thread.
type Piped = (usize, sensor::ReadHeader, [u8; FRAME_LEN]);

/// Frames the pipeline holds between readers and the processor: more than one full FIFO
/// (102 frames) per device, so a reader blocks on a full queue only after its device's FIFO
/// would have overflowed anyway.
const PIPE_FRAMES: usize = 4 * FIFO_FRAMES as usize;

/// The pipelined design's queue: a preallocated ring behind a mutex, with condition
/// variables for "not empty" and "not full".
///
/// Why not `std::sync::mpsc::sync_channel`: its lock-free array channel spin-waits
/// (`Backoff::spin_light`) for a slot that a concurrent receiver has claimed but not yet
/// released. Under SCHED_FIFO on one CPU a reader (priority P) that preempted the processor
/// (P - 1) inside `recv` spins forever: the processor never runs again to release the slot.
/// Measured: a `--sweep` trial hung with a reader at 100 % CPU in `start_send` for minutes.
/// A mutex sleeps on a futex instead (std's spins only a bounded number of times), so the
/// processor runs and releases it.
#[derive(Debug)]
struct Pipe {
    q: Mutex<PipeState>,
    not_empty: Condvar,
    not_full: Condvar,
}

#[derive(Debug)]
struct PipeState {
    frames: std::collections::VecDeque<Piped>,
    /// Readers still running; the processor stops when this is 0 and the queue is empty.
    senders: usize,
}

impl Pipe {
    fn new(senders: usize) -> Pipe {
        Pipe {
            q: Mutex::new(PipeState {
                frames: std::collections::VecDeque::with_capacity(PIPE_FRAMES),
                senders,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PipeState> {
        // A panicking peer shows as a join error; its frames are still valid data.
        self.q
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues a frame, waiting while the queue is full.
    fn send(&self, item: Piped) {
        let mut g = self.lock();
        while g.frames.len() >= PIPE_FRAMES {
            g = self
                .not_full
                .wait(g)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        g.frames.push_back(item);
        drop(g);
        self.not_empty.notify_one();
    }

    /// A reader is done.
    fn hang_up(&self) {
        self.lock().senders -= 1;
        self.not_empty.notify_all();
    }

    /// The next frame, or `None` once every reader hung up and the queue is drained.
    fn recv(&self) -> Option<Piped> {
        let mut g = self.lock();
        loop {
            if let Some(item) = g.frames.pop_front() {
                drop(g);
                self.not_full.notify_one();
                return Some(item);
            }
            if g.senders == 0 {
                return None;
            }
            g = self
                .not_empty
                .wait(g)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

/// A pipelined reader (one per device, at the consumer priority): reads as the serial
/// design does and passes the frames to the processing thread.
fn pipelined_reader(
    dev: usize,
    bus: ReaderBus,
    int: EventFd,
    pipe: Arc<Pipe>,
    stop: Arc<AtomicBool>,
    cpu: usize,
    priority: u8,
) -> io::Result<bool> {
    let fifo_ok = setup_consumer_thread(cpu, priority);
    let r = thread_reader(bus, &int, &stop, |h, d| {
        for f in d.chunks_exact(FRAME_LEN) {
            let mut frame = [0_u8; FRAME_LEN];
            frame.copy_from_slice(f);
            pipe.send((dev, *h, frame));
        }
    });
    pipe.hang_up();
    r?;
    Ok(fifo_ok)
}

/// The pipelined design's processing thread, one priority below its readers (which preempt
/// it to read a device as soon as its interrupt fires): processes frames until every reader
/// has hung up.
fn pipelined_processor(
    pipe: &Pipe,
    mut states: Vec<DevState>,
    cpu: usize,
    priority: u8,
) -> (Vec<DevState>, bool) {
    let fifo_ok = setup_consumer_thread(cpu, priority.saturating_sub(1).max(1));
    while let Some((dev, h, frame)) = pipe.recv() {
        if let Some(st) = states.get_mut(dev) {
            st.process(&h, &frame);
        }
    }
    (states, fifo_ok)
}

/// io-wq worker threads of this process (`iou-wrk-<tid>` in `/proc/self/task/*/comm`).
fn iowq_workers() -> u32 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    let n = dir
        .filter_map(Result::ok)
        .filter(|e| {
            std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.starts_with("iou-wrk"))
        })
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn rtio_consumer(
    fds: Vec<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)>,
    mut states: Vec<DevState>,
    stop: Arc<AtomicBool>,
    spec: CellSpec,
    max_wait_ns: u64,
) -> io::Result<(Vec<DevState>, bool, String)> {
    let fifo_ok = setup_consumer_thread(spec.consumer_cpu, spec.priority);
    let cfg = RtioConfig {
        sq_size: 8 * fds.len() + 8,
        cq_size: 4 * fds.len() + 4,
        mempool_blocks: 0,
        mempool_block_size: 0,
        backend: spec.backend,
        // Measured on this VM (runs/README.md, v3): DEFER_TASKRUN beat COOP_TASKRUN and
        // signal-style task work by 7-15 % per sample; fixed files + RECV with POLL_FIRST
        // saved ~4 %; the completion eventfd (nobody reads it here) cost ~2 us per sample.
        task_run: TaskRun::Defer,
        notify_eventfd: false,
        fixed_files: true,
        socket_poll_first: true,
    };
    let mut rtio = Rtio::new(cfg)?;
    let triggers = [StreamTrigger {
        trigger: Trigger::DataReady,
        opt: DataOpt::Include,
    }];
    let mut streams = Vec::new();
    for (i, (regs, int)) in fds.into_iter().enumerate() {
        streams.push(match spec.bus {
            Bus::Memfd => sensor::stream(&mut rtio, regs, int, &triggers, 1, i as u64)?,
            Bus::Spi if spec.transaction => {
                sensor::stream_spi_transaction(&mut rtio, regs, int, &triggers, 1, i as u64)?
            }
            Bus::Spi => sensor::stream_spi_with(
                &mut rtio,
                regs,
                int,
                &triggers,
                1,
                i as u64,
                spec.rtio_spi,
            )?,
        });
    }
    let mut failures = 0_u64;
    let on_event = |ev: &sensor::SensorEvent<'_>| {
        if stop.load(Ordering::Acquire) {
            return false;
        }
        if ev.header.period_ns == 0 {
            failures += 1;
        }
        states[ev.stream].process(&ev.header, ev.data);
        true
    };
    if spec.design == Design::RtioSerial {
        sensor::processing_loop(&mut rtio, &mut streams, on_event)?;
    } else if spec.design == Design::RtioCoalesced {
        // A device waits for the others at most one period of the slowest device read.
        sensor::processing_loop_coalesced(&mut rtio, &mut streams, max_wait_ns, on_event)?;
    } else {
        sensor::processing_loop_overlapped(&mut rtio, &mut streams, on_event)?;
    }
    if failures > 0 {
        eprintln!("rtio-bench: {failures} RTIO chains failed");
    }
    // After the run: the ring registers its files when the first submit enables it.
    let backend = format!(
        "{:?} ({}; {}){}",
        rtio.backend().kind,
        rtio.backend().reason,
        rtio.backend().features.join(", "),
        match (spec.bus, spec.transaction) {
            (Bus::Spi, false) => format!("; spi transfers {:?}", spec.rtio_spi),
            _ => String::new(),
        }
    );

    Ok((states, fifo_ok, backend))
}

/// Runs one cell.
///
/// # Errors
/// Simulator spawn, descriptor, or consumer errors.
pub fn run_cell(sim_exe: &Path, spec: &CellSpec) -> io::Result<CellResult> {
    let sim_cfg = SimConfig {
        bus: spec.bus,
        bus_ns_per_byte: spec.bus_ns_per_byte,
        odr_hz: spec.odr_hz,
        accel_hz: spec.extra_hz.clone(),
        cpu: Some(spec.sim_cpu),
        fifo_priority: Some(spec.priority.saturating_add(1).min(99)),
        duration_ns: None,
    };
    let mut sim = SimProcess::spawn(sim_exe, &sim_cfg)?;
    // Flush what accumulated before the consumer starts, and enable per-sample interrupts
    // (the RTIO stream writes CONFIG itself; the thread design does it here).
    for d in &sim.devices {
        d.map.store_u32(
            usize::try_from(simimu::REG_FIFO_RD).unwrap_or(0),
            d.map
                .load_u32(usize::try_from(simimu::REG_FIFO_WR).unwrap_or(0)),
        );
        // Direct register write (setup, not the measured data path) for both buses.
        d.map.store_u32(
            usize::try_from(simimu::REG_CONFIG).unwrap_or(0),
            simimu::CONFIG_INT_DATA_RDY | 1,
        );
    }
    // The first device read: the IMU, or with `extras_only` the first extra accelerometer
    // (the IMU then raises no interrupt and nobody reads it).
    let first = usize::from(spec.extras_only);
    if spec.extras_only {
        sim.devices[0]
            .map
            .store_u32(usize::try_from(simimu::REG_CONFIG).unwrap_or(0), 0);
    }
    let cap = usize::try_from(u64::from(spec.odr_hz) * (spec.duration_ns / 1_000_000_000 + 2))
        .unwrap_or(1 << 20);
    let stop = Arc::new(AtomicBool::new(false));
    let rate = |i: usize| {
        if i == 0 {
            spec.odr_hz
        } else {
            spec.extra_hz[i - 1]
        }
    };
    let read = first..sim.devices.len();
    let new_states = || -> Vec<DevState> {
        read.clone()
            .map(|i| {
                let st = DevState::new(i, rate(i), spec.work_us, cap);
                if i == first && first > 0 {
                    st.recording(cap)
                } else {
                    st
                }
            })
            .collect()
    };
    // What a coalesced wait may add: one period of the slowest device read.
    let max_wait_ns = 1_000_000_000 / u64::from(read.clone().map(rate).min().unwrap_or(1).max(1));
    let drops0: Vec<u64> = sim
        .devices
        .iter()
        .map(|d| d.map.load_u64(simimu::REG_DROPPED as usize))
        .collect();
    let over0 = sim.devices[0].map.load_u64(simimu::REG_OVERRUNS as usize);
    let xfer = |sim: &SimProcess| -> u64 {
        sim.devices
            .iter()
            .map(|d| d.map.load_u64(simimu::REG_BUS_TRANSFERS as usize))
            .sum()
    };
    let xfer0 = xfer(&sim);
    let (tot0, idle0) = cpu_times(spec.consumer_cpu)?;
    let pcpu0 = fdio::process_cpu_ns()?;
    let cs0 = fdio::process_context_switches()?;
    let t0 = clock::monotonic_now_ns();

    type Processor = std::thread::JoinHandle<(Vec<DevState>, bool)>;
    /// A reader's state (serial design only) and whether it got SCHED_FIFO.
    type Reader = std::thread::JoinHandle<io::Result<(Option<DevState>, bool)>>;
    enum Running {
        /// Reader threads (which also process, in the serial design) and the pipelined
        /// design's processing thread.
        Threads(Vec<Reader>, Option<Processor>),
        Rtio(std::thread::JoinHandle<io::Result<(Vec<DevState>, bool, String)>>),
    }
    let running = match spec.design {
        Design::ThreadBased | Design::Pipelined => {
            let states = new_states();
            let serial = spec.design == Design::ThreadBased;
            // Serial: each reader owns its device's state; pipelined: the processor owns all.
            let (own, shared) = if serial {
                (states, Vec::new())
            } else {
                (Vec::new(), states)
            };
            let mut own = own.into_iter();
            let (cpu, prio) = (spec.consumer_cpu, spec.priority);
            let pipe = Arc::new(Pipe::new(if serial { 0 } else { read.len() }));
            let mut hs = Vec::new();
            // `i` indexes the states (the devices read), `d` the simulator's devices.
            for (i, d) in sim.devices[first..].iter().enumerate() {
                let int = d.int.try_clone()?;
                let bus = match spec.bus {
                    Bus::Memfd => ReaderBus::Memfd(preempt_io::sys::memfd::MemFd::from_owned(
                        d.regs.as_fd().try_clone_to_owned()?,
                    )?),
                    Bus::Spi if spec.transaction => ReaderBus::Txn(d.dup_spi_fds()?.0),
                    Bus::Spi => ReaderBus::Spi(d.dup_spi_fds()?.0, spec.thread_spi),
                };
                let stop = Arc::clone(&stop);
                let b = std::thread::Builder::new().name(format!("imu-reader-{i}"));
                hs.push(match own.next() {
                    Some(st) => b.spawn(move || {
                        thread_consumer(bus, int, st, stop, cpu, prio).map(|(s, ok)| (Some(s), ok))
                    })?,
                    None => {
                        let pipe = Arc::clone(&pipe);
                        b.spawn(move || {
                            pipelined_reader(i, bus, int, pipe, stop, cpu, prio)
                                .map(|ok| (None, ok))
                        })?
                    }
                });
            }
            let processor = if !serial {
                Some(
                    std::thread::Builder::new()
                        .name("imu-process".into())
                        .spawn(move || pipelined_processor(&pipe, shared, cpu, prio))?,
                )
            } else {
                None
            };
            Running::Threads(hs, processor)
        }
        Design::RtioBased | Design::RtioSerial | Design::RtioCoalesced => {
            let fds = sim.devices[first..]
                .iter()
                .map(|d| match spec.bus {
                    Bus::Memfd => d.dup_fds(),
                    Bus::Spi => d.dup_spi_fds(),
                })
                .collect::<io::Result<Vec<_>>>()?;
            let states = new_states();
            let stop2 = Arc::clone(&stop);
            let s = spec.clone();
            Running::Rtio(
                std::thread::Builder::new()
                    .name("imu-rtio".into())
                    .spawn(move || rtio_consumer(fds, states, stop2, s, max_wait_ns))?,
            )
        }
    };
    clock::sleep_until_ns(ClockId::Monotonic, t0 + spec.duration_ns)?;
    let t1 = clock::monotonic_now_ns();
    let (tot1, idle1) = cpu_times(spec.consumer_cpu)?;
    let xfer1 = xfer(&sim);
    let pcpu1 = fdio::process_cpu_ns()?;
    let cs1 = fdio::process_context_switches()?;
    let drops1: Vec<u64> = sim
        .devices
        .iter()
        .map(|d| d.map.load_u64(simimu::REG_DROPPED as usize))
        .collect();
    let over1 = sim.devices[0].map.load_u64(simimu::REG_OVERRUNS as usize);
    let workers = iowq_workers();
    stop.store(true, Ordering::Release);
    // Wake the consumers blocked on their INT lines.
    for d in &sim.devices {
        d.int.write(1)?;
    }
    let (states, fifo_ok, backend) = match running {
        Running::Threads(hs, processor) => {
            let mut states = Vec::new();
            let mut ok = true;
            for h in hs {
                let (st, f) = h
                    .join()
                    .map_err(|_| io::Error::other("reader thread panicked"))??;
                ok &= f;
                states.extend(st);
            }
            if let Some(p) = processor {
                // The readers hung up: the processor drains the queue and returns.
                let (st, f) = p
                    .join()
                    .map_err(|_| io::Error::other("processing thread panicked"))?;
                ok &= f;
                states = st;
            }
            (states, ok, None)
        }
        Running::Rtio(h) => {
            let (states, ok, b) = h
                .join()
                .map_err(|_| io::Error::other("RTIO thread panicked"))??;
            (states, ok, Some(b))
        }
    };
    sim.stop()?;

    let wall = (t1 - t0).max(1);
    let samples: u64 = states.iter().map(|s| s.processed).sum();
    let mut lat = states[0].latencies.clone();
    lat.sort_unstable();
    let periods = &states[0].periods;
    let nominal = 1e9 / f64::from(rate(first));
    let (pp, sigma) = if periods.len() > 1 {
        let mn = periods.iter().min().copied().unwrap_or(0);
        let mx = periods.iter().max().copied().unwrap_or(0);
        let var = periods
            .iter()
            .map(|p| (*p as f64 - nominal).powi(2))
            .sum::<f64>()
            / periods.len() as f64;
        (mx - mn, var.sqrt())
    } else {
        (0, 0.0)
    };
    let busy = (tot1 - tot0).saturating_sub(idle1 - idle0);
    Ok(CellResult {
        odr_hz: spec.odr_hz,
        extra_streams: if spec.extras_only {
            format!("{} only", extra_label(&spec.extra_hz))
        } else {
            extra_label(&spec.extra_hz)
        },
        design: spec.design.label().into(),
        bus: match (spec.bus, spec.transaction) {
            (Bus::Spi, true) => "spi-txn".into(),
            (b, _) => b.name().into(),
        },
        bus_ns_per_byte: if spec.bus == Bus::Spi {
            spec.bus_ns_per_byte
        } else {
            0
        },
        rtio_backend: backend,
        work_us: spec.work_us,
        duration_ns: wall,
        samples_processed: samples,
        imu_samples_processed: states[0].processed,
        consumer_cpu_load_pct: 100.0 * busy as f64 / (tot1 - tot0).max(1) as f64,
        process_cpu_pct: 100.0 * (pcpu1 - pcpu0) as f64 / wall as f64,
        process_cpu_per_sample_ns: (pcpu1 - pcpu0) as f64 / samples.max(1) as f64,
        latency_p50_ns: percentile(&lat, 0.50),
        latency_p99_ns: percentile(&lat, 0.99),
        latency_max_ns: lat.last().copied().unwrap_or(0),
        jitter_pp_ns: pp,
        jitter_sigma_ns: sigma,
        missed_events: states.iter().map(|s| s.gaps).sum(),
        fifo_full_drops: drops1
            .iter()
            .zip(&drops0)
            .skip(first)
            .map(|(a, b)| a - b)
            .sum(),
        sim_overruns: over1 - over0,
        context_switches_per_sample: (cs1 - cs0) as f64 / samples.max(1) as f64,
        consumer_sched_fifo: fifo_ok,
        iowq_workers: workers,
        bus_transfers_per_sample: (xfer1 - xfer0) as f64 / samples.max(1) as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_delivers_in_order_blocks_when_full_and_ends_after_the_last_hang_up() {
        let pipe = Arc::new(Pipe::new(2));
        let frame = |seq: u8| {
            (
                usize::from(seq % 2),
                sensor::ReadHeader::default(),
                [seq; 20],
            )
        };
        // More frames than the queue holds: the senders must wait for the receiver.
        let n = u8::try_from(PIPE_FRAMES / 2 + 50).unwrap_or(u8::MAX);
        let senders: Vec<_> = (0..2_u8)
            .map(|k| {
                let p = Arc::clone(&pipe);
                std::thread::spawn(move || {
                    for i in 0..n {
                        p.send(frame(i.wrapping_mul(2).wrapping_add(k)));
                    }
                    p.hang_up();
                })
            })
            .collect();
        let mut last = [None::<u8>; 2];
        let mut got = 0;
        while let Some((dev, _, f)) = pipe.recv() {
            // Per sender, frames come out in the order they went in.
            if let Some(prev) = last[dev] {
                assert_eq!(f[0], prev.wrapping_add(2));
            }
            last[dev] = Some(f[0]);
            got += 1;
        }
        for s in senders {
            s.join().unwrap();
        }
        assert_eq!(got, 2 * usize::from(n));
        assert!(pipe.recv().is_none(), "no sender left: recv ends");
    }

    #[test]
    fn gaps_are_counted_from_sequence_numbers() {
        let mut st = DevState::new(0, 3200, 0, 16);
        let mut data = Vec::new();
        for seq in [1_u16, 2, 5, 6] {
            data.extend_from_slice(
                &Frame {
                    header: simimu::HDR_VALID | simimu::HDR_ACCEL,
                    seq,
                    ..Frame::default()
                }
                .encode(),
            );
        }
        st.process(&sensor::ReadHeader::default(), &data);
        assert_eq!((st.processed, st.gaps), (4, 2));
        assert_eq!(st.periods.len(), 3);
        assert_eq!(extra_label(&[400, 400]), "2@400Hz");
        assert_eq!(extra_label(&[]), "none");
        assert_eq!(percentile(&[1, 2, 3, 4, 5], 0.5), 3);
    }
}
