//! A 1 kHz periodic control task with an 800 µs deadline, and the statistics the runtime
//! keeps for it, printed at exit (`summary = true`, on stderr): releases, release latency
//! (min, p50, p99, max), execution time, deadline misses, lateness, page faults, and the
//! response-time analysis from the measured execution time.
//!
//! The task filters a synthetic sensor signal (a first-order low-pass) and hands the result
//! to a lower-priority reporting task once a second. It runs `PREEMPT_EXAMPLE_JOBS` jobs
//! (default 2000: two seconds) and stops.
//!
//! ```sh
//! cargo run --release -p preempt --example periodic_1khz
//! PREEMPT_STATS_JSON=stats.json cargo run --release -p preempt --example periodic_1khz
//! ```

#[preempt::app(summary = true)]
mod app {
    #[local]
    struct Local {
        jobs: u32,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        println!("1 kHz control task, deadline 800 us, on_miss = Skip");
        (
            Shared {},
            Local {
                jobs: super::jobs(),
            },
            init::Monotonics(),
        )
    }

    /// One control period: read the "sensor", filter, publish.
    #[task(
        priority = 90,
        period = 1.millis(),
        deadline = 800.micros(),
        on_miss = Skip,
        local = [jobs, k: u32 = 0, state: f64 = 0.0]
    )]
    fn control(cx: control::Context) {
        let k = *cx.local.k;
        // A 3 Hz square wave sampled at 1 kHz, low-pass filtered (time constant 20 ms).
        let input = if (k / 167) % 2 == 0 { 1.0 } else { -1.0 };
        *cx.local.state += (input - *cx.local.state) * (1.0 / 20.0);
        *cx.local.k = k + 1;
        if (k + 1) % 1000 == 0 || k + 1 == *cx.local.jobs {
            // The filtered value travels as the message: the reporter prints this job's.
            report::spawn(k + 1, *cx.local.state).ok();
        }
    }

    /// Prints from a low priority, away from the control loop's thread.
    #[task(priority = 10, capacity = 2)]
    fn report(_: report::Context, jobs: u32, filtered: f64) {
        preempt::rt_safety::allow(|| println!("after {jobs} jobs: filtered = {filtered:+.3}"));
        if jobs >= super::jobs() {
            preempt::exit(0);
        }
    }
}

/// 2000, unless `PREEMPT_EXAMPLE_JOBS` says otherwise. Read once, by `init`: reading the
/// environment allocates, which a task must not.
fn jobs() -> u32 {
    static JOBS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *JOBS.get_or_init(|| {
        std::env::var("PREEMPT_EXAMPLE_JOBS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or(2000)
    })
}
