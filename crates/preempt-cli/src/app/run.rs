//! `preempt run`: the default suite, a new user's first command. Runs `check`, `latency` idle
//! and under the built-in stress, `wakeup` and `micro`, with one progress bar, writes the JSON
//! of each step into `preempt-report/`, and draws `preempt-report/index.html` from those files.
//!
//! | preset    | latency (each of idle, stress) | wakeup samples per case | micro sample scale | about |
//! |-----------|--------------------------------|-------------------------|--------------------|-------|
//! | `--quick` | 5 s                            | 500                     | 0.1                | 30 s  |
//! | default   | 30 s                           | 3 000                   | 1 (the seeds')     | 2 min |
//! | `--long`  | 5 min                          | 30 000                  | 4                  | 12 min |
//!
//! It needs nothing but the binary: stress is built in, and without real-time privileges the
//! latency runs fall back to SCHED_OTHER (and say so) instead of failing. A failed step is
//! reported and the others still run; the report shows what was measured.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use anyhow::{Context, Result};
use preempt_io::sys::cpu;

use crate::check;
use crate::cli::{HistoryArgs, LatencyArgs, OutputArgs, RtArgs, RunArgs, StressArgs};
use crate::config::{
    LatencyConfig, PolicyArg, RtConfig, SetArg, SourceArg, StressConfig, StressKind, StressTool,
};
use crate::error::{EXIT_FAILURE, EXIT_OK, usage};
use crate::measure::latency::EnvFacts;
use crate::measure::{self, RtEnvironment, wakeup};
use crate::micro::{self, MicroConfig};
use crate::progress::Progress;
use crate::results::{ResultFile, RunResult};
use crate::session::Session;
use crate::stress::StressGuard;
use crate::warnings::Warning;

/// Durations and sample counts of a preset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Preset {
    /// Name.
    pub name: &'static str,
    /// Duration of each latency run, seconds.
    pub latency_s: u64,
    /// Latency period, µs.
    pub interval_us: u64,
    /// Wake-ups per source and load.
    pub wakeup_samples: u64,
    /// Gap between wake-up triggers, µs.
    pub wakeup_interval_us: u64,
    /// `micro --scale`.
    pub micro_scale: f64,
}

impl Preset {
    /// The preset the flags select.
    pub(crate) fn of(a: &RunArgs) -> Self {
        if a.quick {
            Self {
                name: "quick",
                latency_s: 5,
                interval_us: 1_000,
                wakeup_samples: 500,
                wakeup_interval_us: 1_000,
                micro_scale: 0.1,
            }
        } else if a.long {
            Self {
                name: "long",
                latency_s: 300,
                interval_us: 1_000,
                wakeup_samples: 30_000,
                wakeup_interval_us: 1_000,
                micro_scale: 4.0,
            }
        } else {
            Self {
                name: "default",
                latency_s: 30,
                interval_us: 1_000,
                wakeup_samples: 3_000,
                wakeup_interval_us: 1_000,
                micro_scale: 1.0,
            }
        }
    }

    /// Estimated seconds of each step, for the progress bar: check, latency idle, latency
    /// stress, wakeup (4 sources + gpio × 2 loads), micro, report.
    pub(crate) fn weights(&self) -> [f64; 6] {
        let wake = 8.0 * self.wakeup_samples as f64 * self.wakeup_interval_us as f64 / 1e6;
        [
            1.0,
            self.latency_s as f64,
            self.latency_s as f64 + 1.0,
            wake + 2.0,
            3.0 + 8.0 * self.micro_scale,
            2.0,
        ]
    }
}

/// The files of a suite run, relative to the output directory.
pub(crate) const FILES: [&str; 5] = [
    "check.json",
    "latency-idle.json",
    "latency-stress.json",
    "wakeup.json",
    "micro.json",
];
/// Trace files of the two latency runs.
pub(crate) const TRACES: [&str; 2] = ["latency-idle-trace.csv", "latency-stress-trace.csv"];

struct Bar {
    progress: Progress,
    weights: [f64; 6],
    step: usize,
}

