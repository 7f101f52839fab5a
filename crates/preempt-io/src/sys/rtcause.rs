//! Why the kernel refused real time: the causes of an `EPERM` from `sched_setattr` or an
//! error from `mlockall`, each read from the process's own state, with the fix for it.
//!
//! Capabilities and resource limits do not decide whether a thread may go real-time; the
//! kernel does, and it has more reasons to refuse than those two. On a kernel built with
//! `CONFIG_RT_GROUP_SCHED` (cgroup v1 `cpu` controller), a thread whose cpu cgroup has a
//! real-time budget of 0 µs (`cpu.rt_runtime_us`, the value every new cgroup starts with)
//! gets `EPERM` for SCHED_FIFO/RR, even as root (`__sched_setscheduler` in
//! `kernel/sched/syscalls.c`; `Documentation/scheduler/sched-rt-group.rst`). So this module
//! only explains a refusal the kernel already gave ([`crate::sys::rtprobe`] asks it); it
//! never predicts one.
//!
//! Each [`Cause`] has a stable id (`no_rt_privilege`, `rt_group_budget`, `memlock`,
//! `unknown`), what it read ([`Cause::describe`]) and the exact fix ([`Cause::fix`]). "Run as
//! root" is never offered to a process that is root.
//!
//! ```
//! use preempt_io::sys::rtcause::{Cause, Privileges, Request};
//! let user = Privileges { root: false, cap_sys_nice: false, cap_ipc_lock: false,
//!                         rtprio: Some(0), memlock: Some(8 << 20) };
//! let cause = Cause::NoRtPrivilege { request: Request::Priority(80), privileges: user };
//! assert_eq!(cause.id(), "no_rt_privilege");
//! assert!(cause.fix().contains("rtprio 80"));
//! ```

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{caps, cgroup, limits};

/// What was asked of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// SCHED_FIFO or SCHED_RR at this priority (1..=99).
    Priority(u8),
    /// SCHED_DEADLINE (only CAP_SYS_NICE grants it).
    Deadline,
}

/// The privileges of the process that asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Privileges {
    /// Effective user id 0.
    pub root: bool,
    /// CAP_SYS_NICE in the effective set.
    pub cap_sys_nice: bool,
    /// CAP_IPC_LOCK in the effective set.
    pub cap_ipc_lock: bool,
    /// Soft RLIMIT_RTPRIO; `None` is unlimited.
    pub rtprio: Option<u64>,
    /// Soft RLIMIT_MEMLOCK in bytes; `None` is unlimited.
    pub memlock: Option<u64>,
}

impl Privileges {
    /// Those of the calling thread; what cannot be read counts as not granted.
    pub fn current() -> Privileges {
        Privileges {
            root: caps::is_root(),
            cap_sys_nice: caps::has_effective(caps::Capability::SysNice).unwrap_or(false),
            cap_ipc_lock: caps::has_effective(caps::Capability::IpcLock).unwrap_or(false),
            rtprio: limits::rtprio().map_or(Some(0), |l| l.soft),
            memlock: limits::memlock().map_or(Some(0), |l| l.soft),
        }
    }

    /// Whether CAP_SYS_NICE or RLIMIT_RTPRIO grant `request`.
    pub fn grant(&self, request: Request) -> bool {
        self.cap_sys_nice
            || match request {
                Request::Priority(p) => self.rtprio.is_none_or(|l| l >= u64::from(p)),
                Request::Deadline => false,
            }
    }
}

/// A cgroup's real-time budget (`cpu.rt_runtime_us` of every `cpu.rt_period_us`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtBudget {
    /// The cgroup's directory.
    pub dir: PathBuf,
    /// `cpu.rt_runtime_us`; -1 is unlimited.
    pub runtime_us: i64,
    /// `cpu.rt_period_us`.
    pub period_us: u64,
}

/// One step of a budget fix: write `runtime_us` to `dir/cpu.rt_runtime_us`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetStep {
    /// The cgroup's directory.
    pub dir: PathBuf,
    /// The budget to give it, µs per period.
    pub runtime_us: u64,
}

/// The container runtime a cgroup path or marker file reveals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    /// Docker (`/.dockerenv`, a `docker` cgroup path).
    Docker,
    /// Podman (`/run/.containerenv`, a `libpod` cgroup path).
    Podman,
}

