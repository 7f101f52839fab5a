//! Loom model of the PCP mutex over the futex model (PI hand-over included): mutual
//! exclusion, the ceiling rule, no unnecessary blocking, and no deadlock with two threads
//! taking two mutexes in opposite orders (loom reports a deadlock if all threads sleep).
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p preempt-sync --release --test loom_pcp`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::thread;
use preempt_sync::event::{Event, Woke};
use preempt_sync::pcp::{PcpGroup, PcpMutex};

/// The futex model's hand-over order, the slow path's round limit and the trace are
/// process-wide, and the test harness runs tests on parallel threads. A test switching the
/// hand-over order while another test's model explores makes that model
/// non-deterministic (loom panics: "Reached unexpected exploration state"), so every model
/// holds this lock for its whole exploration.
static ONE_MODEL_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_model_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    // A failed model poisons the lock; the other tests still run theirs.
    ONE_MODEL_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Explores `f` with the futex model's defaults: hand-over to the oldest waiter, no round
/// limit.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let _one = one_model_at_a_time();
    explore(f);
}

/// Prints the failing execution's PCP trace (once per process, whichever test fails).
fn dump_trace_on_panic() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Ok(trace) = preempt_sync::pcp::TRACE.try_lock() {
                for line in trace.iter() {
                    eprintln!("trace: {line}");
                }
            }
            default_hook(info);
        }));
    });
}

/// Runs loom on `f`; the caller holds [`one_model_at_a_time`].
fn explore(f: impl Fn() + Sync + Send + 'static) {
    dump_trace_on_panic();
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    b.check(move || {
        preempt_sync::pcp::TRACE.lock().unwrap().clear();
        f();
    });
}

fn group() -> &'static PcpGroup {
    Box::leak(Box::new(PcpGroup::new()))
}

#[test]
fn mutual_exclusion_same_mutex() {
    model(|| {
        let m = Arc::new(PcpMutex::new(0u32, 2, group()));
        let t = {
            let m = m.clone();
            thread::spawn(move || m.lock(1, |v| *v += 1))
        };
        // Loom's UnsafeCell reports any concurrent access to the value.
        m.lock(2, |v| *v += 1);
        t.join().unwrap();
        assert_eq!(m.lock(2, |v| *v), 2);
    });
}

#[test]
fn opposite_order_no_deadlock() {
    model(|| {
        let g = group();
        // A is also used by a priority-3 task (not modelled), so ceilings differ.
        let a = Arc::new(PcpMutex::new(0u32, 3, g));
        let b = Arc::new(PcpMutex::new(0u32, 2, g));
        let t = {
            let (a, b) = (a.clone(), b.clone());
            // Priority 1: A then B.
            thread::spawn(move || a.lock(1, |a| b.lock(1, |b| *a + *b + 1)))
        };
        // Priority 2: B then A.
        b.lock(2, |b| {
            a.lock(2, |a| {
                *a += 1;
                *b += 1;
            })
        });
        t.join().unwrap();
    });
}

#[test]
fn ceiling_rule_excludes_levels() {
    model(|| {
        let g = group();
        let x = Arc::new(PcpMutex::new((), 3, g));
        let y = Arc::new(PcpMutex::new((), 2, g));
        let in_x = Arc::new(AtomicBool::new(false));
        let in_y = Arc::new(AtomicBool::new(false));
        let t = {
            let (x, in_x, in_y) = (x.clone(), in_x.clone(), in_y.clone());
            // Priority 1 holds X (ceiling 3).
            thread::spawn(move || {
                x.lock(1, |_| {
                    in_x.store(true, SeqCst);
                    assert!(
                        !in_y.load(SeqCst),
                        "priority 1 entered X while Y (ceiling 2) was held"
                    );
                    in_x.store(false, SeqCst);
                })
            })
        };
        // Priority 2 locks Y (ceiling 2): not allowed while X (ceiling 3 >= 2) is held.
        y.lock(2, |_| {
            in_y.store(true, SeqCst);
            assert!(
                !in_x.load(SeqCst),
                "priority 2 entered Y while X (ceiling 3) was held"
            );
            in_y.store(false, SeqCst);
        });
        t.join().unwrap();
    });
}

#[test]
fn higher_priority_not_blocked_by_lower_ceiling() {
    model(|| {
        let g = group();
        let low = Arc::new(PcpMutex::new((), 2, g));
        let high = Arc::new(PcpMutex::new((), 3, g));
        let done = Arc::new(Event::new());
        let t = {
            let (high, done) = (high.clone(), done.clone());
            // Priority 3 > ceiling 2: PCP lets it lock while `low` is held.
            thread::spawn(move || {
                high.lock(3, |_| ());
                done.notify();
            })
        };
        // Hold `low` until the priority-3 thread finished: if it were blocked by our
        // level, both would sleep and loom would report the deadlock.
        low.lock(1, |_| while done.wait_until(None) != Woke::Notified {});
        t.join().unwrap();
    });
}

#[test]
fn three_threads_two_levels() {
    model(|| {
        let g = group();
        let a = Arc::new(PcpMutex::new(0u32, 2, g));
        let b = Arc::new(PcpMutex::new(0u32, 2, g));
        let ts: Vec<_> = (1..=2u8)
            .map(|p| {
                let (a, b) = (a.clone(), b.clone());
                thread::spawn(move || {
                    if p == 1 {
                        a.lock(p, |a| {
                            b.lock(p, |b| {
                                *a += 1;
                                *b += 1
                            })
                        })
                    } else {
                        b.lock(p, |b| {
                            a.lock(p, |a| {
                                *a += 1;
                                *b += 1
                            })
                        })
                    }
                })
            })
            .collect();
        a.lock(2, |a| *a += 1);
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(a.lock(2, |a| *a), 3);
        assert_eq!(b.lock(2, |b| *b), 2);
    });
}

/// Runs `f` as a model twice: the futex model hands a PI word over to the oldest waiter,
/// then to the newest (the kernel picks by priority; loom threads have none). Every
/// slow-path lock may take at most `2 * threads` rounds: more is a livelock.
fn model_both_hand_over_orders(threads: usize, f: impl Fn() + Sync + Send + Clone + 'static) {
    use std::sync::atomic::Ordering::Relaxed;

    /// Puts the model's defaults back, also when a model fails.
    struct Defaults;
    impl Drop for Defaults {
        fn drop(&mut self) {
            preempt_sync::futex::HAND_OVER_TO_NEWEST.store(false, Relaxed);
            preempt_sync::pcp::ROUND_LIMIT.store(0, Relaxed);
        }
    }

    let _one = one_model_at_a_time();
    let _defaults = Defaults;
    preempt_sync::pcp::ROUND_LIMIT.store(2 * threads, Relaxed);
    for newest in [false, true] {
        preempt_sync::futex::HAND_OVER_TO_NEWEST.store(newest, Relaxed);
        explore(f.clone());
    }
}

/// Main (priority 1) holds X (ceiling 3) until two threads sleep on its level; T1
/// (priority 2) locks Y (ceiling 2) and T2 (priority 2) locks `t2_target`. Both are blocked
/// by level 3 and must get their resources after main releases X, without passing level 3
/// back and forth (the slow path may only sleep on a committed holder, a fast-path claimer
/// or its own level: asserted inside `lock_slow` under loom).
fn two_waiters_on_one_level(t2_locks_x: bool) {
    let g = group();
    let x = Arc::new(PcpMutex::new(0u32, 3, g));
    let y = Arc::new(PcpMutex::new(0u32, 2, g));
    let z = Arc::new(PcpMutex::new(0u32, 2, g));
    // T1 and T2 start once main holds X.
    let go = Arc::new([Event::new(), Event::new()]);
    let t1 = {
        let (y, go) = (y.clone(), go.clone());
        thread::spawn(move || {
            while go[0].wait_until(None) != Woke::Notified {}
            y.lock(2, |v| *v += 1)
        })
    };
    let t2 = {
        let (x, z, go) = (x.clone(), z.clone(), go.clone());
        thread::spawn(move || {
            while go[1].wait_until(None) != Woke::Notified {}
            if t2_locks_x {
                x.lock(2, |v| *v += 1)
            } else {
                z.lock(2, |v| *v += 1)
            }
        })
    };
    x.lock(1, |v| {
        go[0].notify();
        go[1].notify();
        while g.sleepers(3) < 2 {
            thread::yield_now();
        }
        *v += 1;
    });
    t1.join().unwrap();
    t2.join().unwrap();
    assert_eq!(y.lock(2, |v| *v), 1);
    let expected = if t2_locks_x { (2, 0) } else { (1, 1) };
    assert_eq!((x.lock(3, |v| *v), z.lock(2, |v| *v)), expected);
}

#[test]
fn two_relaying_waiters_on_one_level_both_proceed() {
    model_both_hand_over_orders(3, || two_waiters_on_one_level(false));
}

#[test]
fn relaying_and_own_level_waiters_both_proceed() {
    model_both_hand_over_orders(3, || two_waiters_on_one_level(true));
}
