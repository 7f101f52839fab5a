//! One demo run: the reference on virtual time, then the plant process, the controller app
//! and the recorder, then the figures.
//!
//! ```text
//!  1. check the output directory (the files are created before anything is measured)
//!  2. reference run (mock clock, this thread)          -> /gimbal/reference
//!  3. start gimbal-plant (own process group; SCHED_FIFO, pinned when allowed)
//!  4. recorder thread: bridge -> /gimbal/state, keeps the records
//!     watchdog thread: plant alive? stop flag (Ctrl-C)? -> ends the app
//!  5. the controller app runs for the duration (this thread blocks in it)
//!  6. stop the plant, read its counters, the figures
//!  7. (the caller) the figures -> gimbal.json (and the CLI's history), then the MCAP's end
//! ```
//!
//! Every way out after step 1 writes the JSON and finalises the MCAP: an interrupted run or
//! a dead plant is marked (`interrupted`, `error`) and keeps what was recorded. The figures
//! come first: [`run`] returns them with the recording's end still to write ([`McapTail`]),
//! so a second Ctrl-C while it is written (the process then stops at once) leaves a whole
//! `gimbal.json` whose `output_error` says the recording is cut. Step 1 sets
//! an earlier run's `gimbal.json`/`gimbal.mcap` aside as `gimbal.previous.*` (removed once
//! this run's JSON is written), so a run killed midway (SIGKILL, a second Ctrl-C) never
//! leaves them looking like its own, and creates no file that could be left empty: the MCAP
//! is written as `gimbal.mcap.part` until it is finished, the JSON through `gimbal.json.tmp`.
//! A controller that cannot start at all (no real-time privileges) leaves DIR as it was.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use preempt::bridge;
use preempt_io::sys::clock::{self, ClockId};

use crate::app;
use crate::control::{SAMPLE_NS, SAMPLE_S, Steps};
use crate::record::{SampleRecord, SetpointCmd};
use crate::result::{self, GimbalData, SampleCounts, TelemetryCounts};
use crate::telemetry::McapSink;
use preempt_rig::harness;
use preempt_rig::intake::Intake;
use preempt_rig::outputs::Outputs;
use preempt_rig::plant_rt::PlantConfig;
use preempt_rig::result::{ExplainOutcome, TimeSummary};
use preempt_rig::telemetry::McapTail;

/// Bridge capacity, samples: 6.5 s of telemetry, so the recorder may stall that long (disk,
/// a descheduled thread) before a sample is lost.
const BRIDGE_CAPACITY: usize = 1 << 16;
/// SCHED_FIFO priority of the plant's step loop: above the controller's (p90), as separate
/// hardware would be.
pub(crate) const PLANT_PRIORITY: u8 = 95;

/// What to run.
#[derive(Clone, Debug)]
pub struct DemoConfig {
    /// Run length, s.
    pub duration_s: f64,
    /// Setpoint script.
    pub steps: Steps,
    /// Sensor noise seed (plant and reference).
    pub seed: u64,
    /// Output directory: `gimbal.json`, `gimbal.mcap`.
    pub out_dir: PathBuf,
    /// The `gimbal-plant` binary (or a program that runs the plant after `plant_prefix`).
    pub plant_exe: PathBuf,
    /// Arguments before the plant's own (e.g. `preempt`'s hidden `__gimbal-plant`).
    pub plant_prefix: Vec<String>,
    /// CPU for the plant (None: not pinned).
    pub plant_cpu: Option<usize>,
    /// Label of the stress applied meanwhile (the caller runs it).
    pub stress: Option<String>,
    /// `--foxglove ADDR`: serve the live state and take setpoints (cargo feature `foxglove`).
    pub foxglove: Option<String>,
    /// `--ros2`: a ROS 2 node publishing the joint states and taking setpoints (cargo
    /// feature `ros2`; domain `ROS_DOMAIN_ID`).
    pub ros2: bool,
    /// `--explain`: explain the controller's deadline misses from the kernel trace (as
    /// `PREEMPT_EXPLAIN=1` does).
    pub explain: bool,
}

impl DemoConfig {
    /// Two seconds of the default script, seed 1, into `out_dir`; the plant binary next to
    /// the running one; the plant on the last CPU.
    pub fn new(out_dir: &Path) -> DemoConfig {
        DemoConfig {
            duration_s: 2.0,
            steps: Steps::default_script(),
            seed: 1,
            out_dir: out_dir.to_path_buf(),
            plant_exe: default_plant_exe(),
            plant_prefix: Vec::new(),
            plant_cpu: preempt_io::sys::cpu::online_cpus()
                .ok()
                .and_then(|c| c.last().copied()),
            stress: None,
            foxglove: None,
            ros2: false,
            explain: false,
        }
    }

