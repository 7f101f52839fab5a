//! Register map and frame format of the simulated ICM-45686-class IMU (`imu-sim`), shared by
//! the simulator (which stores into the memfd) and the readers (which `pread` it).
//!
//! Each simulated device is one memfd "register file" plus one eventfd INT line:
//!
//! ```text
//! 0x000 WHO_AM_I   u32  0x45686000 | device id          (simulator)
//! 0x004 CONFIG     u32  bits 0-7 watermark (frames), bit 8 INT on data ready,
//!                       bit 9 INT on watermark, bit 10 INT on FIFO full   (reader writes)
//! 0x008 ODR_HZ     u32  output data rate                (simulator)
//! 0x010 STATUS     u32  bit 0 DATA_RDY, bit 1 FIFO_THS, bit 2 FIFO_FULL   (simulator)
//! 0x014 FIFO_COUNT u32  bytes in the FIFO at the last sample              (simulator)
//! 0x018 FIFO_WR    u32  frames ever stored (wrapping)                     (simulator)
//! 0x01C FIFO_RD    u32  frames ever consumed (wrapping)                   (reader writes)
//! 0x020 DROPPED    u64  samples lost because the FIFO was full            (simulator)
//! 0x028 INT_TS     u64  CLOCK_MONOTONIC ns of the last INT edge           (simulator)
//! 0x030 OVERRUNS   u64  simulator timer ticks it could not serve on time  (simulator)
//! 0x038 SAMPLES    u64  samples generated (stored + dropped)              (simulator)
//! 0x040 FIFO       2 x 102 frames of 20 bytes, written twice (mirror) so any window of up
//!                  to 102 frames starting at slot FIFO_RD % 102 is contiguous
//! 0x1800 BUS_XFERS u64  SPI transfers served for this device                (bus thread)
//! 0x1808 BUS_BUSY  u64  ns the SPI bus spent on them                        (bus thread)
//! 0x1F00 FIFO_DATA      pop-on-read FIFO port, SPI bus only (no storage)
//! ```
//!
//! The FIFO holds 102 frames: 2 KiB like the chip's FIFO (2048 / 20, whole frames). When it is
//! full, new samples are *dropped* and counted (stop-on-full, the ICM-456xx `FIFO_MODE`
//! that keeps the oldest data): the reader sees a sequence-number gap, like on the chip. Stream
//! mode (overwrite the oldest) is not simulated because a reader that `pread`s cannot pop
//! atomically; the reader acknowledges consumption by writing `FIFO_RD`, which is what makes
//! the "status → count → FIFO" transfer chain (plus one register write) of a real driver.
//!
//! # Frame (20 bytes, little-endian)
//!
//! ```text
//! 0      header: bit 7 valid, bit 6 accel, bit 5 gyro, bits 0-3 device id
//! 1      temperature, i8 °C above 25
//! 2..4   sequence number u16 (counts every sample, dropped or not)
//! 4..10  accel x, y, z i16 (±16 g full scale)
//! 10..16 gyro x, y, z i16 (±2000 dps full scale)
//! 16..20 timestamp: low 32 bits of CLOCK_MONOTONIC ns at sampling
//! ```
//!
//! # Two buses: memfd (synchronous) and SPI (asynchronous)
//!
//! * **memfd bus**: the reader `pread`s/`pwrite`s the register file directly. A transfer is a
//!   memory copy that completes inside the syscall — like a register window, not like a bus —
//!   so it cannot show what RTIO gains on a real bus (and io_uring punts shmem reads to io-wq
//!   workers, which is why the executor runs them inline).
//! * **SPI bus**: each device also has a `SOCK_SEQPACKET` socket whose other end is served by
//!   the simulator's *bus thread*, standing in for an SPI controller: the reader sends one
//!   command message per transfer ([`spi_read_cmd`], [`spi_write_cmd`]), the bus thread
//!   executes it against the register file, occupies the bus for
//!   [`spi_transfer_ns`]`(bytes, ns_per_byte)` (default [`DEFAULT_BUS_NS_PER_BYTE`] = 800 ns
//!   per byte: a 10 MHz SPI clock moves 8 bits in 800 ns), then answers a read with one
//!   response message. Writes are posted (no response). The transfer completes
//!   asynchronously, as an interrupt-driven or DMA SPI transfer does, so a blocking reader
//!   sleeps in every transfer while an RTIO chain can hand all of them to the kernel at once.
//!
//! Over SPI the FIFO is read through [`REG_FIFO_DATA`], which pops like the chip's
//! `FIFO_DATA` register: a read of up to N bytes returns the whole frames available (at most
//! N / 20) starting at `FIFO_RD`, and the bus advances `FIFO_RD` itself. A reader therefore
//! never writes `FIFO_RD` over SPI; the chain is exactly the driver's status → count → FIFO.
//! Bus time is charged for the bytes actually moved (address byte + data).
//!
//! ```text
//! command (reader -> bus), little-endian, 12 bytes + payload:
//! 0      op: 1 = read, 2 = write
//! 1..4   reserved (0)
//! 4..8   register address u32
//! 8..12  read: bytes wanted; write: payload length
//! 12..   write payload
//! response to a read: the bytes (FIFO_DATA: whole frames, possibly none)
//!
//! transaction (op 3): 12-byte header with the number of reads k in the address field,
//! then k read commands; executed back to back with chip select held, answered with ONE
//! message holding all k results concatenated ([`spi_transaction_cmd`])
//! ```
//!
//! The transaction is what a Linux `spidev` `SPI_IOC_MESSAGE(k)` or a Zephyr SPI RTIO
//! transaction does: the controller driver (here the bus thread) runs the whole
//! status → count → FIFO sequence after one request, and the requester hears back once.
//!
//! # Pointing the same code at a real IIO device
//!
//! On a Raspberry Pi with an ICM-42688/45686 on SPI and the kernel's `inv_icm42600` driver,
//! the IIO buffer `/dev/iio:deviceN` delivers scan elements (accel, gyro, temp, 64-bit
//! timestamp) and the driver handles the FIFO itself: enable the scan elements and the buffer
//! in `/sys/bus/iio/devices/iio:deviceN/` (`scan_elements/*_en`, `buffer/enable`, and
//! `buffer/watermark` for FIFO watermark interrupts), then register the character device with
//! [`Rtio::register_fd`](super::Rtio::register_fd) and read it with a multishot mempool read
//! (it is pollable, so the probe selects native multishot or poll + read). The chain of
//! register reads here collapses to that one read, the watermark trigger maps to
//! `buffer/watermark`, and the decoder's scale factors come from `in_accel_scale` /
//! `in_anglvel_scale` instead of the constants below.

