//! The report's figures, drawn with `plotters` into SVG strings (inlined in the HTML and
//! written as `.svg` files) and rasterised to PNG with `resvg` for papers.
//!
//! Every chart takes plain data (bucket lists, quantiles, points), so the same functions
//! serve `report` and `compare`. Conventions, chosen for latency data whose tail spans
//! three or more decades:
//! - histograms: log-spaced bins ([`BINS_PER_DECADE`] per decade) on a log latency axis, and
//!   a log count axis as in the thesis' figures 6.3–6.5 (seed `004_…`), so single outliers stay
//!   visible;
//! - box plots (seed `001_…` figure 2): box p25–p75, line at the median, whiskers min–max, a
//!   diamond at p99, on a log axis;
//! - time series (seed `001_…` figures 3–8): latency per iteration on a log axis; when a
//!   series has more points than the plot has pixels, each point is the *maximum* of its
//!   group of consecutive iterations, so no spike disappears;
//! - exceedance curves: P(latency > x) on log–log axes, down to 1/N at the maximum.
//!
//! Text is laid out with plotters' built-in font metrics (no font file is read), so the SVG is
//! identical on every machine; the browser or resvg picks the sans-serif font at display time.

use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::results::Bucket;

/// Histogram bins per decade of latency.
pub const BINS_PER_DECADE: f64 = 25.0;
/// Width and height of every chart, pixels.
pub(crate) const SIZE: (u32, u32) = (760, 380);

/// Series colours (colour-blind-safe order: blue, vermillion, green, orange, purple, sky,
/// yellow, black; Okabe & Ito 2008).
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(230, 159, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// The colour of series `i`.
pub(crate) fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("cannot draw the chart: {e:?}")
}

/// A named histogram (buckets in nanoseconds).
#[derive(Debug, Clone)]
pub(crate) struct HistSeries {
    /// Legend.
    pub label: String,
    /// Non-empty buckets.
    pub buckets: Vec<Bucket>,
}

fn total(b: &[Bucket]) -> u64 {
    b.iter().map(|b| b.count).sum()
}

/// Re-bins buckets into log-spaced bins; returns `(lower_us, upper_us, count)`.
pub(crate) fn log_bins(buckets: &[Bucket]) -> Vec<(f64, f64, u64)> {
    let mut bins: std::collections::BTreeMap<i64, u64> = std::collections::BTreeMap::new();
    for b in buckets {
        // Midpoint of the bucket, at least 1 ns so the logarithm exists.
        let mid = ((b.lower_ns as f64 + b.upper_ns as f64) / 2.0).max(1.0);
        let k = (mid.log10() * BINS_PER_DECADE).floor() as i64;
        *bins.entry(k).or_default() += b.count;
    }
    bins.into_iter()
        .map(|(k, c)| {
            let lo = 10f64.powf(k as f64 / BINS_PER_DECADE) / 1_000.0;
            let hi = 10f64.powf((k + 1) as f64 / BINS_PER_DECADE) / 1_000.0;
            (lo, hi, c)
        })
        .collect()
}

fn decade_floor(v: f64) -> f64 {
    10f64.powf(v.max(1e-9).log10().floor())
}
fn decade_ceil(v: f64) -> f64 {
    10f64.powf(v.max(1e-9).log10().ceil())
}

/// The x-axis label of a chart of categories at 0, 1, 2, ...: the category's name at its
/// position, nothing between positions.
fn category_label(names: &[String], v: f64) -> String {
    let i = v.round();
    if (v - i).abs() < 1e-6 && i >= 0.0 {
        names.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// Every chart's frame: the title as caption, the margins, and label areas of `x_area` and
/// `y_area` pixels.
fn chart_builder<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
    x_area: u32,
    y_area: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, ("sans-serif", 20))
        .margin(12)
        .margin_right(36)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area);
    b
}

fn us_label(v: &f64) -> String {
    if *v >= 1_000.0 {
        format!("{}", (v * 10.0).round() / 10.0)
    } else if *v >= 1.0 {
        format!("{}", (v * 100.0).round() / 100.0)
    } else {
        format!("{v:.3}")
    }
}

