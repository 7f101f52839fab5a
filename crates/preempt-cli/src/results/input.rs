//! Reading the files `report` and `compare` are given: preempt result files of every kind
//! (including `micro`), cyclictest's `--json` output and its histogram output, whole
//! directories of them, and runs from the history database.
//!
//! Every error names the file (or run id) and what is wrong with it, and nothing is guessed:
//! a file that is none of the known formats is refused with the list of formats.
//!
//! ```
//! use preempt_cli::results::input::parse_text;
//! let err = parse_text("{\"hello\": 1}", "x.json").unwrap_err();
//! assert!(format!("{err:#}").contains("x.json"));
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::error::usage;
use crate::results::cyclictest::{self, CyclicRun};
use crate::results::{ResultFile, RunResult, SCHEMA_VERSION, plausible};

/// What a file holds.
#[derive(Debug, Clone)]
pub enum Loaded {
    /// A preempt result (`check`, `latency`, `matrix`, `wakeup`, `rtio_bench`, `micro`).
    Result(Box<ResultFile>),
    /// cyclictest output (`--json` or histogram), converted.
    Cyclictest(Box<CyclicRun>),
}

impl Loaded {
    /// The kind tag: `check`, `latency`, `matrix`, `wakeup`, `rtio_bench`, `micro` or
    /// `cyclictest`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Result(r) => r.result.kind(),
            Self::Cyclictest(_) => "cyclictest",
        }
    }
}

/// One input with where it came from.
#[derive(Debug, Clone)]
pub struct Input {
    /// Short label for tables and legends (file stem or `run #N`).
    pub label: String,
    /// The file path or `history run #N`.
    pub source: String,
    /// The file's directory (for files that reference others, e.g. matrix cells).
    pub dir: Option<PathBuf>,
    /// Contents.
    pub loaded: Loaded,
}

/// Parses text of any supported format; `name` is used in errors.
pub fn parse_text(text: &str, name: &str) -> Result<Loaded> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        bail!("{name} is empty");
    }
    if trimmed.starts_with('{') {
        let value: serde_json::Value = serde_json::from_str(text)
            .with_context(|| format!("{name} is not valid JSON (truncated or corrupt?)"))?;
        if value.get("schema_version").is_some() {
            return parse_preempt(value, name);
        }
        if cyclictest::looks_like_json(&value) {
            return Ok(Loaded::Cyclictest(Box::new(
                cyclictest::from_json(&value)
                    .with_context(|| format!("{name}: bad cyclictest --json file"))?,
            )));
        }
        bail!(
            "{name} is JSON but neither a preempt result (no schema_version) nor cyclictest --json output (no thread object)"
        );
    }
    if cyclictest::looks_like_histogram(text) {
        return Ok(Loaded::Cyclictest(Box::new(
            cyclictest::from_histogram(text)
                .with_context(|| format!("{name}: bad cyclictest histogram output"))?,
        )));
    }
    bail!(
        "{name} is not a preempt result file, cyclictest --json output or cyclictest -h/--histofall output \
         (it does not start with '{{' or with a '# ' comment line)"
    )
}

fn parse_preempt(value: serde_json::Value, name: &str) -> Result<Loaded> {
    match value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
    {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) => {
            bail!("{name} has schema_version {v}; this preempt reads version {SCHEMA_VERSION}")
        }
        None => bail!("{name}: schema_version is not a number"),
    }
    let kind = value
        .get("kind")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
        .to_string();
    plausible::result_value(&value)
        .with_context(|| format!("{name} is not a plausible preempt result (kind '{kind}')"))?;
    let r: ResultFile = serde_json::from_value(value)
        .with_context(|| format!("{name} is not a valid preempt result (kind '{kind}')"))?;
    Ok(Loaded::Result(Box::new(r)))
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// Largest result file `report`, `compare` and `history import` read: 256 MiB. The largest
/// files preempt writes are the demos' (a 10 min gimbal run's `gimbal.json` with its series is
/// about 140 MB: 0.75 MB for 3 s here); without a bound, `preempt report /dev/zero` grew to
/// 11 GB resident in 5 s.
pub(crate) const MAX_RESULT_BYTES: u64 = 256 << 20;

/// Largest `--trace-samples` CSV `report` reads: 2 GiB (a 10 min run of two threads at
/// 1 kHz is about 80 MB; the sample buffer itself is bounded by `MAX_TRACE_BYTES`).
pub(crate) const MAX_TRACE_CSV_BYTES: u64 = 2 << 30;

