//! `preempt report`: one self-contained HTML page from result files, answering "how
//! real-time is this machine, and what does each primitive cost here?".
//!
//! Reads any mix of `check`, `latency`, `matrix`, `wakeup`, `micro` and `rtio_bench` results
//! (files or directories, see [`input`]) and optional `--trace` files (the per-cycle CSV of
//! `preempt latency --trace-samples`), and writes into `--out DIR`:
//! - `index.html`: summary cards and verdict, the readiness check, latency histograms on a log
//!   count axis, exceedance curves, per-CPU histograms, latency per iteration, box plots per
//!   policy × stress, wake-up latency, microbenchmark tables in ns and cycles with the timing
//!   overhead beside each figure, for `--explain` runs a stacked bar of causes per outlier and
//!   the top causes by total delay and by count, the thread-vs-RTIO table of `rtio-bench` (and its break
//!   points), the gimbal and UAV demos' sections (a gimbal run with `--explain`: the same
//!   bars and tables for the controller's deadline misses), validity ledgers, warnings and
//!   system info;
//! - `plots/*.svg` and `plots/*.png`: every figure as a file for papers.
//!
//! Every number on the page comes from the input files (nothing is re-measured), and the
//! structure of the page and its figures is pinned by snapshot tests
//! (`tests/report_snapshots.rs`).

mod explain;
mod gimbal;
pub mod html;
pub mod plots;
mod rtio;
pub mod sample;
mod uav;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::results::input::{self, Input, Loaded};
use html::{Cell, cls, esc, figure, num, table, td};
use plots::{BoxStat, HistSeries, Range, TimeSeries};

use crate::results::micro::MicroResult;
use crate::results::{
    Distribution, LatencyResult, Ledger, MatrixResult, ResultFile, RunResult, Status, SysInfo,
    WakeupResult, WarningRecord,
};
use crate::stats::summary::{Summary, us};

/// One per-cycle trace file, read.
#[derive(Debug, Clone)]
pub struct Trace {
    /// File stem.
    pub label: String,
    /// One series per thread.
    pub series: Vec<TimeSeries>,
}

/// Reads a `--trace-samples` CSV (`thread,cpu,cycle,release_ns,wake_ns,latency_ns,...`).
pub(crate) fn load_trace(path: &Path) -> Result<Trace> {
    let bytes =
        crate::results::input::read_limited(path, crate::results::input::MAX_TRACE_CSV_BYTES)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{} is not text (binary or corrupt)", path.display()))?;
    let mut lines = text.lines();
    let header = lines
        .next()
        .with_context(|| format!("{} is empty", path.display()))?;
    let cols: Vec<&str> = header.split(',').collect();
    let col = |name: &str| {
        cols.iter().position(|c| *c == name).with_context(|| {
            format!(
                "{} is not a preempt --trace-samples file (no '{name}' column in its header)",
                path.display()
            )
        })
    };
    let (ti, ci, cyi, li) = (
        col("thread")?,
        col("cpu")?,
        col("cycle")?,
        col("latency_ns")?,
    );
    let mut by_thread: Vec<(String, Vec<(u64, u64)>)> = Vec::new();
    for (n, line) in lines.enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        let bad = || format!("{}: line {} is malformed: '{line}'", path.display(), n + 2);
        let thread: usize = f.get(ti).and_then(|v| v.parse().ok()).with_context(bad)?;
        let cycle: u64 = f.get(cyi).and_then(|v| v.parse().ok()).with_context(bad)?;
        let lat: u64 = f.get(li).and_then(|v| v.parse().ok()).with_context(bad)?;
        let cpu = f.get(ci).copied().unwrap_or("");
        while by_thread.len() <= thread {
            by_thread.push((String::new(), Vec::new()));
        }
        if by_thread[thread].0.is_empty() {
            by_thread[thread].0 = if cpu.is_empty() {
                format!("thread {thread}")
            } else {
                format!("cpu{cpu}")
            };
        }
        by_thread[thread].1.push((cycle, lat));
    }
    let label = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Trace {
        series: by_thread
            .into_iter()
            .filter(|(_, p)| !p.is_empty())
            .map(|(name, points)| TimeSeries {
                label: format!("{label} {name}"),
                points,
            })
            .collect(),
        label,
    })
}

/// One figure of the report.
#[derive(Debug, Clone)]
pub struct Plot {
    /// File stem under `plots/`.
    pub stem: String,
    /// The SVG document.
    pub svg: String,
}

/// A built report: the page and its figures.
#[derive(Debug, Clone)]
pub struct Report {
    /// `index.html`.
    pub html: String,
    /// Every figure, in page order.
    pub plots: Vec<Plot>,
}

struct Builder {
    body: String,
    plots: Vec<Plot>,
    nav: Vec<(String, String)>,
}

impl Builder {
    fn section(&mut self, id: &str, title: &str) {
        self.nav.push((id.into(), title.into()));
        let _ = writeln!(self.body, "<h2 id=\"{}\">{}</h2>", esc(id), esc(title)); // String writes cannot fail
    }
    fn h3(&mut self, t: &str) {
        let _ = writeln!(self.body, "<h3>{}</h3>", esc(t));
    }
    fn p(&mut self, t: &str) {
        let _ = writeln!(self.body, "<p>{}</p>", esc(t));
    }
    fn raw(&mut self, s: &str) {
        self.body.push_str(s);
    }
    fn fig(&mut self, stem: &str, svg: String, caption: &str) {
        let stem = unique_stem(&self.plots, stem);
        self.body
            .push_str(&figure(self.plots.len() + 1, &svg, caption, Some(&stem)));
        self.plots.push(Plot { stem, svg });
    }
}

