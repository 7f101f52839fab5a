//! The spawned simulator runs in a process group of its own, so a terminal's Ctrl-C (sent to
//! the foreground process group) reaches the reader and not the simulated sensor; and it is
//! gone once the reader stops it.

use std::path::Path;

use preempt_imu_sim::sim::SimConfig;
use preempt_imu_sim::spawn::SimProcess;

/// Field 5 of `/proc/<pid>/stat` (the process group), read after the `)` that ends `comm`.
fn pgrp(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

#[test]
fn the_simulator_leads_its_own_process_group() {
    let cfg = SimConfig {
        odr_hz: 3200,
        ..SimConfig::default()
    };
    let mut sim = SimProcess::spawn(Path::new(env!("CARGO_BIN_EXE_imu-sim")), &cfg).unwrap();
    let pid = sim.pid().unwrap();
    let own = pgrp(std::process::id()).unwrap();
    assert_eq!(pgrp(pid), Some(pid), "imu-sim leads a process group");
    assert_ne!(pgrp(pid), Some(own), "not the reader's (terminal's) group");
    sim.stop().unwrap();
    assert!(
        pgrp(pid).is_none_or(|g| g != pid),
        "imu-sim {pid} still exists after stop"
    );
}
