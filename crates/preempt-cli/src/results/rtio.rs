//! `kind: "rtio_bench"`: the results of `preempt rtio-bench` (the Zephyr RTIO talk's table,
//! thread-based vs RTIO-based IMU reading, measured by `preempt-rtio-bench`).
//!
//! The benchmark crate writes its own document (`preempt_rtio_bench::report::Document`, its
//! own `schema_version`). This module puts its results into preempt's one results schema,
//! inside a [`ResultFile`](super::ResultFile), so `preempt report`, `preempt compare` and the
//! history read them like any other run: a cell is the benchmark's own `CellResult` and a
//! sweep's break point its own `BreakPoint` (both deserialize), stored as they are, with
//! the run's settings and the benchmark's notes around them. The designs are the
//! benchmark's (`thread`, `pipelined`, `rtio`, `rtio-serial`, `rtio-coalesced`).
//!
//! ```
//! use preempt_cli::results::rtio::{RtioBenchResult, RtioCell};
//! let cell = RtioCell { odr_hz: 6400, extra_streams: "2@400Hz".into(), design: "rtio".into(),
//!     missed_events: 0, fifo_full_drops: 3, ..RtioCell::default() };
//! assert_eq!(cell.missed_total(), 3);
//! let r = RtioBenchResult { cells: vec![cell], ..RtioBenchResult::default() };
//! assert_eq!(r.rows()[0], ("".to_string(), 6400, "2@400Hz".to_string()));
//! ```

use serde::{Deserialize, Serialize};

use preempt_rtio_bench::report::Document;

/// The settings a run used (after the benchmark's own validation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtioSettings {
    /// `table` (the talk's rows) or `sweep` (break points under `--work-us`).
    pub mode: String,
    /// Measurement window of each cell.
    pub duration_per_cell_ns: u64,
    /// Per-sample compute load of the table (`--work-us`; the sweep varies it).
    pub work_us: u32,
    /// IMU output data rates run (`--odr`).
    pub odrs_hz: Vec<u32>,
    /// Register buses run: `spi`, `spi-txn`, `memfd` (`--bus`).
    pub buses: Vec<String>,
    /// SPI bus time per byte (`--bus-ns-per-byte`).
    pub bus_ns_per_byte: u32,
    /// CPU of the consumer (both designs).
    pub consumer_cpu: usize,
    /// CPU of the simulator.
    pub sim_cpu: usize,
    /// SCHED_FIFO priority of the consumer (the simulator runs one above).
    pub priority: u8,
    /// RTIO backend requested: `auto`, `io_uring` or `epoll` (the one used is in each RTIO
    /// cell's `rtio_backend`).
    pub backend: String,
}

/// One cell of the table: one design at one ODR with one set of extra streams on one bus.
/// The benchmark's own cell type, serialized and read back as is (one type, one place).
pub use preempt_rtio_bench::cell::CellResult as RtioCell;

/// One design's break point under `--sweep`, and one `--work-us` trial of it: the
/// benchmark's own types.
pub use preempt_rtio_bench::report::{BreakPoint as RtioBreakPoint, Trial as RtioTrial};

/// `preempt rtio-bench` results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RtioBenchResult {
    /// `schema_version` of the benchmark document the cells were taken from.
    pub bench_schema_version: u32,
    /// Settings of the run.
    pub settings: RtioSettings,
    /// `kernel.io_uring_disabled` (`null` on kernels before 6.6).
    pub io_uring_disabled: Option<u8>,
    /// Table cells (empty in sweep mode), in run order: bus, ODR, extra streams, design.
    pub cells: Vec<RtioCell>,
    /// Sweep break points (empty in table mode).
    pub sweep: Vec<RtioBreakPoint>,
    /// The benchmark's caveats (method, load average at the end, ...).
    pub notes: Vec<String>,
}

