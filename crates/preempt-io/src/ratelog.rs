//! Rate-limited diagnostics: a line per event for the first few events, then at most one
//! count per interval, and a summary when the limiter is finished (or dropped).
//!
//! # Why
//! Some diagnostics are driven by input from outside: a refused ROS 2 setpoint, a dropped
//! Foxglove message, an undecodable sample. A peer that floods a topic would otherwise make
//! the process write one stderr line per message, an unbounded journal write driven by
//! anyone on the network (issue 40: 216 801 waypoints in 14 s wrote 151 580 lines).
//!
//! # How
//! The first [`BURST`] events are written in full: they say what is wrong and are all a
//! user with one bad publisher sees. After them, events are counted and one line per
//! [`INTERVAL`] says how many were not shown; [`RateLimitedLog::finish`] writes the total.
//! A flood of any length and rate writes at most `BURST + 1 + duration / INTERVAL + 1`
//! lines. The message of a suppressed event is never formatted (its closure is not called),
//! so a flood costs a counter increment per message, not an allocation.
//!
//! The same shape as the kernel's `printk_ratelimit` (a burst of 10 per 5 s) and journald's
//! `RateLimitBurst`/`RateLimitIntervalSec`, with a count instead of silence: the number of
//! suppressed lines is itself the diagnostic of a flood.
//!
//! The lines go to an injectable sink (stderr by default), so a test can count them.
//!
//! ```
//! use std::time::Duration;
//! use preempt_io::ratelog::RateLimitedLog;
//! let (log, lines) = RateLimitedLog::collecting("demo: refused setpoints", 2, Duration::from_secs(10));
//! for i in 0..1000 {
//!     log.log(|| format!("demo: setpoint {i} refused"));
//! }
//! log.finish();
//! let lines = lines.lock().unwrap();
//! assert_eq!(lines[0], "demo: setpoint 0 refused");
//! assert!(lines.len() <= 5, "{lines:?}");
//! assert!(lines.last().unwrap().contains("1000 in all"), "{lines:?}");
//! ```

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Events written in full before the limiter starts counting: enough to show what is wrong
/// (and whether it varies), few enough that a flood's first second stays readable.
pub const BURST: u64 = 5;
/// At most one count line per this while events keep coming (journald's default
/// `RateLimitIntervalSec` is 30 s; 10 s keeps a flood visible while it happens).
pub const INTERVAL: Duration = Duration::from_secs(10);

/// Where the lines go: one call per line, without its newline.
pub type Sink = Box<dyn FnMut(&str) + Send>;

struct State {
    sink: Sink,
    /// Events so far.
    seen: u64,
    /// Events not written since the last count line.
    pending: u64,
    /// When the last count line (or the last event written in full) was written.
    since: Option<Instant>,
    finished: bool,
}

/// One kind of repeated diagnostic, written at a bounded rate. Thread-safe (a mutex taken by
/// non-real-time threads only: never log from a real-time task).
pub struct RateLimitedLog {
    what: String,
    burst: u64,
    interval: Duration,
    state: Mutex<State>,
}

impl fmt::Debug for RateLimitedLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitedLog")
            .field("what", &self.what)
            .field("burst", &self.burst)
            .field("interval", &self.interval)
            .field("seen", &self.seen())
            .finish_non_exhaustive()
    }
}

impl RateLimitedLog {
    /// A limiter writing to stderr, [`BURST`] lines then a count per [`INTERVAL`]. `what`
    /// names the events in the count lines, e.g. `"gimbal: ROS 2 setpoints refused"`.
    pub fn stderr(what: impl Into<String>) -> RateLimitedLog {
        RateLimitedLog::with_sink(
            what,
            BURST,
            INTERVAL,
            Box::new(|line: &str| eprintln!("{line}")),
        )
    }

    /// A limiter writing `burst` lines in full, then a count per `interval`, to `sink`.
    pub fn with_sink(
        what: impl Into<String>,
        burst: u64,
        interval: Duration,
        sink: Sink,
    ) -> RateLimitedLog {
        RateLimitedLog {
            what: what.into(),
            burst,
            interval,
            state: Mutex::new(State {
                sink,
                seen: 0,
                pending: 0,
                since: None,
                finished: false,
            }),
        }
    }

    /// A limiter that collects its lines in memory (for tests that count what a flood
    /// writes): the limiter and its lines.
    pub fn collecting(
        what: impl Into<String>,
        burst: u64,
        interval: Duration,
    ) -> (RateLimitedLog, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        let log = RateLimitedLog::with_sink(
            what,
            burst,
            interval,
            Box::new(move |l: &str| {
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(l.to_owned());
            }),
        );
        (log, lines)
    }

