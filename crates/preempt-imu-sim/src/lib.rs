//! A simulated ICM-45686-class IMU for the RTIO layer and its benchmark.
//!
//! The simulator ([`sim::run`], binary `imu-sim`) is a separate, pinned, SCHED_FIFO process
//! driven by an absolute periodic timerfd at 3200 or 6400 Hz. Each device it simulates (the
//! IMU, plus optional accelerometers at 100/400 Hz) is a memfd *register file* holding status,
//! count and a 2 KiB FIFO of timestamped, sequence-numbered 20-byte frames, and an eventfd
//! *INT line* raised per sample or at the watermark. The FIFO overflows like the chip's:
//! samples that find it full are dropped and counted, leaving a sequence gap ([`fifo`]).
//!
//! Readers (`preempt_io::rtio::sensor`, the thread-based reader of `rtio-bench`) do their "bus
//! transfers" as `pread`s on the register file, so a driver's status → count → FIFO sequence
//! becomes three linked reads on an RTIO context. The register map is
//! `preempt_io::rtio::simimu`, which also explains how to point the same reader at a real IIO
//! device (`/dev/iio:deviceN`, `inv_icm42600` on a Raspberry Pi).
//!
//! [`spawn::SimProcess`] starts `imu-sim` with the devices' descriptors inherited at fixed
//! numbers; the child dies with its parent (`PR_SET_PDEATHSIG`) and is killed on drop.
//!
//! ```
//! use preempt_imu_sim::fifo::{Fifo, MemRegs, Regs};
//! use preempt_io::rtio::simimu::{Frame, REG_FIFO_WR, HDR_VALID};
//! let regs = MemRegs::default();
//! let mut fifo = Fifo::new();
//! fifo.push(&regs, Frame { header: HDR_VALID, ..Frame::default() }, 0);
//! assert_eq!(regs.load_u32(REG_FIFO_WR), 1);
//! ```

pub mod fifo;
pub mod iio;
pub mod sim;
pub mod spawn;