    /// Samples of the run.
    pub fn samples(&self) -> u64 {
        (self.duration_s / SAMPLE_S).round() as u64
    }

    /// Checks the values.
    ///
    /// # Errors
    /// A message naming the flag.
    pub fn validate(&self) -> Result<(), String> {
        harness::check_duration(self.duration_s, 0.01)?;
        if let Some(addr) = &self.foxglove {
            #[cfg(feature = "foxglove")]
            crate::live::parse_addr(addr)?;
            #[cfg(not(feature = "foxglove"))]
            return Err(format!(
                "--foxglove {addr}: this build has no Foxglove server; build with \
                 `--features preempt-gimbal/foxglove` (the preempt CLI: `--features foxglove`)"
            ));
        }
        if self.ros2 {
            #[cfg(feature = "ros2")]
            crate::ros2::check()?;
            #[cfg(not(feature = "ros2"))]
            return Err(
                "--ros2: this build has no ROS 2 node; build with `--features \
                        preempt-gimbal/ros2` (the preempt CLI: `--features ros2`)"
                    .into(),
            );
        }
        Ok(())
    }
}

/// `gimbal-plant` next to the running executable (or one directory up, for test binaries
/// in `target/*/deps`).
pub(crate) fn default_plant_exe() -> PathBuf {
    harness::sibling_exe("gimbal-plant")
}

/// Runs the demo. `stop` is the caller's Ctrl-C flag. Returns the data, the files and the
/// recording's end: the caller saves the data with its recording's outcome
/// ([`harness::save_run`] with [`result_json`]: the figures, [`Outputs::replaced`],
/// [`McapTail::close`], the figures again with the final `output_error`, until then
/// [`McapTail::pending`]). An interrupted
/// or failed run still returns its data, marked.
///
/// # Errors
/// Bad configuration, an output file that cannot be created, the plant that cannot start,
/// or a run that could not start at all (missing privileges: the app printed the fix).
pub fn run(
    cfg: &DemoConfig,
    stop: &Arc<AtomicBool>,
) -> Result<(GimbalData, Outputs, McapTail), String> {
    cfg.validate()?;
    harness::record_into(&cfg.out_dir, "gimbal", |out| record(cfg, stop, out))
}

