//! One run session: what every measuring subcommand does around its measurement, in one place.
//!
//! `check`, `latency`, `matrix`, `wakeup`, `micro`, `rtio-bench`, the two demos (`demo gimbal`,
//! `demo uav`) and each step of the `run` suite ([`Session::suite_step`]) all follow the same
//! steps,
//! and before this module each wrote them out itself (and they drifted: only two recorded the
//! history). A [`Session`] does them in order:
//!
//! 1. **outputs first**: every file the run will write is checked writable *before* anything
//!    is measured ([`crate::export::check_writable`]); a bad path is a usage error (exit 2)
//!    naming it, at once, instead of a lost measurement;
//! 2. **system information** and its threats to validity ([`crate::sysinfo`],
//!    [`crate::warnings`]), with the start stamps;
//! 3. **result files**: [`Session::file`] stamps a [`ResultFile`]; [`Session::write_partial`]
//!    rewrites the outputs while the run goes (`complete: false`);
//! 4. **the end**: [`Session::save`] writes the final file to every output; when that fails
//!    the result is saved to a fallback file whose path is printed, so the run is never lost;
//!    then the run is recorded in the history database unless `--no-history`. A run with an
//!    optional output that ends after its figures (the demos' MCAP recording) saves once
//!    more with its outcome, [`Session::amend`], in place.
//!
//! The caller prints its terminal table between [`Session::save`] and [`Saved::exit`], so the
//! table is shown even when a file could not be written.

use std::path::{Path, PathBuf};

use anyhow::Result;
use preempt_io::sys::clock::monotonic_now_ns;

use crate::export::lock::DirLock;
use crate::export::{Exporter, Sink, check_writable, json::JsonExporter, write_atomically};
use crate::history::{self, HistoryConfig};
use crate::results::{ResultFile, RunResult, SysInfo, unix_ms_now};
use crate::sysinfo;
use crate::warnings::Warning;

/// A measuring subcommand's run: its outputs, its machine, its warnings, its clock.
#[derive(Debug)]
pub struct Session {
    /// The run's kind: the fallback file's name ([`fallback_path`]).
    kind: &'static str,
    /// The command whose flags the warnings' hints name (`kind`, or `run` in the suite).
    hints_for: &'static str,
    /// The machine, collected at the start.
    pub info: SysInfo,
    /// Wall-clock start (ms since the Unix epoch).
    pub started_unix_ms: u64,
    t0_ns: u64,
    /// Threats to validity so far (machine warnings first, then the run's own).
    pub warnings: Vec<Warning>,
    sink: Sink,
    history: HistoryConfig,
    /// The output directory this run holds ([`Session::lock_dir`]), released when it ends.
    dir_lock: Option<DirLock>,
}

/// What [`Session::save`] did.
#[derive(Debug)]
#[must_use = "call exit() after printing the terminal table"]
pub struct Saved {
    /// The run's id in the history database, when recorded.
    pub history_id: Option<i64>,
    /// Where the result went instead when an output could not be written (`error` says
    /// why), if that fallback file could be written.
    pub fallback: Option<PathBuf>,
    /// A write that failed (the result went to a fallback file, named in the error).
    pub error: Option<anyhow::Error>,
}

impl Saved {
    /// The exit code of the run: `code`, unless an output could not be written (then the
    /// write error, whose message names the fallback file).
    pub fn exit(self, code: u8) -> Result<u8> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(code),
        }
    }
}

impl Session {
    /// Starts a run of `kind` (`latency`, `micro`, ...): checks every output (`sink`'s files
    /// and `extra_outputs`, e.g. `--trace-samples`) before anything is measured, then
    /// collects the system information of `argv`.
    pub fn start(
        kind: &'static str,
        argv: Vec<String>,
        sink: Sink,
        extra_outputs: &[&Path],
        history: HistoryConfig,
    ) -> Result<Self> {
        sink.preflight()?;
        for p in extra_outputs {
            check_writable(p)?;
        }
        Ok(Self::begin(kind, kind, argv, sink, history))
    }

    /// Starts one step of the `preempt run` suite, whose result goes to `json` (the suite
    /// checked every file it writes before its first step, so this one is not checked again:
    /// a directory removed mid-suite costs no measurement, the result goes to the fallback
    /// file). `stem` names the fallback file (`latency-idle`, ...); the warnings' hints name
    /// `preempt run`'s flags.
    pub fn suite_step(
        stem: &'static str,
        argv: Vec<String>,
        json: &Path,
        history: HistoryConfig,
    ) -> Self {
        Self::begin(stem, "run", argv, Sink::new(Some(json), None), history)
    }

    fn begin(
        kind: &'static str,
        hints_for: &'static str,
        argv: Vec<String>,
        sink: Sink,
        history: HistoryConfig,
    ) -> Self {
        let t0_ns = monotonic_now_ns();
        let started_unix_ms = unix_ms_now();
        Self {
            kind,
            hints_for,
            info: sysinfo::collect(argv),
            started_unix_ms,
            t0_ns,
            warnings: Vec::new(),
            sink,
            history,
            dir_lock: None,
        }
    }

