//! Controlling a run from outside: a stop flag (Ctrl-C) and a callback after every finished
//! cell, so a caller can keep everything that finished and write it as the run goes.
//!
//! **Ctrl-C policy.** The stop flag is read before each cell and between the trials of a
//! sweep, never inside a cell: a cell is `--duration` long (2 s by default) and the one
//! running when Ctrl-C arrives is finished and kept, then the run returns what it has with
//! [`Document::interrupted`](crate::report::Document::interrupted) set. This works because the
//! simulator runs in a process group of its own (see `preempt_imu_sim::spawn`), so a
//! terminal's Ctrl-C, which goes to the whole foreground process group, reaches the benchmark
//! only and not the simulated sensor in the middle of a measurement. A second Ctrl-C quits at
//! once (the stop flag of every measuring program, `preempt_io::sys::signal::install_stop_flag`);
//! the simulator dies with the benchmark (its parent-death signal).
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use preempt_rtio_bench::control::RunControl;
//! let stop = AtomicBool::new(false);
//! let mut cells = 0;
//! let mut count = |d: &preempt_rtio_bench::report::Document| cells = d.cells.len();
//! let control = RunControl::new(&stop, &mut count);
//! assert!(!control.stopped());
//! ```

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use preempt_io::sys::clock::{self, ClockId};

use crate::report::Document;

/// What a caller gives [`run_with`](crate::run_with): when to stop, and what to do with the
/// document after every finished cell (and every finished sweep break point).
pub struct RunControl<'a> {
    stop: &'a AtomicBool,
    on_cell: std::cell::RefCell<&'a mut dyn FnMut(&Document)>,
}

impl std::fmt::Debug for RunControl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunControl")
            .field("stop", &self.stop)
            .finish_non_exhaustive()
    }
}

impl<'a> RunControl<'a> {
    /// A control that stops when `stop` becomes true and calls `on_cell` with the document so
    /// far (`complete: false`) after every finished cell or break point.
    pub fn new(stop: &'a AtomicBool, on_cell: &'a mut dyn FnMut(&Document)) -> RunControl<'a> {
        RunControl {
            stop,
            on_cell: std::cell::RefCell::new(on_cell),
        }
    }

    /// Whether the caller asked the run to stop.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub(crate) fn cell_done(&self, doc: &Document) {
        (self.on_cell.borrow_mut())(doc);
    }
}

/// The line printed on the first Ctrl-C.
pub const CTRL_C_NOTICE: &str = "Ctrl-C: finishing the running cell (up to --duration), then \
     stopping and keeping every finished cell; Ctrl-C again quits now";

/// Prints `prefix: `[`CTRL_C_NOTICE`] once, as soon as the stop flag is set (the run only
/// sees the flag between cells, so without it the run seems to ignore Ctrl-C for up to a
/// cell). Stopped and joined on drop.
#[derive(Debug)]
pub struct StopNotice {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StopNotice {
    /// Starts the watcher thread.
    ///
    /// # Errors
    /// When the thread cannot be spawned.
    pub fn spawn(stop: &Arc<AtomicBool>, prefix: &'static str) -> io::Result<StopNotice> {
        let done = Arc::new(AtomicBool::new(false));
        let (stop, done2) = (Arc::clone(stop), Arc::clone(&done));
        let thread = std::thread::Builder::new()
            .name("rtio-ctrlc".into())
            .spawn(move || {
                while !done2.load(Ordering::Relaxed) {
                    if stop.load(Ordering::Relaxed) {
                        eprintln!("{prefix}: {CTRL_C_NOTICE}");
                        return;
                    }
                    // A 100 ms poll: this thread only prints a notice.
                    let next = clock::now_ns(ClockId::Monotonic) + 100_000_000;
                    if clock::sleep_until_ns(ClockId::Monotonic, next).is_err() {
                        return;
                    }
                }
            })?;
        Ok(StopNotice {
            done,
            thread: Some(thread),
        })
    }
}

impl Drop for StopNotice {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // The thread only prints; a panic there has nothing to report here.
            let _ = t.join();
        }
    }
}
