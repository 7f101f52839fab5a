//! Collects the [`SysInfo`] block stored in every result file and the kernel-level
//! [`Warning`]s that follow from it.

use preempt_io::sys::{cpu, kernel};

use crate::procfs;
use crate::results::SysInfo;
use crate::warnings::Warning;

/// Short lowercase name of a preemption model, as stored in result files.
pub(crate) fn model_name(model: kernel::PreemptModel) -> &'static str {
    match model {
        kernel::PreemptModel::Unknown => "unknown",
        kernel::PreemptModel::None => "none",
        kernel::PreemptModel::Voluntary => "voluntary",
        kernel::PreemptModel::Lazy => "lazy",
        kernel::PreemptModel::Full => "full",
        kernel::PreemptModel::Rt => "rt",
    }
}

/// Reads the system information of this machine; `argv` is the command line of the run.
pub fn collect(argv: Vec<String>) -> SysInfo {
    let uname = kernel::uname().ok();
    let preempt = kernel::preempt_info();
    let cpus_online = cpu::online_cpus().unwrap_or_default();
    let field =
        |f: fn(&kernel::Uname) -> &String| uname.as_ref().map(f).cloned().unwrap_or_default();
    SysInfo {
        hostname: field(|u| &u.nodename),
        kernel_release: field(|u| &u.release),
        kernel_version: field(|u| &u.version),
        machine: field(|u| &u.machine),
        cmdline: procfs::read_trimmed("/proc/cmdline").unwrap_or_default(),
        cpu_model: std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| procfs::parse_cpu_model(&t))
            .unwrap_or_else(|| "unknown".into()),
        governors: procfs::governors(&cpus_online),
        cpus_online,
        preempt_model: model_name(preempt.model).into(),
        preempt_dynamic: preempt.dynamic,
        realtime_flag: preempt.realtime_flag,
        clocksource: procfs::read_trimmed(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .unwrap_or_else(|| "unknown".into()),
        virtualization: crate::virt::detect_live().map(|f| f.label()),
        argv,
    }
}

/// Warnings about the machine itself (kernel, governor, VM, SMT) for the measured CPUs.
pub(crate) fn machine_warnings(info: &SysInfo, measured_cpus: &[usize]) -> Vec<Warning> {
    let mut out = Vec::new();
    if info.preempt_model != "rt" {
        out.push(Warning::NotPreemptRt {
            model: info.preempt_model.clone(),
        });
    }
    let slow: Vec<(usize, &String)> = info
        .governors
        .iter()
        .filter(|(c, g)| measured_cpus.contains(c) && g != "performance")
        .map(|(c, g)| (*c, g))
        .collect();
    if let Some(&(_, governor)) = slow.first() {
        out.push(Warning::GovernorNotPerformance {
            cpus: slow.iter().map(|(c, _)| *c).collect(),
            governor: governor.clone(),
        });
    }
    if let Some(h) = &info.virtualization {
        out.push(Warning::VirtualMachine {
            hypervisor: h.clone(),
        });
    }
    let smt: Vec<usize> = measured_cpus
        .iter()
        .copied()
        .filter(|c| {
            smt_siblings(*c)
                .iter()
                .any(|s| s != c && info.cpus_online.contains(s))
        })
        .collect();
    if !smt.is_empty() {
        out.push(Warning::SmtSiblings { cpus: smt });
    }
    let mut isolated = procfs::read_trimmed("/sys/devices/system/cpu/isolated")
        .map(|l| procfs::parse_cpu_list_lenient(&l))
        .unwrap_or_default();
    if let Some(v) = procfs::cmdline_value(&info.cmdline, "isolcpus") {
        isolated.extend(procfs::parse_cpu_list_lenient(v));
    }
    if info.cpus_online.len() > 1 && !measured_cpus.iter().all(|c| isolated.contains(c)) {
        out.push(Warning::NotIsolated);
    }
    out
}

/// The SMT siblings of `cpu` (including itself), from sysfs topology.
pub(crate) fn smt_siblings(cpu: usize) -> Vec<usize> {
    procfs::read_trimmed(format!(
        "/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    ))
    .map(|l| procfs::parse_cpu_list_lenient(&l))
    .unwrap_or_default()
}
