//! Scheduling policies and CPU affinity of threads (`sched_setattr(2)`, `sched_setaffinity(2)`).
//!
//! One [`Policy`] enum covers every Linux policy, `SCHED_DEADLINE` included, and one call,
//! `sched_setattr`, sets any of them. glibc has no wrapper for `sched_setattr`, so it is
//! called through `syscall(2)` with the kernel's `struct sched_attr`.
//!
//! ```no_run
//! use preempt_io::sys::sched::{self, Policy};
//! // Needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 80.
//! sched::set_current_thread_policy(&Policy::Fifo { priority: 80 })?;
//! sched::set_current_thread_affinity(&[1])?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;

use super::rtcause;

/// The lowest real-time priority (`SCHED_FIFO`, `SCHED_RR`).
pub const MIN_RT_PRIORITY: u8 = 1;
/// The highest real-time priority (`SCHED_FIFO`, `SCHED_RR`).
pub const MAX_RT_PRIORITY: u8 = 99;

/// `SCHED_DEADLINE`'s policy number (`include/uapi/linux/sched.h`); libc does not export it.
const SCHED_DEADLINE: u32 = 6;
/// `SCHED_FLAG_RESET_ON_FORK`: children of a real-time thread start as `SCHED_OTHER`.
const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;

/// A Linux scheduling policy with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `SCHED_OTHER` (CFS/EEVDF) with a nice value in -20..=19.
    Other {
        /// Nice value: -20 (most favoured) to 19.
        nice: i32,
    },
    /// `SCHED_BATCH`: like `Other`, for non-interactive CPU-bound work.
    Batch {
        /// Nice value: -20 to 19.
        nice: i32,
    },
    /// `SCHED_IDLE`: runs only when nothing else wants the CPU.
    Idle,
    /// `SCHED_FIFO` at a priority in 1..=99: runs until it blocks or a higher priority preempts.
    Fifo {
        /// Real-time priority, 1..=99.
        priority: u8,
    },
    /// `SCHED_RR` at a priority in 1..=99: like FIFO, with a time slice among equals.
    RoundRobin {
        /// Real-time priority, 1..=99.
        priority: u8,
    },
    /// `SCHED_DEADLINE`: a constant-bandwidth server with `runtime <= deadline <= period`.
    Deadline {
        /// CPU time reserved each period, ns (at least 1024 ns).
        runtime_ns: u64,
        /// Relative deadline, ns.
        deadline_ns: u64,
        /// Period, ns.
        period_ns: u64,
    },
}

