//! The measurement engines: `latency` ([`latency`]), `matrix` ([`matrix`]) and `wakeup`
//! ([`wakeup`]), plus what they share: the real-time environment (memory locking,
//! `/dev/cpu_dma_latency`), the stop flag set by Ctrl-C, the tool's own overhead
//! ([`overhead`]), the calibrated compute step ([`work`]) and the validity ledger ([`ledger`]).

pub mod explain;
pub mod latency;
pub mod ledger;
pub mod matrix;
pub mod overhead;
pub mod wakeup;
pub mod work;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use anyhow::{Context, Result};
use preempt_io::sys::{cpu, mem, signal};

use crate::config::RtConfig;
use crate::warnings::Warning;

/// Set by SIGINT/SIGTERM: measuring loops stop at their next wake-up and the run writes what
/// it has. A second signal kills the process at once (exit 130 for SIGINT, 143 for SIGTERM).
/// The one stop flag of every measuring program (`preempt_io::sys::signal`).
pub(crate) fn install_stop_flag() -> Result<Arc<AtomicBool>> {
    signal::install_stop_flag().context("cannot install the Ctrl-C handler")
}

/// The signal that stopped the run, by name (`SIGINT`, `SIGTERM`), if one did.
pub(crate) fn stop_signal_name() -> Option<&'static str> {
    match signal::stop_signal()? {
        signal::SIGINT => Some("SIGINT"),
        signal::SIGTERM => Some("SIGTERM"),
        _ => None,
    }
}

/// The exit code of a run stopped by a signal: 143 when SIGTERM stopped it, else 130 (Ctrl-C).
pub fn interrupted_exit_code() -> u8 {
    signal::stopped_exit_code()
}

/// The environment variable of [`test_pause`].
pub(crate) const TEST_PAUSE_ENV: &str = "PREEMPT_TEST_PAUSE";

/// The longest [`test_pause`]: a forgotten variable delays a run, never hangs it.
const TEST_PAUSE_MAX_NS: u64 = 30_000_000_000;

/// For tests of what a signal at `point` leaves (a window that is otherwise milliseconds
/// long): when `PREEMPT_TEST_PAUSE` names `point`, says `preempt: test pause at POINT` on
/// stderr and waits there until a signal changes `stop` (a first Ctrl-C), or, when `stop` is
/// set already, until the second signal ends the process; 30 s at most. Without the variable
/// (every real run) it costs one environment lookup.
///
/// Points: `check` (before the measured item of `preempt check`), `mcap-tail` (the demos,
/// after the figures are saved and before the MCAP recording's end is written).
pub fn test_pause(point: &str, stop: &AtomicBool) {
    if std::env::var_os(TEST_PAUSE_ENV).is_none_or(|v| v != point) {
        return;
    }
    let was = stop.load(Relaxed);
    eprintln!("preempt: test pause at {point} ({TEST_PAUSE_ENV})");
    let end = preempt_io::sys::clock::monotonic_now_ns() + TEST_PAUSE_MAX_NS;
    let mut next = preempt_io::sys::clock::monotonic_now_ns();
    while stop.load(Relaxed) == was && next < end {
        next += 10_000_000;
        let _ = preempt_io::sys::clock::sleep_until_ns(
            preempt_io::sys::clock::ClockId::Monotonic,
            next,
        );
    }
}

/// The process-wide real-time setup of a run; undone when dropped.
#[derive(Debug)]
pub(crate) struct RtEnvironment {
    dma: Option<cpu::CpuDmaLatency>,
    locked: bool,
    /// Warnings raised while setting up.
    pub warnings: Vec<Warning>,
}

impl RtEnvironment {
    /// Locks memory and holds `/dev/cpu_dma_latency` at 0 as configured; failures become
    /// warnings (the run still measures, and says what it could not do).
    pub(crate) fn prepare(rt: RtConfig) -> Self {
        let mut warnings = Vec::new();
        let mut locked = false;
        if rt.mlock {
            match mem::lock_all_memory() {
                Ok(()) => locked = true,
                Err(e) => warnings.push(Warning::MlockFailed {
                    error: e.to_string(),
                }),
            }
            // Keep freed memory in the process instead of returning it (and faulting it back).
            if let Err(e) = mem::tune_allocator_for_real_time() {
                warnings.push(Warning::MlockFailed {
                    error: format!("mallopt: {e}"),
                });
            }
        } else {
            warnings.push(Warning::MlockDisabled);
        }
        let dma = if rt.dma_latency {
            match cpu::hold_cpu_dma_latency(0) {
                Ok(g) => Some(g),
                Err(e) => {
                    warnings.push(Warning::CpuDmaLatencyUnset {
                        error: e.to_string(),
                    });
                    None
                }
            }
        } else {
            None
        };
        Self {
            dma,
            locked,
            warnings,
        }
    }

    /// The `/dev/cpu_dma_latency` target held, if any.
    pub(crate) fn dma_latency_us(&self) -> Option<i32> {
        self.dma.as_ref().map(cpu::CpuDmaLatency::target_us)
    }

    /// Whether mlockall succeeded.
    pub(crate) fn memory_locked(&self) -> bool {
        self.locked
    }
}

impl Drop for RtEnvironment {
    fn drop(&mut self) {
        if self.locked {
            // Unlocking at the end only gives memory back early; failure changes nothing.
            let _ = mem::unlock_all_memory();
        }
    }
}
