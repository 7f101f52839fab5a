//! The two helper threads every demo run needs beside its controller app, shared by the
//! gimbal's run (`preempt_gimbal::demo`) and `preempt-uav`'s flight (`preempt_uav::demo`):
//!
//! - the **recorder** drains the bridge (the app's telemetry) on the non-real-time side
//!   until the run has finished, then takes what is left;
//! - the **watchdog** checks every 20 ms whether the plant process is still alive and
//!   whether the caller's stop flag (Ctrl-C) is set, and ends the app in either case: a dead
//!   plant also rings `done`, so that an exchange waiting for its answer returns.
//!
//! [`run_app`] is one run around its app: both threads, `--explain`, the app, then the
//! threads' ends and the plant's (a run's one session); [`record_into`] is its files'
//! life: an earlier run's set aside, given back if this one cannot start.
//!
//! And the small steps around them: finding the plant binary, starting the plant and
//! waiting for its loop, handing an app its set-up, running a mock-clock reference app. (A
//! demo binary's Ctrl-C flag is every measuring program's: `preempt_io::sys::signal`.)

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use preempt::bridge::Receiver;
use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::eventfd::EventFd;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::outputs::Outputs;
use crate::plant_rt::PlantConfig;
use crate::spawn::PlantProcess;
use crate::telemetry::McapTail;

/// A demo binary's CPU flag: a CPU number, or `none` for no pinning; the error names `flag`.
///
/// # Errors
/// A value that is neither.
pub fn cpu_or_none(flag: &str, value: &str) -> Result<Option<usize>, String> {
    if value == "none" {
        return Ok(None);
    }
    value
        .parse()
        .map(Some)
        .map_err(|_| format!("{flag}: expected a CPU number or none"))
}

/// `name` next to the running executable (or one directory up, for test binaries in
/// `target/*/deps`).
pub fn sibling_exe(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let here = dir.join(name);
    if here.exists() {
        return here;
    }
    dir.parent().map_or(here.clone(), |p| p.join(name))
}

/// Checks a run's `--duration` in seconds against `min_s`..=3600.
///
/// # Errors
/// A message naming the flag.
pub fn check_duration(duration_s: f64, min_s: f64) -> Result<(), String> {
    if (min_s..=3600.0).contains(&duration_s) {
        Ok(())
    } else {
        Err(format!(
            "--duration {duration_s} s: expected {min_s} s to 3600 s (e.g. 5s, 500ms)"
        ))
    }
}

/// A started plant process, ready for the app.
#[derive(Debug)]
pub struct StartedPlant {
    /// The process (shared with the watchdog).
    pub plant: Arc<Mutex<PlantProcess>>,
    /// (page, doorbell, done) for the app's exchange.
    pub fds: [OwnedFd; 3],
    /// A handle on `done` for the watchdog to ring.
    pub done_ring: EventFd,
}

/// The environment variable that sets how long [`start_plant`] waits for the plant's loop,
/// in seconds (default [`PLANT_START_TIMEOUT_S`]).
pub const PLANT_START_TIMEOUT_ENV: &str = "PREEMPT_PLANT_START_TIMEOUT";

/// How long [`start_plant`] waits for the plant's loop by default, s. A plant starts its loop
/// within milliseconds on a Raspberry Pi 4 or this project's VM (exec, `mlockall`, SCHED_FIFO);
/// an emulated CPU on a loaded host took more than 5 s (docs/MEASURING.md, "arm64 and
/// PREEMPT_RT guests"), hence [`PLANT_START_TIMEOUT_ENV`].
pub const PLANT_START_TIMEOUT_S: f64 = 5.0;

