//! Two tasks lock the same two resources in opposite orders, over and over, on two
//! threads (priorities 1 and 2) that run in parallel on different CPUs: the textbook
//! deadlock (thesis Figure 2.2). Under the Priority Ceiling Protocol it cannot happen: while
//! `ab` holds `a` (ceiling 2), `ba` may not take `b` even though `b` is free, because its
//! priority is not above the ceiling of a resource another task holds; it waits on `a`'s
//! holder instead, who is boosted by priority inheritance.
//!
//! Inside both nested locks each task checks that it sees `a == b` (both are only changed
//! together, under both locks): a violation would mean the locks failed to exclude.
//!
//! ```sh
//! cargo run --release -p preempt --example deadlock_avoidance
//! ```

#[preempt::app]
mod app {
    #[shared]
    struct Shared {
        a: u64,
        b: u64,
        finished: u8,
        rounds: u32,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        ab::spawn(0).unwrap();
        ba::spawn(0).unwrap();
        let rounds = super::rounds();
        println!("two tasks, opposite lock orders, {rounds} rounds each");
        (
            Shared {
                a: 0,
                b: 0,
                finished: 0,
                rounds,
            },
            Local {},
            init::Monotonics(),
        )
    }

    /// Locks `a`, then `b`.
    #[task(priority = 1, shared = [a, b, finished, &rounds])]
    fn ab(mut cx: ab::Context, round: u32) {
        cx.shared.a.lock(|a| {
            cx.shared.b.lock(|b| {
                assert_eq!(*a, *b, "mutual exclusion violated");
                *a += 1;
                *b += 1;
            })
        });
        if round + 1 < *cx.shared.rounds {
            ab::spawn(round + 1).unwrap();
        } else {
            finish(cx.shared.lock_all(|s| {
                *s.finished += 1;
                (*s.finished, *s.a, *s.b)
            }));
        }
    }

    /// Locks `b`, then `a`: the opposite order.
    #[task(priority = 2, shared = [a, b, finished, &rounds])]
    fn ba(mut cx: ba::Context, round: u32) {
        cx.shared.b.lock(|b| {
            cx.shared.a.lock(|a| {
                assert_eq!(*a, *b, "mutual exclusion violated");
                *a += 1;
                *b += 1;
            })
        });
        if round + 1 < *cx.shared.rounds {
            ba::spawn(round + 1).unwrap();
        } else {
            // The same as `lock_all`, spelled as a multi-lock.
            let (finished, a, b) = (&mut cx.shared.finished, &mut cx.shared.a, &mut cx.shared.b)
                .lock(|finished, a, b| {
                    *finished += 1;
                    (*finished, *a, *b)
                });
            finish((finished, a, b));
        }
    }

    /// The second task to finish prints the totals and stops the app.
    fn finish((finished, a, b): (u8, u64, u64)) {
        if finished == 2 {
            preempt::rt_safety::allow(|| {
                println!("both tasks done: a = {a}, b = {b}, no deadlock")
            });
            preempt::exit(0);
        }
    }
}

/// 200 000 rounds per task unless `PREEMPT_EXAMPLE_ROUNDS` says otherwise.
fn rounds() -> u32 {
    std::env::var("PREEMPT_EXAMPLE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(200_000)
}