    /// One event now; `line` is called only if the event is written in full.
    pub fn log(&self, line: impl FnOnce() -> String) {
        self.log_at(Instant::now(), line);
    }

    /// One event at `now` (for tests: a clock of their own).
    pub fn log_at(&self, now: Instant, line: impl FnOnce() -> String) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.seen += 1;
        if st.seen <= self.burst {
            let mut text = line();
            if st.seen == self.burst {
                text.push_str(&format!(
                    " (further ones are counted, one line per {} s)",
                    self.interval.as_secs_f64()
                ));
            }
            (st.sink)(&text);
            st.since = Some(now);
            return;
        }
        st.pending += 1;
        let due = st
            .since
            .is_none_or(|s| now.saturating_duration_since(s) >= self.interval);
        if due {
            let text = format!(
                "{}: {} more not shown in the last {} s ({} in all)",
                self.what,
                st.pending,
                self.interval.as_secs_f64(),
                st.seen
            );
            (st.sink)(&text);
            st.pending = 0;
            st.since = Some(now);
        }
    }

    /// Events so far.
    pub fn seen(&self) -> u64 {
        self.state.lock().map_or(0, |s| s.seen)
    }

    /// Writes the summary, if any event was not written in full: how many there were in
    /// all. Once; dropping the limiter calls it too.
    pub fn finish(&self) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.finished {
            return;
        }
        st.finished = true;
        if st.seen > self.burst {
            let text = format!(
                "{}: {} in all, {} of them not shown ({} since the last count)",
                self.what,
                st.seen,
                st.seen - self.burst,
                st.pending
            );
            (st.sink)(&text);
        }
    }
}

impl Drop for RateLimitedLog {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(burst: u64, interval: Duration) -> (RateLimitedLog, Arc<Mutex<Vec<String>>>) {
        RateLimitedLog::collecting("test: refusals", burst, interval)
    }

    /// Issue 40: a flood of 100 000 events in one instant writes the burst and the summary.
    #[test]
    fn a_flood_in_one_instant_writes_the_burst_and_one_summary() {
        let (log, lines) = captured(BURST, INTERVAL);
        let t = Instant::now();
        let mut formatted = 0;
        for i in 0..100_000 {
            log.log_at(t, || {
                formatted += 1;
                format!("refused {i}")
            });
        }
        log.finish();
        let lines = lines.lock().unwrap();
        assert_eq!(formatted, BURST, "suppressed events are not formatted");
        assert_eq!(lines.len(), BURST as usize + 1, "{lines:?}");
        assert_eq!(lines[0], "refused 0");
        assert!(lines[4].starts_with("refused 4 (further ones"), "{lines:?}");
        assert_eq!(
            lines[5],
            "test: refusals: 100000 in all, 99995 of them not shown (99995 since the last count)"
        );
    }

    /// A flood spread over 100 s of its own clock: one count line per interval.
    #[test]
    fn a_long_flood_writes_one_count_per_interval() {
        let (log, lines) = captured(5, Duration::from_secs(10));
        let t0 = Instant::now();
        for i in 0..100_000_u64 {
            // 1 ms apart: 100 s in all.
            log.log_at(t0 + Duration::from_millis(i), || format!("refused {i}"));
        }
        log.finish();
        let lines = lines.lock().unwrap();
        let counts = lines
            .iter()
            .filter(|l| l.contains("more not shown"))
            .count();
        assert!(
            (9..=10).contains(&counts),
            "{counts} count lines: {lines:?}"
        );
        assert!(lines.len() <= 5 + 10 + 1, "{} lines", lines.len());
        assert!(lines[5].starts_with("test: refusals: "), "{lines:?}");
        assert!(lines.last().unwrap().contains("100000 in all"));
    }

    #[test]
    fn a_few_events_are_all_written_and_no_summary_follows() {
        let (log, lines) = captured(5, INTERVAL);
        for i in 0..3 {
            log.log(|| format!("refused {i}"));
        }
        drop(log);
        assert_eq!(
            *lines.lock().unwrap(),
            ["refused 0", "refused 1", "refused 2"]
        );
    }

    #[test]
    fn finishing_twice_writes_one_summary() {
        let (log, lines) = captured(1, INTERVAL);
        let t = Instant::now();
        log.log_at(t, || "a".into());
        log.log_at(t, || "b".into());
        log.finish();
        drop(log);
        assert_eq!(lines.lock().unwrap().len(), 2);
    }
}
