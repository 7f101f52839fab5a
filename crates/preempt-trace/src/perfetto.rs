//! Chrome/Perfetto JSON trace export.
//!
//! The [Trace Event Format] (the JSON that `chrome://tracing` and <https://ui.perfetto.dev>
//! open): complete events (`"ph": "X"`, start and duration in µs) for slices, instant events
//! (`"ph": "i"`) for releases, deadlines and misses, and metadata events (`"ph": "M"`) naming
//! processes and threads. Each explained window becomes one track per CPU carrying a slice per
//! cause stretch; a preempt app adds a track per executor thread with its jobs.
//!
//! [Trace Event Format]: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
//!
//! ```
//! use preempt_trace::perfetto::ChromeTrace;
//! let mut t = ChromeTrace::new();
//! t.thread_name(1, 7, "executor prio 3");
//! t.slice((1, 7), "sample_task", "job", 1_000, 3_500, serde_json::json!({}));
//! t.instant((1, 7), "deadline miss", 4_000, serde_json::json!({"late_ns": 500}));
//! let v: serde_json::Value = serde_json::from_str(&t.to_json()).unwrap();
//! assert_eq!(v["traceEvents"].as_array().unwrap().len(), 3);
//! ```

use std::io;
use std::path::Path;

use serde_json::{Value, json};

use crate::attribute::Explanation;

/// Process id used for the per-CPU explanation tracks.
pub(crate) const EXPLAIN_PID: u32 = 1_000_000;

/// A trace being built.
#[derive(Debug, Default)]
pub struct ChromeTrace {
    events: Vec<Value>,
    named_cpus: Vec<usize>,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

impl ChromeTrace {
    /// An empty trace.
    pub fn new() -> ChromeTrace {
        ChromeTrace::default()
    }

    /// Names a process (a track group).
    pub(crate) fn process_name(&mut self, pid: u32, name: &str) {
        self.events.push(
            json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
            "args": {"name": name}}),
        );
    }

    /// Names a thread (a track).
    pub fn thread_name(&mut self, pid: u32, tid: u32, name: &str) {
        self.events.push(
            json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
            "args": {"name": name}}),
        );
    }

    /// A slice `[start_ns, end_ns)` of category `cat` on track `(pid, tid)`.
    pub fn slice(
        &mut self,
        (pid, tid): (u32, u32),
        name: &str,
        cat: &str,
        start_ns: u64,
        end_ns: u64,
        args: Value,
    ) {
        self.events.push(
            json!({"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid,
            "ts": us(start_ns), "dur": us(end_ns.saturating_sub(start_ns)), "args": args}),
        );
    }

    /// An instant event at `ts_ns` on track `(pid, tid)`.
    pub fn instant(&mut self, (pid, tid): (u32, u32), name: &str, ts_ns: u64, args: Value) {
        self.events.push(
            json!({"ph": "i", "s": "t", "name": name, "pid": pid, "tid": tid,
            "ts": us(ts_ns), "args": args}),
        );
    }

    /// Adds one explained window: a slice per cause stretch on the track of its CPU, and the
    /// release and the end as instants. `label` names the late task (e.g. `thread 0 cycle 812`).
    pub fn add_explanation(&mut self, ex: &Explanation, label: &str) {
        if !self.named_cpus.contains(&ex.cpu) {
            if self.named_cpus.is_empty() {
                self.process_name(EXPLAIN_PID, "preempt explain (kernel trace)");
            }
            self.named_cpus.push(ex.cpu);
            self.thread_name(EXPLAIN_PID, ex.cpu as u32, &format!("CPU {}", ex.cpu));
        }
        let tid = ex.cpu as u32;
        self.instant(
            (EXPLAIN_PID, tid),
            &format!("release {label}"),
            ex.release_ns,
            json!({"latency_ns": ex.latency_ns}),
        );
        for s in &ex.segments {
            let c = &ex.causes[s.cause];
            let name = format!("{} {}", c.kind.name(), c.name);
            self.slice(
                (EXPLAIN_PID, tid),
                &name,
                c.kind.name(),
                s.start_ns,
                s.end_ns,
                json!({"pid": c.pid, "task": label, "cause_total_ns": c.ns}),
            );
        }
        self.instant(
            (EXPLAIN_PID, tid),
            &format!("ran {label}"),
            ex.release_ns + ex.latency_ns,
            json!({"latency_ns": ex.latency_ns}),
        );
    }

    /// Number of events so far.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no event was added.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The JSON document.
    pub fn to_json(&self) -> String {
        json!({"traceEvents": self.events, "displayTimeUnit": "ns"}).to_string()
    }

    /// Writes the JSON document to `path` (through a temporary file, so a reader never sees
    /// half a trace).
    ///
    /// # Errors
    /// Whatever creating or renaming the file reports.
    pub fn write(&self, path: &Path) -> io::Result<()> {
        let tmp = path.with_extension("json.partial");
        std::fs::write(&tmp, self.to_json())?;
        std::fs::rename(&tmp, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribute::{Cause, CauseKind, Segment};

    #[test]
    fn an_explanation_becomes_slices_that_tile_the_window() {
        let ex = Explanation {
            cpu: 1,
            release_ns: 10_000,
            latency_ns: 3_000,
            causes: vec![Cause {
                kind: CauseKind::Thread,
                name: "hog".into(),
                pid: Some(42),
                ns: 3_000,
                policy: None,
                priority: None,
                inversion: false,
            }],
            steal_ns: None,
            steal_span_ns: None,
            covered: true,
            throttled: None,
            segments: vec![Segment {
                start_ns: 10_000,
                end_ns: 13_000,
                cause: 0,
            }],
        };
        let mut t = ChromeTrace::new();
        t.add_explanation(&ex, "cycle 5");
        let v: Value = serde_json::from_str(&t.to_json()).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let slice = evs.iter().find(|e| e["ph"] == "X").unwrap();
        assert_eq!(slice["name"], "thread hog");
        assert_eq!(slice["ts"], 10.0);
        assert_eq!(slice["dur"], 3.0);
        assert_eq!(slice["args"]["pid"], 42);
        assert_eq!(evs.iter().filter(|e| e["ph"] == "i").count(), 2);
    }
}
