//! Snapshot tests of the exporters on fixed synthetic results (hyperfine's
//! `src/export/tests.rs`): any change of the file formats shows up as a snapshot diff.

use super::csv::CsvExporter;
use super::json::JsonExporter;
use super::{Exporter, Sink};
use crate::results::*;
use crate::stats::histogram::Histogram;
use crate::stats::summary::Summary;

fn sysinfo() -> SysInfo {
    SysInfo {
        hostname: "rig".into(),
        kernel_release: "6.12.0-rt".into(),
        kernel_version: "#1 SMP PREEMPT_RT".into(),
        machine: "aarch64".into(),
        cmdline: "isolcpus=3 nohz_full=3".into(),
        cpu_model: "Cortex-A76".into(),
        cpus_online: vec![0, 1, 2, 3],
        governors: vec![(3, "performance".into())],
        preempt_model: "rt".into(),
        preempt_dynamic: false,
        realtime_flag: Some(true),
        clocksource: "arch_sys_counter".into(),
        virtualization: None,
        argv: vec![
            "preempt".into(),
            "latency".into(),
            "--cpus".into(),
            "3".into(),
        ],
    }
}

fn dist(values: &[u64]) -> Distribution {
    let h = Histogram::new();
    for (i, &v) in values.iter().enumerate() {
        h.record(v, i as u64);
    }
    Distribution::from_snapshot(&h.snapshot())
}

fn file(result: RunResult) -> ResultFile {
    ResultFile {
        schema_version: SCHEMA_VERSION,
        tool: Tool {
            name: "preempt".into(),
            version: "0.0.0-test".into(),
        },
        complete: true,
        interrupted: false,
        interrupted_by: None,
        failed: None,
        started_unix_ms: 1_700_000_000_000,
        elapsed_ns: 2_000_000_000,
        sysinfo: sysinfo(),
        warnings: vec![crate::warnings::Warning::ShortRun { samples: 5 }.to_record()],
        result,
    }
}

/// A fixed latency result: one thread, five samples, one missed period.
pub(crate) fn synthetic_latency() -> ResultFile {
    let latency = dist(&[2_100, 2_300, 2_250, 9_000, 120_500]);
    file(RunResult::Latency(Box::new(LatencyResult {
        settings: LatencySettings {
            policy: PolicyRecord {
                name: "fifo".into(),
                priority: Some(80),
                nice: None,
                runtime_ns: None,
                deadline_ns: None,
                period_ns: None,
            },
            interval_ns: 1_000_000,
            releases_per_thread: 6,
            cpus: vec![3],
            pinned: true,
            work_ns: 4_000,
            work_iterations: 1_234,
            timer_slack_ns: 1,
            mlock: true,
            cpu_dma_latency_us: Some(0),
            stress: vec![],
            stress_tool: "builtin".into(),
            break_at_ns: None,
        },
        overhead: Overhead {
            clock_read: dist(&[20, 21, 25]).summary,
            clock_resolution_ns: 1,
        },
        threads: vec![ThreadResult {
            cpu: Some(3),
            cpus_seen: vec![3],
            tid: 4242,
            releases: 6,
            samples: 5,
            missed_periods: 1,
            deadline_misses: 0,
            response: Some(dist(&[6_200, 6_400, 6_300, 13_100, 124_600])),
            compute: Some(dist(&[4_000, 4_050, 4_020, 4_080, 4_100])),
            latency: latency.clone(),
            minor_faults: 0,
            major_faults: 0,
            involuntary_switches: 2,
            throttled_windows: 0,
        }],
        latency_all: latency.summary,
        ledger: Ledger {
            verdict: "clean".into(),
            entries: vec![LedgerEntry {
                name: "steal-time".into(),
                value: "0.00 %".into(),
                contaminates: false,
            }],
        },
        break_event: None,
        explain: None,
        explain_skipped: None,
    })))
}

