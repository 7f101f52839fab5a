//! `preempt history`: every run kept in an embedded SQLite database with its system info, so
//! runs can be listed, shown, exported and compared by id (`preempt compare 3 7`).
//!
//! JSON files stay the exchange format: the database stores each result file's JSON verbatim
//! (plus a few indexed columns for listing), and `history export` gives the file back byte for
//! byte as it was recorded.
//!
//! The database is `--history-db FILE`, else `$PREEMPT_HISTORY`, else
//! `$XDG_DATA_HOME/preempt/history.sqlite` (`~/.local/share/preempt/history.sqlite`). Recording
//! never fails a measurement: a database that cannot be opened is reported on stderr and the
//! run's files are written as usual. `--no-history` skips it.
//!
//! ```
//! use preempt_cli::history::History;
//! let dir = tempfile::tempdir().unwrap();
//! let db = History::open(&dir.path().join("h.sqlite")).unwrap();
//! assert!(db.list(10, None).unwrap().is_empty());
//! ```

use std::path::{Path, PathBuf};

use anyhow::Result;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::results::ResultFile;

/// Where the history lives, shared by every subcommand that records runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryConfig {
    /// History database (`--history-db`); `None` = [`default_db_path`].
    pub history_db: Option<PathBuf>,
    /// Do not record this run in the history database (`--no-history`).
    pub no_history: bool,
}

impl HistoryConfig {
    /// The database path these flags select, `None` when no home directory is known.
    pub fn path(&self) -> Option<PathBuf> {
        self.history_db.clone().or_else(default_db_path)
    }
}

/// `$PREEMPT_HISTORY`, else `$XDG_DATA_HOME/preempt/history.sqlite`, else
/// `$HOME/.local/share/preempt/history.sqlite`.
pub fn default_db_path() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("PREEMPT_HISTORY")
        .or_else(|| env("XDG_DATA_HOME").map(|d| d.join("preempt/history.sqlite")))
        .or_else(|| env("HOME").map(|h| h.join(".local/share/preempt/history.sqlite")))
}

/// A one-line headline of a result, for the listing.
pub fn headline(f: &ResultFile) -> String {
    let mark = match f.status() {
        crate::results::RunStatus::Complete => String::new(),
        s => format!("[{}] ", s.tag()),
    };
    format!("{mark}{}", f.result.headline())
}

/// One row of the listing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RunRow {
    /// Run id.
    pub id: i64,
    /// When the run started, ms since the epoch.
    pub started_unix_ms: u64,
    /// Subcommand.
    pub kind: String,
    /// Machine.
    pub hostname: String,
    /// Kernel release.
    pub kernel_release: String,
    /// Preemption model.
    pub preempt_model: String,
    /// Headline figures.
    pub headline: String,
    /// The file it was recorded from or written to, if any.
    pub source: Option<String>,
}

/// The history database.
#[derive(Debug)]
pub struct History {
    conn: Connection,
    path: PathBuf,
    /// Why this database cannot be written, when it opened read-only (a read-only mount,
    /// another user's file): it is still listed and shown, and a write says why it failed.
    read_only: Option<String>,
    /// Whether it holds the `runs` table: an empty file that opened read-only has none, and
    /// lists as an empty history.
    has_runs: bool,
}

/// Schema version stored in `PRAGMA user_version`.
pub(crate) const DB_VERSION: i64 = 1;

/// The columns of the `runs` table; a table without one of them is not a preempt history.
const RUNS_COLUMNS: [&str; 13] = [
    "id",
    "recorded_unix_ms",
    "started_unix_ms",
    "kind",
    "hostname",
    "kernel_release",
    "preempt_model",
    "machine",
    "cpu_model",
    "headline",
    "source",
    "sysinfo",
    "result",
];

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        recorded_unix_ms INTEGER NOT NULL,
        started_unix_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        hostname TEXT NOT NULL,
        kernel_release TEXT NOT NULL,
        preempt_model TEXT NOT NULL,
        machine TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        headline TEXT NOT NULL,
        source TEXT,
        sysinfo TEXT NOT NULL,
        result TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS runs_started ON runs(started_unix_ms);
    PRAGMA user_version = 1;";

