//! `preempt check`: a real-time readiness audit.
//!
//! Each item reads one aspect of the machine (kernel, throttling, privileges, power
//! management, isolation, memory, clocks, virtualisation) and returns a [`CheckItem`] with a
//! pass/info/warn/fail status, what was found and the command that fixes it. The audit only
//! reads: it changes nothing, but for one measurement ([`idle_wakeup`], 0.65 s) that holds
//! `/dev/cpu_dma_latency` for half of its wake-ups.

pub mod idle_wakeup;

use std::fs;
use std::sync::atomic::AtomicBool;

use preempt_io::sys::rtcause::{self, Privileges};
use preempt_io::sys::rtprobe::{self, MemlockProbe, Refusal};
use preempt_io::sys::{clock, cpu, kernel, procstat, sched, thread};

use crate::procfs::{self, cmdline_value, parse_cpu_list_lenient, read_trimmed};
use crate::results::{CheckItem, CheckReport, Status};
use crate::virt;

fn item(
    id: &str,
    title: &str,
    status: Status,
    value: impl Into<String>,
    fix: impl Into<String>,
) -> CheckItem {
    let fix = if status == Status::Pass {
        String::new()
    } else {
        fix.into()
    };
    CheckItem {
        id: id.into(),
        title: title.into(),
        status,
        value: value.into(),
        fix,
    }
}

/// Runs every check, the measured [`idle_wakeup`] probe (0.65 s) included; `stop` (Ctrl-C,
/// SIGTERM) ends the probe at its next block, its item then saying it was not measured.
pub fn run(stop: &AtomicBool) -> CheckReport {
    let mut report = run_without_probes();
    let isolated = isolated_cpus(&read_trimmed("/proc/cmdline").unwrap_or_default());
    let (item, figures) = idle_wakeup::probe(&isolated, stop);
    let at = report
        .items
        .iter()
        .position(|i| i.id == "idle-states")
        .map_or(report.items.len(), |p| p + 1);
    report.items.insert(at, item);
    report.idle_wakeup = figures;
    report
}

/// Runs every check but the measured wake-up probe: what `preempt monitor` re-runs while its
/// own real-time loops measure, which the probe's SCHED_FIFO wake-ups would disturb. The
/// privilege items ask the kernel without disturbing them: the probe thread drops back to
/// SCHED_OTHER as soon as it is granted, and `mlockall` is not tried again by a process that
/// already locks its memory (`preempt_io::sys::rtprobe`).
pub(crate) fn run_without_probes() -> CheckReport {
    let cmdline = read_trimmed("/proc/cmdline").unwrap_or_default();
    let online = cpu::online_cpus().unwrap_or_default();
    let isolated = isolated_cpus(&cmdline);
    let mut items = vec![
        preempt_model(),
        high_res_timers(),
        rt_throttling(),
        fair_server(),
        rcu_kthreads(),
        privilege_rtprio(),
        privilege_memlock(),
        governor(&online),
        idle_states(),
        smt(),
        isolation(&cmdline, &isolated, &online),
        irq_affinity(&isolated),
        swap(),
        transparent_hugepages(),
        timer_slack(),
        clocksource(),
        virtualization(),
        foreign_rt_threads(),
    ];
    items.retain(|i| !i.id.is_empty());
    CheckReport {
        items,
        idle_wakeup: None,
    }
}

/// Whether any item failed.
pub(crate) fn has_failures(report: &CheckReport) -> bool {
    report.items.iter().any(|i| i.status == Status::Fail)
}

fn preempt_model() -> CheckItem {
    let info = kernel::preempt_info();
    let release = kernel::uname().map(|u| u.release).unwrap_or_default();
    let value = format!(
        "{} ({}{}; read from {})",
        info.model.name(),
        release,
        if info.dynamic {
            ", PREEMPT_DYNAMIC"
        } else {
            ""
        },
        info.source
    );
    let fix_dynamic = if info.dynamic {
        "boot with preempt=full (this PREEMPT_DYNAMIC kernel can switch), or better a PREEMPT_RT kernel \
         (Debian: apt install linux-image-rt-amd64 / linux-image-rt-arm64)"
    } else {
        "install and boot a PREEMPT_RT kernel (Debian: apt install linux-image-rt-amd64 / \
         linux-image-rt-arm64; mainline >= 6.12 has CONFIG_PREEMPT_RT)"
    };
    let status = match info.model {
        kernel::PreemptModel::Rt => Status::Pass,
        kernel::PreemptModel::Full | kernel::PreemptModel::Lazy => Status::Warn,
        kernel::PreemptModel::Unknown => Status::Info,
        kernel::PreemptModel::None | kernel::PreemptModel::Voluntary => Status::Fail,
    };
    item(
        "preempt-model",
        "Kernel preemption model",
        status,
        value,
        fix_dynamic,
    )
}

