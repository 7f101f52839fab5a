//! The flight controller as a preempt app: one periodic task at 250 Hz, deadline = period.
//!
//! ```text
//!  bus_setup (p90, once)  t0; the cell's scheduling policy on this executor thread; the
//!                         RTIO exchange (created on the submitting thread: SINGLE_ISSUER)
//!  control (p90, every 4 ms, deadline 4 ms, on_miss = Skip)
//!    exchange 1: previous rotor commands out, sensor frame in
//!    waypoint:   a live one (`--ros2`) from its bridge, try_recv (never blocks)
//!    cascade:    position -> attitude -> allocator        (timed: the compute time)
//!    exchange 2: the new rotor commands out
//!    telemetry record -> bridge -> non-real-time side (never blocks; a full ring is counted)
//! ```
//!
//! The policy: preempt's executors are SCHED_FIFO at the task's priority; to fly the study's
//! rows (SCHED_OTHER nice 0/−19, SCHED_RR, SCHED_FIFO 50/99, SCHED_DEADLINE) the set-up job
//! switches its own executor thread, the one that runs `control`, to the requested policy.
//! The app is not pinned (`cores` unset), because SCHED_DEADLINE refuses a thread whose
//! affinity is narrower than its root domain.
//!
//! One app per process (preempt's rule): [`run`] takes its inputs through a hand-off slot.

use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64};

use preempt::bridge::{Receiver, Sender};
use preempt_io::sys::sched::Policy;
use preempt_rig::intake::Taken;

use crate::control::Mission;
use crate::model::V3;
use crate::record::FlightRecord;

/// Exit code of the app when the simulator died mid-run.
pub const EXIT_SIM_DIED: i32 = 5;

/// Set by the watchdog when the simulator is gone (it then rings `done`).
pub(crate) static SIM_DEAD: AtomicBool = AtomicBool::new(false);
/// Set when the run should end early (Ctrl-C, SIGTERM).
pub(crate) static STOP: AtomicBool = AtomicBool::new(false);
static T0: AtomicU64 = AtomicU64::new(0);
/// Live waypoints the controller took (`--ros2`'s `/uav/waypoint`), and how many of them a
/// later one replaced in the same step.
pub(crate) static LIVE_WAYPOINTS: Taken = Taken::new();
/// The RTIO backend the exchange uses.
pub(crate) static BACKEND: Mutex<String> = Mutex::new(String::new());
/// The error that stopped the run, if any.
pub(crate) static ERROR: Mutex<Option<String>> = Mutex::new(None);

/// What the app needs from its caller.
#[derive(Debug)]
pub struct Setup {
    /// (page, doorbell, done) of the simulator's bus.
    pub fds: [OwnedFd; 3],
    /// The mission.
    pub mission: Mission,
    /// Control steps to run.
    pub samples: u64,
    /// The policy of the control thread (None: the executor's SCHED_FIFO 90, or SCHED_OTHER
    /// in soft mode).
    pub policy: Option<Policy>,
    /// Telemetry to the non-real-time side.
    pub telemetry: Sender<FlightRecord>,
    /// Live waypoints from the non-real-time side (checked there; the last one taken wins).
    pub waypoints: Option<Receiver<V3>>,
}

static SETUP: Mutex<Option<Setup>> = Mutex::new(None);

/// Runs the flight controller with `setup`; returns its exit code (0, 1 for a set-up
/// failure or missing privileges, [`EXIT_SIM_DIED`]). Once per process.
pub fn run(setup: Setup) -> i32 {
    *SETUP.lock().unwrap_or_else(|e| e.into_inner()) = Some(setup);
    flight::run()
}

/// The app's accounting (after [`run`]): the runtime's own release latency of `control`
/// (start − scheduled release), its skipped releases and deadline misses.
pub fn stats() -> preempt::AppStats {
    flight::stats()
}

fn now_ns() -> u64 {
    preempt::Instant::now().as_nanos()
}

/// Records why the flight ended (the first reason recorded wins).
pub fn fail(msg: String) {
    ERROR
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert(msg);
}

#[preempt::app(main = false)]
mod flight {
    use std::os::fd::OwnedFd;
    use std::sync::atomic::Ordering;

    use preempt::bridge::{Receiver, Sender};
    use preempt_io::sys::sched::{self, Policy};
    use preempt_rig::exchange;
    use preempt_rig::grid::Grid;

    use super::{LIVE_WAYPOINTS, SIM_DEAD, STOP, T0};
    use crate::control::{Controller, Mission, PERIOD_NS, PERIOD_S, take_waypoints};
    use crate::frame::{Command, RX_LEN, SensorFrame, TX_LEN};
    use crate::model::{Params, V3};
    use crate::record::FlightRecord;

