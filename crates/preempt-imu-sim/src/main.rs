//! `imu-sim`: runs the simulated IMU (see the library docs).
//!
//! ```text
//! imu-sim --odr 3200|6400 [--accel 100,400] [--cpu N] [--priority P] [--duration S]
//!         [--bus memfd|spi] [--bus-ns-per-byte NS] [--fds R0,I0[,S0],R1,I1[,S1],...]
//! ```
//!
//! `--bus spi` (the default) serves each device's registers over an SPI bus socket (`S`),
//! charging `--bus-ns-per-byte` (default 800 ns: 10 MHz SPI) per byte moved; `--bus memfd`
//! leaves register access to the readers' `pread`s.
//!
//! With `--fds` the register files, INT lines (and bus sockets) are inherited descriptors (how
//! `SimProcess::spawn` starts it); without, it creates its own and prints the register
//! counters at the end (a smoke test of the simulator alone). Exit codes: 0 ok, 1 runtime
//! error, 2 bad arguments.

use std::os::fd::AsFd;
use std::process::ExitCode;

use preempt_imu_sim::fifo::Regs;
use preempt_imu_sim::sim::{self, Bus, SimConfig};
use preempt_imu_sim::spawn::SimDevice;
use preempt_io::rtio::simimu::{REG_DROPPED, REG_FIFO_WR, REG_SAMPLES, REGFILE_LEN};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::{MemFd, SharedMap};
use preempt_io::sys::process;

struct Args {
    cfg: SimConfig,
    fds: Option<Vec<i32>>,
}

fn value<'a>(flag: &str, it: &mut impl Iterator<Item = &'a String>) -> Result<&'a String, String> {
    it.next().ok_or_else(|| format!("{flag}: missing value"))
}

const USAGE: &str = "usage: imu-sim --odr 3200|6400 [--accel 100,400] [--cpu N] [--priority P] [--duration S] [--bus memfd|spi] [--bus-ns-per-byte NS] [--fds R0,I0[,S0],...]";

/// The simulator's arguments; `None` for `--help`.
fn parse(argv: &[String]) -> Result<Option<Args>, String> {
    let mut cfg = SimConfig::default();
    let mut fds = None;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--odr" => {
                cfg.odr_hz = value(a, &mut it)?
                    .parse()
                    .map_err(|_| "--odr: expected 3200 or 6400".to_owned())?
            }
            "--accel" => {
                cfg.accel_hz = value(a, &mut it)?
                    .split(',')
                    .map(|s| {
                        s.parse()
                            .map_err(|_| format!("--accel: '{s}' is not a rate in Hz"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--cpu" => {
                cfg.cpu = Some(
                    value(a, &mut it)?
                        .parse()
                        .map_err(|_| "--cpu: expected a CPU number".to_owned())?,
                )
            }
            "--priority" => {
                let p: u8 = value(a, &mut it)?
                    .parse()
                    .map_err(|_| "--priority: expected 1..=99".to_owned())?;
                if !(1..=99).contains(&p) {
                    return Err("--priority: expected 1..=99".into());
                }
                cfg.fifo_priority = Some(p);
            }
            "--duration" => {
                let s: f64 = value(a, &mut it)?
                    .parse()
                    .map_err(|_| "--duration: expected seconds".to_owned())?;
                if !(s > 0.0 && s < 86_400.0) {
                    return Err("--duration: expected 0 < seconds < 86400".into());
                }
                cfg.duration_ns = Some((s * 1e9) as u64);
            }
            "--bus" => {
                cfg.bus = match value(a, &mut it)?.as_str() {
                    "memfd" => Bus::Memfd,
                    "spi" => Bus::Spi,
                    other => return Err(format!("--bus: '{other}' is not memfd or spi")),
                }
            }
            "--bus-ns-per-byte" => {
                cfg.bus_ns_per_byte = value(a, &mut it)?
                    .parse()
                    .map_err(|_| "--bus-ns-per-byte: expected whole nanoseconds".to_owned())?;
            }
            "--fds" => {
                fds = Some(
                    value(a, &mut it)?
                        .split(',')
                        .map(|s| {
                            s.parse()
                                .map_err(|_| format!("--fds: '{s}' is not a descriptor number"))
                        })
                        .collect::<Result<Vec<i32>, _>>()?,
                );
            }
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown flag '{other}' (see --help)")),
        }
    }
    cfg.validate()?;
    if let Some(f) = &fds {
        let per = if cfg.bus == Bus::Spi { 3 } else { 2 };
        if f.len() != per * cfg.devices() {
            return Err(format!(
                "--fds: expected {} descriptors (register file, INT line{} per device), got {}",
                per * cfg.devices(),
                if per == 3 { " and bus socket" } else { "" },
                f.len()
            ));
        }
    }
    Ok(Some(Args { cfg, fds }))
}

fn run(args: &Args) -> std::io::Result<()> {
    let spi = args.cfg.bus == Bus::Spi;
    let mut bus = Vec::new();
    // Standalone mode keeps the readers' ends open so the bus thread has live sockets.
    let mut reader_ends = Vec::new();
    let devices = match &args.fds {
        Some(raw) => {
            let owned = process::adopt_inherited_fds(raw)?;
            let mut devs = Vec::new();
            let mut it = owned.into_iter();
            while let (Some(r), Some(i)) = (it.next(), it.next()) {
                let regs = MemFd::from_owned(r)?;
                let map = SharedMap::new(regs.as_fd(), REGFILE_LEN.min(regs.len()))?;
                devs.push((map, EventFd::from_owned(i, false)?));
                if spi {
                    bus.push(it.next().ok_or_else(|| {
                        std::io::Error::new(
                            std::io::ErrorKind::InvalidInput,
                            "--fds: missing bus socket",
                        )
                    })?);
                }
            }
            devs
        }
        None => {
            let mut devs = Vec::new();
            for i in 0..args.cfg.devices() {
                let mut d = SimDevice::with_bus(&format!("imu-sim-{i}"), args.cfg.bus)?;
                if let Some(s) = d.bus_sim_end.take() {
                    bus.push(s);
                }
                reader_ends.push(d.bus.take());
                devs.push((SharedMap::new(d.regs.as_fd(), REGFILE_LEN)?, d.int));
            }
            devs
        }
    };
    let report = sim::run(&args.cfg, &devices, &bus)?;
    drop(reader_ends);
    if args.fds.is_none() {
        println!(
            "imu-sim: {} ticks, {} overruns, SCHED_FIFO {:?}, pinned {:?}, bus {} ({} transfers)",
            report.ticks,
            report.overruns,
            report.fifo_granted,
            report.pinned,
            args.cfg.bus.name(),
            report.bus_transfers
        );
        for (i, (m, _)) in devices.iter().enumerate() {
            println!(
                "device {i}: samples {} stored {} dropped {}",
                Regs::load_u64(m, REG_SAMPLES),
                Regs::load_u32(m, REG_FIFO_WR),
                Regs::load_u64(m, REG_DROPPED)
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&argv) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("imu-sim: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("imu-sim: {e}");
            ExitCode::from(1)
        }
    }
}
