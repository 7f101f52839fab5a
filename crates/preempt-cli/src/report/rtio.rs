//! The report's `rtio_bench` section: the Zephyr RTIO talk's table (seed `000_…`), thread-based
//! vs RTIO-based IMU reading, as `preempt rtio-bench` measured it.
//!
//! Per bus, one table with a row per ODR × extra streams and the two designs side by side in
//! every column the talk has (CPU load, latency p50/p99/max, jitter peak-to-peak and σ, missed
//! events, context switches per sample) plus the process CPU; a sentence that counts, from the
//! cells, where RTIO used less CPU and where each design missed events; a CPU bar chart and a
//! latency box plot. A `--sweep` result adds the break-point table. Every number is read from
//! the file.

use anyhow::Result;

use super::Builder;
use super::html::{Cell, cls, num, table, td};
use super::plots::{self, BarSeries, BoxStat};
use crate::results::ResultFile;
use crate::results::input::Input;
use crate::results::rtio::{RtioBenchResult, RtioCell};

fn us1(ns: f64) -> String {
    format!("{:.1}", ns / 1_000.0)
}

fn latency(c: &RtioCell) -> String {
    format!(
        "{} / {} / {}",
        us1(c.latency_p50_ns as f64),
        us1(c.latency_p99_ns as f64),
        us1(c.latency_max_ns as f64)
    )
}

fn jitter(c: &RtioCell) -> String {
    format!(
        "{} / {}",
        us1(c.jitter_pp_ns as f64),
        us1(c.jitter_sigma_ns)
    )
}

fn missed(c: &RtioCell) -> Cell {
    let n = c.missed_total();
    if n > 0 {
        cls(n.to_string(), "fail")
    } else {
        cls("0", "pass")
    }
}

/// A pair of cells, thread then RTIO, or a muted dash where the design did not run.
fn pair(t: Option<&RtioCell>, r: Option<&RtioCell>, f: &dyn Fn(&RtioCell) -> Cell) -> [Cell; 2] {
    let one = |c: Option<&RtioCell>| c.map_or_else(|| cls("–", "muted"), f);
    [one(t), one(r)]
}

/// Counts, over the rows where both designs ran: rows, rows where RTIO is lower than
/// threads by `f`, and the same two among rows with extra streams.
fn lower_with_rtio(
    rows: &[(Option<&RtioCell>, Option<&RtioCell>)],
    f: impl Fn(&RtioCell) -> f64,
) -> (usize, usize, usize, usize) {
    let both: Vec<(&RtioCell, &RtioCell)> = rows
        .iter()
        .filter_map(|(t, r)| Some(((*t)?, (*r)?)))
        .collect();
    let extra: Vec<&(&RtioCell, &RtioCell)> = both
        .iter()
        .filter(|(t, _)| t.extra_streams != "none")
        .collect();
    (
        both.len(),
        both.iter().filter(|(t, r)| f(r) < f(t)).count(),
        extra.len(),
        extra.iter().filter(|(t, r)| f(r) < f(t)).count(),
    )
}

/// A short category label for the figures: `3200 2@400Hz` → `3.2k 2@400`.
fn short(odr: u32, extra: &str) -> String {
    let odr = if odr % 1000 == 0 || odr % 100 != 0 {
        format!("{}k", f64::from(odr) / 1000.0)
    } else {
        format!("{:.1}k", f64::from(odr) / 1000.0)
    };
    format!("{odr} {}", extra.trim_end_matches("Hz"))
}

