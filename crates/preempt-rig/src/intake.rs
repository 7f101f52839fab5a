//! The non-real-time end of a demonstrator's command path: every command that arrives from
//! the network (a ROS 2 setpoint or waypoint, a Foxglove setpoint) goes through an
//! [`Intake`], which counts it once (accepted, or refused with its reason, or undecodable),
//! hands the accepted ones to the controller's bridge, and says what it refused on stderr
//! through a rate-limited log ([`preempt_io::ratelog`]), so a peer flooding a topic costs
//! counters, not a journal.
//!
//! ```text
//!  network ─► decode ─┬─ error ───────────────► undecodable += 1, log (rate-limited)
//!                     └─ check (the CLI's limits) ─┬─ refused ─► refused.<reason> += 1, log
//!                                                  └─ bridge.send ─┬─ full ─► refused.queue_full
//!                                                                  └─ ok ───► accepted += 1
//! ```
//!
//! The controller's side counts what it took from the bridge and how many of those a later
//! command replaced in the same step (superseded, never in force); what was accepted and
//! never taken (still in the bridge when the run ended) is the difference, so every message
//! received is in exactly one counter.
//!
//! ```
//! use preempt_rig::intake::{Intake, Refusal};
//! let (tx, mut rx) = preempt::bridge::channel::<f64>(4);
//! let intake = Intake::new("demo: setpoint", tx);
//! assert!(intake.offer(Ok(0.5)));
//! assert!(!intake.offer(Err((Refusal::OutOfRange, "1e308 is beyond ±π".into()))));
//! let c = intake.finish();
//! assert_eq!((c.accepted, c.refused.out_of_range), (1, 1));
//! assert_eq!(rx.try_recv(), Some(0.5));
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use preempt::bridge::Sender;
use preempt_io::ratelog::RateLimitedLog;
use serde::{Deserialize, Serialize};

/// Why a command was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A NaN (in any coordinate).
    Nan,
    /// Beyond the limits of its command-line form (an infinity included).
    OutOfRange,
    /// The controller's bridge was full (it takes commands once per step).
    QueueFull,
}

impl Refusal {
    /// The reason's name, as in the result's counters.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Nan => "nan",
            Refusal::OutOfRange => "out_of_range",
            Refusal::QueueFull => "queue_full",
        }
    }
}

/// Commands refused, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusals {
    /// NaN.
    pub nan: u64,
    /// Beyond the command-line form's limits (the gimbal's ±π rad, the UAV's flight box),
    /// infinities included.
    pub out_of_range: u64,
    /// The controller's bridge was full.
    pub queue_full: u64,
}

impl Refusals {
    /// All refusals.
    pub fn total(&self) -> u64 {
        self.nan + self.out_of_range + self.queue_full
    }
}

/// What an [`Intake`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntakeCounts {
    /// Handed to the controller's bridge.
    pub accepted: u64,
    /// Refused, by reason.
    pub refused: Refusals,
    /// Could not be decoded.
    pub undecodable: u64,
}

impl IntakeCounts {
    /// Every message received.
    pub fn received(&self) -> u64 {
        self.accepted + self.refused.total() + self.undecodable
    }
}

/// The counters of commands the controller took from its bridge, kept by the real-time
/// side (atomics only: no lock, no allocation).
#[derive(Debug, Default)]
pub struct Taken {
    taken: AtomicU64,
    superseded: AtomicU64,
}

impl Taken {
    /// No command taken yet.
    pub const fn new() -> Taken {
        Taken {
            taken: AtomicU64::new(0),
            superseded: AtomicU64::new(0),
        }
    }

    /// One command taken off the bridge.
    #[inline]
    pub fn take(&self) {
        self.taken.fetch_add(1, Ordering::Relaxed);
    }

    /// A command taken earlier in the same step was replaced by a later one before it was
    /// in force.
    #[inline]
    pub fn supersede(&self) {
        self.superseded.fetch_add(1, Ordering::Relaxed);
    }

    /// (taken off the bridge, of them superseded in the same step).
    pub fn get(&self) -> (u64, u64) {
        (
            self.taken.load(Ordering::Relaxed),
            self.superseded.load(Ordering::Relaxed),
        )
    }
}

/// The non-real-time end of a command bridge: checks, counts, hands on, logs at a bounded
/// rate. Shared by the threads that receive commands (`&self`).
pub struct Intake<T: Send> {
    label: String,
    tx: Arc<Mutex<Sender<T>>>,
    accepted: AtomicU64,
    refused: [AtomicU64; 3],
    undecodable: AtomicU64,
    log: RateLimitedLog,
}

impl<T: Send> std::fmt::Debug for Intake<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Intake")
            .field("counts", &self.counts())
            .field("log", &self.log)
            .finish_non_exhaustive()
    }
}

impl<T: Send> Intake<T> {
    /// An intake into `tx`. Its diagnostics go to stderr, rate-limited, each line prefixed
    /// with `label` (e.g. `"gimbal: ROS 2 setpoint"`).
    pub fn new(label: &str, tx: Sender<T>) -> Intake<T> {
        Intake::with_log(label, RateLimitedLog::stderr(Self::what(label)), tx)
    }

    /// An intake whose diagnostics go through `log`.
    pub fn with_log(label: &str, log: RateLimitedLog, tx: Sender<T>) -> Intake<T> {
        Intake::sharing(label, log, Arc::new(Mutex::new(tx)))
    }

    /// Another intake into the same bridge, with counters and a log of its own (a second
    /// source of the same commands: the gimbal's Foxglove server beside its ROS 2 node).
    pub fn alongside(&self, label: &str) -> Intake<T> {
        let log = RateLimitedLog::stderr(Self::what(label));
        Intake::sharing(label, log, Arc::clone(&self.tx))
    }

