//! The `preempt` command-line tool: is this machine real-time ready, and how late will my
//! loop be?
//!
//! The binary (`src/main.rs`) is a thin shell over this library so that the schema, the
//! statistics and the measurement engines are reusable (by `preempt report`/`compare`, the
//! benches and the tests) and documented. Modules import only downward (checked with
//! `module-cycles crates/preempt-cli/src`), from the bottom:
//!
//! 1. [`results`] (every kind's schema, the readers of every input incl. cyclictest), [`stats`],
//!    [`error`], [`procfs`], [`virt`] (is the machine virtual or emulated), [`progress`];
//!    [`export`] (JSON/CSV writers of the schema);
//! 2. [`warnings`], [`sysinfo`]: threats to validity and the machine's description;
//! 3. [`config`]: validated configurations, free of clap; [`stress`]: bounded stressors;
//! 4. engines: [`check`], [`measure`] (`latency`, `matrix`, `wakeup`), [`micro`], [`rtio`],
//!    [`tail`] (distribution-free tail statements);
//! 5. [`history`]: the SQLite store of runs;
//! 6. presentation: [`report`] (HTML, plots, one section per kind), then [`compare`];
//! 7. [`session`]: the one run session of every measuring subcommand (outputs checked before
//!    measuring, system info, warnings, result file, fallback, history);
//! 8. [`cli`]: every clap struct and every raw-args → config conversion;
//! 9. [`app`]: one file per subcommand, dispatched by [`app::run`](fn@app::run) (called by `main`).
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
pub mod session;
pub mod stats;
pub mod stress;
pub mod sysinfo;
pub mod tail;
pub mod virt;
pub mod warnings;
