//! One flight: the reference on virtual time, then the simulator process, the controller
//! app and the recorder, then the figures.
//!
//! ```text
//!  1. check the output directory (the files are created before anything is measured)
//!  2. reference flight (mock clock, this thread)        -> /uav/reference
//!  3. start uav-sim (own process group; SCHED_FIFO 95, pinned to the last CPU when allowed)
//!  4. recorder thread: bridge -> /uav/state, keeps the records   (preempt_rig::harness)
//!     (--ros2: and publishes them; its node hands waypoints to the controller's bridge)
//!     watchdog thread: simulator alive? stop flag (Ctrl-C)? -> ends the app
//!  5. the controller app flies for the duration (this thread blocks in it)
//!  6. stop the simulator, read its counters, the figures
//!  7. (the caller) the figures -> uav.json (and the CLI's history), then the MCAP's end
//! ```
//!
//! Every way out after step 1 writes the JSON and finalises the MCAP: an interrupted flight
//! or a dead simulator is marked (`interrupted`, `error`) and keeps what was recorded. The
//! figures come first ([`fly`] returns the recording's end still to write, [`McapTail`]), so
//! a second Ctrl-C while it is written leaves a whole `uav.json` saying the recording is cut. A
//! controller that cannot start at all leaves DIR as it was (`uav.mcap.part` until the MCAP
//! is finished; the JSON only opened, not truncated, before the flight).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use preempt::bridge;
use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::sched::Policy;
use preempt_rig::harness;
pub use preempt_rig::outputs::Outputs;
use preempt_rig::plant_rt::PlantConfig;
use preempt_rig::result::TimeSummary;
use preempt_rig::telemetry::McapTail;
use serde::{Deserialize, Serialize};

use crate::app;
use crate::control::{Mission, PERIOD_NS};
use crate::record::FlightRecord;
use crate::result::{self, FlightCell};
use crate::telemetry::{McapSink, Topic};

/// Bridge capacity, records: 65 s of telemetry at 250 Hz.
const BRIDGE_CAPACITY: usize = 1 << 14;
/// SCHED_FIFO priority of the simulator's step loop (its bus thread gets one less).
pub(crate) const SIM_PRIORITY: u8 = 95;

/// The scheduling policy a flight's control thread runs under, as the study names its row.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyRow {
    /// The row's label, e.g. `SCHED_FIFO 99`.
    pub label: String,
    /// The policy.
    pub policy: Policy,
}

impl PolicyRow {
    /// Priority (FIFO/RR) or nice (OTHER).
    pub fn priority_or_nice(&self) -> Option<i32> {
        match self.policy {
            Policy::Fifo { priority } | Policy::RoundRobin { priority } => {
                Some(i32::from(priority))
            }
            Policy::Other { nice } | Policy::Batch { nice } => Some(nice),
            _ => None,
        }
    }

    /// SCHED_DEADLINE runtime, µs.
    pub fn runtime_us(&self) -> Option<u64> {
        match self.policy {
            Policy::Deadline { runtime_ns, .. } => Some(runtime_ns / 1000),
            _ => None,
        }
    }
}

/// What to fly.
#[derive(Clone, Debug)]
pub struct FlightConfig {
    /// Flight length, s (the mission is cut there; its own length is the default).
    pub duration_s: f64,
    /// The mission.
    pub mission: Mission,
    /// Sensor noise seed (simulator and reference).
    pub seed: u64,
    /// The control thread's policy.
    pub policy: PolicyRow,
    /// Output directory: `uav.json`, `uav.mcap`.
    pub out_dir: PathBuf,
    /// The `uav-sim` binary (or a program that runs the simulator after `sim_prefix`).
    pub sim_exe: PathBuf,
    /// Arguments before the simulator's own (e.g. `preempt`'s hidden `__uav-sim`).
    pub sim_prefix: Vec<String>,
    /// CPU for the simulator (None: not pinned).
    pub sim_cpu: Option<usize>,
    /// Label of the stress applied meanwhile (`none` when idle; the caller runs it).
    pub stress: String,
    /// `--explain`: explain the control task's deadline misses from the kernel trace (as
    /// `PREEMPT_EXPLAIN=1` does).
    pub explain: bool,
    /// `--ros2`: a ROS 2 node publishing the pose, odometry and reference and taking
    /// waypoints (cargo feature `ros2`; domain `ROS_DOMAIN_ID`).
    pub ros2: bool,
}

