//! The simulated SPI exchange between controller and plant: one full-duplex 24-byte
//! transaction every 100 µs, as the thesis's Raspberry Pi and STM32 exchanged (§7.1).
//!
//! The "bus" is the rig's: a shared memory page (a memfd both processes map or
//! `pread`/`pwrite`, laid out by `preempt_rig::page`) and two eventfds:
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

use std::io;

use preempt_rig::exchange::Exchange;

/// Bytes per direction of one transaction.
pub const FRAME_LEN: usize = 24;
/// SPI clock of the simulated bus, Hz (the thesis's setup ran SPI at 10 MHz class speeds).
pub(crate) const BUS_HZ: u64 = 10_000_000;
/// Bus time of one transaction: 24 bytes × 8 bits at 10 MHz = 19.2 µs.
pub(crate) const BUS_NS: u64 = (FRAME_LEN as u64) * 8 * 1_000_000_000 / BUS_HZ;
/// One gimbal transaction on the rig's exchange (set up for [`FRAME_LEN`] each way): sends
/// `tx`, returns what the plant sent meanwhile.
///
/// # Errors
/// Any entry's error (a closed descriptor, a short transfer).
pub fn transfer(x: &mut Exchange, tx: &Tx) -> io::Result<Rx> {
    let mut b = [0_u8; FRAME_LEN];
    x.transfer_bytes(&tx.encode(), &mut b)?;
    Ok(Rx::decode(&b))
}

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
        const { assert!(FRAME_LEN <= preempt_rig::page::SLOT_LEN) };
    }
}