fn high_res_timers() -> CheckItem {
    match clock::resolution_ns(clock::ClockId::Monotonic) {
        Ok(1) => item(
            "hrtimers",
            "High-resolution timers",
            Status::Pass,
            "CLOCK_MONOTONIC resolution 1 ns",
            "",
        ),
        Ok(ns) => item(
            "hrtimers",
            "High-resolution timers",
            Status::Fail,
            format!("CLOCK_MONOTONIC resolution {ns} ns: timers fire on jiffies"),
            "enable CONFIG_HIGH_RES_TIMERS and drop highres=off from the kernel command line",
        ),
        Err(e) => item(
            "hrtimers",
            "High-resolution timers",
            Status::Info,
            format!("clock_getres failed: {e}"),
            "",
        ),
    }
}

fn rt_throttling() -> CheckItem {
    let runtime = read_trimmed("/proc/sys/kernel/sched_rt_runtime_us");
    let period = read_trimmed("/proc/sys/kernel/sched_rt_period_us");
    match (runtime.as_deref(), period.as_deref()) {
        (Some("-1"), _) => item(
            "rt-throttling",
            "RT throttling (sched_rt_runtime_us)",
            Status::Info,
            "disabled (-1): a runaway SCHED_FIFO thread can starve the CPU forever",
            "",
        ),
        (Some(r), Some(p)) => item(
            "rt-throttling",
            "RT throttling (sched_rt_runtime_us)",
            Status::Info,
            format!(
                "{r} us of every {p} us: real-time threads that hog a CPU longer are throttled \
                 (a busy-looping RT thread sees a {} ms stall each period)",
                p.parse::<i64>()
                    .unwrap_or(0)
                    .saturating_sub(r.parse().unwrap_or(0))
                    / 1000
            ),
            "nothing to do for loops that sleep every period; for CPU-bound RT work: \
             echo -1 > /proc/sys/kernel/sched_rt_runtime_us (removes the safety net)",
        ),
        _ => item(
            "rt-throttling",
            "RT throttling (sched_rt_runtime_us)",
            Status::Info,
            "not readable",
            "",
        ),
    }
}

/// RCU's kthreads on PREEMPT_RT: the per-CPU callback threads `rcuc/N`, which invoke
/// callbacks inside an RCU read-side section there, and the boost threads `rcub/N`, which
/// lift a preempted reader only to their own priority, all run at SCHED_FIFO
/// `rcutree.kthread_prio` (1 by default). A real-time thread above it that keeps a CPU busy
/// starves `rcuc/N` inside its read-side section: no grace period ends, no callback runs,
/// and the kernel reports an RCU stall (`Documentation/RCU/stallwarn.rst` lists this cause
/// and the boot parameter as its remedy). Seen in this project's PREEMPT_RT guests
/// (docs/MEASURING.md, "The PCP stress test's one hang").
fn rcu_kthreads() -> CheckItem {
    let rt = kernel::preempt_info().model == kernel::PreemptModel::Rt;
    rcu_kthreads_item(rt, kernel::rcu_kthread_prio())
}

fn rcu_kthreads_item(rt: bool, kthread_prio: Result<i32, String>) -> CheckItem {
    let id = "rcu-kthreads";
    let title = "RCU kthread priority (rcutree.kthread_prio)";
    let prio = match kthread_prio {
        Ok(p) => p,
        Err(why) => return item(id, title, Status::Info, why, ""),
    };
    if !rt {
        return item(
            id,
            title,
            Status::Info,
            format!(
                "SCHED_FIFO {prio} (it matters on PREEMPT_RT, where RCU's callbacks run in the \
                 rcuc/N threads at this priority)"
            ),
            "",
        );
    }
    if prio >= 2 {
        return item(
            id,
            title,
            Status::Pass,
            format!(
                "SCHED_FIFO {prio}: real-time threads at {} or below cannot starve RCU's \
                 kthreads (rcuc/N, rcub/N), however long they run",
                prio - 1
            ),
            "",
        );
    }
    item(
        id,
        title,
        Status::Warn,
        format!(
            "SCHED_FIFO {prio}: a real-time thread above {prio} that keeps a CPU busy (a \
             spinning executor level, a long computation) starves RCU's rcuc/N thread there, \
             no grace period ends and the kernel reports an RCU stall \
             (Documentation/RCU/stallwarn.rst)"
        ),
        "boot with rcutree.kthread_prio=N above your CPU-bound real-time threads and below \
         your latency-critical ones (e.g. rcutree.kthread_prio=20 with CPU-bound threads at \
         19 or below); loops that sleep every period need nothing",
    )
}

