//! Behaviour of running apps: FIFO order per priority, executor threads (name, policy,
//! affinity), task panics (stop and continue, locks released), capacity, timed spawns, and
//! zero heap allocations on the spawn, dispatch and lock paths.
//!
//! Each app runs in a child process under a watchdog (see `support/child.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[path = "support/child.rs"]
mod child_process;
#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use child_process::{privileged, run_child, run_child_ok, run_requested_app, text};
use counting_alloc::ALLOCATIONS;

/// 16 spawns from one thread run in spawn order, on each of the three paths (from another
/// thread before start, from the executor itself, from a higher-priority executor), also
/// when they alternate between two tasks of the level.
#[preempt::app(main = false)]
mod fifo {
    #[shared]
    struct Shared {
        log: Vec<(u8, u32)>,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        for i in 0..16 {
            super::fifo_spawn(0, i);
        }
        (
            Shared {
                log: Vec::with_capacity(64),
            },
            Local {},
            init::Monotonics(),
        )
    }

    #[task(priority = 1, capacity = 8, shared = [log])]
    fn even(mut cx: even::Context, phase: u8, i: u32) {
        cx.shared.log.lock(|log| log.push((phase, i)));
        if phase == 0 && i == 15 {
            burst::spawn().unwrap();
        }
    }

    #[task(priority = 1, capacity = 8, shared = [log])]
    fn odd(mut cx: odd::Context, phase: u8, i: u32) {
        cx.shared.log.lock(|log| log.push((phase, i)));
        if phase == 0 && i == 15 {
            burst::spawn().unwrap();
        }
    }

    /// Same-executor spawns (the ready ring).
    #[task(priority = 1)]
    fn burst(_: burst::Context) {
        for i in 0..16 {
            super::fifo_spawn(1, i);
        }
        high::spawn().unwrap();
    }

    /// Spawns from another executor thread (the inbox).
    #[task(priority = 2)]
    fn high(_: high::Context) {
        for i in 0..16 {
            super::fifo_spawn(2, i);
        }
        check::spawn().unwrap();
    }

    #[task(priority = 1, shared = [log])]
    fn check(mut cx: check::Context) {
        cx.shared.log.lock(|log| {
            for phase in 0..3 {
                let seen: Vec<String> = log
                    .iter()
                    .filter(|e| e.0 == phase)
                    .map(|e| e.1.to_string())
                    .collect();
                println!("phase {phase}: {}", seen.join(" "));
            }
        });
        preempt::exit(0);
    }
}

fn fifo_spawn(phase: u8, i: u32) {
    if i % 2 == 0 {
        fifo::even::spawn(phase, i).unwrap();
    } else {
        fifo::odd::spawn(phase, i).unwrap();
    }
}

/// A same-priority ping-pong that never ends by itself must not starve the level's other
/// sources: a timed spawn and a spawn from another executor thread both run while it goes
/// on, and together they stop it.
#[preempt::app(main = false)]
mod no_starvation {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::Duration;

    static TIMED_RAN: AtomicBool = AtomicBool::new(false);
    static REMOTE_RAN: AtomicBool = AtomicBool::new(false);
    static ROUND_TRIPS: AtomicU64 = AtomicU64::new(0);

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        ping::spawn().unwrap();
        timed::spawn_after(Duration::from_millis(20)).unwrap();
        high::spawn().unwrap();
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 1)]
    fn ping(_: ping::Context) {
        if TIMED_RAN.load(Ordering::Relaxed) && REMOTE_RAN.load(Ordering::Relaxed) {
            println!("timed and remote spawns ran during the ping-pong");
            println!(
                "ping-pong went on: {}",
                ROUND_TRIPS.load(Ordering::Relaxed) > 0
            );
            preempt::exit(0);
        } else {
            pong::spawn().unwrap();
        }
    }

    #[task(priority = 1)]
    fn pong(_: pong::Context) {
        ROUND_TRIPS.fetch_add(1, Ordering::Relaxed);
        ping::spawn().unwrap();
    }

    #[task(priority = 1)]
    fn timed(_: timed::Context) {
        TIMED_RAN.store(true, Ordering::Relaxed);
    }

    /// Runs on its own executor thread and spawns onto the busy level (its inbox).
    #[task(priority = 2)]
    fn high(_: high::Context) {
        remote::spawn().unwrap();
    }

    #[task(priority = 1)]
    fn remote(_: remote::Context) {
        REMOTE_RAN.store(true, Ordering::Relaxed);
    }
}

