//! What a framework child process writes on its stdout, and how the parent reads it back.
//!
//! The child measures one scenario in its own process (an app owns process-wide state) and
//! hands the raw counter ticks to the parent, which calibrated the counter and turns them
//! into [`Samples`](crate::micro::bench::Samples) like every other set. The format is line
//! text, so a failing child can be read by eye:
//!
//! ```text
//! preempt-micro-framework 1        header: magic and version
//! scenario resource                the scenario the child ran
//! row resource_lock 3              a row id and its sample count, then one tick count a line
//! 812
//! 790
//! 801
//! note resource_lock some text     an observation, attached to a row
//! end 1                            the number of rows: the output is complete
//! ```
//!
//! Anything else (no header, a short row, a missing `end`, a stray line) is an error that says
//! what was wrong and where, so a crash or a truncated pipe never becomes a silent short row.
//!
//! ```
//! use preempt_cli::micro::framework::protocol::{ChildRow, encode, parse};
//! let rows = vec![ChildRow { id: "resource_lock".into(), ticks: vec![812, 790], notes: vec![] }];
//! let text = encode("resource", &rows);
//! assert_eq!(parse(text.as_bytes(), "resource").unwrap(), rows);
//! assert!(parse(&text.as_bytes()[..text.len() - 6], "resource").is_err());
//! ```

use std::fmt::Write as _;

use anyhow::{Result, bail};

/// First line of every child output.
pub(crate) const HEADER: &str = "preempt-micro-framework 1";

/// One row of samples from a child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildRow {
    /// Row id, e.g. `resource_lock`.
    pub id: String,
    /// Counter ticks, one per timed operation, in measurement order.
    pub ticks: Vec<u64>,
    /// Observations of the child about this row.
    pub notes: Vec<String>,
}

/// Writes `rows` of `scenario` in the child format.
pub fn encode(scenario: &str, rows: &[ChildRow]) -> String {
    let mut out = String::with_capacity(64 + rows.iter().map(|r| r.ticks.len() * 8).sum::<usize>());
    write_rows(&mut out, scenario, rows).expect("formatting into a String cannot fail");
    out
}

fn write_rows(out: &mut String, scenario: &str, rows: &[ChildRow]) -> std::fmt::Result {
    writeln!(out, "{HEADER}\nscenario {scenario}")?;
    for r in rows {
        writeln!(out, "row {} {}", r.id, r.ticks.len())?;
        for t in &r.ticks {
            writeln!(out, "{t}")?;
        }
        for n in &r.notes {
            writeln!(out, "note {} {}", r.id, n.replace('\n', " "))?;
        }
    }
    writeln!(out, "end {}", rows.len())
}

