//! Async tasks in RTIC v2 style: a sampler paced by `Mono::delay_until` (drift-free: it
//! waits for absolute instants `t0 + k·T`, not `T` after each wake-up) sends readings through
//! an rtic-sync `Channel` to a filter task of lower priority, which prints a running
//! average and, after the last reading, a `Mono::timeout_after` that expires because the
//! sampler has finished.
//!
//! rtic-sync's primitives work unchanged between preempt's executor threads: preempt
//! provides the `critical-section` implementation they need (a priority-inheritance futex).
//!
//! ```sh
//! cargo run --release -p preempt --example async_channel
//! ```

#[preempt::app]
mod app {
    use rtic_sync::channel::{Receiver, Sender};

    /// Readings per run.
    const READINGS: u32 = 20;

    #[local]
    struct Local {
        tx: Sender<'static, (u32, i32), 4>,
        rx: Receiver<'static, (u32, i32), 4>,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        let (tx, rx) = rtic_sync::make_channel!((u32, i32), 4);
        sampler::spawn(2.millis()).unwrap();
        filter::spawn().unwrap();
        (Shared {}, Local { tx, rx }, init::Monotonics())
    }

    /// Samples every `period`, at absolute instants.
    #[task(priority = 20, local = [tx])]
    async fn sampler(cx: sampler::Context, period: Duration) {
        let mut next = Mono::now();
        let mut late = 0;
        for k in 0..READINGS {
            next += period;
            Mono::delay_until(next).await;
            if Mono::now() - next > period {
                late += 1; // more than a period behind its release
            }
            // A triangle wave as the "sensor".
            let reading = (k as i32 % 10 - 5).abs() * 100;
            cx.local.tx.send((k, reading)).await.unwrap();
        }
        preempt::rt_safety::allow(|| {
            eprintln!("sampler: {READINGS} readings, {late} more than a period late")
        });
    }

    /// Averages what arrives; stops when nothing has come for 10 periods.
    #[task(priority = 10, local = [rx])]
    async fn filter(cx: filter::Context) {
        let mut sum = 0_i64;
        let mut n = 0_i64;
        // `Err`: the timeout expired; `Ok(Err)`: the sender is gone.
        while let Ok(Ok((k, reading))) = Mono::timeout_after(20.millis(), cx.local.rx.recv()).await
        {
            sum += i64::from(reading);
            n += 1;
            if (k + 1) % 5 == 0 {
                let average = sum as f64 / n as f64;
                preempt::rt_safety::allow(|| {
                    println!("reading {:2}: {reading:4}, average {average:6.1}", k + 1)
                });
            }
        }
        preempt::rt_safety::allow(|| println!("no reading for 20 ms after {n} readings: done"));
        preempt::exit(0);
    }
}
