//! Start-up readiness: may this process run its executors as real-time threads?
//!
//! Checked before `init` and before any task runs, so that a missing privilege is a clear
//! error with the fix, and the process exits non-zero, instead of a `sched_setattr` failing
//! inside a thread (the peer crate `linux-rtic` panics in the thread and the process hangs).
//!
//! | fact                          | needed when                          | otherwise            |
//! |-------------------------------|--------------------------------------|----------------------|
//! | the kernel grants SCHED_FIFO at the highest task priority (a probe thread asks it; CAP_SYS_NICE, RLIMIT_RTPRIO and the cpu cgroup's real-time budget explain a refusal) | the app has tasks | error |
//! | CAP_IPC_LOCK, or RLIMIT_MEMLOCK unlimited | always (`mlockall(MCL_CURRENT \| MCL_FUTURE)`; a finite limit would make later allocations fail) | error |
//! | kernel is PREEMPT_RT           | never required                       | warning              |
//! | not under user-mode emulation (qemu-user) | never required            | warning              |
//! | on PREEMPT_RT, no level that idles by spinning above RCU's kthreads (`rcutree.kthread_prio`) | never required | warning |
//!
//! Under user-mode emulation the emulator itself is not real-time safe: qemu-user runs every
//! thread of the app as a host thread and serialises parts of its translator with spin locks
//! that know nothing of priorities. An executor that preempts a lower one inside such a lock
//! spins on it for ever once every CPU runs a spinner. Seen under qemu-user 7.2 on a 2-CPU
//! host: 2 runs in 60 of a three-level app (`runtime_tasks`' `rtic_sync`) hung, gdb showing
//! both higher executors in a `pause` loop in qemu's own text and the lowest one runnable but
//! starved. Under a full-system emulator (qemu-system) the guest kernel schedules the
//! threads and this does not arise. The app still starts (functional tests under qemu-user
//! are useful), with a warning that says so.
//!
//! Soft mode (`PREEMPT_SOFT=1` in the environment) skips the real-time policy and memory
//! locking and prints a loud warning instead: for laptops and unprivileged CI, never for a
//! machine that must meet deadlines.

use std::fmt::Write as _;

use preempt_io::sys::{caps, kernel, limits, rtprobe, sched};

/// The environment variable that selects soft mode.
pub const SOFT_ENV: &str = "PREEMPT_SOFT";

/// What the start-up looked at.
#[derive(Clone, Debug)]
pub(crate) struct Facts {
    pub(crate) cap_ipc_lock: bool,
    pub(crate) rtprio: limits::Limit,
    pub(crate) memlock: limits::Limit,
    pub(crate) preempt_rt: bool,
    pub(crate) preempt_model: String,
    pub(crate) exe: String,
    pub(crate) user: String,
    /// `Some(host architecture)` under user-mode emulation.
    pub(crate) emulated_on: Option<&'static str>,
    /// RCU's kthreads' SCHED_FIFO priority (`rcutree.kthread_prio`), where readable.
    pub(crate) rcu_kthread_prio: Option<i32>,
    /// Effective user id 0 (then "run it as root" is no fix).
    pub(crate) root: bool,
    /// The kernel's refusal of SCHED_FIFO at the highest task priority, asked by a probe
    /// thread (`preempt_io::sys::rtprobe`); `None`: granted, or no real-time task.
    pub(crate) rt_refusal: Option<rtprobe::Refusal>,
}

impl Facts {
    /// Reads the facts of this process, and asks the kernel for SCHED_FIFO at `max_priority`
    /// (the highest task priority) on a probe thread. A fact that cannot be read counts as
    /// "not granted", so the error names the fix rather than the start-up failing obscurely
    /// later.
    pub(crate) fn gather(max_priority: Option<u8>) -> Facts {
        let info = kernel::preempt_info();
        Facts {
            cap_ipc_lock: caps::has_effective(caps::Capability::IpcLock).unwrap_or(false),
            rtprio: limits::rtprio().unwrap_or(limits::Limit {
                soft: Some(0),
                hard: Some(0),
            }),
            memlock: limits::memlock().unwrap_or(limits::Limit {
                soft: Some(0),
                hard: Some(0),
            }),
            preempt_rt: kernel::is_preempt_rt(),
            preempt_model: info.model.name().to_string(),
            exe: std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "<your program>".into()),
            user: std::env::var("USER").unwrap_or_else(|_| "<user>".into()),
            emulated_on: preempt_io::sys::cpu::user_mode_emulation(),
            rcu_kthread_prio: kernel::rcu_kthread_prio().ok(),
            root: caps::is_root(),
            rt_refusal: max_priority.filter(|&p| p > 0).and_then(|priority| {
                rtprobe::probe_policy(&sched::Policy::Fifo { priority }).err()
            }),
        }
    }
}

