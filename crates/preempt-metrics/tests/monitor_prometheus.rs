//! The monitor engine scraped by a real Prometheus server (issue 17): the quantile Prometheus
//! computes from the exposed buckets and the missed-period counter it stores agree with the
//! monitor's own figures; `promtool check metrics` accepts the exposition; a client that never
//! sends its request does not stop the measurement or the next scrape.

#[path = "support/mod.rs"]
mod support;

use std::net::TcpStream;
use std::sync::Arc;

use preempt_io::sys::cpu;
use preempt_metrics::buckets::{BOUNDS_NS, bucket_of, prometheus_buckets};
use preempt_metrics::http::Server;
use preempt_metrics::monitor::{CheckItem, CheckStatus, Monitor, MonitorConfig, Verdict};
use prometheus_client::registry::Registry;
use support::{Prometheus, http_get, may_run, pause_ms, promtool_check};

#[test]
fn prometheus_agrees_with_the_monitor() {
    if !may_run(
        "monitor_prometheus",
        &["/usr/bin/prometheus", "/usr/bin/promtool"],
    ) {
        return;
    }
    let cpus = cpu::online_cpus().unwrap();
    let mut cfg = MonitorConfig::new(cpus.clone());
    cfg.host = "test-host".into();
    let checker = Box::new(|| {
        vec![
            CheckItem {
                id: "preempt_model".into(),
                status: CheckStatus::Warn,
            },
            CheckItem {
                id: "privilege_rtprio".into(),
                status: CheckStatus::Pass,
            },
        ]
    });
    let mut monitor = Monitor::start(cfg, Some(checker)).unwrap();
    let mut registry = Registry::default();
    registry.register_collector(monitor.collector());
    let server = Server::start("127.0.0.1:0", Arc::new(registry)).unwrap();
    let addr = server.local_addr();

    // A client that connects and never sends a request holds only its own connection.
    let _silent = TcpStream::connect(addr).unwrap();
    let before = monitor.report().cpus[0].releases;
    let (status, text) = http_get(addr, "/metrics", "");
    assert_eq!(status, 200);
    let (ok, lint) = promtool_check(&text);
    assert!(
        ok,
        "promtool check metrics rejected the exposition:\n{lint}\n{text}"
    );
    for family in [
        "preempt_monitor_latency_seconds_bucket{host=\"test-host\",cpu=\"0\",le=\"1e-06\"}",
        "preempt_monitor_missed_periods_total{",
        "preempt_monitor_deadline_misses_total{",
        "preempt_monitor_steal_seconds_total{",
        "preempt_monitor_window_max_latency_seconds{",
        "preempt_monitor_valid{",
        "preempt_check_status{host=\"test-host\",item=\"preempt_model\"} 1",
    ] {
        assert!(text.contains(family), "{family} missing:\n{text}");
    }

    let prom = Prometheus::start("preempt_monitor", &[addr]);
    pause_ms(15_000);
    assert!(monitor.running(), "measuring threads still running");
    assert!(
        monitor.report().cpus[0].releases > before + 10_000,
        "measurement went on"
    );
    let live = monitor.report();
    for c in &live.cpus {
        assert_ne!(c.verdict, Verdict::Stopped);
        assert!(c.window_max_ns > 0 && c.window_max_ns <= c.latency.max_ns.unwrap());
    }
    let report = monitor.stop().unwrap();
    for c in &report.cpus {
        let sel = format!("{{job=\"preempt_monitor\",cpu=\"{}\"}}", c.cpu);
        // Wait for a scrape of the final figures (the server outlives the measuring threads).
        prom.wait_for(&format!("preempt_monitor_releases_total{sel}"), 10, |r| {
            r.len() == 1 && r[0].1 == c.releases as f64
        });
        let missed = prom.query(&format!("preempt_monitor_missed_periods_total{sel}"));
        assert_eq!(missed[0].1, c.missed_periods as f64, "cpu {}", c.cpu);
        let count = prom.query(&format!("preempt_monitor_latency_seconds_count{sel}"));
        assert_eq!(count[0].1, c.latency.count as f64);
        assert_eq!(c.latency.count + c.missed_periods, c.releases);

        let p99 = prom.query(&format!(
            "histogram_quantile(0.99, preempt_monitor_latency_seconds_bucket{sel})"
        ))[0]
            .1;
        // The bucket Prometheus interpolates in, from the same counts.
        let buckets = prometheus_buckets(&c.latency);
        let rank = 0.99 * c.latency.count as f64;
        let mut seen = 0;
        let k = buckets
            .iter()
            .position(|b| {
                seen += b.1;
                seen as f64 >= rank
            })
            .unwrap();
        assert!(k < BOUNDS_NS.len(), "p99 beyond 10 s?");
        let lo = if k == 0 {
            0.0
        } else {
            BOUNDS_NS[k - 1] as f64 / 1e9
        };
        let hi = BOUNDS_NS[k] as f64 / 1e9;
        assert!(
            lo <= p99 && p99 <= hi,
            "prometheus p99 {p99} outside bucket ({lo}, {hi}]"
        );
        // The monitor's own p99 (0.78 % resolution) lies in that bucket or, when it sits just
        // below a bound, the one below (a sample is counted one bucket high, never low).
        let own = c.latency.value_at_quantile(0.99);
        assert!(
            bucket_of(own) == k || bucket_of(own) + 1 == k,
            "own p99 {own} ns, prometheus {p99} s (bucket {k})"
        );
        eprintln!(
            "cpu {}: {} samples, {} missed, p99 own {:.1} us, prometheus {:.1} us, max {} us",
            c.cpu,
            c.latency.count,
            c.missed_periods,
            own as f64 / 1e3,
            p99 * 1e6,
            c.latency.max_ns.unwrap() / 1_000
        );
    }
    // The deploy/ files: the scrape config passes promtool, every dashboard query parses in
    // this Prometheus, and every monitor metric it names is in the exposition.
    let deploy = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy");
    let out = std::process::Command::new("/usr/bin/promtool")
        .args(["check", "config", &format!("{deploy}/prometheus.yml")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let dashboard = std::fs::read_to_string(format!("{deploy}/grafana-dashboard.json")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&dashboard).unwrap();
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter())
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .collect();
    assert!(exprs.len() >= 9, "{exprs:?}");
    for e in &exprs {
        let q = e.replace("$host", ".*").replace("$__rate_interval", "5s");
        prom.query(&q); // asserts status success
        for name in q.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if name.starts_with("preempt_monitor_") || name.starts_with("preempt_check_") {
                assert!(
                    text.contains(&format!("\n{name}")),
                    "dashboard names {name}"
                );
            }
        }
    }
    let stopped = prom.query("preempt_monitor_valid{reason=\"stopped\"}");
    assert!(
        !stopped.is_empty(),
        "the verdict says the measurement stopped"
    );
    let checks = prom.query("preempt_check_status{item=\"privilege_rtprio\"}");
    assert_eq!(checks[0].1, 3.0);
}
