//! The reference: the same plant, exchange and controllers with ideal timing, on preempt's
//! mock-clock simulator (`clock = mock`), so the trajectories a real run should follow are
//! known exactly (the thesis compared against a 20-sim run the same way, §7.4).
//!
//! ```text
//!  plant (p99, every 25 µs)   one Euler step with the voltages the bus delivered
//!  sample (p90, every 100 µs) latch the sensors (RX frame), hold the bus 19.2 µs
//!                             (`sim::advance`), deliver the voltages, release the
//!                             controllers exactly as the real app does
//!  controllers (p80)          the same code as the real app, zero execution time
//! ```
//!
//! Everything is a function of the seed and the script: two runs give the same records bit
//! for bit (`tests/reference_determinism.rs`). One run per process (preempt's rule).

use std::sync::Mutex;

use crate::control::Steps;
use crate::record::SampleRecord;

struct RefSetup {
    seed: u64,
    steps: Steps,
    samples: u64,
}

static SETUP: Mutex<Option<RefSetup>> = Mutex::new(None);
static RECORDS: Mutex<Vec<SampleRecord>> = Mutex::new(Vec::new());

/// Runs the reference for `samples` samples; returns one record per sample.
///
/// # Errors
/// The simulator's exit code when it is not 0 (e.g. the reference already ran in this process).
pub fn run(seed: u64, steps: &Steps, samples: u64) -> Result<Vec<SampleRecord>, String> {
    *SETUP.lock().unwrap_or_else(|e| e.into_inner()) = Some(RefSetup {
        seed,
        steps: steps.clone(),
        samples,
    });
    preempt_rig::harness::run_reference(&RECORDS, samples, reference::run)
}

#[preempt::app(clock = mock, main = false, accounting = false)]
mod reference {
    use crate::control::{Cascade, POSITION_EVERY, SAMPLE_NS, Steps, counts_to_rad};
    use crate::frame::{BUS_NS, Rx};
    use crate::model::{AxisParams, Plant};
    use crate::record::{SampleRecord, Volts};
    use preempt_rig::grid::Grid;

    #[shared]
    struct Shared {
        /// Pan's cascade state (its position and current tasks, both p80: no lock cost).
        pan: Cascade,
        /// Tilt's.
        tilt: Cascade,
        plant: Plant,
        /// The voltages the plant applies (delivered by the bus).
        applied: [f32; 2],
        volts: Volts,
    }

    #[local]
    struct Local {
        steps: Steps,
        samples: u64,
        grid: Grid,
        last_k: Option<u64>,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        let setup = preempt_rig::harness::take_setup(&super::SETUP);
        (
            Shared {
                pan: Cascade::for_axis(&AxisParams::PAN),
                tilt: Cascade::for_axis(&AxisParams::TILT),
                plant: Plant::new(setup.seed),
                applied: [0.0; 2],
                volts: Volts::new(),
            },
            Local {
                steps: setup.steps,
                samples: setup.samples,
                grid: Grid::new(0, SAMPLE_NS),
                last_k: None,
            },
            init::Monotonics(),
        )
    }

    /// The plant's 40 kHz step (highest priority: it runs before a sample due at the same
    /// instant, so sample k sees the state after step 4k, as the real bus latches it).
    #[task(priority = 99, period = 25.micros(), shared = [plant, applied])]
    fn plant(mut cx: plant::Context) {
        let v = cx.shared.applied.lock(|a| *a);
        cx.shared
            .plant
            .lock(|p| p.step([f64::from(v[0]), f64::from(v[1])]));
    }

    #[task(
        priority = 90,
        period = 100.micros(),
        shared = [plant, applied, volts],
        local = [steps, samples, grid, last_k]
    )]
    fn sample(mut cx: sample::Context) {
        let start = Instant::now().as_nanos();
        let (k, _) = cx.local.grid.label(start);
        let last = *cx.local.last_k;
        let (volts, late_output) = cx
            .shared
            .volts
            .lock(|v| (v.volts, last.is_some_and(|l| !v.answers(l))));
        let stamp_us = u32::try_from(start / 1000).unwrap_or(u32::MAX);
        let rx = cx.shared.plant.lock(|p| Rx::of_plant(p, stamp_us));
        preempt::sim::advance(preempt::Duration::from_nanos(BUS_NS));
        cx.shared.applied.lock(|a| *a = volts);
        *cx.local.last_k = Some(k);
        let angle = rx.counts.map(counts_to_rad);
        let current = rx.currents;
        let steps = &*cx.local.steps;
        let setpoint = [0, 1].map(|a| steps.setpoint(a, k));
        if k % POSITION_EVERY == 0 {
            position_pan::spawn(k, setpoint[0], angle[0], f64::from(current[0])).unwrap();
            position_tilt::spawn(k, setpoint[1], angle[1], f64::from(current[1])).unwrap();
        } else {
            current_pan::spawn(k, f64::from(current[0]), None).unwrap();
            current_tilt::spawn(k, f64::from(current[1]), None).unwrap();
        }
        super::RECORDS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(SampleRecord {
                k,
                t_ns: start,
                lateness_ns: 0,
                exchange_ns: BUS_NS,
                sample_ns: 0,
                controllers_prev_ns: 0,
                late_output,
                plant_step: rx.step,
                plant_stamp_us: rx.stamp_us,
                angle,
                current,
                volts,
                setpoint,
            });
        if k + 1 >= *cx.local.samples {
            preempt::exit(0);
        }
    }

    #[task(priority = 80, shared = [pan])]
    fn position_pan(
        mut cx: position_pan::Context,
        k: u64,
        setpoint: f64,
        angle: f64,
        current: f64,
    ) {
        let iref = cx.shared.pan.lock(|c| c.position(setpoint, angle));
        current_pan::spawn(k, current, Some(iref)).unwrap();
    }

    #[task(priority = 80, shared = [tilt])]
    fn position_tilt(
        mut cx: position_tilt::Context,
        k: u64,
        setpoint: f64,
        angle: f64,
        current: f64,
    ) {
        let iref = cx.shared.tilt.lock(|c| c.position(setpoint, angle));
        current_tilt::spawn(k, current, Some(iref)).unwrap();
    }

    #[task(priority = 80, shared = [volts, pan])]
    fn current_pan(mut cx: current_pan::Context, k: u64, current: f64, iref: Option<f64>) {
        let v = cx.shared.pan.lock(|c| c.current(iref, current));
        cx.shared.volts.lock(|c| {
            c.volts[0] = v;
            c.answered[0] = k;
        });
    }

    #[task(priority = 80, shared = [volts, tilt])]
    fn current_tilt(mut cx: current_tilt::Context, k: u64, current: f64, iref: Option<f64>) {
        let v = cx.shared.tilt.lock(|c| c.current(iref, current));
        cx.shared.volts.lock(|c| {
            c.volts[1] = v;
            c.answered[1] = k;
        });
    }
}
