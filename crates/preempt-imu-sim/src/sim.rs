//! The simulator loop: one SCHED_FIFO thread, pinned, woken by an absolute periodic timerfd
//! at the IMU's ODR; each tick stores an IMU sample (and, every `ODR / rate` ticks, a sample of
//! each extra accelerometer) and raises the INT eventfds the FIFOs ask for.
//!
//! With the SPI bus ([`Bus::Spi`]) a second thread, the *bus thread*, serves every device's
//! bus socket like one SPI controller with a chip select per device: it takes one command at
//! a time, executes it on the register file, keeps the bus busy for the transfer time
//! (busy-waiting, as a controller clocking bits would; the simulator's CPU stands in for the
//! hardware) and answers reads. It runs one priority below the sampling thread on the same
//! CPU, so sampling is never delayed by a transfer, as on a chip whose sampling is
//! independent of its serial interface.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use preempt_io::rtio::simimu::{
    self, FIFO_FRAMES, FRAME_LEN, Frame, REG_FIFO_DATA, REG_FIFO_RD, REG_FIFO_WR, REG_ODR_HZ,
    REG_OVERRUNS, REG_WHO_AM_I, REGFILE_LEN, SpiCmd,
};
use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::epoll::{Epoll, Event, Interest};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::fdio;
use preempt_io::sys::memfd::SharedMap;
use preempt_io::sys::sched::{self, Policy};
use preempt_io::sys::timerfd::TimerFd;

use crate::fifo::{Fifo, Regs};

/// ODRs the IMU supports (the talk's two rates).
pub(crate) const IMU_ODRS: [u32; 2] = [3200, 6400];
/// Rates the extra accelerometers support.
pub(crate) const ACCEL_ODRS: [u32; 2] = [100, 400];

/// How readers reach the registers (see `preempt_io::rtio::simimu`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bus {
    /// Synchronous: the reader `pread`s the register memfd.
    Memfd,
    /// Asynchronous: command/response messages on a socket served by the bus thread.
    #[default]
    Spi,
}

impl Bus {
    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Bus::Memfd => "memfd",
            Bus::Spi => "spi",
        }
    }
}

/// What to simulate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
    /// Register access path.
    pub bus: Bus,
    /// SPI bus time per byte, ns (default `simimu::DEFAULT_BUS_NS_PER_BYTE`, 10 MHz).
    pub bus_ns_per_byte: u32,
    /// IMU output data rate, Hz (3200 or 6400).
    pub odr_hz: u32,
    /// Extra accelerometers, each at 100 or 400 Hz.
    pub accel_hz: Vec<u32>,
    /// CPU to pin the simulator to.
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority (None: stay SCHED_OTHER).
    pub fifo_priority: Option<u8>,
    /// Stop after this long (None: run until killed).
    pub duration_ns: Option<u64>,
}

impl Default for SimConfig {
    fn default() -> SimConfig {
        SimConfig {
            bus: Bus::Spi,
            bus_ns_per_byte: simimu::DEFAULT_BUS_NS_PER_BYTE,
            odr_hz: 3200,
            accel_hz: Vec::new(),
            cpu: None,
            fifo_priority: None,
            duration_ns: None,
        }
    }
}

impl SimConfig {
    /// Checks rates.
    ///
    /// # Errors
    /// A message naming the bad value.
    pub fn validate(&self) -> Result<(), String> {
        if !IMU_ODRS.contains(&self.odr_hz) {
            return Err(format!("--odr {}: must be 3200 or 6400", self.odr_hz));
        }
        if let Some(bad) = self.accel_hz.iter().find(|h| !ACCEL_ODRS.contains(h)) {
            return Err(format!(
                "--accel {bad}: each extra accelerometer runs at 100 or 400 Hz"
            ));
        }
        if self.bus_ns_per_byte > 100_000 {
            return Err(format!(
                "--bus-ns-per-byte {}: at most 100000 (10 kHz SPI)",
                self.bus_ns_per_byte
            ));
        }
        if self.accel_hz.len() > 8 {
            return Err("--accel: at most 8 extra accelerometers".into());
        }
        Ok(())
    }

    /// Number of devices (IMU + accelerometers).
    pub fn devices(&self) -> usize {
        1 + self.accel_hz.len()
    }
}

