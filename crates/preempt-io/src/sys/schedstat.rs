//! Throttled windows seen from a real-time thread itself, without tracefs or debugfs: the
//! one detector of the project (the demos' plant, `preempt latency`'s measuring threads and
//! the executors of an app all use [`ThrottleWatch`]).
//!
//! # Background
//! The kernel lets the real-time class use `sched_rt_runtime_us` of every
//! `sched_rt_period_us` on a CPU (950 000 of 1 000 000 µs by default). A real-time thread
//! that keeps a CPU busier than that is stopped there for the rest of the period: since
//! kernel 6.12 by the *fair server* (`dl_server`, 50 ms of every second by default) when a
//! SCHED_OTHER task waits on that CPU, by RT throttling proper when none does (measured on
//! kernel 6.18, docs/MEASURING.md "Which mechanism stops a busy real-time thread"). Every
//! real-time thread of that CPU that becomes runnable in such a window waits it out.
//!
//! What the kernel exposes about it without tracefs, on the 6.18 kernel this was built on
//! (a 2-vCPU VM, `CONFIG_SCHEDSTATS` off):
//!
//! | source | sees |
//! |---|---|
//! | `/proc/<pid>/task/<tid>/schedstat` (`CONFIG_SCHED_INFO`) | `run_delay`: the thread's total time runnable but not running, added when it next gets its CPU: a throttling window shows as one jump of ~50 ms |
//! | `/proc/<pid>/task/<tid>/sched` | no wait statistics here (`se.statistics.wait_max` needs `CONFIG_SCHEDSTATS` and `kernel.sched_schedstats`, absent): `nr_involuntary_switches` only, which a thread woken inside the window does not increment |
//! | `/sys/kernel/debug/sched/fair_server/cpuN/{runtime,period}` | the fair server's budget; `Operation not permitted` even for root here (kernel lockdown), so 50 ms of 1 s is assumed |
//! | `/proc/sys/kernel/sched_rt_{runtime,period}_us` | the RT budget: readable |
//! | `/proc/schedstat` | absent on this kernel (and it sums every task's wait per CPU) |
//!
//! # Solution
//! A thread that notices it was late by `gap` (a wake-up, a release, a turn of its loop)
//! asks [`ThrottleWatch::stall`]: was the gap at least 80 % of the throttling window
//! ([`window_ns`]), and did the thread's `run_delay` grow by at least as much since the
//! last baseline? The baseline is re-read at most every [`SAMPLE_EVERY_NS`]
//! ([`ThrottleWatch::sample`], one `pread` of a descriptor the thread opened once), so the
//! short waits that accumulate between two samples stay far below the window.
//!
//! # Why it works
//! A real-time thread that waited on its runqueue for ~40 ms in one stretch was kept off its
//! CPU by something that outranks it for that long: RT throttling or the fair server, or a
//! real-time thread of a higher priority that ran that long without sleeping (which the
//! latency ledger's `rt-threads` entry and `--explain` name). Host steal, interrupts and a
//! late timer are not runqueue waits and do not count. A thread that was merely late
//! because it was busy (a long job) did not wait either.
//!
//! ```
//! use preempt_io::sys::schedstat::{self, ThrottleWatch};
//!
//! assert_eq!(schedstat::parse_run_delay("1583694 815016 12\n"), Some(815016));
//! let mut watch = ThrottleWatch::open(); // the calling thread's schedstat
//! watch.sample(0);
//! // A short gap is never a throttled window, whatever the run_delay says.
//! assert!(!watch.stall(1_000));
//! assert_eq!(watch.windows(), 0);
//! ```

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The fair server's default budget gap: it runs SCHED_OTHER tasks for 50 ms of every 1 s
/// (`kernel/sched/fair.c`, `fair_server_init`: runtime 50 ms, period 1 s).
pub const FAIR_SERVER_NS: u64 = 50_000_000;

/// The baseline `run_delay` is re-read at most this often: the waits that accumulate in it
/// between two samples (a few µs per wake-up) stay far below a throttling window.
pub const SAMPLE_EVERY_NS: u64 = 10_000_000;

/// The kernel's throttling window, ns: the real-time class is stopped for
/// `sched_rt_period_us − sched_rt_runtime_us` of every period, and the fair server runs
/// starved SCHED_OTHER tasks for [`FAIR_SERVER_NS`] of every second (its own parameters in
/// debugfs are not readable under lockdown). The shorter of the two, since whichever comes
/// first stops the thread.
pub fn window_ns() -> u64 {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|v| v.trim().parse::<i64>().ok())
    };
    window_of(
        read("/proc/sys/kernel/sched_rt_runtime_us"),
        read("/proc/sys/kernel/sched_rt_period_us"),
    )
}

/// [`window_ns`] from `sched_rt_runtime_us` and `sched_rt_period_us` (None: unreadable).
pub fn window_of(runtime_us: Option<i64>, period_us: Option<i64>) -> u64 {
    match (runtime_us, period_us) {
        (Some(runtime), Some(period)) if runtime >= 0 && period > runtime => {
            u64::try_from(period - runtime)
                .map_or(FAIR_SERVER_NS, |us| (us * 1_000).min(FAIR_SERVER_NS))
        }
        _ => FAIR_SERVER_NS,
    }
}

