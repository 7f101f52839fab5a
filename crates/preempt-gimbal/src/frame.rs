//! The simulated SPI exchange between controller and plant: one full-duplex 24-byte
//! transaction every 100 µs, as the thesis's Raspberry Pi and STM32 exchanged (§7.1).
//!
//! The "bus" is a shared memory page (a memfd both processes map or `pread`/`pwrite`) and
//! two eventfds:
//!
//! ```text
//!  controller (sample task, RTIO chain)             plant process (polling loop)
//!  pwrite TX frame  -> page[TX_OFF..]
//!  write 1          -> doorbell eventfd  ───────►   sees it; latches the sensors (RX frame
//!                                                   -> page[RX_OFF..]) and the TX frame,
//!                                                   holds the bus for 24 B at 10 MHz
//!                                                   (19.2 µs), then hands the voltages to
//!                                                   the 40 kHz loop
//!  read 8 bytes     <- done eventfd     ◄───────    write 1
//!  pread RX frame   <- page[RX_OFF..]
//! ```
//!
//! Full duplex: the controller receives the sensors as they were when the transaction
//! started and the plant receives the voltages when it ends, so the voltages act from the
//! first plant step after the transfer, exactly as an SPI slave would latch them.
//!
//! The frames (little-endian):
//!
//! | TX (controller → plant) | bytes | RX (plant → controller)         | bytes |
//! |-------------------------|-------|---------------------------------|-------|
//! | sequence number         | 4     | plant step counter (low 32 bits)| 4     |
//! | pan voltage, f32 V      | 4     | pan encoder, i32 counts         | 4     |
//! | tilt voltage, f32 V     | 4     | tilt encoder, i32 counts        | 4     |
//! | reserved (zero)         | 12    | pan current, f32 A              | 4     |
//! |                         |       | tilt current, f32 A             | 4     |
//! |                         |       | step time stamp, µs since start | 4     |
//!
//! ```
//! use preempt_gimbal::frame::{Rx, Tx, FRAME_LEN};
//! let tx = Tx { seq: 3, volts: [1.5, -2.0] };
//! assert_eq!(Tx::decode(&tx.encode()), tx);
//! let rx = Rx { step: 12, counts: [652, -391], currents: [0.25, -0.5], stamp_us: 300 };
//! assert_eq!(Rx::decode(&rx.encode()), rx);
//! assert_eq!(tx.encode().len(), FRAME_LEN);
//! ```

/// Bytes per direction of one transaction.
pub const FRAME_LEN: usize = 24;
/// SPI clock of the simulated bus, Hz (the thesis's setup ran SPI at 10 MHz class speeds).
pub const BUS_HZ: u64 = 10_000_000;
/// Bus time of one transaction: 24 bytes × 8 bits at 10 MHz = 19.2 µs.
pub const BUS_NS: u64 = (FRAME_LEN as u64) * 8 * 1_000_000_000 / BUS_HZ;
/// Size of the shared page.
pub const PAGE_LEN: usize = 4096;
/// Bytes of each direction's slot in the page: a plant's frames use a prefix of it (the
/// gimbal's are [`FRAME_LEN`]; any plant run by [`crate::plant_rt::run`] has up to this).
pub const SLOT_LEN: usize = 64;
/// Offset of the TX frame in the page.
pub const TX_OFF: usize = 0;
/// Offset of the RX frame in the page.
pub const RX_OFF: usize = 64;
/// Offset of the plant's counters (u64 each, written by the plant, read by anyone).
pub const STATS_OFF: usize = 128;
/// Counter: plant steps taken.
pub const STAT_STEPS: usize = STATS_OFF;
/// Counter: grid steps that passed while the plant's loop wanted its CPU and did not run
/// (a timer wake-up late past its event, or a gap in a spin).
pub const STAT_LATE_STEPS: usize = STATS_OFF + 8;
/// Counter: largest such gap, ns.
pub const STAT_MAX_LATE_NS: usize = STATS_OFF + 16;
/// Counter: transactions served.
pub const STAT_TRANSFERS: usize = STATS_OFF + 24;
/// Flags granted to the plant process: bit 0 SCHED_FIFO, bit 1 pinned, bit 63 running.
pub const STAT_FLAGS: usize = STATS_OFF + 32;
/// Counter: stalls, gaps of [`STALL_NS`] or more in which the loop wanted its CPU and did
/// not run (each counts once, however many steps it spans).
pub const STAT_STALLS: usize = STATS_OFF + 40;
/// Counter: stalls during which the loop's thread was preempted in the guest (its
/// involuntary context switches grew): another thread ran on its CPU, e.g. the kernel's
/// fair server giving starved SCHED_OTHER tasks their share. The other stalls had no
/// switch: interrupts, or the hypervisor running something else on the vCPU.
pub const STAT_STALLS_PREEMPTED: usize = STATS_OFF + 48;
/// Counter: of the stalls, those in which the loop's thread waited on its runqueue for as long
/// as the kernel's throttling window (80 % of it or more): the real-time class stopped on the
/// plant's CPU by `sched_rt_runtime_us` or the fair server ([`crate::plant_rt`],
/// "Background").
pub const STAT_THROTTLED: usize = STATS_OFF + 56;
/// Counter: CPU time the plant's loop thread used, ns (published every 10 ms and at the end).
pub const STAT_CPU_NS: usize = STATS_OFF + 64;
/// Counter: wall time of the plant's loop since its grid started, ns, as of
/// [`STAT_CPU_NS`]'s update: `cpu / wall` is the loop's duty cycle.
pub const STAT_WALL_NS: usize = STATS_OFF + 72;
/// Lateness that makes a stall: 1 ms, 40 steps (more than a wake-up, as long as a
/// scheduler time slice or a throttled real-time class).
pub const STALL_NS: u64 = 1_000_000;
/// Flag bit: the 40 kHz loop runs under SCHED_FIFO.
pub const FLAG_FIFO: u64 = 1;
/// Flag bit: the plant is pinned to a CPU.
pub const FLAG_PINNED: u64 = 2;
/// First flag bit a plant model may set for itself ([`crate::plant_rt::PlantModel::flags`]);
/// bits 8 to 62 are the model's.
pub const FLAG_MODEL_FIRST: u64 = 1 << 8;
/// Flag bit: the plant's loop has started (its clock is running).
pub const FLAG_RUNNING: u64 = 1 << 63;