/// The plant start-up timeout in ns from the value of [`PLANT_START_TIMEOUT_ENV`] (`None`:
/// unset): seconds, more than 0 and at most 3600.
///
/// # Errors
/// A message naming the variable and what it takes.
pub(crate) fn plant_start_timeout_ns(value: Option<&str>) -> Result<u64, String> {
    let Some(v) = value else {
        return Ok((PLANT_START_TIMEOUT_S * 1e9) as u64);
    };
    match v.trim().trim_end_matches('s').parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 3600.0 => Ok((s * 1e9) as u64),
        _ => Err(format!(
            "{PLANT_START_TIMEOUT_ENV}={v:?}: expected the seconds to wait for the plant \
             process's loop, more than 0 and at most 3600 (e.g. 60)"
        )),
    }
}

/// Starts the plant `exe` (after `prefix`) with `cfg` and waits for its loop, up to
/// [`PLANT_START_TIMEOUT_S`] or the seconds in [`PLANT_START_TIMEOUT_ENV`].
///
/// # Errors
/// The plant cannot start, or exits or hangs at start-up (the message says which, and how to
/// wait longer on a slow machine); a bad [`PLANT_START_TIMEOUT_ENV`].
pub fn start_plant(
    exe: &Path,
    prefix: &[String],
    cfg: &PlantConfig,
) -> Result<StartedPlant, String> {
    let env = std::env::var(PLANT_START_TIMEOUT_ENV).ok();
    let timeout_ns = plant_start_timeout_ns(env.as_deref())?;
    let mut plant = PlantProcess::spawn(exe, prefix, cfg).map_err(|e| e.to_string())?;
    plant.wait_running(timeout_ns).map_err(|e| {
        if e.kind() == io::ErrorKind::TimedOut {
            format!(
                "{e}: a slow or starved CPU (an emulated one, an overloaded board)? Set \
                 {PLANT_START_TIMEOUT_ENV}=<seconds> to wait longer"
            )
        } else {
            e.to_string()
        }
    })?;
    let fds = plant.dup_fds().map_err(|e| e.to_string())?;
    let done_ring = plant.bus.done.try_clone().map_err(|e| e.to_string())?;
    Ok(StartedPlant {
        plant: Arc::new(Mutex::new(plant)),
        fds,
        done_ring,
    })
}

/// Takes an app's set-up from its hand-off slot (in `#[init]`).
///
/// # Panics
/// When the slot is empty: the app's `run` wrapper fills it before starting the app.
pub fn take_setup<T>(slot: &Mutex<Option<T>>) -> T {
    slot.lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .expect("the app's run function hands the set-up over before the app starts")
}

/// Runs a mock-clock reference app (`run_app`, which pushes its records into `records`)
/// for `samples` samples; returns the records.
///
/// # Errors
/// The simulator's exit code when it is not 0 (e.g. the app already ran in this process).
pub fn run_reference<R>(
    records: &Mutex<Vec<R>>,
    samples: u64,
    run_app: fn() -> i32,
) -> Result<Vec<R>, String> {
    records
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .reserve(usize::try_from(samples).unwrap_or(0));
    let code = run_app();
    // The trace of a long run is large and nobody reads it.
    drop(preempt::sim::take_trace());
    if code != 0 {
        return Err(format!("the reference simulation stopped with code {code}"));
    }
    Ok(std::mem::take(
        &mut *records.lock().unwrap_or_else(|e| e.into_inner()),
    ))
}

/// Starts the recorder thread `name`: every record goes to `take(&mut state, record)` until
/// `finished` is set and the ring is empty. The thread returns the state and the count of
/// records the bridge lost (ring full).
///
/// # Errors
/// The thread cannot be started.
pub fn recorder<T, S, F>(
    name: &str,
    mut rx: Receiver<T>,
    finished: Arc<AtomicBool>,
    mut state: S,
    mut take: F,
) -> io::Result<JoinHandle<(S, u64)>>
where
    T: Send + 'static,
    S: Send + 'static,
    F: FnMut(&mut S, T) + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            loop {
                let deadline = clock::monotonic_now_ns() + 50_000_000;
                match rx.recv_until(deadline) {
                    Ok(r) => take(&mut state, r),
                    Err(_) if finished.load(Ordering::Acquire) => break,
                    Err(_) => {}
                }
            }
            while let Some(r) = rx.try_recv() {
                take(&mut state, r);
            }
            let lost = rx.overflows();
            (state, lost)
        })
}

