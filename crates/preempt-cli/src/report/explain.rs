//! The report's "why were the outliers late" part of a latency result run with `--explain`
//! (issue 13): a stacked bar per outlier (its causes, coloured by kind, adding up to its
//! latency), a table of the outliers drawn, and the run's top causes by total delay and by
//! count. Every number is read from the result file's `explain` block.

use anyhow::Result;
use plotters::style::RGBColor;
use preempt_trace::{CauseKind, TopCause};

use super::html::{Cell, cls, num, table, td};
use super::plots::{self, BarSeries, PALETTE};
use super::{Builder, latency_title};
use crate::results::input::Input;
use crate::results::{ExplainResult, ExplainedSample, LatencyResult};

/// Outliers drawn as bars (the worst ones): beyond about two dozen the bars get too thin to
/// read at the chart's 760 px width.
const MAX_BARS: usize = 24;
/// Rows of each top-causes table.
const MAX_CAUSES: usize = 10;

/// Every kind in stacking order, with its colour: the thread and interrupt causes first (what
/// a user can act on), then `lost` in red (what the trace lost), `invisible` last in grey
/// (what no recorded event explains).
const KINDS: [(CauseKind, RGBColor); 8] = [
    (CauseKind::Thread, PALETTE[0]),
    (CauseKind::Irq, PALETTE[1]),
    (CauseKind::Softirq, PALETTE[3]),
    (CauseKind::Timer, PALETTE[4]),
    (CauseKind::Wakeup, PALETTE[2]),
    (CauseKind::IdleExit, PALETTE[5]),
    (CauseKind::Lost, RGBColor(200, 40, 40)),
    (CauseKind::Invisible, RGBColor(150, 150, 150)),
];

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1_000.0)
}

fn who(kind: CauseKind, name: &str, pid: Option<i32>) -> [Cell; 3] {
    [
        td(kind.name()),
        td(name),
        pid.map_or_else(|| cls("–", "muted"), |p| num(p.to_string())),
    ]
}

fn steal_cell(t: &TopCause) -> Cell {
    match (t.steal_windows, t.steal_max_ns) {
        (Some(0), _) => td("none"),
        (Some(n), Some(max)) => td(format!("{n} windows, up to {:.1} ms", max as f64 / 1e6)),
        _ => cls("–", "muted"),
    }
}

fn causes_table(top: &[&TopCause], explained_ns: u64, explained: u64, nouns: &str) -> String {
    let rows: Vec<Vec<Cell>> = top
        .iter()
        .map(|t| {
            let mut row = who(t.kind, &t.name, t.pid).to_vec();
            row.push(num(us(t.total_ns)));
            row.push(num(format!(
                "{:.1}",
                100.0 * t.total_ns as f64 / explained_ns.max(1) as f64
            )));
            row.push(num(format!("{}/{explained}", t.count)));
            row.push(num(t.main_count.to_string()));
            row.push(steal_cell(t));
            row
        })
        .collect();
    table(
        &[
            "kind",
            "name",
            "pid",
            "total µs",
            "% of explained delay",
            &format!("in {nouns}"),
            "main cause of",
            "steal around them",
        ],
        &rows,
    )
}

/// The verdict's clause on why a latency run's outliers were late: the largest cause over its
/// explained outliers, or why they were not explained; `None` when explaining was not asked.
pub(super) fn verdict_part(l: &LatencyResult) -> Option<String> {
    let run = super::stress_label(l);
    if let Some(x) = &l.explain {
        let total: u64 = x.top_causes.iter().map(|t| t.total_ns).sum();
        return Some(match x.top_causes.first() {
            Some(t) => format!(
                "outliers {run}: mostly {} {} ({:.0} % of the delay of the {} explained from the kernel trace)",
                t.kind.name(),
                t.name,
                100.0 * t.total_ns as f64 / total.max(1) as f64,
                x.explained
            ),
            None => format!("outliers {run}: none could be explained from the kernel trace"),
        });
    }
    l.explain_skipped
        .as_ref()
        .map(|why| format!("outliers {run}: not explained ({why})"))
}