impl Policy {
    /// The policy's name as the kernel documents it (`SCHED_FIFO`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Other { .. } => "SCHED_OTHER",
            Policy::Batch { .. } => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Fifo { .. } => "SCHED_FIFO",
            Policy::RoundRobin { .. } => "SCHED_RR",
            Policy::Deadline { .. } => "SCHED_DEADLINE",
        }
    }

    /// Whether this is a real-time policy (FIFO, RR or DEADLINE).
    pub fn is_real_time(&self) -> bool {
        matches!(
            self,
            Policy::Fifo { .. } | Policy::RoundRobin { .. } | Policy::Deadline { .. }
        )
    }

    /// What this policy asks of the kernel's real-time admission ([`rtcause`] explains a
    /// refusal from it); `None` for the policies that are not real-time.
    pub fn rt_request(&self) -> Option<rtcause::Request> {
        match *self {
            Policy::Fifo { priority } | Policy::RoundRobin { priority } => {
                Some(rtcause::Request::Priority(priority))
            }
            Policy::Deadline { .. } => Some(rtcause::Request::Deadline),
            _ => None,
        }
    }

    /// Checks the parameters before the kernel sees them, with an error that says what is wrong.
    ///
    /// # Errors
    /// `InvalidInput` naming the parameter and its allowed range.
    pub fn validate(&self) -> io::Result<()> {
        let invalid = |msg: String| Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
        match *self {
            Policy::Other { nice } | Policy::Batch { nice } if !(-20..=19).contains(&nice) => {
                invalid(format!("nice value {nice} is outside -20..=19"))
            }
            Policy::Fifo { priority } | Policy::RoundRobin { priority }
                if !(MIN_RT_PRIORITY..=MAX_RT_PRIORITY).contains(&priority) =>
            {
                invalid(format!(
                    "real-time priority {priority} is outside {MIN_RT_PRIORITY}..={MAX_RT_PRIORITY}"
                ))
            }
            Policy::Deadline {
                runtime_ns,
                deadline_ns,
                period_ns,
            } => {
                if runtime_ns < 1024 {
                    invalid(format!(
                        "SCHED_DEADLINE runtime {runtime_ns} ns is below the kernel's minimum of 1024 ns"
                    ))
                } else if !(runtime_ns <= deadline_ns && deadline_ns <= period_ns) {
                    invalid(format!(
                        "SCHED_DEADLINE needs runtime <= deadline <= period, got {runtime_ns} ns, \
                         {deadline_ns} ns, {period_ns} ns"
                    ))
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }

    fn to_attr(self) -> SchedAttr {
        let mut attr = SchedAttr {
            size: SCHED_ATTR_SIZE,
            ..SchedAttr::default()
        };
        match self {
            Policy::Other { nice } => {
                attr.sched_policy = policy_number(libc::SCHED_OTHER);
                attr.sched_nice = nice;
            }
            Policy::Batch { nice } => {
                attr.sched_policy = policy_number(libc::SCHED_BATCH);
                attr.sched_nice = nice;
            }
            Policy::Idle => attr.sched_policy = policy_number(libc::SCHED_IDLE),
            Policy::Fifo { priority } => {
                attr.sched_policy = policy_number(libc::SCHED_FIFO);
                attr.sched_priority = u32::from(priority);
            }
            Policy::RoundRobin { priority } => {
                attr.sched_policy = policy_number(libc::SCHED_RR);
                attr.sched_priority = u32::from(priority);
            }
            Policy::Deadline {
                runtime_ns,
                deadline_ns,
                period_ns,
            } => {
                attr.sched_policy = SCHED_DEADLINE;
                attr.sched_runtime = runtime_ns;
                attr.sched_deadline = deadline_ns;
                attr.sched_period = period_ns;
            }
        }
        if self.is_real_time() {
            attr.sched_flags |= SCHED_FLAG_RESET_ON_FORK;
        }
        attr
    }

    fn from_attr(attr: &SchedAttr) -> io::Result<Policy> {
        let priority = || {
            u8::try_from(attr.sched_priority)
                .map_err(|_| io::Error::other("kernel reported a priority above 255"))
        };
        Ok(match attr.sched_policy {
            SCHED_DEADLINE => Policy::Deadline {
                runtime_ns: attr.sched_runtime,
                deadline_ns: attr.sched_deadline,
                period_ns: attr.sched_period,
            },
            p if p == policy_number(libc::SCHED_FIFO) => Policy::Fifo {
                priority: priority()?,
            },
            p if p == policy_number(libc::SCHED_RR) => Policy::RoundRobin {
                priority: priority()?,
            },
            p if p == policy_number(libc::SCHED_BATCH) => Policy::Batch {
                nice: attr.sched_nice,
            },
            p if p == policy_number(libc::SCHED_IDLE) => Policy::Idle,
            _ => Policy::Other {
                nice: attr.sched_nice,
            },
        })
    }
}

fn policy_number(policy: libc::c_int) -> u32 {
    // The policy constants are small non-negative numbers (0..=6).
    u32::try_from(policy).unwrap_or(u32::MAX)
}

/// The kernel's `struct sched_attr` (`include/uapi/linux/sched/types.h`), version 1 (with the
/// utilisation clamps, which preempt leaves at zero).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
    sched_util_min: u32,
    sched_util_max: u32,
}

/// `SCHED_ATTR_SIZE_VER1`: 56 bytes.
const SCHED_ATTR_SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;
const _: () = assert!(std::mem::size_of::<SchedAttr>() == 56);

/// Sets the scheduling policy of thread `tid` (0 = the calling thread).
///
/// Real-time policies are set with `SCHED_FLAG_RESET_ON_FORK`, so processes started from a
/// real-time thread (a shell-out, a logger) do not inherit its priority.
///
/// # Errors
/// `InvalidInput` from [`Policy::validate`]; `EPERM` (`PermissionDenied`) with its causes and
/// fix read from the process ([`rtcause`]: no CAP_SYS_NICE and too low an RLIMIT_RTPRIO, a
/// cpu cgroup without real-time budget, ...); `EBUSY` when SCHED_DEADLINE admission control
/// refuses the bandwidth; `ESRCH` for an unknown thread.
pub fn set_thread_policy(tid: i32, policy: &Policy) -> io::Result<()> {
    policy.validate()?;
    let Err(err) = set_attr(tid, policy) else {
        return Ok(());
    };
    Err(match err.raw_os_error() {
        Some(libc::EPERM) if policy.is_real_time() => {
            let request = policy.rt_request().unwrap_or(rtcause::Request::Deadline);
            let cgroups = if tid == 0 {
                "/proc/thread-self/cgroup".to_string()
            } else {
                format!("/proc/{tid}/cgroup")
            };
            let causes =
                rtcause::explain_rt_refusal(libc::EPERM, request, std::path::Path::new(&cgroups));
            let text = |f: fn(&rtcause::Cause) -> String| {
                causes.iter().map(f).collect::<Vec<_>>().join("; and ")
            };
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "not permitted to set {} (EPERM): {}; fix: {}",
                    policy.name(),
                    text(rtcause::Cause::describe),
                    text(rtcause::Cause::fix)
                ),
            )
        }
        Some(libc::EBUSY) if matches!(policy, Policy::Deadline { .. }) => io::Error::new(
            io::ErrorKind::ResourceBusy,
            "SCHED_DEADLINE admission control refused the bandwidth (runtime/period too large \
             for the free capacity, or the thread's CPU affinity is not a whole root domain)",
        ),
        _ => err,
    })
}

