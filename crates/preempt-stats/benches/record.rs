//! Cost of recording: `Histogram::record`, a full `TaskStats` activation (start + completion)
//! and, as a baseline, the `hdrhistogram` crate's `record`.
//!
//! `cargo bench -p preempt-stats --bench record` (release profile). Prints ns per operation,
//! best of five runs of 10 M operations each; values come from a fixed pseudo-random sequence
//! spread over 1 µs .. 1 ms so that the counters touched vary as in a real latency run.

use std::hint::black_box;
use std::time::Instant;

use preempt_stats::histogram::{Digits2, Digits3, HIGHEST_TRACKABLE_NS, Histogram};
use preempt_stats::task_stats::{Completion, TaskStats};

const N: u64 = 10_000_000;

fn values() -> Vec<u64> {
    // xorshift64*: deterministic, cheap, no dependency.
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    (0..4096)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            1_000 + (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 44)
        })
        .collect()
}

fn best_of_5(mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64 / N as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let v = values();
    let mask = v.len() - 1;
    let d2: Box<Histogram<Digits2>> = Box::new(Histogram::new());
    let ns = best_of_5(|| {
        for i in 0..N as usize {
            d2.record(black_box(v[i & mask]));
        }
    });
    println!("Histogram<Digits2>::record           {ns:6.2} ns");
    let d3: Box<Histogram<Digits3>> = Box::new(Histogram::new());
    let ns = best_of_5(|| {
        for i in 0..N as usize {
            d3.record(black_box(v[i & mask]));
        }
    });
    println!("Histogram<Digits3>::record           {ns:6.2} ns");
    let mut hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(1, HIGHEST_TRACKABLE_NS, 3)
        .expect("valid bounds");
    let ns = best_of_5(|| {
        for i in 0..N as usize {
            hdr.record(black_box(v[i & mask])).expect("in range");
        }
    });
    println!("hdrhistogram 7.5 record (3 digits)   {ns:6.2} ns   (baseline)");
    let stats: Box<TaskStats> = Box::new(TaskStats::new("bench"));
    let ns = best_of_5(|| {
        for i in 0..N {
            let release = i * 1_000_000;
            let start = release + v[i as usize & mask];
            stats.record_start(black_box(release), black_box(start));
            stats.record_completion(black_box(Completion {
                release_ns: release,
                start_ns: start,
                end_ns: start + 20_000,
                cpu_ns: None,
                deadline_ns: Some(release + 500_000),
            }));
        }
    });
    println!("TaskStats start+completion           {ns:6.2} ns   (per activation)");
    black_box((&d2, &d3, &hdr, &stats));
}
