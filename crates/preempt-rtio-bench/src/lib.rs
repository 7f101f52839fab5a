//! `rtio-bench`: the Zephyr RTIO talk's benchmark table (seed `000_*`) on Linux.
//!
//! Each *cell* runs the `imu-sim` simulator (pinned to one CPU, SCHED_FIFO) with an IMU at
//! 3200 or 6400 Hz plus 0-2 extra accelerometers at 100/400 Hz, and a consumer pinned to the
//! other CPU that reads every device's FIFO on each interrupt, decodes the frames and runs
//! `--work-us` of per-sample compute:
//!
//! * **thread-based**: one SCHED_FIFO thread per device, blocked in `read(INT eventfd)`, then
//!   `pread` STATUS, `pread` count block, `pread` FIFO burst, process, `pwrite` FIFO_RD
//!   (five syscalls and one wake-up per interrupt per device);
//! * **RTIO-based**: one thread with an [`Rtio`](preempt_io::rtio::Rtio) context holding one
//!   linked chain per device (write FIFO_RD → read INT → read STATUS → read count → read FIFO,
//!   see `preempt_io::rtio::sensor`); it sleeps in one `io_uring_enter` for all devices.
//!
//! Per cell it reports the consumer CPU's load from `/proc/stat` (which, like Zephyr's
//! `cpu_load`, includes interrupt time), the process CPU time, latency from the sample's
//! store (= interrupt) to processed, the jitter of the IMU's processing period against
//! 1/ODR, missed events (sequence gaps; FIFO-full drops separately) and context switches per
//! sample. `--sweep` raises `--work-us` until each design first misses an event.
//!
//! Threats to validity are in the output: other load on the machine (two shared vCPUs), the
//! simulator's own overruns (`sim_overruns`), and whether SCHED_FIFO was granted.

pub mod cell;
pub mod cli;
pub mod report;
