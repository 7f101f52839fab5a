//! Hardware tasks bound to file descriptors: what an interrupt is on a microcontroller, a
//! readable fd is on Linux.
//!
//! * `on_timer` is bound to a timerfd (`binds = timer`) that expires every 2 ms: the
//!   executor of priority 50 waits in epoll on it and runs the task when it is readable; the
//!   task reads the expiration count, which acknowledges the "interrupt" (more than one
//!   expiration would mean it fell behind).
//! * `on_event` is bound to an eventfd (`binds = line`) that an ordinary thread raises:
//!   the way a driver thread, a socket reader or another process hands work to the real-time
//!   side without any shared lock.
//!
//! Both executors also accept ordinary spawns: epoll watches their doorbell eventfd too.
//!
//! ```sh
//! cargo run --release -p preempt --example fd_tasks
//! ```

#[preempt::app]
mod app {
    use preempt::fd::{EventSource, FdSource, Notifier, TimerSource};

    /// Timer expirations to wait for.
    const TICKS: u64 = 25;
    /// Events the helper thread raises.
    const EVENTS: u64 = 5;

    #[local]
    struct Local {
        timer: TimerSource,
        line: EventSource,
        raiser: Option<Notifier>,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        let timer = TimerSource::new().expect("timerfd_create");
        // First expiry 2 ms from now, then every 2 ms, on absolute CLOCK_MONOTONIC time.
        timer
            .arm_at((Instant::now() + 2.millis()).as_nanos(), 2_000_000)
            .expect("timerfd_settime");
        let line = EventSource::new().expect("eventfd");
        let raiser = Some(line.notifier().expect("dup of the eventfd"));
        println!("timerfd every 2 ms -> on_timer (priority 50); eventfd -> on_event (priority 40)");
        (
            Shared {},
            Local {
                timer,
                line,
                raiser,
            },
            init::Monotonics(),
        )
    }

    #[task(binds = timer, priority = 50, local = [ticks: u64 = 0, raiser])]
    fn on_timer(cx: on_timer::Context) {
        let Ok(Some(expirations)) = cx.local.timer.read_event() else {
            return;
        };
        *cx.local.ticks += expirations;
        if *cx.local.ticks >= 10 {
            // Halfway: start an ordinary thread that raises the eventfd line.
            if let Some(raiser) = cx.local.raiser.take() {
                // A thread spawn is no real-time operation (preempt::rt_safety reports it);
                // this demo accepts it once, halfway.
                preempt::rt_safety::allow(|| {
                    std::thread::spawn(move || {
                        for _ in 0..EVENTS {
                            raiser.notify().expect("eventfd write");
                            super::pause_ms(3);
                        }
                    })
                });
                preempt::rt_safety::allow(|| {
                    println!("on_timer: 10 expirations, raising the event line {EVENTS} times")
                });
            }
        }
        if *cx.local.ticks >= TICKS {
            cx.local.timer.disarm().expect("timerfd disarm");
            finish::spawn(Done::Timer).unwrap();
        }
    }

    #[task(binds = line, priority = 40, local = [events: u64 = 0])]
    fn on_event(cx: on_event::Context) {
        // The count is the sum of the signals since the last read.
        while let Ok(Some(n)) = cx.local.line.read_event() {
            *cx.local.events += n;
        }
        if *cx.local.events == EVENTS {
            finish::spawn(Done::Events).unwrap();
        }
    }

    /// Which hardware task has finished.
    #[derive(Debug)]
    pub(crate) enum Done {
        Timer,
        Events,
    }

    /// Reports once both have finished (in a fixed order, whichever finished first).
    #[task(priority = 10, capacity = 2, local = [finished: u32 = 0])]
    fn finish(cx: finish::Context, done: Done) {
        preempt::rt_safety::allow(|| eprintln!("finished: {done:?}"));
        *cx.local.finished += 1;
        if *cx.local.finished < 2 {
            return;
        }
        preempt::rt_safety::allow(|| println!("on_event: {EVENTS} events received"));
        preempt::rt_safety::allow(|| println!("on_timer: {TICKS} expirations seen"));
        // The report at the end: allocates and prints, outside the real-time work.
        preempt::rt_safety::allow(|| {
            let stats = super::app::stats();
            let timer = stats.task("on_timer").unwrap();
            eprintln!(
                "on_timer: {} jobs, release latency (fd readable -> task start is not visible \
                 to the executor; this is epoll return -> start) max {:?} ns",
                timer.stats.releases, timer.stats.release_latency.max_ns
            );
        });
        preempt::exit(0);
    }
}

/// The helper thread is an ordinary thread: a relative sleep is fine there.
#[allow(
    clippy::disallowed_methods,
    reason = "a non-real-time helper thread paces itself"
)]
fn pause_ms(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}