/// Bytes per FIFO frame.
pub const FRAME_LEN: usize = 20;
/// Frames the FIFO holds (2 KiB / 20 bytes).
pub const FIFO_FRAMES: u32 = 102;
/// Size of the register file (memfd).
pub const REGFILE_LEN: usize = 8192;

/// `WHO_AM_I` (u32).
pub const REG_WHO_AM_I: u64 = 0x000;
/// `CONFIG` (u32, reader-written).
pub const REG_CONFIG: u64 = 0x004;
/// `ODR_HZ` (u32).
pub const REG_ODR_HZ: u64 = 0x008;
/// `STATUS` (u32).
pub const REG_STATUS: u64 = 0x010;
/// `FIFO_COUNT` (u32, bytes).
pub const REG_FIFO_COUNT: u64 = 0x014;
/// `FIFO_WR` (u32, frames).
pub const REG_FIFO_WR: u64 = 0x018;
/// `FIFO_RD` (u32, frames, reader-written).
pub const REG_FIFO_RD: u64 = 0x01C;
/// `DROPPED` (u64).
pub const REG_DROPPED: u64 = 0x020;
/// `INT_TS` (u64).
pub const REG_INT_TS: u64 = 0x028;
/// `OVERRUNS` (u64).
pub const REG_OVERRUNS: u64 = 0x030;
/// `SAMPLES` (u64).
pub const REG_SAMPLES: u64 = 0x038;
/// Start of the mirrored FIFO.
pub const REG_FIFO: u64 = 0x040;
/// Pop-on-read FIFO data port, SPI bus only (see the module docs); not in the memfd.
pub const REG_FIFO_DATA: u64 = 0x1F00;
/// `BUS_XFERS` (u64): SPI transfers the bus thread served for this device (simulator).
pub const REG_BUS_TRANSFERS: u64 = 0x1800;
/// `BUS_BUSY` (u64): ns the SPI bus was busy with this device's transfers (simulator).
pub const REG_BUS_BUSY_NS: u64 = 0x1808;
/// Bytes of an SPI command header.
pub const SPI_CMD_LEN: usize = 12;
/// SPI command op: read.
pub const SPI_OP_READ: u8 = 1;
/// SPI command op: write (posted, no response).
pub const SPI_OP_WRITE: u8 = 2;
/// SPI command op: transaction of reads, one response (see the module docs).
pub const SPI_OP_TRANSACTION: u8 = 3;
/// Most reads in one transaction.
pub const SPI_TRANSACTION_MAX: usize = 8;
/// Default SPI bus time per byte: 800 ns = 8 bits at a 10 MHz SPI clock (the ICM-456xx
/// family's maximum SPI clock is 24 MHz; 10 MHz is a common conservative setting).
pub const DEFAULT_BUS_NS_PER_BYTE: u32 = 800;