/// Why the kernel refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// `no_rt_privilege`: no CAP_SYS_NICE, and RLIMIT_RTPRIO below the priority (or the policy
    /// is SCHED_DEADLINE, which no limit grants).
    NoRtPrivilege {
        /// What was asked.
        request: Request,
        /// What the process holds.
        privileges: Privileges,
    },
    /// `rt_group_budget`: the thread's cpu cgroup has a real-time budget of 0 µs
    /// (`CONFIG_RT_GROUP_SCHED`, cgroup v1).
    RtGroupBudget {
        /// The thread's cpu cgroup directory.
        group: PathBuf,
        /// Every cgroup from the top of the hierarchy down to `group` with a budget of 0.
        zero: Vec<PathBuf>,
        /// The writes that give `group` a budget, parents first, or why none can be given
        /// from here.
        fix: Result<Vec<BudgetStep>, String>,
        /// The nearest ancestor that has a budget, to move the process to.
        budgeted: Option<PathBuf>,
        /// The container runtime, where it shows.
        container: Option<Container>,
        /// The cgroup filesystem is read-only here: the fix must come from outside.
        read_only: bool,
    },
    /// `memlock`: `mlockall` refused, for lack of CAP_IPC_LOCK and RLIMIT_MEMLOCK or by the
    /// memory cgroup's limit.
    Memlock {
        /// The errno.
        errno: i32,
        /// What the process holds.
        privileges: Privileges,
        /// The process's mapped memory (`VmSize`), KiB.
        mapped_kib: Option<u64>,
        /// The memory cgroup (v1) and its limit in bytes, where one is set.
        memory_cgroup: Option<(PathBuf, u64)>,
    },
    /// `unknown`: every check passed and the kernel still refused; the evidence, no guess.
    Unknown {
        /// What was read.
        evidence: String,
    },
}

