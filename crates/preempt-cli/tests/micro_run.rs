//! `preempt micro` on real threads, with small sample counts: the records have the seeds'
//! shape (every benchmark, the requested counts, consistent ns and cycles, the timing overhead,
//! the clock named), and bad flags give one-line usage errors. Timing values are never asserted
//! (STYLE: tests assert behaviour, not speed).

use std::sync::atomic::AtomicBool;

use clap::Parser;
use preempt_cli::cli::MicroArgs;
use preempt_cli::config::SetArg;
use preempt_cli::error::exit_code_of;
use preempt_cli::export::{Exporter, Sink, csv::CsvExporter, json::JsonExporter};
use preempt_cli::history::HistoryConfig;
use preempt_cli::micro::{self, MicroConfig, clock::CounterKind};
use preempt_cli::results::RunResult;
use preempt_cli::session::Session;

mod support;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    micro: MicroArgs,
}

fn parse(args: &[&str]) -> MicroArgs {
    Cli::try_parse_from(std::iter::once("micro").chain(args.iter().copied()))
        .unwrap()
        .micro
}

fn can_fifo() -> bool {
    match micro::fifo_permitted(80) {
        Ok(()) => true,
        Err(e) => {
            support::skip_unprivileged(&format!(
                "SCHED_FIFO not permitted ({e}): real-time parts are checked as skipped"
            ));
            false
        }
    }
}

#[test]
fn every_benchmark_runs_with_the_seed_counts_scaled() {
    // The framework set runs apps in child processes: tests/micro_framework.rs covers it.
    let cfg = MicroConfig {
        sets: vec![SetArg::Nxp, SetArg::Zephyr],
        only: vec![],
        scale: 0.02,
        cpu: 0,
        priority: if can_fifo() { 80 } else { 0 },
        subtract_overhead: false,
        stress: Default::default(),
    };
    let (m, _) = micro::measure(&cfg, &AtomicBool::new(false), &mut |_, _, _| {}).unwrap();
    assert_eq!(m.clock.counter, CounterKind::native());
    assert_eq!(m.clock.calibrated_against, "CLOCK_MONOTONIC_RAW");
    assert!(m.clock.counter_hz > 1e6, "{}", m.clock.counter_hz);
    assert_eq!(m.overhead.cycles.count, micro::OVERHEAD_SAMPLES as u64);
    let expected: [(&str, u64); 9] = [
        ("malloc", 20),
        ("free", 20),
        ("mutex_lock", 20),
        ("mutex_unlock", 20),
        ("mutex_pi_lock", 20),
        ("mutex_pi_unlock", 20),
        ("pthread_create", 40),
        ("pthread_join", 40),
        ("context_switch", 10_000),
    ];
    for (id, n) in expected {
        let b = m
            .benches
            .iter()
            .find(|b| b.id == id)
            .unwrap_or_else(|| panic!("{id} missing"));
        assert!(b.skipped.is_none(), "{id}: {:?}", b.skipped);
        let c = b.cycles.unwrap();
        let s = b.ns.as_ref().unwrap().summary;
        // Context switches may overshoot by the switch in flight when the target is reached.
        assert!(
            c.count >= n && c.count <= n + 2,
            "{id}: {} samples, expected {n}",
            c.count
        );
        assert_eq!(
            s.count, c.count,
            "{id}: ns and cycles cover the same samples"
        );
        assert!(
            c.min_cycles <= c.p50_cycles
                && c.p50_cycles <= c.p99_cycles
                && c.p99_cycles <= c.max_cycles,
            "{id}: {c:?}"
        );
        // ns = cycles / GHz (the ns percentiles are histogram bucket bounds: within 0.4 %).
        let ns_of = |cy: u64| cy as f64 * 1e9 / m.clock.counter_hz;
        assert!(
            (s.max_ns as f64 - ns_of(c.max_cycles)).abs() <= ns_of(c.max_cycles) * 0.005 + 1.0,
            "{id}: {s:?} vs {c:?}"
        );
        assert_eq!(b.overhead_subtracted_cycles, 0);
        assert!(!b.method.is_empty());
    }
    for id in ["sem_give_switch", "sem_give_no_switch"] {
        let b = m.benches.iter().find(|b| b.id == id).unwrap();
        if cfg.priority == 0 {
            assert!(
                b.skipped.as_deref().unwrap().contains("SCHED_FIFO"),
                "{id}: {:?}",
                b.skipped
            );
        } else {
            assert!(b.skipped.is_none(), "{id}: {:?}", b.skipped);
            assert_eq!(b.cycles.unwrap().count, 200, "{id}");
        }
    }
}