/// The block read as "count": `FIFO_COUNT` through `INT_TS` (28 bytes).
pub const COUNT_BLOCK_LEN: usize = (REG_INT_TS + 8 - REG_FIFO_COUNT) as usize;
/// The FIFO burst a reader does: the whole FIFO window.
pub const FIFO_BURST_LEN: usize = FIFO_FRAMES as usize * FRAME_LEN;

/// `STATUS` bit: FIFO not empty.
pub const STATUS_DATA_RDY: u32 = 1;
/// `STATUS` bit: FIFO at or above the watermark.
pub const STATUS_FIFO_THS: u32 = 1 << 1;
/// `STATUS` bit: FIFO full.
pub const STATUS_FIFO_FULL: u32 = 1 << 2;

/// `CONFIG` bit: INT per stored sample.
pub const CONFIG_INT_DATA_RDY: u32 = 1 << 8;
/// `CONFIG` bit: INT when the FIFO reaches the watermark.
pub const CONFIG_INT_WATERMARK: u32 = 1 << 9;
/// `CONFIG` bit: INT when the FIFO becomes full.
pub const CONFIG_INT_FULL: u32 = 1 << 10;

/// Frame header bits.
pub const HDR_VALID: u8 = 1 << 7;
/// Frame carries accelerometer data.
pub const HDR_ACCEL: u8 = 1 << 6;
/// Frame carries gyroscope data.
pub const HDR_GYRO: u8 = 1 << 5;

/// Accelerometer full scale, g.
pub const ACCEL_FS_G: u32 = 16;
/// Gyroscope full scale, degrees per second.
pub const GYRO_FS_DPS: u32 = 2000;

/// Byte offset in the register file of FIFO slot `slot` (0..2*FIFO_FRAMES).
pub fn fifo_slot_offset(slot: u32) -> u64 {
    REG_FIFO + u64::from(slot) * FRAME_LEN as u64
}

/// Offset of the FIFO burst that starts at frame `rd`.
pub fn fifo_burst_offset(rd: u32) -> u64 {
    fifo_slot_offset(rd % FIFO_FRAMES)
}

/// A read command for `len` bytes at register `reg`.
pub fn spi_read_cmd(reg: u64, len: u32) -> [u8; SPI_CMD_LEN] {
    let mut c = [0_u8; SPI_CMD_LEN];
    c[0] = SPI_OP_READ;
    c[4..8].copy_from_slice(&u32::try_from(reg).unwrap_or(u32::MAX).to_le_bytes());
    c[8..12].copy_from_slice(&len.to_le_bytes());
    c
}

/// A write command carrying a u32 value for register `reg` (16 bytes: fits a tiny write).
pub fn spi_write_cmd(reg: u64, value: u32) -> [u8; SPI_CMD_LEN + 4] {
    let mut c = [0_u8; SPI_CMD_LEN + 4];
    c[0] = SPI_OP_WRITE;
    c[4..8].copy_from_slice(&u32::try_from(reg).unwrap_or(u32::MAX).to_le_bytes());
    c[8..12].copy_from_slice(&4_u32.to_le_bytes());
    c[12..16].copy_from_slice(&value.to_le_bytes());
    c
}

