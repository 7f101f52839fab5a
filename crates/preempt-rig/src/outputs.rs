//! Where a demo run's files go (`DIR/STEM.json`, `DIR/STEM.mcap`), and how an earlier run's
//! files survive a run that never starts: [`Outputs::begin`] sets them aside as
//! `STEM.previous.*`, [`Outputs::abandon`] gives them their names back, [`Outputs::replaced`]
//! removes them once the new result file is written. Both demonstrators and the CLI's
//! `preempt demo` use it.
//!
//! ```
//! use preempt_rig::outputs::Outputs;
//! let dir = std::env::temp_dir().join(format!("preempt-rig-doc-{}", std::process::id()));
//! let out = Outputs::prepare(&dir, "gimbal").unwrap();
//! assert_eq!(out.json, dir.join("gimbal.json"));
//! assert_eq!(out.mcap, dir.join("gimbal.mcap"));
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::path::{Path, PathBuf};

/// Where a run's files go.
#[derive(Clone, Debug)]
pub struct Outputs {
    /// `DIR/STEM.json` (`gimbal.json`, `uav.json`).
    pub json: PathBuf,
    /// `DIR/STEM.mcap`.
    pub mcap: PathBuf,
    /// An earlier run's files set aside by [`Outputs::begin`]: (its name, its name now).
    set_aside: Vec<(PathBuf, PathBuf)>,
}

impl Outputs {
    /// `DIR/STEM.json` and `DIR/STEM.mcap`, `dir` created if needed.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn prepare(dir: &Path, stem: &str) -> Result<Outputs, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("--out {}: cannot create the directory: {e}", dir.display()))?;
        Ok(Outputs {
            json: dir.join(format!("{stem}.json")),
            mcap: dir.join(format!("{stem}.mcap")),
            set_aside: Vec::new(),
        })
    }

    /// Where [`Outputs::begin`] sets an earlier run's `path` aside: `DIR/STEM.previous.EXT`
    /// (`gimbal.previous.json`, `gimbal.previous.mcap`).
    pub fn previous(path: &Path) -> PathBuf {
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        let ext = path.extension().unwrap_or_default().to_string_lossy();
        path.with_file_name(format!("{stem}.previous.{ext}"))
    }

    /// Before anything runs: checks that the result file can be written (a temporary file
    /// beside it, removed again: the result file itself is only ever created whole, so no
    /// empty file is left by a run that dies), then sets an earlier run's result file and
    /// recording aside as `STEM.previous.json` and `STEM.previous.mcap`. A run that is killed
    /// (SIGKILL, a second Ctrl-C) thus never leaves an earlier run's `STEM.json` looking like
    /// its own; [`Outputs::abandon`] puts them back when the run never started,
    /// [`Outputs::replaced`] removes them once this run's result file is written.
    ///
    /// # Errors
    /// The result file cannot be written, or an earlier file cannot be renamed, naming it.
    pub fn begin(&mut self) -> Result<(), String> {
        let probe = tmp_path(&self.json);
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&probe)
            .and_then(|_| std::fs::remove_file(&probe))
            .map_err(|e| format!("--out: cannot write {}: {e}", self.json.display()))?;
        for path in [&self.json, &self.mcap] {
            if !path.exists() {
                continue;
            }
            let aside = Outputs::previous(path);
            std::fs::rename(path, &aside).map_err(|e| {
                format!(
                    "--out: cannot set the earlier {} aside as {}: {e}",
                    path.display(),
                    aside.display()
                )
            })?;
            self.set_aside.push((path.clone(), aside));
        }
        Ok(())
    }

    /// After a run that never started: the earlier run's files, set aside by
    /// [`Outputs::begin`], get their names back (DIR is as it was).
    pub fn abandon(&self) {
        for (name, aside) in &self.set_aside {
            let _ = std::fs::rename(aside, name);
        }
    }

    /// Once this run's result file is written: removes the earlier run's files that
    /// [`Outputs::begin`] set aside.
    pub fn replaced(&self) {
        for (_, aside) in &self.set_aside {
            let _ = std::fs::remove_file(aside);
        }
    }
}

/// Writes `doc` as pretty JSON to `path` atomically (`preempt_io::sys::file::
/// write_atomically`: a temporary file beside it, then a rename), so that a full disk leaves
/// the earlier file whole, never a cut one.
///
/// # Errors
/// The file cannot be written (the message names it).
pub fn write_json(path: &Path, doc: &serde_json::Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    preempt_io::sys::file::write_atomically(path, (text + "\n").as_bytes())
        .map_err(|e| format!("cannot write {e}"))
}

/// `PATH.tmp`: the probe of [`Outputs::begin`] (can a file be created beside the result?).
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    PathBuf::from(tmp)
}