impl Cause {
    /// The stable id.
    pub fn id(&self) -> &'static str {
        match self {
            Cause::NoRtPrivilege { .. } => "no_rt_privilege",
            Cause::RtGroupBudget { .. } => "rt_group_budget",
            Cause::Memlock { .. } => "memlock",
            Cause::Unknown { .. } => "unknown",
        }
    }

    /// What was found, in one sentence.
    pub fn describe(&self) -> String {
        match self {
            Cause::NoRtPrivilege {
                request,
                privileges,
            } => match request {
                Request::Priority(p) => format!(
                    "no CAP_SYS_NICE and RLIMIT_RTPRIO = {} (below {p}){}",
                    show_limit(privileges.rtprio),
                    if privileges.root {
                        " although the process is root (its capabilities were dropped)"
                    } else {
                        ""
                    }
                ),
                Request::Deadline => "no CAP_SYS_NICE, which SCHED_DEADLINE needs (RLIMIT_RTPRIO \
                                      does not grant it)"
                    .to_string(),
            },
            Cause::RtGroupBudget { group, zero, .. } => {
                let mut s = format!(
                    "cpu cgroup {} has no real-time budget (cpu.rt_runtime_us = 0)",
                    group.display()
                );
                let above: Vec<String> = zero
                    .iter()
                    .filter(|d| *d != group)
                    .map(|d| d.display().to_string())
                    .collect();
                if !above.is_empty() {
                    let _ = write!(s, ", nor has its ancestor {}", above.join(", "));
                }
                s.push_str(
                    ": on this RT_GROUP_SCHED kernel SCHED_FIFO/RR is refused there, even to root",
                );
                s
            }
            Cause::Memlock {
                privileges,
                mapped_kib,
                memory_cgroup,
                ..
            } => {
                let mapped = mapped_kib.map_or(String::new(), |k| format!(" ({k} KiB mapped)"));
                let mut s = match (privileges.cap_ipc_lock, privileges.memlock) {
                    (false, Some(limit)) => format!(
                        "no CAP_IPC_LOCK and RLIMIT_MEMLOCK = {} KiB{mapped}",
                        limit / 1024
                    ),
                    (true, _) => format!("CAP_IPC_LOCK held{mapped}"),
                    (false, None) => format!("RLIMIT_MEMLOCK unlimited{mapped}"),
                };
                if let Some((dir, limit)) = memory_cgroup {
                    let _ = write!(
                        s,
                        "; memory cgroup {} limits it to {} KiB",
                        dir.display(),
                        limit / 1024
                    );
                }
                s
            }
            Cause::Unknown { evidence } => {
                format!(
                    "no known cause: every check passed and the kernel still refused ({evidence})"
                )
            }
        }
    }

    /// The exact fix, for the environment detected.
    pub fn fix(&self) -> String {
        match self {
            Cause::NoRtPrivilege {
                request,
                privileges,
            } => rt_privilege_fix(*request, privileges.root),
            Cause::RtGroupBudget {
                group,
                fix,
                budgeted,
                container,
                read_only,
                ..
            } => {
                let mut s = if *read_only {
                    "the cgroup filesystem is read-only here, so from outside (the host, as root): "
                        .to_string()
                } else {
                    String::new()
                };
                s += &match fix {
                    Ok(steps) => {
                        let writes: Vec<String> = steps
                            .iter()
                            .map(|st| {
                                format!(
                                    "echo {} > {}",
                                    st.runtime_us,
                                    st.dir.join("cpu.rt_runtime_us").display()
                                )
                            })
                            .collect();
                        format!(
                            "give {} a real-time budget{}: {}",
                            group.display(),
                            if steps.len() > 1 {
                                ", parents first"
                            } else {
                                ""
                            },
                            writes.join("; ")
                        )
                    }
                    Err(why) => why.clone(),
                };
                if let Some(dir) = budgeted {
                    let _ = write!(
                        s,
                        "; or move the process to a cgroup that has one (your shell: echo $$ > {})",
                        dir.join("cgroup.procs").display()
                    );
                }
                match container {
                    Some(Container::Docker) => s.push_str(
                        "; in Docker, start the container with --cpu-rt-runtime=950000 (the \
                         daemon's parent cgroup needs dockerd --cpu-rt-runtime=950000 first; \
                         neither can be set from inside)",
                    ),
                    Some(Container::Podman) => s.push_str(
                        "; in Podman, start the container with --cpu-rt-runtime=950000 (it \
                         cannot be set from inside)",
                    ),
                    None => {}
                }
                s
            }
            Cause::Memlock {
                privileges,
                memory_cgroup,
                ..
            } => {
                let mut fixes = Vec::new();
                if !privileges.cap_ipc_lock && privileges.memlock.is_some() {
                    fixes.push(memlock_privilege_fix(privileges.root));
                }
                if let Some((dir, _)) = memory_cgroup {
                    fixes.push(format!(
                        "raise the memory cgroup's limit (echo -1 > {})",
                        dir.join("memory.limit_in_bytes").display()
                    ));
                }
                if fixes.is_empty() {
                    "no known cause: free memory (the lock needs every mapped page resident) and \
                     see the evidence"
                        .to_string()
                } else {
                    fixes.join(", or ")
                }
            }
            Cause::Unknown { .. } => "none known: read the evidence (not yet checked here: a \
                                      user namespace, a seccomp filter, cgroup v2's \
                                      RT_GROUP_SCHED)"
                .to_string(),
        }
    }
}

/// The fix for [`Cause::NoRtPrivilege`]: "run as root" only for a process that is not.
pub fn rt_privilege_fix(request: Request, root: bool) -> String {
    let mut fixes = Vec::new();
    if root {
        fixes.push(
            "grant CAP_SYS_NICE back to this root process (docker/podman run \
             --cap-add=SYS_NICE; systemd: AmbientCapabilities=CAP_SYS_NICE, and no \
             CapabilityBoundingSet= without it)"
                .to_string(),
        );
    } else {
        fixes.push("run as root".to_string());
        fixes.push("grant CAP_SYS_NICE (sudo setcap cap_sys_nice+ep <binary>)".to_string());
    }
    if let Request::Priority(p) = request {
        fixes.push(format!(
            "raise RLIMIT_RTPRIO to {p} (ulimit -r {p}; `<user> - rtprio {p}` in \
             /etc/security/limits.conf for a login, LimitRTPRIO={p} for a systemd service)"
        ));
    }
    fixes.join(", or ")
}

