//! The monitor engine on its own, serving `/metrics`, for a fixed time: a quick way to try the
//! engine without the CLI (`scripts/monitor_rss.sh` measures the release `preempt monitor`).
//!
//! `cargo run --release -p preempt-metrics --example monitor_engine -- 127.0.0.1:9464 3600 0,1`
//! (address, seconds, CPUs; needs SCHED_FIFO: root or CAP_SYS_NICE).

use std::sync::Arc;

use preempt_io::sys::clock::{self, ClockId, monotonic_now_ns};
use preempt_io::sys::cpu;
use preempt_metrics::http::Server;
use preempt_metrics::monitor::{Monitor, MonitorConfig};
use prometheus_client::registry::Registry;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let listen = args.first().map_or("127.0.0.1:9464", String::as_str);
    let seconds: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(60);
    let cpus = match args.get(2) {
        Some(list) => cpu::parse_cpu_list(list)?,
        None => cpu::online_cpus()?,
    };
    let mut monitor = Monitor::start(MonitorConfig::new(cpus), None)?;
    let mut registry = Registry::default();
    registry.register_collector(monitor.collector());
    let server = Server::start(listen, Arc::new(registry))?;
    eprintln!(
        "monitor_engine: serving http://{}/metrics for {seconds} s",
        server.local_addr()
    );
    clock::sleep_until_ns(
        ClockId::Monotonic,
        monotonic_now_ns() + seconds * 1_000_000_000,
    )?;
    let report = monitor.stop()?;
    for c in &report.cpus {
        println!(
            "cpu {}: {} samples, {} missed, p99 {} ns, max {} ns",
            c.cpu,
            c.latency.count,
            c.missed_periods,
            c.latency.value_at_quantile(0.99),
            c.latency.max_ns.unwrap_or(0)
        );
    }
    Ok(())
}