impl Bar {
    fn set(&mut self, fraction: f64, what: &str) {
        let total: f64 = self.weights.iter().sum();
        let done: f64 = self.weights[..self.step].iter().sum::<f64>()
            + self.weights[self.step] * fraction.clamp(0.0, 1.0);
        self.progress
            .update(done / total, &format!("[{}/6] {what}", self.step + 1));
    }
}

fn latency_args(
    policy: PolicyArg,
    priority: u8,
    p: &Preset,
    stress: Vec<StressKind>,
    tool: StressTool,
    trace: PathBuf,
    explain: bool,
) -> LatencyArgs {
    LatencyArgs {
        policy,
        priority: (policy != PolicyArg::Other).then_some(i64::from(priority)),
        nice: None,
        runtime: None,
        deadline: None,
        period: None,
        interval: p.interval_us,
        loops: None,
        duration: Some(format!("{}s", p.latency_s)),
        cpus: None,
        work_us: 0,
        timer_slack_ns: 1,
        trace_samples: Some(trace),
        break_at: None,
        // Bare `--explain`: the samples above each thread's p99.9.
        explain: explain.then_some(None),
        trace_out: None,
        stress: StressArgs {
            stress,
            stress_tool: tool,
        },
        rt: RtArgs {
            mlock: true,
            no_mlock: false,
            no_dma_latency: false,
        },
        output: OutputArgs {
            json: false,
            export_json: None,
            export_csv: None,
            no_progress: true,
        },
        // The suite's step session records the run (`run`'s own history flags).
        history: HistoryArgs {
            history_db: None,
            no_history: true,
        },
    }
}

/// Saves one step's result (its session writes it into the report directory, or, when that
/// fails after measuring, to a fallback file whose path it prints, so the measurement is never
/// lost, and records it in the history); returns where the result is, for the report.
fn save_step(s: &Session, f: &ResultFile) -> Result<PathBuf> {
    let saved = s.save(f);
    match (saved.error, saved.fallback) {
        (None, _) => s
            .json_path()
            .map(Path::to_path_buf)
            .context("a suite step writes a JSON file"),
        (Some(_), Some(fallback)) => Ok(fallback),
        (Some(e), None) => Err(e),
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "one call site; a struct would only rename these"
)]
fn latency_step(
    a: &LatencyArgs,
    online: &[usize],
    new_session: impl FnOnce() -> Session,
    env: &RtEnvironment,
    stop: &AtomicBool,
    bar: &mut Bar,
    what: &str,
    extra: &[Warning],
) -> Result<PathBuf> {
    let cfg = LatencyConfig::from_args(a, online)?;
    let mut s = new_session();
    s.warnings.extend(env.warnings.iter().cloned());
    s.warnings.extend(extra.iter().cloned());
    s.add_machine_warnings(&cfg.cpus);
    bar.set(0.0, &format!("{what}: starting"));
    // Outliers are explained by default where the kernel trace can be used; where it cannot,
    // the run measures without and the result says why.
    let (tracer, mut skipped) = match &cfg.explain {
        None => (None, Some("--no-explain".to_string())),
        Some(_) => match measure::explain::try_start(&cfg) {
            Ok(t) => (Some(t), None),
            Err(e) => (None, Some(format!("kernel tracing unavailable: {e}"))),
        },
    };
    let _stress = StressGuard::start(&cfg.stress)?;
    let facts = EnvFacts {
        mlock: env.memory_locked(),
        dma_latency_us: env.dma_latency_us(),
    };
    let mut outcome = measure::latency::run(
        &cfg,
        measure::work::calibrate(cfg.work_ns),
        facts,
        stop,
        &mut |_, f| bar.set(f, what),
    )?;
    if let (Some(t), Some(ex)) = (&tracer, &cfg.explain) {
        // No --trace-out here: the explanations go into the result only.
        let _lines = measure::explain::explain_run(t, ex, &mut outcome.result, &outcome.samples);
    }
    if let Some(Err(e)) = tracer.map(preempt_trace::Session::finish) {
        // The explanations already made are kept; the fault is said, not hidden.
        skipped = Some(format!("kernel tracing failed during the run: {e}"));
        eprintln!(
            "preempt: {what}: {}",
            skipped.as_deref().unwrap_or_default()
        );
    }
    outcome.result.explain_skipped = skipped;
    s.warnings.extend(outcome.warnings.iter().cloned());
    let mut f = s.file(RunResult::Latency(Box::new(outcome.result)));
    f.interrupted = outcome.interrupted;
    save_step(&s, &f)
}

