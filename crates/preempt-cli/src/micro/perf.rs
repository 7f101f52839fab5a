//! Cross-check of the cycle counts with the kernel's own counters (`perf_event_open`), the
//! in-process equivalent of `perf stat -e cycles`.
//!
//! # Background
//! Issue 6 asks that `micro`'s cycle counts agree with `perf stat` where perf counters are
//! available. On a machine with a PMU, `PERF_COUNT_HW_CPU_CYCLES` counts core cycles of the
//! calling thread; in many VMs (this project's CI VM included: `perf stat -e cycles true`
//! prints `<not supported>`) there is no PMU, but the `msr` PMU's `tsc` event still counts TSC
//! ticks while the thread runs, which checks the counter reads and their conversion.
//!
//! # What this VM gives (2 vCPU AMD EPYC guest, kernel 6.18, perf 6.1, as root)
//! ```text
//! $ perf stat -e cycles,instructions,ref-cycles,task-clock true
//!    <not supported>      cycles
//!    <not supported>      instructions
//!    <not supported>      ref-cycles
//!               0.46 msec task-clock
//! $ ls /sys/bus/event_source/devices/
//! breakpoint  msr  software  tracepoint  uprobe        # no "cpu" PMU: no hardware counters
//! $ perf stat -e msr/tsc/ -- sleep 0.1
//!            2154701      msr/tsc/                     # TSC ticks while the task ran
//! ```
//! So here the cross-check uses `msr/tsc/`. On `preempt micro` (default scale, release build)
//! it agrees with the in-loop TSC figures within a few per cent for the operations that never
//! block (malloc +3.3 %, free +1.8 %, mutex lock+unlock −3.2 %, pthread_create +0.1 %); the
//! PI mutex pair reads +17 % (its loop does more work than the samples cover). For operations
//! that sleep (pthread_join waits for the children to run) perf counts only on-CPU time, so it
//! reads far less (−73 %): that is the counter's definition, not an error of either figure.
//! With hardware `cycles` (bare metal) the figure is core cycles, which equal TSC ticks only
//! when the core runs at the TSC's nominal frequency.
//!
//! # Solution
//! [`Counter::open`] tries hardware cycles first, then `msr/tsc/`; [`Counter::read`] is read
//! before and after a benchmark loop on the same thread. The loop also contains the two timing
//! reads and the store of each sample, so perf's per-operation figure is expected to be about
//! the mean sample plus one timing bracket ([`PerfCheck::expected_ticks_per_op`]).

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub use crate::results::micro::PerfCheck;

/// `perf_event_attr` up to `config1` (`PERF_ATTR_SIZE_VER0`, 64 bytes): the fields this module
/// sets; the kernel accepts any published size (include/uapi/linux/perf_event.h).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_HARDWARE: u32 = 0;
/// `PERF_FLAG_FD_CLOEXEC` (`1UL << 3`, include/uapi/linux/perf_event.h); not in `libc`.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
/// `exclude_hv` bit of the flags bitfield (bit 6): hypervisor cycles are not the thread's.
const FLAG_EXCLUDE_HV: u64 = 1 << 6;

/// One counter of the calling thread.
#[derive(Debug)]
pub struct Counter {
    fd: OwnedFd,
    /// `cycles` or `msr/tsc/`.
    pub event: &'static str,
}

fn open_event(type_: u32, config: u64, flags: u64) -> io::Result<OwnedFd> {
    let attr = PerfEventAttr {
        type_,
        size: u32::try_from(std::mem::size_of::<PerfEventAttr>()).expect("64 bytes"),
        config,
        flags,
        ..Default::default()
    };
    // SAFETY: `attr` is a valid, initialised perf_event_attr of the size it declares and lives
    // across the call; pid 0 / cpu -1 means "this thread, any CPU"; group_fd -1 means no
    // group; the flag only asks for close-on-exec.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd =
        i32::try_from(fd).map_err(|_| io::Error::other("perf_event_open returned a bad fd"))?;
    // SAFETY: the syscall succeeded, so `fd` is an open descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn msr_tsc() -> io::Result<(u32, u64)> {
    let dir = "/sys/bus/event_source/devices/msr";
    let type_: u32 = fs::read_to_string(format!("{dir}/type"))?
        .trim()
        .parse()
        .map_err(|_| io::Error::other("bad msr PMU type"))?;
    let event = fs::read_to_string(format!("{dir}/events/tsc"))?;
    let config = event
        .trim()
        .strip_prefix("event=")
        .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        .ok_or_else(|| io::Error::other("bad msr/tsc event"))?;
    Ok((type_, config))
}

impl Counter {
    /// Opens the best available counter for the calling thread, or says why there is none.
    pub fn open() -> Result<Self, String> {
        let hw = match open_event(
            PERF_TYPE_HARDWARE,
            PERF_COUNT_HW_CPU_CYCLES,
            FLAG_EXCLUDE_HV,
        ) {
            Ok(fd) => {
                return Ok(Self {
                    fd,
                    event: "cycles",
                });
            }
            Err(e) => e,
        };
        // The msr PMU refuses every exclude_* filter with EINVAL (arch/x86/events/msr.c).
        match msr_tsc().and_then(|(t, c)| open_event(t, c, 0)) {
            Ok(fd) => Ok(Self {
                fd,
                event: "msr/tsc/",
            }),
            Err(e) => Err(format!(
                "no perf counter: hardware cycles: {hw}; msr/tsc: {e} (a VM without a virtual \
                 PMU, or perf_event_paranoid forbids it)"
            )),
        }
    }

    /// The current count.
    pub fn read(&self) -> io::Result<u64> {
        let mut buf = [0u8; 8];
        // SAFETY: `buf` is 8 writable bytes, the size of a perf counter read without
        // read_format; the fd is open for the lifetime of `self`.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n != 8 {
            return Err(if n < 0 {
                io::Error::last_os_error()
            } else {
                io::Error::other("short perf read")
            });
        }
        Ok(u64::from_ne_bytes(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_opens_or_says_why() {
        match Counter::open() {
            Ok(c) => {
                let a = c.read().unwrap();
                let mut x = 0u64;
                for i in 0..100_000u64 {
                    x = std::hint::black_box(x.wrapping_add(i));
                }
                assert!(c.read().unwrap() > a, "{} did not count", c.event);
            }
            Err(why) => assert!(why.contains("no perf counter"), "{why}"),
        }
    }

    #[test]
    fn check_arithmetic() {
        let c = PerfCheck::new("msr/tsc/", 11_000, 100, 100.0).unwrap();
        assert_eq!((c.per_op, c.deviation_pct), (110.0, 10.0));
        assert!(PerfCheck::new("cycles", 1, 0, 1.0).is_none());
    }
}