/// Reads a child's stdout; `scenario` is the one the parent asked for.
pub fn parse(bytes: &[u8], scenario: &str) -> Result<Vec<ChildRow>> {
    if bytes.is_empty() {
        bail!("the child wrote nothing on stdout (it stopped before printing its samples)");
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "the child's output is not UTF-8 text (at byte {})",
            e.valid_up_to()
        )
    })?;
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    match lines.next() {
        Some((_, HEADER)) => {}
        Some((_, other)) => bail!(
            "the child's output does not start with `{HEADER}` (got `{}`): is the child a \
             different preempt version?",
            shorten(other)
        ),
        None => bail!("the child's output is empty"),
    }
    match lines.next() {
        Some((_, l)) if l.strip_prefix("scenario ") == Some(scenario) => {}
        Some((n, l)) => bail!(
            "line {n} of the child's output: expected `scenario {scenario}`, got `{}`",
            shorten(l)
        ),
        None => bail!("the child's output ends after the header (truncated)"),
    }
    let mut rows: Vec<ChildRow> = Vec::new();
    // Samples still expected for the last row.
    let mut pending = 0usize;
    for (n, line) in lines.by_ref() {
        if pending > 0 {
            let v = line.parse::<u64>().map_err(|_| {
                anyhow::anyhow!(
                    "line {n} of the child's output: `{}` is not a tick count ({pending} samples \
                     of row {} still expected)",
                    shorten(line),
                    rows.last().map_or("?", |r| r.id.as_str())
                )
            })?;
            if let Some(r) = rows.last_mut() {
                r.ticks.push(v);
            }
            pending -= 1;
            continue;
        }
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match word {
            "row" => {
                let (id, count) = rest.split_once(' ').unwrap_or((rest, ""));
                let count: usize = count.parse().map_err(|_| {
                    anyhow::anyhow!(
                        "line {n} of the child's output: `{}` has no sample count",
                        shorten(line)
                    )
                })?;
                if id.is_empty() || rows.iter().any(|r| r.id == id) {
                    bail!("line {n} of the child's output: row id `{id}` is empty or repeated");
                }
                rows.push(ChildRow {
                    id: id.into(),
                    ticks: Vec::with_capacity(count),
                    notes: Vec::new(),
                });
                pending = count;
            }
            "note" => {
                let (id, text) = rest.split_once(' ').unwrap_or((rest, ""));
                match rows.iter_mut().find(|r| r.id == id) {
                    Some(r) => r.notes.push(text.into()),
                    None => bail!("line {n} of the child's output: a note for unknown row `{id}`"),
                }
            }
            "end" => {
                if rest.parse::<usize>().ok() != Some(rows.len()) {
                    bail!(
                        "line {n} of the child's output: `{}` but {} rows were read",
                        shorten(line),
                        rows.len()
                    );
                }
                if let Some((m, extra)) = lines.next() {
                    bail!(
                        "line {m} of the child's output: `{}` after the end line",
                        shorten(extra)
                    );
                }
                return Ok(rows);
            }
            _ => bail!(
                "line {n} of the child's output: unexpected `{}`",
                shorten(line)
            ),
        }
    }
    match rows.last() {
        Some(r) if pending > 0 => bail!(
            "the child's output is truncated: row {} has {} of {} samples and there is no end \
             line (did the child crash while writing?)",
            r.id,
            r.ticks.len(),
            r.ticks.len() + pending
        ),
        _ => bail!(
            "the child's output is truncated: no `end` line after {} rows (did the child crash \
             while writing?)",
            rows.len()
        ),
    }
}

/// A line cut to 60 characters for an error message.
fn shorten(line: &str) -> String {
    match line.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<ChildRow> {
        vec![
            ChildRow {
                id: "resource_lock".into(),
                ticks: vec![812, 790, 801],
                notes: vec!["one\nnote".into()],
            },
            ChildRow {
                id: "resource_unlock".into(),
                ticks: vec![0, u64::MAX],
                notes: vec![],
            },
        ]
    }

    #[test]
    fn round_trips() {
        let text = encode("resource", &rows());
        let back = parse(text.as_bytes(), "resource").unwrap();
        assert_eq!(back[0].ticks, rows()[0].ticks);
        assert_eq!(back[0].notes, vec!["one note".to_string()]);
        assert_eq!(back[1], rows()[1]);
        assert_eq!(parse(encode("x", &[]).as_bytes(), "x").unwrap(), vec![]);
    }

    /// Every malformed output is an error naming what is wrong; none parses as fewer rows.
    #[test]
    fn corrupt_or_short_output_is_a_clear_error() {
        let good = encode("resource", &rows());
        let cut_in_row = &good[..good.find("790").unwrap()];
        let cut_before_end = &good[..good.find("end").unwrap()];
        let cases: [(&str, &str, &str); 9] = [
            ("", "resource", "wrote nothing"),
            ("Error: boom\n", "resource", "does not start with"),
            (HEADER, "resource", "ends after the header"),
            (&good, "same_prio", "expected `scenario same_prio`"),
            (
                cut_in_row,
                "resource",
                "row resource_lock has 1 of 3 samples",
            ),
            (cut_before_end, "resource", "no `end` line after 2 rows"),
            (
                &good.replace("790", "79O"),
                "resource",
                "`79O` is not a tick count",
            ),
            (
                &good.replace("end 2", "end 3"),
                "resource",
                "but 2 rows were read",
            ),
            (
                &format!("{good}stray\n"),
                "resource",
                "`stray` after the end line",
            ),
        ];
        for (text, scenario, expect) in cases {
            let e = parse(text.as_bytes(), scenario).unwrap_err().to_string();
            assert!(e.contains(expect), "{text:?}: {e}");
        }
        let e = parse(&[0xff, 0xfe], "resource").unwrap_err().to_string();
        assert!(e.contains("not UTF-8"), "{e}");
        let e = parse(
            format!("{HEADER}\nscenario s\nnote nope x\nend 0\n").as_bytes(),
            "s",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown row `nope`"), "{e}");
    }
}