/// `preempt run`: returns the exit code.
///
/// The steps: `prepare_out_dir`, the check, the two latency runs (`latency_step`),
/// `wakeup_step`, `micro_step`, then `finish_report`.
pub fn run(args: &RunArgs, argv: Vec<String>) -> Result<u8> {
    prepare_out_dir(args)?;
    let dir = args.out.as_path();
    let history = args.history.config();
    // Each step is a run session of its own, its result in DIR (checked above), its hints
    // `preempt run`'s.
    let session = |stem: &'static str| {
        let file = dir.join(format!("{stem}.json"));
        Session::suite_step(stem, argv.clone(), &file, history.clone())
    };
    let preset = Preset::of(args);
    let online = cpu::online_cpus().context("cannot read the online CPUs")?;
    let stop = measure::install_stop_flag()?;
    let rt_ok = micro::fifo_permitted(args.priority);
    // Before the run holds /dev/cpu_dma_latency: the check measures wake-ups with and without.
    let mut check_report = Some(check::run(&stop));
    let env = RtEnvironment::prepare(RtConfig::from(&RtArgs {
        mlock: true,
        no_mlock: false,
        no_dma_latency: false,
    }));
    let total_s: f64 = preset.weights().iter().sum();
    eprintln!(
        "preempt: running the {} suite (about {:.0} s): check, latency idle and under stress, wakeup, micro -> {}/index.html",
        preset.name,
        total_s,
        dir.display()
    );
    if let Err(e) = &rt_ok {
        eprintln!(
            "preempt: SCHED_FIFO is not permitted ({e}): latency runs use SCHED_OTHER, wakeup and the Zephyr set are skipped; run as root for real-time figures"
        );
    }
    let mut bar = Bar {
        progress: Progress::new("preempt run", !args.no_progress),
        weights: preset.weights(),
        step: 0,
    };
    let mut written: Vec<PathBuf> = Vec::new();
    let mut traces: Vec<PathBuf> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    let mut step = |bar: &mut Bar,
                    n: usize,
                    name: &str,
                    f: &mut dyn FnMut(&mut Bar) -> Result<Option<PathBuf>>| {
        if stop.load(Relaxed) {
            return;
        }
        bar.step = n;
        bar.set(0.0, name);
        match f(bar) {
            Ok(Some(p)) => written.push(p),
            Ok(None) => {}
            Err(e) => {
                bar.progress.finish();
                eprintln!("preempt: {name} failed: {e:#}");
                failed.push(name.to_string());
            }
        }
    };

    step(&mut bar, 0, "check", &mut |_| {
        let s = session(stem(FILES[0]));
        let report = check_report
            .take()
            .unwrap_or_else(check::run_without_probes);
        save_step(&s, &s.file(RunResult::Check(report))).map(Some)
    });
    let (policy, fallback) = latency_policy(&rt_ok, args.priority);
    for (n, (file, trace, stress, what)) in [
        (FILES[1], TRACES[0], Vec::new(), "latency, idle"),
        (
            FILES[2],
            TRACES[1],
            vec![StressKind::All],
            "latency, under stress",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let trace_path = dir.join(trace);
        let a = latency_args(
            policy,
            args.priority,
            &preset,
            stress,
            args.stress_tool,
            trace_path.clone(),
            !args.no_explain,
        );
        step(&mut bar, 1 + n, what, &mut |bar| {
            let new_session = || session(stem(file));
            let p = latency_step(&a, &online, new_session, &env, &stop, bar, what, &fallback)?;
            traces.push(trace_path.clone());
            Ok(Some(p))
        });
    }
    step(&mut bar, 3, "wakeup", &mut |bar| {
        if rt_ok.is_err() {
            eprintln!("preempt: wakeup skipped: its waiter must run SCHED_FIFO");
            return Ok(None);
        }
        let cfg = wakeup_config(&preset, args, &online)?;
        wakeup_step(session(stem(FILES[3])), &cfg, &env, &stop, bar).map(Some)
    });
    step(&mut bar, 4, "micro", &mut |bar| {
        let cfg = MicroConfig {
            sets: vec![SetArg::Nxp, SetArg::Zephyr, SetArg::Framework],
            only: Vec::new(),
            scale: preset.micro_scale,
            cpu: *online.last().context("no online CPU")?,
            priority: if rt_ok.is_ok() { args.priority } else { 0 },
            subtract_overhead: false,
            stress: StressConfig::default(),
        };
        micro_step(session(stem(FILES[4])), &cfg, &env, &stop, bar).map(Some)
    });
    finish_report(args, &mut bar, &stop, &written, &traces, &failed)
}