fn unique_stem(plots: &[Plot], stem: &str) -> String {
    let clean: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut s = clean.clone();
    let mut i = 2;
    while plots.iter().any(|p| p.stem == s) {
        s = format!("{clean}-{i}");
        i += 1;
    }
    s
}

fn summary_cells(s: &Summary) -> Vec<Cell> {
    vec![
        num(s.count.to_string()),
        num(us(s.min_ns)),
        num(us(s.p50_ns)),
        num(us(s.p90_ns)),
        num(us(s.p99_ns)),
        num(us(s.p99_9_ns)),
        num(us(s.p99_99_ns)),
        num(us(s.max_ns)),
        num(s.max_cycle.map(|c| format!("#{c}")).unwrap_or_default()),
    ]
}

const SUMMARY_HEADERS: [&str; 9] = [
    "samples",
    "min µs",
    "p50 µs",
    "p90 µs",
    "p99 µs",
    "p99.9 µs",
    "p99.99 µs",
    "max µs",
    "max at cycle",
];

fn headers<'a>(first: &[&'a str]) -> Vec<&'a str> {
    first.iter().copied().chain(SUMMARY_HEADERS).collect()
}

fn status_cell(s: Status) -> Cell {
    match s {
        Status::Pass => cls("PASS", "pass"),
        Status::Info => cls("INFO", "info"),
        Status::Warn => cls("WARN", "warn"),
        Status::Fail => cls("FAIL", "fail"),
    }
}

fn ledger_table(l: &Ledger) -> String {
    let rows: Vec<Vec<Cell>> = l
        .entries
        .iter()
        .map(|e| {
            vec![
                td(&e.name),
                td(&e.value),
                if e.contaminates {
                    cls("contaminates", "fail")
                } else {
                    cls("ok", "pass")
                },
            ]
        })
        .collect();
    format!(
        "<p>Validity: <b>{}</b></p>\n{}",
        esc(&l.verdict),
        table(&["observation", "value", "effect"], &rows)
    )
}

fn warnings_table(w: &[WarningRecord]) -> String {
    if w.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<Cell>> = w
        .iter()
        .map(|w| vec![cls(&w.code, "warn"), td(&w.message), td(&w.hint)])
        .collect();
    format!(
        "<p>Threats to validity recorded with this run:</p>\n{}",
        table(&["warning", "what", "fix"], &rows)
    )
}

/// Quantile from a stored distribution (via its histogram).
fn quantile(d: &Distribution, q: f64) -> Option<u64> {
    d.to_snapshot().map(|s| s.value_at_quantile(q))
}

fn box_of(category: &str, group: &str, d: Option<&Distribution>, s: &Summary) -> BoxStat {
    BoxStat {
        category: category.into(),
        group: group.into(),
        min_ns: s.min_ns,
        p25_ns: d.and_then(|d| quantile(d, 0.25)),
        p50_ns: s.p50_ns,
        p75_ns: d.and_then(|d| quantile(d, 0.75)),
        p99_ns: s.p99_ns,
        max_ns: s.max_ns,
    }
}

/// Merges the per-thread latency histograms of a run.
pub(crate) fn merged_latency(l: &LatencyResult) -> Option<Distribution> {
    let mut snaps = l.threads.iter().filter_map(|t| t.latency.to_snapshot());
    let mut all = snaps.next()?;
    for s in snaps {
        all.merge(&s);
    }
    Some(Distribution::from_snapshot(&all))
}

fn stress_label(l: &LatencyResult) -> String {
    if l.settings.stress.is_empty() {
        "idle".into()
    } else {
        format!("stress {}", l.settings.stress.join(","))
    }
}

fn latency_title(i: &Input, l: &LatencyResult) -> String {
    format!(
        "{}: {}, {} µs period, {}",
        i.label,
        l.settings.policy.label(),
        l.settings.interval_ns / 1_000,
        stress_label(l)
    )
}

