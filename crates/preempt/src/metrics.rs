//! App metrics over HTTP: `#[preempt::app(metrics = "127.0.0.1:9465")]` or
//! `PREEMPT_METRICS=<addr>` serves every task's accounting at `http://<addr>/metrics` in the
//! Prometheus / OpenMetrics text format, for a fleet's Prometheus to scrape.
//!
//! # Nothing is added to the real-time path
//! The figures are the ones the executors already record for `app::stats()` (atomic counters
//! and [`preempt_stats`] histograms written by their single writer). A scrape runs on the
//! server's own `SCHED_OTHER` thread ([`preempt_metrics::http`]) and takes a snapshot, as
//! `app::stats()` does from any thread: it reads the atomics, allocates on *its* thread, and
//! shares no lock with an executor. A slow or stuck client holds only its own connection.
//! `tests/runtime_metrics.rs` checks that the executor threads allocate nothing while being
//! scraped; `benches/metrics.rs` compares a periodic task with metrics on and off.
//!
//! # What is served (labels `app`, `task`)
//! | metric | kind |
//! |---|---|
//! | `preempt_task_releases_total`, `_completions_total`, `_skipped_releases_total`, `_deadline_misses_total` | counters |
//! | `preempt_task_release_latency_seconds`, `preempt_task_execution_time_seconds` | histograms (log-spaced buckets, [`preempt_metrics::buckets`]) |
//! | `preempt_task_execution_time_{min,mean,max}_seconds`, `preempt_task_response_time_max_seconds` | gauges (exact) |
//! | `preempt_app_schedulable` | gauge: 1 when the response-time analysis of the measured figures says every deadline holds, 0 when not |
//! | `preempt_task_rta_response_bound_seconds`, `preempt_task_rta_margin_seconds` | gauges per task |
//! | `preempt_app_rta_error` | gauge 1 with a `reason` when the analysis cannot be run (e.g. a task never released) |
//!
//! The environment variable wins over the macro argument, so an operator can move the port
//! (or turn it on) without a rebuild; an address that cannot be bound stops the app before
//! `init` with the reason, so nothing is lost.

use std::fmt;
use std::io;
use std::sync::Arc;

use preempt_metrics::expo::{self, Labels, seconds};
use preempt_metrics::http::Server;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use preempt_stats::histogram::HistogramSnapshot;
use preempt_stats::rta::Report;
use preempt_stats::task_stats::TaskSnapshot;

/// The environment variable with the address to serve the app's metrics on.
pub const METRICS_ENV: &str = "PREEMPT_METRICS";

/// The address to serve on: `PREEMPT_METRICS` if set and not empty, else the macro's.
pub(crate) fn address(configured: Option<&'static str>) -> Option<String> {
    match std::env::var(METRICS_ENV) {
        Ok(a) if !a.trim().is_empty() => Some(a.trim().to_string()),
        _ => configured.map(str::to_string),
    }
}

/// What a scrape shows: the app's name, its tasks' records and the analysis (or why it
/// could not run). The runtime builds it from `app::stats()` (this module sits below the
/// runtime and knows nothing of it).
#[derive(Debug, Clone)]
pub(crate) struct Figures {
    /// The app module's name.
    pub(crate) app: String,
    /// Every task's record.
    pub(crate) tasks: Vec<TaskSnapshot>,
    /// The response-time analysis of the measured figures.
    pub(crate) rta: Result<Report, String>,
}

/// Reads the figures at scrape time.
pub(crate) type Source = Box<dyn Fn() -> Figures + Send + Sync>;

/// Starts serving the figures of `source` on `addr` (on the server's own threads).
pub(crate) fn serve(source: Source, addr: &str) -> io::Result<Server> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(AppCollector(source)));
    Server::start(addr, Arc::new(registry))
}

struct AppCollector(Source);

impl fmt::Debug for AppCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AppCollector")
    }
}

impl Collector for AppCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> fmt::Result {
        encode_figures(&(self.0)(), &mut enc)
    }
}

/// A per-task family: name, help, and the value of a task (`None`: no series for it).
type Family<'a> = (&'a str, &'a str, &'a dyn Fn(&TaskSnapshot) -> Option<f64>);

