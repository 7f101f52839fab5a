//! The UAV study (seed `001_*`) flown: its figure 1 cascade (position controller → attitude
//! controller → control allocator for four rotors) as a preempt app at 250 Hz, against a
//! quadrotor simulated in its own process on its own real-time clock, with flight quality
//! measured against the same mission flown with ideal timing.
//!
//! ```text
//!   uav-sim process                             demo process
//!  ┌───────────────────────────┐  shared page  ┌──────────────────────────────────────────┐
//!  │ RK4 step 1 kHz (FIFO 95)  │◄─────────────►│ flight app (preempt)                     │
//!  │ bus thread      (FIFO 94) │ doorbell/done │  control p90 250 Hz, deadline = period:  │
//!  └───────────────────────────┘   eventfds    │  sensors in ─ cascade ─ rotor speeds out │
//!                                              │        │ bridge                          │
//!                                              │  recorder ─► uav.mcap                    │
//!                                              │  reference (mock clock) ─► figures, JSON │
//!                                              └──────────────────────────────────────────┘
//! ```
//!
//! The process machinery is the rig's, as the gimbal demonstrator's is (`preempt_rig`: the
//! plant loop `plant_rt`, the process entry `plant_main`, the spawner `spawn`, the RTIO
//! `exchange`, the run's helper threads `harness`, the MCAP sink `telemetry`); this crate adds
//! what is specific to a quadrotor.
//!
//! Modules, lowest first: [`model`] (6-DOF physics, sensors, crash), [`control`] (the
//! cascade and the mission), [`frame`] (the link's frames), [`record`] (one control step's
//! telemetry), [`sim`] (the simulator process), [`app`] (the real controller),
//! [`reference`](mod@reference) (the mock-clock flight), [`telemetry`] (MCAP), [`result`]
//! (figures of a flight), `ros2` (the ROS 2 node, cargo feature `ros2`), [`demo`] (one
//! flight).
//!
//! Cargo feature `ros2` (off by default; it brings a DDS stack, ros2-client on RustDDS, and
//! needs Rust 1.88): `--ros2`, the pose, odometry and reference on ROS 2 topics and waypoints
//! from one (docs/ROS2.md).
//!
//! ```
//! use preempt_uav::control::{Controller, Mission, PERIOD_S};
//! use preempt_uav::model::{Params, Quad};
//! // Ten seconds of the mission with ideal timing, in-process.
//! let (p, m) = (Params::default(), Mission::default());
//! let (mut quad, mut c, mut cmd) = (Quad::new(p, 1), Controller::new(p), [0.0; 4]);
//! for step in 0..10_000_u64 {
//!     if step % 4 == 0 {
//!         cmd = c.step(&m.at(step as f64 * 1e-3), &quad.sensors);
//!     }
//!     quad.step(cmd);
//! }
//! assert!(quad.crashed_at.is_none() && (quad.state.p[2] - 1.0).abs() < 0.1);
//! # let _ = PERIOD_S;
//! ```

pub mod app;
pub mod control;
pub mod demo;
pub mod frame;
pub mod model;
pub mod record;
pub mod reference;
pub mod result;
#[cfg(feature = "ros2")]
pub mod ros2;
pub mod sim;
pub mod telemetry;
