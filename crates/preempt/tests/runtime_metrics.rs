//! App metrics (issue 17): a small periodic app with `metrics = ".."` and `PREEMPT_METRICS`,
//! scraped by a real Prometheus server and by a tight scrape loop at the same time; the
//! executor thread allocates nothing meanwhile, the exposition passes `promtool check
//! metrics`, and Prometheus stores the task's counters.
//!
//! The app runs in a child process (this binary re-executed, see `support/child.rs`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[path = "support/child.rs"]
mod child_process;
#[path = "support/counting_alloc.rs"]
mod counting_alloc;
#[path = "../../preempt-metrics/tests/support/mod.rs"]
mod prom;

use child_process::{run_child, run_requested_app, text};

/// A 1 ms periodic task; the port in the macro is replaced by `PREEMPT_METRICS`.
#[preempt::app(main = false, metrics = "127.0.0.1:9")]
mod metrics_app {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        stop::spawn_after(5.secs()).unwrap();
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 2, period = 1.millis(), local = [first: bool = true])]
    fn tick(cx: tick::Context) {
        if *cx.local.first {
            *cx.local.first = false;
            super::counting_alloc::count_this_thread();
        }
        std::hint::black_box(());
    }

    #[task(priority = 1)]
    fn stop(_: stop::Context) {
        let n = super::counting_alloc::THREAD_ALLOCATIONS.load(super::Ordering::SeqCst);
        println!("allocations on the periodic task's thread while scraped: {n}");
        preempt::exit(0);
    }
}

#[test]
fn child() {
    run_requested_app(&[("metrics_app", metrics_app::run)]);
}

#[test]
fn a_periodic_app_is_scraped_without_allocating_on_its_executor() {
    if !prom::may_run(
        "runtime_metrics",
        &["/usr/bin/prometheus", "/usr/bin/promtool"],
    ) {
        return;
    }
    let addr: SocketAddr = format!("127.0.0.1:{}", prom::free_port()).parse().unwrap();
    let prometheus = prom::Prometheus::start("app", &[addr]);
    // Prometheus applies a new target list after up to 5 s: wait until it scrapes ours
    // (`up` is recorded, 0 while nothing listens), so the 5 s app is scraped about 5 times.
    prometheus.wait_for("up{job=\"app\"}", 30, |r| !r.is_empty());
    // A scraper as fast as it can go, besides Prometheus' once a second.
    let done = Arc::new(AtomicBool::new(false));
    let scraper = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let (mut ok, mut last) = (0u32, String::new());
            while !done.load(Ordering::Acquire) {
                let (status, body) = prom::http_get(addr, "/metrics", "");
                if status == 200 {
                    ok += 1;
                    last = body;
                }
                prom::pause_ms(2);
            }
            (ok, last)
        })
    };
    let out = run_child(
        "metrics_app",
        &[("PREEMPT_METRICS", &addr.to_string())],
        2,
        Duration::from_secs(60),
    );
    done.store(true, Ordering::Release);
    let (scrapes, body) = scraper.join().unwrap();
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("serves its metrics at http://{addr}/metrics")),
        "{stderr}"
    );
    assert!(
        stdout.contains("allocations on the periodic task's thread while scraped: 0\n"),
        "{stdout}"
    );
    assert!(scrapes >= 100, "only {scrapes} scrapes served");
    for family in [
        "preempt_task_releases_total{app=\"metrics_app\",task=\"tick\"}",
        "preempt_task_deadline_misses_total{app=\"metrics_app\",task=\"tick\"}",
        "preempt_task_release_latency_seconds_bucket{app=\"metrics_app\",task=\"tick\",le=\"1e-06\"}",
        "preempt_task_execution_time_max_seconds{app=\"metrics_app\",task=\"tick\"}",
        "preempt_task_execution_time_seconds_bucket{app=\"metrics_app\",task=\"tick\",le=\"1e-06\"}",
        "preempt_task_execution_time_seconds_count{app=\"metrics_app\",task=\"tick\"}",
    ] {
        assert!(body.contains(family), "{family} missing:\n{body}\n{stderr}");
    }
    // The verdict is served; 1 on a quiet host, but a loaded one can stretch a measured
    // execution time past what the analysis allows, which is a true 0, not a failure.
    assert!(
        body.contains("preempt_app_schedulable{app=\"metrics_app\"} 1")
            || body.contains("preempt_app_schedulable{app=\"metrics_app\"} 0"),
        "no verdict:\n{body}"
    );
    // Every per-task metric the deploy/ dashboard queries is served.
    let dashboard = include_str!("../../../deploy/grafana-dashboard.json");
    for name in dashboard.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if name.starts_with("preempt_task_") || name.starts_with("preempt_app_") {
            assert!(
                body.contains(&format!("\n{name}")),
                "dashboard names {name}"
            );
        }
    }
    let (ok, lint) = prom::promtool_check(&body);
    assert!(ok, "promtool check metrics:\n{lint}\n{body}");
    // The target is gone (the app ended), so its series are stale now: look back a minute.
    let releases = prometheus
        .query("max_over_time(preempt_task_releases_total{job=\"app\",task=\"tick\"}[1m])");
    assert_eq!(
        releases.len(),
        1,
        "{releases:?}; scrapes of the target: {:?}",
        prometheus.query("count_over_time(up{job=\"app\"}[1m])")
    );
    assert!(releases[0].1 > 1_000.0, "{releases:?}");
    let p99 = prometheus.query(
        "histogram_quantile(0.99, max_over_time(preempt_task_release_latency_seconds_bucket{job=\"app\",task=\"tick\"}[1m]))",
    );
    assert!(p99[0].1 > 0.0 && p99[0].1 < 0.1, "{p99:?}");
    // The execution-time histogram counts every completed job (same scrape; a job may complete
    // between the snapshot's read of the counter and of the buckets: one apart at most), and
    // its p99 lies within a bucket (bounds at most x1.5 apart, the first from 0 to 1 us) of
    // the exact maximum the executor measured.
    let at_end = |q: &str| {
        let r = prometheus.query(&format!(
            "max_over_time({q}{{job=\"app\",task=\"tick\"}}[1m])"
        ));
        assert_eq!(r.len(), 1, "{q}: {r:?}");
        r[0].1
    };
    let completions = at_end("preempt_task_completions_total");
    assert!(completions > 1_000.0, "{completions}");
    let counted = at_end("preempt_task_execution_time_seconds_count");
    assert!(
        (counted - completions).abs() <= 1.0,
        "{counted} execution times, {completions} completions"
    );
    let exec_max = at_end("preempt_task_execution_time_max_seconds");
    let exec_p99 = prometheus.query(
        "histogram_quantile(0.99, max_over_time(preempt_task_execution_time_seconds_bucket{job=\"app\",task=\"tick\"}[1m]))",
    );
    assert_eq!(exec_p99.len(), 1, "{exec_p99:?}");
    assert!(
        exec_p99[0].1 > 0.0 && exec_p99[0].1 <= 1.5 * exec_max.max(1e-6),
        "execution-time p99 {exec_p99:?}, exact max {exec_max} s"
    );
}