/// Checks `--priority` and `--out`, creates the directory and checks every file the suite
/// writes before anything is measured (exit 2 naming the path), so a bad `--out` never costs
/// a two-minute run.
fn prepare_out_dir(args: &RunArgs) -> Result<()> {
    if args.priority == 0 || args.priority > 98 {
        return Err(usage(format!(
            "--priority {} is out of range 1..=98",
            args.priority
        )));
    }
    if args.out.exists() && !args.out.is_dir() {
        return Err(usage(format!(
            "--out {} exists and is not a directory",
            args.out.display()
        )));
    }
    crate::export::create_output_dir(&args.out).map_err(|e| {
        usage(format!(
            "--out {}: {e:#}; name a directory you can write",
            args.out.display()
        ))
    })?;
    for name in FILES
        .iter()
        .chain(TRACES.iter())
        .chain(["index.html"].iter())
    {
        crate::export::check_writable(&args.out.join(name))?;
    }
    Ok(())
}

/// The latency runs' policy: SCHED_FIFO when permitted, else SCHED_OTHER with the warning
/// that says why.
fn latency_policy(rt_ok: &Result<(), String>, priority: u8) -> (PolicyArg, Vec<Warning>) {
    match rt_ok {
        Ok(()) => (PolicyArg::Fifo, Vec::new()),
        Err(e) => (
            PolicyArg::Other,
            vec![Warning::RealTimeRefused {
                requested: format!("SCHED_FIFO {priority}"),
                error: e.clone(),
                grant: crate::error::privilege_hint(&preempt_io::sys::sched::Policy::Fifo {
                    priority,
                }),
            }],
        ),
    }
}

/// The wakeup step's configuration: every source, idle and under heavy stress, the waiter on
/// the last online CPU and the trigger on the first.
fn wakeup_config(
    preset: &Preset,
    args: &RunArgs,
    online: &[usize],
) -> Result<wakeup::WakeupConfig> {
    Ok(wakeup::WakeupConfig {
        sources: vec![
            SourceArg::Eventfd,
            SourceArg::Pipe,
            SourceArg::Timerfd,
            SourceArg::Signal,
            SourceArg::Gpio,
        ],
        samples: preset.wakeup_samples,
        interval_ns: preset.wakeup_interval_us * 1_000,
        priority: args.priority,
        waiter_cpu: *online.last().context("no online CPU")?,
        trigger_cpu: online[0],
        loads: vec![
            StressConfig::default(),
            StressConfig::heavy(args.stress_tool),
        ],
        gpio_chip: PathBuf::from("/dev/gpiochip0"),
    })
}

/// Runs the wakeup step in its session `s` and saves its result.
fn wakeup_step(
    mut s: Session,
    cfg: &wakeup::WakeupConfig,
    env: &RtEnvironment,
    stop: &AtomicBool,
    bar: &mut Bar,
) -> Result<PathBuf> {
    s.warnings.extend(env.warnings.iter().cloned());
    s.add_machine_warnings(&[cfg.waiter_cpu]);
    let r = wakeup::run(cfg, stop, &mut |d, t, what| {
        bar.set(d as f64 / t.max(1) as f64, &format!("wakeup: {what}"))
    })?;
    let mut f = s.file(RunResult::Wakeup(Box::new(r)));
    f.interrupted = stop.load(Relaxed);
    save_step(&s, &f)
}