fn bus_table(
    b: &mut Builder,
    i: &Input,
    r: &RtioBenchResult,
    bus: &str,
    keys: &[(u32, String)],
) -> Result<()> {
    let rows: Vec<(Option<&RtioCell>, Option<&RtioCell>)> = keys
        .iter()
        .map(|(odr, extra)| {
            (
                r.cell(bus, *odr, extra, "thread"),
                r.cell(bus, *odr, extra, "rtio"),
            )
        })
        .collect();
    let body: Vec<Vec<Cell>> = keys
        .iter()
        .zip(&rows)
        .map(|((odr, extra), (t, rc))| {
            let mut row = vec![num(odr.to_string()), td(extra)];
            row.extend(pair(*t, *rc, &|c| {
                num(format!("{:.1}", c.consumer_cpu_load_pct))
            }));
            row.extend(pair(*t, *rc, &|c| num(format!("{:.1}", c.process_cpu_pct))));
            row.extend(pair(*t, *rc, &|c| {
                num(format!("{:.1}", c.process_cpu_per_sample_ns / 1000.0))
            }));
            row.extend(pair(*t, *rc, &|c| num(latency(c))));
            row.extend(pair(*t, *rc, &|c| num(jitter(c))));
            row.extend(pair(*t, *rc, &missed));
            row.extend(pair(*t, *rc, &|c| {
                num(format!("{:.2}", c.context_switches_per_sample))
            }));
            row
        })
        .collect();
    b.raw(&table(
        &[
            "ODR Hz",
            "extra streams",
            "CPU load % thread",
            "CPU load % RTIO",
            "process CPU % thread",
            "process CPU % RTIO",
            "CPU µs / frame thread",
            "CPU µs / frame RTIO",
            "latency p50 / p99 / max µs thread",
            "latency p50 / p99 / max µs RTIO",
            "jitter p-p / σ µs thread",
            "jitter p-p / σ µs RTIO",
            "missed thread",
            "missed RTIO",
            "cs/sample thread",
            "cs/sample RTIO",
        ],
        &body,
    ));
    let (n, load_lower, n_extra, load_lower_extra) =
        lower_with_rtio(&rows, |c| c.consumer_cpu_load_pct);
    let (_, proc_lower, _, proc_lower_extra) = lower_with_rtio(&rows, |c| c.process_cpu_pct);
    let missing = |d: usize| {
        rows.iter()
            .filter(|p| {
                let c = if d == 0 { p.0 } else { p.1 };
                c.is_some_and(RtioCell::missed)
            })
            .count()
    };
    b.p(&format!(
        "In this run, RTIO used less CPU than threads in {load_lower} of {n} rows by consumer-CPU load ({load_lower_extra} of {n_extra} rows with extra streams) and in {proc_lower} of {n} by process CPU time ({proc_lower_extra} of {n_extra} with extra streams). Threads missed events in {} row(s), RTIO in {}.",
        missing(0),
        missing(1)
    ));
    let cats: Vec<String> = keys.iter().map(|(o, e)| short(*o, e)).collect();
    let series = |label: &str, d: usize| BarSeries {
        label: label.into(),
        values: rows
            .iter()
            .map(|p| (if d == 0 { p.0 } else { p.1 }).map(|c| c.process_cpu_pct))
            .collect(),
    };
    let svg = plots::bars(
        &format!("Process CPU per row, {bus} bus"),
        "process CPU (%)",
        &cats,
        &[series("thread", 0), series("RTIO", 1)],
    )?;
    b.fig(
        &format!("rtio-cpu-{bus}-{}", i.label),
        svg,
        &format!("{bus} bus: CPU time of the benchmark process (all consumer threads, io_uring workers included) over wall time, per row of the table, thread-based vs RTIO-based; ODR in kHz, extra streams as count@rate."),
    );
    let mut boxes = Vec::new();
    for ((odr, extra), (t, rc)) in keys.iter().zip(&rows) {
        for (label, c) in [("thread", t), ("RTIO", rc)] {
            if let Some(c) = c {
                boxes.push(BoxStat {
                    category: short(*odr, extra),
                    group: label.into(),
                    // Only p50, p99 and max are recorded: the whisker starts at the median.
                    min_ns: c.latency_p50_ns,
                    p25_ns: None,
                    p50_ns: c.latency_p50_ns,
                    p75_ns: None,
                    p99_ns: c.latency_p99_ns,
                    max_ns: c.latency_max_ns,
                });
            }
        }
    }
    let svg = plots::boxplot(&format!("Latency interrupt → processed, {bus} bus"), &boxes)?;
    b.fig(
        &format!("rtio-latency-{bus}-{}", i.label),
        svg,
        &format!("{bus} bus: latency from the sample's interrupt to its processing, per row: thick line median, dot p99, whisker up to the maximum (the benchmark records no minimum or quartiles), log axis."),
    );
    Ok(())
}