/// A per-task histogram family: name, help, and the task's histogram.
type HistogramFamily<'a> = (&'a str, &'a str, fn(&TaskSnapshot) -> &HistogramSnapshot);

/// Writes an app's statistics as metric families.
pub(crate) fn encode_figures(stats: &Figures, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let app = Labels::from([("app", stats.app.as_str())]);
    let label = |t: &TaskSnapshot| app.with("task", t.name.clone());
    let per_task = |f: &dyn Fn(&TaskSnapshot) -> Option<f64>| -> Vec<(Labels, f64)> {
        stats
            .tasks
            .iter()
            .filter_map(|t| f(t).map(|v| (label(t), v)))
            .collect()
    };
    let s = Some(&Unit::Seconds);
    let counters: [Family<'_>; 4] = [
        ("preempt_task_releases", "Jobs started", &|t| {
            Some(t.releases as f64)
        }),
        ("preempt_task_completions", "Jobs that returned", &|t| {
            Some(t.completions as f64)
        }),
        (
            "preempt_task_skipped_releases",
            "Releases dropped by the overrun policy",
            &|t| Some(t.skipped_releases as f64),
        ),
        (
            "preempt_task_deadline_misses",
            "Jobs that ended after their deadline",
            &|t| Some(t.deadline_misses as f64),
        ),
    ];
    for (name, help, f) in counters {
        expo::scalars(enc, name, help, None, MetricType::Counter, &per_task(f))?;
    }
    let histograms: [HistogramFamily<'_>; 2] = [
        (
            "preempt_task_release_latency",
            "Release latency: job start - scheduled release",
            |t| &t.release_latency,
        ),
        (
            "preempt_task_execution_time",
            "Execution time per job (CPU time when measured, else end - start)",
            |t| &t.execution_time,
        ),
    ];
    for (name, help, of) in histograms {
        let series: Vec<_> = stats.tasks.iter().map(|t| (label(t), of(t))).collect();
        expo::histogram_seconds(enc, name, help, &series)?;
    }
    let gauges: [Family<'_>; 4] = [
        (
            "preempt_task_execution_time_min",
            "Shortest execution time",
            &|t| t.exec_min_ns.map(seconds),
        ),
        (
            "preempt_task_execution_time_mean",
            "Mean execution time",
            &|t| t.exec_mean_ns.map(|ns| ns / 1e9),
        ),
        (
            "preempt_task_execution_time_max",
            "Longest execution time (the measured WCET)",
            &|t| t.exec_max_ns.map(seconds),
        ),
        (
            "preempt_task_response_time_max",
            "Longest response time: end - scheduled release",
            &|t| t.response_max_ns.map(seconds),
        ),
    ];
    for (name, help, f) in gauges {
        expo::scalars(enc, name, help, s, MetricType::Gauge, &per_task(f))?;
    }
    match &stats.rta {
        Ok(report) => {
            let verdict = [(app.clone(), if report.schedulable() { 1.0 } else { 0.0 })];
            expo::scalars(
                enc,
                "preempt_app_schedulable",
                "Response-time analysis of the measured figures: 1 every deadline holds, 0 not",
                None,
                MetricType::Gauge,
                &verdict,
            )?;
            let bound: Vec<_> = report
                .tasks
                .iter()
                .map(|t| (app.with("task", t.name.clone()), seconds(t.response_ns)))
                .collect();
            expo::scalars(
                enc,
                "preempt_task_rta_response_bound",
                "Worst-case response time bound from the analysis",
                s,
                MetricType::Gauge,
                &bound,
            )?;
            let margin: Vec<_> = report
                .tasks
                .iter()
                .map(|t| (app.with("task", t.name.clone()), t.margin_ns as f64 / 1e9))
                .collect();
            expo::scalars(
                enc,
                "preempt_task_rta_margin",
                "Deadline - response bound (negative: the bound misses)",
                s,
                MetricType::Gauge,
                &margin,
            )
        }
        Err(e) => expo::scalars(
            enc,
            "preempt_app_rta_error",
            "The response-time analysis could not run; reason says why",
            None,
            MetricType::Gauge,
            &[(app.with("reason", e.clone()), 1.0)],
        ),
    }
}