/// Builds the report from loaded inputs and traces.
pub fn build(inputs: &[Input], traces: &[Trace], title: &str) -> Result<Report> {
    if inputs.is_empty() {
        bail!("no result to report");
    }
    let mut b = Builder {
        body: String::new(),
        plots: Vec::new(),
        nav: Vec::new(),
    };
    let (results, latencies, micros) = views(inputs);

    summary_section(&mut b, inputs);
    summary_figures(&mut b, &latencies)?;

    for (i, r) in &results {
        if let RunResult::Check(c) = &r.result {
            b.section("check", "Readiness check");
            b.p(&format!(
                "From {}. Each item: verdict, what was found, and the fix.",
                i.source
            ));
            let rows: Vec<Vec<Cell>> = c
                .items
                .iter()
                .map(|it| {
                    vec![
                        status_cell(it.status),
                        td(&it.title),
                        td(&it.value),
                        td(&it.fix),
                    ]
                })
                .collect();
            b.raw(&table(&["", "check", "found", "fix"], &rows));
        }
    }

    if !latencies.is_empty() || !traces.is_empty() {
        latency_section(&mut b, &latencies, traces)?;
    }
    for (i, r) in &results {
        if let RunResult::Matrix(m) = &r.result {
            matrix_section(&mut b, i, m)?;
        }
    }
    for (i, r) in &results {
        if let RunResult::Wakeup(w) = &r.result {
            wakeup_section(&mut b, i, w)?;
        }
    }
    for (i, r) in &results {
        if let RunResult::RtioBench(x) = &r.result {
            rtio::section(&mut b, i, r, x)?;
        }
    }
    for (i, r) in &results {
        if let RunResult::DemoGimbal(d) = &r.result {
            gimbal::section(&mut b, i, d)?;
        }
    }
    for (i, r) in &results {
        if let RunResult::DemoUav(d) = &r.result {
            uav::section(&mut b, i, d)?;
        }
    }
    for (i, f, m) in &micros {
        micro_section(&mut b, i, f, m)?;
    }
    for i in inputs {
        if let Loaded::Cyclictest(c) = &i.loaded {
            b.section(
                &format!("cyclictest-{}", i.label),
                &format!("cyclictest: {}", i.label),
            );
            b.p(&format!(
                "Imported from {} ({} output). {}",
                i.source,
                c.format,
                c.cmdline.clone().unwrap_or_default()
            ));
            let rows: Vec<Vec<Cell>> = c
                .threads
                .iter()
                .filter_map(|t| t.distribution().map(|d| (t, d)))
                .map(|(t, d)| {
                    let mut r = vec![td(t.name())];
                    r.extend(summary_cells(&d.summary));
                    r
                })
                .collect();
            b.raw(&table(&headers(&["thread"]), &rows));
        }
    }
    sysinfo_section(&mut b, inputs);
    let first = inputs.iter().find_map(|i| sysinfo_of(&i.loaded));
    let subtitle = match first {
        Some(s) => format!(
            "{} · Linux {} · {} · preemption {}",
            s.hostname, s.kernel_release, s.cpu_model, s.preempt_model
        ),
        None => "imported results".into(),
    };
    let footer = format!(
        "Generated by preempt {} from {} file(s): {}. Every number on this page is read from those files.",
        env!("CARGO_PKG_VERSION"),
        inputs.len(),
        inputs
            .iter()
            .map(|i| i.source.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let html = html::page(title, &subtitle, &b.nav, &b.body, &footer);
    Ok(Report {
        html,
        plots: b.plots,
    })
}

fn sysinfo_of(l: &Loaded) -> Option<&SysInfo> {
    match l {
        Loaded::Result(r) => Some(&r.sysinfo),
        Loaded::Cyclictest(_) => None,
    }
}

/// Nanoseconds for a summary card: µs with one decimal below 10 ms, ms above.
fn human(ns: u64) -> String {
    if ns >= 10_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{} µs", us(ns))
    }
}

fn card(k: &str, v: &str, s: &str) -> String {
    format!(
        "<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{}</div><div class=\"s\">{}</div></div>",
        esc(k),
        esc(v),
        esc(s)
    )
}

/// The summary of a set of results, shown at the top of the HTML report and as the terminal
/// verdict of `preempt run`: one sentence, its class, and the headline figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// `good`, `meh` (warnings, partial runs, not PREEMPT_RT...) or `bad` (a failing check).
    pub class: &'static str,
    /// The sentence.
    pub text: String,
    /// Headline figures: (what, value, detail).
    pub cards: Vec<(String, String, String)>,
}

/// Computes the [`Verdict`] of `inputs`.
pub fn verdict(inputs: &[Input]) -> Verdict {
    let (results, latencies, micros) = views(inputs);
    let mut cards: Vec<(String, String, String)> = Vec::new();
    let card = |k: &str, v: &str, s: &str| (k.to_string(), v.to_string(), s.to_string());
    let mut verdict: Vec<String> = Vec::new();
    let mut bad = false;
    let mut meh = false;
    for (i, r) in &results {
        let status = r.status();
        if status != crate::results::RunStatus::Complete {
            meh = true;
            verdict.push(format!(
                "{} is {status} and covers only part of the planned run",
                i.label
            ));
        }
    }
    for (_, r) in &results {
        if let RunResult::Check(c) = &r.result {
            let n = |s| c.items.iter().filter(|i| i.status == s).count();
            cards.push(card(
                "Readiness check",
                &format!("{} fail · {} warn", n(Status::Fail), n(Status::Warn)),
                &format!("{} items, {} pass", c.items.len(), n(Status::Pass)),
            ));
            if n(Status::Fail) > 0 {
                bad = true;
                verdict.push(format!("{} readiness check(s) fail", n(Status::Fail)));
            } else if n(Status::Warn) > 0 {
                meh = true;
            }
        }
    }
    for (i, _, l) in &latencies {
        let s = &l.latency_all;
        let missed: u64 = l.threads.iter().map(|t| t.missed_periods).sum();
        cards.push(card(
            &format!("Worst latency, {}", stress_label(l)),
            &human(s.max_ns),
            &format!(
                "p99 {} µs · p99.9 {} µs · {} samples · {missed} missed periods · {} ({})",
                us(s.p99_ns),
                us(s.p99_9_ns),
                s.count,
                l.ledger.verdict,
                i.label
            ),
        ));
        verdict.push(format!(
            "worst wake-up latency {} {} (p99 {} µs)",
            human(s.max_ns),
            stress_label(l),
            us(s.p99_ns)
        ));
        if !l.ledger.is_clean() {
            meh = true;
        }
        if let Some(why) = explain::verdict_part(l) {
            verdict.push(why);
        }
    }
    cards.extend(measurement_cards(&results, &micros));
    meh |= machine_findings(inputs, &mut verdict);
    let class = if bad {
        "bad"
    } else if meh {
        "meh"
    } else {
        "good"
    };
    let text = if verdict.is_empty() {
        "No problem found in these results.".to_string()
    } else {
        capitalise(&verdict.join("; ")) + "."
    };
    Verdict { class, text, cards }
}

