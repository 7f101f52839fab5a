//! The thesis's demonstrator (seed `004_*`, chapter 7) as a real system: a two-axis camera
//! gimbal whose plant runs at 40 kHz in its own process on its own real-time clock, a
//! controller written as a preempt app in the shape of the thesis's figure 7.4, a simulated
//! SPI exchange every 100 µs over shared memory with eventfd doorbells (RTIO on the
//! controller's side), telemetry to the non-real-time side through the bridge into an MCAP
//! file, and an ideal-timing reference on preempt's mock clock to measure what the real
//! timing costs in control quality.
//!
//! ```text
//!   gimbal-plant process                         demo process
//!  ┌──────────────────────────┐   shared page  ┌─────────────────────────────────────────┐
//!  │ one polling loop (FIFO95)│◄──────────────►│ controller app (preempt)                │
//!  │ 40 kHz steps + SPI slave │  doorbell/done │  sample p90 10 kHz ─ exchange (RTIO)     │
//!  └──────────────────────────┘    eventfds    │  current ×2, position ×2 p80 (PCP volts) │
//!                                              │        │ bridge                          │
//!                                              │  recorder ─► gimbal.mcap                 │
//!                                              │  reference (mock clock) ─► figures, JSON │
//!                                              └─────────────────────────────────────────┘
//! ```
//!
//! The plant process's loop, its spawner and supervision, the RTIO exchange, the run's helper
//! threads and the MCAP sink are the rig's (`preempt_rig`), which `preempt-uav` stands on
//! too; this crate adds what is specific to the gimbal.
//!
//! Modules, lowest first: [`model`] (physics), [`frame`] (the wire), [`control`] (the four
//! controllers and the setpoint script), [`record`] (what a sample produces), [`plant`] (the
//! plant on the rig's loop, and its process's command line), [`app`] (the real controller),
//! [`reference`](mod@reference) (the mock-clock one),
//! [`telemetry`] (MCAP), [`result`] (figures, `demo_gimbal`), `live` (the Foxglove WebSocket
//! server, cargo feature `foxglove`), `ros2` (the ROS 2 node, cargo feature `ros2`),
//! [`demo`] (one run).
//!
//! Cargo features: `foxglove` (off by default; it brings tokio): `--foxglove ADDR`; `ros2`
//! (off by default; it brings a DDS stack, ros2-client on RustDDS, and needs Rust 1.88):
//! `--ros2`.
//!
//! ```
//! use preempt_gimbal::model::Plant;
//! use preempt_gimbal::frame::Rx;
//! let p = Plant::new(1);
//! assert_eq!(Rx::of_plant(&p, 0).counts, [0, 0]);
//! ```

pub mod app;
pub mod control;
pub mod demo;
pub mod frame;
#[cfg(feature = "foxglove")]
pub mod live;
pub mod model;
pub mod plant;
pub mod record;
pub mod reference;
pub mod result;
#[cfg(feature = "ros2")]
pub mod ros2;
pub mod telemetry;
