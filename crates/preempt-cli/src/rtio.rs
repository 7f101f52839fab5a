//! `preempt rtio-bench`: the Zephyr RTIO talk's table (thread-based vs RTIO-based IMU
//! reading against the `imu-sim` simulator) as a subcommand, with its results in preempt's
//! schema (`kind: "rtio_bench"`, [`crate::results::rtio`]) so `preempt report` draws them and
//! `preempt compare` puts two runs side by side.
//!
//! The measurement is `preempt-rtio-bench`'s, unchanged: its flags are flattened in (one
//! definition, so the subcommand and the standalone `rtio-bench` binary accept the same
//! command lines) and its [`run`](preempt_rtio_bench::run) does the work. Two things differ,
//! both about the results file:
//!
//! - `--json FILE` writes a preempt result file (the benchmark's numbers field for field,
//!   plus preempt's `sysinfo`, warnings, `complete`/`interrupted`), not the benchmark's own
//!   document;
//! - the run is split into *groups*, one benchmark call per bus × ODR (per bus with
//!   `--sweep`), in the benchmark's own order, and the file is rewritten after each group
//!   with `complete: false`. Ctrl-C stops after the current group and writes what finished
//!   (`interrupted: true`, exit code 130). The group that was running is discarded: a
//!   terminal's Ctrl-C reaches the simulator too, so one of its cells measured a dying
//!   sensor. A second Ctrl-C quits at once.
//!
//! Exit codes as every subcommand (see [`crate::error`]): 2 for a bad flag (the message names
//! it), 1 when a cell fails, 130 when interrupted.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::Result;
use clap::ValueEnum;
use preempt_io::sys::clock::{self, ClockId};
use preempt_rtio_bench::cli::{BusArg, Config};

use crate::error::{EXIT_INTERRUPTED, EXIT_OK, usage};
use crate::export::Sink;
use crate::results::rtio::{RtioBenchResult, RtioSettings};
use crate::results::{ResultFile, RunResult, WarningRecord};
use crate::warnings::Warning;
use crate::{measure, sysinfo};

/// `preempt rtio-bench`: the benchmark's own flags. (Not named `Args`: clap names a struct's
/// argument group after it, and the flattened benchmark struct is `Args` already.)
#[derive(Debug, Clone, clap::Args)]
#[command(mut_arg("json", |a| a
    .value_name("FILE")
    .help("Write the results as a preempt result file (kind rtio_bench, docs/results-schema.md) to FILE; rewritten after every group of cells with complete: false until the run ends")))]
pub struct RtioBenchArgs {
    /// The flags of `preempt-rtio-bench` (the same as the `rtio-bench` binary's).
    #[command(flatten)]
    pub bench: preempt_rtio_bench::Args,
}

/// The name clap gives a value (`spi-txn`, `io_uring`, ...).
fn value_name(v: &impl ValueEnum) -> String {
    v.to_possible_value()
        .map_or_else(|| "?".into(), |p| p.get_name().to_owned())
}

/// The run as groups, one benchmark call each: bus × ODR for the table, bus for the sweep, in
/// the order the benchmark itself runs them. Repeated buses are run once (as the benchmark
/// does); the benchmark's own JSON output is switched off (the group's document comes back
/// from [`preempt_rtio_bench::run`]).
pub fn groups(a: &preempt_rtio_bench::Args) -> Vec<preempt_rtio_bench::Args> {
    let mut buses: Vec<BusArg> = Vec::new();
    for b in &a.bus {
        if !buses.contains(b) {
            buses.push(*b);
        }
    }
    let mut out = Vec::new();
    for b in buses {
        if a.sweep {
            out.push(preempt_rtio_bench::Args {
                bus: vec![b],
                json: None,
                ..a.clone()
            });
        } else {
            for &odr in &a.odr {
                out.push(preempt_rtio_bench::Args {
                    bus: vec![b],
                    odr: vec![odr],
                    json: None,
                    ..a.clone()
                });
            }
        }
    }
    out
}

fn settings(a: &preempt_rtio_bench::Args, cfg: &Config) -> RtioSettings {
    RtioSettings {
        mode: if cfg.sweep { "sweep" } else { "table" }.into(),
        duration_per_cell_ns: cfg.duration_ns,
        work_us: cfg.work_us,
        odrs_hz: cfg.odrs.clone(),
        buses: cfg.buses.iter().map(|l| l.label().to_owned()).collect(),
        bus_ns_per_byte: cfg.bus_ns_per_byte,
        consumer_cpu: cfg.consumer_cpu,
        sim_cpu: cfg.sim_cpu,
        priority: cfg.priority,
        backend: value_name(&a.backend),
    }
}