/// A plant alive but without a step for this long ends the run (its CPU is taken).
pub const STALL_NS: u64 = 2_000_000_000;

/// The flags the watchdog sets in the app.
#[derive(Clone, Copy, Debug)]
pub struct AppFlags {
    /// The app's "stop now" flag.
    pub stop: &'static AtomicBool,
    /// The app's "plant is dead" flag.
    pub plant_dead: &'static AtomicBool,
    /// Records why the run ended (the app's error slot).
    pub fail: fn(String),
    /// The plant's CPU, for the stall message.
    pub plant_cpu: Option<usize>,
}

/// Starts the watchdog thread `name` (see the module docs); it ends when `finished` is set.
///
/// # Errors
/// The thread cannot be started.
pub fn watchdog(
    name: &str,
    plant: Arc<Mutex<PlantProcess>>,
    done_ring: EventFd,
    finished: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    app: AppFlags,
) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let mut next = clock::monotonic_now_ns();
            let (mut steps, mut moved_ns) = (0, next);
            while !finished.load(Ordering::Acquire) {
                if stop.load(Ordering::Relaxed) {
                    app.stop.store(true, Ordering::Relaxed);
                }
                let (dead, now_steps) = plant
                    .lock()
                    .map(|mut p| (!matches!(p.try_wait(), Ok(None)), p.counters().steps))
                    .unwrap_or((true, steps));
                if now_steps != steps {
                    (steps, moved_ns) = (now_steps, next);
                }
                let stalled = next.saturating_sub(moved_ns) >= STALL_NS;
                if stalled {
                    // Alive but not stepping: its CPU is taken (another real-time thread
                    // of equal or higher priority); the exchange would wait forever.
                    (app.fail)(format!(
                        "the plant process has not stepped for {} s: its CPU ({}) is taken \
                         by another real-time thread of equal or higher priority (another \
                         demo running?); try another --plant-cpu",
                        STALL_NS / 1_000_000_000,
                        app.plant_cpu.map_or("any".to_string(), |c| c.to_string())
                    ));
                }
                if dead || stalled {
                    app.plant_dead.store(true, Ordering::Release);
                    // Release an exchange that waits for the dead plant's answer.
                    let _ = done_ring.write(1);
                    app.stop.store(true, Ordering::Relaxed);
                }
                next += 20_000_000;
                let _ = clock::sleep_until_ns(ClockId::Monotonic, next);
            }
        })
}

/// Records a run into `dir`'s `<stem>.json` and `<stem>.mcap`: an earlier run's files are
/// set aside (as `<stem>.previous.*`) until the caller has written this one's
/// ([`Outputs::replaced`]); a run that `record` could not start gives them their names back
/// and leaves no partial recording.
///
/// # Errors
/// Files that cannot be prepared, or `record`'s error.
pub fn record_into<R>(
    dir: &Path,
    stem: &str,
    record: impl FnOnce(&Outputs) -> Result<(R, McapTail), String>,
) -> Result<(R, Outputs, McapTail), String> {
    let mut out = Outputs::prepare(dir, stem)?;
    out.begin()?;
    match record(&out) {
        Ok((data, tail)) => Ok((data, out, tail)),
        Err(e) => {
            let _ = std::fs::remove_file(crate::telemetry::part_path(&out.mcap));
            out.abandon();
            Err(e)
        }
    }
}