/// What the run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimReport {
    /// Timer ticks served.
    pub ticks: u64,
    /// Ticks the simulator could not serve on time (timerfd expirations > 1).
    pub overruns: u64,
    /// Whether SCHED_FIFO was granted (None: not asked).
    pub fifo_granted: Option<bool>,
    /// Whether pinning worked (None: not asked).
    pub pinned: Option<bool>,
    /// SPI transfers served (reads and writes).
    pub bus_transfers: u64,
    /// Time the SPI bus was busy, ns.
    pub bus_busy_ns: u64,
}

/// Applies pinning and SCHED_FIFO to the calling thread, reporting what was granted.
pub(crate) fn apply_rt(cfg: &SimConfig, report: &mut SimReport) {
    if let Some(cpu) = cfg.cpu {
        report.pinned = Some(sched::set_current_thread_affinity(&[cpu]).is_ok());
    }
    if let Some(p) = cfg.fifo_priority {
        report.fifo_granted =
            Some(sched::set_current_thread_policy(&Policy::Fifo { priority: p }).is_ok());
    }
}

pub(crate) fn sample(dev: u8, accel_only: bool, k: u64, now_ns: u64) -> Frame {
    // A slow synthetic motion: 1 g on z plus small sinusoids (values in counts).
    let phase = (k % 6400) as f64 / 6400.0 * std::f64::consts::TAU;
    let s = |amp: f64, f: f64| (amp * (phase * f).sin()) as i16;
    let mut header = simimu::HDR_VALID | simimu::HDR_ACCEL | (dev & 0x0f);
    let gyro = if accel_only {
        [0; 3]
    } else {
        header |= simimu::HDR_GYRO;
        [s(1600.0, 1.0), s(800.0, 2.0), s(400.0, 3.0)]
    };
    Frame {
        header,
        temp: 10,
        seq: 0,
        accel: [s(200.0, 1.0), s(100.0, 2.0), 2048],
        gyro,
        // Truncation intended: the frame carries the low 32 bits (see simimu::extend_timestamp).
        ts_low: now_ns as u32,
    }
}

/// Runs the simulator on the calling thread over `devices` (register map, INT line); device 0
/// is the IMU, device `i` the accelerometer at `cfg.accel_hz[i - 1]`. With [`Bus::Spi`],
/// `bus` holds the simulator's end of each device's bus socket and a bus thread serves them
/// (empty for [`Bus::Memfd`]).
///
/// # Errors
/// Timer errors; INT writes failing; bus socket errors.
pub fn run(
    cfg: &SimConfig,
    devices: &[(SharedMap, EventFd)],
    bus: &[OwnedFd],
) -> io::Result<SimReport> {
    cfg.validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if devices.len() != cfg.devices() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "one (regs, int) pair per device",
        ));
    }
    let want_bus = if cfg.bus == Bus::Spi {
        devices.len()
    } else {
        0
    };
    if bus.len() != want_bus {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "bus {}: expected {want_bus} bus sockets, got {}",
                cfg.bus.name(),
                bus.len()
            ),
        ));
    }
    let stop = AtomicBool::new(false);
    let transfers = AtomicU64::new(0);
    let busy = AtomicU64::new(0);
    std::thread::scope(|sc| {
        let bus_thread = (!bus.is_empty()).then(|| {
            let maps: Vec<&SharedMap> = devices.iter().map(|d| &d.0).collect();
            let socks: Vec<BorrowedFd<'_>> = bus.iter().map(AsFd::as_fd).collect();
            let (stop, transfers, busy) = (&stop, &transfers, &busy);
            std::thread::Builder::new()
                .name("imu-sim-bus".into())
                .spawn_scoped(sc, move || {
                    serve_bus(cfg, &maps, &socks, stop, transfers, busy)
                })
        });
        let r = sample_loop(cfg, devices);
        stop.store(true, Ordering::Release);
        if let Some(h) = bus_thread {
            h?.join()
                .map_err(|_| io::Error::other("bus thread panicked"))??;
        }
        let mut report = r?;
        report.bus_transfers = transfers.load(Ordering::Relaxed);
        report.bus_busy_ns = busy.load(Ordering::Relaxed);
        Ok(report)
    })
}