/// Executor threads are named, scheduled and pinned as configured.
#[preempt::app(main = false, cores = [p3 = 0])]
mod threads {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        report::spawn().unwrap();
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 3)]
    fn report(_: report::Context) {
        let name = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
        let policy = preempt_io::sys::sched::current_thread_policy().unwrap();
        let cpus = preempt_io::sys::sched::current_thread_affinity().unwrap();
        println!("name: {}", name.trim());
        println!("policy: {policy:?}");
        println!("cpus: {cpus:?}");
        preempt::exit(0);
    }
}

/// The default: a panicking task stops the app with 101; later messages do not run.
#[preempt::app(main = false)]
mod panic_stop {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        boom::spawn().unwrap();
        after::spawn().unwrap();
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 1)]
    fn boom(_: boom::Context) {
        panic!("boom");
    }

    #[task(priority = 1)]
    fn after(_: after::Context) {
        println!("after ran");
        preempt::exit(0);
    }
}

/// `on_panic = continue`: the panic is reported, the lock the task held is released, and
/// later spawns (also of the same task) still run.
#[preempt::app(main = false, on_panic = continue)]
mod panic_continue {
    #[shared]
    struct Shared {
        r: u32,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        boom::spawn(0).unwrap();
        (Shared { r: 0 }, Local {}, init::Monotonics())
    }

    #[task(priority = 2, shared = [r])]
    fn boom(mut cx: boom::Context, n: u32) {
        cx.shared.r.lock(|r| {
            *r += 1;
            after::spawn(n).unwrap();
            if n == 0 {
                panic!("boom while holding r");
            }
        });
    }

    #[task(priority = 1, shared = [r])]
    fn after(mut cx: after::Context, n: u32) {
        let r = cx.shared.r.lock(|r| *r);
        println!("after {n}: r = {r}");
        if n == 0 {
            boom::spawn(1).unwrap();
        } else {
            preempt::exit(0);
        }
    }
}

/// Panics of jobs spawned on their own level (they run in the round's continuation, under
/// one `catch_unwind` for many jobs) are reported with the right task and policy.
#[preempt::app(main = false, on_panic = continue)]
mod panic_same_level_continue {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        first::spawn().unwrap();
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 1)]
    fn first(_: first::Context) {
        boom::spawn(0).unwrap();
        boom::spawn(1).unwrap();
    }

    #[task(priority = 1, capacity = 2)]
    fn boom(_: boom::Context, n: u32) {
        if n == 0 {
            panic!("boom {n}");
        }
        println!("boom {n} ran");
        last::spawn().unwrap();
    }

    #[task(priority = 1)]
    fn last(_: last::Context) {
        println!("last ran");
        preempt::exit(0);
    }
}

/// The same with the default policy: the app stops with 101 at the first panic.
#[preempt::app(main = false)]
mod panic_same_level_stop {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        first::spawn().unwrap();
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 1)]
    fn first(_: first::Context) {
        boom::spawn().unwrap();
        after::spawn().unwrap();
    }

    #[task(priority = 1)]
    fn boom(_: boom::Context) {
        panic!("boom on the ring");
    }

    #[task(priority = 1)]
    fn after(_: after::Context) {
        println!("after ran");
        preempt::exit(0);
    }
}