/// [`run`] once `out` is ready: records the run; its figures and the recording's end.
fn record(
    cfg: &DemoConfig,
    stop: &Arc<AtomicBool>,
    out: &Outputs,
) -> Result<(GimbalData, McapTail), String> {
    let base_ns = clock::now_ns(ClockId::Realtime);
    let mut sink = McapSink::create(&out.mcap, base_ns).map_err(|e| format!("--out: {e}"))?;
    let samples = cfg.samples();
    let soft = preempt::soft_requested();
    // Held for the whole run: the controller's CPU must not halt between samples (a halted
    // vCPU's wake-up costs tens of µs here, a fifth of the period). What real-time setups do;
    // without root the run goes on and says so (`cpu_dma_latency_us: null`, a warning).
    let dma = match preempt_io::sys::cpu::hold_cpu_dma_latency(0) {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!(
                "gimbal: warning: /dev/cpu_dma_latency not held at 0 ({e}): idle CPUs may halt and wake late; run as root"
            );
            None
        }
    };

    let reference = crate::reference::run(cfg.seed, &cfg.steps, samples)?;
    // The recording is optional, the figures are not: a write that fails (disk full) stops
    // the recording, not the run.
    let mcap_error = reference
        .iter()
        .try_for_each(|r| sink.reference(r))
        .err()
        .map(|e| format!("writing the reference: {e}"));

    let plant_cfg = PlantConfig {
        seed: cfg.seed,
        cpu: cfg.plant_cpu,
        priority: (!soft).then_some(PLANT_PRIORITY),
        duration_ns: None,
    };
    let harness::StartedPlant {
        plant,
        fds,
        done_ring,
    } = harness::start_plant(&cfg.plant_exe, &cfg.plant_prefix, &plant_cfg)?;

    let (tx, rx) = bridge::channel::<SampleRecord>(BRIDGE_CAPACITY);
    let (setpoints, live) = LiveEnds::start(cfg, base_ns)?;
    let records = Vec::with_capacity(usize::try_from(samples).unwrap_or(0));
    let spec = harness::RunSpec {
        name: "gimbal",
        stop,
        flags: harness::AppFlags {
            stop: &app::STOP,
            plant_dead: &app::PLANT_DEAD,
            fail: app::fail,
            plant_cpu: cfg.plant_cpu,
        },
        explain: cfg.explain,
        plant,
        done_ring,
    };
    let harness::AppRun {
        code,
        state: (records, mut sink, write_error, live),
        lost,
        plant: counters,
        plant_error,
        explained,
    } = harness::run_app(
        spec,
        rx,
        (records, sink, mcap_error, live),
        |(records, sink, error, live), r: SampleRecord| {
            live.state(&r);
            if error.is_none() {
                if let Err(e) = sink.state(&r) {
                    *error = Some(format!("writing the MCAP: {e}"));
                }
            }
            records.push(r);
        },
        || {
            app::run(app::Setup {
                fds,
                steps: cfg.steps.clone(),
                samples,
                telemetry: tx,
                setpoints,
            })
        },
        |p| p.counters(),
    )?;
    let live = live.finish();
    let stats = app::stats();
    let stats_json = stats.to_json();
    if code == 1 && records.is_empty() {
        // Never started: [`run`] gives an earlier run's files their names back.
        sink.discard();
        let why = app::ERROR
            .lock()
            .map(|e| e.clone())
            .unwrap_or_default()
            .unwrap_or_else(|| {
                "the controller could not start (see the message above: real-time privileges, or PREEMPT_SOFT=1)".into()
            });
        return Err(why);
    }
    let last_k = records.last().map_or(0, |r| r.k);
    let write_error = write_error.or_else(|| {
        sink.tasks(&stats_json, (last_k + 1) * SAMPLE_NS)
            .err()
            .map(|e| format!("writing the task statistics: {e}"))
    });
    let counts = sink.counts();
    let tail = sink.into_tail(write_error);
    let mut error = app::ERROR.lock().map(|e| e.clone()).unwrap_or_default();
    if let Some(e) = plant_error {
        error.get_or_insert(format!("stopping the plant: {e}"));
    }
    let interrupted = stop.load(Ordering::Relaxed) || code != 0 || error.is_some();
    let expected = if interrupted {
        records.last().map_or(0, |r| r.k + 1)
    } else {
        samples
    };
    let exchanged = records.len() as u64;
    let (taken, superseded) = app::LIVE_SETPOINTS.get();
    let cpu = result::cpu_per_sample(&records);
    let cpu_mean = if cpu.is_empty() {
        0.0
    } else {
        cpu.iter().sum::<u64>() as f64 / cpu.len() as f64
    };
    let data = GimbalData {
        duration_s: cfg.duration_s,
        steps: cfg.steps.to_string(),
        seed: cfg.seed,
        soft,
        interrupted,
        error,
        output_error: Some(tail.pending()),
        cpu_dma_latency_us: dma
            .as_ref()
            .map(preempt_io::sys::cpu::CpuDmaLatency::target_us),
        stress: cfg.stress.clone(),
        rtio_backend: app::BACKEND.lock().map(|b| b.clone()).unwrap_or_default(),
        axes: result::axis_quality(&cfg.steps, &records, &reference),
        samples: SampleCounts {
            expected,
            exchanged,
            late_outputs: records.iter().filter(|r| r.late_output).count() as u64,
            missed: expected.saturating_sub(exchanged),
            refused_releases: app::REFUSED.load(Ordering::Relaxed),
        },
        live_setpoints: taken,
        live_setpoints_superseded: superseded,
        live_setpoints_not_taken: live.accepted().saturating_sub(taken),
        ros2: live.ros2,
        foxglove_setpoints: live.foxglove,
        misses: result::miss_causes(&records, expected, counters.stalls),
        telemetry: TelemetryCounts {
            written: counts.state,
            lost,
            reference_written: counts.reference,
        },
        controller_cpu_per_sample_ns: TimeSummary::of(cpu.iter().copied()),
        controller_cpu_pct: 100.0 * cpu_mean / SAMPLE_NS as f64,
        exchange_ns: TimeSummary::of(records.iter().map(|r| r.exchange_ns)),
        sample_lateness_ns: TimeSummary::of(records.iter().map(|r| r.lateness_ns)),
        plant: counters,
        tasks: serde_json::from_str(&stats_json).unwrap_or(serde_json::Value::Null),
        series: result::series(&cfg.steps, &records, &reference),
        rta: {
            let (_, notes) = stats.rta_tasks();
            serde_json::json!({
                "verdict": stats.verdict().to_string(),
                "notes": notes,
                "report": match stats.rta() {
                    Ok(r) => serde_json::to_value(r).unwrap_or(serde_json::Value::Null),
                    Err(e) => serde_json::json!({"error": e.to_string()}),
                },
            })
        },
        explained: ExplainOutcome::of(explained),
    };
    Ok((data, tail))
}

/// The live views of `--foxglove` and `--ros2` (each behind its cargo feature): the
/// recorder feeds them the state, and both hand setpoints to the controller's one bridge.
#[derive(Debug, Default)]
struct LiveEnds {
    #[cfg(feature = "foxglove")]
    foxglove: Option<crate::live::Live>,
    #[cfg(feature = "ros2")]
    ros2: Option<crate::ros2::Ros2Live>,
}