    #[local]
    struct Local {
        fds: Option<[OwnedFd; 3]>,
        policy: Option<Policy>,
        mission: Mission,
        samples: u64,
        telemetry: Sender<FlightRecord>,
        waypoints: Option<Receiver<V3>>,
        waypoint: Option<V3>,
        grid: Option<Grid>,
        controller: Controller,
        last: Command,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        let setup = preempt_rig::harness::take_setup(&super::SETUP);
        bus_setup::spawn().expect("bus_setup has a free slot at start-up");
        (
            Shared {},
            Local {
                fds: Some(setup.fds),
                policy: setup.policy,
                mission: setup.mission,
                samples: setup.samples,
                telemetry: setup.telemetry,
                waypoints: setup.waypoints,
                waypoint: None,
                grid: None,
                controller: Controller::new(Params::default()),
                last: Command::default(),
            },
            init::Monotonics(),
        )
    }

    #[shared]
    struct Shared {}

    /// Runs first when the gate opens: the grid's start, the policy, the exchange.
    #[task(priority = 90, local = [fds, policy])]
    fn bus_setup(cx: bus_setup::Context) {
        T0.store(super::now_ns(), Ordering::Release);
        if let Some(p) = cx.local.policy.take() {
            if let Err(e) = sched::set_current_thread_policy(&p) {
                super::fail(format!(
                    "cannot run the control thread as {}: {e}",
                    p.name()
                ));
                preempt::exit(1);
                return;
            }
        }
        // The RTIO context must be created by the thread that submits to it (SINGLE_ISSUER):
        // this once-per-run set-up (allocations, the ring's mmap, a sysctl read) is accepted
        // on the real-time thread; the control jobs are checked (preempt::rt_safety).
        let fds = cx.local.fds.take();
        let set_up = preempt::rt_safety::allow(|| {
            exchange::set_up_here(fds, TX_LEN, RX_LEN, &super::BACKEND)
        });
        if let Err(e) = set_up {
            super::fail(e);
            preempt::exit(1);
        }
    }

    /// The 250 Hz cascade.
    #[task(
        priority = 90,
        period = 4.millis(),
        deadline = 4.millis(),
        on_miss = Skip,
        local = [mission, samples, telemetry, waypoints, waypoint, grid, controller, last]
    )]
    fn control(cx: control::Context) {
        let start = super::now_ns();
        let grid = cx
            .local
            .grid
            .get_or_insert_with(|| Grid::new(T0.load(Ordering::Acquire), PERIOD_NS));
        let (k, skipped) = grid.label(start);
        let release = grid.release_ns(k);
        let t0 = grid.t0();
        let mut rx = [0_u8; RX_LEN];
        let mut ack = [0_u8; RX_LEN];
        let ex_start = super::now_ns();
        let got = exchange::with_here(|x| x.transfer_bytes(&cx.local.last.encode(), &mut rx));
        let ex1_ns = super::now_ns().saturating_sub(ex_start);
        if !check(got) {
            return;
        }
        let frame = SensorFrame::decode(&rx);
        let c0 = super::now_ns();
        // A live waypoint (never blocks: try_recv) replaces the mission's position from now on.
        if let Some(rx) = cx.local.waypoints.as_mut() {
            take_waypoints(rx, cx.local.waypoint, &LIVE_WAYPOINTS);
        }
        let sp = cx
            .local
            .mission
            .at_waypoint(k as f64 * PERIOD_S, *cx.local.waypoint);
        let speeds = cx.local.controller.step(&sp, &frame.sensors());
        let command = Command {
            seq: k as u32,
            speeds: speeds.map(|s| s as f32),
        };
        let compute_ns = super::now_ns().saturating_sub(c0);
        let ex2 = super::now_ns();
        let got = exchange::with_here(|x| x.transfer_bytes(&command.encode(), &mut ack));
        let ex2_ns = super::now_ns().saturating_sub(ex2);
        if !check(got) {
            return;
        }
        *cx.local.last = command;
        let mut r = FlightRecord::new(k, frame, &sp, command);
        r.t_ns = start.saturating_sub(t0);
        r.lateness_ns = start.saturating_sub(release);
        r.compute_ns = compute_ns;
        r.exchange_ns = ex1_ns + ex2_ns;
        r.skipped = skipped;
        // Never blocks: a full ring is counted by the bridge (telemetry lost).
        let _full = cx.local.telemetry.send(r);
        if k + 1 >= *cx.local.samples || STOP.load(Ordering::Relaxed) {
            preempt::exit(0);
        }
    }

    /// Whether an exchange went through; stops the app when it did not.
    fn check(got: Option<std::io::Result<()>>) -> bool {
        match got {
            Some(Ok(())) if !SIM_DEAD.load(Ordering::Acquire) => true,
            Some(Ok(())) => {
                super::fail("the simulator process died mid-flight".into());
                preempt::exit(super::EXIT_SIM_DIED);
                false
            }
            Some(Err(e)) => {
                super::fail(format!("exchange with the simulator failed: {e}"));
                preempt::exit(super::EXIT_SIM_DIED);
                false
            }
            None => false, // not set up (bus_setup failed and stops the app)
        }
    }
}