impl History {
    /// Opens the database at `path`, creating it (and its directory) if needed. A database
    /// this user may read but not write (a read-only mount, another user's file, a read-only
    /// directory) opens read-only: it lists and shows, and a write fails with
    /// "history is read-only". A file that is not a preempt history (not a database, another
    /// program's, a version-1 file without its `runs` table) is refused as such.
    ///
    /// # Errors
    /// The file cannot be opened or read, or is not a preempt history (as above), or is of a
    /// newer version.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                use std::io::ErrorKind::{PermissionDenied, ReadOnlyFilesystem};
                let why = format!("cannot create its directory {}: {e}", dir.display());
                if matches!(e.kind(), PermissionDenied | ReadOnlyFilesystem) {
                    read_only_error(path, &why)
                } else {
                    anyhow::anyhow!("history database {}: {why}", path.display())
                }
            })?;
        }
        let (conn, read_only) = open_connection(path)?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| db_error(path, None, &e))?;
        let tables: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' ORDER BY name",
            )
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| db_error(path, None, &e))?;
        let has_runs = tables.iter().any(|t| t == "runs");
        if !has_runs && (version >= DB_VERSION || !tables.is_empty()) {
            let why = if tables.is_empty() {
                format!("user_version {version} but no tables")
            } else {
                format!(
                    "user_version {version}, tables {} but no runs table",
                    tables.join(", ")
                )
            };
            return Err(not_a_history(path, &why));
        }
        if version > DB_VERSION {
            anyhow::bail!(
                "history database {} has version {version}; this preempt knows version {DB_VERSION} (use a newer preempt or another --history-db)",
                path.display()
            );
        }
        if has_runs {
            let columns: Vec<String> = conn
                .prepare("SELECT name FROM pragma_table_info('runs')")
                .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
                .map_err(|e| db_error(path, None, &e))?;
            if let Some(c) = RUNS_COLUMNS
                .iter()
                .find(|c| !columns.iter().any(|n| n == *c))
            {
                return Err(not_a_history(
                    path,
                    &format!("its runs table has no column {c}"),
                ));
            }
        }
        let mut db = Self {
            conn,
            path: path.to_path_buf(),
            read_only,
            has_runs,
        };
        // The schema is written once, by the first writer; a read-only database that has it
        // is never written to just to be opened.
        if version < DB_VERSION && db.read_only.is_none() {
            match db.conn.execute_batch(SCHEMA) {
                Ok(()) => db.has_runs = true,
                Err(e) if is_read_only(&e) => db.read_only = Some(e.to_string()),
                Err(e) => return Err(db_error(path, None, &e)),
            }
        }
        Ok(db)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores a run; returns its id. The same result stored twice (same start, kind, host
    /// and content, e.g. one file imported twice) is refused with the id it already has.
    pub fn record(&self, r: &ResultFile, source: Option<&Path>) -> Result<i64> {
        if !self.has_runs {
            return Err(self.read_only_now("no runs table to write to"));
        }
        let s = &r.sysinfo;
        let json = serde_json::to_string_pretty(r)?;
        let existing: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM runs WHERE started_unix_ms = ?1 AND kind = ?2 AND hostname = ?3
                 AND result = ?4 LIMIT 1",
                params![
                    i64::try_from(r.started_unix_ms).unwrap_or(i64::MAX),
                    r.result.kind(),
                    s.hostname,
                    json
                ],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.error(&e))?;
        if let Some(id) = existing {
            anyhow::bail!(
                "this run is already in history database {} as run #{id}; not recorded twice \
                 (preempt history show {id})",
                self.path.display()
            );
        }
        self.conn
            .execute(
                "INSERT INTO runs (recorded_unix_ms, started_unix_ms, kind, hostname, kernel_release,
                 preempt_model, machine, cpu_model, headline, source, sysinfo, result)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    i64::try_from(crate::results::unix_ms_now()).unwrap_or(i64::MAX),
                    i64::try_from(r.started_unix_ms).unwrap_or(i64::MAX),
                    r.result.kind(),
                    s.hostname,
                    s.kernel_release,
                    s.preempt_model,
                    s.machine,
                    s.cpu_model,
                    headline(r),
                    source.map(|p| p.display().to_string()),
                    serde_json::to_string(s)?,
                    json,
                ],
            )
            .map_err(|e| self.error(&e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Replaces the stored result of run `id` (and its headline) by `r`: the same run, its
    /// final word (the demos record their figures before their recording is finished, then
    /// once more with the recording's outcome).
    pub fn replace(&self, id: i64, r: &ResultFile) -> Result<()> {
        let changed = self
            .conn
            .execute(
                "UPDATE runs SET headline = ?1, result = ?2 WHERE id = ?3",
                params![headline(r), serde_json::to_string_pretty(r)?, id],
            )
            .map_err(|e| self.error(&e))?;
        anyhow::ensure!(
            changed == 1,
            "no run #{id} in history database {} to update",
            self.path.display()
        );
        Ok(())
    }

    /// The latest `limit` runs, newest first, optionally of one kind.
    pub fn list(&self, limit: usize, kind: Option<&str>) -> Result<Vec<RunRow>> {
        if !self.has_runs {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare(
            "SELECT id, started_unix_ms, kind, hostname, kernel_release, preempt_model, headline, source
             FROM runs WHERE (?1 IS NULL OR kind = ?1) ORDER BY id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(
            params![kind, i64::try_from(limit).unwrap_or(i64::MAX)],
            |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    started_unix_ms: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                    kind: r.get(2)?,
                    hostname: r.get(3)?,
                    kernel_release: r.get(4)?,
                    preempt_model: r.get(5)?,
                    headline: r.get(6)?,
                    source: r.get(7)?,
                })
            },
        )?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.error(&e))
    }

    /// The stored JSON of run `id`, or an error naming the id and the database.
    pub fn result_json(&self, id: i64) -> Result<String> {
        let found = if self.has_runs {
            self.conn
                .query_row("SELECT result FROM runs WHERE id = ?1", params![id], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(|e| self.error(&e))?
        } else {
            None
        };
        found.ok_or_else(|| {
            crate::error::usage(format!(
                "no run #{id} in history database {} (see preempt history)",
                self.path.display()
            ))
        })
    }

    /// Deletes run `id`; false when it did not exist.
    pub fn delete(&self, id: i64) -> Result<bool> {
        if !self.has_runs {
            return Err(self.read_only_now("no runs table to delete from"));
        }
        Ok(self
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", params![id])
            .map_err(|e| self.error(&e))?
            > 0)
    }

    /// The error of a failed statement on this database ([`db_error`]).
    fn error(&self, e: &rusqlite::Error) -> anyhow::Error {
        db_error(&self.path, self.read_only.as_deref(), e)
    }

    /// The read-only error of a write this database cannot take, without trying it.
    fn read_only_now(&self, what: &str) -> anyhow::Error {
        let why = self
            .read_only
            .as_deref()
            .unwrap_or("attempt to write a readonly database");
        read_only_error(&self.path, &format!("{why} ({what})"))
    }
}

