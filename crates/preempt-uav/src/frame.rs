//! The vehicle link: the controller's rotor commands and the simulator's sensor frame, in
//! the rig's page slots (`preempt_rig::page`), little-endian.
//!
//! | TX (controller → simulator) | bytes | RX (simulator → controller)       | bytes |
//! |-----------------------------|-------|-----------------------------------|-------|
//! | sequence number             | 4     | simulator step (low 32 bits)      | 4     |
//! | rotor speeds ×4, f32 rad/s  | 16    | step time stamp, µs since start   | 4     |
//! |                             |       | flags (bit 0: crashed)            | 4     |
//! |                             |       | position ×3, f32 m                | 12    |
//! |                             |       | velocity ×3, f32 m/s              | 12    |
//! |                             |       | roll, pitch, yaw, f32 rad         | 12    |
//! |                             |       | body rates ×3, f32 rad/s          | 12    |
//!
//! ```
//! use preempt_uav::frame::{Command, SensorFrame};
//! let c = Command { seq: 7, speeds: [500.0, 501.0, 502.0, 503.0] };
//! assert_eq!(Command::decode(&c.encode()), c);
//! let mut s = SensorFrame::default();
//! s.p = [1.0, 2.0, 3.0];
//! s.crashed = true;
//! assert_eq!(SensorFrame::decode(&s.encode()), s);
//! ```

use preempt_rig::page::SLOT_LEN;

use crate::model::{Quad, Sensors};

/// TX frame length.
pub const TX_LEN: usize = 20;
/// RX frame length.
pub const RX_LEN: usize = 60;
/// Bus time of one transaction: the longer frame (60 bytes) at 10 MHz, as an SPI link to a
/// flight-controller board would carry it, µs-class like the gimbal's.
pub(crate) const BUS_NS: u64 = (RX_LEN as u64) * 8 * 1_000_000_000 / 10_000_000;

const _: () = assert!(TX_LEN <= SLOT_LEN && RX_LEN <= SLOT_LEN);

/// Controller → simulator.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Command {
    /// Transaction number.
    pub seq: u32,
    /// Rotor speed commands, rad/s.
    pub speeds: [f32; 4],
}

impl Command {
    /// The wire bytes.
    pub fn encode(&self) -> [u8; TX_LEN] {
        let mut b = [0; TX_LEN];
        b[0..4].copy_from_slice(&self.seq.to_le_bytes());
        for (i, s) in self.speeds.iter().enumerate() {
            b[4 + 4 * i..8 + 4 * i].copy_from_slice(&s.to_le_bytes());
        }
        b
    }

    /// From wire bytes (at least [`TX_LEN`]).
    pub fn decode(b: &[u8]) -> Command {
        Command {
            seq: u32_at(b, 0),
            speeds: [0, 1, 2, 3].map(|i| f32_at(b, 4 + 4 * i)),
        }
    }
}

/// Simulator → controller.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SensorFrame {
    /// Simulator step (low 32 bits).
    pub step: u32,
    /// When that step ran, µs since the simulator's loop started (its own clock).
    pub stamp_us: u32,
    /// The vehicle has crashed.
    pub crashed: bool,
    /// Position, m.
    pub p: [f32; 3],
    /// Velocity, m/s.
    pub v: [f32; 3],
    /// Roll, pitch, yaw, rad.
    pub rpy: [f32; 3],
    /// Body rates, rad/s.
    pub w: [f32; 3],
}

impl SensorFrame {
    /// The frame for the simulator's latest reading.
    pub fn of(q: &Quad, stamp_us: u32) -> SensorFrame {
        let s = &q.sensors;
        let f = |a: [f64; 3]| a.map(|x| x as f32);
        SensorFrame {
            step: q.steps as u32,
            stamp_us,
            crashed: q.crashed_at.is_some(),
            p: f(s.p),
            v: f(s.v),
            rpy: f(s.rpy),
            w: f(s.w),
        }
    }

    /// The reading as the controller uses it.
    pub fn sensors(&self) -> Sensors {
        let f = |a: [f32; 3]| a.map(f64::from);
        Sensors {
            p: f(self.p),
            v: f(self.v),
            rpy: f(self.rpy),
            w: f(self.w),
        }
    }

    /// The wire bytes.
    pub fn encode(&self) -> [u8; RX_LEN] {
        let mut b = [0; RX_LEN];
        b[0..4].copy_from_slice(&self.step.to_le_bytes());
        b[4..8].copy_from_slice(&self.stamp_us.to_le_bytes());
        b[8..12].copy_from_slice(&u32::from(self.crashed).to_le_bytes());
        let vals = [self.p, self.v, self.rpy, self.w];
        for (i, x) in vals.iter().flatten().enumerate() {
            b[12 + 4 * i..16 + 4 * i].copy_from_slice(&x.to_le_bytes());
        }
        b
    }

    /// From wire bytes (at least [`RX_LEN`]).
    pub fn decode(b: &[u8]) -> SensorFrame {
        let v3 = |at: usize| [0, 1, 2].map(|i| f32_at(b, at + 4 * i));
        SensorFrame {
            step: u32_at(b, 0),
            stamp_us: u32_at(b, 4),
            crashed: u32_at(b, 8) & 1 != 0,
            p: v3(12),
            v: v3(24),
            rpy: v3(36),
            w: v3(48),
        }
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn f32_at(b: &[u8], at: usize) -> f32 {
    f32::from_bits(u32_at(b, at))
}
