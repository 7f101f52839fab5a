//! `rtio-bench`: the Zephyr RTIO talk's benchmark table (seed `000_*`) on Linux.
//!
//! Each *cell* runs the `imu-sim` simulator (pinned to one CPU, SCHED_FIFO) with an IMU at
//! 3200 or 6400 Hz plus 0-2 extra accelerometers at 100/400 Hz, and a consumer pinned to the
//! other CPU that reads every device's FIFO on each interrupt, decodes the frames and runs
//! `--work-us` of per-sample compute:
//!
//! * **thread** (`thread`): one SCHED_FIFO thread per device, blocked in `read(INT eventfd)`,
//!   then the bus reads — STATUS, the count block, the FIFO; on `spi` the three commands are
//!   queued before the responses are read, as the RTIO chain does (`--thread-spi`) — and
//!   processing;
//! * **pipelined** (`pipelined`): the same readers pass the frames through a queue to one
//!   processing thread one priority below them (reading overlaps processing);
//! * **RTIO** (`rtio`): one thread with an [`Rtio`](preempt_io::rtio::Rtio) context holding one
//!   linked chain per device (read INT → STATUS → count → FIFO, see
//!   `preempt_io::rtio::sensor`); it sleeps in one `io_uring_enter` for all devices, arms the
//!   next chain before it processes a read's frames and reaps the kernel's work between frames
//!   (`processing_loop_overlapped`); `rtio-serial` re-arms after processing instead.
//!
//! Two buses (`--bus`): **spi** (default), the simulator's asynchronous command/response bus
//! where each transfer is a command message and a response message after the bus time
//! (`--bus-ns-per-byte`, 800 ns = 10 MHz) — a blocking reader sleeps in every transfer (seven
//! syscalls and four wake-ups per sample), the RTIO chain hands all six messages to the kernel
//! at once; and **memfd**, a synchronous register window read with `pread` (five syscalls, one
//! wake-up per sample for threads; RTIO runs the preads inline), kept to show that RTIO has
//! nothing to win where a "transfer" is a memory copy; and **spi-txn**, the SPI bus with the
//! three reads sent as one bus transaction (one command, one response) by *both* designs —
//! three syscalls and two wake-ups per sample for a thread, one `io_uring_enter` for RTIO.
//!
//! Per cell it reports the consumer CPU's load from `/proc/stat` (which, like Zephyr's
//! `cpu_load`, includes interrupt time), the process CPU time, latency from the sample's
//! store (= interrupt) to processed, the jitter of the IMU's processing period against
//! 1/ODR, missed events (sequence gaps; FIFO-full drops separately) and context switches per
//! sample. `--sweep` raises `--work-us` until each design first misses an event.
//!
//! Threats to validity are in the output: other load on the machine (two shared vCPUs), the
//! simulator's own overruns (`sim_overruns`), and whether SCHED_FIFO was granted.
//!
//! The engine takes a validated [`Config`]; clap stays at the edges: [`cli::Args`] are the
//! flags, which the `rtio-bench` binary and the `preempt rtio-bench` subcommand parse and turn
//! into a `Config` with [`Config::from_args`] (every error names its flag).
//!
//! [`run_with`] takes a [`RunControl`]: Ctrl-C finishes the running cell, then the run stops
//! and returns every finished cell, marked interrupted; a callback sees the document after
//! every cell (see [`control`]).
//!
//! ```no_run
//! use clap::Parser;
//! use preempt_rtio_bench::{Args, Config};
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     args: Args,
//! }
//! let cli = Cli::parse_from(["rtio-bench", "--bus", "memfd", "--odr", "3200"]);
//! let cfg = Config::from_args(&cli.args).expect("valid flags");
//! let doc = preempt_rtio_bench::run(&cfg, std::env::args().collect())?;
//! println!("{} cells", doc.cells.len());
//! # Ok::<(), std::io::Error>(())
//! ```

pub mod cell;
pub mod cli;
pub mod control;
pub mod report;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use preempt_io::rtio::io_uring_disabled_sysctl;

use cell::{CellResult, CellSpec, Design};
pub use cli::{Args, Config};
pub use control::RunControl;
use report::{BreakPoint, Document, SysInfo, Trial};

