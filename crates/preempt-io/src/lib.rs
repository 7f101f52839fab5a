//! The Linux system interface of preempt and its real-time I/O layer.
//!
//! All libc FFI of the project (but the futex calls of `preempt-sync`) lives in [`sys`],
//! behind safe functions that return `std::io::Result`.
//!
//! [`rtio`] is the real-time I/O layer: Zephyr's RTIO submission/completion model (fixed
//! pools, I/O devices, chains, transactions, mempool, multishot, cancellation) executed by
//! io_uring — chains of reads become linked SQEs the kernel runs without waking the caller —
//! or by epoll where io_uring is unavailable, plus sensor streaming and decoding in Zephyr's
//! shape (`rtio::sensor`) and the register map of the simulated IMU (`rtio::simimu`).
//!
//! [`ratelog`] bounds the diagnostics that input from outside can trigger (a line per event
//! for the first few, then a count per interval).

pub mod fd;
pub mod ratelog;
pub mod rtio;
pub mod sys;