/// The fix for a finite RLIMIT_MEMLOCK without CAP_IPC_LOCK: "run as root" only for a
/// process that is not.
pub fn memlock_privilege_fix(root: bool) -> String {
    let mut fixes = Vec::new();
    if root {
        fixes.push(
            "grant CAP_IPC_LOCK back to this root process (docker/podman run \
             --cap-add=IPC_LOCK; systemd: AmbientCapabilities=CAP_IPC_LOCK)",
        );
    } else {
        fixes.push("run as root");
        fixes.push("grant CAP_IPC_LOCK (sudo setcap cap_ipc_lock+ep <binary>)");
    }
    fixes.push(
        "raise RLIMIT_MEMLOCK (ulimit -l unlimited; `@realtime - memlock unlimited` in \
         /etc/security/limits.conf; systemd: LimitMEMLOCK=infinity)",
    );
    fixes.join(", or ")
}

fn show_limit(limit: Option<u64>) -> String {
    limit.map_or_else(|| "unlimited".to_string(), |l| l.to_string())
}

/// `EPERM (Operation not permitted)`: the errno's name and its text.
pub fn errno_text(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::EINVAL => "EINVAL",
        libc::ENOMEM => "ENOMEM",
        libc::EAGAIN => "EAGAIN",
        libc::EBUSY => "EBUSY",
        libc::ESRCH => "ESRCH",
        libc::EACCES => "EACCES",
        libc::ENOSYS => "ENOSYS",
        _ => return io::Error::from_raw_os_error(errno).to_string(),
    };
    let text = io::Error::from_raw_os_error(errno).to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    format!("{name} ({text})")
}

/// The causes of a refusal of `request` with `errno`, for the thread whose cgroups are listed
/// in `cgroup_file` (`/proc/thread-self/cgroup` for the caller); never empty (the last resort
/// is [`Cause::Unknown`] with the evidence).
pub fn explain_rt_refusal(errno: i32, request: Request, cgroup_file: &Path) -> Vec<Cause> {
    let privileges = Privileges::current();
    let group = fs::read_to_string(cgroup_file)
        .ok()
        .zip(fs::read_to_string("/proc/self/mountinfo").ok())
        .and_then(|(cgroups, mounts)| cgroup::v1_group("cpu", &cgroups, &mounts));
    let chain = group.as_ref().and_then(|g| rt_budget_chain(g).ok());
    let read_only = group.as_ref().is_some_and(|g| g.read_only);
    let container = detect_container(group.as_ref().map(|g| g.dir.as_path()), read_only);
    let mut causes = rt_causes(
        errno,
        request,
        &privileges,
        chain.as_deref(),
        container,
        read_only,
    );
    if let Some(Cause::Unknown { evidence }) = causes.last_mut() {
        evidence.push_str(&process_status_evidence());
    }
    causes
}

/// [`explain_rt_refusal`] for the calling thread.
pub fn explain_current_rt_refusal(errno: i32, request: Request) -> Vec<Cause> {
    explain_rt_refusal(errno, request, Path::new("/proc/thread-self/cgroup"))
}

/// The causes, from what was read: `chain` is the thread's cpu cgroup budgets from the top of
/// the hierarchy down (`None`: no cgroup v1 cpu controller, or unreadable).
pub fn rt_causes(
    errno: i32,
    request: Request,
    privileges: &Privileges,
    chain: Option<&[RtBudget]>,
    container: Option<Container>,
    read_only: bool,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    if errno == libc::EPERM && !privileges.grant(request) {
        causes.push(Cause::NoRtPrivilege {
            request,
            privileges: privileges.clone(),
        });
    }
    let group_refuses = matches!(request, Request::Priority(_))
        && chain
            .and_then(<[RtBudget]>::last)
            .is_some_and(|own| own.runtime_us == 0);
    if errno == libc::EPERM
        && group_refuses
        && let Some(chain) = chain
        && let Some(own) = chain.last()
    {
        causes.push(Cause::RtGroupBudget {
            group: own.dir.clone(),
            zero: chain
                .iter()
                .filter(|b| b.runtime_us == 0)
                .map(|b| b.dir.clone())
                .collect(),
            fix: plan_budget(chain),
            budgeted: chain
                .iter()
                .rev()
                .find(|b| b.runtime_us != 0)
                .map(|b| b.dir.clone()),
            container,
            read_only,
        });
    }
    if causes.is_empty() {
        let mut evidence = format!(
            "{}; euid {}; CAP_SYS_NICE {}; RLIMIT_RTPRIO {}",
            errno_text(errno),
            if privileges.root { "0" } else { "not 0" },
            if privileges.cap_sys_nice {
                "held"
            } else {
                "not held"
            },
            show_limit(privileges.rtprio)
        );
        match chain.and_then(<[RtBudget]>::last) {
            Some(own) => {
                let _ = write!(
                    evidence,
                    "; cpu cgroup {} budget {} of {} µs",
                    own.dir.display(),
                    own.runtime_us,
                    own.period_us
                );
            }
            None => evidence.push_str(
                "; no cpu cgroup budget read (no cgroup v1 cpu controller with RT_GROUP_SCHED)",
            ),
        }
        causes.push(Cause::Unknown { evidence });
    }
    causes
}

