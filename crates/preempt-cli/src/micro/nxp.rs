//! The NXP set (seed `003_…`, "Performance Analysis using NXP's i.MX RT1050 … and the Zephyr
//! OS"): heap allocation and free, pthread mutex lock and unlock, pthread create and join with
//! preallocated stacks, and the context switch between two threads.
//!
//! The seed times each operation separately between two clock reads and prints the average;
//! here every operation is one sample, so the distribution (min/median/p99/max) is kept, and
//! the counts are the seed's: 1000 allocations, 1000 lock/unlock pairs, 2000 threads,
//! 500 000 switches (scaled by `--scale`).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};

use anyhow::{Context, Result};
use preempt_io::sys::sched;

use super::bench::{Bench, Ctx, Samples, with_perf};
use super::ffi::{self, PreallocatedStack, PthreadMutex, RawThread};

/// Stack size of each benchmark thread. The seed's `MAX_STACK_SIZE` is not given; 64 KiB is
/// four times glibc's `PTHREAD_STACK_MIN` (16 KiB on x86_64, 128 KiB-page kernels aside) and
/// plenty for an empty thread; 2000 of them reserve 128 MiB of address space, most never
/// touched.
pub(crate) const THREAD_STACK_BYTES: usize = 64 * 1024;

/// The benchmarks of this set.
pub fn benches() -> Vec<Bench> {
    vec![
        Bench {
            set: "nxp",
            id: "malloc",
            title: "malloc(4) + write",
            method: "1000 x: counter; p = malloc(sizeof(int)); *p = 0xdeadbeef; counter (then free below)",
            needs_rt: false,
            run: heap,
        },
        Bench {
            set: "nxp",
            id: "mutex",
            title: "pthread_mutex_lock / unlock",
            method: "1000 x: counter; pthread_mutex_lock; counter; counter; pthread_mutex_unlock; counter (default mutex, uncontended)",
            needs_rt: false,
            run: mutex,
        },
        Bench {
            set: "nxp",
            id: "mutex_pi",
            title: "PI mutex lock / unlock",
            method: "as mutex, with PTHREAD_PRIO_INHERIT (the real-time choice; not in the seed)",
            needs_rt: false,
            run: mutex_pi,
        },
        Bench {
            set: "nxp",
            id: "pthread",
            title: "pthread_create / join",
            method: "2000 x: posix_memalign'd 64 KiB stack + pthread_attr_setstack; counter; pthread_create(empty fn); counter; then 2000 x: counter; pthread_join; counter",
            needs_rt: false,
            run: threads,
        },
        Bench {
            set: "nxp",
            id: "context_switch",
            title: "context switch (sched_yield)",
            method: "two threads pinned to one CPU at equal priority yield to each other 500000 times; each sample: counter in A, sched_yield, switch, counter in B (a sample is kept only when the other thread really ran)",
            needs_rt: false,
            run: context_switch,
        },
    ]
}

fn heap(ctx: &Ctx<'_>) -> Result<Vec<(&'static str, Samples)>> {
    ctx.enter_thread(0)
        .context("cannot pin the benchmark thread")?;
    let n = ctx.count(1_000);
    let c = ctx.clock;
    let mut pointers = Vec::with_capacity(usize::try_from(n)?);
    let mut alloc = Samples::default();
    let mut a_ticks = Vec::with_capacity(pointers.capacity());
    with_perf(n, &mut alloc, || {
        for _ in 0..n {
            let t0 = c.read();
            let p = ffi::malloc(std::mem::size_of::<u32>());
            if let Some(p) = p {
                // SAFETY: `p` is a fresh allocation of 4 bytes, suitably aligned for u32
                // (malloc aligns to max_align_t).
                unsafe { p.cast::<u32>().as_ptr().write_volatile(0xdead_beef) };
            }
            let t1 = c.read();
            a_ticks.push(t1 - t0);
            pointers.push(p);
        }
    });
    alloc.ticks = a_ticks;
    let failures = pointers.iter().filter(|p| p.is_none()).count();
    if failures > 0 {
        alloc
            .notes
            .push(format!("{failures} malloc calls returned NULL"));
    }
    let mut free = Samples::default();
    let mut f_ticks = Vec::with_capacity(pointers.len());
    with_perf(n, &mut free, || {
        for p in pointers.iter().flatten() {
            let t0 = c.read();
            // SAFETY: every pointer came from ffi::malloc above and is freed exactly once.
            unsafe { ffi::free(*p) };
            let t1 = c.read();
            f_ticks.push(t1 - t0);
        }
    });
    free.ticks = f_ticks;
    Ok(vec![("malloc", alloc), ("free", free)])
}