/// Reads at most `limit` bytes of the text file `path` (a file, a pipe, a device): more is
/// refused, naming the file and the limit, after reading no more than `limit + 1` bytes (a
/// regular file larger than `limit` without reading any); a NUL byte in the first 4 KiB
/// (binary data, `/dev/zero`) is refused at once.
///
/// # Errors
/// The file cannot be read, is not text, or holds more than `limit` bytes.
pub(crate) fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let read_err = || format!("cannot read {}", path.display());
    let file = open_input(path)?;
    // A regular file says its size: one past the limit is refused before a byte is read
    // (a 1 GB file was read up to the limit, 2 s and 269 MB, to be refused the same).
    let size = file
        .metadata()
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len());
    if let Some(size) = size.filter(|s| *s > limit) {
        bail!(
            "{} is larger than {} MiB, the most preempt reads from one file ({} MiB; refused \
             without reading it): it is not a file preempt wrote; give the result file itself",
            path.display(),
            limit >> 20,
            size >> 20
        );
    }
    let mut reader = file.take(limit.saturating_add(1));
    let mut bytes = Vec::new();
    (&mut reader)
        .take(4096)
        .read_to_end(&mut bytes)
        .with_context(read_err)?;
    if bytes.contains(&0) {
        bail!(
            "{} is not text (binary data, or a device such as /dev/zero); give a preempt \
             result, a --trace-samples CSV or cyclictest output",
            path.display()
        );
    }
    reader.read_to_end(&mut bytes).with_context(read_err)?;
    if bytes.len() as u64 > limit {
        bail!(
            "{} is larger than {} MiB, the most preempt reads from one file: it is not a \
             file preempt wrote; give the result file itself",
            path.display(),
            limit >> 20
        );
    }
    Ok(bytes)
}

/// Opens the input file `path`. A path that names no file, a directory, or a file this user
/// may not read is a bad argument (a usage error, exit 2, naming the path and the fix), not a
/// failed run; other errors (EIO) are errors of the run.
///
/// # Errors
/// As above.
pub(crate) fn open_input(path: &Path) -> Result<std::fs::File> {
    use std::io::ErrorKind::{NotFound, PermissionDenied};
    let p = path.display().to_string();
    let refused = |e: std::io::Error| match e.kind() {
        NotFound => usage(format!(
            "cannot read {p}: no such file or directory; check the path"
        )),
        PermissionDenied => usage(format!(
            "cannot read {p}: permission denied; run as a user who may read it, or copy it \
             somewhere readable"
        )),
        _ => anyhow::Error::new(e).context(format!("cannot read {p}")),
    };
    if std::fs::metadata(path).map_err(refused)?.is_dir() {
        return Err(usage(format!(
            "cannot read {p}: it is a directory; give a file (report and compare also take a \
             directory of result files as a run)"
        )));
    }
    std::fs::File::open(path).map_err(refused)
}

/// Loads one file.
pub fn load_path(path: &Path) -> Result<Input> {
    let bytes = read_limited(path, MAX_RESULT_BYTES)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{} is not text (binary or corrupt)", path.display()))?;
    let loaded = parse_text(&text, &path.display().to_string())?;
    Ok(Input {
        label: stem(path),
        source: path.display().to_string(),
        dir: path.parent().map(Path::to_path_buf),
        loaded,
    })
}

/// Loads a file, or every `*.json` file of a directory (sorted by name); files referenced by a
/// matrix summary in the same directory are left to the matrix.
pub fn load_many(paths: &[PathBuf]) -> Result<Vec<Input>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| {
                    if e.kind() == std::io::ErrorKind::PermissionDenied {
                        usage(format!(
                            "cannot list {}: permission denied; run as a user who may read it",
                            p.display()
                        ))
                    } else {
                        anyhow::Error::new(e).context(format!("cannot list {}", p.display()))
                    }
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|e| e == "json") && f.is_file())
                .collect();
            files.sort();
            let loaded: Vec<Input> = files.iter().map(|f| load_path(f)).collect::<Result<_>>()?;
            let referenced: Vec<String> = loaded
                .iter()
                .filter_map(|i| match &i.loaded {
                    Loaded::Result(r) => match &r.result {
                        RunResult::Matrix(m) => Some(
                            m.cells
                                .iter()
                                .filter_map(|c| c.result_file.clone())
                                .collect::<Vec<_>>(),
                        ),
                        _ => None,
                    },
                    _ => None,
                })
                .flatten()
                .collect();
            if loaded.is_empty() {
                return Err(usage(format!(
                    "{} holds no result file (*.json); give a file or a directory of results",
                    p.display()
                )));
            }
            out.extend(loaded.into_iter().filter(|i| {
                let name = Path::new(&i.source)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                !referenced.contains(&name)
            }));
        } else {
            out.push(load_path(p)?);
        }
    }
    Ok(out)
}