fn count_label(v: &f64) -> String {
    let e = v.log10().round() as i32;
    if (0..=3).contains(&e) {
        format!("{}", v.round())
    } else {
        format!("1e{e}")
    }
}

fn svg_chart(
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<()>,
) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// Overlaid histograms on a log latency axis with a log count axis.
pub(crate) fn histogram(title: &str, series: &[HistSeries]) -> Result<String> {
    let binned: Vec<Vec<(f64, f64, u64)>> = series.iter().map(|s| log_bins(&s.buckets)).collect();
    let lo = binned
        .iter()
        .flatten()
        .map(|b| b.0)
        .fold(f64::INFINITY, f64::min);
    let hi = binned.iter().flatten().map(|b| b.1).fold(0.0, f64::max);
    let max_count = binned
        .iter()
        .flatten()
        .map(|b| b.2)
        .max()
        .unwrap_or(1)
        .max(1);
    svg_chart(|root| {
        if binned.iter().all(Vec::is_empty) {
            return no_data(root, title);
        }
        let x = decade_floor(lo)..decade_ceil(hi * 1.01);
        let y = 0.5f64..decade_ceil(max_count as f64 * 1.5);
        let mut chart = chart_builder(root, title, 40, 56)
            .build_cartesian_2d(x.log_scale(), y.log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .x_desc("latency (µs), log-spaced bins")
            .y_desc("samples (log)")
            .x_label_formatter(&us_label)
            .y_label_formatter(&count_label)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        for (i, (s, bins)) in series.iter().zip(&binned).enumerate() {
            let c = color(i);
            chart
                .draw_series(bins.iter().map(|&(a, b, n)| {
                    Rectangle::new([(a, 0.5), (b, n as f64)], c.mix(0.25).filled())
                }))
                .map_err(err)?;
            // Outline as a step line so overlapping series stay readable.
            let mut pts = Vec::with_capacity(bins.len() * 4);
            for &(a, b, n) in bins {
                pts.extend([(a, 0.5), (a, n as f64), (b, n as f64), (b, 0.5)]);
            }
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(1)))
                .map_err(err)?
                .label(format!("{} (n={})", s.label, total(&s.buckets)))
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
        }
        legend(&mut chart)
    })
}

fn legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(err)
}

fn no_data(root: &DrawingArea<SVGBackend<'_>, Shift>, title: &str) -> Result<()> {
    root.draw(&Text::new(
        format!("{title}: no samples"),
        (20, 30),
        ("sans-serif", 20),
    ))
    .map_err(err)
}

/// A named exceedance curve source.
pub(crate) fn exceedance_points(buckets: &[Bucket], max_ns: u64) -> Vec<(f64, f64)> {
    let n = total(buckets);
    if n == 0 {
        return Vec::new();
    }
    let mut above = n;
    let mut pts = Vec::with_capacity(buckets.len() + 1);
    for b in buckets {
        above -= b.count;
        if above == 0 {
            break;
        }
        pts.push((
            (b.upper_ns.min(max_ns) as f64 / 1_000.0).max(1e-3),
            above as f64 / n as f64,
        ));
    }
    // The largest sample is exceeded by nothing; show it at 1/N, the smallest resolvable
    // probability, so the curve ends where the data ends.
    pts.push(((max_ns as f64 / 1_000.0).max(1e-3), 1.0 / n as f64));
    pts
}

/// Exceedance curves P(latency > x), log–log. `series`: (label, buckets, max_ns).
pub(crate) fn exceedance(title: &str, series: &[(String, Vec<Bucket>, u64)]) -> Result<String> {
    let curves: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|(_, b, m)| exceedance_points(b, *m))
        .collect();
    svg_chart(|root| {
        if curves.iter().all(Vec::is_empty) {
            return no_data(root, title);
        }
        let lo = curves
            .iter()
            .flatten()
            .map(|p| p.0)
            .fold(f64::INFINITY, f64::min);
        let hi = curves.iter().flatten().map(|p| p.0).fold(0.0, f64::max);
        let pmin = curves.iter().flatten().map(|p| p.1).fold(1.0, f64::min);
        let mut chart = chart_builder(root, title, 40, 56)
            .build_cartesian_2d(
                (decade_floor(lo)..decade_ceil(hi * 1.01)).log_scale(),
                (decade_floor(pmin * 0.5)..1.0).log_scale(),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .x_desc("latency x (µs)")
            .y_desc("P(latency > x)")
            .x_label_formatter(&us_label)
            .y_label_formatter(&|v| format!("1e{}", v.log10().round() as i32))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        for (i, ((label, _, _), pts)) in series.iter().zip(&curves).enumerate() {
            let c = color(i);
            // A step function: P stays constant until the next bucket bound.
            let mut steps = Vec::with_capacity(pts.len() * 2);
            for w in pts.windows(2) {
                steps.push(w[0]);
                steps.push((w[1].0, w[0].1));
            }
            if let Some(&last) = pts.last() {
                steps.push(last);
            }
            chart
                .draw_series(LineSeries::new(steps, c.stroke_width(2)))
                .map_err(err)?
                .label(label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                });
        }
        legend(&mut chart)
    })
}