/// Opens `path` read-write (creating it), else, when that is refused for want of permission
/// or on a read-only file system, read-only; returns the connection and, when it is
/// read-only, why.
///
/// SQLite's own unix VFS already falls back to a read-only file descriptor when the file
/// cannot be opened for writing (`unixOpen`), and says so only through
/// `sqlite3_db_readonly`; the explicit second open covers what it does not (a file it refused
/// outright that still opens with `SQLITE_OPEN_READONLY`).
fn open_connection(path: &Path) -> Result<(Connection, Option<String>)> {
    let rw = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    match Connection::open_with_flags(path, rw) {
        Ok(conn) => {
            let ro = conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false);
            Ok((conn, ro.then(|| os_reason(path))))
        }
        Err(e) if path.exists() && is_read_only(&e) => {
            let ro = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let conn = Connection::open_with_flags(path, ro).map_err(|e| {
                anyhow::anyhow!(
                    "cannot open history database {}: {e}{}; run as a user who may read it, \
                     point --history-db at another file, or pass --no-history",
                    path.display(),
                    io_detail(std::fs::File::open(path).err())
                )
            })?;
            Ok((conn, Some(format!("{e}{}", io_detail(write_error(path))))))
        }
        Err(e) if !path.exists() && is_read_only(&e) => {
            Err(read_only_error(path, &format!("cannot create it: {e}")))
        }
        Err(e) => Err(db_error(path, None, &e)),
    }
}

