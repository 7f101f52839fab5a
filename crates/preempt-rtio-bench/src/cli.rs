//! Command-line flags ([`Args`], a `clap::Args` the `preempt` CLI can flatten as its
//! `rtio-bench` subcommand) → a validated [`Config`]. Every error names its flag.

use std::path::PathBuf;

use preempt_imu_sim::sim::Bus;
use preempt_io::rtio::BackendChoice;
use preempt_io::rtio::sensor::SpiMode;
use preempt_io::rtio::simimu::DEFAULT_BUS_NS_PER_BYTE;

use crate::cell::{Design, extra_label};

/// Long help appended to `--help`.
pub const ABOUT: &str = "Runs the Zephyr RTIO talk's table: ODR {3200,6400} x extra streams {none, 1@100Hz, \
2@100Hz, 1@400Hz, 2@400Hz} x designs, on the simulated SPI bus (default), the SPI bus with one \
transaction per sample (spi-txn) and/or the memfd register window. --sweep instead raises --work-us \
at 6400 Hz + 2@400Hz until each design first misses an event and reports the break points. Every \
design reads every sample on its data-ready interrupt (the same trigger for all). thread: one \
SCHED_FIFO thread per device, blocking transfers (on spi the three commands queued, then the \
three responses: --thread-spi). pipelined: per device a blocking reader thread plus one \
processing thread one priority below. rtio: one thread, one io_uring context (DEFER_TASKRUN, \
registered files, RECV+POLL_FIRST, no completion eventfd), one linked chain per device and \
interrupt, the next chain armed before the frames are processed and task work reaped between \
frames (IORING_SQ_TASKRUN); rtio-serial: the same, re-armed after processing; rtio-coalesced: \
every device's interrupt read unlinked and all reaped with one wait (at most one period of the \
slowest device), then the transfers: cross-device coalescing, which fits devices of similar rates \
(--streams extras reads only the extra accelerometers). The memfd register \
file is opened O_NONBLOCK for RTIO, so its reads run inline in the kernel chain. Each cell's \
JSON records the RTIO backend's features. \
Exit codes: 0 ok, 1 runtime error, 2 bad flags.";

/// Register bus of the simulated devices (`--bus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BusArg {
    /// Asynchronous command/response SPI bus served by the simulator's bus thread, one
    /// message pair per transfer (status, count, FIFO: three per sample).
    Spi,
    /// The same bus, the three reads as one bus transaction (one command, one response).
    #[value(name = "spi-txn")]
    SpiTxn,
    /// Synchronous memfd register window (pread).
    Memfd,
}

/// A bus and how transfers are grouped on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// The simulator's bus.
    pub bus: Bus,
    /// SPI: one transaction per sample instead of one message pair per transfer.
    pub transaction: bool,
}

impl Link {
    /// Label in the table and JSON: "spi", "spi-txn" or "memfd".
    pub fn label(self) -> &'static str {
        match (self.bus, self.transaction) {
            (Bus::Spi, false) => "spi",
            (Bus::Spi, true) => "spi-txn",
            (Bus::Memfd, _) => "memfd",
        }
    }
}

impl From<BusArg> for Link {
    fn from(b: BusArg) -> Link {
        match b {
            BusArg::Spi => Link {
                bus: Bus::Spi,
                transaction: false,
            },
            BusArg::SpiTxn => Link {
                bus: Bus::Spi,
                transaction: true,
            },
            BusArg::Memfd => Link {
                bus: Bus::Memfd,
                transaction: false,
            },
        }
    }
}

/// RTIO backend (`--backend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendArg {
    /// io_uring where it works, else epoll.
    Auto,
    /// io_uring or fail.
    #[value(name = "io_uring")]
    IoUring,
    /// epoll + syscalls.
    Epoll,
}