impl FlightConfig {
    /// The whole default mission, seed 1, SCHED_FIFO 99, idle, into `out_dir`; the
    /// simulator binary next to the running one, on the last CPU.
    pub fn new(out_dir: &Path) -> FlightConfig {
        let mission = Mission::default();
        FlightConfig {
            duration_s: mission.duration_s(),
            mission,
            seed: 1,
            policy: PolicyRow {
                label: "SCHED_FIFO 99".into(),
                policy: Policy::Fifo { priority: 99 },
            },
            out_dir: out_dir.to_path_buf(),
            sim_exe: harness::sibling_exe("uav-sim"),
            sim_prefix: Vec::new(),
            sim_cpu: preempt_io::sys::cpu::online_cpus()
                .ok()
                .and_then(|c| c.last().copied()),
            stress: "none".into(),
            explain: false,
            ros2: false,
        }
    }

    /// Checks what must be right before anything starts: the duration, and what `--ros2`
    /// needs (the feature, `ROS_DOMAIN_ID`, a network interface).
    ///
    /// # Errors
    /// A message naming the flag, variable or fix.
    pub fn validate(&self) -> Result<(), String> {
        self.samples()?;
        if self.ros2 {
            #[cfg(feature = "ros2")]
            crate::ros2::check()?;
            #[cfg(not(feature = "ros2"))]
            return Err(
                "--ros2: this build has no ROS 2 node; build with `--features \
                        preempt-uav/ros2` (the preempt CLI: `--features ros2`)"
                    .into(),
            );
        }
        Ok(())
    }

    /// Control steps of the flight, and checks the duration.
    ///
    /// # Errors
    /// A message naming `--duration`.
    pub fn samples(&self) -> Result<u64, String> {
        harness::check_duration(self.duration_s, 0.1)?;
        Ok((self.duration_s * 1e9 / PERIOD_NS as f64).round() as u64)
    }
}

/// The `data` of a `demo_uav` result: the mission and one cell per flight.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UavData {
    /// Flight length per cell, s.
    pub duration_s: f64,
    /// Mission length, s (a shorter flight flies its beginning).
    pub mission_s: f64,
    /// The square's window in mission time, s.
    pub square_window_s: (f64, f64),
    /// Sensor noise seed.
    pub seed: u64,
    /// Soft mode (SCHED_OTHER, no policy applied): not real-time figures.
    pub soft: bool,
    /// A matrix run (the study's 8 policies × idle/stress).
    pub matrix: bool,
    /// Some cell did not finish (it is then marked, or "not measured" in a matrix).
    pub interrupted: bool,
    /// The flights.
    pub cells: Vec<FlightCell>,
}

/// Flies once. `stop` is the caller's Ctrl-C flag. Returns the cell, the files and the
/// recording's end: the caller writes the result file, then [`McapTail::close`]s the
/// recording and writes the cell's final `output_error` (until then [`McapTail::pending`]).
/// An interrupted or failed flight still returns its figures, marked.
///
/// # Errors
/// Bad configuration, an output file that cannot be created, the simulator that cannot
/// start, or a flight that could not start at all (missing privileges: the app printed the
/// fix).
pub fn fly(
    cfg: &FlightConfig,
    stop: &Arc<AtomicBool>,
) -> Result<(FlightCell, Outputs, McapTail), String> {
    cfg.validate()?;
    let samples = cfg.samples()?;
    // An earlier flight's uav.json/uav.mcap are set aside as uav.previous.* until the caller
    // has written this one's ([`Outputs::replaced`]).
    harness::record_into(&cfg.out_dir, "uav", |out| record(cfg, stop, out, samples))
}