/// Writes a transaction command for `reads` (register, bytes) into `out`; returns its length,
/// or `None` if `out` is too small or there are more than [`SPI_TRANSACTION_MAX`] reads.
pub fn spi_transaction_cmd(reads: &[(u64, u32)], out: &mut [u8]) -> Option<usize> {
    let len = SPI_CMD_LEN * (1 + reads.len());
    if reads.len() > SPI_TRANSACTION_MAX || out.len() < len {
        return None;
    }
    out[..SPI_CMD_LEN].fill(0);
    out[0] = SPI_OP_TRANSACTION;
    out[4..8].copy_from_slice(&u32::try_from(reads.len()).ok()?.to_le_bytes());
    let total: u32 = reads.iter().map(|r| r.1).sum();
    out[8..12].copy_from_slice(&total.to_le_bytes());
    for (i, &(reg, n)) in reads.iter().enumerate() {
        let o = SPI_CMD_LEN * (1 + i);
        out[o..o + SPI_CMD_LEN].copy_from_slice(&spi_read_cmd(reg, n));
    }
    Some(len)
}

/// A parsed SPI command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpiCmd {
    /// [`SPI_OP_READ`] or [`SPI_OP_WRITE`].
    pub op: u8,
    /// Register address.
    pub reg: u32,
    /// Read: bytes wanted; write: payload length.
    pub len: u32,
}

impl SpiCmd {
    /// Parses a command message (`None` if it is too short or the op is unknown).
    pub fn parse(b: &[u8]) -> Option<SpiCmd> {
        if b.len() < SPI_CMD_LEN || !matches!(b[0], SPI_OP_READ | SPI_OP_WRITE | SPI_OP_TRANSACTION)
        {
            return None;
        }
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        Some(SpiCmd {
            op: b[0],
            reg: u32_at(4),
            len: u32_at(8),
        })
    }
}

/// Bus time of one transfer moving `data_bytes` bytes: one address byte plus the data, at
/// `ns_per_byte`.
pub fn spi_transfer_ns(data_bytes: usize, ns_per_byte: u32) -> u64 {
    (data_bytes as u64 + 1) * u64::from(ns_per_byte)
}

/// One decoded frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// Header byte.
    pub header: u8,
    /// Temperature, °C above 25.
    pub temp: i8,
    /// Sequence number.
    pub seq: u16,
    /// Accel raw counts.
    pub accel: [i16; 3],
    /// Gyro raw counts.
    pub gyro: [i16; 3],
    /// Low 32 bits of the sampling time (CLOCK_MONOTONIC ns).
    pub ts_low: u32,
}

impl Frame {
    /// Device id from the header.
    pub fn device(&self) -> u8 {
        self.header & 0x0f
    }

    /// Encodes into 20 bytes.
    pub fn encode(&self) -> [u8; FRAME_LEN] {
        let mut b = [0_u8; FRAME_LEN];
        b[0] = self.header;
        b[1] = self.temp.to_le_bytes()[0];
        b[2..4].copy_from_slice(&self.seq.to_le_bytes());
        for k in 0..3 {
            b[4 + 2 * k..6 + 2 * k].copy_from_slice(&self.accel[k].to_le_bytes());
            b[10 + 2 * k..12 + 2 * k].copy_from_slice(&self.gyro[k].to_le_bytes());
        }
        b[16..20].copy_from_slice(&self.ts_low.to_le_bytes());
        b
    }

    /// Decodes 20 bytes (`None` if the valid bit is clear).
    pub fn decode(b: &[u8]) -> Option<Frame> {
        if b.len() < FRAME_LEN || b[0] & HDR_VALID == 0 {
            return None;
        }
        let i16_at = |o: usize| i16::from_le_bytes([b[o], b[o + 1]]);
        Some(Frame {
            header: b[0],
            temp: i8::from_le_bytes([b[1]]),
            seq: u16::from_le_bytes([b[2], b[3]]),
            accel: [i16_at(4), i16_at(6), i16_at(8)],
            gyro: [i16_at(10), i16_at(12), i16_at(14)],
            ts_low: u32::from_le_bytes([b[16], b[17], b[18], b[19]]),
        })
    }
}

