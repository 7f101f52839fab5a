//! Wake-up latency of a thread waiting on an eventfd, three ways: blocked in `read(2)` (the
//! bare baseline of issue 4's fd-bound-task target), in `Poller::wait_until` without a deadline,
//! and in `Poller::wait_until` with an absolute deadline far away (the executor's usual case).
//! The bare thread's latency ends when its `read` returns; the poller's when `wait_until`
//! returns, which is when an executor would start the bound task (the task's own acknowledging
//! read comes after).
//!
//! `cargo bench -p preempt-stats --bench fd_wakeup`. Both threads run `SCHED_FIFO` 80 when
//! allowed (else `SCHED_OTHER`, said in the output); the modes alternate in rounds so that
//! host noise hits all of them alike. Latency = waiter's `CLOCK_MONOTONIC` after waking −
//! the writer's reading just before `write(2)`. Numbers are printed, never asserted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use preempt_io::fd::{EventSource, FdSource, Poller};
use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::sched::{self, Policy};
use preempt_stats::histogram::{Digits3, Histogram};

const ROUNDS: usize = 10;
const PER_ROUND: usize = 2_000;
const GAP_NS: u64 = 200_000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    BlockingRead,
    Poller,
    PollerDeadline,
}

fn fifo() -> bool {
    sched::set_current_thread_policy(&Policy::Fifo { priority: 80 }).is_ok()
}

fn main() {
    let modes = [Mode::BlockingRead, Mode::Poller, Mode::PollerDeadline];
    let hists: Vec<Histogram<Digits3>> = modes.iter().map(|_| Histogram::new()).collect();
    let rt = fifo();
    for _ in 0..ROUNDS {
        for (mode, hist) in modes.iter().zip(&hists) {
            run(*mode, hist);
        }
    }
    println!(
        "eventfd write -> waiter running, {} samples per mode, policy {}",
        ROUNDS * PER_ROUND,
        if rt {
            "SCHED_FIFO 80"
        } else {
            "SCHED_OTHER (no privilege for FIFO)"
        }
    );
    for (mode, h) in modes.iter().zip(&hists) {
        let p = h.percentiles();
        println!(
            "{:<16} min {:>6} ns  p50 {:>6} ns  p99 {:>7} ns  max {:>8} ns",
            format!("{mode:?}"),
            h.min().unwrap_or(0),
            p.p50_ns,
            p.p99_ns,
            h.max().unwrap_or(0)
        );
    }
}

fn run(mode: Mode, hist: &Histogram<Digits3>) {
    let stamp = Arc::new(AtomicU64::new(0));
    let mut source = EventSource::new().expect("eventfd");
    let writer_line = source.notifier().expect("dup");
    let blocking = EventFd::new(0, false).expect("eventfd");
    let blocking_writer = blocking.try_clone().expect("dup");
    let ready = Arc::new(AtomicU64::new(0));
    let (s2, r2) = (Arc::clone(&stamp), Arc::clone(&ready));
    let writer = std::thread::spawn(move || {
        fifo();
        let mut next = clock::monotonic_now_ns() + GAP_NS;
        for i in 0..PER_ROUND as u64 {
            // Wait until the waiter has consumed the previous event.
            while r2.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
            clock::sleep_until_ns(ClockId::Monotonic, next).expect("sleep");
            next += GAP_NS;
            s2.store(clock::monotonic_now_ns(), Ordering::Release);
            match mode {
                Mode::BlockingRead => blocking_writer.write(1).expect("write"),
                _ => writer_line.notify().expect("write"),
            }
        }
    });
    fifo();
    let mut poller = Poller::new().expect("poller");
    poller.register(&source, 1).expect("register");
    let mut events = [Default::default(); 1];
    for i in 0..PER_ROUND as u64 {
        // The "task start": after the read for the bare thread, after the poller returns for
        // the executor (whose task then reads the event itself).
        let woke = match mode {
            Mode::BlockingRead => {
                blocking.read().expect("read");
                clock::monotonic_now_ns()
            }
            Mode::Poller | Mode::PollerDeadline => {
                let deadline = (mode == Mode::PollerDeadline)
                    .then(|| clock::monotonic_now_ns() + 10_000_000_000);
                while poller.wait_until(&mut events, deadline).expect("wait") == 0 {}
                let woke = clock::monotonic_now_ns();
                source.read_event().expect("read");
                woke
            }
        };
        hist.record(woke.saturating_sub(stamp.load(Ordering::Acquire)));
        ready.store(i + 1, Ordering::Release);
    }
    writer.join().expect("writer");
}