/// [`fly`] once `out` is ready: flies and records; the cell and the recording's end.
fn record(
    cfg: &FlightConfig,
    stop: &Arc<AtomicBool>,
    out: &Outputs,
    samples: u64,
) -> Result<(FlightCell, McapTail), String> {
    let base_ns = clock::now_ns(ClockId::Realtime);
    let mut sink = McapSink::create(&out.mcap, base_ns).map_err(|e| format!("--out: {e}"))?;
    let soft = preempt::soft_requested();

    let reference = crate::reference::run(cfg.seed, &cfg.mission, samples)?;
    // The recording is optional, the figures are not: a write that fails (disk full) stops
    // the recording, not the flight.
    let mcap_error = sink
        .describe(&[
            ("policy", cfg.policy.label.clone()),
            ("stress", cfg.stress.clone()),
            ("seed", cfg.seed.to_string()),
            ("soft", soft.to_string()),
        ])
        .and_then(|()| {
            reference
                .iter()
                .try_for_each(|r| sink.write(Topic::Reference, r))
        })
        .err()
        .map(|e| format!("writing the reference: {e}"));

    // The ROS 2 node joins before the simulator starts: a DDS that refuses leaves nothing
    // running.
    let (waypoints, live) = Live::start(cfg, base_ns)?;
    let sim_cfg = PlantConfig {
        seed: cfg.seed,
        cpu: cfg.sim_cpu,
        priority: (!soft).then_some(SIM_PRIORITY),
        duration_ns: None,
    };
    let harness::StartedPlant {
        plant: sim,
        fds,
        done_ring,
    } = harness::start_plant(&cfg.sim_exe, &cfg.sim_prefix, &sim_cfg)?;

    let (tx, rx) = bridge::channel::<FlightRecord>(BRIDGE_CAPACITY);
    let records = Vec::with_capacity(usize::try_from(samples).unwrap_or(0));
    let spec = harness::RunSpec {
        name: "uav",
        stop,
        flags: harness::AppFlags {
            stop: &app::STOP,
            plant_dead: &app::SIM_DEAD,
            fail: app::fail,
            plant_cpu: cfg.sim_cpu,
        },
        explain: cfg.explain,
        plant: sim,
        done_ring,
    };
    let harness::AppRun {
        code,
        state: (records, sink, write_error, live),
        lost,
        plant: (counters, sim_crashed),
        plant_error: sim_error,
        explained,
    } = harness::run_app(
        spec,
        rx,
        (records, sink, mcap_error, live),
        |(records, sink, error, live), r: FlightRecord| {
            live.state(&r);
            if error.is_none() {
                if let Err(e) = sink.write(Topic::State, &r) {
                    *error = Some(format!("writing the MCAP: {e}"));
                }
            }
            records.push(r);
        },
        || {
            app::run(app::Setup {
                fds,
                mission: cfg.mission,
                samples,
                policy: (!soft).then_some(cfg.policy.policy),
                telemetry: tx,
                waypoints,
            })
        },
        |p| {
            let flags = p.bus.map.load_u64(preempt_rig::page::STAT_FLAGS);
            (p.counters(), flags & crate::sim::FLAG_CRASHED != 0)
        },
    )?;
    let ros2 = live.finish();
    let app_error = app::ERROR.lock().map(|e| e.clone()).unwrap_or_default();
    if code == 1 && records.is_empty() {
        // Never started: [`fly`] gives an earlier flight's files their names back.
        sink.discard();
        return Err(app_error.unwrap_or_else(|| {
            "the controller could not start (see the message above: real-time privileges, or PREEMPT_SOFT=1)".into()
        }));
    }
    let tail = sink.into_tail(write_error);
    let mut error = app_error;
    if let Some(e) = sim_error {
        error.get_or_insert(format!("stopping the simulator: {e}"));
    }
    let interrupted = stop.load(Ordering::Relaxed) || code != 0 || error.is_some();
    let expected = if interrupted {
        records.last().map_or(0, |r| r.k + 1)
    } else {
        samples
    };
    let (taken, superseded) = app::LIVE_WAYPOINTS.get();
    let mut cell = FlightCell {
        policy: cfg.policy.label.clone(),
        priority_or_nice: cfg.policy.priority_or_nice(),
        runtime_us: cfg.policy.runtime_us(),
        stress: cfg.stress.clone(),
        soft,
        interrupted,
        error,
        output_error: Some(tail.pending()),
        expected_steps: expected,
        telemetry_lost: lost,
        live_waypoints: taken,
        live_waypoints_superseded: superseded,
        live_waypoints_not_taken: ros2
            .as_ref()
            .map_or(0, |r| r.setpoints_accepted.saturating_sub(taken)),
        ros2,
        sim: counters,
        rtio_backend: app::BACKEND.lock().map(|b| b.clone()).unwrap_or_default(),
        explained: preempt_rig::result::ExplainOutcome::of(explained),
        ..FlightCell::default()
    };
    result::fill_quality(&mut cell, &cfg.mission, &records, &reference);
    // The runtime's exact release latency of `control` replaces the grid-based summary; its
    // execution time per job is the controller's CPU per step.
    let stats = app::stats();
    if let Some(t) = stats.tasks.iter().find(|t| t.stats.name == "control") {
        if let Some(s) = TimeSummary::of_snapshot(&t.stats.release_latency) {
            cell.latency = s;
        }
        cell.control_exec_ns =
            TimeSummary::of_snapshot(&t.stats.execution_time).unwrap_or_default();
    }
    cell.missed_periods = expected.saturating_sub(cell.flown_steps);
    cell.crashed |= sim_crashed; // also a crash after the last frame
    Ok((cell, tail))
}

