//! The Linux system interface of preempt and its real-time I/O layer.
//!
//! All libc FFI of the project (but the futex calls of `preempt-sync`) lives in [`sys`],
//! behind safe functions that return `std::io::Result`.

pub mod fd;
pub mod rtio;
pub mod sys;
