//! `preempt tail`: how long to run (`--plan`), and what a run says about `P(latency > D)`.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::cli::TailArgs;
use crate::error::{EXIT_OK, usage};
use crate::tail;

/// `preempt tail`: returns the exit code.
pub fn run(args: &TailArgs) -> Result<u8> {
    let mut out = std::io::stdout().lock();
    if let Some(text) = &args.plan {
        if args.deadline.is_some() || args.rate.is_some() {
            return Err(usage(
                "--plan takes its rate in P@RATE (e.g. --plan 1e-9@1kHz) and no --deadline; \
                 drop --deadline/--rate",
            ));
        }
        let (p, rate) = tail::parse_plan(text)?;
        let plan = tail::plan(p, rate)?;
        if args.json {
            #[derive(Serialize)]
            struct Doc<'a> {
                plan: &'a tail::PlanReport,
            }
            serde_json::to_writer_pretty(&mut out, &Doc { plan: &plan })?;
            writeln!(out)?;
        } else {
            out.write_all(tail::render_plan(&plan).as_bytes())?;
        }
        out.flush()?;
        return Ok(EXIT_OK);
    }
    let Some(path) = &args.input else {
        return Err(usage(
            "give a FILE of latencies (and --deadline) or --plan P@RATE, e.g. preempt tail \
             --plan 1e-9@1kHz",
        ));
    };
    let Some(deadline) = &args.deadline else {
        return Err(usage(format!(
            "preempt tail {} needs --deadline D (e.g. --deadline 100us): the statement is about \
             P(latency > D)",
            path.display()
        )));
    };
    let deadline_ns = tail::parse_deadline_ns(deadline)?;
    let rate = args
        .rate
        .as_deref()
        .map(|r| tail::parse_rate_hz(r, "--rate"))
        .transpose()?;
    let observed = tail::read_input(path, deadline_ns)?;
    let statement = tail::distribution_free(&observed, deadline_ns, rate)?;
    if args.json {
        #[derive(Serialize)]
        struct Doc<'a> {
            distribution_free: &'a tail::DistributionFree,
        }
        serde_json::to_writer_pretty(
            &mut out,
            &Doc {
                distribution_free: &statement,
            },
        )?;
        writeln!(out)?;
    } else {
        out.write_all(tail::render(&statement).as_bytes())?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}
