//! Safe wrappers over the Linux system calls preempt uses.
//!
//! Every libc call of the project (but the futex calls, which `preempt-sync` owns so that it
//! stands on its own) lives below this module. Each wrapper checks the return value, reads the
//! error from where the API puts it (`errno`, or the return value for `clock_nanosleep` and
//! `pthread_*`), and returns `std::io::Result`. Nothing here allocates on a path that a
//! real-time loop calls (clock reads, sleeps, timer reads).

pub mod caps;
pub mod cgroup;
pub mod clock;
pub mod counter;
pub mod cpu;
pub mod epoll;
pub mod eventfd;
pub mod fdio;
pub mod file;
pub mod gpio;
pub mod interpose;
pub mod kernel;
pub mod limits;
pub mod mem;
pub mod memfd;
pub mod mount;
pub mod process;
pub mod procstat;
pub mod reaper;
pub mod rtcause;
pub mod rtprobe;
pub mod sched;
pub mod schedstat;
pub mod serial;
pub mod signal;
pub mod socket;
pub mod thread;
pub mod timerfd;