/// Runs the micro step in its session `s` (with its stressors, if any) and saves its result.
fn micro_step(
    mut s: Session,
    cfg: &MicroConfig,
    env: &RtEnvironment,
    stop: &AtomicBool,
    bar: &mut Bar,
) -> Result<PathBuf> {
    s.warnings.extend(env.warnings.iter().cloned());
    s.add_machine_warnings(&[cfg.cpu]);
    let stressors = StressGuard::start(&cfg.stress)?;
    let (result, run_warnings) = micro::measure(cfg, stop, &mut |d, t, what| {
        bar.set(d as f64 / t.max(1) as f64, &format!("micro: {what}"))
    })?;
    drop(stressors);
    s.warnings.extend(run_warnings);
    let mut f = s.file(RunResult::Micro(Box::new(result)));
    f.interrupted = stop.load(Relaxed);
    save_step(&s, &f)
}

/// Draws the report from the files just written, prints the verdict and the paths, and
/// returns the exit code (interrupted, a step failed, or success).
fn finish_report(
    args: &RunArgs,
    bar: &mut Bar,
    stop: &AtomicBool,
    written: &[PathBuf],
    traces: &[PathBuf],
    failed: &[String],
) -> Result<u8> {
    let dir = args.out.as_path();
    bar.step = 5;
    bar.set(0.0, "report");
    if written.is_empty() && stop.load(Relaxed) {
        eprintln!("preempt: interrupted before the first step finished: no result was written");
        return Ok(measure::interrupted_exit_code());
    }
    // The report is drawn from the files just written, exactly as `preempt report` would.
    let inputs = crate::results::input::load_many(written)?;
    let trace_data: Vec<crate::report::Trace> = traces
        .iter()
        .filter(|p| p.exists())
        .map(|p| crate::report::load_trace(p))
        .collect::<Result<_>>()?;
    let report = crate::report::build(&inputs, &trace_data, "preempt report")?;
    let w = crate::report::write(&report, dir, !args.no_png)?;
    bar.set(1.0, "done");
    bar.progress.finish();
    // The verdict in the terminal too (on a robot over SSH there is no browser): the same
    // summary as the report's, at most 15 lines with the paths.
    for line in terminal_verdict(&crate::report::verdict(&inputs)) {
        println!("{line}");
    }
    println!("report: {}", w.index.display());
    println!(
        "results: {}",
        written
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(n) = w.png_note {
        eprintln!("preempt: {n}");
    }
    if stop.load(Relaxed) {
        return Ok(measure::interrupted_exit_code());
    }
    if !failed.is_empty() {
        eprintln!(
            "preempt: {} step(s) failed: {}",
            failed.len(),
            failed.join(", ")
        );
        return Ok(EXIT_FAILURE);
    }
    Ok(EXIT_OK)
}

/// The report's summary as at most 13 terminal lines (the caller adds the report and results
/// paths): the verdict, then one line per headline figure.
pub fn terminal_verdict(v: &crate::report::Verdict) -> Vec<String> {
    let tag = match v.class {
        "good" => "GOOD",
        "bad" => "BAD",
        _ => "WARN",
    };
    let mut lines = vec![format!("verdict [{tag}]: {}", v.text)];
    lines.extend(
        v.cards
            .iter()
            .take(12)
            .map(|(k, x, s)| format!("  {k}: {x} ({s})")),
    );
    lines
}

/// `check.json` -> `check`: a suite file's stem (its step's kind and fallback name).
fn stem(file: &'static str) -> &'static str {
    file.trim_end_matches(".json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_runs_explain_unless_told_not_to() {
        let p = Preset::of(&RunArgs {
            quick: true,
            long: false,
            out: PathBuf::from("x"),
            stress_tool: StressTool::Builtin,
            priority: 80,
            no_png: true,
            no_progress: true,
            no_explain: false,
            history: HistoryArgs {
                history_db: None,
                no_history: true,
            },
        });
        let a = |explain| {
            latency_args(
                PolicyArg::Fifo,
                80,
                &p,
                Vec::new(),
                StressTool::Builtin,
                PathBuf::from("t.csv"),
                explain,
            )
        };
        let cfg = LatencyConfig::from_args(&a(true), &[0, 1]).unwrap();
        let ex = cfg.explain.expect("explained by default");
        assert_eq!(ex.threshold_ns, None, "each thread's p99.9");
        assert!(ex.trace_out.is_none());
        assert!(
            LatencyConfig::from_args(&a(false), &[0, 1])
                .unwrap()
                .explain
                .is_none()
        );
    }
}
