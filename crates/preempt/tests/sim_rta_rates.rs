//! Response-time analysis says only what it can stand behind (issue 11, item 6), in the
//! simulator: a message-driven task without `period` or `min_interarrival` is "not analysed:
//! no declared rate" (no period is made up from the gaps seen between its releases: on real
//! threads two spawns in a row are a few ns apart), and the verdict for the tasks it can delay is "not
//! established", while a task it cannot delay keeps its bound.
//!
//! | task   | prio | release                         | C (µs) | delayed by `burst`?     |
//! |--------|------|---------------------------------|--------|-------------------------|
//! | hi     | 3    | period 1000 µs                  | 100    | no (higher priority)    |
//! | burst  | 2    | spawned twice per `hi` job      | 50     | - (no declared rate)    |
//! | rated  | 2    | spawned once, min_interarrival 1 ms | 50 | yes (same level, FIFO)  |
//! | lo     | 1    | period 4000 µs                  | 200    | yes (interference)      |

#[preempt::app(clock = mock, main = false)]
mod app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 3, period = 1000.micros())]
    fn hi(_: hi::Context) {
        preempt::sim::advance(100.micros());
        burst::spawn().unwrap();
        burst::spawn().unwrap();
        rated::spawn().unwrap();
    }

    #[task(priority = 2, capacity = 4)]
    fn burst(_: burst::Context) {
        preempt::sim::advance(50.micros());
    }

    #[task(priority = 2, min_interarrival = 1.millis())]
    fn rated(_: rated::Context) {
        preempt::sim::advance(50.micros());
    }

    #[task(priority = 1, period = 4000.micros())]
    fn lo(_: lo::Context) {
        preempt::sim::advance(200.micros());
        if Instant::now() >= Instant::from_nanos(8_000_000) {
            preempt::exit(0);
        }
    }
}

#[test]
fn a_task_without_a_declared_rate_is_not_analysed_and_what_it_delays_is_not_established() {
    assert_eq!(app::run(), 0);
    let stats = app::stats();
    assert_eq!(stats.scheduling, preempt::stats::Scheduling::Simulated);
    let burst = stats.task("burst").unwrap();
    assert!(burst.stats.completions >= 16, "{:?}", burst.stats);
    // A gap was seen (it once became "the period"); it is reported, never analysed.
    assert!(burst.min_interarrival_ns.is_some(), "{burst:?}");

    let (tasks, notes) = stats.rta_tasks();
    let analysed: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(analysed, ["lo", "rated", "hi"]);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("`burst` not analysed: no declared rate")),
        "{notes:?}"
    );
    let report = app::rta().unwrap();
    assert!(report.schedulable(), "{report}");
    assert_eq!(report.task("hi").unwrap().response_ns, 100_000);

    let verdict = stats.verdict();
    assert_eq!(
        verdict,
        preempt::stats::Verdict::NotEstablished {
            unrated: vec!["burst".into()],
            affected: vec!["lo".into(), "rated".into()],
        }
    );
    let summary = stats.summary().to_string();
    assert!(
        summary.contains(
            "verdict: not established: `burst` without a declared rate can delay `lo`, `rated`"
        ),
        "{summary}"
    );
    assert!(
        !summary.contains("verdict: schedulable") && !summary.contains("inter-arrival seen"),
        "{summary}"
    );
    let json: serde_json::Value = serde_json::from_str(&stats.to_json()).unwrap();
    assert_eq!(json["scheduling"], "simulated");
}