/// The cards of the results that add a figure but no sentence to the verdict: the worst
/// wake-up, the RTIO benchmark's, the context switch.
fn measurement_cards(
    results: &[(&Input, &ResultFile)],
    micros: &[(&Input, &ResultFile, &MicroResult)],
) -> Vec<(String, String, String)> {
    let mut cards: Vec<(String, String, String)> = Vec::new();
    let card = |k: &str, v: &str, s: &str| (k.to_string(), v.to_string(), s.to_string());
    for (_, r) in results {
        if let RunResult::Wakeup(w) = &r.result {
            if let Some((c, d)) = w
                .cases
                .iter()
                .filter_map(|c| c.latency.as_ref().map(|d| (c, d)))
                .max_by_key(|(_, d)| d.summary.max_ns)
            {
                cards.push(card(
                    "Worst wake-up",
                    &human(d.summary.max_ns),
                    &format!(
                        "{} under {} · p99 {} µs",
                        c.source,
                        c.load,
                        us(d.summary.p99_ns)
                    ),
                ));
            }
        }
    }
    for (_, r) in results {
        if let RunResult::RtioBench(x) = &r.result {
            for (k, v, s) in rtio::cards(x) {
                cards.push(card(&k, &v, &s));
            }
        }
    }
    for (_, _, m) in micros {
        if let Some(cs) = m.benches.iter().find(|x| x.id == "context_switch") {
            if let (Some(d), Some(c)) = (&cs.ns, &cs.cycles) {
                cards.push(card(
                    "Context switch",
                    &format!("{} ns", d.summary.p50_ns),
                    &format!(
                        "median; {} {} cycles; p99 {} ns",
                        c.p50_cycles,
                        counter_name(m),
                        d.summary.p99_ns
                    ),
                ));
            }
        }
    }
    cards
}

/// What the machine of the first input with system information adds to the verdict (no
/// PREEMPT_RT, a virtual machine); true when that makes it "meh".
fn machine_findings(inputs: &[Input], verdict: &mut Vec<String>) -> bool {
    let Some(s) = inputs.iter().find_map(|i| sysinfo_of(&i.loaded)) else {
        return false;
    };
    let mut meh = false;
    if s.preempt_model != "rt" {
        meh = true;
        verdict.push(format!(
            "the kernel runs preemption model '{}', not PREEMPT_RT",
            s.preempt_model
        ));
    }
    if let Some(v) = &s.virtualization {
        meh = true;
        verdict.push(format!(
            "virtual machine ({v}): host scheduling adds latency"
        ));
    }
    meh
}

fn summary_section(b: &mut Builder, inputs: &[Input]) {
    b.section("summary", "Summary");
    let v = verdict(inputs);
    let cards: String = v.cards.iter().map(|(k, x, s)| card(k, x, s)).collect();
    b.raw(&format!(
        "<div class=\"verdict {}\">{}</div>\n<div class=\"cards\">{cards}</div>\n",
        v.class,
        esc(&v.text)
    ));
}

/// The results, latency results and micro results among `inputs`.
#[allow(
    clippy::type_complexity,
    reason = "three borrowed views, named at the call sites"
)]
fn views(
    inputs: &[Input],
) -> (
    Vec<(&Input, &ResultFile)>,
    Vec<(&Input, &ResultFile, &LatencyResult)>,
    Vec<(&Input, &ResultFile, &MicroResult)>,
) {
    let results: Vec<(&Input, &ResultFile)> = inputs
        .iter()
        .filter_map(|i| match &i.loaded {
            Loaded::Result(r) => Some((i, r.as_ref())),
            _ => None,
        })
        .collect();
    let micros = results
        .iter()
        .filter_map(|(i, r)| match &r.result {
            RunResult::Micro(m) => Some((*i, *r, m.as_ref())),
            _ => None,
        })
        .collect();
    let latencies = results
        .iter()
        .filter_map(|(i, r)| match &r.result {
            RunResult::Latency(l) => Some((*i, *r, l.as_ref())),
            _ => None,
        })
        .collect();
    (results, latencies, micros)
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn counter_name(m: &MicroResult) -> &'static str {
    match m.clock.counter {
        crate::results::micro::CounterKind::Tsc => "TSC",
        crate::results::micro::CounterKind::Cntvct => "CNTVCT",
        crate::results::micro::CounterKind::MonotonicRaw => "ns",
    }
}