/// One box of a box plot, in nanoseconds.
#[derive(Debug, Clone)]
pub(crate) struct BoxStat {
    /// Category (x axis), e.g. the policy.
    pub category: String,
    /// Group within the category (legend), e.g. the stress level.
    pub group: String,
    /// Smallest sample.
    pub min_ns: u64,
    /// 25th percentile (`None` when only a summary is known).
    pub p25_ns: Option<u64>,
    /// Median.
    pub p50_ns: u64,
    /// 75th percentile.
    pub p75_ns: Option<u64>,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Largest sample.
    pub max_ns: u64,
}

/// Box plots: one slot per category, one box per group inside it.
pub(crate) fn boxplot(title: &str, boxes: &[BoxStat]) -> Result<String> {
    boxplot_in(title, "latency (µs, log)", boxes)
}

/// [`boxplot`] with another y axis: the values are drawn divided by 1000 (ns as µs; µm as
/// mm) on a log axis described by `y_desc`.
pub(crate) fn boxplot_in(title: &str, y_desc: &str, boxes: &[BoxStat]) -> Result<String> {
    let mut cats: Vec<&str> = Vec::new();
    let mut groups: Vec<&str> = Vec::new();
    for b in boxes {
        if !cats.contains(&b.category.as_str()) {
            cats.push(&b.category);
        }
        if !groups.contains(&b.group.as_str()) {
            groups.push(&b.group);
        }
    }
    svg_chart(|root| {
        if boxes.is_empty() {
            return no_data(root, title);
        }
        let us = |ns: u64| (ns as f64 / 1_000.0).max(1e-3);
        let lo = boxes
            .iter()
            .map(|b| us(b.min_ns))
            .fold(f64::INFINITY, f64::min);
        let hi = boxes.iter().map(|b| us(b.max_ns)).fold(0.0, f64::max);
        let cat_names: Vec<String> = cats.iter().map(|c| (*c).to_string()).collect();
        let mut chart = chart_builder(root, title, 56, 56)
            .build_cartesian_2d(
                -0.5f64..(cats.len() as f64 - 0.5),
                // Headroom above the largest whisker keeps the legend off the data.
                (decade_floor(lo)..decade_ceil(hi * 8.0)).log_scale(),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .disable_x_mesh()
            .x_labels(cats.len().max(1) * 2 + 1)
            .x_label_formatter(&|v| category_label(&cat_names, *v))
            .x_label_style(("sans-serif", 13))
            .y_desc(y_desc)
            .y_label_formatter(&us_label)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        let width = 0.7 / groups.len().max(1) as f64;
        for (gi, g) in groups.iter().enumerate() {
            let c = color(gi);
            let mut first = true;
            for b in boxes.iter().filter(|b| b.group == *g) {
                let ci = cats.iter().position(|x| *x == b.category).unwrap_or(0) as f64;
                let x0 = ci - 0.35 + gi as f64 * width + width * 0.1;
                let x1 = x0 + width * 0.8;
                let xm = (x0 + x1) / 2.0;
                let line = |points: Vec<(f64, f64)>, stroke: u32| {
                    PathElement::new(points, c.stroke_width(stroke)).into_dyn()
                };
                let cap = |y: f64| line(vec![(x0 + width * 0.2, y), (x1 - width * 0.2, y)], 1);
                // Whisker from min to max with its two caps.
                let mut elems: Vec<DynElement<'static, SVGBackend<'_>, (f64, f64)>> = vec![
                    line(vec![(xm, us(b.min_ns)), (xm, us(b.max_ns))], 1),
                    cap(us(b.min_ns)),
                    cap(us(b.max_ns)),
                ];
                if let (Some(q1), Some(q3)) = (b.p25_ns, b.p75_ns) {
                    // The box from p25 to p75: filled, then outlined.
                    let corners = [(x0, us(q1)), (x1, us(q3).max(us(q1) * 1.0001))];
                    elems.push(Rectangle::new(corners, c.mix(0.35).filled()).into_dyn());
                    elems.push(Rectangle::new(corners, c.stroke_width(1)).into_dyn());
                }
                elems.push(line(vec![(x0, us(b.p50_ns)), (x1, us(b.p50_ns))], 3));
                elems.push(Circle::new((xm, us(b.p99_ns)), 3, c.filled()).into_dyn());
                let series = chart.draw_series(elems).map_err(err)?;
                if first {
                    series.label(g.to_string()).legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled())
                    });
                    first = false;
                }
            }
        }
        legend(&mut chart)
    })
}

