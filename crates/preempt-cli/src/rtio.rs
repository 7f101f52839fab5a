//! `preempt rtio-bench`: the Zephyr RTIO talk's table (thread-based vs RTIO-based IMU
//! reading against the `imu-sim` simulator) as a subcommand, with its results in preempt's
//! schema (`kind: "rtio_bench"`, [`crate::results::rtio`]) so `preempt report` draws them and
//! `preempt compare` puts two runs side by side.
//!
//! The measurement is `preempt-rtio-bench`'s, unchanged: its flags are flattened in (one
//! definition, so the subcommand and the standalone `rtio-bench` binary accept the same
//! command lines) and its [`run_with`](preempt_rtio_bench::run_with) does the work. Two
//! things differ, both about the results file:
//!
//! - `--json FILE` writes a preempt result file (the benchmark's numbers field for field,
//!   plus preempt's `sysinfo`, warnings, `complete`/`interrupted`), not the benchmark's own
//!   document;
//! - the run is split into *groups*, one benchmark call per bus × ODR (per bus with
//!   `--sweep`), in the benchmark's own order, and the file is rewritten with
//!   `complete: false` after every finished cell (and every finished sweep break point).
//!
//! Ctrl-C (or SIGTERM) finishes the running cell, then stops and writes every cell that
//! finished, including those of the group that was running (`interrupted: true`, exit code
//! 130). The simulator runs in a process group of its own, so a terminal's Ctrl-C does not
//! reach it and the finished cell measured a healthy sensor; a sweep's unfinished break point
//! is not recorded (a note says where it stopped). A second Ctrl-C quits at once. See
//! [`preempt_rtio_bench::control`].
//!
//! Exit codes as every subcommand (see [`crate::error`]): 2 for a bad flag (the message names
//! it), 1 when a cell fails, 130 when interrupted.

use clap::ValueEnum;
use preempt_rtio_bench::cli::{BusArg, Config};

use crate::error::usage;
use crate::results::WarningRecord;
use crate::results::rtio::{RtioBenchResult, RtioSettings};

/// The name clap gives a value (`spi-txn`, `io_uring`, ...).
fn value_name(v: &impl ValueEnum) -> String {
    v.to_possible_value()
        .map_or_else(|| "?".into(), |p| p.get_name().to_owned())
}

/// The run as groups, one benchmark call each: bus × ODR for the table, bus for the sweep, in
/// the order the benchmark itself runs them. Repeated buses are run once (as the benchmark
/// does); the benchmark's own JSON output is switched off (the group's document comes back
/// from [`preempt_rtio_bench::run_with`]).
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

/// The settings record of a run, from the benchmark's flags and validated configuration.
pub fn settings(a: &preempt_rtio_bench::Args, cfg: &Config) -> RtioSettings {
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

/// The benchmark's error as an `anyhow` error that keeps its exit code (usage stays 2).
pub fn bench_error(e: preempt_rtio_bench::Error) -> anyhow::Error {
    match e {
        preempt_rtio_bench::Error::Usage(m) => usage(m),
        preempt_rtio_bench::Error::Io(e) => {
            anyhow::Error::new(e).context("rtio-bench: a cell failed")
        }
    }
}

/// Threats to validity the cells themselves show.
pub fn cell_warnings(r: &RtioBenchResult) -> Vec<WarningRecord> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::RtioBenchArgs;
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
