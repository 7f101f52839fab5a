//! The simulator loop: one SCHED_FIFO thread, pinned, woken by an absolute periodic timerfd
//! at the IMU's ODR; each tick stores an IMU sample (and, every `ODR / rate` ticks, a sample of
//! each extra accelerometer) and raises the INT eventfds the FIFOs ask for.

use std::io;

use preempt_io::rtio::simimu::{self, Frame, REG_ODR_HZ, REG_OVERRUNS, REG_WHO_AM_I};
use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::SharedMap;
use preempt_io::sys::sched::{self, Policy};
use preempt_io::sys::timerfd::TimerFd;

use crate::fifo::{Fifo, Regs};

/// ODRs the IMU supports (the talk's two rates).
pub const IMU_ODRS: [u32; 2] = [3200, 6400];
/// Rates the extra accelerometers support.
pub const ACCEL_ODRS: [u32; 2] = [100, 400];

/// What to simulate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
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
}

/// Applies pinning and SCHED_FIFO to the calling thread, reporting what was granted.
pub fn apply_rt(cfg: &SimConfig, report: &mut SimReport) {
    if let Some(cpu) = cfg.cpu {
        report.pinned = Some(sched::set_current_thread_affinity(&[cpu]).is_ok());
    }
    if let Some(p) = cfg.fifo_priority {
        report.fifo_granted =
            Some(sched::set_current_thread_policy(&Policy::Fifo { priority: p }).is_ok());
    }
}

fn sample(dev: u8, accel_only: bool, k: u64, now_ns: u64) -> Frame {
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
/// is the IMU, device `i` the accelerometer at `cfg.accel_hz[i - 1]`.
///
/// # Errors
/// Timer errors; INT writes failing.
pub fn run(cfg: &SimConfig, devices: &[(SharedMap, EventFd)]) -> io::Result<SimReport> {
    cfg.validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if devices.len() != cfg.devices() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "one (regs, int) pair per device",
        ));
    }
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
