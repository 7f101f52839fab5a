//! `preempt history`: list, show, export, import and delete stored runs.

use std::io::Write;

use anyhow::Result;

use crate::cli::{HistoryAction as Action, HistoryCmdArgs};
use crate::error::{EXIT_OK, usage};
use crate::history::{History, HistoryConfig, utc};
use crate::results::input::{self, Loaded};

fn open_existing(args: &HistoryConfig) -> Result<History> {
    let path = args
        .path()
        .ok_or_else(|| usage("no $HOME: pass --history-db FILE"))?;
    History::open(&path)
}

/// `preempt history`: returns the exit code.
pub fn run(args: &HistoryCmdArgs) -> Result<u8> {
    if args.limit == 0 {
        return Err(usage(
            "--limit must be at least 1 (the number of runs listed, newest first)",
        ));
    }
    let db = open_existing(&args.db.config())?;
    let mut out = std::io::stdout().lock();
    match args.action.clone().unwrap_or(Action::List) {
        Action::List => {
            let rows = db.list(args.limit, args.kind.as_deref())?;
            if args.json {
                serde_json::to_writer_pretty(&mut out, &rows)?;
                writeln!(out)?;
            } else if rows.is_empty() {
                writeln!(
                    out,
                    "no runs in {} yet (every preempt run records itself)",
                    db.path().display()
                )?;
            } else {
                writeln!(
                    out,
                    "{:>5}  {:<19}  {:<8} {:<14} {:<22} {:<9} headline",
                    "id", "started (UTC)", "kind", "host", "kernel", "model"
                )?;
                for r in rows {
                    writeln!(
                        out,
                        "{:>5}  {:<19}  {:<8} {:<14} {:<22} {:<9} {}",
                        r.id,
                        utc(r.started_unix_ms),
                        r.kind,
                        r.hostname,
                        r.kernel_release,
                        r.preempt_model,
                        r.headline
                    )?;
                }
            }
        }
        Action::Show { id } => {
            out.write_all(db.result_json(id)?.as_bytes())?;
            writeln!(out)?;
        }
        Action::Export { id, output } => {
            let mut text = db.result_json(id)?;
            text.push('\n');
            crate::export::write_atomically(&output, text.as_bytes())?;
            writeln!(out, "run #{id} written to {}", output.display())?;
        }
        Action::Import { files } => {
            for f in files {
                let input = input::load_path(&f)?;
                let id = match &input.loaded {
                    Loaded::Result(r) => db.record(r, Some(&f))?,
                    Loaded::Cyclictest(_) => {
                        return Err(usage(format!(
                            "{}: cyclictest output cannot be stored in the history (it has no system info); compare it directly",
                            f.display()
                        )));
                    }
                };
                writeln!(out, "{} recorded as run #{id}", f.display())?;
            }
        }
        Action::Delete { id } => {
            if !db.delete(id)? {
                return Err(usage(format!(
                    "no run #{id} in history database {} (see preempt history)",
                    db.path().display()
                )));
            }
            writeln!(out, "run #{id} deleted")?;
        }
    }
    out.flush()?;
    Ok(EXIT_OK)
}