/// A named time series: `(iteration, latency_ns)` points.
#[derive(Debug, Clone)]
pub struct TimeSeries {
    /// Legend.
    pub label: String,
    /// Points in iteration order.
    pub points: Vec<(u64, u64)>,
}

/// Most points drawn per series; more are reduced to the maximum of each group.
pub const MAX_POINTS: usize = 1_500;

/// Reduces a series to at most [`MAX_POINTS`] by keeping the maximum of each group of
/// consecutive points (spikes survive; the group size is returned).
pub(crate) fn reduce_max(points: &[(u64, u64)]) -> (Vec<(u64, u64)>, usize) {
    if points.len() <= MAX_POINTS {
        return (points.to_vec(), 1);
    }
    let group = points.len().div_ceil(MAX_POINTS);
    let out = points
        .chunks(group)
        .filter_map(|c| c.iter().max_by_key(|p| p.1).copied())
        .collect();
    (out, group)
}

/// Latency per iteration on a log axis.
pub(crate) fn time_series(title: &str, series: &[TimeSeries]) -> Result<String> {
    time_series_in(title, "iteration", "latency (µs, log)", series)
}

/// [`time_series`] with other axes: `x_desc` names the x values, the y values are drawn
/// divided by 1000 on a log axis described by `y_desc`.
pub(crate) fn time_series_in(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[TimeSeries],
) -> Result<String> {
    let reduced: Vec<(Vec<(u64, u64)>, usize)> =
        series.iter().map(|s| reduce_max(&s.points)).collect();
    svg_chart(|root| {
        let all = reduced.iter().flat_map(|r| r.0.iter());
        let (mut xmax, mut lo, mut hi) = (1u64, f64::INFINITY, 0f64);
        for &(x, y) in all {
            xmax = xmax.max(x);
            let v = (y as f64 / 1_000.0).max(1e-3);
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if hi == 0.0 {
            return no_data(root, title);
        }
        let group = reduced.iter().map(|r| r.1).max().unwrap_or(1);
        let mut chart = chart_builder(root, title, 40, 56)
            .build_cartesian_2d(
                0f64..xmax as f64,
                (decade_floor(lo)..decade_ceil(hi * 1.01)).log_scale(),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .x_desc(if group > 1 {
                format!("{x_desc} (each point: max of {group})")
            } else {
                x_desc.into()
            })
            .y_desc(y_desc)
            .x_label_formatter(&|v| format!("{}", v.round()))
            .y_label_formatter(&us_label)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        for (i, (s, (pts, _))) in series.iter().zip(&reduced).enumerate() {
            let c = color(i);
            chart
                .draw_series(pts.iter().map(|&(x, y)| {
                    Circle::new((x as f64, (y as f64 / 1_000.0).max(1e-3)), 1, c.filled())
                }))
                .map_err(err)?
                .label(s.label.clone())
                .legend(move |(x, y)| Circle::new((x + 7, y), 4, c.filled()));
        }
        legend(&mut chart)
    })
}

/// A named line on linear axes: `(x, y)` points in x order; a `None` y breaks the line
/// (a missed sample is a gap, not an interpolation).
#[derive(Debug, Clone)]
pub(crate) struct Line {
    /// Legend.
    pub label: String,
    /// Points.
    pub points: Vec<(f64, Option<f64>)>,
}

/// Lines on linear axes: the gimbal's step responses (real against reference, as the
/// thesis's figure 7.6 compares measured and simulated responses) and its tracking error.
pub(crate) fn lines(title: &str, x_desc: &str, y_desc: &str, series: &[Line]) -> Result<String> {
    svg_chart(|root| {
        let pts = || series.iter().flat_map(|s| s.points.iter());
        let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY);
        for &(x, y) in pts() {
            x0 = x0.min(x);
            x1 = x1.max(x);
            if let Some(y) = y.filter(|y| y.is_finite()) {
                y0 = y0.min(y);
                y1 = y1.max(y);
            }
        }
        if !(x0 < x1 && y0 <= y1) {
            return no_data(root, title);
        }
        let pad = if y1 > y0 { (y1 - y0) * 0.08 } else { 1e-3 };
        let mut chart = chart_builder(root, title, 40, 64)
            .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))
            .map_err(err)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .x_desc(x_desc)
            .y_desc(y_desc)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        for (i, s) in series.iter().enumerate() {
            let style = ShapeStyle::from(color(i)).stroke_width(2);
            let mut labelled = false;
            // One path per run of points without a gap.
            for run in s.points.split(|p| p.1.is_none_or(|y| !y.is_finite())) {
                if run.is_empty() {
                    continue;
                }
                let path = run.iter().filter_map(|&(x, y)| y.map(|y| (x, y)));
                let drawn = chart
                    .draw_series(LineSeries::new(path, style))
                    .map_err(err)?;
                if !labelled {
                    labelled = true;
                    drawn
                        .label(s.label.clone())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style));
                }
            }
        }
        legend(&mut chart)
    })
}