/// What the live views counted (after [`LiveEnds::finish`]).
#[derive(Debug, Default)]
struct LiveCounts {
    ros2: Option<result::Ros2Counts>,
    foxglove: Option<preempt_rig::intake::IntakeCounts>,
}

impl LiveCounts {
    /// Setpoints both views handed to the controller's bridge.
    fn accepted(&self) -> u64 {
        self.ros2.as_ref().map_or(0, |r| r.setpoints_accepted)
            + self.foxglove.as_ref().map_or(0, |f| f.accepted)
    }
}

impl LiveEnds {
    /// Starts what `cfg` asks for; returns the controller's end of the setpoint bridge if
    /// any view takes setpoints. `base_ns`: the wall-clock time of grid time 0.
    fn start(
        cfg: &DemoConfig,
        base_ns: u64,
    ) -> Result<(Option<bridge::Receiver<SetpointCmd>>, LiveEnds), String> {
        if cfg.foxglove.is_none() && !cfg.ros2 {
            return Ok((None, LiveEnds::default()));
        }
        let (tx, rx) = bridge::channel(64);
        // One bridge, one intake per view (counters and a rate-limited log of its own).
        let intake = Intake::new("gimbal: ROS 2 setpoint", tx);
        let ends = LiveEnds {
            #[cfg(feature = "foxglove")]
            foxglove: match &cfg.foxglove {
                Some(addr) => Some(foxglove(addr, intake.alongside("gimbal: Foxglove"))?),
                None => None,
            },
            #[cfg(feature = "ros2")]
            ros2: if cfg.ros2 {
                Some(ros2(base_ns, intake)?)
            } else {
                None
            },
        };
        #[cfg(not(feature = "ros2"))]
        let _ = (base_ns, intake);
        Ok((Some(rx), ends))
    }

    /// Hands `r` to every view (each decides what it sends; none blocks).
    fn state(&mut self, r: &SampleRecord) {
        #[cfg(feature = "foxglove")]
        if let Some(l) = self.foxglove.as_mut() {
            l.state(r);
        }
        #[cfg(feature = "ros2")]
        if let Some(n) = self.ros2.as_mut() {
            n.state(r);
        }
        let _ = r;
    }

    /// Stops the views; what they counted.
    fn finish(self) -> LiveCounts {
        #[allow(unused_mut)]
        let mut counts = LiveCounts::default();
        #[cfg(feature = "foxglove")]
        if let Some(l) = self.foxglove {
            counts.foxglove = Some(l.stop());
        }
        #[cfg(feature = "ros2")]
        if let Some(n) = self.ros2 {
            counts.ros2 = Some(n.finish());
        }
        counts
    }
}

/// Starts the `--foxglove` server.
#[cfg(feature = "foxglove")]
fn foxglove(addr: &str, intake: Intake<SetpointCmd>) -> Result<crate::live::Live, String> {
    let addr = crate::live::parse_addr(addr)?;
    let live = crate::live::Live::start(addr, intake)?;
    eprintln!(
        "gimbal: Foxglove WebSocket server on ws://{}:{} (state on /gimbal/state; publish \
         {{\"axis\": \"pan\", \"rad\": 0.3}} on {} to move an axis)",
        addr.ip(),
        live.port(),
        crate::live::SETPOINT_TOPIC
    );
    Ok(live)
}

/// Starts the `--ros2` node.
#[cfg(feature = "ros2")]
fn ros2(base_ns: u64, intake: Intake<SetpointCmd>) -> Result<crate::ros2::Ros2Live, String> {
    let node = crate::ros2::Ros2Live::start(base_ns, intake)?;
    eprintln!(
        "gimbal: ROS 2 node /{} on domain {} ({} sensor_msgs/JointState at 1 kHz; \
         std_msgs/Float64 on {} and {} move an axis)",
        crate::ros2::NODE,
        node.domain_id(),
        crate::ros2::JOINT_STATES,
        crate::ros2::SETPOINTS[0],
        crate::ros2::SETPOINTS[1],
    );
    Ok(node)
}

/// The result file: `{schema_version, tool, kind: "demo_gimbal", complete, interrupted,
/// soft, data}`.
pub fn result_json(data: &GimbalData) -> serde_json::Value {
    serde_json::json!({
        "schema_version": 1,
        "tool": {"name": "preempt-gimbal", "version": env!("CARGO_PKG_VERSION")},
        "kind": "demo_gimbal",
        // The run's final word (a run stopped early is `interrupted`, not incomplete).
        "complete": true,
        "interrupted": data.interrupted,
        "soft": data.soft,
        "data": data,
    })
}