/// The SPI bus thread: serves commands from every device's socket in arrival order, one
/// transfer at a time, until `stop`.
fn serve_bus(
    cfg: &SimConfig,
    maps: &[&SharedMap],
    socks: &[BorrowedFd<'_>],
    stop: &AtomicBool,
    transfers: &AtomicU64,
    busy: &AtomicU64,
) -> io::Result<()> {
    if let Some(cpu) = cfg.cpu {
        // Pinning failure shows in the benchmark's per-CPU figures; keep serving.
        if let Err(e) = sched::set_current_thread_affinity(&[cpu]) {
            eprintln!("imu-sim: bus thread: cannot pin to CPU {cpu}: {e}");
        }
    }
    if let Some(p) = cfg.fifo_priority {
        // One below the sampling thread, which must preempt a transfer in progress.
        let prio = p.saturating_sub(1).max(1);
        if let Err(e) = sched::set_current_thread_policy(&Policy::Fifo { priority: prio }) {
            eprintln!("imu-sim: bus thread: SCHED_FIFO {prio} refused: {e}");
        }
    }
    let ep = Epoll::new()?;
    for (i, s) in socks.iter().enumerate() {
        fdio::set_nonblocking(*s, true)?;
        ep.add(*s, Interest::READ, i as u64)?;
    }
    let mut events = [Event::default(); 16];
    let mut cmd = [0_u8; simimu::SPI_CMD_LEN * (1 + simimu::SPI_TRANSACTION_MAX)];
    let mut resp = vec![0_u8; 4096];
    let mut bus_free_at = 0_u64;
    let mut open = socks.len();
    while !stop.load(Ordering::Acquire) && open > 0 {
        // The timeout only bounds how long a stop request waits.
        let n = ep.wait(&mut events, Some(100))?;
        for ev in &events[..n] {
            let i = usize::try_from(ev.token).unwrap_or(usize::MAX);
            let (Some(sock), Some(map)) = (socks.get(i), maps.get(i)) else {
                continue;
            };
            loop {
                let len = match fdio::read(*sock, &mut cmd) {
                    Ok(0) => {
                        // The reader closed its end: stop watching this device.
                        ep.delete(*sock)?;
                        open -= 1;
                        break;
                    }
                    Ok(len) => len,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                        ep.delete(*sock)?;
                        open -= 1;
                        break;
                    }
                    Err(e) => return Err(e),
                };
                let Some(c) = SpiCmd::parse(&cmd[..len]) else {
                    // A malformed command is a reader bug; answer nothing rather than guess.
                    eprintln!("imu-sim: bus: malformed command ({len} bytes) on device {i}");
                    continue;
                };
                let (moved, cost) = if c.op == simimu::SPI_OP_TRANSACTION {
                    transaction(map, &cmd[..len], &mut resp, cfg.bus_ns_per_byte)
                } else {
                    let m = execute(map, &c, &cmd[..len], &mut resp);
                    (m, simimu::spi_transfer_ns(m, cfg.bus_ns_per_byte))
                };
                let start = clock::monotonic_now_ns().max(bus_free_at);
                bus_free_at = start + cost;
                while clock::monotonic_now_ns() < bus_free_at {
                    std::hint::spin_loop();
                }
                transfers.fetch_add(1, Ordering::Relaxed);
                busy.fetch_add(cost, Ordering::Relaxed);
                let (x, b) = (simimu::REG_BUS_TRANSFERS, simimu::REG_BUS_BUSY_NS);
                Regs::store_u64(*map, x, Regs::load_u64(*map, x) + 1);
                Regs::store_u64(*map, b, Regs::load_u64(*map, b) + cost);
                if c.op != simimu::SPI_OP_WRITE {
                    match fdio::write(*sock, &resp[..moved]) {
                        Ok(_) => {}
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
                            ) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }
    Ok(())
}

/// Executes a transaction of reads back to back into one response; returns the response
/// length and the bus time (each read costs its own address byte plus data, as separate
/// transfers would, but the requester is answered once).
fn transaction(map: &SharedMap, msg: &[u8], resp: &mut [u8], ns_per_byte: u32) -> (usize, u64) {
    let k = msg.len() / simimu::SPI_CMD_LEN - 1;
    let (mut at, mut cost) = (0, 0);
    for i in 0..k.min(simimu::SPI_TRANSACTION_MAX) {
        let o = simimu::SPI_CMD_LEN * (1 + i);
        let Some(c) = SpiCmd::parse(&msg[o..o + simimu::SPI_CMD_LEN]) else {
            break;
        };
        if c.op != simimu::SPI_OP_READ {
            break;
        }
        let m = execute(map, &c, &msg[o..], &mut resp[at..]);
        cost += simimu::spi_transfer_ns(m, ns_per_byte);
        at += m;
    }
    (at, cost)
}

/// Executes one command on a register file; returns the data bytes moved (the response
/// length for reads, left in `resp`).
fn execute(map: &SharedMap, c: &SpiCmd, msg: &[u8], resp: &mut [u8]) -> usize {
    let at = |r: u64| usize::try_from(r).unwrap_or(usize::MAX);
    match c.op {
        simimu::SPI_OP_READ if u64::from(c.reg) == REG_FIFO_DATA => {
            // Pop whole frames from FIFO_RD, as the chip's FIFO_DATA register does.
            let wr = Regs::load_u32(map, REG_FIFO_WR);
            let rd = Regs::load_u32(map, REG_FIFO_RD);
            let avail = wr.wrapping_sub(rd).min(FIFO_FRAMES) as usize;
            let want = (c.len as usize).min(resp.len()) / FRAME_LEN;
            let n = avail.min(want);
            map.read_bytes(
                at(simimu::fifo_burst_offset(rd)),
                &mut resp[..n * FRAME_LEN],
            );
            Regs::store_u32(
                map,
                REG_FIFO_RD,
                rd.wrapping_add(u32::try_from(n).unwrap_or(0)),
            );
            n * FRAME_LEN
        }
        simimu::SPI_OP_READ => {
            let len = (c.len as usize).min(resp.len());
            let reg = c.reg as usize;
            if reg.checked_add(len).is_none_or(|e| e > REGFILE_LEN) {
                return 0;
            }
            map.read_bytes(reg, &mut resp[..len]);
            len
        }
        _ => {
            // Posted u32 writes to the reader-writable registers.
            let reg = u64::from(c.reg);
            if msg.len() >= simimu::SPI_CMD_LEN + 4
                && (reg == simimu::REG_CONFIG || reg == REG_FIFO_RD)
            {
                let b = &msg[simimu::SPI_CMD_LEN..simimu::SPI_CMD_LEN + 4];
                Regs::store_u32(map, reg, u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            }
            4
        }
    }
}

fn sample_loop(cfg: &SimConfig, devices: &[(SharedMap, EventFd)]) -> io::Result<SimReport> {
    let mut report = SimReport::default();
    apply_rt(cfg, &mut report);
    for (i, (regs, _)) in devices.iter().enumerate() {
        let odr = if i == 0 {
            cfg.odr_hz
        } else {
            cfg.accel_hz[i - 1]
        };
        Regs::store_u32(
            regs,
            REG_WHO_AM_I,
            0x4568_6000 | u32::try_from(i).unwrap_or(0),
        );
        Regs::store_u32(regs, REG_ODR_HZ, odr);
    }
    let mut fifos: Vec<Fifo> = devices.iter().map(|_| Fifo::new()).collect();
    // Ticks between accelerometer samples, and a phase per accelerometer so they do not all
    // land on the same tick (as independent sensors would not).
    let divs: Vec<u64> = cfg
        .accel_hz
        .iter()
        .map(|h| u64::from(cfg.odr_hz / h))
        .collect();
    let period = 1_000_000_000 / u64::from(cfg.odr_hz);
    let timer = TimerFd::new(ClockId::Monotonic, false)?;
    let start = clock::monotonic_now_ns() + 1_000_000;
    timer.set_absolute_ns(start, period)?;
    let end = cfg.duration_ns.map(|d| start + d);
    let mut k: u64 = 0;
    loop {
        let n = timer.read_expirations()?;
        if n > 1 {
            report.overruns += n - 1;
            Regs::store_u64(&devices[0].0, REG_OVERRUNS, report.overruns);
        }
        let now = clock::now_ns(ClockId::Monotonic);
        for _ in 0..n {
            let mut ints = [false; 9];
            let o = fifos[0].push(&devices[0].0, sample(0, false, k, now), now);
            ints[0] = o.interrupt;
            for (j, d) in divs.iter().enumerate() {
                if k % d == (j as u64 * 5) % d {
                    let dev = u8::try_from(j + 1).unwrap_or(0);
                    ints[j + 1] = fifos[j + 1]
                        .push(&devices[j + 1].0, sample(dev, true, k, now), now)
                        .interrupt;
                }
            }
            for (i, fire) in ints.iter().enumerate().take(devices.len()) {
                if *fire {
                    devices[i].1.write(1)?;
                }
            }
            k += 1;
        }
        report.ticks = k;
        if end.is_some_and(|e| now >= e) {
            return Ok(report);
        }
    }
}