/// The section of one latency result's explanations.
pub(super) fn section(
    b: &mut Builder,
    i: &Input,
    l: &LatencyResult,
    x: &ExplainResult,
) -> Result<()> {
    b.h3(&format!(
        "Why the outliers were late: {}",
        latency_title(i, l)
    ));
    let threshold = x.threshold_ns.map_or_else(
        || "above each thread's p99.9".to_string(),
        |t| format!("at or above {} µs", us(t)),
    );
    b.p(&format!(
        "{} outliers ({threshold}) explained from the kernel trace, {} not explained ({}). {}",
        x.explained,
        x.unexplained,
        x.unexplained_why
            .as_deref()
            .unwrap_or("beyond the per-thread cap or no longer in the trace history"),
        CAUSES_TEXT.replace("{noun}", "outlier")
    ));
    let all = x
        .threads
        .iter()
        .flat_map(|t| t.explanations.iter().map(|e| Drawn::outlier(t.cpu, e)))
        .collect();
    draw(
        b,
        &Drawing {
            stem: &format!("explain-outliers-{}", i.label),
            title: &format!("Why the outliers were late: {}", i.label),
            subject: &latency_title(i, l),
            noun: "outlier",
            who: "thread",
            cycle: "cycle",
        },
        all,
        &x.top_causes,
        x.explained,
    )
}

/// The part of an app's section (a demo's controller) that explains its deadline misses from
/// the kernel trace: the same bars and tables as a latency run's outliers, per task.
pub(super) fn app_section(
    b: &mut Builder,
    label: &str,
    subject: &str,
    x: &preempt::explain::Report,
) -> Result<()> {
    b.h3(&format!("Why the deadline misses were late: {subject}"));
    if x.partial {
        b.p(&format!(
            "PARTIAL: {} of {} explained misses only partly traced (events lost), {} misses \
             not noted (the note logs, {} notes in all, were full or busy), {} not explained.",
            x.partly_traced, x.explained, x.dropped_notes, x.log_capacity, x.unexplained
        ));
    }
    b.p(&format!(
        "{} deadline misses explained from the kernel trace, {} not explained (no longer in \
         the trace history, or not noted: {} while their note log was full or busy). A miss is a job \
         that ended after its deadline, or a run of releases dropped unrun (on_miss = Skip): \
         its delay runs from the (first) release to the moment the job could start. {}",
        x.explained,
        x.unexplained,
        x.dropped_notes,
        CAUSES_TEXT.replace("{noun}", "miss")
    ));
    let all = x
        .tasks
        .iter()
        .flat_map(|t| t.explanations.iter().map(|e| Drawn::miss(&t.task, e)))
        .collect();
    draw(
        b,
        &Drawing {
            stem: &format!("explain-misses-{label}"),
            title: &format!("Why the deadline misses were late: {label}"),
            subject,
            noun: "miss",
            who: "task",
            cycle: "miss #",
        },
        all,
        &x.top_causes,
        x.explained,
    )
}

/// What each kind of cause means (both sections; `{noun}` stands for `outlier` or `miss`).
const CAUSES_TEXT: &str = "Each {noun}'s delay is split into causes that add up to it: irq, softirq, thread (another thread held the CPU), wakeup (waking to running), idle_exit (C-state exit), timer (hrtimer callbacks), lost (the trace lost its events: the reader fell behind), invisible (nothing recorded explains it: host steal, SMI, interrupts off; the CPU's /proc/stat steal time around it is shown beside it). Method and limits: docs/MEASURING.md.";

/// One explained delay as drawn.
struct Drawn<'a> {
    /// Its thread (`cpuN`) or task.
    who: String,
    cycle: u64,
    latency_ns: u64,
    causes: &'a [preempt_trace::Cause],
    steal_ns: Option<u64>,
    /// Whether the trace covered the window (`None`: not recorded).
    covered: Option<bool>,
}