/// Controller → plant.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tx {
    /// Transaction number.
    pub seq: u32,
    /// Pan, tilt voltage commands, V.
    pub volts: [f32; 2],
}

impl Tx {
    /// The wire bytes.
    pub fn encode(&self) -> [u8; FRAME_LEN] {
        let mut b = [0; FRAME_LEN];
        b[0..4].copy_from_slice(&self.seq.to_le_bytes());
        b[4..8].copy_from_slice(&self.volts[0].to_le_bytes());
        b[8..12].copy_from_slice(&self.volts[1].to_le_bytes());
        b
    }

    /// From wire bytes.
    pub fn decode(b: &[u8; FRAME_LEN]) -> Tx {
        Tx {
            seq: u32_at(b, 0),
            volts: [f32_at(b, 4), f32_at(b, 8)],
        }
    }
}

/// Plant → controller.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rx {
    /// Plant step counter (low 32 bits).
    pub step: u32,
    /// Pan, tilt encoder counts.
    pub counts: [i32; 2],
    /// Pan, tilt current readings, A.
    pub currents: [f32; 2],
    /// When the plant took that step, µs since its loop started (its own clock).
    pub stamp_us: u32,
}

impl Rx {
    /// The wire bytes.
    pub fn encode(&self) -> [u8; FRAME_LEN] {
        let mut b = [0; FRAME_LEN];
        b[0..4].copy_from_slice(&self.step.to_le_bytes());
        b[4..8].copy_from_slice(&self.counts[0].to_le_bytes());
        b[8..12].copy_from_slice(&self.counts[1].to_le_bytes());
        b[12..16].copy_from_slice(&self.currents[0].to_le_bytes());
        b[16..20].copy_from_slice(&self.currents[1].to_le_bytes());
        b[20..24].copy_from_slice(&self.stamp_us.to_le_bytes());
        b
    }

    /// From wire bytes.
    pub fn decode(b: &[u8; FRAME_LEN]) -> Rx {
        Rx {
            step: u32_at(b, 0),
            counts: [u32_at(b, 4) as i32, u32_at(b, 8) as i32],
            currents: [f32_at(b, 12), f32_at(b, 16)],
            stamp_us: u32_at(b, 20),
        }
    }

    /// The frame the plant sends for its current state.
    pub fn of_plant(plant: &crate::model::Plant, stamp_us: u32) -> Rx {
        let [p, t] = &plant.axes;
        Rx {
            step: plant.steps as u32,
            counts: [p.encoder_counts(), t.encoder_counts()],
            currents: [p.current_reading() as f32, t.current_reading() as f32],
            stamp_us,
        }
    }
}

fn u32_at(b: &[u8; FRAME_LEN], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn f32_at(b: &[u8; FRAME_LEN], at: usize) -> f32 {
    f32::from_bits(u32_at(b, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_time_is_24_bytes_at_10_mhz() {
        assert_eq!(BUS_NS, 19_200);
        const {
            assert!(
                FRAME_LEN <= SLOT_LEN
                    && RX_OFF >= TX_OFF + SLOT_LEN
                    && STATS_OFF >= RX_OFF + SLOT_LEN
            )
        };
    }
}