    /// Holds `dir` (the run's own output directory, given as `flag`) for the rest of the run,
    /// so that two runs never write the same files at once: a second run is refused at once
    /// (exit 2), naming this one's pid ([`DirLock`]).
    ///
    /// # Errors
    /// Another run holds `dir`, or its lock file cannot be opened.
    pub fn lock_dir(&mut self, dir: &Path, flag: &str) -> Result<()> {
        self.dir_lock = Some(DirLock::acquire(dir, flag)?);
        Ok(())
    }

    /// Prints the warnings so far with this command's hints.
    pub(crate) fn print_warnings(&self) {
        crate::warnings::print_in(&self.warnings, self.hints_for);
    }

    /// Adds the machine's threats to validity for a run on `cpus` (governor, SMT, isolation...).
    pub(crate) fn add_machine_warnings(&mut self, cpus: &[usize]) {
        let w = sysinfo::machine_warnings(&self.info, cpus);
        self.warnings.extend(w);
    }

    /// Whether the run writes any file (partial results are only built when it does).
    pub(crate) fn writes_files(&self) -> bool {
        !self.sink.is_empty()
    }

    /// A complete result file of `result`, stamped with this session's start, elapsed time
    /// and warnings.
    pub fn file(&self, result: RunResult) -> ResultFile {
        let mut f = ResultFile::new(self.info.clone(), result);
        f.started_unix_ms = self.started_unix_ms;
        f.elapsed_ns = monotonic_now_ns().saturating_sub(self.t0_ns);
        f.warnings = self
            .warnings
            .iter()
            .map(|w| w.to_record_in(self.hints_for))
            .collect();
        f
    }

    /// Rewrites every output with a partial result (`f.complete` should be false).
    pub fn write_partial(&self, f: &ResultFile) -> Result<()> {
        self.sink.write(f)
    }

    /// Writes the final result to every output (or, when that fails, to a fallback file whose
    /// path is printed), then records it in the history unless `--no-history`.
    pub fn save(&self, f: &ResultFile) -> Saved {
        let f = &Self::signalled(f);
        let (error, fallback) = self.write_or_fall_back(f);
        let history_id = history::record_quietly(&self.history, f, self.sink.json_path());
        Saved {
            history_id,
            error,
            fallback,
        }
    }

    /// The JSON output of this run, if it writes one.
    pub fn json_path(&self) -> Option<&Path> {
        self.sink.json_path()
    }

    /// Saves `f` again over what [`Session::save`] wrote (`saved`): every output (or the
    /// fallback file), and the history record in place. For a run whose optional output ends
    /// after its figures are saved (the demos' MCAP recording): `f` carries that outcome.
    pub fn amend(&self, saved: Saved, f: &ResultFile) -> Saved {
        let f = &Self::signalled(f);
        let (error, fallback) = self.write_or_fall_back(f);
        if let Some(id) = saved.history_id {
            history::replace_quietly(&self.history, id, f);
        }
        Saved {
            history_id: saved.history_id,
            error,
            fallback,
        }
    }

    /// Writes `f` to every output, or to the fallback file: the error and the fallback file.
    fn write_or_fall_back(&self, f: &ResultFile) -> (Option<anyhow::Error>, Option<PathBuf>) {
        match self.sink.write(f) {
            Ok(()) => (None, None),
            Err(e) => {
                let (e, fallback) = self.fallback(f, e);
                (Some(e), fallback)
            }
        }
    }

    /// `f` marked interrupted by the signal, when one stopped the run and the caller did not
    /// name another cause.
    fn signalled(f: &ResultFile) -> std::borrow::Cow<'_, ResultFile> {
        match (f.interrupted && f.interrupted_by.is_none() && f.failed.is_none())
            .then(crate::measure::stop_signal_name)
            .flatten()
        {
            Some(sig) => std::borrow::Cow::Owned(ResultFile {
                interrupted_by: Some(sig.into()),
                ..f.clone()
            }),
            None => std::borrow::Cow::Borrowed(f),
        }
    }

    /// Saves `f` where it can still be written after `e`, and says where: the error to
    /// report, and the fallback file when it could be written.
    fn fallback(&self, f: &ResultFile, e: anyhow::Error) -> (anyhow::Error, Option<PathBuf>) {
        let path = fallback_path(self.kind, self.started_unix_ms);
        let saved = JsonExporter
            .serialize(f)
            .and_then(|bytes| write_atomically(&path, &bytes));
        match saved {
            Ok(()) => {
                eprintln!(
                    "preempt: {e:#}; the results are saved in {} instead",
                    path.display()
                );
                let e = e.context(format!(
                    "results saved in {} instead (`preempt report {}` reads it)",
                    path.display(),
                    path.display()
                ));
                (e, Some(path))
            }
            Err(e2) => {
                eprintln!(
                    "preempt: {e:#}; the fallback {} failed too: {e2:#}",
                    path.display()
                );
                let e = e.context(format!(
                    "the fallback {} failed too: {e2:#}",
                    path.display()
                ));
                (e, None)
            }
        }
    }
}

/// Where a result goes when its own output cannot be written: the temporary directory
/// (`$TMPDIR`, else `/tmp`), named after the kind and start so that runs do not collide.
pub fn fallback_path(kind: &str, started_unix_ms: u64) -> PathBuf {
    std::env::temp_dir().join(format!(
        "preempt-{kind}-{started_unix_ms}-{}.json",
        std::process::id()
    ))
}