#[test]
fn overhead_subtraction_is_recorded() {
    let cfg = MicroConfig {
        sets: vec![SetArg::Nxp],
        only: vec!["mutex".into(), "mutex_pi".into()],
        scale: 0.05,
        cpu: 0,
        priority: 0,
        subtract_overhead: true,
        stress: Default::default(),
    };
    let (m, _) = micro::measure(&cfg, &AtomicBool::new(false), &mut |_, _, _| {}).unwrap();
    assert_eq!(m.benches.len(), 4, "default and PI mutex, lock and unlock");
    for b in &m.benches {
        assert_eq!(
            b.overhead_subtracted_cycles, m.overhead.cycles.p50_cycles,
            "{}",
            b.id
        );
    }
}

#[test]
fn a_stop_request_ends_the_run_early() {
    let cfg = MicroConfig {
        sets: vec![SetArg::Nxp],
        only: vec![],
        scale: 0.02,
        cpu: 0,
        priority: 0,
        subtract_overhead: false,
        stress: Default::default(),
    };
    let (m, _) = micro::measure(&cfg, &AtomicBool::new(true), &mut |_, _, _| {}).unwrap();
    assert!(m.benches.is_empty());
}

#[test]
fn the_file_round_trips_and_exports_csv() {
    let cfg = MicroConfig {
        sets: vec![SetArg::Nxp],
        only: vec!["malloc".into()],
        scale: 0.05,
        cpu: 0,
        priority: 0,
        subtract_overhead: false,
        stress: Default::default(),
    };
    // The file as `preempt micro`'s run session makes it.
    let (m, _) = micro::measure(&cfg, &AtomicBool::new(false), &mut |_, _, _| {}).unwrap();
    let s = Session::start(
        "micro",
        vec!["preempt".into(), "micro".into()],
        Sink::new(None, None),
        &[],
        HistoryConfig {
            history_db: None,
            no_history: true,
        },
    )
    .unwrap();
    let f = s.file(RunResult::Micro(Box::new(m)));
    let json = JsonExporter.serialize(&f).unwrap();
    let text = String::from_utf8(json).unwrap();
    assert!(text.contains("\"kind\": \"micro\"") && text.contains("\"schema_version\": 1"));
    let back = preempt_cli::results::input::parse_text(&text, "micro.json").unwrap();
    assert_eq!(back.kind(), "micro");
    let csv = String::from_utf8(CsvExporter.serialize(&f).unwrap()).unwrap();
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("set,id,title,samples,min_ns,p50_ns")
    );
    assert_eq!(
        lines.filter(|l| l.starts_with("nxp,")).count(),
        2,
        "malloc and free rows"
    );
}

#[test]
fn bad_flags_are_usage_errors_that_name_the_flag() {
    let online = [0usize, 1];
    let cases: [(&[&str], &str); 5] = [
        (&["--scale", "0"], "--scale 0"),
        (&["--scale", "1000"], "--scale 1000"),
        (&["--priority", "99"], "--priority 99"),
        (&["--only", "memcpy"], "--only: unknown benchmark 'memcpy'"),
        (&["--cpu", "7"], "--cpu 7 is not online"),
    ];
    for (args, expect) in cases {
        let e = MicroConfig::from_args(&parse(args), &online).unwrap_err();
        assert!(e.to_string().contains(expect), "{args:?}: {e}");
        assert_eq!(exit_code_of(&e), 2, "{args:?}");
    }
    assert!(Cli::try_parse_from(["micro", "--sets", "posix"]).is_err());
    let ok = MicroConfig::from_args(&parse(&["--sets", "zephyr,nxp,nxp", "--cpu", "1"]), &online)
        .unwrap();
    assert_eq!(ok.sets, vec![SetArg::Nxp, SetArg::Zephyr]);
    assert_eq!(ok.cpu, 1);
}

/// The subcommands as the lead wires them into `preempt` (see the report of issue 6): clap's
/// own consistency checks pass with every part-2 command side by side.
#[test]
fn part_two_subcommands_wire_together() {
    use clap::{CommandFactory, Subcommand};
    #[derive(Subcommand)]
    enum Part2 {
        Micro(MicroArgs),
        Report(preempt_cli::cli::ReportArgs),
        Compare(preempt_cli::cli::CompareArgs),
        History(preempt_cli::cli::HistoryCmdArgs),
        Run(preempt_cli::cli::RunArgs),
    }
    #[derive(Parser)]
    struct Preempt {
        #[command(subcommand)]
        command: Part2,
    }
    Preempt::command().debug_assert();
    let p = Preempt::try_parse_from([
        "preempt",
        "history",
        "show",
        "3",
        "--history-db",
        "/tmp/h.sqlite",
    ])
    .unwrap();
    assert!(matches!(p.command, Part2::History(ref h) if h.db.history_db.is_some()));
    let p = Preempt::try_parse_from([
        "preempt",
        "compare",
        "--baseline",
        "a.json",
        "b.json",
        "--max-ratio",
        "p99=1.2,max=2",
    ])
    .unwrap();
    assert!(
        matches!(p.command, Part2::Compare(ref c) if c.max_ratio.len() == 2 && c.runs == ["b.json"])
    );
    assert!(
        Preempt::try_parse_from(["preempt", "run", "--quick", "--long"]).is_err(),
        "--quick and --long conflict"
    );
}