/// Writes the section of one `rtio_bench` result.
pub(super) fn section(
    b: &mut Builder,
    i: &Input,
    f: &ResultFile,
    r: &RtioBenchResult,
) -> Result<()> {
    b.section(
        &format!("rtio-{}", i.label),
        "Thread-based vs RTIO-based sensor reading",
    );
    let s = &r.settings;
    let mut used: Vec<&str> = r
        .cells
        .iter()
        .filter_map(|c| c.rtio_backend.as_deref())
        .collect();
    used.dedup();
    let sweep = s.mode == "sweep";
    let odrs = s
        .odrs_hz
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" or ");
    let spi = s.buses.iter().any(|b| b.starts_with("spi"));
    b.p(&format!(
        "From {}: the Zephyr RTIO talk's benchmark on Linux. A simulated IMU (imu-sim, pinned to CPU {}, SCHED_FIFO {}) {}, read on CPU {} either by one SCHED_FIFO {} thread per sensor doing blocking bus transfers (thread) or by one thread with an RTIO context running each sensor's status → count → FIFO transfers as one linked chain (RTIO). Buses: {}{}. {:.1} s per cell{}. RTIO backend requested: {}; used: {}. kernel.io_uring_disabled = {}.{}",
        i.source,
        s.sim_cpu,
        u32::from(s.priority) + 1,
        if sweep {
            "at the sweep's rate with its extra accelerometers".to_string()
        } else {
            format!("at {odrs} Hz plus 0–2 extra accelerometers")
        },
        s.consumer_cpu,
        s.priority,
        s.buses.join(", "),
        if spi {
            format!(" (SPI at {} ns per byte)", s.bus_ns_per_byte)
        } else {
            String::new()
        },
        s.duration_per_cell_ns as f64 / 1e9,
        if sweep {
            String::new()
        } else {
            format!(", {} µs of compute per sample", s.work_us)
        },
        s.backend,
        if !used.is_empty() {
            used.join("; ")
        } else if sweep {
            "not recorded by a sweep".into()
        } else {
            "none".into()
        },
        r.io_uring_disabled
            .map_or("absent".into(), |v| v.to_string()),
        if f.interrupted {
            " Interrupted: covers only what ran."
        } else if !f.complete {
            " Incomplete: the run was still going when this file was written."
        } else {
            ""
        }
    ));
    if !r.cells.is_empty() {
        b.p("CPU load = busy share of the consumer CPU from /proc/stat (interrupt time included, like Zephyr's cpu_load); process CPU = the benchmark's CPU time over wall time; latency = sample stored (interrupt raised) → processed; jitter = peak-to-peak and σ of the IMU's processing period around 1/ODR; missed = samples never processed (sequence gaps or FIFO-full drops, the talk's \"Missing events\"); cs/sample = context switches per processed sample.");
    }
    let mut buses: Vec<&str> = Vec::new();
    for c in &r.cells {
        if !buses.contains(&c.bus.as_str()) {
            buses.push(&c.bus);
        }
    }
    for bus in buses {
        b.h3(&format!("{bus} bus"));
        let keys: Vec<(u32, String)> = r
            .rows()
            .into_iter()
            .filter(|(bb, _, _)| bb == bus)
            .map(|(_, o, e)| (o, e))
            .collect();
        bus_table(b, i, r, bus, &keys)?;
    }
    if !r.sweep.is_empty() {
        sweep_section(b, r);
    }
    if !r.notes.is_empty() {
        let rows: Vec<Vec<Cell>> = r.notes.iter().map(|n| vec![td(n)]).collect();
        b.raw(&table(&["notes recorded by the benchmark"], &rows));
    }
    b.raw(&super::warnings_table(&f.warnings));
    Ok(())
}

