//! The report's section for `demo_uav` results: per flight (cell) the release latency, the
//! missed periods, the cascade's compute time and the flight quality against the ideal-timing
//! reference; box plots of latency and position error per cell; time series of both for the
//! worst cell (the largest RMS position error; a crash counts as worst); per flight flown
//! with `--explain`, its deadline misses explained from the kernel trace (the gimbal's
//! rendering, [`super::gimbal::explained`]).

use anyhow::Result;

use super::Builder;
use super::html::{Cell, num, table, td};
use super::plots::{self, BoxStat, TimeSeries};
use crate::results::input::Input;
use preempt_uav::demo::UavData;
use preempt_uav::result::{FlightCell, Quartiles};

fn us(ns: u64) -> Cell {
    num(format!("{:.1}", ns as f64 / 1e3))
}

/// A box of `q` (in the plot's unit × 1000: ns for µs, µm for mm); the category is the
/// policy shortened to fit eight under one axis (`FIFO 99`, `OTHER -19`, `DL 400us`).
fn boxed(policy: &str, group: &str, q: &Quartiles, scale: f64) -> BoxStat {
    let v = |x: f64| (x * scale).round().max(0.0) as u64;
    let category = policy
        .replace("SCHED_", "")
        .replace("DEADLINE", "DL")
        .replace("nice ", "");
    BoxStat {
        category,
        group: group.into(),
        min_ns: v(q.min),
        p25_ns: Some(v(q.p25)),
        p50_ns: v(q.p50),
        p75_ns: Some(v(q.p75)),
        p99_ns: v(q.p99),
        max_ns: v(q.max),
    }
}

/// Appends the section of one `demo_uav` result.
pub(super) fn section(b: &mut Builder, i: &Input, d: &UavData) -> Result<()> {
    b.section(
        &format!("uav-{}", i.label),
        &format!(
            "UAV demonstrator: {} ({})",
            i.label,
            if d.matrix {
                "policy x stress matrix"
            } else {
                "one flight"
            }
        ),
    );
    b.p(&format!(
        "From {}. {:.1} s per flight of the {:.1} s mission (take off, hover, 1 m square from \
         {:.1} s to {:.1} s, land), seed {}{}. Latency is the 250 Hz control job's start \
         minus its release; compute is the cascade's own time (position, attitude, \
         allocator); errors are the distances between the positions (attitudes) this flight \
         and the reference flight sensed at the same control step, the reference being the \
         same mission flown on the mock clock with ideal timing.",
        i.source,
        d.duration_s,
        d.mission_s,
        d.square_window_s.0,
        d.square_window_s.1,
        d.seed,
        if d.soft {
            "; SOFT MODE (SCHED_OTHER, no policy applied): not real-time figures"
        } else {
            ""
        },
    ));
    b.raw(&cell_table(d));
    let flown: Vec<_> = d.cells.iter().filter(|c| c.flown_steps > 0).collect();
    if flown.is_empty() {
        return Ok(());
    }
    for c in &flown {
        super::gimbal::explained(
            b,
            &format!(
                "{}-{}",
                i.label,
                crate::measure::matrix::slug(&format!("{} {}", c.policy, c.stress))
            ),
            &format!(
                "UAV control task, {} stress {}, {}",
                c.policy, c.stress, i.label
            ),
            &c.explained,
        )?;
    }
    box_figures(b, i, &flown)?;
    if let Some(w) = crate::results::uav::worst_cell(d) {
        worst_cell_figures(b, i, w)?;
    }
    Ok(())
}