/// Sets the scheduling policy of the calling thread and returns the kernel's error as it is
/// (`raw_os_error` set, no explanation): for [`crate::sys::rtprobe`], which explains a refusal
/// itself. Prefer [`set_current_thread_policy`].
///
/// # Errors
/// `InvalidInput` from [`Policy::validate`], else the errno of `sched_setattr`.
pub fn try_set_current_thread_policy(policy: &Policy) -> io::Result<()> {
    policy.validate()?;
    set_attr(0, policy)
}

/// `sched_setattr(tid, policy)`, the errno as the kernel gave it.
fn set_attr(tid: i32, policy: &Policy) -> io::Result<()> {
    let attr = policy.to_attr();
    // SAFETY: SYS_sched_setattr takes (pid_t, struct sched_attr *, unsigned int flags); `attr`
    // is a fully initialised sched_attr whose `size` field tells the kernel its layout, and it
    // outlives the call. The kernel only reads through the pointer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            tid,
            &attr as *const SchedAttr,
            0_u32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the scheduling policy of the calling thread. See [`set_thread_policy`].
///
/// # Errors
/// As [`set_thread_policy`].
pub fn set_current_thread_policy(policy: &Policy) -> io::Result<()> {
    set_thread_policy(0, policy)
}

/// Reads the scheduling policy of the calling thread (`sched_getattr`).
///
/// # Errors
/// Whatever `sched_getattr` reports.
pub fn current_thread_policy() -> io::Result<Policy> {
    thread_policy(0)
}

/// Reads the scheduling policy of thread `tid` (0 = the calling thread).
///
/// # Errors
/// `ESRCH` for an unknown thread.
pub fn thread_policy(tid: i32) -> io::Result<Policy> {
    let mut attr = SchedAttr::default();
    // SAFETY: SYS_sched_getattr takes (pid_t, struct sched_attr *, unsigned int size, unsigned
    // int flags); `attr` is writable and `SCHED_ATTR_SIZE` bytes long, which the kernel will not
    // exceed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut SchedAttr,
            SCHED_ATTR_SIZE,
            0_u32,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Policy::from_attr(&attr)
}

/// Pins the calling thread to `cpus`.
///
/// # Errors
/// `InvalidInput` for an empty list or a CPU number the mask cannot hold; `EINVAL` from the
/// kernel when none of the CPUs is online or allowed by the cpuset.
pub fn set_current_thread_affinity(cpus: &[usize]) -> io::Result<()> {
    if cpus.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an empty CPU list cannot run a thread",
        ));
    }
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for &cpu in cpus {
        if cpu >= max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is beyond the {max} CPUs a cpu_set_t holds"),
            ));
        }
        // SAFETY: `cpu` is below the number of bits in `set` (checked just above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t and its size is passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        let err = io::Error::last_os_error();
        return Err(io::Error::new(
            err.kind(),
            format!("cannot pin thread to CPUs {cpus:?}: {err}"),
        ));
    }
    Ok(())
}

