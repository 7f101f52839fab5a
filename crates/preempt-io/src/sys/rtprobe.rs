//! Asks the kernel: may this process run real-time threads and lock its memory?
//!
//! A readiness check that reads capabilities and resource limits passes where the kernel
//! refuses: a root process in a cpu cgroup with no real-time budget holds CAP_SYS_NICE and
//! still gets `EPERM` (see [`crate::sys::rtcause`]). So the probes here do what the app will
//! do and report what the kernel answered: [`probe_policy`] sets the policy on a throwaway
//! thread (the caller's own policy is untouched), [`probe_memlock`] calls
//! `mlockall(MCL_CURRENT | MCL_FUTURE)` and undoes it. A refusal comes with its errno and its
//! causes; capabilities and limits only explain it.
//!
//! `preempt check`, the start-up check of a `#[preempt::app]` and the doctor share these.
//!
//! ```no_run
//! use preempt_io::sys::{rtprobe, sched::Policy};
//! match rtprobe::probe_policy(&Policy::Fifo { priority: 80 }) {
//!     Ok(()) => println!("SCHED_FIFO 80 granted"),
//!     Err(refusal) => println!("refused: {refusal}"),
//! }
//! ```

use std::fmt;

use super::rtcause::{self, Cause};
use super::{mem, sched};

/// The probe thread's stack: it makes two system calls. Small, because under an earlier
/// `mlockall(MCL_FUTURE)` (a running app, `preempt monitor`) the whole stack is faulted in
/// and locked when the thread starts.
const PROBE_STACK: usize = 64 * 1024;

/// The kernel said no.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// What was asked, as the kernel names it (`SCHED_FIFO 80`, `mlockall`).
    pub what: String,
    /// The errno.
    pub errno: i32,
    /// Why, most fundamental first; never empty.
    pub causes: Vec<Cause>,
}

impl Refusal {
    /// Every cause's description, joined.
    pub fn describe(&self) -> String {
        self.causes
            .iter()
            .map(Cause::describe)
            .collect::<Vec<_>>()
            .join("; and ")
    }

    /// Every cause's fix, joined.
    pub fn fix(&self) -> String {
        self.causes
            .iter()
            .map(Cause::fix)
            .collect::<Vec<_>>()
            .join("; and ")
    }

    /// The causes' ids, joined by `+` (`rt_group_budget`).
    pub fn ids(&self) -> String {
        self.causes
            .iter()
            .map(Cause::id)
            .collect::<Vec<_>>()
            .join("+")
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} refused: {}: {} [{}]; fix: {}",
            self.what,
            rtcause::errno_text(self.errno),
            self.describe(),
            self.ids(),
            self.fix()
        )
    }
}

impl std::error::Error for Refusal {}

/// The name and priority of `policy` as a user writes it (`SCHED_FIFO 80`).
pub fn policy_label(policy: &sched::Policy) -> String {
    match policy {
        sched::Policy::Fifo { priority } | sched::Policy::RoundRobin { priority } => {
            format!("{} {priority}", policy.name())
        }
        _ => policy.name().to_string(),
    }
}

/// Sets `policy` on a new thread that then exits, and returns what the kernel said; the
/// causes of a refusal are read on that thread (its cgroup is the one that refused).
///
/// # Errors
/// The [`Refusal`]; a thread that cannot be created, or a policy [`sched::Policy::validate`]
/// rejects, is a refusal whose cause is [`Cause::Unknown`] with that error as evidence.
pub fn probe_policy(policy: &sched::Policy) -> Result<(), Refusal> {
    let policy = *policy;
    let what = policy_label(&policy);
    let unknown = |errno: i32, evidence: String| Refusal {
        what: what.clone(),
        errno,
        causes: vec![Cause::Unknown { evidence }],
    };
    if let Err(err) = policy.validate() {
        return Err(unknown(libc::EINVAL, err.to_string()));
    }
    let label = what.clone();
    let thread = std::thread::Builder::new()
        .name("preempt-probe".into())
        .stack_size(PROBE_STACK)
        .spawn(move || -> Result<(), Refusal> {
            let Err(err) = sched::try_set_current_thread_policy(&policy) else {
                // Back to SCHED_OTHER at once: granted at a high priority, the thread would
                // otherwise preempt the caller's own real-time threads while it exits (a
                // running app, `preempt monitor`'s loops). Lowering needs no privilege.
                let _ = sched::try_set_current_thread_policy(&sched::Policy::Other { nice: 0 });
                return Ok(());
            };
            let errno = err.raw_os_error().unwrap_or(libc::EPERM);
            let causes = match policy.rt_request() {
                Some(request) => rtcause::explain_current_rt_refusal(errno, request),
                None => vec![Cause::Unknown {
                    evidence: err.to_string(),
                }],
            };
            Err(Refusal {
                what: label,
                errno,
                causes,
            })
        });
    match thread {
        Ok(handle) => handle.join().unwrap_or_else(|_| {
            Err(unknown(
                libc::EINVAL,
                "the probe thread panicked".to_string(),
            ))
        }),
        Err(err) => Err(unknown(
            err.raw_os_error().unwrap_or(libc::EAGAIN),
            format!("cannot start the probe thread: {err}"),
        )),
    }
}

