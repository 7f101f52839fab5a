//! The controller: a preempt app in the shape of the thesis's figure 7.4.
//!
//! ```text
//!  bus_setup (p90, once)   t0, the RTIO context (on the sample's thread: SINGLE_ISSUER)
//!  sample (p90, every 100 µs, on_miss = Skip)
//!    │  exchange: send the voltages (shared, PCP), receive angles, currents, step, stamp
//!    ├─ every sample:   current_pan, current_tilt (p80): PI -> voltage
//!    └─ every 10th:     position_pan, position_tilt (p80): PD -> current reference,
//!                          each chains its current controller            (figure 7.4)
//!    telemetry record -> bridge -> non-real-time side (never blocks; a full ring is counted)
//! ```
//!
//! One app per process (preempt's rule): [`run`] takes its inputs through a hand-off slot and
//! returns the app's exit code; [`EXIT_PLANT_DIED`] when the plant stopped answering.

use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use preempt::bridge::{Receiver, Sender};
use preempt_rig::intake::Taken;

use crate::control::Steps;
use crate::record::{SampleRecord, SetpointCmd};

/// Exit code of the app when the plant died mid-run.
pub const EXIT_PLANT_DIED: i32 = 5;

/// Set by the watchdog when the plant process is gone (it then rings `done` so that a
/// waiting exchange returns).
pub(crate) static PLANT_DEAD: AtomicBool = AtomicBool::new(false);
/// Set when the run should end early (Ctrl-C, SIGTERM): `sample` stops the app.
pub(crate) static STOP: AtomicBool = AtomicBool::new(false);
/// The grid's start, taken by `bus_setup` as soon as the gate opens.
static T0: AtomicU64 = AtomicU64::new(0);
/// Controllers' time in the current sample, ns (summed by the four tasks).
static CTRL_NS: AtomicU64 = AtomicU64::new(0);
/// Setpoints `sample` took from the non-real-time side (a Foxglove client, a ROS 2
/// publisher), and how many of them a later one for the same axis replaced in the same sample.
pub(crate) static LIVE_SETPOINTS: Taken = Taken::new();
/// Sample jobs whose controller release was refused (previous job still queued).
pub(crate) static REFUSED: AtomicU64 = AtomicU64::new(0);
/// The RTIO backend the exchange uses (set once by `bus_setup`).
pub(crate) static BACKEND: Mutex<String> = Mutex::new(String::new());
/// The exchange error that stopped the run, if any.
pub(crate) static ERROR: Mutex<Option<String>> = Mutex::new(None);

/// What the app needs from its caller.
#[derive(Debug)]
pub struct Setup {
    /// (page, doorbell, done) of the plant's bus.
    pub fds: [OwnedFd; 3],
    /// Setpoint script.
    pub steps: Steps,
    /// Samples to run.
    pub samples: u64,
    /// Telemetry to the non-real-time side.
    pub telemetry: Sender<SampleRecord>,
    /// Setpoints from the non-real-time side (the Foxglove server), if any.
    pub setpoints: Option<Receiver<SetpointCmd>>,
}

static SETUP: Mutex<Option<Setup>> = Mutex::new(None);

/// Runs the controller app with `setup`; returns its exit code (0, 1 for missing
/// privileges, [`EXIT_PLANT_DIED`]). Once per process.
pub fn run(setup: Setup) -> i32 {
    *SETUP.lock().unwrap_or_else(|e| e.into_inner()) = Some(setup);
    controller::run()
}

/// The app's statistics (after [`run`]).
pub fn stats() -> preempt::AppStats {
    controller::stats()
}

fn now_ns() -> u64 {
    preempt::Instant::now().as_nanos()
}

/// Adds the time since `start` to the controllers' account.
fn account(start: u64) {
    CTRL_NS.fetch_add(now_ns().saturating_sub(start), Ordering::Relaxed);
}

/// Records why the run stopped; the first reason stays.
pub fn fail(msg: String) {
    ERROR
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert(msg);
}

// Sample and controllers share CPU 0 (the plant takes the last CPU): when `sample` ends, the
// controllers it released run on the spot, with no cross-CPU wake-up, and finish before the
// next exchange needs their voltages.
#[preempt::app(main = false, cores = [p90 = 0, p80 = 0])]
mod controller {
    use std::os::fd::OwnedFd;
    use std::sync::atomic::Ordering;