/// A missing privilege.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Problem {
    /// The kernel refused the highest task priority for lack of privilege: above
    /// RLIMIT_RTPRIO without CAP_SYS_NICE.
    RtPrio { needed: u8, limit: Option<u64> },
    /// The kernel refused the highest task priority for another cause (a cpu cgroup without
    /// real-time budget, ...), which the refusal names with its fix.
    RtRefused {
        needed: u8,
        refusal: rtprobe::Refusal,
    },
    /// A finite RLIMIT_MEMLOCK without CAP_IPC_LOCK.
    MemLock { limit: u64 },
}

/// A threat to real-time behaviour that does not stop the app.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Warning {
    /// The kernel is not PREEMPT_RT.
    NotPreemptRt { model: String },
    /// This binary runs under user-mode emulation on a `host` machine (see the module docs).
    UserModeEmulation { host: &'static str },
    /// On PREEMPT_RT, these levels idle by spinning at SCHED_FIFO priorities above RCU's
    /// kthreads: a spinning level keeps its CPU busy and starves `rcuc/N` there inside an
    /// RCU read-side section, so no grace period ends (`preempt_io::sys::kernel::
    /// rcu_kthread_prio`; seen in this project's PREEMPT_RT guests, docs/MEASURING.md).
    SpinningAboveRcu { levels: Vec<u8>, kthread_prio: i32 },
}

/// Problems (start-up stops) and warnings (it goes on).
#[derive(Debug, Default)]
pub(crate) struct Assessment {
    pub(crate) problems: Vec<Problem>,
    pub(crate) warnings: Vec<Warning>,
}

/// Decides from `facts` whether an app whose highest task priority is `max_priority`
/// (`None`: no tasks) and whose levels `spinning` idle by spinning may start in real-time
/// mode.
pub(crate) fn assess(facts: &Facts, max_priority: Option<u8>, spinning: &[u8]) -> Assessment {
    let mut out = Assessment::default();
    // The kernel's answer decides; capabilities and limits only explain it.
    if let (Some(needed), Some(refusal)) = (max_priority, &facts.rt_refusal) {
        out.problems.push(
            if refusal.causes.iter().all(|c| c.id() == "no_rt_privilege") {
                Problem::RtPrio {
                    needed,
                    limit: facts.rtprio.soft,
                }
            } else {
                Problem::RtRefused {
                    needed,
                    refusal: refusal.clone(),
                }
            },
        );
    }
    if let (false, Some(limit)) = (facts.cap_ipc_lock, facts.memlock.soft) {
        out.problems.push(Problem::MemLock { limit });
    }
    if !facts.preempt_rt {
        out.warnings.push(Warning::NotPreemptRt {
            model: facts.preempt_model.clone(),
        });
    }
    if let (Some(_), Some(host)) = (max_priority, facts.emulated_on) {
        out.warnings.push(Warning::UserModeEmulation { host });
    }
    if let (true, Some(kthread_prio)) = (facts.preempt_rt, facts.rcu_kthread_prio) {
        let levels: Vec<u8> = spinning
            .iter()
            .copied()
            .filter(|&p| i32::from(p) > kthread_prio)
            .collect();
        if !levels.is_empty() {
            out.warnings.push(Warning::SpinningAboveRcu {
                levels,
                kthread_prio,
            });
        }
    }
    out
}

