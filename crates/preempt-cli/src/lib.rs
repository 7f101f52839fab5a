//! The `preempt` command-line tool: is this machine real-time ready, and how late will my
//! loop be?
//!
//! The binary (`src/main.rs`) is a thin shell over this library so that the schema, the
//! statistics and the measurement engines are reusable (by `preempt report`/`compare`, the
//! benches and the tests) and documented:
//!
//! - [`cli`] → [`config`]: raw flags, then validated configurations;
//! - [`check`]: the readiness audit;
//! - [`measure`]: `latency`, `matrix` and `wakeup`, on real threads, clocks and timers;
//! - [`rtio`]: `rtio-bench`, the thread-vs-RTIO IMU benchmark of `preempt-rtio-bench`;
//! - [`stress`]: built-in stressors with a bounded lifetime;
//! - [`stats`]: the allocation-free histogram and percentile summaries;
//! - [`results`] and [`export`]: the one results schema and its JSON/CSV exporters;
//! - [`warnings`], [`error`]: threats to validity and exit codes.
//!
//! All system calls go through `preempt_io::sys`.

pub mod app;
pub mod check;
pub mod cli;
pub mod compare;
pub mod config;
pub mod error;
pub mod export;
pub mod history;
pub mod measure;
pub mod micro;
pub mod procfs;
pub mod progress;
pub mod report;
pub mod results;
pub mod rtio;
pub mod stats;
pub mod stress;
pub mod sysinfo;
pub mod warnings;