    use preempt::bridge::{Receiver, Sender};

    use super::{CTRL_NS, LIVE_SETPOINTS, PLANT_DEAD, REFUSED, STOP, T0};
    use crate::control::{Cascade, POSITION_EVERY, SAMPLE_NS, Steps, counts_to_rad};
    use crate::frame::{self, FRAME_LEN, Tx};
    use crate::model::AxisParams;
    use crate::record::{SampleRecord, SetpointCmd, Volts, take_setpoints};
    use preempt_rig::exchange;
    use preempt_rig::grid::Grid;

    #[shared]
    struct Shared {
        /// Pan's cascade state (its position and current tasks, both p80: no lock cost).
        pan: Cascade,
        /// Tilt's.
        tilt: Cascade,
        /// The voltage commands (sample reads, current controllers write: PCP).
        volts: Volts,
    }

    #[local]
    struct Local {
        fds: Option<[OwnedFd; 3]>,
        steps: Steps,
        samples: u64,
        telemetry: Sender<SampleRecord>,
        setpoints: Option<Receiver<SetpointCmd>>,
        live: [Option<f64>; 2],
        grid: Option<Grid>,
        last_k: Option<u64>,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        let setup = preempt_rig::harness::take_setup(&super::SETUP);
        bus_setup::spawn().expect("bus_setup has a free slot at start-up");
        (
            Shared {
                pan: Cascade::for_axis(&AxisParams::PAN),
                tilt: Cascade::for_axis(&AxisParams::TILT),
                volts: Volts::new(),
            },
            Local {
                fds: Some(setup.fds),
                steps: setup.steps,
                samples: setup.samples,
                telemetry: setup.telemetry,
                setpoints: setup.setpoints,
                live: [None; 2],
                grid: None,
                last_k: None,
            },
            init::Monotonics(),
        )
    }

    /// Runs first when the gate opens: the grid's start, then the RTIO context on this
    /// thread. Once per run (declared as at most once a second for the analysis).
    #[task(priority = 90, min_interarrival = 1000.millis(), local = [fds])]
    fn bus_setup(cx: bus_setup::Context) {
        T0.store(super::now_ns(), Ordering::Release);
        // The RTIO context must be created by the thread that submits to it (SINGLE_ISSUER):
        // this once-per-run set-up (allocations, the ring's mmap, a sysctl read) is accepted
        // on the real-time thread; `sample`'s jobs are checked (preempt::rt_safety).
        let fds = cx.local.fds.take();
        let set_up = preempt::rt_safety::allow(|| {
            exchange::set_up_here(fds, FRAME_LEN, FRAME_LEN, &super::BACKEND)
        });
        if let Err(e) = set_up {
            super::fail(e);
            preempt::exit(1);
        }
    }