/// A full queue gives the arguments back; timed spawns run in release order.
#[preempt::app(main = false)]
mod queues {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        start::spawn().unwrap();
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 1)]
    fn start(_: start::Context) {
        // capacity 2 on the same-executor path.
        println!("spawn 1: {:?}", sink::spawn(1, "one"));
        println!("spawn 2: {:?}", sink::spawn(2, "two"));
        println!("spawn 3: {:?}", sink::spawn(3, "three"));
        let now = Instant::now();
        timed::spawn_at(now + Duration::from_millis(30), 30).unwrap();
        timed::spawn_at(now + Duration::from_millis(10), 10).unwrap();
        timed::spawn_after(Duration::from_millis(20), 20).unwrap();
        println!(
            "timed 4: {:?}",
            timed::spawn_after(Duration::from_millis(40), 40)
        );
    }

    #[task(priority = 1, capacity = 2)]
    fn sink(_: sink::Context, n: u32, word: &'static str) {
        println!("sink {n} {word}");
    }

    #[task(priority = 2, capacity = 3, local = [seen: u32 = 0])]
    fn timed(cx: timed::Context, ms: u32) {
        println!("timed {ms}");
        *cx.local.seen += 1;
        if *cx.local.seen == 3 {
            preempt::exit(0);
        }
    }
}

/// No heap allocation on the spawn, dispatch and lock paths once the app runs.
#[preempt::app(main = false)]
mod no_alloc {
    #[shared]
    struct Shared {
        counter: u64,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        first::spawn().unwrap();
        (Shared { counter: 0 }, Local {}, init::Monotonics())
    }

    #[task(priority = 1)]
    fn first(_: first::Context) {
        let now = super::ALLOCATIONS.load(super::Ordering::SeqCst);
        super::NO_ALLOC_BEFORE.store(now, super::Ordering::SeqCst);
        same::spawn(0).unwrap();
    }

    /// Same-priority ping-pong with `other` (ready ring) and locks of a PCP resource.
    #[task(priority = 1, shared = [counter])]
    fn same(mut cx: same::Context, n: u32) {
        cx.shared.counter.lock(|c| *c += 1);
        if n < 10_000 {
            other::spawn(n + 1).unwrap();
        } else {
            high::spawn(0).unwrap();
        }
    }

    #[task(priority = 1)]
    fn other(_: other::Context, n: u32) {
        same::spawn(n + 1).unwrap();
    }

    /// Cross-priority ping-pong (inbox + wake-ups) and the timer path.
    #[task(priority = 2, shared = [counter])]
    fn high(mut cx: high::Context, n: u32) {
        cx.shared.counter.lock(|c| *c += 1);
        if n < 2_000 {
            low::spawn(n + 1).unwrap();
        } else {
            timer::spawn_after(Duration::from_micros(10), 0).unwrap();
        }
    }

    #[task(priority = 1)]
    fn low(_: low::Context, n: u32) {
        high::spawn(n + 1).unwrap();
    }

    #[task(priority = 2, shared = [counter])]
    fn timer(mut cx: timer::Context, n: u32) {
        cx.shared.counter.lock(|c| *c += 1);
        if n < 200 {
            timer::spawn_after(Duration::ZERO, n + 1).unwrap();
        } else {
            done::spawn().unwrap();
        }
    }

    #[task(priority = 1)]
    fn done(_: done::Context) {
        let after = super::ALLOCATIONS.load(super::Ordering::SeqCst);
        let before = super::NO_ALLOC_BEFORE.load(super::Ordering::SeqCst);
        println!("allocations on the hot path: {}", after - before);
        preempt::exit(0);
    }
}

static NO_ALLOC_BEFORE: AtomicU64 = AtomicU64::new(0);

/// Runs the app named by `PREEMPT_TEST_CHILD` (when this binary is a child).
#[test]
fn child() {
    run_requested_app(&[
        ("fifo", fifo::run),
        ("no_starvation", no_starvation::run),
        ("threads", threads::run),
        ("panic_stop", panic_stop::run),
        ("panic_continue", panic_continue::run),
        ("panic_same_level_continue", panic_same_level_continue::run),
        ("panic_same_level_stop", panic_same_level_stop::run),
        ("queues", queues::run),
        ("no_alloc", no_alloc::run),
    ]);
}

