//! `preempt latency`: the cyclictest-like timer wake-up measurement of
//! [`crate::measure::latency`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;

use anyhow::Result;

use super::{online, print_json};
use crate::cli::LatencyArgs;
use crate::config::LatencyConfig;
use crate::error::EXIT_OK;
use crate::export::Sink;
use crate::measure::latency::EnvFacts;
use crate::measure::{self, RtEnvironment};
use crate::progress::Progress;
use crate::results::RunResult;
use crate::session::Session;
use crate::stats::summary::{Summary, us};
use crate::stress::{self, StressGuard};
use crate::warnings::Warning;

fn summary_row(label: &str, s: &Summary) -> String {
    format!(
        "{label:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}  {}",
        s.count,
        us(s.min_ns),
        us(s.p50_ns),
        us(s.p90_ns),
        us(s.p99_ns),
        us(s.p99_9_ns),
        us(s.p99_99_ns),
        us(s.max_ns),
        s.max_cycle.map(|c| format!("#{c}")).unwrap_or_default()
    )
}

const TABLE_HEADER: &str =
    "  thread   samples   min_us   p50_us   p90_us   p99_us p99.9_us p99.99us    max_us  max@cycle";

/// `preempt latency`: measures, prints the table, writes the files, records the history.
pub(crate) fn run(a: &LatencyArgs, argv: Vec<String>) -> Result<u8> {
    let cfg = LatencyConfig::from_args(a, &online()?)?;
    let trace_out = cfg.explain.as_ref().and_then(|e| e.trace_out.as_deref());
    // Before measuring: every output, --trace-out too, is checked (without creating or
    // truncating anything: a refused run leaves an existing file as it was).
    let extra: Vec<&Path> = cfg
        .trace_samples
        .iter()
        .map(PathBuf::as_path)
        .chain(trace_out)
        .collect();
    let mut session = Session::start(
        "latency",
        argv,
        Sink::new(
            cfg.output.export_json.as_deref(),
            cfg.output.export_csv.as_deref(),
        ),
        &extra,
        a.history.config(),
    )?;
    let tracer = match &cfg.explain {
        Some(_) => Some(measure::explain::start(&cfg)?),
        None => None,
    };
    let stop = measure::install_stop_flag()?;
    let env = RtEnvironment::prepare(cfg.rt);
    session.warnings.extend(env.warnings.iter().cloned());
    session.add_machine_warnings(&cfg.cpus);
    let _stress = StressGuard::start(&cfg.stress)?;
    let work_iterations = measure::work::calibrate(cfg.work_ns);
    let facts = EnvFacts {
        mlock: env.memory_locked(),
        dma_latency_us: env.dma_latency_us(),
    };
    announce(&cfg);
    let mut progress = Progress::new("latency", cfg.output.progress);
    let mut partial_error_shown = false;
    let mut outcome = measure::latency::run(
        &cfg,
        work_iterations,
        facts,
        &stop,
        &mut |partial, fraction| {
            progress.update(fraction, "");
            if let Some(p) = partial {
                if !session.writes_files() {
                    return;
                }
                let mut f = session.file(RunResult::Latency(Box::new(p.clone())));
                f.complete = false;
                if let Err(e) = session.write_partial(&f) {
                    if !partial_error_shown {
                        eprintln!("preempt: cannot write partial results: {e:#}");
                        partial_error_shown = true;
                    }
                }
            }
        },
    )?;
    progress.finish();
    let explained = match (&tracer, &cfg.explain) {
        (Some(t), Some(ex)) => {
            measure::explain::explain_run(t, ex, &mut outcome.result, &outcome.samples)
        }
        _ => measure::explain::Explained::default(),
    };
    // Optional outputs fail after the results are saved, never instead of them.
    let mut late_errors: Vec<String> = outcome.trace_error.take().into_iter().collect();
    if let Some(Err(e)) = tracer.map(preempt_trace::Session::finish) {
        // The explanations already made are kept; the fault is said, not hidden.
        let why = format!("kernel tracing failed during the run: {e}");
        outcome.result.explain_skipped = Some(why.clone());
        late_errors.push(format!("--explain: {why}"));
    }
    session.warnings.extend(outcome.warnings.iter().cloned());
    if stop.load(Relaxed) && !session.warnings.contains(&Warning::Interrupted) {
        session.warnings.push(Warning::Interrupted);
    }
    let mut file = session.file(RunResult::Latency(Box::new(outcome.result.clone())));
    file.interrupted = outcome.interrupted;
    if outcome.result.break_event.is_some() {
        file.interrupted_by = Some("--break-at".into());
    }
    // Write the files first: a closed stdout must not lose the measurement.
    let saved = session.save(&file);
    if let (Some(path), Some(trace)) = (trace_out, &explained.trace) {
        if let Err(e) = measure::explain::write_trace_out(path, trace) {
            late_errors.push(format!("{e:#}"));
        }
    }
    session.print_warnings();
    if cfg.output.json_stdout {
        print_json(&file)?;
    } else {
        print_latency(&outcome.result)?;
        let mut out = std::io::stdout().lock();
        for line in &explained.lines {
            writeln!(out, "{line}")?;
        }
    }
    let code = if stop.load(Relaxed) {
        measure::interrupted_exit_code()
    } else {
        EXIT_OK
    };
    exit_after_late_errors(saved, code, late_errors)
}