    /// The 10 kHz exchange with the plant; releases the controllers.
    #[task(
        priority = 90,
        period = 100.micros(),
        deadline = 100.micros(),
        on_miss = Skip,
        shared = [volts],
        local = [steps, samples, telemetry, setpoints, live, grid, last_k]
    )]
    fn sample(mut cx: sample::Context) {
        let start = super::now_ns();
        let grid = cx
            .local
            .grid
            .get_or_insert_with(|| Grid::new(T0.load(Ordering::Acquire), SAMPLE_NS));
        let (k, _skipped) = grid.label(start);
        let release = grid.release_ns(k);
        let t0 = grid.t0();
        let controllers_prev_ns = CTRL_NS.swap(0, Ordering::Relaxed);
        let last = *cx.local.last_k;
        let (volts, late_output) = cx
            .shared
            .volts
            .lock(|v| (v.volts, last.is_some_and(|l| !v.answers(l))));
        let tx = Tx {
            seq: k as u32,
            volts,
        };
        let ex_start = super::now_ns();
        let rx = exchange::with_here(|x| frame::transfer(x, &tx));
        let exchange_ns = super::now_ns().saturating_sub(ex_start);
        let rx = match rx {
            Some(Ok(rx)) if !PLANT_DEAD.load(Ordering::Acquire) => rx,
            Some(Ok(_)) => {
                super::fail("the plant process died mid-run".into());
                preempt::exit(super::EXIT_PLANT_DIED);
                return;
            }
            Some(Err(e)) => {
                super::fail(format!("exchange with the plant failed: {e}"));
                preempt::exit(super::EXIT_PLANT_DIED);
                return;
            }
            None => return, // the bus is not set up (bus_setup failed and stops the app)
        };
        *cx.local.last_k = Some(k);
        let angle = rx.counts.map(counts_to_rad);
        let current = rx.currents;
        // A live setpoint (never blocks: try_recv) overrides the script from now on.
        let live = &mut *cx.local.live;
        if let Some(rx) = cx.local.setpoints.as_mut() {
            take_setpoints(rx, live, &LIVE_SETPOINTS);
        }
        let steps = &*cx.local.steps;
        let setpoint = [0, 1].map(|a| live[a].unwrap_or_else(|| steps.setpoint(a, k)));
        let released = if k % POSITION_EVERY == 0 {
            position_pan::spawn(k, setpoint[0], angle[0], f64::from(current[0])).is_ok()
                & position_tilt::spawn(k, setpoint[1], angle[1], f64::from(current[1])).is_ok()
        } else {
            current_pan::spawn(k, f64::from(current[0]), None).is_ok()
                & current_tilt::spawn(k, f64::from(current[1]), None).is_ok()
        };
        if !released {
            REFUSED.fetch_add(1, Ordering::Relaxed);
        }
        let end = super::now_ns();
        // Never blocks: a full ring is counted by the bridge (telemetry lost).
        let _full = cx.local.telemetry.send(SampleRecord {
            k,
            t_ns: start.saturating_sub(t0),
            lateness_ns: start.saturating_sub(release),
            exchange_ns,
            sample_ns: end.saturating_sub(start).saturating_sub(exchange_ns),
            controllers_prev_ns,
            late_output,
            plant_step: rx.step,
            plant_stamp_us: rx.stamp_us,
            angle,
            current,
            volts,
            setpoint,
        });
        if k + 1 >= *cx.local.samples || STOP.load(Ordering::Relaxed) {
            preempt::exit(0);
        }
    }

    /// Pan position loop (1 kHz): PD, then chains the pan current loop. The declared
    /// inter-arrival times are `sample`'s release pattern, for the response-time analysis.
    #[task(priority = 80, min_interarrival = 1.millis(), shared = [pan])]
    fn position_pan(
        mut cx: position_pan::Context,
        k: u64,
        setpoint: f64,
        angle: f64,
        current: f64,
    ) {
        let start = super::now_ns();
        let iref = cx.shared.pan.lock(|c| c.position(setpoint, angle));
        super::account(start);
        if current_pan::spawn(k, current, Some(iref)).is_err() {
            REFUSED.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Tilt position loop (1 kHz).
    #[task(priority = 80, min_interarrival = 1.millis(), shared = [tilt])]
    fn position_tilt(
        mut cx: position_tilt::Context,
        k: u64,
        setpoint: f64,
        angle: f64,
        current: f64,
    ) {
        let start = super::now_ns();
        let iref = cx.shared.tilt.lock(|c| c.position(setpoint, angle));
        super::account(start);
        if current_tilt::spawn(k, current, Some(iref)).is_err() {
            REFUSED.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Pan current loop (10 kHz): its voltage goes out with the next sample.
    #[task(priority = 80, min_interarrival = 100.micros(), shared = [volts, pan])]
    fn current_pan(mut cx: current_pan::Context, k: u64, current: f64, iref: Option<f64>) {
        let start = super::now_ns();
        let v = cx.shared.pan.lock(|c| c.current(iref, current));
        cx.shared.volts.lock(|c| {
            c.volts[0] = v;
            c.answered[0] = k;
        });
        super::account(start);
    }

    /// Tilt current loop (10 kHz).
    #[task(priority = 80, min_interarrival = 100.micros(), shared = [volts, tilt])]
    fn current_tilt(mut cx: current_tilt::Context, k: u64, current: f64, iref: Option<f64>) {
        let start = super::now_ns();
        let v = cx.shared.tilt.lock(|c| c.current(iref, current));
        cx.shared.volts.lock(|c| {
            c.volts[1] = v;
            c.answered[1] = k;
        });
        super::account(start);
    }
}