#[test]
fn sixteen_spawns_from_one_thread_run_in_spawn_order() {
    let stdout = run_child_ok("fifo", &[], 3, Duration::from_secs(30));
    let expected: Vec<String> = (0..16).map(|i| i.to_string()).collect();
    let expected = expected.join(" ");
    for phase in 0..3 {
        assert!(
            stdout.contains(&format!("phase {phase}: {expected}\n")),
            "phase {phase} out of order:\n{stdout}"
        );
    }
}

#[test]
fn a_busy_same_priority_ping_pong_does_not_starve_timers_or_remote_spawns() {
    let stdout = run_child_ok("no_starvation", &[], 3, Duration::from_secs(30));
    assert!(
        stdout.contains(
            "timed and remote spawns ran during the ping-pong\nping-pong went on: true\n"
        ),
        "{stdout}"
    );
}

#[test]
fn executor_threads_are_named_scheduled_and_pinned() {
    let stdout = run_child_ok("threads", &[], 3, Duration::from_secs(30));
    assert!(stdout.contains("name: preempt-p3\n"), "{stdout}");
    assert!(stdout.contains("cpus: [0]\n"), "{stdout}");
    if privileged(3) {
        assert!(stdout.contains("policy: Fifo { priority: 3 }"), "{stdout}");
    }
}

/// Runs the child `app`, whose task panics with `panic_line` on stderr and must stop the app
/// (exit 101) before its `after` task runs.
fn assert_panic_stops_the_app(app: &str, panic_line: &str) {
    let out = run_child(app, &[], 3, Duration::from_secs(30));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(101), "{stderr}");
    assert!(stderr.contains(panic_line), "{stderr}");
    assert!(!text(&out.stdout).contains("after ran"));
}

/// Runs the child `app`, whose task panics with `panic_line` on stderr and must let the app
/// go on to a successful exit; returns its stdout.
fn run_app_continuing_after_a_panic(app: &str, panic_line: &str) -> String {
    let out = run_child(app, &[], 3, Duration::from_secs(30));
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains(panic_line), "{stderr}");
    stdout
}

#[test]
fn a_panicking_task_stops_the_app_by_default() {
    assert_panic_stops_the_app(
        "panic_stop",
        "preempt: task `boom` (priority 1) panicked: boom",
    );
}

#[test]
fn panics_of_same_level_spawns_follow_the_policy() {
    let stdout = run_app_continuing_after_a_panic(
        "panic_same_level_continue",
        "preempt: task `boom` (priority 1) panicked: boom 0",
    );
    assert!(stdout.contains("boom 1 ran\nlast ran\n"), "{stdout}");

    assert_panic_stops_the_app(
        "panic_same_level_stop",
        "preempt: task `boom` (priority 1) panicked: boom on the ring",
    );
}

#[test]
fn on_panic_continue_releases_locks_and_runs_later_spawns() {
    let stdout = run_app_continuing_after_a_panic(
        "panic_continue",
        "preempt: task `boom` (priority 2) panicked: boom while holding r",
    );
    assert!(
        stdout.contains("after 0: r = 1\nafter 1: r = 2\n"),
        "{stdout}"
    );
}

#[test]
fn full_queues_give_arguments_back_and_timers_run_in_release_order() {
    let stdout = run_child_ok("queues", &[], 3, Duration::from_secs(30));
    assert!(
        stdout.contains(
            "spawn 1: Ok(())\nspawn 2: Ok(())\nspawn 3: Err((3, \"three\"))\ntimed 4: Err(40)\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("sink 1 one\nsink 2 two\n"), "{stdout}");
    assert!(!stdout.contains("sink 3"), "{stdout}");
    assert!(
        stdout.contains("timed 10\ntimed 20\ntimed 30\n"),
        "{stdout}"
    );
}

#[test]
fn spawn_dispatch_and_lock_do_not_allocate() {
    let stdout = run_child_ok("no_alloc", &[], 3, Duration::from_secs(60));
    assert!(
        stdout.contains("allocations on the hot path: 0\n"),
        "{stdout}"
    );
}