impl<'a> Drawn<'a> {
    /// A latency outlier of the thread on `cpu`.
    fn outlier(cpu: usize, e: &'a ExplainedSample) -> Drawn<'a> {
        Drawn {
            who: format!("cpu{cpu}"),
            cycle: e.cycle,
            latency_ns: e.latency_ns,
            causes: &e.causes,
            steal_ns: e.steal_ns,
            covered: Some(e.covered),
        }
    }

    /// A deadline miss of `task`.
    fn miss(task: &str, e: &'a preempt::explain::Explained) -> Drawn<'a> {
        Drawn {
            who: task.to_string(),
            cycle: e.cycle,
            latency_ns: e.latency_ns,
            causes: &e.causes,
            steal_ns: e.steal_ns,
            covered: Some(e.covered),
        }
    }
}

/// The names a drawing uses.
struct Drawing<'a> {
    stem: &'a str,
    title: &'a str,
    subject: &'a str,
    /// `outlier` or `miss`.
    noun: &'a str,
    /// The `who` column's header.
    who: &'a str,
    /// The `cycle` column's header.
    cycle: &'a str,
}

/// The worst explained delays as stacked bars and a table, then the top causes by total
/// delay and by count.
fn draw(
    b: &mut Builder,
    d: &Drawing<'_>,
    mut all: Vec<Drawn<'_>>,
    top_causes: &[TopCause],
    explained: u64,
) -> Result<()> {
    let nouns = if d.noun == "miss" {
        "misses"
    } else {
        "outliers"
    };
    all.sort_by_key(|e| std::cmp::Reverse(e.latency_ns));
    all.truncate(MAX_BARS);
    if all.is_empty() {
        b.p(&format!("No {} was explained.", d.noun));
        return Ok(());
    }
    // A window whose trace lost events is marked `N*` (its lost time is the red `lost` part).
    let categories: Vec<String> = all
        .iter()
        .enumerate()
        .map(|(n, e)| match e.covered {
            Some(false) => format!("{}*", n + 1),
            _ => (n + 1).to_string(),
        })
        .collect();
    let partly = all.iter().filter(|e| e.covered == Some(false)).count();
    // Milliseconds once the worst delay passes 10 ms: shorter axis labels.
    let (unit, per) = if all[0].latency_ns > 10_000_000 {
        ("ms", 1e6)
    } else {
        ("µs", 1e3)
    };
    let (mut series, mut colors) = (Vec::new(), Vec::new());
    for (kind, color) in KINDS {
        let values: Vec<Option<f64>> = all
            .iter()
            .map(|e| {
                let ns: u64 = e
                    .causes
                    .iter()
                    .filter(|c| c.kind == kind)
                    .map(|c| c.ns)
                    .sum();
                (ns > 0).then(|| ns as f64 / per)
            })
            .collect();
        if values.iter().any(Option::is_some) {
            series.push(BarSeries {
                label: kind.name().into(),
                values,
            });
            colors.push(color);
        }
    }
    let svg = plots::stacked_bars(
        d.title,
        &format!("delay ({unit})"),
        &categories,
        &series,
        &colors,
    )?;
    b.fig(
        d.stem,
        svg,
        &format!(
            "The {} worst explained {nouns} of {}, worst first (numbered as in the table below): one bar per {}, one segment per kind of cause, adding up to its latency.{}",
            all.len(),
            d.subject,
            d.noun,
            if partly > 0 {
                format!(
                    " {partly} of them (marked *) only partly traced: the trace lost events in their window, their time shows as lost."
                )
            } else {
                String::new()
            }
        ),
    );
    b.raw(&delay_table(d, &all));
    let explained_ns: u64 = top_causes.iter().map(|t| t.total_ns).sum();
    let by_total: Vec<&TopCause> = top_causes.iter().take(MAX_CAUSES).collect();
    b.p("Top causes by total delay:");
    b.raw(&causes_table(&by_total, explained_ns, explained, nouns));
    let mut by_count: Vec<&TopCause> = top_causes.iter().collect();
    by_count.sort_by(|a, b| b.count.cmp(&a.count).then(b.total_ns.cmp(&a.total_ns)));
    by_count.truncate(MAX_CAUSES);
    b.p(&format!("Top causes by count ({nouns} they appear in):"));
    b.raw(&causes_table(&by_count, explained_ns, explained, nouns));
    Ok(())
}

/// The table of the drawn delays, numbered as their bars: who, when, the latency, its main
/// cause and share, the steal time, and whether the trace covered the window.
fn delay_table(d: &Drawing<'_>, all: &[Drawn<'_>]) -> String {
    let with_covered = all.iter().any(|e| e.covered.is_some());
    let rows: Vec<Vec<Cell>> = all
        .iter()
        .enumerate()
        .map(|(n, e)| {
            let main = e.causes.first();
            let mut row = vec![
                num((n + 1).to_string()),
                td(&e.who),
                num(e.cycle.to_string()),
                num(us(e.latency_ns)),
                td(main.map_or("–".into(), |c| format!("{} {}", c.kind.name(), c.name))),
                num(main.map_or("–".into(), |c| {
                    format!("{:.0}", 100.0 * c.ns as f64 / e.latency_ns.max(1) as f64)
                })),
                e.steal_ns.map_or_else(
                    || cls("–", "muted"),
                    |s| num(format!("{:.1}", s as f64 / 1e6)),
                ),
            ];
            if with_covered {
                row.push(match e.covered {
                    Some(true) => td("yes"),
                    Some(false) => cls("no (events lost)", "warn"),
                    None => cls("–", "muted"),
                });
            }
            row
        })
        .collect();
    let mut headers = vec![
        "#",
        d.who,
        d.cycle,
        "latency µs",
        "main cause",
        "% of it",
        "steal ms",
    ];
    if with_covered {
        headers.push("trace covered");
    }
    table(&headers, &rows)
}
