//! `preempt rtio-bench`: the Zephyr RTIO talk's table (thread-based vs RTIO-based IMU
//! reading against the `imu-sim` simulator) as a subcommand, with its results in preempt's
//! schema (`kind: "rtio_bench"`, [`crate::results::rtio`]) so `preempt report` draws them and
//! `preempt compare` puts two runs side by side.
//!
//! The measurement is `preempt-rtio-bench`'s, unchanged: its flags are flattened in (one
//! definition, so the subcommand and the standalone `rtio-bench` binary accept the same
//! command lines), [`Config::from_args`] validates them and the benchmark's
//! [`run_with`](preempt_rtio_bench::run_with) does the work on that `Config`. Two things
//! differ, both about the results file:
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

use preempt_io::rtio::BackendChoice;
use preempt_rtio_bench::Config;

use crate::results::WarningRecord;
use crate::results::rtio::{RtioBenchResult, RtioSettings};

/// The run as groups, one benchmark call each: bus × ODR for the table, bus for the sweep, in
/// the order the benchmark itself runs them (`Config` holds each bus once); the benchmark's
/// own JSON output is switched off (the group's document comes back from
/// [`preempt_rtio_bench::run_with`]).
pub fn groups(cfg: &Config) -> Vec<Config> {
    let mut out = Vec::new();
    for &b in &cfg.buses {
        if cfg.sweep {
            out.push(Config {
                buses: vec![b],
                json: None,
                ..cfg.clone()
            });
        } else {
            for &odr in &cfg.odrs {
                out.push(Config {
                    buses: vec![b],
                    odrs: vec![odr],
                    json: None,
                    ..cfg.clone()
                });
            }
        }
    }
    out
}

/// The settings record of a run, from the benchmark's validated configuration.
pub(crate) fn settings(cfg: &Config) -> RtioSettings {
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
        // The names of `--backend`'s values.
        backend: match cfg.backend {
            BackendChoice::Auto => "auto",
            BackendChoice::IoUring => "io_uring",
            BackendChoice::Epoll => "epoll",
        }
        .into(),
    }
}

/// A failed benchmark call as an `anyhow` error (exit code 1).
pub(crate) fn bench_error(e: std::io::Error) -> anyhow::Error {
    anyhow::Error::new(e).context("rtio-bench: a cell failed")
}

/// Threats to validity the cells themselves show.
pub(crate) fn cell_warnings(r: &RtioBenchResult) -> Vec<WarningRecord> {
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

    /// The validated configuration of `preempt rtio-bench` with flags `a` (a simulator that
    /// exists: validation checks it; nothing runs).
    fn parse(a: &[&str]) -> Config {
        let mut v = vec!["preempt-rtio-bench", "--imu-sim", "/bin/true"];
        v.extend_from_slice(a);
        Config::from_args(&Cli::try_parse_from(v).unwrap().args.bench).unwrap()
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
            .map(|g| (g.buses[0].label().to_owned(), g.odrs.clone()))
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
        assert!(g.iter().all(|g| g.json.is_none() && g.buses.len() == 1));
        let s = groups(&parse(&["--sweep", "--bus", "spi-txn,memfd"]));
        assert_eq!(s.len(), 2, "the sweep is grouped per bus only");
        assert_eq!(s[0].buses[0].label(), "spi-txn");
        assert_eq!(s[0].odrs, a.odrs, "other settings pass through unchanged");
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