/// The end of a demo binary's run, once [`record_into`] returned: writes the figures
/// (`doc(data)`) to the result file, ends the recording (`tail`), and writes the figures again
/// with the recording's outcome (`set_outcome`), also when the first write failed (a
/// recording that filled the disk is removed by then). An earlier run's files go once this
/// run's result file is in place. A second Ctrl-C while the recording ends loses at most the
/// recording, never the figures.
///
/// # Errors
/// The result file could not be written (the figures are then only in `data`).
pub fn save_run<D>(
    out: &Outputs,
    tail: McapTail,
    data: &mut D,
    doc: impl Fn(&D) -> serde_json::Value,
    set_outcome: impl FnOnce(&mut D, Option<String>),
) -> Result<(), String> {
    let first = crate::outputs::write_json(&out.json, &doc(data));
    if first.is_ok() {
        out.replaced();
    }
    set_outcome(data, tail.close().1);
    let last = crate::outputs::write_json(&out.json, &doc(data));
    if first.is_err() && last.is_ok() {
        out.replaced();
    }
    last
}

/// How a demo binary's run ended, as its `main` hands it to [`finish`].
#[derive(Debug)]
pub struct RunEnd<'a> {
    /// The binary's name, for messages ("gimbal-demo").
    pub prog: &'a str,
    /// What the run is called in messages ("run", "flight").
    pub what: &'a str,
    /// Where its files went.
    pub out: &'a Outputs,
    /// The result file's save ([`save_run`]).
    pub saved: &'a Result<(), String>,
    /// Why the recording was lost, if it was.
    pub output_error: Option<&'a str>,
    /// Why the run stopped early, if it did (its figures so far are kept).
    pub error: Option<&'a str>,
    /// Stopped by Ctrl-C or SIGTERM.
    pub interrupted: bool,
}

/// Says where a demo binary's run went (the files written, or why the result file or the
/// recording was lost; why the run stopped early) and returns the binary's exit code, as
/// `preempt demo` decides it: 1 when the result file could not be written, 1 when the run
/// stopped early, 130 or 143 when it was stopped by Ctrl-C or SIGTERM, 1 when the recording
/// could not be written, else 0.
pub fn finish(end: &RunEnd<'_>) -> std::process::ExitCode {
    use std::process::ExitCode;
    let RunEnd {
        prog, what, out, ..
    } = *end;
    let files_ok = match (end.saved, end.output_error) {
        (Err(e), _) => {
            eprintln!("{prog}: {e} (the figures above are all that is left of the {what})");
            return ExitCode::from(1);
        }
        (Ok(()), None) => {
            println!("wrote {} and {}", out.json.display(), out.mcap.display());
            true
        }
        (Ok(()), Some(e)) => {
            println!("wrote {}", out.json.display());
            eprintln!(
                "{prog}: {e}; the figures were written to {} before it",
                out.json.display()
            );
            false
        }
    };
    if let Some(e) = end.error {
        eprintln!(
            "{prog}: the {what} stopped early: {e} (results so far kept, marked interrupted)"
        );
        return ExitCode::from(1);
    }
    if end.interrupted {
        return ExitCode::from(preempt_io::sys::signal::stopped_exit_code());
    }
    if files_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// What a demo run is besides its app and its telemetry: the names of its threads, the
/// caller's stop flag, the app's flags for the watchdog, whether `--explain` was asked for,
/// and the started plant (its process and a handle on `done`, from [`StartedPlant`]).
#[derive(Debug)]
pub struct RunSpec<'a> {
    /// The demo's name: its threads are `<name>-recorder` and `<name>-watchdog`.
    pub name: &'a str,
    /// The caller's Ctrl-C flag.
    pub stop: &'a Arc<AtomicBool>,
    /// What the watchdog sets in the app.
    pub flags: AppFlags,
    /// `--explain`: the runtime explains the run's misses.
    pub explain: bool,
    /// The plant process (shared with the watchdog).
    pub plant: Arc<Mutex<PlantProcess>>,
    /// A handle on `done` for the watchdog to ring.
    pub done_ring: EventFd,
}