fn mutex_common(
    ctx: &Ctx<'_>,
    pi: bool,
    lock_id: &'static str,
    unlock_id: &'static str,
) -> Result<Vec<(&'static str, Samples)>> {
    ctx.enter_thread(0)
        .context("cannot pin the benchmark thread")?;
    let m = PthreadMutex::new(pi).context("cannot create the mutex")?;
    let n = ctx.count(1_000);
    let c = ctx.clock;
    let mut lock = Samples {
        ticks: Vec::with_capacity(usize::try_from(n)?),
        ..Default::default()
    };
    let mut unlock = Samples {
        ticks: Vec::with_capacity(usize::try_from(n)?),
        ..Default::default()
    };
    let (mut lt, mut ut) = (
        std::mem::take(&mut lock.ticks),
        std::mem::take(&mut unlock.ticks),
    );
    // One perf window covers each lock+unlock pair (the seed interleaves them).
    with_perf(n, &mut lock, || {
        for _ in 0..n {
            let t0 = c.read();
            m.lock();
            let t1 = c.read();
            let t2 = c.read();
            m.unlock();
            let t3 = c.read();
            lt.push(t1 - t0);
            ut.push(t3 - t2);
        }
    });
    let unlock_mean = ut.iter().sum::<u64>() as f64 / ut.len().max(1) as f64;
    lock.ticks = lt;
    unlock.ticks = ut;
    if lock.perf.is_some() {
        lock.perf_extra_ticks = unlock_mean + ctx.overhead_ticks as f64;
        lock.notes
            .push("the perf figure is per lock+unlock pair".into());
    }
    Ok(vec![(lock_id, lock), (unlock_id, unlock)])
}

fn mutex(ctx: &Ctx<'_>) -> Result<Vec<(&'static str, Samples)>> {
    mutex_common(ctx, false, "mutex_lock", "mutex_unlock")
}

fn mutex_pi(ctx: &Ctx<'_>) -> Result<Vec<(&'static str, Samples)>> {
    mutex_common(ctx, true, "mutex_pi_lock", "mutex_pi_unlock")
}