/// Loads the per-cell latency results a matrix summary references, keyed by cell index.
pub(crate) fn matrix_cells(input: &Input) -> Vec<(usize, ResultFile)> {
    let (Loaded::Result(r), Some(dir)) = (&input.loaded, &input.dir) else {
        return Vec::new();
    };
    let RunResult::Matrix(m) = &r.result else {
        return Vec::new();
    };
    m.cells
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let f = dir.join(c.result_file.as_ref()?);
            match load_path(&f) {
                Ok(Input {
                    loaded: Loaded::Result(cell),
                    ..
                }) => Some((i, *cell)),
                // A missing cell file only loses that cell's histogram; the summary still has
                // its percentiles.
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file_and_the_problem() {
        let e = |t: &str| format!("{:#}", parse_text(t, "f.json").unwrap_err());
        assert!(e("").contains("f.json is empty"));
        assert!(e("{\"schema_version\": 1, \"kind\": \"latency\"").contains("not valid JSON"));
        assert!(e("{\"schema_version\": 99}").contains("schema_version 99"));
        assert!(
            e("{\"schema_version\": 1, \"kind\": \"latency\", \"data\": {}}")
                .contains("not a valid preempt result")
        );
        assert!(e("{\"schema_version\": 1, \"kind\": \"micro\", \"data\": {}}").contains("micro"));
        assert!(e("{\"a\": 1}").contains("neither a preempt result"));
        assert!(e("hello").contains("not a preempt result file"));
    }

    #[test]
    fn missing_file_is_named() {
        let e = format!(
            "{:#}",
            load_path(Path::new("/nonexistent/x.json")).unwrap_err()
        );
        assert!(e.contains("cannot read /nonexistent/x.json"), "{e}");
    }

    /// Issue 40: a result file whose figures no run can have produced (a latency of
    /// u64::MAX ns, 10^15 samples in a bucket of a 70 ms run, a negative or overflowing
    /// value) is refused naming the field, for `report`, `compare` and `history import` alike.
    #[test]
    fn implausible_preempt_results_are_refused_naming_the_field() {
        const MICRO: &str = include_str!("../../tests/fixtures/micro-v1.json");
        parse_text(MICRO, "m.json").expect("the real file is accepted");
        let err = |path: &[&str], to: serde_json::Value| {
            let mut v: serde_json::Value = serde_json::from_str(MICRO).unwrap();
            let mut at = &mut v;
            for k in path {
                at = match k.parse::<usize>() {
                    Ok(i) => &mut at[i],
                    Err(_) => &mut at[*k],
                };
            }
            *at = to;
            format!("{:#}", parse_text(&v.to_string(), "m.json").unwrap_err())
        };
        let max = ["data", "benches", "0", "ns", "summary", "max_ns"];
        let e = err(&max, u64::MAX.into());
        assert!(
            e.contains("m.json is not a plausible preempt result")
                && e.contains("data.benches[0].ns.summary.max_ns = 18446744073709551615 ns"),
            "{e}"
        );
        let e = err(&max, serde_json::json!(-5));
        assert!(e.contains("max_ns = -5 is negative"), "{e}");
        let e = err(&max, serde_json::json!(1e25));
        assert!(e.contains("does not fit in 64 bits"), "{e}");
        let bucket = [
            "data",
            "benches",
            "0",
            "ns",
            "histogram",
            "buckets",
            "0",
            "count",
        ];
        let e = err(&bucket, 1_000_000_000_000_000u64.into());
        assert!(
            e.contains("data.benches[0].ns.histogram.buckets[0].count = 1000000000000000 samples")
                && e.contains("a run of 69.5 ms"),
            "{e}"
        );
    }
}