/// What [`run_app`] gives back once the app has returned and the plant is stopped.
#[derive(Debug)]
pub struct AppRun<S, L> {
    /// The app's exit code.
    pub code: i32,
    /// The recorder's state after the last record.
    pub state: S,
    /// Records the bridge lost (ring full).
    pub lost: u64,
    /// What the caller's last look read from the plant before it was stopped.
    pub plant: L,
    /// Why stopping the plant failed, if it did.
    pub plant_error: Option<String>,
    /// The outcome of `--explain`, if it was asked for.
    pub explained: Option<Result<preempt::explain::Report, String>>,
}

/// One demo run around its app: starts the [`recorder`] (every telemetry record goes to
/// `take(&mut state, record)`) and the [`watchdog`] on the spec's plant, runs `app` (which
/// returns the app's exit code), then stops both threads, lets `last_look` read the plant
/// (its counters, its page) and stops it.
///
/// # Errors
/// A helper thread that cannot start (nothing runs then) or a recorder that panicked.
pub fn run_app<T, S, L>(
    spec: RunSpec<'_>,
    telemetry: Receiver<T>,
    state: S,
    take: impl FnMut(&mut S, T) + Send + 'static,
    app: impl FnOnce() -> i32,
    last_look: impl FnOnce(&mut PlantProcess) -> L,
) -> Result<AppRun<S, L>, String>
where
    T: Send + 'static,
    S: Send + 'static,
{
    let finished = Arc::new(AtomicBool::new(false));
    let recorder = recorder(
        &format!("{}-recorder", spec.name),
        telemetry,
        Arc::clone(&finished),
        state,
        take,
    )
    .map_err(|e| format!("cannot start the recorder thread: {e}"))?;
    let watchdog = watchdog(
        &format!("{}-watchdog", spec.name),
        Arc::clone(&spec.plant),
        spec.done_ring,
        Arc::clone(&finished),
        Arc::clone(spec.stop),
        spec.flags,
    );
    let watchdog = match watchdog {
        Ok(w) => w,
        Err(e) => {
            finished.store(true, Ordering::Release);
            let _ = recorder.join();
            return Err(format!("cannot start the watchdog thread: {e}"));
        }
    };
    if spec.explain {
        preempt::explain::request();
    }
    let code = app();
    let explained = preempt::explain::take_outcome();
    finished.store(true, Ordering::Release);
    let _ = watchdog.join();
    let (state, lost) = recorder
        .join()
        .map_err(|_| "the recorder thread panicked".to_string())?;
    let mut p = spec.plant.lock().unwrap_or_else(|e| e.into_inner());
    let look = last_look(&mut p);
    let plant_error = p.stop().err().map(|e| e.to_string());
    Ok(AppRun {
        code,
        state,
        lost,
        plant: look,
        plant_error,
        explained,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plant_start_timeout_is_5_s_unless_the_variable_sets_seconds() {
        assert_eq!(plant_start_timeout_ns(None), Ok(5_000_000_000));
        assert_eq!(plant_start_timeout_ns(Some("60")), Ok(60_000_000_000));
        assert_eq!(plant_start_timeout_ns(Some("0.5s")), Ok(500_000_000));
        for bad in ["0", "-1", "forever", "", "7200", "NaN"] {
            let err = plant_start_timeout_ns(Some(bad)).unwrap_err();
            assert!(
                err.contains(PLANT_START_TIMEOUT_ENV) && err.contains("e.g. 60"),
                "{bad}: {err}"
            );
        }
    }
}

#[cfg(test)]
mod cpu_flag_tests {
    use super::cpu_or_none;

    #[test]
    fn a_cpu_flag_is_a_number_or_none_and_errors_name_the_flag() {
        assert_eq!(cpu_or_none("--plant-cpu", "none"), Ok(None));
        assert_eq!(cpu_or_none("--plant-cpu", "1"), Ok(Some(1)));
        assert_eq!(
            cpu_or_none("--sim-cpu", "x"),
            Err("--sim-cpu: expected a CPU number or none".to_owned())
        );
    }
}
