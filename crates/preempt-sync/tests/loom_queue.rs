//! Loom model of `MpscQueue`: no value lost or duplicated, per-producer FIFO, `Err(value)`
//! exactly when full, across lap wrap-around.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p preempt-sync --release --test loom_queue`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use preempt_sync::queue::MpscQueue;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

/// Pops until `n` values arrived (the consumer of these models).
fn pop_n<const N: usize>(q: &MpscQueue<(u8, u8), N>, n: usize) -> Vec<(u8, u8)> {
    let mut got = Vec::new();
    while got.len() < n {
        // SAFETY: only this thread pops.
        match unsafe { q.pop() } {
            Some(v) => got.push(v),
            None => thread::yield_now(),
        }
    }
    got
}

#[test]
fn two_producers_one_consumer() {
    model(|| {
        // Producer 0 pushes two values, producer 1 one; capacity 3, so no push fails and
        // only the consumer waits (for claimed-but-unwritten slots and for pushes).
        let q: Arc<MpscQueue<(u8, u8), 3>> = Arc::new(MpscQueue::new());
        let producers: Vec<_> = [2u8, 1]
            .into_iter()
            .enumerate()
            .map(|(p, count)| {
                let q = q.clone();
                let p = u8::try_from(p).unwrap();
                thread::spawn(move || {
                    for i in 0..count {
                        q.try_push((p, i)).unwrap();
                    }
                })
            })
            .collect();
        let got = pop_n(&q, 3);
        for p in producers {
            p.join().unwrap();
        }
        let mine = |p: u8| -> Vec<u8> { got.iter().filter(|v| v.0 == p).map(|v| v.1).collect() };
        assert_eq!(mine(0), [0, 1], "producer 0: lost, duplicated or reordered");
        assert_eq!(mine(1), [0], "producer 1: lost or duplicated");
        // SAFETY: single consumer.
        assert_eq!(unsafe { q.pop() }, None);
        assert_eq!(q.len(), 0);
    });
}

#[test]
fn full_queue_returns_value_and_wraps() {
    model(|| {
        // Capacity 1: the two producers and the consumer cross several laps.
        let q: Arc<MpscQueue<(u8, u8), 1>> = Arc::new(MpscQueue::new());
        let pushed = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let producers: Vec<_> = (0..2u8)
            .map(|p| {
                let (q, pushed) = (q.clone(), pushed.clone());
                thread::spawn(move || {
                    if q.try_push((p, 0)).is_ok() {
                        pushed.fetch_add(1, loom::sync::atomic::Ordering::SeqCst);
                    }
                })
            })
            .collect();
        let mut got = Vec::new();
        for p in producers {
            p.join().unwrap();
        }
        // SAFETY: single consumer.
        while let Some(v) = unsafe { q.pop() } {
            got.push(v);
        }
        // At least one push fits; a push fails only if the other's value is still there.
        let n = pushed.load(loom::sync::atomic::Ordering::SeqCst);
        assert_eq!(got.len(), n);
        assert_eq!(
            n, 1,
            "capacity 1 and no pop before both pushes: exactly one fits"
        );
        q.try_push((9, 9)).unwrap();
        // SAFETY: single consumer.
        assert_eq!(unsafe { q.pop() }, Some((9, 9)));
    });
}

#[test]
fn push_never_fails_when_consumer_made_room() {
    model(|| {
        let q: Arc<MpscQueue<u8, 1>> = Arc::new(MpscQueue::new());
        q.try_push(1).unwrap();
        let consumer = {
            let q = q.clone();
            // SAFETY: the spawned thread is the only consumer.
            thread::spawn(move || unsafe { q.pop() })
        };
        assert_eq!(consumer.join().unwrap(), Some(1));
        // The pop happened-before this push: the slot is free, the push must succeed.
        q.try_push(2).unwrap();
        assert_eq!(q.len(), 1);
    });
}
