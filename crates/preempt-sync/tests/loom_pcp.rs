//! Loom model of the PCP mutex over the futex model (PI hand-over included): mutual
//! exclusion, the ceiling rule, no unnecessary blocking, and no deadlock with two threads
//! taking two mutexes in opposite orders (loom reports a deadlock if all threads sleep).
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p preempt-sync --release --test loom_pcp`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::thread;
use preempt_sync::event::Event;
use preempt_sync::pcp::{PcpGroup, PcpMutex};

fn model(f: impl Fn() + Sync + Send + 'static) {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Ok(trace) = preempt_sync::pcp::TRACE.try_lock() {
            for line in trace.iter() {
                eprintln!("trace: {line}");
            }
        }
        default_hook(info);
    }));
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    b.check(move || {
        preempt_sync::pcp::TRACE.lock().unwrap().clear();
        let _dump = DumpOnPanic;
        f();
    });
}

struct DumpOnPanic;
impl Drop for DumpOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for line in preempt_sync::pcp::TRACE.lock().unwrap().iter() {
                eprintln!("trace: {line}");
            }
        }
    }
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
        low.lock(1, |_| {
            while done.wait_until(None) != preempt_sync::event::Woke::Notified {}
        });
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
