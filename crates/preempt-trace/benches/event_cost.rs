//! What one trace event costs the CPU that writes it, for each trace clock.
//!
//! `cargo bench -p preempt-trace --bench event_cost` (release profile, root). The overhead of
//! `--explain` (docs/PERFORMANCE.md) is the events written on the measured CPU between the
//! timer interrupt and the task running; this bench isolates the price of one of them, and
//! what the trace clock changes in it, from everything else on a wake-up.
//!
//! Method: a thread pinned to one CPU makes `gettid` calls in a loop (200 000 per run, best of
//! five runs) while a private tracefs instance, tracing only that CPU, records
//! `raw_syscalls/sys_enter` and then also `raw_syscalls/sys_exit`. The first event turns on the
//! kernel's syscall-tracing slow path as well, so the cost of *one event* is the difference
//! between two events and one; the clocks are alternated in every round and each figure is the
//! median over the rounds. The estimate per wake-up multiplies it by the events written on the
//! wake-up path on x86 (local timer entry, `sched_waking`, `sched_wakeup`, local timer exit,
//! `sched_switch`). The ring buffer (1 MiB) wraps many times during a run: the figures include
//! the writer's page turns, as in a real run.

use std::hint::black_box;
use std::time::Instant;

use preempt_io::sys::{cpu, sched};
use preempt_trace::tracefs::{self, Instance};

const CALLS: u32 = 200_000;
const ROUNDS: usize = 7;
/// Events written on the measured CPU between the timer interrupt and the task running (x86).
const EVENTS_ON_WAKE_PATH: f64 = 5.0;

fn ns_per_call() -> f64 {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..CALLS {
                black_box(sched::current_tid());
            }
            t.elapsed().as_nanos() as f64 / f64::from(CALLS)
        })
        .fold(f64::INFINITY, f64::min)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run() -> Result<(), String> {
    let cpus = cpu::online_cpus().map_err(|e| format!("online CPUs: {e}"))?;
    let cpu = *cpus.last().ok_or("no online CPU")?;
    sched::set_current_thread_affinity(&[cpu]).map_err(|e| format!("pinning to CPU {cpu}: {e}"))?;
    let root = tracefs::locate().map_err(|e| e.to_string())?;
    let instance = Instance::create(&root).map_err(|e| e.to_string())?;
    let set = |rel: &str, v: &str| instance.write(rel, v).map_err(|e| e.to_string());
    set("buffer_size_kb", "1024")?;
    // One 32-bit word per 32 CPUs, most significant first.
    let words = (cpu / 32) + 1;
    let mask: Vec<String> = (0..words)
        .rev()
        .map(|w| format!("{:08x}", if w == cpu / 32 { 1u32 << (cpu % 32) } else { 0 }))
        .collect();
    set("tracing_cpumask", &mask.join(","))?;
    let available = instance.read("trace_clock").map_err(|e| e.to_string())?;
    let clocks: Vec<&str> = ["mono", "local", "x86-tsc", "global"]
        .into_iter()
        .filter(|c| {
            available
                .split_whitespace()
                .any(|a| a.trim_matches(['[', ']']) == *c)
        })
        .collect();

    // [clock][events enabled] -> per-round ns per call.
    let mut t = vec![[Vec::new(), Vec::new(), Vec::new()]; clocks.len()];
    for _ in 0..ROUNDS {
        for (i, clock) in clocks.iter().enumerate() {
            set("trace_clock", clock)?;
            t[i][0].push(ns_per_call());
            set("events/raw_syscalls/sys_enter/enable", "1")?;
            t[i][1].push(ns_per_call());
            set("events/raw_syscalls/sys_exit/enable", "1")?;
            t[i][2].push(ns_per_call());
            set("events/raw_syscalls/sys_exit/enable", "0")?;
            set("events/raw_syscalls/sys_enter/enable", "0")?;
        }
    }
    let stats = instance
        .read(&format!("per_cpu/cpu{cpu}/stats"))
        .map_err(|e| e.to_string())?;
    instance.remove().map_err(|e| e.to_string())?;

    println!(
        "# gettid on CPU {cpu}, {CALLS} calls x best of 5, median of {ROUNDS} alternated rounds"
    );
    println!(
        "| trace clock | no event ns | 1 event ns | 2 events ns | one event ns | per wake-up (x{EVENTS_ON_WAKE_PATH}) ns |"
    );
    println!("|---|---|---|---|---|---|");
    for (i, clock) in clocks.iter().enumerate() {
        let [a, b, c] = &mut t[i];
        let (a, b, c) = (median(a), median(b), median(c));
        println!(
            "| {clock} | {a:.1} | {b:.1} | {c:.1} | {:.1} | {:.0} |",
            c - b,
            (c - b) * EVENTS_ON_WAKE_PATH
        );
    }
    // The bench writes far more than the buffer holds, so the kernel overwrites the oldest
    // page as it goes (one head-page move per page, as in a long run whose reader fell
    // behind): printed so that the figure says what it includes.
    if let Some(line) = stats.lines().find(|l| l.starts_with("overrun")) {
        println!("# ring buffer {line} (events overwritten: the buffer wraps during the bench)");
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("event_cost: {e}");
        std::process::exit(1);
    }
}
