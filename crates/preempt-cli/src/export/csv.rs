//! The CSV exporter: one row per measured unit (thread, matrix cell, wake-up case, check
//! item, rtio-bench cell or break point), with units in the column names, for spreadsheets
//! and `pandas.read_csv`.
//!
//! The raw histograms are only in the JSON export (a CSV table has no room for nested data);
//! per-sample data is what `--trace-samples` writes.

use anyhow::Result;

use super::Exporter;
use crate::results::micro::MicroResult;
use crate::results::{Distribution, ResultFile, RunResult};
use crate::stats::summary::Summary;

/// Writes the summary rows of a [`ResultFile`] as CSV.
#[derive(Debug, Clone, Copy, Default)]
pub struct CsvExporter;

const SUMMARY_COLUMNS: [&str; 10] = [
    "samples",
    "min_ns",
    "mean_ns",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p99_9_ns",
    "p99_99_ns",
    "max_ns",
    "max_cycle",
];

fn summary_fields(s: Option<&Summary>) -> Vec<String> {
    match s {
        None => vec![String::new(); SUMMARY_COLUMNS.len()],
        Some(s) => vec![
            s.count.to_string(),
            s.min_ns.to_string(),
            format!("{:.1}", s.mean_ns),
            s.p50_ns.to_string(),
            s.p90_ns.to_string(),
            s.p99_ns.to_string(),
            s.p99_9_ns.to_string(),
            s.p99_99_ns.to_string(),
            s.max_ns.to_string(),
            s.max_cycle.map(|c| c.to_string()).unwrap_or_default(),
        ],
    }
}

