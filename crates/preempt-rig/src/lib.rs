//! The simulated-hardware rig the demonstrators stand on: what a controller written as a
//! preempt app needs to run against a plant simulated in a process of its own, on its own
//! real-time clock, over a simulated SPI bus, and to report what the run cost in control
//! quality. The gimbal (`preempt-gimbal`) and the UAV (`preempt-uav`) are this rig plus a
//! plant model, frames, a controller and their figures; neither imports the other.
//!
//! ```text
//!   plant process (plant_main, plant_rt)          demo process
//!  ┌──────────────────────────────────┐  page   ┌──────────────────────────────────────┐
//!  │ one loop on its own clock        │◄───────►│ controller app: exchange (RTIO chain)│
//!  │ (SCHED_FIFO, pinned), lazy grid, │doorbell/│ harness: recorder + watchdog threads │
//!  │ SPI slave, counters in the page  │  done   │ spawn: starts, watches, kills it     │
//!  └──────────────────────────────────┘ eventfds│ telemetry (MCAP), result, outputs    │
//!                                               └──────────────────────────────────────┘
//! ```
//!
//! Modules, lowest first: [`rng`] (the seeded noise source), [`page`] (the shared page's
//! slots and counters), [`grid`] (a periodic task's release labels), [`result`] (time
//! summaries and the explain outcome of a run), [`intake`] (commands from the network:
//! checked, counted, handed to the controller, logged at a bounded rate), [`outputs`] (a run's files), [`telemetry`]
//! (the JSON-over-MCAP sink), [`plant_rt`] (the plant process's loop, generic over a
//! [`plant_rt::PlantModel`]), [`spawn`] (starting and supervising it), [`plant_main`] (its
//! command line), [`exchange`] (the controller's end of the bus, on RTIO), [`harness`] (a
//! run's helper threads and steps).
//!
//! ```
//! use preempt_rig::grid::Grid;
//! use preempt_rig::page::{SLOT_LEN, STATS_OFF};
//! let mut g = Grid::new(0, 4_000_000); // the UAV's 250 Hz
//! assert_eq!(g.label(4_000_000), (1, 1));
//! assert!(2 * SLOT_LEN <= STATS_OFF);
//! ```

pub mod exchange;
pub mod grid;
pub mod harness;
pub mod intake;
pub mod outputs;
pub mod page;
pub mod plant_main;
pub mod plant_rt;
pub mod result;
pub mod rng;
pub mod spawn;
pub mod telemetry;