/// The error text for `problems`: what is missing, then every fix.
pub(crate) fn render_problems(app: &str, facts: &Facts, problems: &[Problem]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "preempt: app `{app}` cannot start its real-time executors:"
    );
    let mut caps_needed = Vec::new();
    let mut limits_lines = Vec::new();
    let mut ulimits = Vec::new();
    let mut other_fixes = Vec::new();
    for problem in problems {
        match problem {
            Problem::RtPrio { needed, limit } => {
                let limit = limit.map_or("unlimited".to_string(), |l| l.to_string());
                let _ = writeln!(
                    s,
                    "  - its highest task priority is {needed} (SCHED_FIFO), but RLIMIT_RTPRIO \
                     is {limit} and the process lacks CAP_SYS_NICE"
                );
                caps_needed.push("cap_sys_nice");
                limits_lines.push(format!("{} - rtprio {needed}", facts.user));
                ulimits.push(format!("ulimit -r {needed}"));
            }
            Problem::RtRefused { needed, refusal } => {
                let _ = writeln!(
                    s,
                    "  - its highest task priority is {needed} (SCHED_FIFO), but the kernel \
                     refused it with {}: {} [{}]",
                    preempt_io::sys::rtcause::errno_text(refusal.errno),
                    refusal.describe(),
                    refusal.ids()
                );
                other_fixes.push(refusal.fix());
            }
            Problem::MemLock { limit } => {
                let _ = writeln!(
                    s,
                    "  - it locks its memory (mlockall) so that no page fault delays a task, but \
                     RLIMIT_MEMLOCK is {limit} bytes and the process lacks CAP_IPC_LOCK"
                );
                caps_needed.push("cap_ipc_lock");
                limits_lines.push(format!("{} - memlock unlimited", facts.user));
                ulimits.push("ulimit -l unlimited".to_string());
            }
        }
    }
    let _ = writeln!(s, "fix one of:");
    for fix in &other_fixes {
        let _ = writeln!(s, "  * {fix};");
    }
    if !caps_needed.is_empty() {
        // A root process that lacks a capability had it dropped (a container, a unit's
        // bounding set): "run as root" would be wrong advice.
        if !facts.root {
            let _ = writeln!(s, "  * run it as root;");
        }
        if facts.root {
            // File capabilities cannot exceed the bounding set that dropped them: they must
            // be given back where the process is started.
            let upper: Vec<String> = caps_needed
                .iter()
                .map(|c| c.trim_start_matches("cap_").to_uppercase())
                .collect();
            let _ = writeln!(
                s,
                "  * give this root process its capabilities back where it is started: \
                 docker/podman run {}; systemd: AmbientCapabilities={} (and no \
                 CapabilityBoundingSet= without them);",
                upper
                    .iter()
                    .map(|c| format!("--cap-add={c}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                upper
                    .iter()
                    .map(|c| format!("CAP_{c}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        } else {
            let _ = writeln!(
                s,
                "  * grant the capabilities: sudo setcap {}+ep {}",
                caps_needed.join(","),
                facts.exe
            );
        }
        let _ = writeln!(
            s,
            "  * raise the limits: add `{}` to /etc/security/limits.conf and log in again \
             (or `{}` in a root shell before starting it);",
            limits_lines.join("` and `"),
            ulimits.join("; ")
        );
    }
    let _ = write!(
        s,
        "  * or run without real-time guarantees (development only): {SOFT_ENV}=1 {}",
        facts.exe
    );
    s
}

/// The warning text.
pub(crate) fn render_warning(warning: &Warning) -> String {
    match warning {
        Warning::NotPreemptRt { model } => format!(
            "preempt: warning: the kernel is not PREEMPT_RT (preemption model: {model}); \
             real-time threads can be delayed by non-preemptible kernel sections. Boot a \
             PREEMPT_RT kernel (Debian: linux-image-rt-amd64 / linux-image-rt-arm64) for \
             bounded latency."
        ),
        Warning::UserModeEmulation { host } => {
            let arch = std::env::consts::ARCH;
            format!(
                "preempt: warning: this {arch} binary runs under user-mode emulation \
                 (qemu-user) on an {host} host: its timing says nothing about an {arch} \
                 machine, and the emulator's own spin locks know no priorities, so SCHED_FIFO \
                 executors of different priorities can livelock inside it (a higher one \
                 spinning for ever on a lock a preempted lower one holds). For functional \
                 tests run it with {SOFT_ENV}=1; for real-time behaviour run it on an {arch} \
                 machine or in a full-system emulator (qemu-system-{arch} with its own kernel)."
            )
        }
        Warning::SpinningAboveRcu {
            levels,
            kthread_prio,
        } => {
            let names: Vec<String> = levels.iter().map(|p| format!("p{p}")).collect();
            let highest = levels.iter().max().copied().unwrap_or(0);
            format!(
                "preempt: warning: executor level(s) {} idle by spinning (idle = spin) at \
                 SCHED_FIFO above RCU's kthreads (rcutree.kthread_prio={kthread_prio}) on this \
                 PREEMPT_RT kernel: a spinning level keeps its CPU busy, starves RCU's rcuc/N \
                 thread there inside an RCU read-side section, and no RCU grace period ends \
                 (the kernel reports an RCU stall; Documentation/RCU/stallwarn.rst). Boot with \
                 rcutree.kthread_prio={} or higher (RCU's kthreads then preempt these levels), \
                 or let these levels sleep when idle (idle = sleep or spin_then_sleep).",
                names.join(", "),
                highest + 1
            )
        }
    }
}

/// The loud soft-mode warning.
pub(crate) fn soft_mode_warning(app: &str) -> String {
    format!(
        "preempt: WARNING: {SOFT_ENV}=1: app `{app}` runs in SOFT mode: executors are \
         SCHED_OTHER threads and memory is not locked. Task priorities do NOT preempt and NO \
         deadline is guaranteed. Use this on development machines only."
    )
}

/// Whether soft mode is requested: [`SOFT_ENV`] set to anything but empty, `0` or `false`
/// (the runtime's own reading; programs that report the mode use this one too).
pub fn soft_requested() -> bool {
    std::env::var(SOFT_ENV).is_ok_and(|v| {
        let v = v.trim();
        !(v.is_empty() || v == "0" || v.eq_ignore_ascii_case("false"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use preempt_io::sys::rtcause::{Cause, Privileges, Request};

    fn facts() -> Facts {
        Facts {
            cap_ipc_lock: false,
            rtprio: limits::Limit {
                soft: Some(0),
                hard: Some(0),
            },
            memlock: limits::Limit {
                soft: Some(8 << 20),
                hard: Some(8 << 20),
            },
            preempt_rt: false,
            preempt_model: "voluntary".into(),
            exe: "/usr/bin/robot".into(),
            user: "alice".into(),
            emulated_on: None,
            rcu_kthread_prio: Some(1),
            root: false,
            rt_refusal: Some(refusal(Cause::NoRtPrivilege {
                request: Request::Priority(15),
                privileges: Privileges {
                    root: false,
                    cap_sys_nice: false,
                    cap_ipc_lock: false,
                    rtprio: Some(0),
                    memlock: Some(8 << 20),
                },
            })),
        }
    }

    fn refusal(cause: Cause) -> rtprobe::Refusal {
        rtprobe::Refusal {
            what: "SCHED_FIFO 15".into(),
            errno: libc_eperm(),
            causes: vec![cause],
        }
    }

    /// `EPERM` (asm-generic/errno-base.h); this crate has no libc.
    fn libc_eperm() -> i32 {
        1
    }

    /// The facts of a process the kernel grants everything.
    fn granted() -> Facts {
        let mut f = facts();
        f.cap_ipc_lock = true;
        f.rt_refusal = None;
        f
    }

    #[test]
    fn user_mode_emulation_is_a_warning_that_names_the_livelock_and_the_fixes() {
        let mut f = granted();
        f.preempt_rt = true;
        f.emulated_on = Some("x86_64");
        let a = assess(&f, Some(3), &[]);
        assert!(a.problems.is_empty());
        assert_eq!(
            a.warnings,
            vec![Warning::UserModeEmulation { host: "x86_64" }]
        );
        let text = render_warning(&a.warnings[0]);
        for needle in [
            "user-mode emulation (qemu-user) on an x86_64 host",
            "livelock",
            "PREEMPT_SOFT=1",
            "full-system emulator",
        ] {
            assert!(text.contains(needle), "missing `{needle}`: {text}");
        }
        // No tasks, no real-time executors: nothing to warn of.
        assert!(assess(&f, None, &[]).warnings.is_empty());
    }

    #[test]
    fn unprivileged_process_gets_both_problems_and_every_fix() {
        let f = facts();
        let a = assess(&f, Some(15), &[]);
        assert_eq!(
            a.problems,
            vec![
                Problem::RtPrio {
                    needed: 15,
                    limit: Some(0)
                },
                Problem::MemLock { limit: 8 << 20 }
            ]
        );
        let text = render_problems("app", &f, &a.problems);
        assert!(text.contains("highest task priority is 15"), "{text}");
        assert!(
            text.contains("setcap cap_sys_nice,cap_ipc_lock+ep /usr/bin/robot"),
            "{text}"
        );
        assert!(text.contains("alice - rtprio 15"), "{text}");
        assert!(text.contains("alice - memlock unlimited"), "{text}");
        assert!(text.contains("run it as root"), "{text}");
        assert!(text.contains("PREEMPT_SOFT=1 /usr/bin/robot"), "{text}");
    }

    #[test]
    fn the_kernels_answer_decides_not_the_capabilities() {
        // CAP_SYS_NICE held, and the kernel still refused: a cpu cgroup without budget.
        let mut f = granted();
        f.root = true;
        let budget = refusal(Cause::RtGroupBudget {
            group: "/sys/fs/cgroup/cpu/x".into(),
            zero: vec!["/sys/fs/cgroup/cpu/x".into()],
            fix: Ok(vec![preempt_io::sys::rtcause::BudgetStep {
                dir: "/sys/fs/cgroup/cpu/x".into(),
                runtime_us: 950_000,
            }]),
            budgeted: Some("/sys/fs/cgroup/cpu".into()),
            container: None,
            read_only: false,
        });
        f.rt_refusal = Some(budget.clone());
        let a = assess(&f, Some(20), &[]);
        assert_eq!(
            a.problems,
            vec![Problem::RtRefused {
                needed: 20,
                refusal: budget
            }]
        );
        let text = render_problems("app", &f, &a.problems);
        for needle in [
            "highest task priority is 20 (SCHED_FIFO), but the kernel refused it with EPERM",
            "cpu cgroup /sys/fs/cgroup/cpu/x has no real-time budget",
            "[rt_group_budget]",
            "echo 950000 > /sys/fs/cgroup/cpu/x/cpu.rt_runtime_us",
            "PREEMPT_SOFT=1 /usr/bin/robot",
        ] {
            assert!(text.contains(needle), "missing `{needle}`: {text}");
        }
        assert!(!text.contains("run it as root"), "{text}");
        assert!(!text.contains("setcap"), "{text}");
        // No CAP_SYS_NICE and RLIMIT_RTPRIO 0, and the kernel granted it anyway (the probe
        // is what counts): no problem.
        let mut f = facts();
        f.rt_refusal = None;
        f.memlock.soft = None;
        assert!(assess(&f, Some(20), &[]).problems.is_empty());
        // No tasks: no real-time priority needed.
        assert_eq!(
            assess(&facts(), None, &[]).problems,
            vec![Problem::MemLock { limit: 8 << 20 }]
        );
    }

    #[test]
    fn a_root_process_without_the_capabilities_is_not_told_to_run_as_root() {
        let mut f = facts();
        f.root = true;
        let a = assess(&f, Some(15), &[]);
        let text = render_problems("app", &f, &a.problems);
        assert!(!text.contains("run it as root"), "{text}");
        // Dropped capabilities come back where the process starts, not by setcap.
        assert!(!text.contains("setcap"), "{text}");
        assert!(
            text.contains("docker/podman run --cap-add=SYS_NICE --cap-add=IPC_LOCK"),
            "{text}"
        );
        assert!(
            text.contains("AmbientCapabilities=CAP_SYS_NICE CAP_IPC_LOCK"),
            "{text}"
        );
    }

    #[test]
    fn non_rt_kernel_is_a_warning_only() {
        let mut f = granted();
        let a = assess(&f, Some(1), &[]);
        assert!(a.problems.is_empty());
        assert_eq!(a.warnings.len(), 1);
        assert!(render_warning(&a.warnings[0]).contains("not PREEMPT_RT"));
        f.preempt_rt = true;
        assert!(assess(&f, Some(1), &[]).warnings.is_empty());
    }

    #[test]
    fn spinning_levels_above_rcu_kthreads_on_preempt_rt_are_a_warning_with_both_fixes() {
        let mut f = granted();
        f.preempt_rt = true;
        let a = assess(&f, Some(3), &[1, 3]);
        assert!(a.problems.is_empty());
        assert_eq!(
            a.warnings,
            vec![Warning::SpinningAboveRcu {
                levels: vec![3],
                kthread_prio: 1
            }]
        );
        let text = render_warning(&a.warnings[0]);
        for needle in [
            "level(s) p3",
            "rcutree.kthread_prio=1)",
            "rcuc/N",
            "rcutree.kthread_prio=4 or higher",
            "idle = sleep",
        ] {
            assert!(text.contains(needle), "missing `{needle}`: {text}");
        }
        // Raised above every spinning level, not PREEMPT_RT, or unreadable: no warning.
        f.rcu_kthread_prio = Some(20);
        assert!(assess(&f, Some(3), &[3]).warnings.is_empty());
        f.rcu_kthread_prio = None;
        assert!(assess(&f, Some(3), &[3]).warnings.is_empty());
        f.rcu_kthread_prio = Some(1);
        f.preempt_rt = false;
        let a = assess(&f, Some(3), &[3]);
        assert!(
            !a.warnings
                .iter()
                .any(|w| matches!(w, Warning::SpinningAboveRcu { .. })),
            "{:?}",
            a.warnings
        );
    }
}
