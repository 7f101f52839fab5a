//! The printed table and the JSON document (units in field names). `schema_version` 2 added
//! the bus, io-wq workers and bus transfers per sample; 3 adds `complete` and `interrupted`
//! (the file is rewritten after every cell, and Ctrl-C keeps the cells that finished); 4
//! writes a sweep's trials as objects (`{work_us, missed_events}`), the form `preempt
//! rtio-bench` stores.
//!
//! The result types deserialize too: the `preempt` CLI stores them as they are in its own
//! result files (`kind: "rtio_bench"`) rather than a copy of them.

use serde::{Deserialize, Serialize};

use crate::cell::CellResult;

/// Schema version of the JSON output.
pub const SCHEMA_VERSION: u32 = 4;

/// One `--work-us` trial of a sweep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trial {
    /// Per-sample compute load tried.
    pub work_us: u32,
    /// Events missed with it.
    pub missed_events: u64,
}

/// One sweep's outcome for one design.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakPoint {
    /// The design's label ([`Design::label`](crate::cell::Design::label)): "thread",
    /// "pipelined", "rtio", "rtio-serial" or "rtio-coalesced".
    pub design: String,
    /// "spi", "spi-txn" or "memfd".
    pub bus: String,
    /// IMU ODR of the sweep.
    pub odr_hz: u32,
    /// Extra streams of the sweep.
    pub extra_streams: String,
    /// Largest --work-us with zero missed events.
    pub max_sustained_work_us: Option<u32>,
    /// Smallest --work-us that missed events.
    pub first_missing_work_us: Option<u32>,
    /// Every trial in order; a workload that missed is run a second time and counts as
    /// missing only if the retry misses too.
    pub trials: Vec<Trial>,
}

/// Machine and run description.
#[derive(Clone, Debug, Serialize)]
pub struct SysInfo {
    /// uname -a style.
    pub uname: String,
    /// `/sys/kernel/realtime` (None: absent).
    pub kernel_realtime: Option<String>,
    /// `kernel.io_uring_disabled`.
    pub io_uring_disabled: Option<u8>,
    /// Command line.
    pub argv: Vec<String>,
    /// Online CPUs.
    pub cpus: usize,
}

/// The whole JSON document.
#[derive(Clone, Debug, Serialize)]
pub struct Document {
    /// Schema version.
    pub schema_version: u32,
    /// "rtio-bench".
    pub tool: &'static str,
    /// Machine.
    pub sysinfo: SysInfo,
    /// `false` in the snapshots handed out (and written with `--json`) after every finished
    /// cell while the run goes on; `true` once the run has ended, interrupted or not.
    pub complete: bool,
    /// The run was stopped early (Ctrl-C / SIGTERM): `cells` and `sweep` hold what finished,
    /// and a note says where it stopped.
    pub interrupted: bool,
    /// Table cells.
    pub cells: Vec<CellResult>,
    /// Sweep break points.
    pub sweep: Vec<BreakPoint>,
    /// Caveats.
    pub notes: Vec<String>,
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// Formats the table: one row per cell, grouped by (bus, ODR, extra streams), the designs of a
/// group one under the other. `xbest` is the cell's process CPU per frame over the best
/// (lowest) thread design's (thread, pipelined) in its group: the issue-16 goal is RTIO ≤ 1.00.
pub fn table(cells: &[CellResult]) -> String {
    let mut out = String::new();
    out.push_str(
        "bus   ODR   extra    design      | CPU%  proc% us/frame xbest | lat p50/p99/max us    | jitter pp/sigma us | missed cs/frame iou-wrk\n",
    );
    let mut keys: Vec<(String, u32, String)> = Vec::new();
    for c in cells {
        let k = (c.bus.clone(), c.odr_hz, c.extra_streams.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (bus, odr, extra) in keys {
        let group: Vec<&CellResult> = cells
            .iter()
            .filter(|c| c.bus == bus && c.odr_hz == odr && c.extra_streams == extra)
            .collect();
        let best_thread = group
            .iter()
            .filter(|c| c.design == "thread" || c.design == "pipelined")
            .map(|c| c.process_cpu_per_sample_ns)
            .fold(f64::INFINITY, f64::min);
        for c in group {
            let lat = format!(
                "{}/{}/{}{}",
                us(c.latency_p50_ns),
                us(c.latency_p99_ns),
                us(c.latency_max_ns),
                if c.missed() { "*" } else { "" }
            );
            let xbest = if best_thread.is_finite() && best_thread > 0.0 {
                format!("{:.2}", c.process_cpu_per_sample_ns / best_thread)
            } else {
                "-".into()
            };
            out.push_str(&format!(
                "{bus:<5} {odr:<5} {extra:<8} {:<11} | {:>5.1} {:>5.1} {:>8.2} {:>5} | {:>21} | {:>18} | {:>6} {:>9.2} {:>7}\n",
                c.design,
                c.consumer_cpu_load_pct,
                c.process_cpu_pct,
                c.process_cpu_per_sample_ns / 1000.0,
                xbest,
                lat,
                format!("{}/{}", us(c.jitter_pp_ns), us(c.jitter_sigma_ns as u64)),
                c.missed_total(),
                c.context_switches_per_sample,
                if c.rtio_backend.is_some() {
                    c.iowq_workers.to_string()
                } else {
                    "-".into()
                },
            ));
        }
    }
    out.push_str("(* = the design missed events in this cell: the talk's \"Missing events\")\n");
    out
}
