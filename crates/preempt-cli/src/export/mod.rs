//! Exporters: one per file format, each turning a [`ResultFile`] into bytes
//! (after hyperfine's `src/export/`).
//!
//! [`Sink`] owns the destination files of a run and rewrites them atomically (write to a
//! temporary file, then rename) every time it is given a newer result, so a partial file is
//! always readable and a crash or Ctrl-C loses at most the last second.
//!
//! ```
//! use preempt_cli::export::{Exporter, json::JsonExporter};
//! use preempt_cli::results::{CheckReport, ResultFile, RunResult, SysInfo};
//! let file = ResultFile::new(SysInfo::default(), RunResult::Check(CheckReport::default()));
//! let bytes = JsonExporter.serialize(&file).unwrap();
//! assert!(bytes.starts_with(b"{\n  \"schema_version\": 1"));
//! ```

pub mod csv;
pub mod json;
pub mod lock;
#[cfg(test)]
mod tests;

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::results::ResultFile;

/// Turns a result into the bytes of one file format.
pub trait Exporter {
    /// Serializes `result`.
    fn serialize(&self, result: &ResultFile) -> Result<Vec<u8>>;
}

/// The files a run writes, each with its exporter.
#[derive(Default)]
pub struct Sink {
    targets: Vec<(PathBuf, Box<dyn Exporter + Send>)>,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.targets.iter().map(|(p, _)| p))
            .finish()
    }
}

impl Sink {
    /// A sink for the given optional JSON and CSV paths.
    pub fn new(json: Option<&Path>, csv: Option<&Path>) -> Self {
        let mut targets: Vec<(PathBuf, Box<dyn Exporter + Send>)> = Vec::new();
        if let Some(p) = json {
            targets.push((p.to_path_buf(), Box::new(json::JsonExporter)));
        }
        if let Some(p) = csv {
            targets.push((p.to_path_buf(), Box::new(csv::CsvExporter)));
        }
        Self { targets }
    }

    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Checks that every destination can be written, before a run starts, so a typo or a
    /// read-only place does not cost a measurement ([`check_writable`]).
    pub(crate) fn preflight(&self) -> Result<()> {
        for (path, _) in &self.targets {
            check_writable(path)?;
        }
        Ok(())
    }

    /// The JSON destination, if any (the file the history names as a run's source).
    pub fn json_path(&self) -> Option<&Path> {
        self.targets
            .iter()
            .find(|(p, _)| p.extension().is_some_and(|e| e == "json"))
            .or(self.targets.first())
            .map(|(p, _)| p.as_path())
    }

    /// Writes `result` to every destination, atomically.
    pub fn write(&self, result: &ResultFile) -> Result<()> {
        for (path, exporter) in &self.targets {
            write_atomically(path, &exporter.serialize(result)?)?;
        }
        Ok(())
    }
}

/// Checks, without measuring anything, that `path` can be written as a file: it is not a
/// directory, its directory exists and accepts a new file (the write goes through a temporary
/// file and a rename there), and an existing file at `path` opens for writing. A failure is a
/// usage error (exit 2) naming the path and why.
pub fn check_writable(path: &Path) -> Result<()> {
    if path.is_dir() {
        return Err(crate::error::usage(format!(
            "cannot write {}: it is a directory; name a file in it, e.g. {}",
            path.display(),
            path.join("result.json").display()
        )));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(crate::error::usage(format!(
            "cannot write {}: directory {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    if let Err(e) = tempfile::NamedTempFile::new_in(dir) {
        return Err(crate::error::usage(format!(
            "cannot write {}: cannot create a file in {} ({e})",
            path.display(),
            dir.display()
        )));
    }
    if path.exists() {
        if let Err(e) = fs::OpenOptions::new().append(true).open(path) {
            return Err(crate::error::usage(format!(
                "cannot write {}: {e}",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so
/// readers never see a half-written file.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // Created 0666 minus the umask (0644 by default), like any file a person writes: the
    // temporary file's own default (0600) would survive the rename and lock others out.
    let mut tmp = tempfile::Builder::new()
        .prefix(".preempt-")
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    hand_over(path);
    Ok(())
}

/// Creates `dir` (and its parents) for output, handed over like the files in it
/// ([`hand_over`]).
pub(crate) fn create_output_dir(dir: &Path) -> Result<()> {
    let mut missing = Vec::new();
    let mut d = Some(dir);
    while let Some(p) = d.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
        missing.push(p.to_path_buf());
        d = p.parent();
    }
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for p in missing {
        hand_over(&p);
    }
    Ok(())
}

/// Under `sudo`, gives a file or directory preempt just created to the user who ran sudo
/// (`SUDO_UID`/`SUDO_GID`), so that `sudo preempt run` leaves a report that user can open
/// and delete. Does nothing unless the path is owned by root (i.e. we run as root) and both
/// variables are set; a failure only prints a note (the file itself is written).
pub fn hand_over(path: &Path) {
    let id = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u32>().ok());
    let (Some(uid), Some(gid)) = (id("SUDO_UID"), id("SUDO_GID")) else {
        return;
    };
    if fs::metadata(path).map_or(true, |m| m.uid() != 0) {
        return;
    }
    if let Err(e) = std::os::unix::fs::chown(path, Some(uid), Some(gid)) {
        eprintln!(
            "preempt: note: cannot give {} to the sudo user {uid}:{gid}: {e}",
            path.display()
        );
    }
}

/// Reads a result file written by any exporter-compatible producer (JSON), checking the schema
/// version. For `report`/`compare`: the error names the file.
pub fn read_json(path: &Path) -> Result<ResultFile> {
    let bytes = crate::results::input::read_limited(path, crate::results::input::MAX_RESULT_BYTES)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{} is not text (binary or corrupt)", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", path.display()))?;
    let version = value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64);
    match version {
        Some(v) if v == u64::from(crate::results::SCHEMA_VERSION) => {}
        Some(v) => anyhow::bail!(
            "{} has schema_version {v}; this preempt reads version {}",
            path.display(),
            crate::results::SCHEMA_VERSION
        ),
        None => anyhow::bail!(
            "{} is not a preempt result (no schema_version)",
            path.display()
        ),
    }
    serde_json::from_value(value)
        .with_context(|| format!("{} is not a valid preempt result", path.display()))
}
