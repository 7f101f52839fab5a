//! The reference flight: the same simulator, link and controller with ideal timing, on
//! preempt's mock-clock simulator (`clock = mock`), so the trajectory a real flight should
//! follow is known exactly, with the same seed (the same sensor noise per simulator step).
//!
//! ```text
//!  sim (p99, every 1 ms)       one RK4 step with the rotor commands the link delivered
//!  control (p90, every 4 ms)   latch the sensor frame, hold the bus (`sim::advance`), run
//!                              the cascade (zero time), hold the bus again, deliver the
//!                              rotor commands: what the real app does, without latency
//! ```
//!
//! Two runs give the same records bit for bit (`tests/reference_determinism.rs`). One run
//! per process (preempt's rule).

use std::sync::Mutex;

use crate::control::Mission;
use crate::record::FlightRecord;

struct RefSetup {
    seed: u64,
    mission: Mission,
    samples: u64,
}

static SETUP: Mutex<Option<RefSetup>> = Mutex::new(None);
static RECORDS: Mutex<Vec<FlightRecord>> = Mutex::new(Vec::new());

/// Flies the reference for `samples` control steps; returns one record per step.
///
/// # Errors
/// The simulator's exit code when it is not 0 (e.g. the reference already ran in this process).
pub fn run(seed: u64, mission: &Mission, samples: u64) -> Result<Vec<FlightRecord>, String> {
    *SETUP.lock().unwrap_or_else(|e| e.into_inner()) = Some(RefSetup {
        seed,
        mission: *mission,
        samples,
    });
    preempt_rig::harness::run_reference(&RECORDS, samples, reference::run)
}

#[preempt::app(clock = mock, main = false, accounting = false)]
mod reference {
    use preempt_rig::grid::Grid;

    use crate::control::{Controller, Mission, PERIOD_NS, PERIOD_S};
    use crate::frame::{BUS_NS, Command, SensorFrame};
    use crate::model::{Params, Quad};
    use crate::record::FlightRecord;

    #[shared]
    struct Shared {
        quad: Quad,
        /// The rotor commands the simulator applies (delivered by the link).
        applied: [f32; 4],
    }

    #[local]
    struct Local {
        mission: Mission,
        samples: u64,
        grid: Grid,
        controller: Controller,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        let setup = preempt_rig::harness::take_setup(&super::SETUP);
        (
            Shared {
                quad: Quad::new(Params::default(), setup.seed),
                applied: [0.0; 4],
            },
            Local {
                mission: setup.mission,
                samples: setup.samples,
                grid: Grid::new(0, PERIOD_NS),
                controller: Controller::new(Params::default()),
            },
            init::Monotonics(),
        )
    }

    /// The simulator's 1 kHz step (highest priority: it runs before a control step due at
    /// the same instant, so step k sees the state after simulator step 4k).
    #[task(priority = 99, period = 1.millis(), shared = [quad, applied])]
    fn sim(mut cx: sim::Context) {
        let c = cx.shared.applied.lock(|a| *a);
        cx.shared.quad.lock(|q| q.step(c.map(f64::from)));
    }

    #[task(
        priority = 90,
        period = 4.millis(),
        shared = [quad, applied],
        local = [mission, samples, grid, controller]
    )]
    fn control(mut cx: control::Context) {
        let start = Instant::now().as_nanos();
        let (k, _) = cx.local.grid.label(start);
        let stamp_us = u32::try_from(start / 1000).unwrap_or(u32::MAX);
        let frame = cx.shared.quad.lock(|q| SensorFrame::of(q, stamp_us));
        preempt::sim::advance(preempt::Duration::from_nanos(BUS_NS));
        let sp = cx.local.mission.at(k as f64 * PERIOD_S);
        let speeds = cx.local.controller.step(&sp, &frame.sensors());
        let command = Command {
            seq: k as u32,
            speeds: speeds.map(|s| s as f32),
        };
        preempt::sim::advance(preempt::Duration::from_nanos(BUS_NS));
        cx.shared.applied.lock(|a| *a = command.speeds);
        let mut r = FlightRecord::new(k, frame, &sp, command);
        r.t_ns = start;
        r.exchange_ns = 2 * BUS_NS;
        super::RECORDS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r);
        if k + 1 >= *cx.local.samples {
            preempt::exit(0);
        }
    }
}