/// The break points of a `--sweep`: the table, then per bus which design sustains more
/// work per sample.
fn sweep_section(b: &mut Builder, r: &RtioBenchResult) {
    b.h3("Break points (--sweep)");
    b.p("The per-sample compute (--work-us) is raised until the design first misses an event; a workload that misses is run a second time and counts as missing only if it misses again. Higher is better: the design keeps up with more work per sample.");
    let rows: Vec<Vec<Cell>> = r
        .sweep
        .iter()
        .map(|p| {
            let opt = |v: Option<u32>| v.map_or_else(|| cls("–", "muted"), |v| num(v.to_string()));
            vec![
                td(&p.bus),
                num(p.odr_hz.to_string()),
                td(&p.extra_streams),
                td(if p.design == "rtio" {
                    "RTIO"
                } else {
                    p.design.as_str()
                }),
                opt(p.max_sustained_work_us),
                opt(p.first_missing_work_us),
                num(p.trials.len().to_string()),
            ]
        })
        .collect();
    b.raw(&table(
        &[
            "bus",
            "ODR Hz",
            "extra streams",
            "design",
            "sustained µs/sample",
            "first missing µs/sample",
            "trials",
        ],
        &rows,
    ));
    let mut buses: Vec<&str> = Vec::new();
    for p in &r.sweep {
        if !buses.contains(&p.bus.as_str()) {
            buses.push(&p.bus);
        }
    }
    for bus in buses {
        let find = |d: &str| {
            r.sweep
                .iter()
                .find(|p| p.bus == bus && p.design == d)
                .and_then(|p| p.max_sustained_work_us)
        };
        if let (Some(t), Some(x)) = (find("thread"), find("rtio")) {
            let verdict = match x.cmp(&t) {
                std::cmp::Ordering::Greater => {
                    format!("RTIO sustains {} µs more per sample than threads", x - t)
                }
                std::cmp::Ordering::Less => {
                    format!("threads sustain {} µs more per sample than RTIO", t - x)
                }
                std::cmp::Ordering::Equal => "both designs break at the same workload".into(),
            };
            b.p(&format!("{bus} bus: {verdict} ({x} vs {t} µs)."));
        }
    }
}

