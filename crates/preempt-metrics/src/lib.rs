//! Fleet monitoring for preempt: the figures of a running monitor or app as Prometheus /
//! OpenMetrics metrics, served over HTTP from a non-real-time thread.
//!
//! - [`monitor`]: the `preempt monitor` engine, one `SCHED_FIFO` measuring thread per CPU
//!   (`preempt latency`'s method) with bounded bookkeeping, as a scrape-time collector;
//! - [`http`]: the `/metrics` server (404/405 for bad requests; a slow client never blocks
//!   anything but its own connection);
//! - [`expo`]: writing families with the maintained `prometheus-client` encoder;
//! - [`buckets`]: log-spaced bucket bounds in seconds, filled from a `preempt-stats`
//!   histogram; [`window`]: a lock-free sliding-window maximum. Steal time comes from
//!   [`preempt_io::sys::procstat`], the project's one `/proc/stat` reader.
//!
//! ```no_run
//! use std::sync::Arc;
//! use preempt_metrics::{http::Server, monitor::{Monitor, MonitorConfig}};
//! use prometheus_client::registry::Registry;
//!
//! let monitor = Monitor::start(MonitorConfig::new(vec![0, 1]), None)?;
//! let mut registry = Registry::default();
//! registry.register_collector(monitor.collector());
//! let server = Server::start("127.0.0.1:9464", Arc::new(registry))?;
//! // ... scrape http://127.0.0.1:9464/metrics ...
//! # Ok::<(), std::io::Error>(())
//! ```

pub mod buckets;
pub mod expo;
pub mod http;
pub mod monitor;
pub mod window;
