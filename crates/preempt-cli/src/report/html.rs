//! Small HTML building blocks: escaping, tables, the page shell with its inline stylesheet.
//!
//! The page is self-contained (no script, no external stylesheet, font or image: every figure
//! is inline SVG), so it opens from a file, an e-mail attachment or a CI artifact without a
//! network.

use std::fmt::Write;

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A table cell: text (escaped) with an optional CSS class.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Escaped on output.
    pub text: String,
    /// CSS class, e.g. `num`, `pass`, `fail`.
    pub class: &'static str,
}

/// A plain text cell.
pub fn td(text: impl Into<String>) -> Cell {
    Cell {
        text: text.into(),
        class: "",
    }
}

/// A right-aligned numeric cell.
pub fn num(text: impl Into<String>) -> Cell {
    Cell {
        text: text.into(),
        class: "num",
    }
}

/// A cell with a class.
pub(crate) fn cls(text: impl Into<String>, class: &'static str) -> Cell {
    Cell {
        text: text.into(),
        class,
    }
}

/// Renders a table with a header row.
pub fn table(headers: &[&str], rows: &[Vec<Cell>]) -> String {
    let mut out = String::from("<table>\n<thead><tr>");
    for h in headers {
        let _ = write!(out, "<th>{}</th>", esc(h)); // writing to a String cannot fail
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        out.push_str("<tr>");
        for c in r {
            if c.class.is_empty() {
                let _ = write!(out, "<td>{}</td>", esc(&c.text));
            } else {
                let _ = write!(out, "<td class=\"{}\">{}</td>", c.class, esc(&c.text));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// A numbered figure: the inline SVG, a caption and links to its files.
pub fn figure(number: usize, svg: &str, caption: &str, file_stem: Option<&str>) -> String {
    let links = match file_stem {
        Some(s) => format!(
            " <span class=\"files\">(<a href=\"plots/{s}.svg\">SVG</a>, <a href=\"plots/{s}.png\">PNG</a>)</span>",
            s = esc(s)
        ),
        None => String::new(),
    };
    format!(
        "<figure>\n{svg}\n<figcaption><b>Figure {number}.</b> {}{links}</figcaption>\n</figure>\n",
        esc(caption)
    )
}

/// The inline stylesheet.
pub const STYLE: &str = r#"
:root { --fg:#1d2125; --muted:#5f6b76; --line:#d8dde2; --bg:#ffffff; --soft:#f4f6f8;
        --pass:#1a7f37; --warn:#9a6700; --fail:#cf222e; --info:#0969da; }
* { box-sizing: border-box; }
body { font-family: -apple-system, "Segoe UI", "DejaVu Sans", "Liberation Sans", Arial, sans-serif;
       color: var(--fg); background: var(--bg); margin: 0; line-height: 1.45; font-size: 15px; }
header { background: #0d1b2a; color: #fff; padding: 20px 32px; }
header h1 { margin: 0 0 4px 0; font-size: 24px; }
header p { margin: 0; color: #c9d3dd; }
main { max-width: 1120px; margin: 0 auto; padding: 8px 32px 48px 32px; }
nav { margin: 16px 0; padding: 10px 14px; background: var(--soft); border-radius: 6px; font-size: 14px; }
nav a { margin-right: 14px; color: var(--info); text-decoration: none; }
h2 { border-bottom: 2px solid var(--line); padding-bottom: 4px; margin-top: 36px; }
h3 { margin-top: 26px; }
table { border-collapse: collapse; margin: 10px 0 18px 0; font-size: 13.5px; }
th, td { border: 1px solid var(--line); padding: 4px 9px; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.pass { color: var(--pass); font-weight: 600; } td.warn { color: var(--warn); font-weight: 600; }
td.fail { color: var(--fail); font-weight: 600; } td.info { color: var(--info); }
td.muted, .muted { color: var(--muted); }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 14px 0; }
.card { flex: 1 1 200px; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; background: var(--soft); }
.card .k { font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.card .v { font-size: 22px; font-weight: 650; margin-top: 2px; }
.card .s { font-size: 12.5px; color: var(--muted); }
.verdict { padding: 10px 14px; border-radius: 6px; margin: 12px 0; font-weight: 600; }
.verdict.good { background: #dafbe1; color: var(--pass); } .verdict.bad { background: #ffebe9; color: var(--fail); }
.verdict.meh { background: #fff8c5; color: var(--warn); }
.row { display: flex; flex-wrap: wrap; gap: 16px; } .row figure { flex: 1 1 460px; min-width: 0; }
figure { margin: 14px 0 22px 0; } figure svg { width: 100%; max-width: 960px; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { font-size: 13px; color: var(--muted); margin-top: 4px; max-width: 760px; }
.files a { color: var(--info); }
code { background: var(--soft); padding: 1px 4px; border-radius: 3px; font-size: 13px; }
footer { color: var(--muted); font-size: 12.5px; margin-top: 40px; border-top: 1px solid var(--line); padding-top: 10px; }
"#;

/// Wraps sections into the page.
pub fn page(
    title: &str,
    subtitle: &str,
    nav: &[(String, String)],
    body: &str,
    footer: &str,
) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{t}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <header><h1>{t}</h1><p>{s}</p></header>\n<main>\n<nav>",
        t = esc(title),
        s = esc(subtitle)
    );
    for (id, name) in nav {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", esc(id), esc(name));
    }
    let _ = write!(
        out,
        "</nav>\n{body}<footer>{}</footer>\n</main>\n</body>\n</html>\n",
        esc(footer)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let t = table(&["a<"], &[vec![num("1"), cls("x&y", "fail")]]);
        assert!(
            t.contains("<th>a&lt;</th>")
                && t.contains("<td class=\"num\">1</td>")
                && t.contains("x&amp;y")
        );
    }
}