/// The fair-server (dl_server) of kernels >= 6.12 reserves CPU time for SCHED_OTHER tasks
/// and preempts real-time threads to give it to them.
fn fair_server() -> CheckItem {
    let dir = "/sys/kernel/debug/sched/fair_server";
    let title = "Fair server (dl_server) reservation";
    let Ok(entries) = fs::read_dir(dir) else {
        let newer = kernel::uname()
            .ok()
            .and_then(|u| {
                let mut it = u.release.split(|c: char| !c.is_ascii_digit());
                Some((
                    it.next()?.parse::<u32>().ok()?,
                    it.next()?.parse::<u32>().ok()?,
                ))
            })
            .is_some_and(|v| v >= (6, 12));
        return if newer {
            item(
                "fair-server",
                title,
                Status::Warn,
                "kernel >= 6.12 has a fair server, but debugfs is not mounted so it cannot be read \
                 (by default it gives SCHED_OTHER 50 ms of every 1 s, preempting RT threads that \
                 hog a CPU: the ~50 ms stalls of SCHED_FIFO 99)",
                "mount -t debugfs none /sys/kernel/debug, then rerun preempt check",
            )
        } else {
            item(
                "fair-server",
                title,
                Status::Pass,
                "none (kernel < 6.12)",
                "",
            )
        };
    };
    let budgets: Vec<CpuBudget> = entries
        .flatten()
        .map(|e| {
            let cpu = e
                .file_name()
                .to_string_lossy()
                .trim_start_matches("cpu")
                .to_string();
            let read = |name: &str| read_u64(&e.path().join(name));
            (cpu, read("runtime").and_then(|r| Ok((r, read("period")?))))
        })
        .collect();
    fair_server_item(&budgets)
}

/// A debugfs number; the error names the file and, for `EPERM`, kernel lockdown (which
/// restricts debugfs even for root).
fn read_u64(path: &std::path::Path) -> Result<u64, String> {
    let text = fs::read_to_string(path).map_err(|err| {
        let why = match err.raw_os_error() {
            Some(libc::EPERM) => " (kernel lockdown restricts debugfs, even for root)",
            Some(libc::EACCES) => " (needs root)",
            _ => "",
        };
        format!("{}: {err}{why}", path.display())
    })?;
    text.trim()
        .parse()
        .map_err(|_| format!("{}: unexpected {:?}", path.display(), text.trim()))
}

/// A CPU's fair-server budget: its number and `(runtime, period)` in ns, or why they could
/// not be read.
type CpuBudget = (String, Result<(u64, u64), String>);

/// The fair-server item from each CPU's budget: a budget that cannot be read is never taken
/// for a disabled one.
fn fair_server_item(budgets: &[CpuBudget]) -> CheckItem {
    let title = "Fair server (dl_server) reservation";
    if let Some((_, Err(why))) = budgets.iter().find(|(_, b)| b.is_err()) {
        return item(
            "fair-server",
            title,
            Status::Warn,
            format!(
                "kernel >= 6.12 has a fair server, but its budget cannot be read: {why}; by \
                 default it gives SCHED_OTHER 50 ms of every 1 s, preempting RT threads that \
                 hog a CPU"
            ),
            "read it as root on a kernel without lockdown (cat \
             /sys/kernel/debug/sched/fair_server/cpu*/runtime); if your RT threads may hog a \
             CPU, write 0 there (removes starvation protection)",
        );
    }
    let reserved: Vec<(u64, u64)> = budgets
        .iter()
        .filter_map(|(_, b)| b.as_ref().ok().copied())
        .filter(|(runtime, _)| *runtime > 0)
        .collect();
    if reserved.is_empty() {
        item(
            "fair-server",
            title,
            Status::Pass,
            "runtime 0 on every CPU (disabled)",
            "",
        )
    } else {
        let (r, p) = reserved[0];
        item(
            "fair-server",
            title,
            Status::Warn,
            format!(
                "{} ms of every {} ms reserved for SCHED_OTHER on {} CPU(s): an RT thread that \
                 keeps a CPU busy is preempted for up to {} ms",
                r / 1_000_000,
                p / 1_000_000,
                reserved.len(),
                r / 1_000_000
            ),
            "only if your RT threads may hog a CPU: echo 0 > \
             /sys/kernel/debug/sched/fair_server/cpuN/runtime (removes starvation protection)",
        )
    }
}