/// `rtio-bench` flags.
#[derive(Clone, Debug, clap::Args)]
pub struct Args {
    /// Measurement window per cell, seconds (0.2..=600).
    #[arg(long, default_value_t = 2.5)]
    pub duration: f64,
    /// Per-sample compute load, µs (busy loop after decoding each frame).
    #[arg(long, default_value_t = 0)]
    pub work_us: u32,
    /// Find each design's break point at 6400 Hz + 2@400Hz instead of running the table.
    #[arg(long)]
    pub sweep: bool,
    /// IMU output data rates to run (3200, 6400).
    #[arg(long, value_delimiter = ',', default_values_t = [3200_u32, 6400])]
    pub odr: Vec<u32>,
    /// Register bus(es) to run, comma-separated: spi (asynchronous, a message pair per
    /// transfer), spi-txn (one bus transaction per sample), memfd (synchronous pread).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [BusArg::Spi])]
    pub bus: Vec<BusArg>,
    /// SPI bus time per byte, ns (800 = 10 MHz SPI clock).
    #[arg(long, default_value_t = DEFAULT_BUS_NS_PER_BYTE)]
    pub bus_ns_per_byte: u32,
    /// Write the results as JSON (schema in the report module) to this file; rewritten after
    /// every finished cell with complete: false until the run ends (Ctrl-C keeps the cells that
    /// finished, interrupted: true).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// CPU of the consumer (both designs); default: CPU 1 (or 0 on a 1-CPU machine).
    #[arg(long)]
    pub consumer_cpu: Option<usize>,
    /// CPU of the simulator (sampling and bus threads).
    #[arg(long, default_value_t = 0)]
    pub sim_cpu: usize,
    /// Consumer SCHED_FIFO priority, 1-98 (the simulator's sampler runs one above).
    #[arg(long, default_value_t = 80)]
    pub priority: u8,
    /// RTIO backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Path of the imu-sim binary (default: next to this executable).
    #[arg(long)]
    pub imu_sim: Option<PathBuf>,
    /// Table rows to run, comma-separated extra-stream labels: none, 1@100Hz, 2@100Hz,
    /// 1@400Hz, 2@400Hz (the "Hz" may be left out). Default: all five (the talk's rows).
    #[arg(long, value_delimiter = ',')]
    pub extra: Vec<String>,
    /// Which devices the consumer reads: `all` (the IMU and the extra accelerometers, the
    /// talk's table) or `extras` (only the extra accelerometers; the IMU's interrupts are
    /// off): the case where cross-device coalescing fits (`--design rtio-coalesced`).
    #[arg(long, value_enum, default_value_t = StreamsArg::All)]
    pub streams: StreamsArg,
    /// Designs to run, comma-separated: thread, pipelined, rtio, rtio-serial,
    /// rtio-coalesced. Default:
    /// thread, rtio, the talk's two (e.g. `--design thread,pipelined,rtio` for the strongest
    /// thread baseline beside them, `--design rtio` to profile one design alone).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub design: Vec<DesignArg>,
    /// How the RTIO design uses the `spi` bus: `queued` (default) queues the three read
    /// commands of an interrupt to the bus at once and then reads the three responses, as an
    /// RTIO submission queue in front of a bus driver does; `sequential` sends each command
    /// only after the previous response (`--thread-spi sequential`'s bus usage).
    #[arg(long, value_enum, default_value_t = SpiModeArg::Queued)]
    pub rtio_spi: SpiModeArg,
    /// How the thread designs (thread, pipelined) use the `spi` bus: `queued` (default)
    /// writes the three read commands, then reads the three responses — the same bus usage
    /// as the RTIO chain, so the comparison is fair; `sequential` does one blocking
    /// (command, response) transfer at a time (one bus wake-up per transfer).
    #[arg(long, value_enum, default_value_t = SpiModeArg::Queued)]
    pub thread_spi: SpiModeArg,
}

/// The devices the consumer reads (`--streams`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamsArg {
    /// The IMU and every extra accelerometer.
    All,
    /// Only the extra accelerometers.
    Extras,
}

/// Use of the SPI bus (`--rtio-spi`, `--thread-spi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SpiModeArg {
    /// All three commands queued, then the three responses.
    Queued,
    /// One command/response pair at a time.
    Sequential,
}

/// A consumer design (`--design`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DesignArg {
    /// One blocking SCHED_FIFO thread per device, reading and processing.
    Thread,
    /// Per device a blocking reader thread, plus one processing thread one priority below.
    Pipelined,
    /// One thread driving an RTIO context, overlapped (next chain armed before processing).
    Rtio,
    /// One thread driving an RTIO context, each chain re-armed after processing.
    #[value(name = "rtio-serial")]
    RtioSerial,
    /// One thread driving an RTIO context; every device's interrupt read unlinked, all reaped
    /// with one wait (cross-device coalescing), then the transfers.
    #[value(name = "rtio-coalesced")]
    RtioCoalesced,
}

/// Validated configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Per-cell measurement window, ns.
    pub duration_ns: u64,
    /// Per-sample compute, µs.
    pub work_us: u32,
    /// Sweep mode.
    pub sweep: bool,
    /// IMU ODRs to run.
    pub odrs: Vec<u32>,
    /// Buses to run.
    pub buses: Vec<Link>,
    /// SPI bus time per byte, ns.
    pub bus_ns_per_byte: u32,
    /// JSON output.
    pub json: Option<PathBuf>,
    /// Consumer CPU.
    pub consumer_cpu: usize,
    /// Simulator CPU.
    pub sim_cpu: usize,
    /// Consumer SCHED_FIFO priority.
    pub priority: u8,
    /// RTIO backend.
    pub backend: BackendChoice,
    /// Simulator binary.
    pub imu_sim: PathBuf,
    /// Extra-stream rows to run (rates per row).
    pub extra_rows: Vec<Vec<u32>>,
    /// Designs to run, in table order.
    pub designs: Vec<Design>,
    /// RTIO design's use of the SPI bus.
    pub rtio_spi: SpiMode,
    /// Thread designs' use of the SPI bus.
    pub thread_spi: SpiMode,
    /// Only the extra accelerometers are read (`--streams extras`).
    pub extras_only: bool,
}

