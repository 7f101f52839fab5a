//! Single-threaded drivers of preempt's hot paths for instruction counting under callgrind
//! (`scripts/icount.sh`, the CI gate). Each path runs `--n` times in a loop; the script runs
//! every path twice, with `n` and `2n`, and divides the difference of the instruction
//! counts by `n`, so start-up and exit cost cancel out and what remains is the path's
//! instructions per operation, the same on every run of the same binary.
//!
//! ```sh
//! cargo bench -p preempt --bench icount -- --path histogram-record --n 100000
//! ```
//!
//! The paths that need a running app (spawn and dispatch, the cross-priority switch, the
//! resource lock inside a task, the periodic release) are scenarios of the `switch` and
//! `tasks` benches, which the script drives the same way. Without `--path` this prints the
//! list of paths (so `cargo bench` runs it harmlessly).

use std::hint::black_box;

use preempt_stats::histogram::Histogram;
use preempt_sync::pcp::{PcpGroup, PcpMutex};

#[path = "support/mod.rs"]
mod support;

/// Deterministic values spread over 1 µs .. 1 ms (a multiplicative hash of the index), as in
/// a latency run, so that the histogram's buckets touched vary.
fn values() -> Vec<u64> {
    (0..4096u64)
        .map(|i| 1_000 + i.wrapping_mul(2_654_435_761) % 999_000)
        .collect()
}

static GROUP: PcpGroup = PcpGroup::new();
static LOW: PcpMutex<u64> = PcpMutex::new(0, 2, &GROUP);
static HIGH: PcpMutex<u64> = PcpMutex::new(0, 3, &GROUP);

const PATHS: &[(&str, &str)] = &[
    (
        "histogram-record",
        "Histogram::record of a latency (preempt-stats)",
    ),
    (
        "pcp-lock-two-levels",
        "uncontended PcpMutex lock+unlock at two ceilings (one of each per op)",
    ),
    (
        "bridge-send",
        "bridge Sender::send into a ring with room (receiver awake)",
    ),
];

fn run(path: &str, n: u64) -> Result<u64, String> {
    let sink = match path {
        "histogram-record" => {
            let v = values();
            let mask = v.len() - 1;
            let h: Box<Histogram> = Box::new(Histogram::new());
            for i in 0..n as usize {
                h.record(black_box(v[i & mask]));
            }
            h.snapshot().count
        }
        "pcp-lock-two-levels" => {
            for _ in 0..n {
                LOW.lock(1, |v| *v = black_box(*v + 1));
                HIGH.lock(2, |v| *v = black_box(*v + 1));
            }
            LOW.lock(1, |v| *v) + HIGH.lock(2, |v| *v)
        }
        "bridge-send" => {
            let capacity = usize::try_from(n).map_err(|e| e.to_string())?;
            let (mut tx, rx) = preempt::bridge::channel::<u64>(capacity);
            for i in 0..n {
                if tx.send(black_box(i)).is_err() {
                    return Err("the bridge refused a value into a ring with room".into());
                }
            }
            rx.len() as u64
        }
        other => {
            return Err(format!(
                "unknown --path {other:?} (see the list without --path)"
            ));
        }
    };
    Ok(sink)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| support::flag_value(&args, flag);
    let Some(path) = value("--path") else {
        println!("icount paths (run with --path NAME --n N; scripts/icount.sh):");
        for (name, what) in PATHS {
            println!("  {name:22} {what}");
        }
        return;
    };
    let n: u64 = match value("--n").map(|v| v.parse()) {
        Some(Ok(n)) if n > 0 => n,
        _ => {
            eprintln!("icount: --n must be a positive integer");
            std::process::exit(2);
        }
    };
    match run(&path, n) {
        Ok(sink) => println!("path={path} n={n} check={}", black_box(sink)),
        Err(e) => {
            eprintln!("icount: {e}");
            std::process::exit(1);
        }
    }
}
