//! The FIFO and register logic of the simulated IMU, independent of timing, so tests can
//! drive it sample by sample (see `preempt_io::rtio::simimu` for the register map).

use preempt_io::rtio::simimu::{
    self, CONFIG_INT_DATA_RDY, CONFIG_INT_FULL, CONFIG_INT_WATERMARK, FIFO_FRAMES, Frame,
    REG_CONFIG, REG_DROPPED, REG_FIFO_COUNT, REG_FIFO_RD, REG_FIFO_WR, REG_INT_TS, REG_SAMPLES,
    REG_STATUS, STATUS_DATA_RDY, STATUS_FIFO_FULL, STATUS_FIFO_THS,
};
use preempt_io::sys::memfd::SharedMap;

/// Register storage: the shared memfd mapping in the simulator, a plain array in tests.
pub trait Regs {
    /// Loads a u32 register.
    fn load_u32(&self, off: u64) -> u32;
    /// Stores a u32 register.
    fn store_u32(&self, off: u64, v: u32);
    /// Loads a u64 register.
    fn load_u64(&self, off: u64) -> u64;
    /// Stores a u64 register.
    fn store_u64(&self, off: u64, v: u64);
    /// Stores bytes.
    fn write(&self, off: u64, b: &[u8]);
}

fn at(off: u64) -> usize {
    usize::try_from(off).unwrap_or(usize::MAX)
}

impl Regs for SharedMap {
    fn load_u32(&self, off: u64) -> u32 {
        SharedMap::load_u32(self, at(off))
    }
    fn store_u32(&self, off: u64, v: u32) {
        SharedMap::store_u32(self, at(off), v);
    }
    fn load_u64(&self, off: u64) -> u64 {
        SharedMap::load_u64(self, at(off))
    }
    fn store_u64(&self, off: u64, v: u64) {
        SharedMap::store_u64(self, at(off), v);
    }
    fn write(&self, off: u64, b: &[u8]) {
        self.write_bytes(at(off), b);
    }
}

/// In-memory registers for tests.
#[derive(Debug)]
pub struct MemRegs(pub std::cell::RefCell<Vec<u8>>);

impl Default for MemRegs {
    fn default() -> MemRegs {
        MemRegs(std::cell::RefCell::new(vec![0; simimu::REGFILE_LEN]))
    }
}

impl Regs for MemRegs {
    fn load_u32(&self, off: u64) -> u32 {
        let b = self.0.borrow();
        let o = at(off);
        u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
    }
    fn store_u32(&self, off: u64, v: u32) {
        self.write(off, &v.to_le_bytes());
    }
    fn load_u64(&self, off: u64) -> u64 {
        u64::from(self.load_u32(off)) | (u64::from(self.load_u32(off + 4)) << 32)
    }
    fn store_u64(&self, off: u64, v: u64) {
        self.write(off, &v.to_le_bytes());
    }
    fn write(&self, off: u64, b: &[u8]) {
        let o = at(off);
        self.0.borrow_mut()[o..o + b.len()].copy_from_slice(b);
    }
}

/// What one sample did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PushOutcome {
    /// Stored in the FIFO (false: dropped, the FIFO was full).
    pub stored: bool,
    /// The INT line must be raised (per `CONFIG`).
    pub interrupt: bool,
}

/// The FIFO state machine of one device.
#[derive(Debug, Default)]
pub struct Fifo {
    seq: u16,
}

impl Fifo {
    /// A FIFO whose first sample gets sequence number 0.
    pub fn new() -> Fifo {
        Fifo::default()
    }

    /// Next sequence number.
    pub fn next_seq(&self) -> u16 {
        self.seq
    }

