//! The Zephyr set (seed `002_…`, "Measurements in Zephyr RTOS"): the cost of giving a
//! semaphore when a *higher*-priority thread waits on it (the call plus a context switch to the
//! waiter) versus when a *lower*-priority thread waits (the call alone: the waiter is made
//! runnable but does not preempt the giver).
//!
//! Both threads are pinned to one CPU with SCHED_FIFO priorities, as on the seed's single-core
//! board; without real-time privileges the priorities mean nothing, so the set is skipped with
//! the fix. The difference of the two medians is the switch itself (the seed's "context
//! switching overhead", 483 cycles on a Galileo Gen 2).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

use anyhow::{Context, Result};
use preempt_io::sys::clock::{self, ClockId};

use super::bench::{Bench, Ctx, Samples};
use super::ffi::Semaphore;

/// Gap the giver leaves between two gives in the no-preemption case, so the low-priority
/// waiter is blocked in `sem_wait` again before the next give (it needs a few microseconds;
/// 50 µs leaves a margin on a loaded VM).
pub(crate) const REARM_GAP_NS: u64 = 50_000;

/// The benchmarks of this set.
pub fn benches() -> Vec<Bench> {
    vec![
        Bench {
            set: "zephyr",
            id: "sem_give_switch",
            title: "sem give -> higher-priority waiter runs",
            method: "low-priority thread: counter; sem_post; the higher-priority waiter on the same CPU preempts it and reads the counter (call + context switch)",
            needs_rt: true,
            run: give_with_switch,
        },
        Bench {
            set: "zephyr",
            id: "sem_give_no_switch",
            title: "sem give, lower-priority waiter (no preemption)",
            method: "high-priority thread: counter; sem_post (wakes a lower-priority waiter blocked in sem_wait on the same CPU); counter (call only)",
            needs_rt: true,
            run: give_without_switch,
        },
    ]
}

/// Seed count: 500 samples per case were plotted; 10 000 give a usable p99.
const SAMPLES: u64 = 10_000;

fn give_with_switch(ctx: &Ctx<'_>) -> Result<Vec<(&'static str, Samples)>> {
    let n = ctx.count(SAMPLES);
    let sem = Semaphore::new().context("sem_init")?;
    let stamp = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let started = std::sync::Barrier::new(2);
    let clock = ctx.clock;
    let (high, low) = std::thread::scope(|s| {
        let high = s.spawn(|| -> Result<Vec<u64>> {
            let entered = ctx.enter_thread(0);
            started.wait();
            entered.context("cannot pin or prioritise the waiter")?;
            let mut out = Vec::with_capacity(usize::try_from(n)?);
            loop {
                sem.wait().context("sem_wait")?;
                let now = clock.read();
                if done.load(SeqCst) {
                    return Ok(out);
                }
                out.push(now.saturating_sub(stamp.load(SeqCst)));
            }
        });
        let low = s.spawn(|| -> Result<()> {
            let entered = ctx.enter_thread(10);
            started.wait();
            let result = entered
                .context("cannot pin or prioritise the giver")
                .and_then(|_| {
                    // Let the waiter block first (it runs at a higher priority on the same CPU, so
                    // by the time we run it is blocked, but its first wait may still be pending).
                    sleep_ns(REARM_GAP_NS)?;
                    for _ in 0..n {
                        if ctx.stop.load(SeqCst) {
                            break;
                        }
                        stamp.store(clock.read(), SeqCst);
                        sem.post().context("sem_post")?;
                    }
                    Ok(())
                });
            done.store(true, SeqCst);
            // Release the waiter whatever happened, so the scope can end.
            sem.post().context("sem_post")?;
            result
        });
        (high.join(), low.join())
    });
    low.map_err(|_| anyhow::anyhow!("the giver thread panicked"))??;
    let ticks = high.map_err(|_| anyhow::anyhow!("the waiter thread panicked"))??;
    Ok(vec![(
        "sem_give_switch",
        Samples {
            ticks,
            perf_note: Some("cross-thread sample: perf counts per thread".into()),
            ..Default::default()
        },
    )])
}

fn sleep_ns(ns: u64) -> Result<()> {
    clock::sleep_until_ns(ClockId::Monotonic, clock::monotonic_now_ns() + ns)
        .context("clock_nanosleep")
}

fn give_without_switch(ctx: &Ctx<'_>) -> Result<Vec<(&'static str, Samples)>> {
    let n = ctx.count(SAMPLES);
    let sem = Semaphore::new().context("sem_init")?;
    // Set by the waiter just before it blocks; cleared by the giver before each give.
    let armed = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let started = std::sync::Barrier::new(2);
    let clock = ctx.clock;
    let mut not_armed = 0u64;
    let (high, low) = std::thread::scope(|s| {
        let low = s.spawn(|| -> Result<()> {
            let entered = ctx.enter_thread(10);
            started.wait();
            entered.context("cannot pin or prioritise the waiter")?;
            loop {
                armed.store(true, SeqCst);
                sem.wait().context("sem_wait")?;
                if done.load(SeqCst) {
                    return Ok(());
                }
            }
        });
        let high = s.spawn(|| -> Result<Vec<u64>> {
            let entered = ctx.enter_thread(0);
            started.wait();
            let result = entered
                .context("cannot pin or prioritise the giver")
                .and_then(|_| {
                    let mut out = Vec::with_capacity(usize::try_from(n)?);
                    let mut consecutive = 0u32;
                    while (out.len() as u64) < n && !ctx.stop.load(SeqCst) {
                        // Leave the CPU so the waiter runs and blocks again.
                        sleep_ns(REARM_GAP_NS)?;
                        if !armed.swap(false, SeqCst) {
                            not_armed += 1;
                            consecutive += 1;
                            if consecutive > 20_000 {
                                anyhow::bail!(
                                    "the waiter never blocked in sem_wait (for 20000 rounds, over 1 s: is a higher-priority thread hogging the CPU?)"
                                );
                            }
                            continue;
                        }
                        consecutive = 0;
                        let t0 = clock.read();
                        sem.post().context("sem_post")?;
                        let t1 = clock.read();
                        out.push(t1 - t0);
                    }
                    Ok(out)
                });
            done.store(true, SeqCst);
            sem.post().context("sem_post")?;
            result
        });
        (high.join(), low.join())
    });
    low.map_err(|_| anyhow::anyhow!("the waiter thread panicked"))??;
    let ticks = high.map_err(|_| anyhow::anyhow!("the giver thread panicked"))??;
    let mut samples = Samples {
        ticks,
        ..Default::default()
    };
    if not_armed > 0 {
        samples.notes.push(format!(
            "{not_armed} rounds skipped: the waiter was not yet blocked after {} us",
            REARM_GAP_NS / 1_000
        ));
    }
    samples.perf_note = Some(
        "the giver sleeps between gives: a loop-wide perf count would include the sleeps".into(),
    );
    Ok(vec![("sem_give_no_switch", samples)])
}