fn threads(ctx: &Ctx<'_>) -> Result<Vec<(&'static str, Samples)>> {
    ctx.enter_thread(0)
        .context("cannot pin the benchmark thread")?;
    let n = usize::try_from(ctx.count(2_000))?;
    let c = ctx.clock;
    let stacks: Vec<PreallocatedStack> = (0..n)
        .map(|_| PreallocatedStack::new(THREAD_STACK_BYTES))
        .collect::<std::io::Result<_>>()
        .context("cannot preallocate the thread stacks")?;
    let mut created = Vec::with_capacity(n);
    let mut create = Samples {
        ticks: Vec::with_capacity(n),
        ..Default::default()
    };
    let mut ct = std::mem::take(&mut create.ticks);
    let mut spawn_error = None;
    with_perf(n as u64, &mut create, || {
        for s in &stacks {
            let t0 = c.read();
            let r = RawThread::spawn(s);
            let t1 = c.read();
            match r {
                Ok(t) => {
                    ct.push(t1 - t0);
                    created.push(t);
                }
                Err(e) => {
                    spawn_error = Some(e);
                    break;
                }
            }
        }
    });
    create.ticks = ct;
    let mut join = Samples {
        ticks: Vec::with_capacity(created.len()),
        ..Default::default()
    };
    let mut jt = std::mem::take(&mut join.ticks);
    let mut join_error = None;
    let joined = created.len() as u64;
    with_perf(joined, &mut join, || {
        for t in created.drain(..) {
            let t0 = c.read();
            let r = t.join();
            let t1 = c.read();
            match r {
                Ok(()) => jt.push(t1 - t0),
                Err(e) => join_error = Some(e),
            }
        }
    });
    join.ticks = jt;
    if join.perf.is_some() {
        join.notes.push(
            "pthread_join sleeps until the child has run: perf counts only this thread's on-CPU time, so it reads below the wall-clock samples"
                .into(),
        );
    }
    drop(stacks); // every thread is joined: the stacks are free
    if let Some(e) = spawn_error {
        anyhow::bail!("pthread_create failed after {joined} threads: {e}");
    }
    if let Some(e) = join_error {
        anyhow::bail!("pthread_join failed: {e}");
    }
    Ok(vec![("pthread_create", create), ("pthread_join", join)])
}

fn context_switch(ctx: &Ctx<'_>) -> Result<Vec<(&'static str, Samples)>> {
    let target = ctx.count(500_000);
    // The last stamp written before a yield, and which thread wrote it.
    let stamp = Arc::new(AtomicU64::new(0));
    let owner = Arc::new(AtomicU64::new(u64::MAX));
    let taken = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(std::sync::Barrier::new(2));
    let clock = ctx.clock.clone();
    let stop = ctx.stop;
    let mut notes = Vec::new();
    let results: Vec<Result<(Vec<u64>, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2u64)
            .map(|me| {
                let (stamp, owner, taken, done, ready, clock) = (
                    stamp.clone(),
                    owner.clone(),
                    taken.clone(),
                    done.clone(),
                    ready.clone(),
                    clock.clone(),
                );
                s.spawn(move || -> Result<(Vec<u64>, u64)> {
                    let entered = ctx.enter_thread(0);
                    ready.wait();
                    entered.context("cannot pin or prioritise a context-switch thread")?;
                    let mut mine = Vec::with_capacity(usize::try_from(target / 2 + 16)?);
                    let mut no_switch = 0u64;
                    while !done.load(Relaxed) && !stop.load(Relaxed) {
                        let before = clock.read();
                        stamp.store(before, SeqCst);
                        owner.store(me, SeqCst);
                        sched::yield_now();
                        let after = clock.read();
                        if owner.load(SeqCst) != me {
                            // The other thread ran between our yield and now: its last stamp
                            // was taken just before it yielded to us.
                            let t = after.saturating_sub(stamp.load(SeqCst));
                            mine.push(t);
                            if taken.fetch_add(1, Relaxed) + 1 >= target {
                                done.store(true, Relaxed);
                            }
                        } else {
                            no_switch += 1;
                            black_box(no_switch);
                        }
                    }
                    Ok((mine, no_switch))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a context-switch thread panicked")))
            })
            .collect()
    });
    let mut ticks = Vec::with_capacity(usize::try_from(target)?);
    let mut no_switch = 0;
    for r in results {
        let (t, n) = r?;
        ticks.extend(t);
        no_switch += n;
    }
    if no_switch > 0 {
        notes.push(format!(
            "{no_switch} yields returned without a switch (not counted)"
        ));
    }
    if ctx.priority.is_none() {
        notes.push(
            "SCHED_OTHER: sched_yield need not switch under EEVDF; run as root for SCHED_FIFO"
                .into(),
        );
    }
    Ok(vec![(
        "context_switch",
        Samples {
            ticks,
            perf_note: Some("cross-thread sample: perf counts per thread".into()),
            notes,
            ..Default::default()
        },
    )])
}