fn bench_error(e: preempt_rtio_bench::Error) -> anyhow::Error {
    match e {
        preempt_rtio_bench::Error::Usage(m) => usage(m),
        preempt_rtio_bench::Error::Io(e) => {
            anyhow::Error::new(e).context("rtio-bench: a cell failed")
        }
    }
}

/// Threats to validity the cells themselves show.
fn cell_warnings(r: &RtioBenchResult) -> Vec<WarningRecord> {
    let mut out = Vec::new();
    let refused = r.cells.iter().filter(|c| !c.consumer_sched_fifo).count();
    if refused > 0 {
        out.push(WarningRecord {
            code: "not-real-time-policy".into(),
            message: format!(
                "the consumer did not get SCHED_FIFO in {refused} of {} cells",
                r.cells.len()
            ),
            hint: "run as root, grant CAP_SYS_NICE (setcap cap_sys_nice+ep), or raise \
                   RLIMIT_RTPRIO (ulimit -r 99)"
                .into(),
        });
    }
    let overruns: u64 = r.cells.iter().map(|c| c.sim_overruns).sum();
    if overruns > 0 {
        out.push(WarningRecord {
            code: "simulator-overruns".into(),
            message: format!(
                "imu-sim served {overruns} timer ticks late: the simulated sensor itself was \
                 delayed, which shows up as latency and jitter of both designs"
            ),
            hint: "give the simulator a CPU of its own (--sim-cpu on an isolated CPU) and \
                   keep other load off the machine"
                .into(),
        });
    }
    out
}

/// Prints, once, what the first Ctrl-C does (the benchmark call in progress cannot see the
/// stop flag, so the run seems to go on). Stopped and joined on drop.
struct StopNotice {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StopNotice {
    fn spawn(stop: &Arc<AtomicBool>) -> Result<StopNotice> {
        let done = Arc::new(AtomicBool::new(false));
        let (stop, done2) = (Arc::clone(stop), Arc::clone(&done));
        let thread = std::thread::Builder::new()
            .name("preempt-ctrlc".into())
            .spawn(move || {
                while !done2.load(Relaxed) {
                    if stop.load(Relaxed) {
                        eprintln!(
                            "preempt: Ctrl-C: stopping after the current group of cells (it is \
                             discarded: the simulator got the signal too); Ctrl-C again quits now"
                        );
                        return;
                    }
                    // A 100 ms poll: this thread only prints a notice.
                    let next = clock::now_ns(ClockId::Monotonic) + 100_000_000;
                    if clock::sleep_until_ns(ClockId::Monotonic, next).is_err() {
                        return;
                    }
                }
            })?;
        Ok(StopNotice {
            done,
            thread: Some(thread),
        })
    }
}

impl Drop for StopNotice {
    fn drop(&mut self) {
        self.done.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            // The thread only prints; a panic there has nothing to report here.
            let _ = t.join();
        }
    }
}