impl RtioBenchResult {
    /// The table's rows, `(bus, ODR, extra streams)`, in first-seen order.
    pub fn rows(&self) -> Vec<(String, u32, String)> {
        let mut keys: Vec<(String, u32, String)> = Vec::new();
        for c in &self.cells {
            let k = (c.bus.clone(), c.odr_hz, c.extra_streams.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys
    }

    /// The cell of `design` in row `(bus, odr, extra)`.
    pub fn cell(&self, bus: &str, odr: u32, extra: &str, design: &str) -> Option<&RtioCell> {
        self.cells.iter().find(|c| {
            c.bus == bus && c.odr_hz == odr && c.extra_streams == extra && c.design == design
        })
    }

    /// Adds the cells, break points and notes of one benchmark document (one call of
    /// `preempt_rtio_bench::run`); notes already present are not repeated.
    pub(crate) fn absorb(&mut self, doc: &Document) {
        let Document {
            schema_version,
            tool: _,
            sysinfo,
            // The result file's own `complete` and `interrupted` say this for the whole run
            // (set by `preempt rtio-bench`); where a benchmark call stopped is in its notes.
            complete: _,
            interrupted: _,
            cells,
            sweep,
            notes,
        } = doc;
        self.bench_schema_version = *schema_version;
        self.io_uring_disabled = sysinfo.io_uring_disabled;
        self.cells.extend(cells.iter().cloned());
        self.sweep.extend(sweep.iter().cloned());
        for n in notes {
            // The load average changes between calls: keep the latest only.
            if n.starts_with("load average") {
                self.notes.retain(|x| !x.starts_with("load average"));
            }
            if !self.notes.contains(n) {
                self.notes.push(n.clone());
            }
        }
    }

    /// A one-line headline (history listings, logs).
    pub fn headline(&self) -> String {
        if !self.sweep.is_empty() {
            return self
                .sweep
                .iter()
                .map(|b| {
                    format!(
                        "{} {} sustains {} us",
                        b.bus,
                        b.design,
                        b.max_sustained_work_us
                            .map_or("-".into(), |w| w.to_string())
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
        }
        // Every design the run had, in run order.
        let mut designs: Vec<&str> = Vec::new();
        for c in &self.cells {
            if !designs.contains(&c.design.as_str()) {
                designs.push(&c.design);
            }
        }
        let missed = designs
            .iter()
            .map(|d| {
                let n: u64 = self
                    .cells
                    .iter()
                    .filter(|c| c.design == *d)
                    .map(RtioCell::missed_total)
                    .sum();
                format!("{d} {n}")
            })
            .collect::<Vec<_>>()
            .join(" / ");
        format!("{} cells, missed events {missed}", self.cells.len())
    }
}

impl RtioBenchResult {
    /// The result as one CSV table (header, rows): one row per cell, or per break point for a
    /// sweep; units in the column names.
    pub fn csv_table(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        if self.cells.is_empty() && !self.sweep.is_empty() {
            let header = vec![
                "bus",
                "odr_hz",
                "extra_streams",
                "design",
                "max_sustained_work_us",
                "first_missing_work_us",
                "trials",
            ];
            let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
            let rows = self
                .sweep
                .iter()
                .map(|b| {
                    vec![
                        b.bus.clone(),
                        b.odr_hz.to_string(),
                        b.extra_streams.clone(),
                        b.design.clone(),
                        opt(b.max_sustained_work_us),
                        opt(b.first_missing_work_us),
                        b.trials.len().to_string(),
                    ]
                })
                .collect();
            return (header, rows);
        }
        let header = vec![
            "bus",
            "odr_hz",
            "extra_streams",
            "design",
            "work_us",
            "consumer_cpu_load_pct",
            "process_cpu_pct",
            "process_cpu_per_sample_ns",
            "latency_p50_ns",
            "latency_p99_ns",
            "latency_max_ns",
            "jitter_pp_ns",
            "jitter_sigma_ns",
            "missed_events",
            "fifo_full_drops",
            "context_switches_per_sample",
            "sim_overruns",
            "rtio_backend",
        ];
        let rows = self
            .cells
            .iter()
            .map(|c| {
                vec![
                    c.bus.clone(),
                    c.odr_hz.to_string(),
                    c.extra_streams.clone(),
                    c.design.clone(),
                    c.work_us.to_string(),
                    format!("{:.2}", c.consumer_cpu_load_pct),
                    format!("{:.2}", c.process_cpu_pct),
                    format!("{:.0}", c.process_cpu_per_sample_ns),
                    c.latency_p50_ns.to_string(),
                    c.latency_p99_ns.to_string(),
                    c.latency_max_ns.to_string(),
                    c.jitter_pp_ns.to_string(),
                    format!("{:.1}", c.jitter_sigma_ns),
                    c.missed_events.to_string(),
                    c.fifo_full_drops.to_string(),
                    format!("{:.3}", c.context_switches_per_sample),
                    c.sim_overruns.to_string(),
                    c.rtio_backend.clone().unwrap_or_default(),
                ]
            })
            .collect();
        (header, rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use preempt_rtio_bench::report::{BreakPoint, SysInfo as BenchSysInfo, Trial};

    fn bench_cell(design: &str, missed: u64) -> RtioCell {
        RtioCell {
            odr_hz: 6400,
            extra_streams: "2@400Hz".into(),
            design: design.into(),
            bus: "spi".into(),
            latency_p99_ns: 296_800,
            missed_events: missed,
            ..RtioCell::default()
        }
    }

    fn doc(cells: Vec<RtioCell>, load: &str) -> Document {
        Document {
            schema_version: 2,
            tool: "rtio-bench",
            sysinfo: BenchSysInfo {
                uname: "Linux".into(),
                kernel_realtime: None,
                io_uring_disabled: Some(0),
                argv: vec!["preempt".into(), "rtio-bench".into()],
                cpus: 2,
            },
            complete: true,
            interrupted: false,
            cells,
            sweep: vec![BreakPoint {
                design: "rtio".into(),
                bus: "spi".into(),
                odr_hz: 6400,
                extra_streams: "2@400Hz".into(),
                max_sustained_work_us: Some(127),
                first_missing_work_us: Some(128),
                trials: [(0, 0), (128, 5), (128, 3)]
                    .map(|(work_us, missed_events)| Trial {
                        work_us,
                        missed_events,
                    })
                    .to_vec(),
            }],
            notes: vec!["latency = stored -> processed".into(), load.into()],
        }
    }

    #[test]
    fn documents_convert_field_for_field_and_round_trip_through_json() {
        let mut r = RtioBenchResult::default();
        r.absorb(&doc(
            vec![bench_cell("thread", 312), bench_cell("rtio", 0)],
            "load average at the end of the run: 1.0",
        ));
        r.absorb(&doc(vec![], "load average at the end of the run: 2.0"));
        assert_eq!((r.bench_schema_version, r.io_uring_disabled), (2, Some(0)));
        assert_eq!(r.cells.len(), 2);
        assert_eq!(r.cells[0].latency_p99_ns, 296_800);
        assert_eq!(
            r.cell("spi", 6400, "2@400Hz", "thread")
                .unwrap()
                .missed_total(),
            312
        );
        assert_eq!(r.sweep.len(), 2, "one break point per absorbed document");
        assert_eq!(
            r.sweep[0].trials[1],
            RtioTrial {
                work_us: 128,
                missed_events: 5
            }
        );
        assert_eq!(
            r.notes,
            vec![
                "latency = stored -> processed".to_string(),
                "load average at the end of the run: 2.0".to_string()
            ]
        );
        // The benchmark's own JSON and ours carry the same numbers under the same names.
        let theirs = serde_json::to_value(bench_cell("rtio", 0)).unwrap();
        let ours = serde_json::to_value(&r.cells[1]).unwrap();
        assert_eq!(theirs, ours);
        let back: RtioBenchResult =
            serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn headline_names_missed_events_of_every_design_or_break_points() {
        let mut r = RtioBenchResult {
            cells: vec![
                bench_cell("thread", 312),
                bench_cell("pipelined", 40),
                bench_cell("rtio", 0),
                bench_cell("rtio-coalesced", 2),
            ],
            ..RtioBenchResult::default()
        };
        assert_eq!(
            r.headline(),
            "4 cells, missed events thread 312 / pipelined 40 / rtio 0 / rtio-coalesced 2"
        );
        r.absorb(&doc(vec![], "load average: 0"));
        assert_eq!(r.headline(), "spi rtio sustains 127 us");
    }
}