/// Extends a 32-bit timestamp to the full CLOCK_MONOTONIC value, given a full time `now_ns`
/// that is later than it by less than 2^32 ns (4.29 s) — like extending a chip's 16-bit
/// timestamp counter with the host clock.
pub fn extend_timestamp(ts_low: u32, now_ns: u64) -> u64 {
    let age = (now_ns as u32).wrapping_sub(ts_low);
    now_ns.wrapping_sub(u64::from(age))
}

/// The "count" block as read by the reader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountBlock {
    /// Bytes in the FIFO at the last sample.
    pub fifo_count: u32,
    /// Frames ever stored.
    pub wr: u32,
    /// Frames ever consumed (as the simulator last saw it).
    pub rd: u32,
    /// Samples dropped on a full FIFO.
    pub dropped: u64,
    /// Time of the last INT edge.
    pub int_ts_ns: u64,
}

impl CountBlock {
    /// Parses the [`COUNT_BLOCK_LEN`] bytes read at [`REG_FIFO_COUNT`].
    pub fn parse(b: &[u8]) -> CountBlock {
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | (u64::from(u32_at(o + 4)) << 32);
        CountBlock {
            fifo_count: u32_at(0),
            wr: u32_at(4),
            rd: u32_at(8),
            dropped: u64_at(12),
            int_ts_ns: u64_at(20),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_round_trips() {
        let f = Frame {
            header: HDR_VALID | HDR_ACCEL | 3,
            temp: -4,
            seq: 65535,
            accel: [1, -2, 3],
            gyro: [-32768, 0, 32767],
            ts_low: 0xdead_beef,
        };
        assert_eq!(Frame::decode(&f.encode()), Some(f));
        assert_eq!(f.device(), 3);
        assert_eq!(Frame::decode(&[0; 20]), None);
    }

    #[test]
    fn timestamps_extend_across_the_wrap() {
        let now = (5_u64 << 32) + 10;
        let sample = now - 100;
        assert_eq!(extend_timestamp(sample as u32, now), sample);
        assert_eq!(COUNT_BLOCK_LEN, 28);
        assert_eq!(fifo_burst_offset(FIFO_FRAMES + 1), fifo_slot_offset(1));
        assert!(fifo_slot_offset(2 * FIFO_FRAMES) as usize <= REGFILE_LEN);
    }

    #[test]
    fn spi_commands_round_trip() {
        let c = SpiCmd::parse(&spi_read_cmd(REG_FIFO_DATA, 2040)).unwrap();
        assert_eq!((c.op, c.reg, c.len), (SPI_OP_READ, 0x1F00, 2040));
        let w = spi_write_cmd(REG_CONFIG, 0x301);
        let c = SpiCmd::parse(&w).unwrap();
        assert_eq!((c.op, c.reg, c.len), (SPI_OP_WRITE, 4, 4));
        assert_eq!(u32::from_le_bytes([w[12], w[13], w[14], w[15]]), 0x301);
        assert!(w.len() <= crate::rtio::TINY_WRITE_MAX);
        assert_eq!(SpiCmd::parse(&[9; 12]), None);
        assert_eq!(SpiCmd::parse(&[1; 4]), None);
        assert_eq!(spi_transfer_ns(4, 800), 4000);
        let mut t = [0_u8; 64];
        let n = spi_transaction_cmd(&[(REG_STATUS, 4), (REG_FIFO_COUNT, 28)], &mut t).unwrap();
        assert_eq!(n, 36);
        let h = SpiCmd::parse(&t).unwrap();
        assert_eq!((h.op, h.reg, h.len), (SPI_OP_TRANSACTION, 2, 32));
        assert_eq!(SpiCmd::parse(&t[24..]).unwrap().reg, 0x14);
        assert_eq!(spi_transaction_cmd(&[(0, 1); 9], &mut [0; 256]), None);
    }
}