    fn what(label: &str) -> String {
        format!("{label}: refused or undecodable")
    }

    fn sharing(label: &str, log: RateLimitedLog, tx: Arc<Mutex<Sender<T>>>) -> Intake<T> {
        Intake {
            label: label.into(),
            tx,
            accepted: AtomicU64::new(0),
            refused: Default::default(),
            undecodable: AtomicU64::new(0),
            log,
        }
    }

    /// A checked command: hands it to the bridge (refused as [`Refusal::QueueFull`] if it is
    /// full); or counts and logs the refusal. Whether it was accepted.
    pub fn offer(&self, checked: Result<T, (Refusal, String)>) -> bool {
        match checked {
            Ok(cmd) => {
                let sent = self
                    .tx
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .send(cmd)
                    .is_ok();
                if sent {
                    self.accepted.fetch_add(1, Ordering::Relaxed);
                } else {
                    self.refuse(Refusal::QueueFull, || {
                        "refused: the controller's queue is full (it takes them once per step)"
                            .into()
                    });
                }
                sent
            }
            Err((why, msg)) => {
                self.refuse(why, || msg);
                false
            }
        }
    }

    /// Counts and logs a refusal; the line is `label: msg`.
    pub fn refuse(&self, why: Refusal, msg: impl FnOnce() -> String) {
        self.refused[why as usize].fetch_add(1, Ordering::Relaxed);
        self.log.log(|| format!("{}: {}", self.label, msg()));
    }

    /// Counts and logs a message that could not be decoded; the line is `label: msg`.
    pub fn undecodable(&self, msg: impl FnOnce() -> String) {
        self.undecodable.fetch_add(1, Ordering::Relaxed);
        self.log.log(|| format!("{}: {}", self.label, msg()));
    }

    /// The counts so far.
    pub fn counts(&self) -> IntakeCounts {
        let r = |w: Refusal| self.refused[w as usize].load(Ordering::Relaxed);
        IntakeCounts {
            accepted: self.accepted.load(Ordering::Relaxed),
            refused: Refusals {
                nan: r(Refusal::Nan),
                out_of_range: r(Refusal::OutOfRange),
                queue_full: r(Refusal::QueueFull),
            },
            undecodable: self.undecodable.load(Ordering::Relaxed),
        }
    }

    /// Writes the log's summary (how many diagnostics were not shown) and returns the counts.
    pub fn finish(&self) -> IntakeCounts {
        self.log.finish();
        self.counts()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn captured<T: Send>(tx: Sender<T>) -> (Intake<T>, Arc<Mutex<Vec<String>>>) {
        let (log, lines) = RateLimitedLog::collecting(
            "test: commands refused",
            preempt_io::ratelog::BURST,
            Duration::from_secs(10),
        );
        (Intake::with_log("test: command", log, tx), lines)
    }

    #[test]
    fn every_offer_lands_in_exactly_one_counter() {
        let (tx, mut rx) = preempt::bridge::channel::<u32>(2);
        let (intake, _lines) = captured(tx);
        assert!(intake.offer(Ok(1)));
        assert!(!intake.offer(Err((Refusal::Nan, "nan".into()))));
        assert!(intake.offer(Ok(2)));
        assert!(!intake.offer(Ok(3)), "the bridge of two is full");
        assert!(!intake.offer(Err((Refusal::OutOfRange, "far".into()))));
        intake.undecodable(|| "garbage".into());
        let c = intake.finish();
        assert_eq!(
            c,
            IntakeCounts {
                accepted: 2,
                refused: Refusals {
                    nan: 1,
                    out_of_range: 1,
                    queue_full: 1
                },
                undecodable: 1,
            }
        );
        assert_eq!(c.received(), 6);
        assert_eq!(
            (rx.try_recv(), rx.try_recv(), rx.try_recv()),
            (Some(1), Some(2), None)
        );
    }

    /// Issue 40: 100 000 refused commands write a bounded number of lines.
    #[test]
    fn a_flood_of_refusals_writes_a_bounded_number_of_lines() {
        let (tx, _rx) = preempt::bridge::channel::<u32>(1);
        let (intake, lines) = captured(tx);
        for i in 0..100_000 {
            intake.offer(Err((Refusal::OutOfRange, format!("{i} is out of range"))));
        }
        let c = intake.finish();
        assert_eq!(c.refused.out_of_range, 100_000);
        let lines = lines.lock().unwrap();
        assert!(lines.len() <= 10, "{} lines: {:?}", lines.len(), &lines[..]);
        assert!(lines.last().unwrap().contains("100000 in all"), "{lines:?}");
        assert_eq!(lines[0], "test: command: 0 is out of range");
    }

    #[test]
    fn an_intake_alongside_shares_the_bridge_not_the_counts() {
        let (tx, mut rx) = preempt::bridge::channel::<u32>(1);
        let (a, _lines) = captured(tx);
        let b = a.alongside("test: other");
        assert!(b.offer(Ok(7)));
        assert!(!a.offer(Ok(8)), "the shared bridge of one is full");
        assert_eq!((a.counts().accepted, a.counts().refused.queue_full), (0, 1));
        assert_eq!(b.counts().accepted, 1);
        assert_eq!(rx.try_recv(), Some(7));
    }

    #[test]
    fn taken_counts_superseded_commands_apart() {
        let t = Taken::new();
        t.take();
        t.take();
        t.supersede();
        t.take();
        assert_eq!(t.get(), (3, 1));
    }
}