/// The line that tells machine readers (tests, scripts) that the measurement runs.
fn announce(cfg: &LatencyConfig) {
    eprintln!(
        "preempt: measuring {} thread(s), {}, interval {} us, {} releases each{}",
        cfg.cpus.len(),
        cfg.policy.record.label(),
        cfg.interval_ns / 1_000,
        cfg.releases,
        if cfg.stress.kinds.is_empty() {
            String::new()
        } else {
            format!(", stress {}", stress::label(&cfg.stress))
        }
    );
}

/// The exit code once the results are saved: the optional outputs that failed after them
/// (`--trace-samples`, `--explain`, `--trace-out`) are printed, the last one as the error,
/// unless saving itself failed (then that decides).
fn exit_after_late_errors(
    saved: crate::session::Saved,
    code: u8,
    mut late_errors: Vec<String>,
) -> Result<u8> {
    if saved.error.is_some() || late_errors.is_empty() {
        for e in &late_errors {
            eprintln!("preempt: {e}");
        }
        return saved.exit(code);
    }
    let last = late_errors.pop().unwrap_or_default();
    for e in &late_errors {
        eprintln!("preempt: {e}");
    }
    Err(anyhow::anyhow!(
        "{last} (the run's results were saved before it)"
    ))
}

fn print_latency(r: &crate::results::LatencyResult) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let s = &r.settings;
    writeln!(
        out,
        "policy {}, interval {} us, {} thread(s){}{}",
        s.policy.label(),
        s.interval_ns / 1_000,
        r.threads.len(),
        if s.work_ns > 0 {
            format!(", work {} us", s.work_ns / 1_000)
        } else {
            String::new()
        },
        if s.stress.is_empty() {
            String::new()
        } else {
            format!(", stress {}", s.stress.join(","))
        }
    )?;
    type Pick = fn(&crate::results::ThreadResult) -> Option<&crate::results::Distribution>;
    let sections: [(&str, Pick); 3] = [
        ("wake-up latency (wake - release)", |t| Some(&t.latency)),
        ("response time (done - release)", |t| t.response.as_ref()),
        ("compute step (done - wake)", |t| t.compute.as_ref()),
    ];
    for (title, get) in sections {
        if r.threads.iter().all(|t| get(t).is_none()) {
            continue;
        }
        writeln!(out, "{title}:\n{TABLE_HEADER}")?;
        for (i, t) in r.threads.iter().enumerate() {
            if let Some(d) = get(t) {
                let label = t.cpu.map_or(format!("#{i}"), |c| format!("cpu{c}"));
                writeln!(out, "{}", summary_row(&label, &d.summary))?;
            }
        }
        if title.starts_with("wake") && r.threads.len() > 1 {
            writeln!(out, "{}", summary_row("all", &r.latency_all))?;
        }
    }
    let missed: u64 = r.threads.iter().map(|t| t.missed_periods).sum();
    let dl: u64 = r.threads.iter().map(|t| t.deadline_misses).sum();
    let releases: u64 = r.threads.iter().map(|t| t.releases).sum();
    let faults: u64 = r
        .threads
        .iter()
        .map(|t| t.minor_faults + t.major_faults)
        .sum();
    writeln!(
        out,
        "releases {releases}, missed periods {missed}, deadline misses {dl}, page faults in loop {faults}"
    )?;
    writeln!(
        out,
        "tool overhead: clock read p50 {} ns, max {} ns (resolution {} ns)",
        r.overhead.clock_read.p50_ns, r.overhead.clock_read.max_ns, r.overhead.clock_resolution_ns
    )?;
    if let Some(b) = &r.break_event {
        writeln!(
            out,
            "break-at: thread {} cycle {} latency {} us{}",
            b.thread,
            b.cycle,
            us(b.latency_ns),
            if b.tracing_stopped {
                " (tracing stopped; read it with trace-cmd show)"
            } else {
                ""
            }
        )?;
    }
    writeln!(out, "verdict: {}", r.ledger.verdict)?;
    out.flush()?;
    Ok(())
}