/// The causes of an `mlockall` refusal with `errno`, for the calling process.
pub fn explain_memlock_refusal(errno: i32) -> Cause {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let memory_cgroup = cgroup::current_v1_group("memory").and_then(|g| {
        let text = fs::read_to_string(g.dir.join("memory.limit_in_bytes")).ok()?;
        let limit: u64 = text.trim().parse().ok()?;
        // An unset limit reads as the largest page-aligned i64 (PAGE_COUNTER_MAX pages).
        (limit < 1 << 60).then_some((g.dir, limit))
    });
    Cause::Memlock {
        errno,
        privileges: Privileges::current(),
        mapped_kib: status_kib(&status, "VmSize"),
        memory_cgroup,
    }
}

/// A `/proc/PID/status` field in kB (`VmLck:   12 kB`).
pub fn status_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The seccomp and no_new_privs state, for the evidence of an unknown cause.
fn process_status_evidence() -> String {
    let status = fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    let mut s = String::new();
    for field in ["Seccomp", "NoNewPrivs", "CapEff"] {
        if let Some(v) = status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        {
            let _ = write!(s, "; {field} {}", v.trim());
        }
    }
    s
}

/// Reads the real-time budgets from the hierarchy's mount point down to `group.dir`.
///
/// # Errors
/// A budget file that cannot be read or parsed (no `CONFIG_RT_GROUP_SCHED`: the files do
/// not exist).
pub fn rt_budget_chain(group: &cgroup::V1Group) -> io::Result<Vec<RtBudget>> {
    let rel = group
        .dir
        .strip_prefix(&group.mount)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "cgroup outside its mount"))?;
    let mut dir = group.mount.clone();
    let mut chain = vec![read_budget(&dir)?];
    for part in rel.components() {
        dir.push(part);
        chain.push(read_budget(&dir)?);
    }
    Ok(chain)
}

/// `dir`'s `cpu.rt_runtime_us` and `cpu.rt_period_us`.
///
/// # Errors
/// Either file unreadable or not a number.
pub fn read_budget(dir: &Path) -> io::Result<RtBudget> {
    let read = |name: &str| -> io::Result<String> {
        let path = dir.join(name);
        let text = fs::read_to_string(&path)?;
        Ok(text.trim().to_string())
    };
    let bad = |name: &str, text: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: not a number: {text:?}", dir.join(name).display()),
        )
    };
    let runtime = read("cpu.rt_runtime_us")?;
    let period = read("cpu.rt_period_us")?;
    Ok(RtBudget {
        dir: dir.to_path_buf(),
        runtime_us: runtime
            .parse()
            .map_err(|_| bad("cpu.rt_runtime_us", &runtime))?,
        period_us: period
            .parse()
            .map_err(|_| bad("cpu.rt_period_us", &period))?,
    })
}

/// The kernel's bandwidth unit: a ratio runtime/period in fixed point with 20 fractional
/// bits (`BW_SHIFT`, `to_ratio()` in `kernel/sched/core.c`), which `tg_rt_schedulable`
/// compares: the children's ratios may not sum above their parent's.
const BW_SHIFT: u32 = 20;