fn prefixed(prefix: &str) -> Vec<String> {
    SUMMARY_COLUMNS
        .iter()
        .map(|c| format!("{prefix}{c}"))
        .collect()
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

impl Exporter for CsvExporter {
    fn serialize(&self, result: &ResultFile) -> Result<Vec<u8>> {
        let mut w = csv::Writer::from_writer(Vec::new());
        match &result.result {
            RunResult::Check(c) => {
                w.write_record(["id", "title", "status", "value", "fix"])?;
                for i in &c.items {
                    let status = serde_json::to_value(i.status)?;
                    w.write_record([
                        i.id.as_str(),
                        &i.title,
                        status.as_str().unwrap_or_default(),
                        &i.value,
                        &i.fix,
                    ])?;
                }
            }
            RunResult::Latency(l) => {
                let mut header: Vec<String> = [
                    "thread",
                    "cpu",
                    "policy",
                    "interval_ns",
                    "work_ns",
                    "releases",
                    "missed_periods",
                    "deadline_misses",
                    "minor_faults",
                    "involuntary_switches",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                header.extend(prefixed("latency_"));
                header.extend(prefixed("response_"));
                header.extend(prefixed("compute_"));
                header.push("verdict".into());
                w.write_record(&header)?;
                for (i, t) in l.threads.iter().enumerate() {
                    let mut row = vec![
                        i.to_string(),
                        opt(t.cpu),
                        l.settings.policy.label(),
                        l.settings.interval_ns.to_string(),
                        l.settings.work_ns.to_string(),
                        t.releases.to_string(),
                        t.missed_periods.to_string(),
                        t.deadline_misses.to_string(),
                        t.minor_faults.to_string(),
                        t.involuntary_switches.to_string(),
                    ];
                    row.extend(summary_fields(Some(&t.latency.summary)));
                    row.extend(summary_fields(
                        t.response.as_ref().map(|d: &Distribution| &d.summary),
                    ));
                    row.extend(summary_fields(t.compute.as_ref().map(|d| &d.summary)));
                    row.push(l.ledger.verdict.clone());
                    w.write_record(&row)?;
                }
            }
            RunResult::Matrix(m) => {
                let mut header: Vec<String> = [
                    "row",
                    "policy",
                    "stress",
                    "period_ns",
                    "missed_periods",
                    "deadline_misses",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                header.extend(prefixed("latency_"));
                header.extend(prefixed("compute_"));
                header.extend(["verdict", "error", "result_file"].map(String::from));
                w.write_record(&header)?;
                for c in &m.cells {
                    let mut row = vec![
                        c.row.clone(),
                        c.policy.label(),
                        c.stress.clone(),
                        m.period_ns.to_string(),
                        c.missed_periods.to_string(),
                        c.deadline_misses.to_string(),
                    ];
                    row.extend(summary_fields(c.latency.as_ref()));
                    row.extend(summary_fields(c.compute.as_ref()));
                    row.push(c.verdict.clone());
                    row.push(c.error.clone().unwrap_or_default());
                    row.push(c.result_file.clone().unwrap_or_default());
                    w.write_record(&row)?;
                }
            }
            RunResult::Wakeup(wk) => {
                let mut header: Vec<String> =
                    ["source", "load", "waiter_cpu", "trigger_cpu", "priority"]
                        .iter()
                        .map(|s| s.to_string())
                        .collect();
                header.extend(prefixed("latency_"));
                header.push("skipped".into());
                w.write_record(&header)?;
                for c in &wk.cases {
                    let mut row = vec![
                        c.source.clone(),
                        c.load.clone(),
                        c.waiter_cpu.to_string(),
                        opt(c.trigger_cpu),
                        wk.priority.to_string(),
                    ];
                    row.extend(summary_fields(c.latency.as_ref().map(|d| &d.summary)));
                    row.push(c.skipped.clone().unwrap_or_default());
                    w.write_record(&row)?;
                }
            }
            RunResult::Micro(m) => {
                let (header, rows) = micro_table(m);
                w.write_record(&header)?;
                for row in rows {
                    w.write_record(&row)?;
                }
            }
            RunResult::DemoGimbal(_) | RunResult::DemoUav(_) => {
                let (header, rows) = match &result.result {
                    RunResult::DemoUav(d) => crate::results::uav::csv_table(d),
                    RunResult::DemoGimbal(d) => crate::results::gimbal::csv_table(d),
                    _ => unreachable!("the arm matches the two demo kinds only"),
                };
                w.write_record(&header)?;
                for row in rows {
                    w.write_record(&row)?;
                }
            }
            RunResult::RtioBench(r) => {
                let (header, rows) = r.csv_table();
                w.write_record(&header)?;
                for row in rows {
                    w.write_record(&row)?;
                }
            }
        }
        w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))
    }
}

/// The CSV export of a micro result (`export::csv`): the header and one row per benchmark,
/// units in the column names.
fn micro_table(m: &MicroResult) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let header = vec![
        "set",
        "id",
        "title",
        "samples",
        "min_ns",
        "p50_ns",
        "p99_ns",
        "max_ns",
        "mean_ns",
        "min_cycles",
        "p50_cycles",
        "p99_cycles",
        "max_cycles",
        "mean_cycles",
        "overhead_p50_cycles",
        "overhead_subtracted_cycles",
        "counter",
        "counter_hz",
        "perf_event",
        "perf_per_op",
        "skipped",
    ];
    let mut rows = Vec::new();
    for b in &m.benches {
        let ns = b.ns.as_ref().map(|d| d.summary);
        let c = b.cycles;
        let f = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        rows.push(vec![
            b.set.clone(),
            b.id.clone(),
            b.title.clone(),
            f(c.map(|c| c.count)),
            f(ns.map(|s| s.min_ns)),
            f(ns.map(|s| s.p50_ns)),
            f(ns.map(|s| s.p99_ns)),
            f(ns.map(|s| s.max_ns)),
            ns.map(|s| format!("{:.1}", s.mean_ns)).unwrap_or_default(),
            f(c.map(|c| c.min_cycles)),
            f(c.map(|c| c.p50_cycles)),
            f(c.map(|c| c.p99_cycles)),
            f(c.map(|c| c.max_cycles)),
            c.map(|c| format!("{:.1}", c.mean_cycles))
                .unwrap_or_default(),
            m.overhead.cycles.p50_cycles.to_string(),
            b.overhead_subtracted_cycles.to_string(),
            format!("{:?}", m.clock.counter).to_lowercase(),
            format!("{:.0}", m.clock.counter_hz),
            b.perf.as_ref().map(|p| p.event.clone()).unwrap_or_default(),
            b.perf
                .as_ref()
                .map(|p| format!("{:.1}", p.per_op))
                .unwrap_or_default(),
            b.skipped.clone().unwrap_or_default(),
        ]);
    }
    (header, rows)
}
