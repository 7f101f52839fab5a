//! Periodic tasks under the mock clock: the four overrun policies behave as their timelines
//! in `preempt::periodic` say, under an injected overrun (the first job runs 9 µs with a
//! 4 µs period, every other job 1 µs), and the accounting records what happened.
//!
//! Each app runs in the simulator on the test thread; a lock serialises the apps because
//! the mock clock and the trace are process-wide.

use std::sync::Mutex;

use preempt::sim::{self, TraceEvent};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn trace() -> Vec<String> {
    sim::take_trace().iter().map(ToString::to_string).collect()
}

/// The job body shared by the four apps: the first job overruns.
fn job(n: &mut u32) {
    let work = if *n == 0 { 9_000 } else { 1_000 };
    sim::advance(preempt::Duration::from_nanos(work));
    *n += 1;
    if preempt::Instant::now() >= preempt::Instant::from_nanos(20_000) {
        preempt::exit(0);
    }
}

macro_rules! periodic_app {
    ($name:ident, $policy:ident) => {
        #[preempt::app(clock = mock, main = false)]
        mod $name {
            #[init]
            fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
                (Shared {}, Local {}, init::Monotonics())
            }

            #[task(priority = 2, period = 4.micros(), on_miss = $policy, local = [n: u32 = 0])]
            fn tick(cx: tick::Context) {
                super::job(cx.local.n);
            }
        }
    };
}

periodic_app!(burst, Burst);
periodic_app!(skip, Skip);
periodic_app!(delay, Delay);
periodic_app!(fault, Fault);

#[test]
fn burst_runs_every_overrun_release_back_to_back() {
    let _g = serial();
    assert_eq!(burst::run(), 0);
    assert_eq!(
        trace(),
        [
            "0 start tick released 0",
            "9000 end tick MISSED",
            "9000 start tick released 4000",
            "10000 end tick MISSED",
            "10000 start tick released 8000",
            "11000 end tick",
            "12000 start tick released 12000",
            "13000 end tick",
            "16000 start tick released 16000",
            "17000 end tick",
            "20000 start tick released 20000",
            "21000 end tick",
        ]
    );
    let stats = burst::stats();
    let t = &stats.task("tick").unwrap().stats;
    assert_eq!((t.releases, t.completions, t.skipped_releases), (6, 6, 0));
    assert_eq!((t.deadline_misses, t.max_consecutive_misses), (2, 2));
    assert_eq!(t.max_lateness_ns, Some(5_000)); // 9 µs end against the 4 µs deadline
    assert_eq!(t.exec_max_ns, Some(9_000));
    assert_eq!(t.release_latency.max_ns, Some(5_000)); // release 4 µs started at 9 µs
}

#[test]
fn skip_drops_the_overrun_releases_but_the_latest() {
    let _g = serial();
    assert_eq!(skip::run(), 0);
    assert_eq!(
        trace(),
        [
            "0 start tick released 0",
            "9000 end tick MISSED",
            "skip tick release 4000",
            "9000 start tick released 8000",
            "10000 end tick",
            "12000 start tick released 12000",
            "13000 end tick",
            "16000 start tick released 16000",
            "17000 end tick",
            "20000 start tick released 20000",
            "21000 end tick",
        ]
    );
    let t = skip::stats().task("tick").unwrap().stats.clone();
    assert_eq!(
        (t.releases, t.skipped_releases, t.deadline_misses),
        (5, 1, 1)
    );
    assert_eq!(t.release_latency.max_ns, Some(1_000));
}

#[test]
fn delay_moves_the_grid_to_the_late_start() {
    let _g = serial();
    assert_eq!(delay::run(), 0);
    assert_eq!(
        trace(),
        [
            "0 start tick released 0",
            "9000 end tick MISSED",
            "9000 start tick released 4000",
            "10000 end tick MISSED",
            "13000 start tick released 13000",
            "14000 end tick",
            "17000 start tick released 17000",
            "18000 end tick",
            "21000 start tick released 21000",
            "22000 end tick",
        ]
    );
    let t = delay::stats().task("tick").unwrap().stats.clone();
    assert_eq!(
        (t.releases, t.skipped_releases, t.deadline_misses),
        (5, 0, 2)
    );
}

#[test]
fn fault_stops_the_app_at_the_first_miss() {
    let _g = serial();
    assert_eq!(fault::run(), preempt::EXIT_DEADLINE_FAULT);
    assert_eq!(trace(), ["0 start tick released 0", "9000 end tick MISSED"]);
    let t = fault::stats().task("tick").unwrap().stats.clone();
    assert_eq!((t.completions, t.deadline_misses), (1, 1));
}

/// A deadline shorter than the period, and two periodic tasks whose grids meet: releases are
/// drift-free (exact multiples of the period from the common start) however long each job
/// runs, and the higher priority runs first at every common release.
#[preempt::app(clock = mock, main = false)]
mod grids {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 5, period = 3.micros(), deadline = 2.micros())]
    fn fast(_: fast::Context) {
        preempt::sim::advance(Duration::from_nanos(700));
    }

    #[task(priority = 4, period = 6.micros())]
    fn slow(_: slow::Context) {
        preempt::sim::advance(Duration::from_nanos(1_500));
        if Instant::now() > Instant::from_nanos(12_000) {
            preempt::exit(0);
        }
    }
}

#[test]
fn grids_are_drift_free_and_the_higher_priority_runs_first() {
    let _g = serial();
    assert_eq!(grids::run(), 0);
    let starts: Vec<String> = sim::take_trace()
        .into_iter()
        .filter_map(|e| match e {
            TraceEvent::Start {
                task,
                release_ns,
                at_ns,
            } => Some(format!("{task}@{release_ns}:{at_ns}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        [
            "fast@0:0",
            "slow@0:700",
            "fast@3000:3000",
            "fast@6000:6000",
            "slow@6000:6700",
            "fast@9000:9000",
            "fast@12000:12000",
            "slow@12000:12700",
        ]
    );
    let stats = grids::stats();
    assert_eq!(stats.task("fast").unwrap().deadline_ns, Some(2_000));
    assert_eq!(stats.task("fast").unwrap().stats.deadline_misses, 0);
    assert_eq!(stats.clock, "mock");
}
