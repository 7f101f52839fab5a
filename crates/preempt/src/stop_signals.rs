//! Ctrl-C and SIGTERM stop an app in order and keep its results.
//!
//! # Background
//! The default action of SIGINT (Ctrl-C) and SIGTERM (`kill`, systemd, a container runtime)
//! ends the process at once: no executor finishes its job, no summary is printed, no
//! `PREEMPT_STATS_JSON` is written, and every statistic of the run is lost, which is exactly
//! when a long measurement run is usually stopped. A signal handler cannot do the work
//! (stopping threads, formatting, writing a file are not async-signal-safe), and a handler
//! would interrupt whichever thread the kernel picks, possibly a real-time task.
//!
//! # Solution
//! `run()` blocks SIGINT and SIGTERM in its own thread before `init` runs ([`install`]), so
//! every thread of the app (executors, `idle`, threads `init` starts) inherits the mask and
//! no task is ever interrupted by them. One ordinary thread, `preempt-signals`, takes them
//! synchronously with `sigwaitinfo`:
//!
//! ```text
//! 1st SIGINT/SIGTERM  -> `on_first(signal)`: the runtime stops the executors (each finishes
//!                        its job), joins them, prints the summary, writes the JSON, and the
//!                        process exits with 128 + signal (130 for SIGINT, 143 for SIGTERM)
//! 2nd SIGINT/SIGTERM  -> exits at once with 128 + signal (a job that does not end, or an
//!                        impatient user); what was not written yet is lost, and it says so;
//!                        unless it repeats the first (the same signal from the same process
//!                        within 1 s, `signal::Delivery::repeats`): GNU `timeout` signals
//!                        the app and then its process group, and means one stop
//! run() returns       -> [`StopSignals::remove`]: the thread is told to end (a SIGTERM
//!                        directed at it alone, after the `done` flag) and the caller's
//!                        signal mask is restored
//! ```
//!
//! # Why it works
//! A blocked signal sent to the process stays pending until a thread that has it blocked
//! takes it with `sigwaitinfo` (signal(7), "Synchronously accepting a signal"); since every
//! thread of the app blocks both, only `preempt-signals` ever receives them.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};

use preempt_io::sys::{sched, signal};

/// The signals that stop an app.
const STOP: [i32; 2] = [signal::SIGINT, signal::SIGTERM];

/// The conventional exit code of a process ended by `signal` (128 + its number).
pub(crate) fn exit_code(signal: i32) -> i32 {
    128 + signal
}

/// The name of a stop signal, for messages and the statistics.
pub(crate) fn name(signal: i32) -> &'static str {
    match signal {
        signal::SIGINT => "SIGINT",
        signal::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// The installed stop-signal thread; [`StopSignals::remove`] ends it.
pub(crate) struct StopSignals {
    old_mask: signal::SignalSet,
    tid: i32,
    done: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

/// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it creates from
/// now on) and starts `preempt-signals`, which calls `on_first(signal)` on the first of them
/// and exits the process with 128 + signal on the second.
pub(crate) fn install(
    app_name: &'static str,
    on_first: impl Fn(i32) + Send + 'static,
) -> io::Result<StopSignals> {
    let set = signal::SignalSet::of(&STOP)?;
    let old_mask = signal::block(&set)?;
    let done = Arc::new(AtomicBool::new(false));
    let thread_done = Arc::clone(&done);
    let (tid_tx, tid_rx) = mpsc::channel();
    let spawned = thread::Builder::new()
        .name("preempt-signals".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            // The receiver waits for this send; it cannot be gone.
            let _ = tid_tx.send(sched::current_tid());
            wait_loop(app_name, &set, &thread_done, on_first);
        });
    let thread = match spawned {
        Ok(thread) => thread,
        Err(err) => {
            signal::set_mask(&old_mask)?;
            return Err(io::Error::new(
                err.kind(),
                format!("cannot start the stop-signal thread: {err}"),
            ));
        }
    };
    let tid = tid_rx
        .recv()
        .map_err(|_| io::Error::other("the stop-signal thread ended before it started"))?;
    Ok(StopSignals {
        old_mask,
        tid,
        done,
        thread,
    })
}

fn wait_loop(app_name: &str, set: &signal::SignalSet, done: &AtomicBool, on_first: impl Fn(i32)) {
    let mut first: Option<signal::Delivery> = None;
    let mut repeats = 0u32;
    loop {
        let delivery = match signal::wait_delivery(set) {
            Ok(delivery) => delivery,
            Err(err) => {
                eprintln!(
                    "preempt: app `{app_name}`: waiting for SIGINT/SIGTERM failed ({err}); \
                     they now end the app without its statistics"
                );
                return;
            }
        };
        if done.load(Ordering::Acquire) {
            return;
        }
        let sig = delivery.signal;
        match first {
            None => {
                first = Some(delivery);
                eprintln!(
                    "preempt: {}: stopping app `{app_name}` (its jobs finish, statistics are \
                     kept); send it again to exit at once",
                    name(sig)
                );
                on_first(sig);
            }
            Some(first) if delivery.repeats(&first) => {
                // Said once: a sender may repeat more than once.
                if repeats == 0 {
                    eprintln!(
                        "preempt: {} again from the same process (pid {}) within 1 s: the \
                         same stop (GNU timeout signals the app and its process group)",
                        name(sig),
                        delivery.pid
                    );
                }
                repeats += 1;
            }
            Some(first) => {
                eprintln!(
                    "preempt: second {}: app `{app_name}` exits at once; statistics not yet \
                     written are lost ({})",
                    name(sig),
                    describe_second(&first, &delivery)
                );
                std::process::exit(exit_code(sig));
            }
        }
    }
}

/// How a second stop signal differs from the first, for the message that it ends the app.
fn describe_second(first: &signal::Delivery, second: &signal::Delivery) -> String {
    let from = |d: &signal::Delivery| match d.pid {
        0 => "the kernel".to_string(),
        pid => format!("pid {pid}"),
    };
    format!(
        "first {} from {}, this one from {} {} ms later",
        name(first.signal),
        from(first),
        from(second),
        second.at_ns.saturating_sub(first.at_ns) / 1_000_000
    )
}

impl StopSignals {
    /// Ends the thread and restores the caller's signal mask (a stop signal that arrived
    /// meanwhile is then delivered with its default action).
    pub(crate) fn remove(self) -> io::Result<()> {
        self.done.store(true, Ordering::Release);
        signal::signal_thread(self.tid, signal::SIGTERM)?;
        if self.thread.join().is_err() {
            return Err(io::Error::other("the stop-signal thread panicked"));
        }
        signal::set_mask(&self.old_mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_thread_directed_stop_signal_reaches_on_first_and_remove_restores_the_mask() {
        // In a thread of its own: the mask change must not leak into the test harness.
        thread::spawn(|| {
            let (tx, rx) = mpsc::channel();
            let signals = install("test", move |sig| tx.send(sig).unwrap()).unwrap();
            signal::signal_thread(signals.tid, signal::SIGINT).unwrap();
            let seen = rx.recv_timeout(std::time::Duration::from_secs(10));
            signals.remove().unwrap();
            assert_eq!(seen, Ok(signal::SIGINT));
            let mask = signal::block(&signal::SignalSet::of(&[]).unwrap()).unwrap();
            assert!(!mask.contains(signal::SIGINT) && !mask.contains(signal::SIGTERM));
            assert_eq!(
                (exit_code(signal::SIGINT), exit_code(signal::SIGTERM)),
                (130, 143)
            );
        })
        .join()
        .unwrap();
    }
}
