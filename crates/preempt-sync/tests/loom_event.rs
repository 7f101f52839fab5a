//! Loom model of `Event` with an `MpscQueue`: the consumer never sleeps while a pushed
//! value waits (a lost wake-up deadlocks the model's futex, and loom reports it).
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p preempt-sync --release --test loom_event`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use preempt_sync::event::{Event, Woke};
use preempt_sync::queue::MpscQueue;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

struct Chan {
    q: MpscQueue<u8, 4>,
    ev: Event,
}

#[test]
fn no_lost_wake_up_two_producers() {
    model(|| {
        let ch = Arc::new(Chan {
            q: MpscQueue::new(),
            ev: Event::new(),
        });
        let producers: Vec<_> = (0..2u8)
            .map(|p| {
                let ch = ch.clone();
                thread::spawn(move || {
                    ch.q.try_push(p).unwrap();
                    ch.ev.notify();
                })
            })
            .collect();
        let mut got = 0;
        loop {
            // SAFETY: only this thread pops.
            while unsafe { ch.q.pop() }.is_some() {
                got += 1;
            }
            if got == 2 {
                break;
            }
            // No deadline: if both notifications were lost this parks forever.
            assert_eq!(ch.ev.wait_until(None), Woke::Notified);
        }
        for p in producers {
            p.join().unwrap();
        }
    });
}

#[test]
fn notify_before_wait_leaves_a_token() {
    model(|| {
        let ev = Arc::new(Event::new());
        let t = {
            let ev = ev.clone();
            thread::spawn(move || ev.notify())
        };
        assert_eq!(ev.wait_until(None), Woke::Notified);
        t.join().unwrap();
        // The token was consumed: with a deadline the model times out.
        assert_eq!(ev.wait_until(Some(0)), Woke::Deadline);
    });
}