/// The two figures that answer "how late will my loop be?" at a glance, side by side under the
/// summary: every latency run's histogram and exceedance curve.
fn summary_figures(
    b: &mut Builder,
    latencies: &[(&Input, &ResultFile, &LatencyResult)],
) -> Result<()> {
    let mut hist = Vec::new();
    let mut exc = Vec::new();
    for (i, _, l) in latencies {
        if let Some(d) = merged_latency(l) {
            let label = format!("{} ({})", i.label, stress_label(l));
            hist.push(HistSeries {
                label: label.clone(),
                buckets: d.histogram.buckets.clone(),
            });
            exc.push((label, d.histogram.buckets.clone(), d.summary.max_ns));
        }
    }
    if hist.is_empty() {
        return Ok(());
    }
    b.raw("<div class=\"row\">\n");
    let svg = plots::histogram("Wake-up latency histogram", &hist)?;
    b.fig("latency-histogram", svg, "Wake-up latency of every run, all threads merged; log count axis so single outliers show (as in the thesis' figures 6.3–6.5).");
    let svg = plots::exceedance("Exceedance: P(latency > x)", &exc)?;
    b.fig("latency-exceedance", svg, "Probability that one period's latency exceeds x, log–log; each curve ends at 1/N at its maximum. A deadline d is met with probability 1 − P(d).");
    b.raw("</div>\n");
    Ok(())
}

fn latency_section(
    b: &mut Builder,
    latencies: &[(&Input, &ResultFile, &LatencyResult)],
    traces: &[Trace],
) -> Result<()> {
    b.section("latency", "Timer wake-up latency");
    b.p("Latency = actual wake-up − intended release of an absolute clock_nanosleep on CLOCK_MONOTONIC (cyclictest's method), per period.");
    let mut boxes = Vec::new();
    for (i, r, l) in latencies {
        b.h3(&latency_title(i, l));
        let s = &l.settings;
        b.p(&format!(
            "{} thread(s) on CPU {:?}{}, {} releases each, work {} µs, timer slack {} ns, mlock {}, cpu_dma_latency {}. Tool overhead: clock read p50 {} ns, max {} ns.{}",
            l.threads.len(),
            s.cpus,
            if s.pinned { " (pinned)" } else { " (unpinned)" },
            s.releases_per_thread,
            s.work_ns / 1_000,
            s.timer_slack_ns,
            if s.mlock { "on" } else { "off" },
            s.cpu_dma_latency_us.map_or("not held".into(), |v| format!("{v} µs")),
            l.overhead.clock_read.p50_ns,
            l.overhead.clock_read.max_ns,
            if r.interrupted { " Interrupted: covers only what ran." } else { "" }
        ));
        thread_tables(b, l);
        b.raw(&ledger_table(&l.ledger));
        b.raw(&warnings_table(&r.warnings));
        if let Some(x) = &l.explain {
            explain::section(b, i, l, x)?;
        } else if let Some(why) = &l.explain_skipped {
            b.p(&format!("Outliers not explained: {why}."));
        }
        if l.threads.len() > 1 {
            let series: Vec<HistSeries> = l
                .threads
                .iter()
                .enumerate()
                .map(|(n, t)| HistSeries {
                    label: t.cpu.map_or(format!("#{n}"), |c| format!("cpu{c}")),
                    buckets: t.latency.histogram.buckets.clone(),
                })
                .collect();
            let svg = plots::histogram(&format!("Per-CPU latency: {}", i.label), &series)?;
            b.fig(
                &format!("latency-per-cpu-{}", i.label),
                svg,
                &format!(
                    "Wake-up latency of each measuring thread, {} (log count axis).",
                    latency_title(i, l)
                ),
            );
        }
        if let Some(d) = merged_latency(l) {
            boxes.push(box_of(
                &l.settings.policy.label(),
                &stress_label(l),
                Some(&d),
                &l.latency_all,
            ));
        }
    }
    if boxes.len() > 1 {
        let svg = plots::boxplot("Latency by policy and load", &boxes)?;
        b.fig(
            "latency-boxplot",
            svg,
            "Box p25–p75, thick line median, whiskers min–max, dot p99 (log axis).",
        );
    }
    if !traces.is_empty() {
        trace_figures(b, traces)?;
    }
    Ok(())
}

/// The latency summary per thread (and of all threads), and with `--work-us` the response
/// and compute-step summaries.
fn thread_tables(b: &mut Builder, l: &LatencyResult) {
    let mut rows: Vec<Vec<Cell>> = l
        .threads
        .iter()
        .enumerate()
        .map(|(n, t)| {
            let mut row = vec![td(t.cpu.map_or(format!("#{n}"), |c| format!("cpu{c}")))];
            row.extend(summary_cells(&t.latency.summary));
            row.push(num(t.missed_periods.to_string()));
            row.push(num(t.deadline_misses.to_string()));
            row
        })
        .collect();
    if l.threads.len() > 1 {
        let mut row = vec![cls("all", "muted")];
        row.extend(summary_cells(&l.latency_all));
        row.push(num(l
            .threads
            .iter()
            .map(|t| t.missed_periods)
            .sum::<u64>()
            .to_string()));
        row.push(num(l
            .threads
            .iter()
            .map(|t| t.deadline_misses)
            .sum::<u64>()
            .to_string()));
        rows.push(row);
    }
    let mut h = headers(&["thread"]);
    h.extend(["missed periods", "deadline misses"]);
    b.raw(&table(&h, &rows));
    if l.threads.iter().any(|t| t.response.is_some()) {
        let rows: Vec<Vec<Cell>> = l
            .threads
            .iter()
            .enumerate()
            .filter_map(|(n, t)| {
                let (resp, comp) = (t.response.as_ref()?, t.compute.as_ref()?);
                let mut row = vec![
                    td(t.cpu.map_or(format!("#{n}"), |c| format!("cpu{c}"))),
                    td("response"),
                ];
                row.extend(summary_cells(&resp.summary));
                let mut row2 = vec![td(""), td("compute step")];
                row2.extend(summary_cells(&comp.summary));
                Some([row, row2])
            })
            .flatten()
            .collect();
        b.raw(&table(&headers(&["thread", "what"]), &rows));
    }
}