/// The table of every cell: latency, missed periods, compute and flight quality.
fn cell_table(d: &UavData) -> String {
    let mm = |m: f64| num(format!("{:.2}", m * 1e3));
    let rows: Vec<Vec<Cell>> = d
        .cells
        .iter()
        .map(|c| {
            if c.flown_steps == 0 {
                return vec![
                    td(&c.policy),
                    td(&c.stress),
                    td(c.error.as_deref().unwrap_or("not measured")),
                ];
            }
            vec![
                td(&c.policy),
                td(&c.stress),
                us(c.latency.p50),
                us(c.latency.p99),
                us(c.latency.max),
                num(c.missed_periods.to_string()),
                us(c.compute_ns.p50),
                us(c.compute_ns.p99),
                us(c.compute_ns.max),
                mm(c.rms_position_error_m),
                c.rms_position_error_square_m.map_or(num("-"), mm),
                mm(c.max_position_error_m),
                num(format!("{:.2}", c.max_attitude_error_rad.to_degrees())),
                td(if c.crashed { "CRASHED" } else { "no" }),
            ]
        })
        .collect();
    table(
        &[
            "policy",
            "stress",
            "latency p50 µs",
            "p99",
            "max",
            "missed",
            "compute p50 µs",
            "p99",
            "max",
            "RMS pos. error mm",
            "over the square",
            "max mm",
            "max att. error °",
            "crashed",
        ],
        &rows,
    )
}

/// Box plots of release latency and position error, one box per flown cell.
fn box_figures(b: &mut Builder, i: &Input, flown: &[&FlightCell]) -> Result<()> {
    // The runtime's exact summary (no quartiles: the box is absent, the median a line).
    let lat: Vec<BoxStat> = flown
        .iter()
        .map(|c| BoxStat {
            p25_ns: None,
            p75_ns: None,
            p50_ns: c.latency.p50,
            p99_ns: c.latency.p99,
            min_ns: c.latency.min,
            max_ns: c.latency.max,
            ..boxed(&c.policy, &c.stress, &Quartiles::default(), 0.0)
        })
        .collect();
    b.fig(
        &format!("uav-latency-{}", i.label),
        plots::boxplot("Control-job release latency per cell", &lat)?,
        "From preempt's own accounting of the control task (start − scheduled release): thick \
         line median, whiskers min–max, dot p99; log axis.",
    );
    let pos: Vec<BoxStat> = flown
        .iter()
        .map(|c| boxed(&c.policy, &c.stress, &c.position_error_box_m, 1e6))
        .collect();
    b.fig(
        &format!("uav-position-error-{}", i.label),
        plots::boxplot_in(
            "Position error against the reference per cell",
            "position error (mm, log)",
            &pos,
        )?,
        "Per control step, the distance between the sensed positions of this flight and of \
         the reference; box p25–p75, median, whiskers min–max, dot p99.",
    );
    Ok(())
}

/// Time series of latency and position error over the worst cell's flight (when it kept one).
fn worst_cell_figures(b: &mut Builder, i: &Input, w: &FlightCell) -> Result<()> {
    if let Some(s) = &w.series {
        let k = |t: f32| (f64::from(t) / preempt_uav::control::PERIOD_S).round() as u64;
        let lat = TimeSeries {
            label: format!("{} {}", w.policy, w.stress),
            points: s
                .t_s
                .iter()
                .zip(&s.latency_us)
                .map(|(t, l)| (k(*t), (f64::from(*l) * 1e3) as u64))
                .collect(),
        };
        let err = TimeSeries {
            label: lat.label.clone(),
            points: s
                .t_s
                .iter()
                .zip(&s.position_error_m)
                .map(|(t, e)| (k(*t), (f64::from(*e) * 1e6) as u64))
                .collect(),
        };
        b.fig(
            &format!("uav-worst-latency-{}", i.label),
            plots::time_series_in(
                &format!("Worst cell ({} {}): latency", w.policy, w.stress),
                "control step (4 ms)",
                "latency (µs, log)",
                &[lat],
            )?,
            "Release latency of every control step of the cell with the largest RMS \
             position error, against the app's 4 ms grid (started a few µs after the \
             runtime's, so it under-reads the runtime's figures by that constant offset).",
        );
        b.fig(
            &format!("uav-worst-error-{}", i.label),
            plots::time_series_in(
                &format!("Worst cell ({} {}): position error", w.policy, w.stress),
                "control step (4 ms)",
                "position error (mm, log)",
                &[err],
            )?,
            "Its position error against the reference, step by step.",
        );
    }
    Ok(())
}