/// `preempt rtio-bench`: returns the exit code.
pub fn run(args: &RtioBenchArgs, argv: Vec<String>) -> Result<u8> {
    // Validate every flag before anything runs (the benchmark repeats this per group).
    let cfg = Config::from_args(&args.bench).map_err(usage)?;
    let sink = Sink::new(cfg.json.as_deref(), None);
    sink.preflight()?;
    let t0 = clock::monotonic_now_ns();
    let started = sysinfo::unix_ms_now();
    let info = sysinfo::collect(argv.clone());
    let machine: Vec<WarningRecord> = sysinfo::machine_warnings(&info, &[cfg.consumer_cpu])
        .iter()
        .map(|w| {
            let mut r = w.to_record();
            if *w == Warning::NotIsolated {
                // The generic hint names `--cpus`, which this subcommand does not have.
                r.hint = "boot with isolcpus=N nohz_full=N rcu_nocbs=N and run with \
                          --consumer-cpu N (and the simulator on another CPU, --sim-cpu)"
                    .into();
            }
            r
        })
        .collect();
    let mut result = RtioBenchResult {
        settings: settings(&args.bench, &cfg),
        ..RtioBenchResult::default()
    };
    let file = |r: &RtioBenchResult, complete: bool, interrupted: bool| {
        let mut f = ResultFile::new(info.clone(), RunResult::RtioBench(Box::new(r.clone())));
        f.started_unix_ms = started;
        f.elapsed_ns = clock::monotonic_now_ns() - t0;
        f.complete = complete;
        f.interrupted = interrupted;
        f.warnings = machine.clone();
        f.warnings.extend(cell_warnings(r));
        if interrupted {
            f.warnings.push(Warning::Interrupted.to_record());
        }
        f
    };
    let stop = measure::install_stop_flag()?;
    let notice = StopNotice::spawn(&stop)?;
    let groups = groups(&args.bench);
    let mut interrupted = false;
    for g in &groups {
        if stop.load(Relaxed) {
            interrupted = true;
            break;
        }
        let outcome = preempt_rtio_bench::run(g, argv.clone());
        if stop.load(Relaxed) {
            // Discard the group: a terminal's SIGINT stopped the simulator in one of its
            // cells (and may be why it failed).
            interrupted = true;
            break;
        }
        match outcome {
            Ok(doc) => {
                result.absorb(&doc);
                if groups.len() > 1 {
                    sink.write(&file(&result, false, false))?;
                }
            }
            Err(e) => {
                if !result.cells.is_empty() || !result.sweep.is_empty() {
                    // Keep what finished before the failure.
                    sink.write(&file(&result, false, false))?;
                }
                return Err(bench_error(e));
            }
        }
    }
    drop(notice);
    let f = file(&result, true, interrupted);
    sink.write(&f)?;
    // Same lines as `warnings::print`, from the records (some are the cells' own).
    for w in &f.warnings {
        eprintln!("warning: {}\n  hint: {}", w.message, w.hint);
    }
    match &cfg.json {
        Some(p) => eprintln!(
            "preempt: results in {} (kind rtio_bench: `preempt report {}` draws them)",
            p.display(),
            p.display()
        ),
        None => eprintln!(
            "preempt: pass --json FILE to keep these results for `preempt report` and \
             `preempt compare`"
        ),
    }
    Ok(if interrupted {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: RtioBenchArgs,
    }

    fn parse(a: &[&str]) -> preempt_rtio_bench::Args {
        let mut v = vec!["preempt-rtio-bench"];
        v.extend_from_slice(a);
        Cli::try_parse_from(v).unwrap().args.bench
    }

    #[test]
    fn groups_follow_the_benchmark_order_and_drop_its_json() {
        let a = parse(&[
            "--bus",
            "spi,memfd,spi",
            "--odr",
            "3200,6400",
            "--json",
            "x",
        ]);
        let g = groups(&a);
        let got: Vec<(String, Vec<u32>)> = g
            .iter()
            .map(|g| (value_name(&g.bus[0]), g.odr.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("spi".into(), vec![3200]),
                ("spi".into(), vec![6400]),
                ("memfd".into(), vec![3200]),
                ("memfd".into(), vec![6400]),
            ]
        );
        assert!(g.iter().all(|g| g.json.is_none() && g.bus.len() == 1));
        let s = groups(&parse(&["--sweep", "--bus", "spi-txn,memfd"]));
        assert_eq!(s.len(), 2, "the sweep is grouped per bus only");
        assert_eq!(value_name(&s[0].bus[0]), "spi-txn");
        assert_eq!(s[0].odr, a.odr, "other flags pass through unchanged");
    }

    #[test]
    fn json_help_names_the_preempt_schema() {
        use clap::CommandFactory;
        let mut c = Cli::command();
        let help = c.render_long_help().to_string();
        assert!(help.contains("kind rtio_bench"), "{help}");
        assert!(
            help.contains("--work-us"),
            "the benchmark's flags are flattened in"
        );
    }

    #[test]
    fn cells_without_sched_fifo_or_with_simulator_overruns_are_threats() {
        let mut r = RtioBenchResult::default();
        assert!(cell_warnings(&r).is_empty());
        r.cells = vec![
            crate::results::rtio::RtioCell {
                consumer_sched_fifo: false,
                sim_overruns: 7,
                ..Default::default()
            },
            crate::results::rtio::RtioCell {
                consumer_sched_fifo: true,
                ..Default::default()
            },
        ];
        let w = cell_warnings(&r);
        assert_eq!(w[0].code, "not-real-time-policy");
        assert!(w[0].message.contains("1 of 2"));
        assert!(w[1].message.contains("7 timer ticks"));
    }
}
