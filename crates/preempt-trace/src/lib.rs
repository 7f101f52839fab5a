//! Why was it late: kernel-trace attribution of late wake-ups, and trace export.
//!
//! A [`Session`] creates a private tracefs instance, enables the scheduler and interrupt events
//! every kernel has (`sched_switch`, `sched_waking/wakeup`, `sched_migrate_task`,
//! `irq_handler_entry/exit`, `softirq_entry/exit`, on x86 the `irq_vectors` local timer and IPI
//! events, elsewhere `hrtimer_expire_entry/exit` in their place), and reads the per-CPU ring buffers in their binary
//! format from a background thread, keeping a bounded history per CPU. For a late task,
//! [`Session::explain`] splits its delay, from the intended release to the moment it ran, into
//! causes that add up to it ([`attribute`]); [`top_causes`] aggregates them over a run and
//! [`perfetto`] writes the windows as a Chrome/Perfetto JSON trace.
//!
//! Unlike rtla's timerlat auto-analysis it needs no special tracer and explains any task
//! (a measurement thread, a preempt app's executor), from events present in every kernel.
//!
//! ```no_run
//! use preempt_trace::{Options, Session, Window};
//! let session = Session::start(Options { cpus: Some(vec![1]), ..Options::default() })?;
//! // ... a thread with tid `tid` on CPU 1 should have run at `release` but ran at `end`:
//! # let (tid, release, end) = (0, 0, 0);
//! let why = session.explain(1, &Window { release_ns: release, end_ns: end, pid: tid })?;
//! for cause in &why.causes {
//!     println!("{} {}: {} ns", cause.kind.name(), cause.name, cause.ns);
//! }
//! # Ok::<(), preempt_trace::Error>(())
//! ```
//!
//! Module order (each imports only those above it): [`format`](mod@format) → [`ring`] → [`decode`] →
//! [`attribute`] → [`perfetto`] → [`tracefs`] → [`session`].

pub mod attribute;
pub mod decode;
pub mod format;
pub mod perfetto;
pub mod ring;
pub mod session;
pub mod tracefs;

pub use attribute::{
    Cause, CauseKind, CpuFacts, Explanation, Segment, Stretch, ThrottleTracker, TopCause, Window,
    describe_throttled, stops_rt_class, summary_lines, top_causes,
};
pub use session::{DEFAULT_READER_PRIORITY, Loss, Options, Session};

use std::fmt;
use std::io;

/// What can go wrong when tracing.
#[derive(Debug)]
pub enum Error {
    /// tracefs is missing or cannot be mounted; the message names the fix.
    Unavailable(String),
    /// Not allowed to use tracefs; the message names the capability and the fix.
    Permission(String),
    /// The kernel lacks an event the engine needs, or describes it in an unknown way.
    Format(String),
    /// An I/O error on a tracefs file.
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: io::Error,
    },
    /// The history no longer (or not yet) holds the window.
    NotCovered(String),
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Error {
        if source.kind() == io::ErrorKind::PermissionDenied {
            return Error::Permission(format!(
                "{}: {source}; kernel tracing needs root (CAP_SYS_ADMIN)",
                context.into()
            ));
        }
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Whether the error means "tracing cannot be used here" (no tracefs, no permission),
    /// as opposed to a fault during tracing.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unavailable(_) | Error::Permission(_))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unavailable(m) | Error::Permission(m) | Error::Format(m) => f.write_str(m),
            Error::NotCovered(m) => write!(f, "trace does not cover the window: {m}"),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