fn spec(
    cfg: &Config,
    bus: cli::Link,
    odr: u32,
    extra: &[u32],
    design: Design,
    work_us: u32,
) -> CellSpec {
    CellSpec {
        odr_hz: odr,
        extra_hz: extra.to_vec(),
        design,
        duration_ns: cfg.duration_ns,
        work_us,
        consumer_cpu: cfg.consumer_cpu,
        sim_cpu: cfg.sim_cpu,
        priority: cfg.priority,
        backend: cfg.backend,
        bus: bus.bus,
        transaction: bus.transaction,
        bus_ns_per_byte: cfg.bus_ns_per_byte,
        rtio_spi: cfg.rtio_spi,
        thread_spi: cfg.thread_spi,
        extras_only: cfg.extras_only,
    }
}

/// Why a sweep ended early.
enum SweepEnd {
    /// The break point was found.
    Done(BreakPoint),
    /// The stop flag was set after `trials` trials, before the break point was known.
    Stopped { trials: usize },
}

fn sweep(
    cfg: &Config,
    bus: cli::Link,
    design: Design,
    control: &RunControl<'_>,
) -> std::io::Result<SweepEnd> {
    let (odr, extra) = (6400, [400_u32, 400]);
    let mut trials = Vec::new();
    // `None`: stopped before the trial ran.
    let mut try_w = |w: u32| -> std::io::Result<Option<bool>> {
        if control.stopped() {
            return Ok(None);
        }
        let r = cell::run_cell(&cfg.imu_sim, &spec(cfg, bus, odr, &extra, design, w))?;
        let missed = r.missed_total();
        eprintln!(
            "  sweep {:<5} {:<6} work {:>4} us: missed {missed}, cpu {:.1}%",
            bus.label(),
            design.label(),
            w,
            r.consumer_cpu_load_pct
        );
        trials.push(Trial {
            work_us: w,
            missed_events: missed,
        });
        if missed == 0 {
            return Ok(Some(true));
        }
        if control.stopped() {
            return Ok(None);
        }
        // One retry: on a shared machine a single stall of the (non-isolated) consumer CPU
        // longer than the FIFO (16 ms at 6400 Hz) loses samples at any workload. A workload
        // counts as missing events only if it misses in two runs in a row.
        let r = cell::run_cell(&cfg.imu_sim, &spec(cfg, bus, odr, &extra, design, w))?;
        let again = r.missed_total();
        eprintln!(
            "  sweep {:<5} {:<6} work {:>4} us: retry missed {again}",
            bus.label(),
            design.label(),
            w
        );
        trials.push(Trial {
            work_us: w,
            missed_events: again,
        });
        Ok(Some(again == 0))
    };
    // Coarse steps of 16 us, then bisect to 1 us.
    let (mut ok, mut bad): (Option<u32>, Option<u32>) = (None, None);
    let mut w = 0;
    let mut stopped = false;
    while w <= 400 {
        match try_w(w)? {
            Some(true) => {
                ok = Some(w);
                w += 16;
            }
            Some(false) => {
                bad = Some(w);
                break;
            }
            None => {
                stopped = true;
                break;
            }
        }
    }
    if let (false, Some(mut lo), Some(mut hi)) = (stopped, ok, bad) {
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            match try_w(mid)? {
                Some(true) => lo = mid,
                Some(false) => hi = mid,
                None => {
                    stopped = true;
                    break;
                }
            }
        }
        ok = Some(lo);
        bad = Some(hi);
    }
    if stopped {
        return Ok(SweepEnd::Stopped {
            trials: trials.len(),
        });
    }
    Ok(SweepEnd::Done(BreakPoint {
        design: design.label().into(),
        bus: bus.label().into(),
        odr_hz: odr,
        extra_streams: cell::extra_label(&extra),
        max_sustained_work_us: ok,
        first_missing_work_us: bad,
        trials,
    }))
}

/// Runs the table (or the sweep) as `cfg` says: progress on stderr, the table on stdout, the
/// JSON document to `cfg.json` if set; returns the document. `argv` is recorded in it.
///
/// The same as [`run_with`] with a control that never stops and ignores the cells.
///
/// # Errors
/// A cell that fails (the simulator, the bus, the consumer), or the `--json` file.
pub fn run(cfg: &Config, argv: Vec<String>) -> io::Result<Document> {
    let never = AtomicBool::new(false);
    let mut ignore = |_: &Document| {};
    run_with(cfg, argv, &RunControl::new(&never, &mut ignore))
}

