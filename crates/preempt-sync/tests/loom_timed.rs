//! Loom model of `TimerQueue`'s sleep protocol: a push made while the consumer goes to
//! sleep with nothing queued always wakes it (a lost wake-up deadlocks the model).
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p preempt-sync --release --test loom_timed`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use preempt_sync::timed::TimerQueue;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

#[test]
fn push_wakes_idle_consumer() {
    model(|| {
        let q: Arc<TimerQueue<u8, 2>> = Arc::new(TimerQueue::new());
        let producer = {
            let q = q.clone();
            thread::spawn(move || {
                q.push_at(10, 1).unwrap();
                q.push(2).unwrap();
            })
        };
        let mut got = Vec::new();
        while got.len() < 2 {
            // SAFETY: only this thread consumes.
            match unsafe { q.pop_due(10) } {
                Some(v) => got.push(v),
                // SAFETY: as above. With nothing queued this sleeps without deadline.
                None => unsafe { q.wait() },
            }
        }
        producer.join().unwrap();
        // Both were due at time 10; the immediate one may come first or second depending
        // on when it arrived, but each exactly once.
        got.sort_unstable();
        assert_eq!(got, [1, 2]);
    });
}

#[test]
fn earliest_first_across_threads() {
    model(|| {
        let q: Arc<TimerQueue<u8, 3>> = Arc::new(TimerQueue::new());
        let producers: Vec<_> = [(30u64, 3u8), (20, 2)]
            .into_iter()
            .map(|(t, v)| {
                let q = q.clone();
                thread::spawn(move || q.push_at(t, v).unwrap())
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        q.push_at(10, 1).unwrap();
        // SAFETY: single consumer.
        unsafe {
            assert_eq!(q.pop_due(5), None);
            assert_eq!(q.next_release_ns(), Some(10));
            assert_eq!(q.pop_due(100), Some(1));
            assert_eq!(q.pop_due(100), Some(2));
            assert_eq!(q.pop_due(100), Some(3));
        }
        assert!(q.is_empty());
    });
}
