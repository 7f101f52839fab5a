//! A short flight end to end: the simulator process, the controller app, the MCAP read back
//! by an independent reader (the Python `mcap` package), and the figures.
//!
//! Without real-time privileges the flight uses `PREEMPT_SOFT=1` (and the result says so);
//! with `PREEMPT_REQUIRE_PRIVILEGED=1` missing privileges fail the test instead.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use preempt_uav::demo::{self, FlightConfig};

mod support;
use support::privileged;

// The cascade runs in this test binary: this allocator reports its real-time jobs'
// allocations (preempt::rt_safety), checked in `abort` mode below.
#[global_allocator]
static ALLOCATOR: preempt::rt_safety::CheckedAlloc = preempt::rt_safety::CheckedAlloc::SYSTEM;

#[test]
fn a_short_flight_takes_off_records_everything_and_tracks_the_reference() {
    if !privileged() {
        assert!(
            std::env::var("PREEMPT_REQUIRE_PRIVILEGED").as_deref() != Ok("1"),
            "PREEMPT_REQUIRE_PRIVILEGED=1 but this process lacks CAP_SYS_NICE/RLIMIT_RTPRIO 99 \
             or CAP_IPC_LOCK/RLIMIT_MEMLOCK: run as root or grant them"
        );
        eprintln!("note: no real-time privileges here; flying with PREEMPT_SOFT=1");
        // SAFETY: `set_var` is unsound only while another thread reads or writes the
        // environment; this binary has this one test, and nothing else of it runs yet (libtest's
        // main thread only waits for it).
        unsafe { std::env::set_var("PREEMPT_SOFT", "1") };
    }
    // SAFETY: as above (no other thread of this binary touches the environment yet). Every
    // real-time job of the cascade is checked: a finding stops the flight (exit code 4).
    unsafe { std::env::set_var(preempt::RT_SAFETY_ENV, "abort") };
    let dir = std::env::temp_dir().join(format!("uav-flight-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cfg = FlightConfig::new(&dir);
    cfg.sim_exe = env!("CARGO_BIN_EXE_uav-sim").into();
    cfg.duration_s = 3.0; // take-off (0.5 s to 2.5 s) and the start of the hover
    let stop = Arc::new(AtomicBool::new(false));
    let (mut cell, out, tail) = demo::fly(&cfg, &stop).expect("the flight runs");
    // Until its end is written, the recording is named as cut (what a second Ctrl-C leaves).
    let pending = cell.output_error.clone().unwrap_or_default();
    assert!(pending.contains("uav.mcap.part is cut"), "{pending}");
    cell.output_error = tail.close().1;
    assert_eq!(cell.output_error, None);
    eprintln!("{cell:#?}");
    assert_eq!(cell.soft, !privileged());
    assert!(
        cell.error.is_none() && !cell.interrupted,
        "{:?}",
        cell.error
    );
    assert!(!cell.crashed && !cell.reference_crashed);
    assert_eq!(cell.expected_steps, 750);
    assert!(cell.flown_steps + cell.missed_periods == 750);
    assert!(
        cell.flown_steps > 600,
        "only {} steps flew",
        cell.flown_steps
    );
    assert!(cell.sim.steps >= 2900, "simulator: {:?}", cell.sim);
    assert_eq!(cell.sim.fifo, !cell.soft);
    // Airborne at 1 m at the end, close to the reference.
    let s = cell.series.as_ref().unwrap();
    assert_eq!(s.t_s.len() as u64, cell.flown_steps);
    assert!(
        cell.rms_position_error_m < 0.05,
        "RMS error {} m",
        cell.rms_position_error_m
    );
    assert!(cell.latency.max > 0 && cell.compute_ns.p50 > 0);

    let script = r#"
import json, sys
from mcap.reader import make_reader
counts, last, meta = {}, None, None
with open(sys.argv[1], "rb") as f:
    reader = make_reader(f)
    for m in reader.iter_metadata():
        meta = {"name": m.name, **dict(m.metadata)}
    f.seek(0)
    for schema, channel, message in make_reader(f).iter_messages():
        counts[channel.topic] = counts.get(channel.topic, 0) + 1
        if channel.topic == "/uav/state":
            last = json.loads(message.data)
print(json.dumps({"counts": counts, "last": last, "meta": meta}))
"#;
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&out.mcap)
        .output()
        .expect("python3 reads the MCAP back (pip install mcap)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["counts"]["/uav/reference"], 750);
    assert_eq!(v["meta"]["name"], "preempt.uav.flight");
    assert_eq!(v["meta"]["soft"], cell.soft.to_string());
    assert_eq!(v["meta"]["policy"], "SCHED_FIFO 99");
    assert_eq!(v["counts"]["/uav/state"], cell.flown_steps);
    let z = v["last"]["position_m"][2].as_f64().unwrap();
    assert!((z - 1.0).abs() < 0.1, "last altitude {z} m");
    let _ = std::fs::remove_dir_all(&dir);
}