fn synthetic_matrix() -> ResultFile {
    let s: Summary = dist(&[5_000, 6_000, 70_000]).summary;
    file(RunResult::Matrix(Box::new(MatrixResult {
        period_ns: 4_000_000,
        duration_per_cell_ns: 1_000_000_000,
        work_ns: 4_000,
        cpus: vec![3],
        cells: vec![
            MatrixCell {
                row: "SCHED_FIFO 99".into(),
                policy: crate::config::PolicyConfig::fifo(99).record,
                stress: "heavy".into(),
                result_file: Some("heavy-fifo-99.json".into()),
                latency: Some(s),
                compute: Some(dist(&[3_800, 3_900]).summary),
                response: None,
                missed_periods: 0,
                deadline_misses: 0,
                verdict: "clean".into(),
                error: None,
            },
            MatrixCell {
                row: "SCHED_DEADLINE 800us".into(),
                policy: crate::config::PolicyConfig::deadline(800_000, 4_000_000, 4_000_000).record,
                stress: "none".into(),
                result_file: None,
                latency: None,
                compute: None,
                response: None,
                missed_periods: 0,
                deadline_misses: 0,
                verdict: "not run".into(),
                error: Some("admission control refused the bandwidth".into()),
            },
        ],
    })))
}

fn synthetic_wakeup() -> ResultFile {
    file(RunResult::Wakeup(Box::new(WakeupResult {
        priority: 80,
        samples_per_case: 3,
        interval_ns: 1_000_000,
        overhead: Overhead {
            clock_read: dist(&[20]).summary,
            clock_resolution_ns: 1,
        },
        cases: vec![
            WakeupCase {
                source: "eventfd".into(),
                load: "idle".into(),
                waiter_cpu: 1,
                trigger_cpu: Some(0),
                latency: Some(dist(&[15_000, 16_000, 40_000])),
                skipped: None,
            },
            WakeupCase {
                source: "gpio".into(),
                load: "idle".into(),
                waiter_cpu: 1,
                trigger_cpu: None,
                latency: None,
                skipped: Some("no /dev/gpiochip0".into()),
            },
        ],
    })))
}

fn synthetic_check() -> ResultFile {
    file(RunResult::Check(CheckReport {
        items: vec![
            CheckItem {
                id: "preempt-model".into(),
                title: "Kernel preemption model".into(),
                status: Status::Pass,
                value: "PREEMPT_RT".into(),
                fix: String::new(),
            },
            CheckItem {
                id: "swap".into(),
                title: "Swap".into(),
                status: Status::Warn,
                value: "2 GiB swap, active".into(),
                fix: "swapoff -a".into(),
            },
        ],
        idle_wakeup: None,
    }))
}

fn text(exporter: &dyn Exporter, f: &ResultFile) -> String {
    String::from_utf8(exporter.serialize(f).unwrap()).unwrap()
}

#[test]
fn json_latency() {
    insta::assert_snapshot!(text(&JsonExporter, &synthetic_latency()));
}

#[test]
fn csv_latency() {
    insta::assert_snapshot!(text(&CsvExporter, &synthetic_latency()));
}

#[test]
fn csv_matrix() {
    insta::assert_snapshot!(text(&CsvExporter, &synthetic_matrix()));
}

#[test]
fn csv_wakeup() {
    insta::assert_snapshot!(text(&CsvExporter, &synthetic_wakeup()));
}

#[test]
fn csv_check() {
    insta::assert_snapshot!(text(&CsvExporter, &synthetic_check()));
}

#[test]
fn json_round_trips_every_kind() {
    for f in [
        synthetic_latency(),
        synthetic_matrix(),
        synthetic_wakeup(),
        synthetic_check(),
    ] {
        let back: ResultFile =
            serde_json::from_slice(&JsonExporter.serialize(&f).unwrap()).unwrap();
        assert_eq!(back, f);
    }
}

#[test]
fn sink_writes_atomically_and_reader_checks_the_version() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let csv = dir.path().join("r.csv");
    let sink = Sink::new(Some(&json), Some(&csv));
    sink.preflight().unwrap();
    sink.write(&synthetic_latency()).unwrap();
    assert_eq!(super::read_json(&json).unwrap(), synthetic_latency());
    assert!(
        std::fs::read_to_string(&csv)
            .unwrap()
            .starts_with("thread,cpu,policy")
    );
    // No temporary files are left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);

    let mut newer = serde_json::to_value(synthetic_check()).unwrap();
    newer["schema_version"] = 99.into();
    std::fs::write(&json, newer.to_string()).unwrap();
    let err = format!("{:#}", super::read_json(&json).unwrap_err());
    assert!(
        err.contains("schema_version 99") && err.contains("r.json"),
        "{err}"
    );
    std::fs::write(&json, "{not json").unwrap();
    assert!(format!("{:#}", super::read_json(&json).unwrap_err()).contains("not valid JSON"));

    let bad = Sink::new(Some(&dir.path().join("missing/r.json")), None);
    assert!(format!("{:#}", bad.preflight().unwrap_err()).contains("does not exist"));
}
