//! Snapshot tests of the report's structure (issue 6: "snapshot tests (insta) pin the
//! HTML/SVG structure", "the report's numbers come from the JSON files").
//!
//! The report is built from the deterministic synthetic results of
//! `preempt_cli::report::sample`, written to files and read back, exactly as `preempt report`
//! does. The snapshots hold an outline of the page (headings, every table cell, figure
//! captions) and of each SVG (element counts per tag and every text label), which pins what is
//! shown and where without depending on path coordinates.

use std::collections::BTreeMap;
use std::path::Path;

use preempt_cli::report;
use preempt_cli::results::input;

fn write_samples(dir: &Path) {
    for (name, bytes) in report::sample::all() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

fn build(dir: &Path) -> report::Report {
    let inputs = input::load_many(&[dir.to_path_buf()]).unwrap();
    report::build(&inputs, &[], "preempt report").unwrap()
}

/// Text between tags, with runs of whitespace collapsed.
fn text_of(fragment: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in fragment.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An outline of the page: headings, table rows, captions, summary cards; SVGs replaced by
/// a marker.
fn outline(html: &str, dir: &Path) -> String {
    let html = html.replace(&dir.display().to_string(), "{dir}");
    let mut out = String::new();
    let mut rest = html.as_str();
    let tags = [
        "<h1",
        "<h2",
        "<h3",
        "<tr>",
        "<figcaption",
        "<div class=\"verdict",
        "<div class=\"card\"",
        "<svg",
        "<p>",
        "<footer",
    ];
    while let Some((pos, tag)) = tags
        .iter()
        .filter_map(|t| rest.find(t).map(|p| (p, *t)))
        .min_by_key(|(p, _)| *p)
    {
        let close = match tag {
            "<h1" => "</h1>",
            "<h2" => "</h2>",
            "<h3" => "</h3>",
            "<tr>" => "</tr>",
            "<figcaption" => "</figcaption>",
            "<svg" => "</svg>",
            "<p>" => "</p>",
            "<footer" => "</footer>",
            "<div class=\"verdict" => "</div>",
            _ => "</div></div>",
        };
        let body = &rest[pos..];
        let end = body.find(close).map_or(body.len(), |e| e + close.len());
        let fragment = &body[..end];
        let line = match tag {
            "<svg" => "[svg]".to_string(),
            "<div class=\"card\"" => {
                let parts: Vec<String> = fragment
                    .split("</div>")
                    .map(text_of)
                    .filter(|c| !c.is_empty())
                    .collect();
                format!("card {}", parts.join(" / "))
            }
            "<tr>" => {
                let cells: Vec<String> = fragment
                    .replace("</th>", "\u{1}")
                    .replace("</td>", "\u{1}")
                    .split('\u{1}')
                    .map(text_of)
                    .collect();
                format!(
                    "|{}",
                    cells[..cells.len() - 1]
                        .iter()
                        .map(|c| format!(" {c} |"))
                        .collect::<String>()
                )
            }
            t => format!(
                "{} {}",
                t.trim_start_matches('<').trim_end_matches('"'),
                text_of(fragment)
            ),
        };
        out.push_str(&line);
        out.push('\n');
        rest = &body[end..];
    }
    out
}

/// Element counts and text labels of an SVG.
fn svg_outline(svg: &str) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for part in svg.split('<').skip(1) {
        if part.starts_with('/') {
            continue;
        }
        let name: String = part
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        *counts.entry(name).or_default() += 1;
    }
    let texts: Vec<String> = svg
        .split("<text")
        .skip(1)
        .map(|t| text_of(&format!("<text{}", t.split("</text>").next().unwrap_or(""))))
        .collect();
    let (w, h) = (attr(svg, "width"), attr(svg, "height"));
    format!("size {w}x{h}\nelements {counts:?}\ntexts {texts:?}\n")
}

fn attr(svg: &str, name: &str) -> String {
    let key = format!("{name}=\"");
    svg.find(&key)
        .map(|p| {
            svg[p + key.len()..]
                .split('"')
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default()
}

#[test]
fn page_outline() {
    let dir = tempfile::tempdir().unwrap();
    write_samples(dir.path());
    let r = build(dir.path());
    insta::assert_snapshot!("page_outline", outline(&r.html, dir.path()));
}

#[test]
fn figure_outlines() {
    let dir = tempfile::tempdir().unwrap();
    write_samples(dir.path());
    let r = build(dir.path());
    let all: String = r
        .plots
        .iter()
        .map(|p| format!("== {}\n{}", p.stem, svg_outline(&p.svg)))
        .collect();
    insta::assert_snapshot!("figure_outlines", all);
}

#[test]
fn page_is_self_contained_and_every_figure_is_inline_and_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    write_samples(dir.path());
    let r = build(dir.path());
    // No network: no script, no external stylesheet, image or font.
    for banned in [
        "<script", "<link", "<img", "http://", "https://", "@import", "url(",
    ] {
        let hits: Vec<&str> = r
            .html
            .match_indices(banned)
            .map(|(i, _)| &r.html[i.saturating_sub(40)..(i + 60).min(r.html.len())])
            .collect();
        // The SVG namespace is an identifier, not a fetch.
        let hits: Vec<&&str> = hits
            .iter()
            .filter(|h| !h.contains("www.w3.org/2000/svg"))
            .collect();
        assert!(hits.is_empty(), "{banned} in the page: {hits:?}");
    }
    assert_eq!(r.html.matches("<svg").count(), r.plots.len());
    let out = tempfile::tempdir().unwrap();
    let w = report::write(&r, out.path(), false).unwrap();
    assert_eq!((w.svg, w.png), (r.plots.len(), 0));
    for p in &r.plots {
        assert!(
            out.path()
                .join("plots")
                .join(format!("{}.svg", p.stem))
                .is_file()
        );
        assert!(r.html.contains(&format!("plots/{}.svg", p.stem)));
    }
    // PNGs need a font; where one exists a figure is rasterised (one is enough here: the
    // rasteriser is slow in debug builds).
    let fonts = report::plots::system_fonts();
    let png = out.path().join("one.png");
    if report::plots::write_png(&r.plots[0].svg, &png, &fonts).unwrap() {
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    } else {
        eprintln!("skipped the PNG check: no system font");
    }
    assert!(
        std::fs::read_to_string(w.index)
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );
}

#[test]
fn numbers_on_the_page_come_from_the_files() {
    // Change one figure in one file: the page must show the new value and not the old one.
    let dir = tempfile::tempdir().unwrap();
    write_samples(dir.path());
    let path = dir.path().join("latency-idle.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let old = v["data"]["threads"][0]["latency"]["summary"]["p99_ns"]
        .as_u64()
        .unwrap();
    v["data"]["threads"][0]["latency"]["summary"]["p99_ns"] = serde_json::json!(123_456_789u64);
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let r = build(dir.path());
    assert!(r.html.contains(">123456.8</td>"), "edited p99 not shown");
    let row_start = r.html.find("<td>cpu0</td>").unwrap();
    let row = &r.html[row_start..row_start + r.html[row_start..].find("</tr>").unwrap()];
    assert!(
        !row.contains(&format!(">{:.1}</td>", old as f64 / 1000.0)) || old == 123_456_789,
        "old p99 still in {row}"
    );
}
