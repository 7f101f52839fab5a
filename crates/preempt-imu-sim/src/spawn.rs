//! The reader's side: create the devices (memfd register files + eventfd INT lines, plus an
//! SPI bus socket pair per device with [`Bus::Spi`]), spawn
//! `imu-sim` with them inherited at fixed descriptor numbers, and kill it on drop. The child
//! also has SIGKILL as its parent-death signal, so it dies with the reader even if the reader
//! is killed (see `preempt_io::sys::process`).
//!
//! The child runs in a process group of its own: a terminal's Ctrl-C (sent to the whole
//! foreground process group) reaches the reader only, which can then finish what it is
//! measuring and stop the simulator itself ([`SimProcess::stop`], or on drop), instead of the
//! simulated sensor dying in the middle of a measurement. It still cannot outlive the reader
//! (the parent-death signal does not depend on the process group).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::Command;

use preempt_io::rtio::simimu::REGFILE_LEN;
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::{MemFd, SharedMap};
use preempt_io::sys::{process, socket};

use crate::sim::{Bus, SimConfig};

/// One simulated device as the reader holds it.
#[derive(Debug)]
pub struct SimDevice {
    /// Register file (`pread`/`pwrite` it, or register a duplicate with RTIO).
    pub regs: MemFd,
    /// INT line.
    pub int: EventFd,
    /// A mapping to read counters directly (for the benchmark's bookkeeping, not the data path).
    pub map: SharedMap,
    /// The reader's end of the SPI bus socket ([`Bus::Spi`] only).
    pub bus: Option<OwnedFd>,
    /// The simulator's end, handed to the simulator (kept open by the reader so an in-process
    /// simulator can borrow it).
    pub bus_sim_end: Option<OwnedFd>,
}

impl SimDevice {
    /// Creates a device (register file + INT line).
    ///
    /// # Errors
    /// memfd/eventfd/mmap errors.
    pub fn new(name: &str) -> io::Result<SimDevice> {
        SimDevice::with_bus(name, Bus::Memfd)
    }

    /// Creates a device reachable over `bus` (an SPI device also gets its socket pair).
    ///
    /// # Errors
    /// memfd/eventfd/mmap/socketpair errors.
    pub fn with_bus(name: &str, bus: Bus) -> io::Result<SimDevice> {
        let regs = MemFd::new(name, REGFILE_LEN)?;
        let map = SharedMap::new(regs.as_fd(), REGFILE_LEN)?;
        let (bus, bus_sim_end) = match bus {
            Bus::Memfd => (None, None),
            Bus::Spi => {
                let (a, b) = socket::seqpacket_pair()?;
                (Some(a), Some(b))
            }
        };
        Ok(SimDevice {
            regs,
            int: EventFd::new(0, false)?,
            map,
            bus,
            bus_sim_end,
        })
    }

    /// Duplicates of (SPI bus socket, INT line) for handing to an RTIO context.
    ///
    /// # Errors
    /// `InvalidInput` on a memfd-bus device; `dup` errors.
    pub fn dup_spi_fds(&self) -> io::Result<(OwnedFd, OwnedFd)> {
        let bus = self.bus.as_ref().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "device has no SPI bus (simulator started with --bus memfd)",
            )
        })?;
        Ok((bus.try_clone()?, self.int.as_fd().try_clone_to_owned()?))
    }

    /// Duplicates of (register file, INT line) for handing to an RTIO context.
    ///
    /// # Errors
    /// `dup` errors.
    pub fn dup_fds(&self) -> io::Result<(OwnedFd, OwnedFd)> {
        Ok((
            self.regs.as_fd().try_clone_to_owned()?,
            self.int.as_fd().try_clone_to_owned()?,
        ))
    }
}

/// A running `imu-sim` child and its devices.
#[derive(Debug)]
pub struct SimProcess {
    child: process::SimChild,
    /// Device 0 is the IMU, then the accelerometers.
    pub devices: Vec<SimDevice>,
}

impl SimProcess {
    /// Spawns `exe` (the `imu-sim` binary) simulating `cfg`.
    ///
    /// # Errors
    /// Invalid config (`InvalidInput`), descriptor creation, or spawn errors (`NotFound` when
    /// `exe` does not exist: build it with `cargo build -p preempt-imu-sim`).
    pub fn spawn(exe: &Path, cfg: &SimConfig) -> io::Result<SimProcess> {
        cfg.validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let devices = (0..cfg.devices())
            .map(|i| SimDevice::with_bus(&format!("imu-sim-{i}"), cfg.bus))
            .collect::<io::Result<Vec<_>>>()?;
        let mut pass: Vec<(BorrowedFd<'_>, RawFd)> = Vec::new();
        let mut fd_list = Vec::new();
        let mut next: RawFd = process::FIRST_PASSED_FD;
        for d in &devices {
            pass.push((d.regs.as_fd(), next));
            pass.push((d.int.as_fd(), next + 1));
            fd_list.push(format!("{},{}", next, next + 1));
            next += 2;
            if let Some(s) = &d.bus_sim_end {
                pass.push((s.as_fd(), next));
                fd_list.push(next.to_string());
                next += 1;
            }
        }
        let mut cmd = Command::new(exe);
        cmd.arg("--bus")
            .arg(cfg.bus.name())
            .arg("--bus-ns-per-byte")
            .arg(cfg.bus_ns_per_byte.to_string())
            .arg("--odr")
            .arg(cfg.odr_hz.to_string())
            .arg("--fds")
            .arg(fd_list.join(","));
        if !cfg.accel_hz.is_empty() {
            let a: Vec<String> = cfg.accel_hz.iter().map(u32::to_string).collect();
            cmd.arg("--accel").arg(a.join(","));
        }
        if let Some(c) = cfg.cpu {
            cmd.arg("--cpu").arg(c.to_string());
        }
        if let Some(p) = cfg.fifo_priority {
            cmd.arg("--priority").arg(p.to_string());
        }
        let child = process::SimChild::spawn(
            &mut cmd,
            &pass,
            "the simulator",
            "build it with `cargo build -p preempt-imu-sim`",
        )?;
        drop(pass);
        let mut devices = devices;
        for d in &mut devices {
            // The child has its copy; closing ours lets the reader see EOF if the child dies.
            d.bus_sim_end = None;
        }
        Ok(SimProcess { child, devices })
    }

    /// Child pid.
    pub fn pid(&self) -> Option<u32> {
        self.child.pid()
    }

    /// Kills the simulator and reaps it (dropping the `SimProcess` does it too).
    ///
    /// # Errors
    /// `kill`/`wait` errors other than "already exited".
    pub fn stop(&mut self) -> io::Result<()> {
        self.child.stop()
    }
}