/// Why `path` opened read-only although it was asked to open read-write, with the system's
/// reason for refusing to open it for writing.
fn os_reason(path: &Path) -> String {
    format!("it opens read-only{}", io_detail(write_error(path)))
}

/// The error of opening `path` for writing (without creating or changing it), if any.
fn write_error(path: &Path) -> Option<std::io::Error> {
    std::fs::OpenOptions::new().write(true).open(path).err()
}

/// ` (the system's reason)`, or nothing.
fn io_detail(e: Option<std::io::Error>) -> String {
    e.map(|e| format!(" ({e})")).unwrap_or_default()
}

/// Whether `e` is SQLite refusing a write (or a write's journal) for want of permission, a
/// read-only file system or a read-only directory, rather than a broken database.
fn is_read_only(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{CannotOpen, PermissionDenied, ReadOnly};
    matches!(
        e.sqlite_error_code(),
        Some(ReadOnly | CannotOpen | PermissionDenied)
    )
}

/// The error of a statement on the database at `path` that failed with `e`: "read-only" (with
/// SQLite's reason, and why the database opened read-only when it did), "not a preempt
/// history" for a file that is not a database or is damaged, else SQLite's error.
fn db_error(path: &Path, read_only: Option<&str>, e: &rusqlite::Error) -> anyhow::Error {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    match e.sqlite_error_code() {
        Some(NotADatabase | DatabaseCorrupt) => not_a_history(path, &e.to_string()),
        _ if is_read_only(e) => {
            let directory = matches!(
                e.sqlite_error(),
                Some(f) if f.extended_code == rusqlite::ffi::SQLITE_READONLY_DIRECTORY
            );
            let mut why = e.to_string();
            if directory {
                why.push_str(" (its directory is not writable: SQLite writes its journal there)");
            }
            if let Some(ro) = read_only {
                why = format!("{why}: {ro}");
            }
            read_only_error(path, &why)
        }
        _ => anyhow::anyhow!("history database {}: {e}", path.display()),
    }
}

/// "history is read-only: PATH: WHY", with the ways to record runs again.
fn read_only_error(path: &Path, why: &str) -> anyhow::Error {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    anyhow::anyhow!(
        "history is read-only: {}: {why}; to record runs, make the file and {} writable by \
         this user (chmod/chown, or remount read-write), point --history-db or \
         $PREEMPT_HISTORY at a writable file, or pass --no-history",
        path.display(),
        dir.display()
    )
}

/// The error of a file that is not a preempt history (`why`), with the way out.
fn not_a_history(path: &Path, why: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "history database {} is not a preempt history ({why}): it is corrupt or another \
         program's file; move it aside (mv {} {}.bad; a new one is created on the next run), \
         point --history-db at another file, or pass --no-history",
        path.display(),
        path.display(),
        path.display()
    )
}