    /// Adds one sample (its `seq` is assigned here) at time `now_ns`: stores it in both
    /// mirror slots and publishes `FIFO_WR`, or drops and counts it when the FIFO is full;
    /// updates `STATUS`/`FIFO_COUNT`; decides whether INT fires. Data ready and watermark are
    /// level conditions, re-asserted on every sample while they hold (data ready: the FIFO is
    /// not empty; watermark: the FIFO is at or above it), like the chip's latched INT that
    /// stays asserted until the reader drains the FIFO — so a reader that configures the
    /// interrupt late, or falls behind until the FIFO is full, is still woken. Full: the
    /// sample that fills the FIFO or is dropped, like the chip's FIFO_FULL interrupt.
    pub fn push<R: Regs>(&mut self, regs: &R, mut frame: Frame, now_ns: u64) -> PushOutcome {
        frame.seq = self.seq;
        self.seq = self.seq.wrapping_add(1);
        regs.store_u64(REG_SAMPLES, regs.load_u64(REG_SAMPLES) + 1);
        let config = regs.load_u32(REG_CONFIG);
        let watermark = (config & 0xff).max(1);
        let wr = regs.load_u32(REG_FIFO_WR);
        let rd = regs.load_u32(REG_FIFO_RD);
        let before = wr.wrapping_sub(rd).min(FIFO_FRAMES);
        let stored = before < FIFO_FRAMES;
        let after = if stored {
            let bytes = frame.encode();
            let slot = wr % FIFO_FRAMES;
            regs.write(simimu::fifo_slot_offset(slot), &bytes);
            regs.write(simimu::fifo_slot_offset(slot + FIFO_FRAMES), &bytes);
            // Release-publish the frame after its bytes.
            regs.store_u32(REG_FIFO_WR, wr.wrapping_add(1));
            before + 1
        } else {
            regs.store_u64(REG_DROPPED, regs.load_u64(REG_DROPPED) + 1);
            before
        };
        let mut status = 0;
        if after > 0 {
            status |= STATUS_DATA_RDY;
        }
        if after >= watermark {
            status |= STATUS_FIFO_THS;
        }
        if after == FIFO_FRAMES {
            status |= STATUS_FIFO_FULL;
        }
        regs.store_u32(REG_FIFO_COUNT, after * simimu::FRAME_LEN as u32);
        regs.store_u32(REG_STATUS, status);
        let interrupt = (config & CONFIG_INT_DATA_RDY != 0 && after > 0)
            || (config & CONFIG_INT_WATERMARK != 0 && after >= watermark)
            || (config & CONFIG_INT_FULL != 0
                && (after == FIFO_FRAMES && (before < FIFO_FRAMES || !stored)));
        if interrupt {
            regs.store_u64(REG_INT_TS, now_ns);
        }
        PushOutcome { stored, interrupt }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use preempt_io::rtio::simimu::{CountBlock, FRAME_LEN, REG_FIFO, fifo_burst_offset};

    fn frame() -> Frame {
        Frame {
            header: simimu::HDR_VALID | simimu::HDR_ACCEL,
            ..Frame::default()
        }
    }

    #[test]
    fn overflow_drops_newest_counts_and_leaves_a_sequence_gap() {
        let regs = MemRegs::default();
        regs.store_u32(REG_CONFIG, CONFIG_INT_FULL | 10);
        let mut fifo = Fifo::new();
        for i in 0..FIFO_FRAMES {
            let o = fifo.push(&regs, frame(), u64::from(i));
            assert!(o.stored);
            assert_eq!(
                o.interrupt,
                i == FIFO_FRAMES - 1,
                "FIFO_FULL fires when the FIFO fills"
            );
        }
        assert_ne!(regs.load_u32(REG_STATUS) & STATUS_FIFO_FULL, 0);
        assert_eq!(
            regs.load_u32(REG_FIFO_COUNT),
            2040,
            "2 KiB FIFO holds 102 whole frames"
        );
        let o = fifo.push(&regs, frame(), 500);
        assert!(!o.stored && o.interrupt);
        assert_eq!(regs.load_u64(REG_DROPPED), 1);
        fifo.push(&regs, frame(), 501);
        assert_eq!(regs.load_u64(REG_DROPPED), 2);
        assert_eq!(regs.load_u64(REG_SAMPLES), u64::from(FIFO_FRAMES) + 2);

        // The reader consumes 5 frames (writes FIFO_RD); the next sample shows the gap.
        regs.store_u32(REG_FIFO_RD, 5);
        assert!(fifo.push(&regs, frame(), 600).stored);
        let bytes = regs.0.borrow().clone();
        let cb = CountBlock::parse(&bytes[usize::try_from(REG_FIFO_COUNT).unwrap()..]);
        assert_eq!((cb.wr, cb.rd, cb.dropped), (FIFO_FRAMES + 1, 5, 2));
        // The burst at FIFO_RD is contiguous thanks to the mirror: frames 5..=102 then the new one.
        let start = usize::try_from(fifo_burst_offset(5)).unwrap();
        let seqs: Vec<u16> = (0..FIFO_FRAMES as usize)
            .map(|i| Frame::decode(&bytes[start + i * FRAME_LEN..]).unwrap().seq)
            .collect();
        assert_eq!(seqs[0], 5);
        assert_eq!(seqs[96], 101);
        assert_eq!(
            seqs[97], 104,
            "samples 102 and 103 were dropped: a sequence gap"
        );
        assert!(usize::try_from(REG_FIFO).unwrap() < start);
    }

    #[test]
    fn watermark_and_data_ready_interrupts() {
        let regs = MemRegs::default();
        regs.store_u32(REG_CONFIG, CONFIG_INT_WATERMARK | 3);
        let mut fifo = Fifo::new();
        let ints: Vec<bool> = (0..5)
            .map(|t| fifo.push(&regs, frame(), t).interrupt)
            .collect();
        assert_eq!(ints, vec![false, false, true, true, true]);
        assert_eq!(regs.load_u64(REG_INT_TS), 4);
        // The reader drains to below the watermark: INT stops until it is reached again.
        regs.store_u32(REG_FIFO_RD, 4);
        assert!(!fifo.push(&regs, frame(), 5).interrupt);
        assert!(fifo.push(&regs, frame(), 6).interrupt);
        regs.store_u32(REG_CONFIG, CONFIG_INT_DATA_RDY | 3);
        assert!(fifo.push(&regs, frame(), 9).interrupt);
        assert_ne!(regs.load_u32(REG_STATUS) & STATUS_FIFO_THS, 0);
    }
}