/// What [`probe_memlock`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemlockProbe {
    /// The process already holds locked memory (`VmLck`, KiB): not probed, so that the probe
    /// never undoes an app's lock.
    AlreadyLocked {
        /// `VmLck` in KiB.
        kib: u64,
    },
    /// `mlockall(MCL_CURRENT | MCL_FUTURE)` succeeded for this many KiB, and was undone.
    Granted {
        /// `VmLck` while locked, KiB.
        kib: u64,
    },
    /// The kernel refused.
    Refused(Refusal),
}

/// Calls `mlockall(MCL_CURRENT | MCL_FUTURE)` and undoes it with `munlockall`, unless the
/// process already has locked memory (then [`MemlockProbe::AlreadyLocked`]: unlocking would
/// undo the app's own lock). For a process that does not lock its memory otherwise; the
/// probe faults in every mapped page once.
pub fn probe_memlock() -> MemlockProbe {
    let vmlck = || {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| rtcause::status_kib(&s, "VmLck"))
    };
    if let Some(kib) = vmlck().filter(|&k| k > 0) {
        return MemlockProbe::AlreadyLocked { kib };
    }
    match mem::try_lock_all_memory() {
        Ok(()) => {
            let kib = vmlck().unwrap_or(0);
            // The probe's lock must not outlive it: a failure to undo it would leave the
            // process locked, which is what this call reports.
            if let Err(err) = mem::unlock_all_memory() {
                return MemlockProbe::Refused(Refusal {
                    what: "munlockall".into(),
                    errno: err.raw_os_error().unwrap_or(libc::EINVAL),
                    causes: vec![Cause::Unknown {
                        evidence: format!("munlockall after the probe: {err}"),
                    }],
                });
            }
            MemlockProbe::Granted { kib }
        }
        Err(err) => {
            let errno = err.raw_os_error().unwrap_or(libc::ENOMEM);
            MemlockProbe::Refused(Refusal {
                what: "mlockall(MCL_CURRENT | MCL_FUTURE)".into(),
                errno,
                causes: vec![rtcause::explain_memlock_refusal(errno)],
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sched_other_is_always_granted_and_leaves_the_caller_alone() {
        let before = sched::current_thread_policy().unwrap();
        probe_policy(&sched::Policy::Other { nice: 0 }).unwrap();
        assert_eq!(sched::current_thread_policy().unwrap(), before);
    }

    #[test]
    fn the_probe_agrees_with_the_kernel_for_sched_fifo() {
        let policy = sched::Policy::Fifo { priority: 1 };
        let before = sched::current_thread_policy().unwrap();
        let probed = probe_policy(&policy);
        // The same request from a thread of our own: the probe must give the same answer.
        let direct = std::thread::spawn(move || sched::try_set_current_thread_policy(&policy))
            .join()
            .unwrap();
        assert_eq!(probed.is_ok(), direct.is_ok(), "{probed:?} vs {direct:?}");
        if let (Err(refusal), Err(err)) = (&probed, &direct) {
            assert_eq!(Some(refusal.errno), err.raw_os_error());
            assert!(!refusal.causes.is_empty());
            let text = refusal.to_string();
            assert!(text.starts_with("SCHED_FIFO 1 refused: "), "{text}");
            if caps_root() {
                assert!(!text.contains("run as root"), "{text}");
            }
        }
        assert_eq!(sched::current_thread_policy().unwrap(), before);
    }

    #[test]
    fn an_invalid_policy_is_a_refusal_that_says_why() {
        let r = probe_policy(&sched::Policy::Fifo { priority: 120 }).unwrap_err();
        assert_eq!(r.errno, libc::EINVAL);
        assert!(r.describe().contains("120"), "{r}");
    }

    #[test]
    fn the_memory_probe_leaves_an_unlocked_process_unlocked() {
        let vmlck = || {
            rtcause::status_kib(
                &std::fs::read_to_string("/proc/self/status").unwrap(),
                "VmLck",
            )
            .unwrap()
        };
        if vmlck() > 0 {
            eprintln!("skipped: this test process already locks memory");
            return;
        }
        match probe_memlock() {
            MemlockProbe::Granted { kib } => assert!(kib > 0, "nothing was locked"),
            MemlockProbe::Refused(r) => {
                assert_eq!(r.causes[0].id(), "memlock", "{r}");
            }
            MemlockProbe::AlreadyLocked { kib } => panic!("VmLck was 0, the probe saw {kib}"),
        }
        assert_eq!(vmlck(), 0, "the probe left memory locked");
    }

    fn caps_root() -> bool {
        super::super::caps::is_root()
    }
}
