//! What the trace loses under load, and what its reader costs a real-time task.
//!
//! Runs a tracing session on every online CPU (the app's configuration: `PREEMPT_EXPLAIN=1`
//! traces them all) beside two SCHED_FIFO periodic threads like the gimbal demo's: a 10 kHz
//! "controller" (priority 80, CPU 0, whose wake-up latency is measured) and a 40 kHz "plant"
//! (priority 90, the last CPU). At the end it prints the wake-up latency and what the trace
//! lost (missed pages, lost stretches and their length, the ring buffers' `overrun` counters),
//! per second of run. Run it next to a load (`scripts/bench_trace_loss.sh` runs it idle and
//! under `stress-ng --cpu 2 --io 2 --vm 1`, with the reader at SCHED_FIFO 1 and SCHED_OTHER).
//!
//! ```text
//! trace_under_load [SECONDS] [--reader fifo1|other] [--buffer-kb N] [--no-trace]
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::sched::{self, Policy};
use preempt_stats::histogram::Histogram;
use preempt_trace::{Options, Session};

fn periodic(cpu: usize, priority: u8, hz: u64, stop: &AtomicBool, hist: Option<&Histogram>) {
    sched::set_current_thread_affinity(&[cpu]).expect("pinning the periodic thread");
    sched::set_current_thread_policy(&Policy::Fifo { priority })
        .expect("SCHED_FIFO (needs CAP_SYS_NICE or RLIMIT_RTPRIO)");
    let period = 1_000_000_000 / hz;
    let mut next = clock::monotonic_now_ns() + period;
    while !stop.load(Ordering::Relaxed) {
        clock::sleep_until_ns(ClockId::Monotonic, next).expect("clock_nanosleep");
        let late = clock::monotonic_now_ns().saturating_sub(next);
        if let Some(h) = hist {
            h.record(late);
        }
        next += period;
        // A job that overran its period starts the next one from now (no burst).
        let now = clock::monotonic_now_ns();
        if next < now {
            next = now + period;
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut seconds = 10u64;
    let mut opts = Options::default();
    let mut trace = true;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--reader" => {
                opts.reader_priority = match args.next().as_deref() {
                    Some("fifo1") => Some(1),
                    Some("other") => None,
                    other => panic!("--reader fifo1|other, not {other:?}"),
                }
            }
            "--buffer-kb" => {
                opts.buffer_kb = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--buffer-kb N")
            }
            "--no-trace" => trace = false,
            s => {
                seconds = s
                    .parse()
                    .expect("SECONDS, --reader, --buffer-kb or --no-trace")
            }
        }
    }
    let cpus = preempt_io::sys::cpu::online_cpus().expect("listing CPUs");
    let last = *cpus.last().expect("an online CPU");
    let session = trace.then(|| Session::start(opts.clone()).expect("starting the trace"));
    let stop = Arc::new(AtomicBool::new(false));
    let hist: Arc<Histogram> = Arc::from(Histogram::new_boxed());
    let threads =
        [(0usize, 80u8, 10_000u64, true), (last, 90, 40_000, false)].map(|(cpu, p, hz, m)| {
            let (stop, hist) = (Arc::clone(&stop), Arc::clone(&hist));
            std::thread::spawn(move || periodic(cpu, p, hz, &stop, m.then_some(&*hist)))
        });
    std::thread::park_timeout(Duration::from_secs(seconds));
    let loss = session.as_ref().map(Session::loss);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("periodic thread");
    }
    drop(session);
    let per_s = |v: u64| v as f64 / seconds as f64;
    println!(
        "reader {} buffer {} KiB, {seconds} s: 10 kHz wake-up latency p50 {:.1} µs p99 {:.1} µs \
         p99.9 {:.1} µs max {:.1} µs ({} wake-ups)",
        match (trace, opts.reader_priority) {
            (false, _) => "none (no trace)".to_string(),
            (true, Some(p)) => format!("SCHED_FIFO {p}"),
            (true, None) => "SCHED_OTHER".to_string(),
        },
        opts.buffer_kb,
        hist.value_at_percentile(50.0) as f64 / 1e3,
        hist.value_at_percentile(99.0) as f64 / 1e3,
        hist.value_at_percentile(99.9) as f64 / 1e3,
        hist.max().unwrap_or(0) as f64 / 1e3,
        hist.count()
    );
    if let Some(l) = loss {
        println!(
            "  events {:.0}/s; lost: {:.1} stretches/s, {:.2} ms/s lost (longest {:.1} ms), \
             overrun {:.0} events/s, missed pages {}, dropped {}",
            per_s(l.events),
            per_s(l.lost_stretches),
            per_s(l.lost_ns) / 1e6,
            l.lost_max_ns as f64 / 1e6,
            per_s(l.overrun),
            l.missed_pages,
            l.dropped
        );
    }
}