/// One group of bars: a legend and one value per category (`None`: no bar).
#[derive(Debug, Clone)]
pub(crate) struct BarSeries {
    /// Legend, e.g. the design.
    pub label: String,
    /// One value per category, in category order.
    pub values: Vec<Option<f64>>,
}

/// Grouped vertical bars on a linear axis from 0: one slot per category, one bar per series
/// inside it (the rtio-bench CPU figures: thread vs RTIO per row of the table).
pub(crate) fn bars(
    title: &str,
    y_desc: &str,
    categories: &[String],
    series: &[BarSeries],
) -> Result<String> {
    bar_chart(title, y_desc, categories, series, None)
}

/// Stacked vertical bars on a linear axis from 0: one bar per category, the series stacked
/// in order inside it, series `i` in `colors[i]`. The "why was it late" figure: a bar per
/// outlier, a segment per kind of cause.
pub(crate) fn stacked_bars(
    title: &str,
    y_desc: &str,
    categories: &[String],
    series: &[BarSeries],
    colors: &[RGBColor],
) -> Result<String> {
    bar_chart(title, y_desc, categories, series, Some(colors))
}

/// [`bars`] (`stack: None`) or [`stacked_bars`] (`stack`: the series' colours).
fn bar_chart(
    title: &str,
    y_desc: &str,
    categories: &[String],
    series: &[BarSeries],
    stack: Option<&[RGBColor]>,
) -> Result<String> {
    svg_chart(|root| {
        let slot = |ci: usize| series.iter().filter_map(move |s| s.values[ci]);
        let hi = (0..categories.len())
            .map(|ci| match stack {
                Some(_) => slot(ci).sum(),
                None => slot(ci).fold(0.0, f64::max),
            })
            .fold(0.0f64, f64::max);
        if categories.is_empty() || hi <= 0.0 {
            return no_data(root, title);
        }
        // Headroom keeps the legend off the bars.
        let (x_area, y_area, headroom) = match stack {
            Some(_) => (40, 72, 1.45),
            None => (56, 56, 1.3),
        };
        let mut chart = chart_builder(root, title, x_area, y_area)
            .build_cartesian_2d(-0.5f64..(categories.len() as f64 - 0.5), 0.0..hi * headroom)
            .map_err(err)?;
        let compact = |v: &f64| format!("{v:.1}").trim_end_matches(".0").to_string();
        let mut mesh = chart.configure_mesh();
        if stack.is_some() {
            mesh.y_label_formatter(&compact);
        }
        mesh.label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .disable_x_mesh()
            .x_labels(categories.len() * 2 + 1)
            .x_label_formatter(&|v| category_label(categories, *v))
            .x_label_style(("sans-serif", 12))
            .y_desc(y_desc)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        let width = 0.8 / series.len().max(1) as f64;
        let mut base = vec![0.0f64; categories.len()];
        for (si, s) in series.iter().enumerate() {
            let c = stack
                .and_then(|cs| cs.get(si).copied())
                .unwrap_or_else(|| color(si));
            let rects: Vec<Rectangle<(f64, f64)>> = s
                .values
                .iter()
                .enumerate()
                .filter_map(|(ci, v)| {
                    let v = (*v)?;
                    let corners = match stack {
                        Some(_) => {
                            let (x0, y0) = (ci as f64 - 0.38, base[ci]);
                            base[ci] += v;
                            [(x0, y0), (x0 + 0.76, y0 + v)]
                        }
                        None => {
                            let x0 = ci as f64 - 0.4 + si as f64 * width;
                            [(x0, 0.0), (x0 + width * 0.9, v)]
                        }
                    };
                    Some(Rectangle::new(corners, c.filled()))
                })
                .collect();
            chart
                .draw_series(rects)
                .map_err(err)?
                .label(s.label.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
        }
        legend(&mut chart)
    })
}

/// A microbenchmark range: min, p50, p99, max in ns.
#[derive(Debug, Clone)]
pub(crate) struct Range {
    /// Benchmark label.
    pub label: String,
    /// Smallest, median, 99th percentile, largest (ns).
    pub min_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

/// Horizontal ranges on a log ns axis: a thin line min–max, a thick bar p50–p99, a dot at
/// the median.
pub(crate) fn ranges(title: &str, rows: &[Range], overhead_ns: Option<u64>) -> Result<String> {
    let height = (60 + rows.len() as u32 * 26).max(160);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (SIZE.0, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        if rows.is_empty() {
            no_data(&root, title)?;
        } else {
            let lo = rows
                .iter()
                .map(|r| r.min_ns.max(1) as f64)
                .fold(f64::INFINITY, f64::min);
            let hi = rows
                .iter()
                .map(|r| r.max_ns.max(1) as f64)
                .fold(0.0, f64::max);
            let names: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
            let n = rows.len() as f64;
            let mut chart = chart_builder(&root, title, 36, 190)
                .build_cartesian_2d(
                    (decade_floor(lo)..decade_ceil(hi * 1.01)).log_scale(),
                    -0.5f64..(n - 0.5),
                )
                .map_err(err)?;
            chart
                .configure_mesh()
                .label_style(("sans-serif", 14))
                .axis_desc_style(("sans-serif", 15))
                .disable_y_mesh()
                .y_labels(rows.len() * 2 + 1)
                .y_label_formatter(&|v| {
                    let i = v.round();
                    if (v - i).abs() < 1e-6 && i >= 0.0 {
                        names
                            .get(names.len().wrapping_sub(1 + i as usize))
                            .cloned()
                            .unwrap_or_default()
                    } else {
                        String::new()
                    }
                })
                .x_desc("ns (log): line min–max, bar p50–p99, dot median")
                .x_label_formatter(&|v| format!("{}", v.round()))
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(err)?;
            let c = color(0);
            for (i, r) in rows.iter().enumerate() {
                let y = n - 1.0 - i as f64;
                let f = |v: u64| v.max(1) as f64;
                chart
                    .draw_series([
                        PathElement::new(
                            vec![(f(r.min_ns), y), (f(r.max_ns), y)],
                            c.stroke_width(1),
                        )
                        .into_dyn(),
                        Rectangle::new(
                            [
                                (f(r.p50_ns), y - 0.18),
                                (f(r.p99_ns).max(f(r.p50_ns) * 1.01), y + 0.18),
                            ],
                            c.mix(0.45).filled(),
                        )
                        .into_dyn(),
                        Circle::new((f(r.p50_ns), y), 4, c.filled()).into_dyn(),
                    ])
                    .map_err(err)?;
            }
            if let Some(o) = overhead_ns.filter(|&o| o > 0) {
                let o = o as f64;
                chart
                    .draw_series([PathElement::new(
                        vec![(o, -0.5), (o, n - 0.5)],
                        color(1).stroke_width(1),
                    )])
                    .map_err(err)?
                    .label("timing overhead (median)")
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], color(1).stroke_width(2))
                    });
                legend(&mut chart)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// Rasterises an SVG to PNG with the system's fonts. Returns `Ok(false)` without writing when
/// the machine has no font (text would be missing), so the caller can say so.
pub fn write_png(svg: &str, path: &Path, fonts: &resvg::usvg::fontdb::Database) -> Result<bool> {
    if fonts.is_empty() {
        return Ok(false);
    }
    let mut opt = resvg::usvg::Options::default();
    *opt.fontdb_mut() = fonts.clone();
    let tree = resvg::usvg::Tree::from_str(svg, &opt)
        .map_err(|e| anyhow!("cannot parse the SVG of {}: {e}", path.display()))?;
    let size = tree.size().to_int_size();
    // Twice the SVG size: sharp enough for a paper at column width.
    let scale = 2.0;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width() * 2, size.height() * 2)
        .ok_or_else(|| {
            anyhow!(
                "cannot allocate a {}x{} image",
                size.width() * 2,
                size.height() * 2
            )
        })?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    let png = pixmap
        .encode_png()
        .map_err(|e| anyhow!("cannot encode {}: {e}", path.display()))?;
    crate::export::write_atomically(path, &png)?;
    Ok(true)
}

/// The system's fonts, loaded once per report.
pub fn system_fonts() -> resvg::usvg::fontdb::Database {
    let mut db = resvg::usvg::fontdb::Database::new();
    db.load_system_fonts();
    // plotters writes font-family="sans-serif"; map it to a font that exists.
    let name = db
        .faces()
        .find(|f| {
            f.families
                .iter()
                .any(|(n, _)| n.contains("DejaVu Sans") || n.contains("Liberation Sans"))
        })
        .map(|face| face.families[0].0.clone());
    if let Some(name) = name {
        db.set_sans_serif_family(name);
    }
    db
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(lower_ns: u64, upper_ns: u64, count: u64) -> Bucket {
        Bucket {
            lower_ns,
            upper_ns,
            count,
        }
    }

    #[test]
    fn log_bins_keep_every_sample() {
        let buckets = [b(1_000, 1_003, 5), b(1_010, 1_013, 7), b(50_000, 50_100, 1)];
        let bins = log_bins(&buckets);
        assert_eq!(bins.iter().map(|x| x.2).sum::<u64>(), 13);
        assert_eq!(bins.len(), 2);
        assert!(bins[0].0 <= 1.0 && bins[0].1 > 1.01);
    }

    #[test]
    fn exceedance_ends_at_one_over_n() {
        let p = exceedance_points(&[b(1_000, 1_000, 3), b(2_000, 2_000, 1)], 2_000);
        assert_eq!(p, vec![(1.0, 0.25), (2.0, 0.25)]);
        assert!(exceedance_points(&[], 0).is_empty());
    }

    #[test]
    fn reduction_keeps_spikes() {
        let pts: Vec<(u64, u64)> = (0..10_000u64)
            .map(|i| (i, if i == 7_777 { 999_999 } else { 1_000 }))
            .collect();
        let (r, g) = reduce_max(&pts);
        assert!(r.len() <= MAX_POINTS && g == 7);
        assert!(r.contains(&(7_777, 999_999)));
    }

    #[test]
    fn charts_are_svg_with_their_title() {
        let s = histogram(
            "H",
            &[HistSeries {
                label: "idle".into(),
                buckets: vec![b(1_000, 1_003, 5)],
            }],
        )
        .unwrap();
        assert!(
            s.starts_with("<svg") && s.contains("\nH\n</text>") && s.contains("idle (n=5)"),
            "{s}"
        );
        let e = histogram("E", &[]).unwrap();
        assert!(e.contains("E: no samples"));
    }
}