/// What a run has so far.
struct Progress {
    cells: Vec<CellResult>,
    breaks: Vec<BreakPoint>,
    /// Where the run stopped, when it was interrupted.
    stopped_at: Option<String>,
}

fn document(argv: &[String], p: &Progress, complete: bool) -> std::io::Result<Document> {
    let un = preempt_io::sys::kernel::uname()?;
    let mut notes = vec![
        "latency = sample stored by the simulator (INT raised) -> processed by the consumer".into(),
        "figures are noisy on a shared 2-vCPU VM: other processes compete for both CPUs".into(),
        "spi bus: each transfer is a command message + a response message served by the simulator's bus thread after (1 + bytes) x bus_ns_per_byte".into(),
        format!("load average at the end of the run: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()),
    ];
    if let Some(at) = &p.stopped_at {
        notes.push(format!("interrupted (Ctrl-C): {at}"));
    }
    Ok(Document {
        schema_version: report::SCHEMA_VERSION,
        tool: "rtio-bench",
        sysinfo: SysInfo {
            uname: format!(
                "{} {} {} {}",
                un.sysname, un.release, un.version, un.machine
            ),
            kernel_realtime: std::fs::read_to_string("/sys/kernel/realtime")
                .ok()
                .map(|s| s.trim().to_owned()),
            io_uring_disabled: io_uring_disabled_sysctl(),
            argv: argv.to_vec(),
            cpus: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        },
        complete,
        interrupted: p.stopped_at.is_some(),
        cells: p.cells.clone(),
        sweep: p.breaks.clone(),
        notes,
    })
}

/// Writes `doc` to `path` through a temporary file in the same directory and a rename, so a
/// reader never sees a half-written file.
fn write_json(path: &Path, doc: &Document) -> std::io::Result<()> {
    let named = |e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("--json {}: {e}", path.display()))
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    let mut f = std::fs::File::create(&tmp).map_err(named)?;
    serde_json::to_writer_pretty(&mut f, doc).map_err(std::io::Error::other)?;
    writeln!(f).map_err(named)?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(named)
}

/// After a finished cell or break point: the caller's callback, and the `--json` file.
fn checkpoint(
    cfg: &Config,
    argv: &[String],
    p: &Progress,
    control: &RunControl<'_>,
) -> std::io::Result<()> {
    let doc = document(argv, p, false)?;
    if let Some(path) = &cfg.json {
        write_json(path, &doc)?;
    }
    control.cell_done(&doc);
    Ok(())
}

