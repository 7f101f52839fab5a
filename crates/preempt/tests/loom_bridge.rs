//! Loom model of the RT → non-RT bridge (`preempt::bridge`): under every interleaving loom
//! explores, values arrive in order, nothing is lost besides the overflows the sender
//! counted, the receiver never sleeps through a send (the futex model deadlocks on a lost
//! wake-up and loom reports it), and values left in the ring are dropped exactly once.
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p preempt --release --test loom_bridge
//! ```
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use preempt::bridge;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

#[test]
fn in_order_and_no_loss_beyond_counted_overflows() {
    model(|| {
        let (mut tx, mut rx) = bridge::channel::<u8>(2);
        let producer = thread::spawn(move || {
            let mut refused = 0_u64;
            for v in 0..3_u8 {
                if tx.send(v).is_err() {
                    refused += 1;
                }
            }
            refused
            // `tx` drops here: the receiver's `recv` then returns `None` once drained.
        });
        let mut got = Vec::new();
        while let Some(v) = rx.recv() {
            got.push(v);
        }
        let refused = producer.join().unwrap();
        assert_eq!(got.len() as u64 + refused, 3);
        assert_eq!(rx.overflows(), refused);
        assert!(got.windows(2).all(|w| w[0] < w[1]), "{got:?}");
    });
}

#[test]
fn values_left_in_the_ring_are_dropped_once() {
    model(|| {
        let token = Arc::new(());
        let (mut tx, mut rx) = bridge::channel::<Arc<()>>(2);
        let t = token.clone();
        let producer = thread::spawn(move || {
            for _ in 0..2 {
                let _full = tx.send(t.clone()).is_err();
            }
        });
        let early = rx.try_recv();
        producer.join().unwrap();
        drop(early);
        drop(rx);
        // Both ends are gone: every clone sent was dropped, received or with the ring.
        assert_eq!(Arc::strong_count(&token), 1);
    });
}