/// `to_ratio(period, runtime)`: -1 (unlimited) is the whole unit.
fn to_ratio(period_us: u64, runtime_us: i64) -> u64 {
    match u64::try_from(runtime_us) {
        Err(_) => 1 << BW_SHIFT,
        Ok(_) if period_us == 0 => 0,
        Ok(r) => {
            u64::try_from((u128::from(r) << BW_SHIFT) / u128::from(period_us)).unwrap_or(u64::MAX)
        }
    }
}

/// The largest runtime (µs, at most the period) whose ratio to `period_us` fits in `free`.
fn runtime_for_ratio(period_us: u64, free: u64) -> u64 {
    // to_ratio(P, V) <= free  <=>  V * 2^20 < (free + 1) * P  <=>  V <= ceil((free+1)P / 2^20) - 1
    let bound = (u128::from(free) + 1) * u128::from(period_us);
    let v = bound.div_ceil(1 << BW_SHIFT).saturating_sub(1);
    u64::try_from(v).unwrap_or(u64::MAX).min(period_us)
}

/// The writes that give the last cgroup of `chain` a budget, parents first: each cgroup with
/// a budget of 0 gets what its parent has left after its other children (the siblings'
/// budgets are read from the parent's directory). `Err` says why none can be given here.
pub fn plan_budget(chain: &[RtBudget]) -> Result<Vec<BudgetStep>, String> {
    let Some(top) = chain.first() else {
        return Err("no cpu cgroup".into());
    };
    if top.runtime_us == 0 {
        return Err(format!(
            "the top of the cpu hierarchy visible here ({}) has no real-time budget: give it \
             one from outside (the host, or the container runtime)",
            top.dir.display()
        ));
    }
    let mut steps = Vec::new();
    let mut parent_ratio = to_ratio(top.period_us, top.runtime_us);
    for pair in chain.windows(2) {
        let (parent, child) = (&pair[0], &pair[1]);
        if child.runtime_us != 0 {
            parent_ratio = to_ratio(child.period_us, child.runtime_us);
            continue;
        }
        let siblings = sibling_budgets(&parent.dir, &child.dir);
        let taken: u64 = siblings
            .iter()
            .map(|b| to_ratio(b.period_us, b.runtime_us))
            .sum();
        let free = parent_ratio.saturating_sub(taken);
        let runtime = runtime_for_ratio(child.period_us, free);
        if runtime == 0 {
            let held: Vec<String> = siblings
                .iter()
                .filter(|b| b.runtime_us != 0)
                .map(|b| format!("{} ({} µs)", b.dir.display(), b.runtime_us))
                .collect();
            return Err(format!(
                "the other cgroups under {} hold its whole real-time budget ({}): lower one of \
                 theirs first, then give {} the rest",
                parent.dir.display(),
                held.join(", "),
                child.dir.display()
            ));
        }
        steps.push(BudgetStep {
            dir: child.dir.clone(),
            runtime_us: runtime,
        });
        parent_ratio = to_ratio(child.period_us, i64::try_from(runtime).unwrap_or(i64::MAX));
    }
    Ok(steps)
}

/// The budgets of the cgroups in `parent` other than `child`.
fn sibling_budgets(parent: &Path, child: &Path) -> Vec<RtBudget> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && e.path() != child)
        .filter_map(|e| read_budget(&e.path()).ok())
        .collect()
}