/// The talk's extra-stream rows.
pub(crate) const EXTRA_ROWS: [&[u32]; 5] = [&[], &[100], &[100, 100], &[400], &[400, 400]];

fn parse_extra(label: &str) -> Result<Vec<u32>, String> {
    let l = label.trim().trim_end_matches("Hz").trim_end_matches("hz");
    EXTRA_ROWS
        .iter()
        .find(|r| extra_label(r).trim_end_matches("Hz") == l)
        .map(|r| r.to_vec())
        .ok_or_else(|| {
            format!("--extra: '{label}' is not one of none, 1@100Hz, 2@100Hz, 1@400Hz, 2@400Hz")
        })
}

/// Where `imu-sim` is by default: next to this executable (or one level up from `deps/`).
pub(crate) fn default_imu_sim() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    let here = dir.join("imu-sim");
    if here.exists() {
        return here;
    }
    dir.parent().map_or(here.clone(), |p| p.join("imu-sim"))
}

impl Config {
    /// Validates `a`.
    ///
    /// # Errors
    /// A one-line message naming the bad flag and the fix.
    pub fn from_args(a: &Args) -> Result<Config, String> {
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        if !(0.2..=600.0).contains(&a.duration) {
            return Err(format!(
                "--duration: {} s is out of range (0.2..=600)",
                a.duration
            ));
        }
        if a.work_us > 10_000 {
            return Err("--work-us: at most 10000".into());
        }
        if let Some(bad) = a.odr.iter().find(|o| !matches!(o, 3200 | 6400)) {
            return Err(format!("--odr: '{bad}' is not 3200 or 6400"));
        }
        if a.odr.is_empty() || a.bus.is_empty() {
            return Err("--odr/--bus: give at least one value".into());
        }
        if a.bus_ns_per_byte > 100_000 {
            return Err("--bus-ns-per-byte: at most 100000 (a 10 kHz bus)".into());
        }
        if !(1..=98).contains(&a.priority) {
            return Err("--priority: must be 1-98 (the simulator runs one above)".into());
        }
        let consumer_cpu = a.consumer_cpu.unwrap_or(1.min(cpus - 1));
        if consumer_cpu >= cpus || a.sim_cpu >= cpus {
            return Err(format!(
                "--consumer-cpu/--sim-cpu: this machine has CPUs 0-{}",
                cpus - 1
            ));
        }
        if consumer_cpu == a.sim_cpu && cpus > 1 {
            return Err(
                "--consumer-cpu and --sim-cpu must differ (the simulator stands in for hardware)"
                    .into(),
            );
        }
        let imu_sim = a.imu_sim.clone().unwrap_or_else(default_imu_sim);
        if !imu_sim.exists() {
            return Err(format!(
                "--imu-sim: {} not found; build it with `cargo build --release -p preempt-imu-sim` or pass --imu-sim PATH",
                imu_sim.display()
            ));
        }
        let mut buses: Vec<Link> = Vec::new();
        for b in &a.bus {
            if !buses.contains(&Link::from(*b)) {
                buses.push(Link::from(*b));
            }
        }
        let extra_rows = if a.extra.is_empty() {
            EXTRA_ROWS.iter().map(|r| r.to_vec()).collect()
        } else {
            let mut rows: Vec<Vec<u32>> = Vec::new();
            for l in &a.extra {
                let r = parse_extra(l)?;
                if !rows.contains(&r) {
                    rows.push(r);
                }
            }
            rows
        };
        let mut designs = Vec::new();
        for d in if a.design.is_empty() {
            &[DesignArg::Thread, DesignArg::Rtio][..]
        } else {
            &a.design[..]
        } {
            let d = match d {
                DesignArg::Thread => Design::ThreadBased,
                DesignArg::Pipelined => Design::Pipelined,
                DesignArg::Rtio => Design::RtioBased,
                DesignArg::RtioSerial => Design::RtioSerial,
                DesignArg::RtioCoalesced => Design::RtioCoalesced,
            };
            if !designs.contains(&d) {
                designs.push(d);
            }
        }
        let mode = |m: SpiModeArg| match m {
            SpiModeArg::Queued => SpiMode::Queued,
            SpiModeArg::Sequential => SpiMode::Sequential,
        };
        let extras_only = a.streams == StreamsArg::Extras;
        if extras_only && extra_rows.iter().any(Vec::is_empty) {
            return Err(
                "--streams extras reads only the extra accelerometers: give --extra rows \
                 with at least one (e.g. --extra 2@400Hz)"
                    .into(),
            );
        }
        Ok(Config {
            extras_only,
            rtio_spi: mode(a.rtio_spi),
            thread_spi: mode(a.thread_spi),
            extra_rows,
            designs,
            duration_ns: (a.duration * 1e9) as u64,
            work_us: a.work_us,
            sweep: a.sweep,
            odrs: a.odr.clone(),
            buses,
            bus_ns_per_byte: a.bus_ns_per_byte,
            json: a.json.clone(),
            consumer_cpu,
            sim_cpu: a.sim_cpu,
            priority: a.priority,
            backend: match a.backend {
                BackendArg::Auto => BackendChoice::Auto,
                BackendArg::IoUring => BackendChoice::IoUring,
                BackendArg::Epoll => BackendChoice::Epoll,
            },
            imu_sim,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn p(a: &[&str]) -> Result<Config, String> {
        let mut v = vec!["rtio-bench", "--imu-sim", "/bin/true"];
        v.extend_from_slice(a);
        let cli = Cli::try_parse_from(v).map_err(|e| e.to_string())?;
        Config::from_args(&cli.args)
    }

    #[test]
    fn bad_flags_name_the_flag() {
        assert!(p(&["--duration", "x"]).unwrap_err().contains("--duration"));
        assert!(
            p(&["--duration", "0.01"])
                .unwrap_err()
                .starts_with("--duration")
        );
        assert!(p(&["--work-us", "-3"]).unwrap_err().contains("-3"));
        assert!(
            p(&["--work-us", "20000"])
                .unwrap_err()
                .starts_with("--work-us")
        );
        assert!(p(&["--odr", "5000"]).unwrap_err().starts_with("--odr"));
        assert!(
            p(&["--backend", "kqueue"])
                .unwrap_err()
                .contains("--backend")
        );
        assert!(p(&["--bus", "i2c"]).unwrap_err().contains("--bus"));
        assert!(
            p(&["--priority", "99"])
                .unwrap_err()
                .starts_with("--priority")
        );
        assert!(p(&["--frobnicate"]).unwrap_err().contains("--frobnicate"));
        let cli = Cli::try_parse_from(["rtio-bench", "--imu-sim", "/nonexistent"]).unwrap();
        assert!(
            Config::from_args(&cli.args)
                .unwrap_err()
                .starts_with("--imu-sim")
        );
        let c = p(&[
            "--duration",
            "1.5",
            "--work-us",
            "20",
            "--odr",
            "6400",
            "--sweep",
            "--bus",
            "memfd,spi,memfd,spi-txn",
        ])
        .unwrap();
        assert_eq!(
            (c.duration_ns, c.work_us, c.odrs.clone(), c.sweep),
            (1_500_000_000, 20, vec![6400], true)
        );
        let labels: Vec<&str> = c.buses.iter().map(|l| l.label()).collect();
        assert_eq!(labels, vec!["memfd", "spi", "spi-txn"]);
        let d = p(&[]).unwrap();
        assert_eq!((d.buses[0].label(), d.bus_ns_per_byte), ("spi", 800));
        assert_eq!(d.extra_rows.len(), 5);
        assert_eq!(d.designs, vec![Design::ThreadBased, Design::RtioBased]);
        assert_eq!(
            (d.rtio_spi, d.thread_spi),
            (SpiMode::Queued, SpiMode::Queued)
        );
    }

    #[test]
    fn row_design_and_rtio_spi_selection() {
        let c = p(&[
            "--extra",
            "2@400,none,2@400Hz",
            "--design",
            "rtio",
            "--rtio-spi",
            "sequential",
            "--thread-spi",
            "sequential",
        ])
        .unwrap();
        assert_eq!(c.thread_spi, SpiMode::Sequential);
        assert_eq!(c.extra_rows, vec![vec![400, 400], vec![]]);
        assert_eq!(c.designs, vec![Design::RtioBased]);
        assert_eq!(c.rtio_spi, SpiMode::Sequential);
        assert!(p(&["--extra", "3@100"]).unwrap_err().starts_with("--extra"));
        assert!(p(&["--design", "fibers"]).unwrap_err().contains("--design"));
        assert!(
            p(&["--rtio-spi", "parallel"])
                .unwrap_err()
                .contains("--rtio-spi")
        );
    }
}