/// [`run`] under `control`: the stop flag is read before each cell and between sweep trials
/// (the running cell is finished, see [`control`]), and `control`'s callback gets the
/// document so far (`complete: false`) after every finished cell and every finished sweep
/// break point. With `cfg.json` the file is rewritten (atomically) at the same moments.
///
/// A stop is not an error: it returns `Ok` with the cells and break points that finished,
/// [`Document::interrupted`] set and a note saying where the run stopped (an unfinished
/// sweep break point is not recorded: its bounds are not known yet).
///
/// # Errors
/// As [`run`].
pub fn run_with(cfg: &Config, argv: Vec<String>, control: &RunControl<'_>) -> io::Result<Document> {
    let mut p = Progress {
        cells: Vec::new(),
        breaks: Vec::new(),
        stopped_at: None,
    };
    if cfg.sweep {
        'buses: for &bus in &cfg.buses {
            for &d in &cfg.designs {
                let b = match sweep(cfg, bus, d, control)? {
                    SweepEnd::Done(b) => b,
                    SweepEnd::Stopped { trials } => {
                        p.stopped_at = Some(format!(
                            "during the {} {} sweep after {trials} trials; that break point is not recorded",
                            bus.label(),
                            d.label()
                        ));
                        break 'buses;
                    }
                };
                println!(
                    "break point {:<5} {:<6} at {} Hz + {}: sustains {:?} us/sample, first misses at {:?} us",
                    b.bus,
                    b.design,
                    b.odr_hz,
                    b.extra_streams,
                    b.max_sustained_work_us,
                    b.first_missing_work_us
                );
                p.breaks.push(b);
                checkpoint(cfg, &argv, &p, control)?;
            }
        }
    } else {
        'cells: for &bus in &cfg.buses {
            for &odr in &cfg.odrs {
                for extra in &cfg.extra_rows {
                    for &d in &cfg.designs {
                        if control.stopped() {
                            p.stopped_at = Some(format!(
                                "after {} cells, before {} {odr} Hz {} {}",
                                p.cells.len(),
                                bus.label(),
                                cell::extra_label(extra),
                                d.label()
                            ));
                            break 'cells;
                        }
                        let r = cell::run_cell(
                            &cfg.imu_sim,
                            &spec(cfg, bus, odr, extra, d, cfg.work_us),
                        )?;
                        if !r.consumer_sched_fifo {
                            eprintln!(
                                "rtio-bench: warning: consumer did not get SCHED_FIFO (run as root or with CAP_SYS_NICE)"
                            );
                        }
                        eprintln!(
                            "  {:<5} {odr} Hz {:<8} {:<6}: cpu {:.1}% proc {:.1}% ({:.1} us/sample) missed {} overruns {}",
                            r.bus,
                            r.extra_streams,
                            r.design,
                            r.consumer_cpu_load_pct,
                            r.process_cpu_pct,
                            r.process_cpu_per_sample_ns / 1000.0,
                            r.missed_events,
                            r.sim_overruns
                        );
                        p.cells.push(r);
                        checkpoint(cfg, &argv, &p, control)?;
                    }
                }
            }
        }
        print!("{}", report::table(&p.cells));
        if let Some(b) = p.cells.iter().find_map(|c| c.rtio_backend.clone()) {
            println!("RTIO backend: {b}");
        }
    }
    let doc = document(&argv, &p, true)?;
    if let Some(path) = &cfg.json {
        write_json(path, &doc)?;
    }
    Ok(doc)
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

    /// A configuration with a simulator that would fail loudly if a cell ever started it
    /// (`/bin/false` exits at once, so a cell would find no samples or a dead bus).
    fn config(extra: &[&str]) -> Config {
        let mut v = vec!["rtio-bench", "--imu-sim", "/bin/false"];
        v.extend_from_slice(extra);
        Config::from_args(&Cli::try_parse_from(v).unwrap().args).unwrap()
    }

    #[test]
    fn a_stop_before_the_first_cell_returns_an_empty_interrupted_document() {
        let json =
            std::env::temp_dir().join(format!("rtio-bench-stop-test-{}.json", std::process::id()));
        let json_arg = json.to_str().unwrap().to_owned();
        let stop = AtomicBool::new(true);
        let mut calls = 0;
        let mut on_cell = |_: &Document| calls += 1;
        let doc = run_with(
            &config(&["--bus", "memfd", "--odr", "3200", "--json", &json_arg]),
            vec!["rtio-bench".into()],
            &RunControl::new(&stop, &mut on_cell),
        )
        .unwrap();
        assert_eq!(calls, 0, "no cell finished, so no callback");
        assert!(doc.cells.is_empty() && doc.sweep.is_empty());
        assert!(doc.interrupted && doc.complete);
        assert!(
            doc.notes
                .iter()
                .any(|n| n.starts_with("interrupted (Ctrl-C): after 0 cells, before memfd 3200 Hz")),
            "{:?}",
            doc.notes
        );
        // The --json file says the same.
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        std::fs::remove_file(&json).unwrap();
        assert_eq!(written["interrupted"], serde_json::Value::Bool(true));
        assert_eq!(written["cells"].as_array().map(Vec::len), Some(0));
        assert_eq!(written["schema_version"], report::SCHEMA_VERSION);
    }

    #[test]
    fn a_stop_before_a_sweep_records_no_break_point() {
        let stop = AtomicBool::new(true);
        let mut on_cell = |_: &Document| panic!("no break point finished");
        let doc = run_with(
            &config(&["--sweep", "--bus", "spi-txn"]),
            vec![],
            &RunControl::new(&stop, &mut on_cell),
        )
        .unwrap();
        assert!(doc.interrupted && doc.sweep.is_empty());
        assert!(
            doc.notes
                .iter()
                .any(|n| n.contains("during the spi-txn thread sweep after 0 trials")),
            "{:?}",
            doc.notes
        );
    }
}