/// `run_delay` (ns), the second field of a `/proc/.../schedstat` line.
pub fn parse_run_delay(text: &str) -> Option<u64> {
    text.split_whitespace().nth(1)?.parse().ok()
}

/// Counts the throttled windows one thread waited out (see the [module docs](self)). Open
/// it on the thread it watches; it reads that thread's schedstat with `pread` and never
/// allocates after [`ThrottleWatch::open`].
#[derive(Debug)]
pub struct ThrottleWatch {
    /// The thread's schedstat (None: the kernel has none; nothing is ever counted).
    file: Option<File>,
    /// A gap (and a wait) this long is a throttled window: 80 % of [`window_ns`] (the
    /// windows measured here were 50–54 ms of 50).
    min_ns: u64,
    /// `run_delay` at the last sample or stall.
    baseline_ns: u64,
    /// When the baseline was read (the caller's clock).
    sampled_at_ns: Option<u64>,
    windows: u64,
    longest_ns: u64,
}

impl ThrottleWatch {
    /// Watches the calling thread (`/proc/thread-self/schedstat`).
    pub fn open() -> ThrottleWatch {
        ThrottleWatch::with_window(File::open("/proc/thread-self/schedstat").ok(), window_ns())
    }

    fn with_window(file: Option<File>, window_ns: u64) -> ThrottleWatch {
        let mut w = ThrottleWatch {
            file,
            min_ns: window_ns * 4 / 5,
            baseline_ns: 0,
            sampled_at_ns: None,
            windows: 0,
            longest_ns: 0,
        };
        w.baseline_ns = w.run_delay();
        w
    }

    /// Whether the kernel exposes the thread's `run_delay` (else nothing is counted).
    pub fn available(&self) -> bool {
        self.file.is_some()
    }

    /// The shortest gap that can be a throttled window, ns (callers test their gap against
    /// it before calling [`ThrottleWatch::stall`]).
    #[inline]
    pub fn min_ns(&self) -> u64 {
        self.min_ns
    }

    /// Throttled windows counted so far.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// The longest of them (the gap the caller saw), ns.
    pub fn longest_ns(&self) -> u64 {
        self.longest_ns
    }

    /// The thread's `run_delay` now, ns (0 without schedstat).
    fn run_delay(&self) -> u64 {
        let Some(f) = &self.file else { return 0 };
        let mut buf = [0_u8; 96];
        let n = f.read_at(&mut buf, 0).unwrap_or(0);
        std::str::from_utf8(&buf[..n])
            .ok()
            .and_then(parse_run_delay)
            .unwrap_or(0)
    }

    /// Re-reads the baseline if the last one is [`SAMPLE_EVERY_NS`] old at `now_ns` (any
    /// monotonic clock of the caller's); one comparison otherwise. Call it where the thread
    /// is not late, e.g. once per turn of its loop.
    #[inline]
    pub fn sample(&mut self, now_ns: u64) {
        if self
            .sampled_at_ns
            .is_none_or(|t| now_ns.saturating_sub(t) >= SAMPLE_EVERY_NS)
        {
            self.resample(now_ns);
        }
    }

    #[cold]
    fn resample(&mut self, now_ns: u64) {
        self.sampled_at_ns = Some(now_ns);
        self.baseline_ns = self.run_delay();
    }

    /// The thread was late by `gap_ns`: counts a throttled window if the gap and the
    /// thread's wait on its runqueue since the baseline are both at least
    /// [`ThrottleWatch::min_ns`]; the baseline moves to now. Returns whether it counted one.
    pub fn stall(&mut self, gap_ns: u64) -> bool {
        if gap_ns < self.min_ns {
            return false;
        }
        let waited = self.run_delay();
        let throttled =
            self.file.is_some() && waited.saturating_sub(self.baseline_ns) >= self.min_ns;
        self.baseline_ns = waited;
        if throttled {
            self.windows += 1;
            self.longest_ns = self.longest_ns.max(gap_ns);
        }
        throttled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_the_shorter_of_the_rt_budget_gap_and_the_fair_server() {
        assert_eq!(window_of(Some(950_000), Some(1_000_000)), 50_000_000);
        assert_eq!(window_of(Some(980_000), Some(1_000_000)), 20_000_000);
        assert_eq!(window_of(Some(500_000), Some(1_000_000)), FAIR_SERVER_NS);
        // RT throttling off: the fair server still stops the class.
        assert_eq!(window_of(Some(-1), Some(1_000_000)), FAIR_SERVER_NS);
        assert_eq!(window_of(None, None), FAIR_SERVER_NS);
    }

    #[test]
    fn run_delay_is_the_second_field() {
        assert_eq!(parse_run_delay("5 7 9"), Some(7));
        assert_eq!(parse_run_delay("5"), None);
        assert_eq!(parse_run_delay(""), None);
    }

    #[test]
    fn without_schedstat_nothing_is_counted() {
        let mut w = ThrottleWatch::with_window(None, 50_000_000);
        assert!(!w.available());
        assert!(!w.stall(u64::MAX));
        assert_eq!(w.windows(), 0);
    }
}