const RTPRIO_TITLE: &str = "Real-time priority (CAP_SYS_NICE / RLIMIT_RTPRIO)";
const MEMLOCK_TITLE: &str = "Memory locking (CAP_IPC_LOCK / RLIMIT_MEMLOCK)";

/// Judged by the kernel: a probe thread asks for SCHED_FIFO 99, then 1
/// (`preempt_io::sys::rtprobe`); CAP_SYS_NICE and RLIMIT_RTPRIO only explain the answer. A
/// root process in a cpu cgroup without real-time budget holds CAP_SYS_NICE and is refused.
fn privilege_rtprio() -> CheckItem {
    let fifo = |priority| rtprobe::probe_policy(&sched::Policy::Fifo { priority });
    rtprio_item(&Privileges::current(), fifo(99), || fifo(1))
}

fn rtprio_item(
    privileges: &Privileges,
    top: Result<(), Refusal>,
    bottom: impl FnOnce() -> Result<(), Refusal>,
) -> CheckItem {
    let why = if privileges.cap_sys_nice {
        "CAP_SYS_NICE held".to_string()
    } else {
        format!(
            "no CAP_SYS_NICE; RLIMIT_RTPRIO = {}",
            privileges
                .rtprio
                .map_or("unlimited".into(), |s| s.to_string())
        )
    };
    let top = match top {
        Ok(()) => {
            return item(
                "rtprio",
                RTPRIO_TITLE,
                Status::Pass,
                format!("SCHED_FIFO 99 granted by the kernel (probe thread); {why}"),
                "",
            );
        }
        Err(refusal) => refusal,
    };
    match bottom() {
        Ok(()) => item(
            "rtprio",
            RTPRIO_TITLE,
            Status::Warn,
            format!(
                "SCHED_FIFO 1 granted, 99 refused by the kernel with {}: {} [{}]",
                rtcause::errno_text(top.errno),
                top.describe(),
                top.ids()
            ),
            top.fix(),
        ),
        // Explained for 99, what the item is about: "raise RLIMIT_RTPRIO to 99", not to 1.
        Err(_) => item(
            "rtprio",
            RTPRIO_TITLE,
            Status::Fail,
            format!(
                "SCHED_FIFO 1 and 99 refused by the kernel with {}: {} [{}]",
                rtcause::errno_text(top.errno),
                top.describe(),
                top.ids()
            ),
            top.fix(),
        ),
    }
}

/// Judged by the kernel: `mlockall(MCL_CURRENT | MCL_FUTURE)`, undone at once, unless this
/// process already locks memory (`preempt monitor`: then its `VmLck` is the answer).
fn privilege_memlock() -> CheckItem {
    memlock_item(&Privileges::current(), rtprobe::probe_memlock())
}

fn memlock_item(privileges: &Privileges, probe: MemlockProbe) -> CheckItem {
    let why = match (privileges.cap_ipc_lock, privileges.memlock) {
        (true, _) => "CAP_IPC_LOCK held".to_string(),
        (false, None) => "RLIMIT_MEMLOCK unlimited".to_string(),
        (false, Some(bytes)) => format!("RLIMIT_MEMLOCK = {} KiB", bytes / 1024),
    };
    let limited = !privileges.cap_ipc_lock && privileges.memlock.is_some();
    match probe {
        MemlockProbe::AlreadyLocked { kib } => item(
            "memlock",
            MEMLOCK_TITLE,
            Status::Pass,
            format!("this process already locks {kib} KiB (VmLck); {why}"),
            "",
        ),
        MemlockProbe::Granted { kib } if !limited => item(
            "memlock",
            MEMLOCK_TITLE,
            Status::Pass,
            format!("mlockall granted by the kernel ({kib} KiB locked, then unlocked); {why}"),
            "",
        ),
        MemlockProbe::Granted { kib } => item(
            "memlock",
            MEMLOCK_TITLE,
            Status::Warn,
            format!(
                "mlockall granted by the kernel for this process's {kib} KiB, but {why}: a \
                 real program that locks more, or grows later, fails"
            ),
            rtcause::memlock_privilege_fix(privileges.root),
        ),
        MemlockProbe::Refused(refusal) => item(
            "memlock",
            MEMLOCK_TITLE,
            Status::Fail,
            format!(
                "mlockall refused by the kernel with {}: {} [{}]",
                rtcause::errno_text(refusal.errno),
                refusal.describe(),
                refusal.ids()
            ),
            refusal.fix(),
        ),
    }
}