/// The container runtime whose flag gives the budget, where only it can: from the cgroup
/// path (no cgroup namespace), or from the marker file the runtime leaves when the cgroup
/// filesystem is read-only (the fix cannot be applied from inside). A container whose
/// cgroups are writable is fixed by the writes, and the flag would be noise.
fn detect_container(cpu_dir: Option<&Path>, read_only: bool) -> Option<Container> {
    let path = cpu_dir.map(|d| d.to_string_lossy().into_owned());
    let path = path.as_deref().unwrap_or("");
    let marker = |file: &str| read_only && Path::new(file).exists();
    if path.contains("libpod") || marker("/run/.containerenv") {
        Some(Container::Podman)
    } else if path.contains("docker") || marker("/.dockerenv") {
        Some(Container::Docker)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory tree under the temp dir, removed when dropped.
    struct Tree(PathBuf);

    impl Tree {
        fn new(name: &str) -> Tree {
            let dir =
                std::env::temp_dir().join(format!("preempt-rtcause-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Tree(dir)
        }

        /// A cgroup directory `rel` with its budget files.
        fn group(&self, rel: &str, runtime_us: i64, period_us: u64) -> PathBuf {
            let dir = if rel.is_empty() {
                self.0.clone()
            } else {
                self.0.join(rel)
            };
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("cpu.rt_runtime_us"), format!("{runtime_us}\n")).unwrap();
            fs::write(dir.join("cpu.rt_period_us"), format!("{period_us}\n")).unwrap();
            dir
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn root_user() -> Privileges {
        Privileges {
            root: true,
            cap_sys_nice: true,
            cap_ipc_lock: true,
            rtprio: Some(0),
            memlock: Some(8 << 20),
        }
    }

    #[test]
    fn a_zero_budget_group_names_the_cgroup_and_the_write_not_root() {
        let t = Tree::new("zero");
        t.group("", 950_000, 1_000_000);
        let x = t.group("x", 0, 1_000_000);
        let g = cgroup::V1Group {
            dir: x.clone(),
            mount: t.0.clone(),
            read_only: false,
        };
        let chain = rt_budget_chain(&g).unwrap();
        let causes = rt_causes(
            libc::EPERM,
            Request::Priority(10),
            &root_user(),
            Some(&chain),
            None,
            false,
        );
        assert_eq!(causes.len(), 1, "{causes:?}");
        let c = &causes[0];
        assert_eq!(c.id(), "rt_group_budget");
        assert!(c.describe().contains(&x.display().to_string()), "{c:?}");
        let fix = c.fix();
        assert!(
            fix.contains(&format!(
                "echo 950000 > {}",
                x.join("cpu.rt_runtime_us").display()
            )),
            "{fix}"
        );
        assert!(
            fix.contains(&format!("echo $$ > {}/cgroup.procs", t.0.display())),
            "{fix}"
        );
        assert!(!fix.contains("run as root"), "{fix}");
    }

    #[test]
    fn nested_zero_budgets_are_given_parents_first_within_what_siblings_leave() {
        let t = Tree::new("nested");
        t.group("", 950_000, 1_000_000);
        t.group("busy", 300_000, 1_000_000);
        let a = t.group("a", 0, 1_000_000);
        let b = t.group("a/b", 0, 500_000);
        let chain = rt_budget_chain(&cgroup::V1Group {
            dir: b.clone(),
            mount: t.0.clone(),
            read_only: false,
        })
        .unwrap();
        let steps = plan_budget(&chain).unwrap();
        assert_eq!(
            steps,
            vec![
                BudgetStep {
                    dir: a.clone(),
                    runtime_us: 650_001
                },
                BudgetStep {
                    dir: b.clone(),
                    runtime_us: 325_000
                },
            ]
        );
        // What the kernel checks: each child's ratio fits in what its parent has left.
        let root = to_ratio(1_000_000, 950_000);
        assert!(to_ratio(1_000_000, 300_000) + to_ratio(1_000_000, 650_001) <= root);
        assert!(to_ratio(500_000, 325_000) <= to_ratio(1_000_000, 650_001));
        let cause = &rt_causes(
            libc::EPERM,
            Request::Priority(1),
            &root_user(),
            Some(&chain),
            Some(Container::Docker),
            true,
        )[0];
        let Cause::RtGroupBudget { zero, .. } = cause else {
            panic!("{cause:?}")
        };
        assert_eq!(zero, &vec![a.clone(), b.clone()]);
        assert!(
            cause.describe().contains("nor has its ancestor"),
            "{cause:?}"
        );
        assert!(cause.fix().contains("parents first"), "{cause:?}");
        assert!(cause.fix().contains("--cpu-rt-runtime"), "{cause:?}");
        assert!(
            cause
                .fix()
                .starts_with("the cgroup filesystem is read-only here"),
            "{cause:?}"
        );
    }

    #[test]
    fn siblings_holding_the_whole_budget_are_named_instead_of_a_write_that_fails() {
        let t = Tree::new("full");
        t.group("", 950_000, 1_000_000);
        let hog = t.group("hog", 950_000, 1_000_000);
        let x = t.group("x", 0, 1_000_000);
        let chain = rt_budget_chain(&cgroup::V1Group {
            dir: x,
            mount: t.0.clone(),
            read_only: false,
        })
        .unwrap();
        let why = plan_budget(&chain).unwrap_err();
        assert!(why.contains(&hog.display().to_string()), "{why}");
        assert!(why.contains("lower one of theirs"), "{why}");
    }

    #[test]
    fn a_zero_budget_at_the_visible_top_cannot_be_fixed_from_inside() {
        let t = Tree::new("top");
        t.group("", 0, 1_000_000);
        let chain = rt_budget_chain(&cgroup::V1Group {
            dir: t.0.clone(),
            mount: t.0.clone(),
            read_only: false,
        })
        .unwrap();
        assert!(plan_budget(&chain).unwrap_err().contains("from outside"));
    }

    #[test]
    fn no_privilege_is_told_from_a_budget_and_root_is_never_told_to_run_as_root() {
        let user = Privileges {
            root: false,
            cap_sys_nice: false,
            cap_ipc_lock: false,
            rtprio: Some(0),
            memlock: Some(8 << 20),
        };
        let budgeted = [RtBudget {
            dir: "/sys/fs/cgroup/cpu".into(),
            runtime_us: 950_000,
            period_us: 1_000_000,
        }];
        let causes = rt_causes(
            libc::EPERM,
            Request::Priority(80),
            &user,
            Some(&budgeted),
            None,
            false,
        );
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].id(), "no_rt_privilege");
        assert!(causes[0].fix().contains("run as root"));
        assert!(causes[0].fix().contains("ulimit -r 80"));
        let dropped = Privileges { root: true, ..user };
        let c = &rt_causes(
            libc::EPERM,
            Request::Deadline,
            &dropped,
            Some(&budgeted),
            None,
            false,
        )[0];
        assert_eq!(c.id(), "no_rt_privilege");
        assert!(!c.fix().contains("run as root"), "{}", c.fix());
        assert!(c.fix().contains("--cap-add=SYS_NICE"), "{}", c.fix());
        assert!(!c.fix().contains("RLIMIT_RTPRIO"), "{}", c.fix());
    }

    #[test]
    fn a_refusal_with_every_check_passed_is_unknown_with_its_evidence() {
        let causes = rt_causes(
            libc::EPERM,
            Request::Priority(5),
            &root_user(),
            None,
            None,
            false,
        );
        assert_eq!(causes.len(), 1);
        let Cause::Unknown { evidence } = &causes[0] else {
            panic!("{causes:?}")
        };
        assert!(evidence.contains("EPERM"), "{evidence}");
        assert!(evidence.contains("CAP_SYS_NICE held"), "{evidence}");
        assert!(evidence.contains("no cpu cgroup budget read"), "{evidence}");
    }

    #[test]
    fn ratios_follow_the_kernel_fixed_point() {
        assert_eq!(to_ratio(1_000_000, -1), 1 << 20);
        assert_eq!(to_ratio(1_000_000, 950_000), 996_147);
        assert_eq!(runtime_for_ratio(1_000_000, 996_147), 950_000);
        assert_eq!(runtime_for_ratio(1_000_000, 0), 0);
        assert_eq!(runtime_for_ratio(1_000_000, 1 << 20), 1_000_000);
    }

    #[test]
    fn memlock_without_capability_offers_root_only_to_non_root() {
        let mut p = root_user();
        p.cap_ipc_lock = false;
        let c = Cause::Memlock {
            errno: libc::ENOMEM,
            privileges: p.clone(),
            mapped_kib: Some(20_000),
            memory_cgroup: None,
        };
        assert!(c.describe().contains("RLIMIT_MEMLOCK = 8192 KiB"), "{c:?}");
        assert!(!c.fix().contains("run as root"), "{}", c.fix());
        p.root = false;
        let c = Cause::Memlock {
            errno: libc::ENOMEM,
            privileges: p,
            mapped_kib: None,
            memory_cgroup: None,
        };
        assert!(c.fix().starts_with("run as root"), "{}", c.fix());
        assert_eq!(
            status_kib("VmLck:\t  12 kB\nVmSize: 5 kB\n", "VmLck"),
            Some(12)
        );
        assert_eq!(errno_text(libc::EPERM), "EPERM (Operation not permitted)");
    }
}