/// The CPUs the calling thread may run on.
///
/// # Errors
/// Whatever `sched_getaffinity` reports.
pub fn current_thread_affinity() -> io::Result<Vec<usize>> {
    // SAFETY: all-zero is a valid (empty) cpu_set_t.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is writable and its size is passed; pid 0 is the calling thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    Ok((0..max)
        // SAFETY: every `cpu` is below the number of bits in `set`.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// The kernel thread id of the calling thread (`gettid`).
#[inline]
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// Gives up the CPU to another thread of the same priority (`sched_yield`).
#[inline]
pub fn yield_now() {
    // SAFETY: sched_yield has no preconditions; on Linux it always succeeds.
    unsafe {
        libc::sched_yield();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn validation_names_the_bad_parameter() {
        let err = Policy::Fifo { priority: 120 }.validate().unwrap_err();
        assert!(err.to_string().contains("120"), "{err}");
        let err = Policy::Other { nice: 30 }.validate().unwrap_err();
        assert!(err.to_string().contains("nice"), "{err}");
        let err = Policy::Deadline {
            runtime_ns: 2_000_000,
            deadline_ns: 1_000_000,
            period_ns: 4_000_000,
        }
        .validate()
        .unwrap_err();
        assert!(err.to_string().contains("runtime <= deadline"), "{err}");
        assert!(Policy::Fifo { priority: 99 }.validate().is_ok());
    }

    #[test]
    fn policy_round_trips_through_the_kernel() {
        // Runs on a thread of its own so the test harness thread keeps its policy.
        std::thread::spawn(|| {
            set_current_thread_policy(&Policy::Other { nice: 5 }).unwrap();
            assert_eq!(current_thread_policy().unwrap(), Policy::Other { nice: 5 });
            if !is_root() {
                assert!(
                    !std::env::var("PREEMPT_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1"),
                    "not root, and PREEMPT_REQUIRE_PRIVILEGED=1: the SCHED_FIFO part must run"
                );
                eprintln!("skipped the SCHED_FIFO part: not root");
                return;
            }
            set_current_thread_policy(&Policy::Fifo { priority: 10 }).unwrap();
            assert_eq!(
                current_thread_policy().unwrap(),
                Policy::Fifo { priority: 10 }
            );
            set_current_thread_policy(&Policy::Batch { nice: 0 }).unwrap();
            assert_eq!(current_thread_policy().unwrap(), Policy::Batch { nice: 0 });
        })
        .join()
        .unwrap();
    }

    #[test]
    fn affinity_round_trips() {
        std::thread::spawn(|| {
            let allowed = current_thread_affinity().unwrap();
            assert!(!allowed.is_empty());
            set_current_thread_affinity(&allowed[..1]).unwrap();
            assert_eq!(current_thread_affinity().unwrap(), allowed[..1].to_vec());
            assert!(set_current_thread_affinity(&[]).is_err());
            assert!(set_current_thread_affinity(&[1 << 20]).is_err());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn tid_is_positive() {
        assert!(current_tid() > 0);
    }
}