/// Records `r` unless `--no-history`; prints the run id, or why it was not recorded, on
/// stderr. Never fails: the history is a convenience, the result files are the record.
pub fn record_quietly(args: &HistoryConfig, r: &ResultFile, source: Option<&Path>) -> Option<i64> {
    if args.no_history {
        return None;
    }
    let Some(path) = args.path() else {
        eprintln!("preempt: not recorded in the history: no $HOME; pass --history-db FILE");
        return None;
    };
    let source = source.map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()));
    match History::open(&path).and_then(|h| h.record(r, source.as_deref())) {
        Ok(id) => {
            eprintln!(
                "preempt: recorded as run #{id} in {} (preempt history)",
                path.display()
            );
            Some(id)
        }
        Err(e) => {
            eprintln!("preempt: not recorded in the history: {e:#}");
            None
        }
    }
}

/// [`History::replace`] of run `id` in the database `args` names; a failure is said on stderr,
/// never fails the run (as [`record_quietly`]).
pub(crate) fn replace_quietly(args: &HistoryConfig, id: i64, r: &ResultFile) {
    let Some(path) = args.path() else { return };
    if let Err(e) = History::open(&path).and_then(|h| h.replace(id, r)) {
        eprintln!("preempt: run #{id} in the history keeps its first record: {e:#}");
    }
}