fn governor(online: &[usize]) -> CheckItem {
    let title = "CPU frequency governor";
    let govs = procfs::governors(online);
    if govs.is_empty() {
        return item(
            "governor",
            title,
            Status::Info,
            "no cpufreq driver (fixed clock or VM)",
            "",
        );
    }
    let slow: Vec<String> = govs
        .iter()
        .filter(|(_, g)| g != "performance")
        .map(|(c, g)| format!("cpu{c}={g}"))
        .collect();
    if slow.is_empty() {
        item(
            "governor",
            title,
            Status::Pass,
            "performance on every CPU",
            "",
        )
    } else {
        item(
            "governor",
            title,
            Status::Warn,
            slow.join(" "),
            "cpupower frequency-set -g performance (frequency ramps add latency and jitter)",
        )
    }
}

fn idle_states() -> CheckItem {
    let title = "CPU idle states";
    let driver = read_trimmed("/sys/devices/system/cpu/cpuidle/current_driver").unwrap_or_default();
    let mut deep = Vec::new();
    let mut all = Vec::new();
    for n in 0..16 {
        let base = format!("/sys/devices/system/cpu/cpu0/cpuidle/state{n}");
        let Some(name) = read_trimmed(format!("{base}/name")) else {
            break;
        };
        let latency: u64 = read_trimmed(format!("{base}/latency"))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let disabled = read_trimmed(format!("{base}/disable")).as_deref() == Some("1");
        all.push(format!(
            "{name}({latency}us{})",
            if disabled { ",off" } else { "" }
        ));
        if latency > 10 && !disabled {
            deep.push(name);
        }
    }
    let value = if all.is_empty() {
        format!(
            "driver {}; no states listed",
            if driver.is_empty() { "none" } else { &driver }
        )
    } else {
        format!("driver {driver}: {}", all.join(" "))
    };
    if deep.is_empty() {
        item("idle-states", title, Status::Pass, value, "")
    } else {
        item(
            "idle-states",
            title,
            Status::Warn,
            value,
            "hold /dev/cpu_dma_latency at 0 while measuring (preempt latency does), or \
             cpupower idle-set -D 10, or boot with processor.max_cstate=1 intel_idle.max_cstate=0",
        )
    }
}

fn smt() -> CheckItem {
    let title = "SMT (hyper-threading)";
    match read_trimmed("/sys/devices/system/cpu/smt/active").as_deref() {
        Some("1") => item(
            "smt",
            title,
            Status::Warn,
            format!(
                "active (control: {})",
                read_trimmed("/sys/devices/system/cpu/smt/control").unwrap_or_default()
            ),
            "boot with nosmt, or offline the siblings of your RT CPUs \
             (echo 0 > /sys/devices/system/cpu/cpuN/online)",
        ),
        Some(_) => item("smt", title, Status::Pass, "inactive", ""),
        None => item("smt", title, Status::Info, "not reported", ""),
    }
}

/// CPUs isolated from the scheduler or from the tick (isolcpus, nohz_full, sysfs).
fn isolated_cpus(cmdline: &str) -> Vec<usize> {
    let mut cpus = read_trimmed("/sys/devices/system/cpu/isolated")
        .map(|s| parse_cpu_list_lenient(&s))
        .unwrap_or_default();
    if let Some(v) = cmdline_value(cmdline, "isolcpus") {
        cpus.extend(parse_cpu_list_lenient(v));
    }
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

fn isolation(cmdline: &str, isolated: &[usize], online: &[usize]) -> CheckItem {
    let title = "CPU isolation (isolcpus, nohz_full, rcu_nocbs)";
    let nohz = cmdline_value(cmdline, "nohz_full").unwrap_or("-");
    let rcu = cmdline_value(cmdline, "rcu_nocbs").unwrap_or("-");
    let value = format!(
        "isolcpus={} nohz_full={nohz} rcu_nocbs={rcu}",
        if isolated.is_empty() {
            "-".to_string()
        } else {
            isolated
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",")
        }
    );
    if !isolated.is_empty() && nohz != "-" && rcu != "-" {
        item("isolation", title, Status::Pass, value, "")
    } else if online.len() < 2 {
        item(
            "isolation",
            title,
            Status::Info,
            value + " (one CPU: nothing to isolate)",
            "",
        )
    } else {
        let last = online.last().copied().unwrap_or(1);
        item(
            "isolation",
            title,
            Status::Warn,
            value,
            format!(
                "boot with isolcpus=managed_irq,domain,{last} nohz_full={last} rcu_nocbs={last} and \
                 run the RT loop there (preempt latency --cpus {last})"
            ),
        )
    }
}