/// The `--ros2` node, when the flight has one (cargo feature `ros2`): the recorder feeds it
/// every step; it hands waypoints to the controller's bridge.
#[derive(Debug, Default)]
struct Live {
    #[cfg(feature = "ros2")]
    ros2: Option<crate::ros2::Ros2Live>,
}

impl Live {
    /// Starts what `cfg` asks for; the controller's end of the waypoint bridge if it does.
    /// `base_ns`: the wall-clock time of grid time 0.
    fn start(
        cfg: &FlightConfig,
        base_ns: u64,
    ) -> Result<(Option<bridge::Receiver<crate::model::V3>>, Live), String> {
        if !cfg.ros2 {
            return Ok((None, Live::default()));
        }
        let (tx, rx) = bridge::channel::<crate::model::V3>(64);
        #[cfg(feature = "ros2")]
        {
            use crate::ros2::{NODE, ODOM, POSE, REFERENCE, Ros2Live, WAYPOINT};
            let node = Ros2Live::start(base_ns, tx)?;
            eprintln!(
                "uav: ROS 2 node /{NODE} on domain {} ({POSE} geometry_msgs/PoseStamped, {ODOM} \
                 nav_msgs/Odometry, {REFERENCE} geometry_msgs/PoseStamped at 250 Hz; a \
                 geometry_msgs/PoseStamped on {WAYPOINT} moves the vehicle there)",
                node.domain_id()
            );
            Ok((Some(rx), Live { ros2: Some(node) }))
        }
        #[cfg(not(feature = "ros2"))]
        {
            let _ = (base_ns, tx, rx);
            Err("--ros2: this build has no ROS 2 node (cargo feature `ros2`)".into())
        }
    }

    /// Hands step `r` to the node (never blocks).
    fn state(&mut self, r: &FlightRecord) {
        #[cfg(feature = "ros2")]
        if let Some(n) = self.ros2.as_mut() {
            n.state(r);
        }
        let _ = r;
    }

    /// Stops the node; its counts.
    fn finish(self) -> Option<preempt_rig::result::Ros2Counts> {
        #[cfg(feature = "ros2")]
        return self.ros2.map(crate::ros2::Ros2Live::finish);
        #[cfg(not(feature = "ros2"))]
        None
    }
}

/// The result file's JSON: `{schema_version, tool, kind: "demo_uav", complete, interrupted,
/// soft, data}` (the CLI writes its own envelope with system information around the same
/// `data`).
pub fn result_json(data: &UavData) -> serde_json::Value {
    serde_json::json!({
        "schema_version": 1,
        "tool": {"name": "preempt-uav", "version": env!("CARGO_PKG_VERSION")},
        "kind": "demo_uav",
        // The run's final word (a run stopped early is `interrupted`, not incomplete).
        "complete": true,
        "interrupted": data.interrupted,
        "soft": data.soft,
        "data": data,
    })
}

/// One flight's data.
pub fn single(cfg: &FlightConfig, cell: FlightCell) -> UavData {
    UavData {
        duration_s: cfg.duration_s,
        mission_s: cfg.mission.duration_s(),
        square_window_s: cfg.mission.square_window(),
        seed: cfg.seed,
        soft: cell.soft,
        matrix: false,
        interrupted: cell.interrupted,
        cells: vec![cell],
    }
}