/// `YYYY-MM-DD HH:MM:SS` in UTC from ms since the epoch (civil-from-days, Howard Hinnant's
/// algorithm, so no date crate is needed for one column).
pub(crate) fn utc(ms: u64) -> String {
    let secs = ms / 1_000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{CheckReport, RunResult, SysInfo};

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_779_494_400_000 + 3_661_000), "2026-05-23 01:01:01");
    }

    #[test]
    fn record_list_show_delete() {
        let dir = tempfile::tempdir().unwrap();
        let db = History::open(&dir.path().join("sub/h.sqlite")).unwrap();
        let file = ResultFile::new(
            SysInfo {
                hostname: "box".into(),
                kernel_release: "6.18".into(),
                ..Default::default()
            },
            RunResult::Check(CheckReport::default()),
        );
        let a = db.record(&file, None).unwrap();
        // The same run again is refused, naming the id it has.
        let twice = db.record(&file, None).unwrap_err().to_string();
        assert!(twice.contains(&format!("as run #{a}")), "{twice}");
        let mut other = file.clone();
        other.started_unix_ms += 1;
        let b = db.record(&other, Some(Path::new("/x.json"))).unwrap();
        assert!(b > a);
        let rows = db.list(10, None).unwrap();
        assert_eq!(rows.iter().map(|r| r.id).collect::<Vec<_>>(), vec![b, a]);
        assert_eq!(rows[0].source.as_deref(), Some("/x.json"));
        assert_eq!(rows[0].headline, "0 pass, 0 warn, 0 fail");
        let mut partial = file.clone();
        partial.started_unix_ms += 2;
        partial.complete = false;
        assert!(
            headline(&partial).starts_with("[PARTIAL"),
            "{}",
            headline(&partial)
        );
        assert_eq!(db.list(10, Some("latency")).unwrap().len(), 0);
        let back: ResultFile = serde_json::from_str(&db.result_json(a).unwrap()).unwrap();
        assert_eq!(back, file);
        assert!(db.delete(a).unwrap());
        let err = db.result_json(a).unwrap_err().to_string();
        assert!(err.contains(&format!("no run #{a}")), "{err}");
    }

    /// A run recorded when it was made, and its exported file imported later, are one run:
    /// a float read back must be the f64 that was written (serde_json's `float_roundtrip`;
    /// its default parser gave 96.72843267127536 for this one, so the import was accepted as
    /// a second run).
    #[test]
    fn an_imported_file_with_floats_is_the_run_already_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let db = History::open(&dir.path().join("h.sqlite")).unwrap();
        let file = ResultFile::new(
            SysInfo::default(),
            RunResult::Check(CheckReport {
                items: vec![],
                idle_wakeup: Some(crate::results::IdleWakeup {
                    cpu: 1,
                    period_ns: 1_000_000,
                    wakeups_per_mode: 300,
                    idle_p50_ns: 39_295,
                    halted_wakeups: Some(300),
                    halted_p50_ns: Some(39_295),
                    polling_p50_ns: 18_527,
                    extra_ns: 20_768,
                    idle_halts: Some(316),
                    polling_halts: Some(0),
                    idle_cpu_idle_pct: Some(96.728_432_671_275_37),
                    polling_cpu_idle_pct: Some(95.437_280_541_814_3),
                    dma_latency_found_us: 2_000_000_000,
                }),
            }),
        );
        let a = db.record(&file, None).unwrap();
        let exported = serde_json::to_string_pretty(&file).unwrap();
        let imported: ResultFile = serde_json::from_str(&exported).unwrap();
        assert_eq!(imported, file, "the floats read back are the ones written");
        let twice = db.record(&imported, None).unwrap_err().to_string();
        assert!(twice.contains(&format!("as run #{a}")), "{twice}");
    }

    #[test]
    fn a_newer_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("h.sqlite");
        Connection::open(&p)
            .unwrap()
            .execute_batch(&SCHEMA.replace("user_version = 1", "user_version = 99"))
            .unwrap();
        let err = History::open(&p).unwrap_err().to_string();
        assert!(err.contains("has version 99"), "{err}");
    }

    #[test]
    fn garbage_is_not_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("h.sqlite");
        std::fs::write(&p, b"this is not sqlite, not even close........................................................").unwrap();
        let err = format!("{:#}", History::open(&p).unwrap_err());
        assert!(
            err.contains("h.sqlite is not a preempt history (file is not a database)")
                && err.contains("corrupt")
                && err.contains("move it aside"),
            "{err}"
        );
    }

    /// Issue 40: "corrupt" is said of a file that is not a preempt history, checked: a
    /// version-1 file without its `runs` table, another program's database, a `runs` table
    /// that is not ours; and of nothing else.
    #[test]
    fn only_a_file_that_is_not_a_preempt_history_is_called_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        for (i, (sql, why)) in [
            ("PRAGMA user_version = 1;", "user_version 1 but no tables"),
            (
                "CREATE TABLE cookies (name TEXT);",
                "user_version 0, tables cookies but no runs table",
            ),
            (
                "CREATE TABLE runs (id INTEGER, name TEXT); PRAGMA user_version = 1;",
                "its runs table has no column recorded_unix_ms",
            ),
            (
                "CREATE TABLE moz_places (url TEXT); PRAGMA user_version = 53;",
                "user_version 53, tables moz_places but no runs table",
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let p = dir.path().join(format!("h{i}.sqlite"));
            Connection::open(&p).unwrap().execute_batch(sql).unwrap();
            let err = format!("{:#}", History::open(&p).unwrap_err());
            assert!(
                err.contains(&format!("is not a preempt history ({why})"))
                    && err.contains("corrupt"),
                "{sql}: {err}"
            );
        }
        // An empty file, and a history whose version was never written, are histories.
        let empty = dir.path().join("empty.sqlite");
        std::fs::write(&empty, b"").unwrap();
        assert!(
            History::open(&empty)
                .unwrap()
                .list(1, None)
                .unwrap()
                .is_empty()
        );
        let v0 = dir.path().join("v0.sqlite");
        let schema_only = SCHEMA.replace("PRAGMA user_version = 1;", "");
        Connection::open(&v0)
            .unwrap()
            .execute_batch(&schema_only)
            .unwrap();
        History::open(&v0).unwrap();
        let version: i64 = Connection::open(&v0)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, DB_VERSION);
    }
}