fn irq_affinity(isolated: &[usize]) -> CheckItem {
    let title = "IRQ affinity of isolated CPUs";
    if isolated.is_empty() {
        return item("irq-affinity", title, Status::Info, "no isolated CPUs", "");
    }
    let mut offenders = Vec::new();
    if let Ok(entries) = fs::read_dir("/proc/irq") {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.parse::<u32>().is_err() {
                continue;
            }
            let Some(list) = read_trimmed(e.path().join("effective_affinity_list"))
                .or_else(|| read_trimmed(e.path().join("smp_affinity_list")))
            else {
                continue;
            };
            if parse_cpu_list_lenient(&list)
                .iter()
                .any(|c| isolated.contains(c))
            {
                offenders.push(name);
            }
        }
    }
    if offenders.is_empty() {
        item(
            "irq-affinity",
            title,
            Status::Pass,
            "no IRQ is routed to an isolated CPU",
            "",
        )
    } else {
        offenders.sort_by_key(|n| n.parse::<u32>().unwrap_or(0));
        item(
            "irq-affinity",
            title,
            Status::Warn,
            format!("IRQs {} can run on isolated CPUs", offenders.join(",")),
            "echo <housekeeping cpus> > /proc/irq/N/smp_affinity_list for each (or isolcpus=managed_irq,...; \
             stop irqbalance from moving them back)",
        )
    }
}

fn swap() -> CheckItem {
    let title = "Swap";
    let text = fs::read_to_string("/proc/swaps").unwrap_or_default();
    let devices: Vec<&str> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    if devices.is_empty() {
        item("swap", title, Status::Pass, "no swap", "")
    } else {
        item(
            "swap",
            title,
            Status::Warn,
            format!("active on {}", devices.join(", ")),
            "lock real-time processes in RAM (mlockall; preempt does), or swapoff -a",
        )
    }
}

fn transparent_hugepages() -> CheckItem {
    let title = "Transparent hugepages";
    let Some(mode) = read_trimmed("/sys/kernel/mm/transparent_hugepage/enabled") else {
        return item("thp", title, Status::Info, "not available", "");
    };
    if mode.contains("[always]") {
        item(
            "thp",
            title,
            Status::Warn,
            mode,
            "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (compaction and \
             khugepaged stalls hit any thread)",
        )
    } else {
        item("thp", title, Status::Pass, mode, "")
    }
}

fn timer_slack() -> CheckItem {
    let title = "Timer slack";
    match thread::timer_slack_ns() {
        Ok(ns) if ns <= 1 => item("timer-slack", title, Status::Pass, format!("{ns} ns"), ""),
        Ok(ns) => item(
            "timer-slack",
            title,
            Status::Info,
            format!(
                "{ns} ns for this (SCHED_OTHER) process: non-RT sleeps may end up to {} us late",
                ns / 1000
            ),
            "prctl(PR_SET_TIMERSLACK, 1) in non-RT threads that need precise wake-ups \
             (preempt latency sets 1 ns for every policy)",
        ),
        Err(e) => item(
            "timer-slack",
            title,
            Status::Info,
            format!("prctl failed: {e}"),
            "",
        ),
    }
}

