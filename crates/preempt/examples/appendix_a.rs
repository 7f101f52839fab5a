//! The thesis's Appendix A example: a periodic task `foo` (priority 10) counts in a local
//! resource, copies the count into a shared resource and spawns `bar` (priority 15), which
//! prints the message argument and the shared value.
//!
//! Changes to the listing: the crate path; the Cortex-M arguments `device` and `dispatchers`
//! are gone (executors are threads); the period `1.seconds()` comes from `period()` so the
//! tests can shorten it with `PREEMPT_EXAMPLE_PERIOD_MS`; the app stops after `ROUNDS`
//! periods instead of running forever. (`tests/thesis_listings.rs` compiles the listing
//! verbatim.)
//!
//! ```sh
//! cargo run -p preempt --example appendix_a
//! ```

/// How many periods the example runs.
const ROUNDS: u32 = 5;

#[preempt::app]
mod app {
    #[shared]
    struct Shared {
        counter: u32,
    }

    #[local]
    struct Local {}

    #[init]
    fn init(_cx: init::Context) -> (Shared, Local, init::Monotonics) {
        foo::spawn_after(super::period()).unwrap();

        (Shared { counter: 0 }, Local {}, init::Monotonics())
    }

    #[task(priority = 10, shared = [counter], local = [counter: u32 = 0])]
    fn foo(cx: foo::Context) {
        preempt::rt_safety::allow(|| println!("counter: {}", *cx.local.counter));
        // Access to local resource is lock-free
        *cx.local.counter += 1;

        // Access to shared resource requires locking
        cx.shared.counter.lock(|counter| {
            // Set shared counter to equal local counter
            *counter = *cx.local.counter;
        });

        // Spawn task instantly (with argument)
        bar::spawn(*cx.local.counter).unwrap();

        // Periodic every period, ROUNDS times
        if *cx.local.counter < super::ROUNDS {
            foo::spawn_after(super::period()).unwrap();
        }
    }

    #[task(priority = 15, shared = [counter])]
    fn bar(cx: bar::Context, counter: u32) {
        // Print value passed as an argument
        preempt::rt_safety::allow(|| println!("counter arg: {}", counter));

        // Print value from shared resource
        cx.shared.counter.lock(|counter| {
            preempt::rt_safety::allow(|| println!("counter shared: {}", counter));
        });

        if counter == super::ROUNDS {
            preempt::exit(0);
        }
    }
}

/// One second, as in the thesis, unless `PREEMPT_EXAMPLE_PERIOD_MS` says otherwise. Read
/// once, by `init`: reading the environment allocates, which `foo` must not.
fn period() -> std::time::Duration {
    static PERIOD: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
    *PERIOD.get_or_init(|| {
        let ms = std::env::var("PREEMPT_EXAMPLE_PERIOD_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000);
        std::time::Duration::from_millis(ms)
    })
}
