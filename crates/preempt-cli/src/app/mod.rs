//! The subcommands: validate the configuration, run, print the terminal report, write the
//! exports. Returns the process exit code (see [`crate::error`]).

pub mod check;
pub mod compare;
pub mod demo;
pub mod history;
pub mod latency;
pub mod matrix;
pub mod micro;
pub mod monitor;
pub mod report;
pub mod rtio_bench;
pub mod run;
pub mod tail;
pub mod uav;
pub mod wakeup;

use std::io::Write;

use anyhow::{Context, Result};
use preempt_io::sys::cpu;

use crate::cli::{Cli, Command};
use crate::error::EXIT_OK;
use crate::export::{Exporter, json::JsonExporter};
use crate::results::ResultFile;
use crate::stress;

/// Runs a parsed command line; `argv` is recorded in the results.
pub fn run(cli: Cli, argv: Vec<String>) -> Result<u8> {
    match cli.command {
        Command::Check(a) => check::run(&a, argv),
        Command::Latency(a) => latency::run(&a, argv),
        Command::Matrix(a) => matrix::run(&a, argv),
        Command::Wakeup(a) => wakeup::run(&a, argv),
        Command::Micro(a) => micro::run(&a, argv),
        Command::RtioBench(a) => rtio_bench::run(&a, argv),
        Command::Report(a) => report::run(&a),
        Command::Compare(a) => compare::run(&a),
        Command::History(a) => history::run(&a),
        Command::Tail(a) => tail::run(&a),
        Command::Run(a) => run::run(&a, argv),
        Command::Monitor(a) => monitor::run(&a, argv),
        Command::Demo(crate::cli::DemoCommand::Gimbal(a)) => demo::run(&a, argv),
        Command::Demo(crate::cli::DemoCommand::Uav(a)) => uav::run(&a, argv),
        Command::GimbalPlant(a) => Ok(preempt_gimbal::plant::main_with_args(&a.args)),
        Command::UavSim(a) => Ok(preempt_uav::sim::main_with_args(&a.args)),
        Command::StressWorker(a) => stress::run_worker(&a.kinds, a.timeout_s).map(|()| EXIT_OK),
    }
}

fn online() -> Result<Vec<usize>> {
    cpu::online_cpus().context("cannot read the online CPUs")
}

fn print_json(file: &ResultFile) -> Result<()> {
    let bytes = JsonExporter.serialize(file)?;
    let mut out = std::io::stdout().lock();
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}
