//! Response-time analysis from measurements, end to end: three periodic tasks run in the
//! simulator (which preempts like one SCHED_FIFO CPU and measures execution times exactly),
//! `app::rta()` analyses what `app::stats()` measured, and the bounds are the textbook
//! values. At the critical instant (every task released at once, at the start) the lowest
//! priority's simulated response time meets its bound exactly, and no task's measured
//! response exceeds its bound.
//!
//! The set (times in µs; `buf` is a PCP resource of `mid` and `lo`, ceiling 2):
//!
//! | task | prio | T    | C    | critical section | B   | R (Joseph & Pandya)                |
//! |------|------|------|------|------------------|-----|------------------------------------|
//! | hi   | 3    | 1000 | 200  | -                | 0   | 200                                |
//! | mid  | 2    | 2000 | 300  | buf 50           | 100 | 300 + 100 + ⌈R/1000⌉·200 = 600      |
//! | lo   | 1    | 4000 | 1000 | buf 100          | 0   | 1000 + ⌈R/1000⌉·200 + ⌈R/2000⌉·300 = 1700 |

#[preempt::app(clock = mock, main = false)]
mod app {
    #[shared]
    struct Shared {
        buf: u64,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared { buf: 0 }, Local {}, init::Monotonics())
    }

    #[task(priority = 3, period = 1000.micros())]
    fn hi(_: hi::Context) {
        preempt::sim::advance(200.micros());
    }

    #[task(priority = 2, period = 2000.micros(), shared = [buf])]
    fn mid(cx: mid::Context) {
        preempt::sim::advance(250.micros());
        cx.shared.buf.lock(|b| {
            preempt::sim::advance(50.micros());
            *b += 1;
        });
    }

    #[task(priority = 1, period = 4000.micros(), shared = [buf])]
    fn lo(cx: lo::Context) {
        cx.shared.buf.lock(|b| {
            preempt::sim::advance(100.micros());
            *b += 10;
        });
        preempt::sim::advance(900.micros());
        if Instant::now() >= Instant::from_nanos(8_000_000) {
            preempt::exit(0);
        }
    }
}

#[test]
fn measured_response_times_meet_the_analysis() {
    assert_eq!(app::run(), 0);
    let stats = app::stats();
    let exec = |name: &str| stats.task(name).unwrap().stats.exec_max_ns;
    // Execution times exclude preemption: exactly what each job advanced.
    assert_eq!(exec("hi"), Some(200_000));
    assert_eq!(exec("mid"), Some(300_000));
    assert_eq!(exec("lo"), Some(1_000_000));
    let buf_lo = stats
        .locks
        .iter()
        .find(|l| l.task == "lo" && l.resource == "buf")
        .unwrap();
    assert_eq!(
        (buf_lo.longest_ns, buf_lo.max_per_job, buf_lo.ceiling),
        (100_000, 1, 2)
    );

    let report = app::rta().unwrap();
    assert!(report.schedulable(), "{report}");
    let r = |name: &str| report.task(name).unwrap();
    assert_eq!(r("hi").response_ns, 200_000);
    assert_eq!(r("mid").blocking_ns, 100_000);
    assert_eq!(r("mid").response_ns, 600_000);
    assert_eq!(r("lo").blocking_ns, 0);
    assert_eq!(r("lo").response_ns, 1_700_000);
    assert_eq!(r("lo").margin_ns, 2_300_000);

    for t in &report.tasks {
        let measured = stats.task(&t.name).unwrap().stats.response_max_ns.unwrap();
        assert!(
            measured <= t.response_ns,
            "{}: measured {measured} ns > bound {} ns",
            t.name,
            t.response_ns
        );
    }
    // The critical instant at t = 0 is the worst case of `lo`: the bound is tight.
    assert_eq!(
        stats.task("lo").unwrap().stats.response_max_ns,
        Some(1_700_000)
    );
    // `lo` started after `hi` and `mid`: 500 µs of release latency.
    assert_eq!(
        stats.task("lo").unwrap().stats.release_latency.max_ns,
        Some(500_000)
    );

    // The JSON export of a simulated run is deterministic: a snapshot of the schema.
    insta::assert_snapshot!("sim_rta_stats_json", stats.to_json());

    // The exit summary shows the same analysis.
    let summary = stats.summary().to_string();
    assert!(summary.contains("verdict: schedulable"), "{summary}");
    assert!(
        summary.contains("buf in lo (prio 1, ceiling 2)"),
        "{summary}"
    );
}