/// The per-period latency of the `--trace-samples` files over time (one plot, or one per
/// file when there are more than eight series).
fn trace_figures(b: &mut Builder, traces: &[Trace]) -> Result<()> {
    let series: Vec<TimeSeries> = traces
        .iter()
        .flat_map(|t| t.series.iter().cloned())
        .collect();
    let chunks: Vec<Vec<TimeSeries>> = if series.len() <= 8 {
        vec![series]
    } else {
        traces.iter().map(|t| t.series.clone()).collect()
    };
    for (n, chunk) in chunks.into_iter().enumerate() {
        let svg = plots::time_series("Latency per iteration", &chunk)?;
        b.fig(
            &format!("latency-timeseries-{n}"),
            svg,
            &format!(
                "Wake-up latency of every period in order ({}), log axis, as in the UAV study's figures 3–8; with many periods each point is the maximum of a group of consecutive ones, so spikes stay visible.",
                chunk.iter().map(|s| s.label.as_str()).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    Ok(())
}

fn matrix_section(b: &mut Builder, i: &Input, m: &MatrixResult) -> Result<()> {
    b.section(&format!("matrix-{}", i.label), "Policy × stress matrix");
    b.p(&format!(
        "{}: period {} µs, {} s per cell, compute step {} µs, CPUs {:?}.",
        i.source,
        m.period_ns / 1_000,
        m.duration_per_cell_ns as f64 / 1e9,
        m.work_ns / 1_000,
        m.cpus
    ));
    let cells = input::matrix_cells(i);
    let mut rows = Vec::new();
    let mut boxes = Vec::new();
    for (n, c) in m.cells.iter().enumerate() {
        match &c.latency {
            Some(l) => {
                let mut row = vec![td(&c.row), td(&c.stress)];
                row.extend(summary_cells(l));
                row.push(num(c.missed_periods.to_string()));
                row.push(num(c.compute.map(|s| us(s.p50_ns)).unwrap_or_default()));
                row.push(num(c.compute.map(|s| us(s.max_ns)).unwrap_or_default()));
                row.push(if c.verdict == "clean" {
                    cls("clean", "pass")
                } else {
                    cls(&c.verdict, "warn")
                });
                rows.push(row);
                let dist = cells
                    .iter()
                    .find(|(k, _)| *k == n)
                    .and_then(|(_, f)| match &f.result {
                        RunResult::Latency(l) => merged_latency(l),
                        _ => None,
                    });
                boxes.push(box_of(&c.row, &c.stress, dist.as_ref(), l));
            }
            None => rows.push(vec![
                td(&c.row),
                td(&c.stress),
                cls(
                    format!("not measured: {}", c.error.clone().unwrap_or_default()),
                    "muted",
                ),
            ]),
        }
    }
    let mut h = headers(&["policy", "stress"]);
    h.extend(["missed", "compute p50 µs", "compute max µs", "validity"]);
    b.raw(&table(&h, &rows));
    if !boxes.is_empty() {
        let svg = plots::boxplot("Scheduling latency per policy and stress", &boxes)?;
        b.fig(
            &format!("matrix-boxplot-{}", i.label),
            svg,
            "As the UAV study's figure 2: box p25–p75 (from each cell's histogram; absent when the cell file is missing), thick line median, whiskers min–max, dot p99, log axis.",
        );
    }
    Ok(())
}

fn wakeup_section(b: &mut Builder, i: &Input, w: &WakeupResult) -> Result<()> {
    b.section(&format!("wakeup-{}", i.label), "Event wake-up latency");
    b.p(&format!(
        "A SCHED_FIFO {} thread blocked on each event source is woken by a time-stamped trigger; latency = wake − trigger. {} samples per case, {} µs apart. Tool overhead: clock read p50 {} ns.",
        w.priority,
        w.samples_per_case,
        w.interval_ns / 1_000,
        w.overhead.clock_read.p50_ns
    ));
    let mut rows = Vec::new();
    for c in &w.cases {
        let mut row = vec![
            td(&c.source),
            td(&c.load),
            num(c.waiter_cpu.to_string()),
            num(c
                .trigger_cpu
                .map(|c| c.to_string())
                .unwrap_or("kernel".into())),
        ];
        match (&c.latency, &c.skipped) {
            (Some(d), _) => row.extend(summary_cells(&d.summary)),
            (None, why) => row.push(cls(
                format!("skipped: {}", why.clone().unwrap_or_default()),
                "muted",
            )),
        }
        rows.push(row);
    }
    b.raw(&table(
        &headers(&["source", "load", "waiter CPU", "trigger CPU"]),
        &rows,
    ));
    let mut sources: Vec<&str> = w
        .cases
        .iter()
        .filter(|c| c.latency.is_some())
        .map(|c| c.source.as_str())
        .collect();
    let mut seen = std::collections::HashSet::new();
    sources.retain(|s| seen.insert(*s));
    for s in sources {
        let series: Vec<HistSeries> = w
            .cases
            .iter()
            .filter(|c| c.source == s)
            .filter_map(|c| {
                Some(HistSeries {
                    label: c.load.clone(),
                    buckets: c.latency.as_ref()?.histogram.buckets.clone(),
                })
            })
            .collect();
        let svg = plots::histogram(&format!("Wake-up latency: {s}"), &series)?;
        b.fig(
            &format!("wakeup-{s}-{}", i.label),
            svg,
            &format!("{s}: idle and loaded (log count axis), as the thesis' figure 6.4."),
        );
    }
    Ok(())
}

fn micro_section(b: &mut Builder, i: &Input, f: &ResultFile, m: &MicroResult) -> Result<()> {
    b.section(&format!("micro-{}", i.label), "Microbenchmarks");
    let c = &m.clock;
    b.p(&format!(
        "Clock: {} at {:.4} GHz, calibrated against {} over {:.0} ms (±{} ppm){}; it advances in steps of {} tick(s){}. Cycles are {}. Threads pinned to CPU {}, policy {}{}; sample counts ×{} the seeds'.",
        counter_name(m),
        c.counter_hz / 1e9,
        c.calibrated_against,
        c.calibration_window_ns as f64 / 1e6,
        c.calibration_uncertainty_ppm,
        if c.counter_flags.is_empty() { String::new() } else { format!(", flags {}", c.counter_flags.join(" ")) },
        c.resolution_ticks,
        if c.resolution_ticks > 1 {
            format!(" ({:.0} ns: a virtualised counter, so every figure is a multiple of it)", c.resolution_ticks as f64 * 1e9 / c.counter_hz)
        } else {
            String::new()
        },
        c.unit,
        m.cpu,
        m.policy,
        if m.stress.is_empty() { ", idle".to_string() } else { format!(", under stress {}", m.stress.join(",")) },
        m.scale
    ));
    let o = &m.overhead;
    let subtracted = m.benches.iter().any(|b| b.overhead_subtracted_cycles > 0);
    b.p(&format!(
        "Timing overhead (two back-to-back counter reads, {} samples): min {} / median {} / p99 {} cycles = median {} ns. It is {} every figure below.",
        o.cycles.count,
        o.cycles.min_cycles,
        o.cycles.p50_cycles,
        o.cycles.p99_cycles,
        o.ns.p50_ns,
        if subtracted { "subtracted from" } else { "included in (not subtracted from)" }
    ));
    let (bench_table, ranges) = micro_table(m);
    b.raw(&bench_table);
    let zs = m
        .benches
        .iter()
        .find(|x| x.id == "sem_give_switch")
        .and_then(|x| x.cycles);
    let zn = m
        .benches
        .iter()
        .find(|x| x.id == "sem_give_no_switch")
        .and_then(|x| x.cycles);
    if let (Some(a), Some(bb)) = (zs, zn) {
        b.p(&format!(
            "Zephyr set: the context switch alone (median of give-with-switch − median of give-without) is {} cycles here (the seed's Galileo Gen 2 under Zephyr: 483 cycles).",
            a.p50_cycles as i64 - bb.p50_cycles as i64
        ));
    }
    let notes: Vec<Vec<Cell>> = m
        .benches
        .iter()
        .flat_map(|x| {
            x.notes
                .iter()
                .map(move |n| vec![td(&x.id), td(n)])
                .chain(std::iter::once(vec![td(&x.id), cls(&x.method, "muted")]))
        })
        .collect();
    b.raw(&format!(
        "<details><summary>Method and notes per benchmark</summary>\n{}</details>\n",
        table(&["benchmark", "method / note"], &notes)
    ));
    b.raw(&warnings_table(&f.warnings));
    let svg = plots::ranges("Microbenchmark distributions", &ranges, Some(o.ns.p50_ns))?;
    b.fig(&format!("micro-{}", i.label), svg, "Each benchmark's distribution in ns (log axis): thin line min–max, bar p50–p99, dot median; the vertical line is the timing overhead included in every figure.");
    Ok(())
}

/// The table of every benchmark (skipped ones and planned ones with their reason) and the
/// distributions of those measured, for the plot.
fn micro_table(m: &MicroResult) -> (String, Vec<Range>) {
    let o = &m.overhead;
    let mut rows = Vec::new();
    let mut ranges = Vec::new();
    for x in &m.benches {
        match (&x.ns, &x.cycles) {
            (Some(d), Some(cy)) => {
                let s = &d.summary;
                rows.push(vec![
                    td(&x.set),
                    td(&x.title),
                    num(cy.count.to_string()),
                    num(s.min_ns.to_string()),
                    num(s.p50_ns.to_string()),
                    num(s.p99_ns.to_string()),
                    num(s.max_ns.to_string()),
                    num(cy.min_cycles.to_string()),
                    num(cy.p50_cycles.to_string()),
                    num(cy.p99_cycles.to_string()),
                    num(cy.max_cycles.to_string()),
                    num(format!("{:.0}", cy.mean_cycles)),
                    num(format!(
                        "{}",
                        if x.overhead_subtracted_cycles > 0 {
                            x.overhead_subtracted_cycles
                        } else {
                            o.cycles.p50_cycles
                        }
                    )),
                    num(x
                        .perf
                        .as_ref()
                        .map(|p| {
                            format!("{:.0} ({}, {:+.1} %)", p.per_op, p.event, p.deviation_pct)
                        })
                        .unwrap_or("–".into())),
                ]);
                ranges.push(Range {
                    label: x.id.clone(),
                    min_ns: s.min_ns,
                    p50_ns: s.p50_ns,
                    p99_ns: s.p99_ns,
                    max_ns: s.max_ns,
                });
            }
            _ => rows.push(vec![
                td(&x.set),
                td(&x.title),
                cls(
                    format!("skipped: {}", x.skipped.clone().unwrap_or_default()),
                    "muted",
                ),
            ]),
        }
    }
    for s in &m.sets {
        if let Some(note) = &s.note {
            for (n, id) in s.planned.iter().enumerate() {
                let title = crate::micro::framework::PLANNED
                    .iter()
                    .find(|(p, _)| p == id)
                    .map_or(id.as_str(), |(_, t)| t);
                // The reason once, on the first reserved row.
                let why = if n == 0 {
                    format!("not measured yet: {note}")
                } else {
                    "not measured yet".into()
                };
                rows.push(vec![td(&s.set), td(title), cls(why, "muted")]);
            }
        }
    }
    let table = table(
        &[
            "set",
            "benchmark",
            "samples",
            "min ns",
            "p50 ns",
            "p99 ns",
            "max ns",
            "min cyc",
            "p50 cyc",
            "p99 cyc",
            "max cyc",
            "mean cyc",
            "overhead cyc",
            "perf / op",
        ],
        &rows,
    );
    (table, ranges)
}

fn sysinfo_section(b: &mut Builder, inputs: &[Input]) {
    let mut seen: Vec<&SysInfo> = Vec::new();
    for i in inputs {
        if let Some(s) = sysinfo_of(&i.loaded) {
            if !seen.iter().any(|x| same_machine(x, s)) {
                seen.push(s);
            }
        }
    }
    if seen.is_empty() {
        return;
    }
    b.section("system", "System");
    for s in seen {
        let governors = if s.governors.is_empty() {
            "none exposed".to_string()
        } else {
            s.governors
                .iter()
                .map(|(c, g)| format!("cpu{c}: {g}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let rows = vec![
            vec![td("host"), td(&s.hostname)],
            vec![
                td("kernel"),
                td(format!("{} {}", s.kernel_release, s.kernel_version)),
            ],
            vec![td("machine"), td(&s.machine)],
            vec![td("CPU"), td(&s.cpu_model)],
            vec![td("online CPUs"), td(format!("{:?}", s.cpus_online))],
            vec![
                td("preemption model"),
                td(format!(
                    "{}{}",
                    s.preempt_model,
                    if s.preempt_dynamic {
                        " (PREEMPT_DYNAMIC)"
                    } else {
                        ""
                    }
                )),
            ],
            vec![
                td("/sys/kernel/realtime"),
                td(s.realtime_flag.map_or("absent".into(), |v| v.to_string())),
            ],
            vec![td("clocksource"), td(&s.clocksource)],
            vec![td("cpufreq governors"), td(governors)],
            vec![
                td("virtualisation"),
                td(s.virtualization.clone().unwrap_or("none detected".into())),
            ],
            vec![td("kernel command line"), td(&s.cmdline)],
        ];
        b.raw(&table(&["", ""], &rows));
    }
    let argv: Vec<Vec<Cell>> = inputs
        .iter()
        .filter_map(|i| {
            sysinfo_of(&i.loaded)
                .map(|s| vec![td(&i.label), td(i.loaded.kind()), td(s.argv.join(" "))])
        })
        .collect();
    b.h3("Commands");
    b.raw(&table(&["file", "kind", "command line"], &argv));
}

fn same_machine(a: &SysInfo, b: &SysInfo) -> bool {
    a.hostname == b.hostname
        && a.kernel_release == b.kernel_release
        && a.kernel_version == b.kernel_version
        && a.cmdline == b.cmdline
}

/// What [`write()`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// `index.html`.
    pub index: PathBuf,
    /// Figures written as SVG.
    pub svg: usize,
    /// Figures written as PNG.
    pub png: usize,
    /// Why PNGs are missing, if they are.
    pub png_note: Option<String>,
}

/// Writes `index.html` and `plots/` into `dir` (created).
pub fn write(report: &Report, dir: &Path, png: bool) -> Result<Written> {
    let plots_dir = dir.join("plots");
    crate::export::create_output_dir(&plots_dir)?;
    let mut png_count = 0;
    let mut png_note = (!png).then(|| "--no-png".to_string());
    let fonts = if png {
        Some(plots::system_fonts())
    } else {
        None
    };
    for p in &report.plots {
        crate::export::write_atomically(
            &plots_dir.join(format!("{}.svg", p.stem)),
            p.svg.as_bytes(),
        )?;
        if let Some(f) = &fonts {
            if plots::write_png(&p.svg, &plots_dir.join(format!("{}.png", p.stem)), f)? {
                png_count += 1;
            } else {
                png_note = Some("no system font found (install fonts-dejavu-core): PNG files skipped, SVG written".into());
            }
        }
    }
    let index = dir.join("index.html");
    crate::export::write_atomically(&index, report.html.as_bytes())?;
    Ok(Written {
        index,
        svg: report.plots.len(),
        png: png_count,
        png_note,
    })
}