/// The summary cards of one `rtio_bench` result: missed events and the CPU comparison of a
/// table, or the break points of a sweep (first bus).
pub(super) fn cards(r: &RtioBenchResult) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    if !r.cells.is_empty() {
        let sum = |d: &str| {
            r.cells
                .iter()
                .filter(|c| c.design == d)
                .map(RtioCell::missed_total)
                .sum::<u64>()
        };
        let rows = r.rows();
        let pairs: Vec<(Option<&RtioCell>, Option<&RtioCell>)> = rows
            .iter()
            .map(|(bus, o, e)| (r.cell(bus, *o, e, "thread"), r.cell(bus, *o, e, "rtio")))
            .collect();
        let (n, lower, _, _) = lower_with_rtio(&pairs, |c| c.process_cpu_pct);
        out.push((
            "Missed events, thread vs RTIO".to_string(),
            format!("{} vs {}", sum("thread"), sum("rtio")),
            format!(
                "{} cells; RTIO used less process CPU in {lower} of {n} rows",
                r.cells.len()
            ),
        ));
    }
    if let Some(first) = r.sweep.first() {
        let find = |d: &str| {
            r.sweep
                .iter()
                .find(|p| p.bus == first.bus && p.design == d)
                .and_then(|p| p.max_sustained_work_us)
                .map_or("–".to_string(), |w| format!("{w} µs"))
        };
        out.push((
            "Break point, thread vs RTIO".to_string(),
            format!("{} vs {}", find("thread"), find("rtio")),
            format!(
                "largest work per sample without a missed event, {} bus, {} Hz + {}",
                first.bus, first.odr_hz, first.extra_streams
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{build, input, sample};

    /// Headings, paragraphs, table rows, captions and cards of the page, one line each.
    fn outline(html: &str) -> String {
        let text = |s: &str| {
            let mut out = String::new();
            let mut tag = false;
            for c in s.chars() {
                match c {
                    '<' => tag = true,
                    '>' => tag = false,
                    c if !tag => out.push(c),
                    _ => {}
                }
            }
            out.split_whitespace().collect::<Vec<_>>().join(" ")
        };
        let mut out = String::new();
        for line in html.lines() {
            let l = line.trim_start();
            if l.starts_with("<h2") || l.starts_with("<h3") || l.starts_with("<p>") {
                out.push_str(&text(l));
                out.push('\n');
            } else if l.starts_with("<tr>") || l.starts_with("<thead><tr>") {
                let cells: Vec<String> = l
                    .replace("</th>", "\u{1}")
                    .replace("</td>", "\u{1}")
                    .split('\u{1}')
                    .map(text)
                    .collect();
                out.push_str(&format!("| {} |\n", cells[..cells.len() - 1].join(" | ")));
            } else if l.starts_with("<figcaption") {
                out.push_str(&format!("figure: {}\n", text(l)));
            } else if l.contains("<div class=\"card\">") {
                for card in l.split("<div class=\"card\">").skip(1) {
                    let parts: Vec<String> = card
                        .split("</div>")
                        .map(text)
                        .filter(|p| !p.is_empty())
                        .collect();
                    out.push_str(&format!("card {}\n", parts.join(" / ")));
                }
            }
        }
        out
    }

    fn page(files: &[(&str, ResultFile)]) -> crate::report::Report {
        let dir = tempfile::tempdir().unwrap();
        for (name, f) in files {
            std::fs::write(dir.path().join(name), serde_json::to_vec(f).unwrap()).unwrap();
        }
        let inputs = input::load_many(&[dir.path().to_path_buf()]).unwrap();
        let mut r = build(&inputs, &[], "rtio").unwrap();
        r.html = r.html.replace(&dir.path().display().to_string(), "{dir}");
        r
    }

    #[test]
    fn rtio_section_outline() {
        let r = page(&[
            ("rtio-table.json", sample::rtio_bench()),
            ("rtio-sweep.json", sample::rtio_sweep()),
        ]);
        let o = outline(&r.html);
        insta::assert_snapshot!("rtio_section_outline", o);
        let stems: Vec<&str> = r.plots.iter().map(|p| p.stem.as_str()).collect();
        assert_eq!(
            stems,
            vec!["rtio-cpu-spi-rtio-table", "rtio-latency-spi-rtio-table"]
        );
    }

    #[test]
    fn the_table_shows_the_files_numbers() {
        let mut f = sample::rtio_bench();
        if let crate::results::RunResult::RtioBench(r) = &mut f.result {
            let c = r
                .cells
                .iter_mut()
                .find(|c| c.design == "rtio" && c.odr_hz == 6400)
                .unwrap();
            c.latency_p99_ns = 987_654_321;
            c.missed_events = 4242;
        }
        let r = page(&[("x.json", f)]);
        assert!(r.html.contains("987654.3"), "edited p99 not shown");
        assert!(
            r.html.contains("<td class=\"fail\">4242</td>"),
            "edited missed events not flagged"
        );
        assert!(
            r.html.contains("RTIO in 1"),
            "the missed-rows count follows the cells"
        );
    }

    #[test]
    fn short_labels_fit_the_axis() {
        assert_eq!(short(3200, "none"), "3.2k none");
        assert_eq!(short(6400, "2@400Hz"), "6.4k 2@400");
        assert_eq!(short(1000, "1@100Hz"), "1k 1@100");
    }
}
