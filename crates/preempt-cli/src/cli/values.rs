//! clap's view of the configuration enums: their names on the command line and their help.
//!
//! The enums themselves live in [`crate::config`], free of clap; this file is the only place
//! that knows how they are spelled as flag values.

use clap::ValueEnum;
use clap::builder::PossibleValue;

use crate::config::{LoadArg, PolicyArg, SetArg, SourceArg, StressKind, StressTool};

impl ValueEnum for StressKind {
    fn value_variants<'a>() -> &'a [Self] {
        &[Self::Cpu, Self::Memory, Self::Io, Self::Sched, Self::All]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Self::Cpu => PossibleValue::new("cpu").help("One busy-looping thread per CPU"),
            Self::Memory => PossibleValue::new("memory")
                .help("One thread per CPU streaming through a buffer 4x the last-level cache"),
            Self::Io => PossibleValue::new("io")
                .help("A thread writing 1 MiB blocks to a temporary file and fsync-ing each"),
            Self::Sched => PossibleValue::new("sched").help(
                "A hackbench-like storm: groups of threads passing small messages over pipes",
            ),
            Self::All => PossibleValue::new("all").help("All of the above (\"heavy\")"),
        })
    }
}

impl ValueEnum for StressTool {
    fn value_variants<'a>() -> &'a [Self] {
        &[Self::Builtin, Self::StressNg]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Self::Builtin => PossibleValue::new("builtin").help("preempt's own stressors (no external tool needed)"),
            Self::StressNg => PossibleValue::new("stress-ng").help("stress-ng, when installed (same kinds: --cpu, --stream, --hdd, --hackbench... mapped)"),
        })
    }
}

impl ValueEnum for PolicyArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[Self::Other, Self::Fifo, Self::Rr, Self::Deadline]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Self::Other => PossibleValue::new("other").help("SCHED_OTHER (CFS/EEVDF), with --nice"),
            Self::Fifo => PossibleValue::new("fifo").help("SCHED_FIFO, with --priority"),
            Self::Rr => PossibleValue::new("rr").help("SCHED_RR, with --priority"),
            Self::Deadline => PossibleValue::new("deadline")
                .help("SCHED_DEADLINE, with --runtime (and --deadline, --period)"),
        })
    }
}

impl ValueEnum for SourceArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            Self::Eventfd,
            Self::Pipe,
            Self::Timerfd,
            Self::Signal,
            Self::Gpio,
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Self::Eventfd => {
                PossibleValue::new("eventfd").help("eventfd written by another thread")
            }
            Self::Pipe => PossibleValue::new("pipe").help("A pipe written by another thread"),
            Self::Timerfd => PossibleValue::new("timerfd")
                .help("A timerfd armed at an absolute time (the kernel is the trigger)"),
            Self::Signal => PossibleValue::new("signal")
                .help("A real-time signal sent to the thread, taken with sigwaitinfo"),
            Self::Gpio => PossibleValue::new("gpio")
                .help("A GPIO output line looped to an input line (skipped without a gpiochip)"),
        })
    }
}

impl ValueEnum for LoadArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[Self::Idle, Self::Stress, Self::Both]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Self::Idle => PossibleValue::new("idle").help("No load"),
            Self::Stress => PossibleValue::new("stress").help("The --stress stressors"),
            Self::Both => PossibleValue::new("both").help("Idle first, then under stress"),
        })
    }
}

impl ValueEnum for SetArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[Self::Nxp, Self::Zephyr, Self::Framework]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Self::Nxp => PossibleValue::new("nxp")
                .help("NXP (seed 003): heap, mutex, pthread create/join, context switch"),
            Self::Zephyr => PossibleValue::new("zephyr")
                .help("Zephyr (seed 002): semaphore give with and without preemption"),
            Self::Framework => PossibleValue::new("framework")
                .help("The preempt runtime's own primitives (seed 004 section 6.2)"),
        })
    }
}