fn clocksource() -> CheckItem {
    let title = "Clocksource";
    let current = read_trimmed("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .unwrap_or_default();
    let available =
        read_trimmed("/sys/devices/system/clocksource/clocksource0/available_clocksource")
            .unwrap_or_default();
    match current.as_str() {
        "tsc" | "arch_sys_counter" | "riscv_clocksource" | "timebase" => {
            item("clocksource", title, Status::Pass, current, "")
        }
        "kvm-clock" | "hyperv_clocksource_tsc_page" | "xen" => item(
            "clocksource",
            title,
            Status::Info,
            format!("{current} (paravirtual; available: {available})"),
            "",
        ),
        "" => item("clocksource", title, Status::Info, "not reported", ""),
        _ => item(
            "clocksource",
            title,
            Status::Warn,
            format!("{current} (available: {available}): slow clock reads add to every sample"),
            "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource, or fix \
             why the kernel marked the TSC unstable (dmesg | grep -i tsc)",
        ),
    }
}

fn virtualization() -> CheckItem {
    let title = "Virtualisation";
    let steal = procstat::read()
        .unwrap_or_default()
        .into_iter()
        .find(|(c, _)| c.is_none())
        .map(|(_, t)| {
            if t.total() == 0 {
                0.0
            } else {
                100.0 * t.steal as f64 / t.total() as f64
            }
        });
    let sources = virt::Sources::live();
    match virt::detect(&sources) {
        None => item(
            "virtualization",
            title,
            Status::Pass,
            virt::bare_metal_basis(&sources),
            "",
        ),
        Some(f) if f.kind == virt::Kind::Emulated => item(
            "virtualization",
            title,
            Status::Fail,
            f.describe(),
            "the CPU is emulated: its timing is the emulator's, so no latency figure measured \
             here describes a real machine; measure on the target hardware (the run proves \
             function only)",
        ),
        Some(f) => item(
            "virtualization",
            title,
            Status::Warn,
            format!(
                "{}; steal time since boot {:.2} %",
                f.describe(),
                steal.unwrap_or(0.0)
            ),
            "the hypervisor can stop a vCPU at any moment: measure on bare metal, or pin the VM's \
             vCPUs to dedicated host cores",
        ),
    }
}

fn foreign_rt_threads() -> CheckItem {
    let title = "Other real-time threads";
    let threads = procfs::foreign_rt_threads(std::process::id() as i32);
    if threads.is_empty() {
        item(
            "rt-threads",
            title,
            Status::Pass,
            "no user-space RT threads running",
            "",
        )
    } else {
        let names: Vec<String> = threads
            .iter()
            .take(8)
            .map(|t| {
                format!(
                    "{}[{}] {}",
                    t.comm,
                    t.tid,
                    match t.policy {
                        1 => format!("FIFO {}", t.rt_priority),
                        2 => format!("RR {}", t.rt_priority),
                        _ => "DEADLINE".into(),
                    }
                )
            })
            .collect();
        item(
            "rt-threads",
            title,
            Status::Info,
            format!("{} running: {}", threads.len(), names.join(", ")),
            "make sure their priorities are below your loop's, or stop them while measuring",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_check_reads_the_machine_and_leaves_the_probe_unmeasured() {
        let report = run(&AtomicBool::new(true));
        assert!(report.items.len() >= 15, "{report:?}");
        let idle = report
            .items
            .iter()
            .find(|i| i.id == idle_wakeup::ID)
            .expect("the idle-wakeup item");
        assert_eq!(idle.status, Status::Info, "{idle:?}");
        assert!(idle.value.contains("interrupted"), "{idle:?}");
        assert!(report.idle_wakeup.is_none());
    }

    #[test]
    fn every_item_has_a_fix_unless_it_passes() {
        let report = run(&AtomicBool::new(false));
        assert!(report.items.len() >= 15, "{report:?}");
        for i in &report.items {
            assert!(
                !i.id.is_empty() && !i.title.is_empty() && !i.value.is_empty(),
                "{i:?}"
            );
            match i.status {
                Status::Pass => assert!(i.fix.is_empty(), "{i:?}"),
                Status::Warn | Status::Fail => assert!(!i.fix.is_empty(), "{i:?}"),
                Status::Info => {}
            }
        }
        let ids: std::collections::HashSet<_> = report.items.iter().map(|i| &i.id).collect();
        assert_eq!(ids.len(), report.items.len(), "duplicate ids");
    }

    #[test]
    fn an_unreadable_fair_server_budget_is_a_warning_never_a_disabled_server() {
        let locked = fair_server_item(&[
            ("0".into(), Ok((50_000_000, 1_000_000_000))),
            (
                "1".into(),
                Err(
                    "cpu1/runtime: Operation not permitted (os error 1) (kernel lockdown \
                     restricts debugfs, even for root)"
                        .into(),
                ),
            ),
        ]);
        assert_eq!(locked.status, Status::Warn, "{locked:?}");
        assert!(locked.value.contains("cannot be read"), "{locked:?}");
        assert!(locked.value.contains("lockdown"), "{locked:?}");
        let off = fair_server_item(&[("0".into(), Ok((0, 1_000_000_000)))]);
        assert_eq!(off.status, Status::Pass, "{off:?}");
        let on = fair_server_item(&[("0".into(), Ok((50_000_000, 1_000_000_000)))]);
        assert_eq!(on.status, Status::Warn, "{on:?}");
        assert!(on.value.starts_with("50 ms of every 1000 ms"), "{on:?}");
    }

    #[test]
    fn rcu_kthreads_warn_on_preempt_rt_at_the_default_priority_only() {
        let warn = rcu_kthreads_item(true, Ok(1));
        assert_eq!(warn.status, Status::Warn, "{warn:?}");
        assert!(warn.fix.contains("rcutree.kthread_prio="), "{warn:?}");
        let pass = rcu_kthreads_item(true, Ok(20));
        assert_eq!(pass.status, Status::Pass, "{pass:?}");
        assert!(pass.value.contains("19 or below"), "{pass:?}");
        assert_eq!(rcu_kthreads_item(false, Ok(1)).status, Status::Info);
        let unreadable = rcu_kthreads_item(true, Err("not readable (ENOENT)".into()));
        assert_eq!(unreadable.status, Status::Info);
        assert!(unreadable.value.contains("not readable"), "{unreadable:?}");
    }

    fn root() -> Privileges {
        Privileges {
            root: true,
            cap_sys_nice: true,
            cap_ipc_lock: true,
            rtprio: Some(0),
            memlock: Some(8 << 20),
        }
    }

    fn budget_refusal(priority: u8) -> Refusal {
        Refusal {
            what: format!("SCHED_FIFO {priority}"),
            errno: libc::EPERM,
            causes: rtcause::rt_causes(
                libc::EPERM,
                rtcause::Request::Priority(priority),
                &root(),
                Some(&[
                    rtcause::RtBudget {
                        dir: "/sys/fs/cgroup/cpu".into(),
                        runtime_us: 950_000,
                        period_us: 1_000_000,
                    },
                    rtcause::RtBudget {
                        dir: "/sys/fs/cgroup/cpu/x".into(),
                        runtime_us: 0,
                        period_us: 1_000_000,
                    },
                ]),
                None,
                false,
            ),
        }
    }

    #[test]
    fn cap_sys_nice_is_no_pass_when_the_kernel_refuses() {
        let i = rtprio_item(&root(), Err(budget_refusal(99)), || Err(budget_refusal(1)));
        assert_eq!(i.status, Status::Fail, "{i:?}");
        assert!(i.value.contains("EPERM"), "{i:?}");
        assert!(i.value.contains("/sys/fs/cgroup/cpu/x"), "{i:?}");
        assert!(i.value.contains("[rt_group_budget]"), "{i:?}");
        assert!(!i.fix.contains("run as root"), "{i:?}");
        let granted = rtprio_item(&root(), Ok(()), || unreachable!("not asked"));
        assert_eq!(granted.status, Status::Pass, "{granted:?}");
        assert!(
            granted.value.contains("granted by the kernel"),
            "{granted:?}"
        );
        let low = rtprio_item(&root(), Err(budget_refusal(99)), || Ok(()));
        assert_eq!(low.status, Status::Warn, "{low:?}");
    }

    #[test]
    fn memory_locking_is_judged_by_mlockall() {
        let refused = Refusal {
            what: "mlockall".into(),
            errno: libc::ENOMEM,
            causes: vec![rtcause::Cause::Memlock {
                errno: libc::ENOMEM,
                privileges: Privileges {
                    cap_ipc_lock: false,
                    ..root()
                },
                mapped_kib: Some(30_000),
                memory_cgroup: None,
            }],
        };
        let i = memlock_item(&root(), MemlockProbe::Refused(refused));
        assert_eq!(i.status, Status::Fail, "{i:?}");
        assert!(i.value.contains("ENOMEM"), "{i:?}");
        assert!(!i.fix.contains("run as root"), "{i:?}");
        let i = memlock_item(&root(), MemlockProbe::Granted { kib: 9000 });
        assert_eq!(i.status, Status::Pass, "{i:?}");
        let limited = Privileges {
            cap_ipc_lock: false,
            ..root()
        };
        let i = memlock_item(&limited, MemlockProbe::Granted { kib: 4000 });
        assert_eq!(i.status, Status::Warn, "{i:?}");
        let i = memlock_item(&limited, MemlockProbe::AlreadyLocked { kib: 4000 });
        assert_eq!(i.status, Status::Pass, "{i:?}");
        assert!(i.value.contains("VmLck"), "{i:?}");
    }

    #[test]
    fn isolated_cpus_come_from_the_cmdline_too() {
        assert!(isolated_cpus("quiet isolcpus=managed_irq,domain,3").contains(&3));
    }
}
