//! Readers of `/proc` and `/sys` files used by `check`, the system-information block and the
//! validity ledger. Plain file reads: no FFI here. `/proc/stat` is read by
//! `preempt_io::sys::procstat`, shared with the monitor and the trace attribution.
//!
//! Every reader takes the file's text (or a root path) so it is unit-tested on fixed input.

use std::fs;
use std::path::Path;

/// Reads a small text file, trimmed; `None` if it does not exist or cannot be read.
pub(crate) fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// First "model name" (x86), "Model" or "Hardware" (arm) line of `/proc/cpuinfo`.
pub(crate) fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "Model", "Hardware", "cpu model"] {
        for line in cpuinfo.lines() {
            if let Some((k, v)) = line.split_once(':') {
                if k.trim() == key && !v.trim().is_empty() {
                    return Some(v.trim().to_string());
                }
            }
        }
    }
    None
}

/// cpufreq governor of each CPU that has one.
pub fn governors(cpus: &[usize]) -> Vec<(usize, String)> {
    cpus.iter()
        .filter_map(|&c| {
            read_trimmed(format!(
                "/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"
            ))
            .map(|g| (c, g))
        })
        .collect()
}

/// The value of `key=` on a kernel command line (last occurrence wins, as in the kernel).
pub(crate) fn cmdline_value<'a>(cmdline: &'a str, key: &str) -> Option<&'a str> {
    cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| *k == key)
        .map(|(_, v)| v)
        .last()
}

/// Parses a CPU list such as `1-3,5` or `managed_irq,domain,2-3` (flags are skipped).
pub(crate) fn parse_cpu_list_lenient(list: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in list.split(',') {
        let part = part.trim();
        if let Some((a, b)) = part.split_once('-') {
            if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                out.extend(a..=b);
            }
        } else if let Ok(c) = part.parse::<usize>() {
            out.push(c);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// A user-space thread running under a real-time policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RtThread {
    /// Thread id.
    pub tid: i32,
    /// Owning process id.
    pub pid: i32,
    /// `comm`.
    pub comm: String,
    /// Policy number (1 FIFO, 2 RR, 6 DEADLINE).
    pub policy: u32,
    /// RT priority.
    pub rt_priority: u32,
}

/// Parses `/proc/PID/task/TID/stat` into `(comm, flags, rt_priority, policy)`.
pub(crate) fn parse_task_stat(text: &str) -> Option<(String, u64, u32, u32)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text[open + 1..close].to_string();
    // Fields after the comm start at field 3 (state); flags is field 9, rt_priority 40,
    // policy 41 (proc(5)).
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    Some((
        comm,
        field(9)?,
        u32::try_from(field(40)?).ok()?,
        u32::try_from(field(41)?).ok()?,
    ))
}

/// User-space threads (not kernel threads) under SCHED_FIFO/RR/DEADLINE, except those of
/// process `exclude_pid`.
pub(crate) fn foreign_rt_threads(exclude_pid: i32) -> Vec<RtThread> {
    const PF_KTHREAD: u64 = 0x0020_0000; // include/linux/sched.h
    let mut out = Vec::new();
    let Ok(procs) = fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == exclude_pid {
            continue;
        }
        let Ok(tasks) = fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = fs::read_to_string(t.path().join("stat")) else {
                continue;
            };
            if let Some((comm, flags, rt_priority, policy)) = parse_task_stat(&stat) {
                if flags & PF_KTHREAD == 0 && matches!(policy, 1 | 2 | 6) {
                    out.push(RtThread {
                        tid,
                        pid,
                        comm,
                        policy,
                        rt_priority,
                    });
                }
            }
        }
    }
    out
}

/// Size in bytes of the largest cache of CPU 0 (the last-level cache), if sysfs tells.
pub(crate) fn last_level_cache_bytes() -> Option<u64> {
    let mut best = None;
    for index in 0..8 {
        let Some(size) = read_trimmed(format!(
            "/sys/devices/system/cpu/cpu0/cache/index{index}/size"
        )) else {
            continue;
        };
        let bytes = if let Some(k) = size.strip_suffix('K') {
            k.parse::<u64>().ok().map(|k| k * 1024)
        } else if let Some(m) = size.strip_suffix('M') {
            m.parse::<u64>().ok().map(|m| m * 1024 * 1024)
        } else {
            size.parse().ok()
        };
        best = best.max(bytes);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_values_and_flags() {
        let c = "quiet isolcpus=2-3 nohz_full=2,3 isolcpus=managed_irq,3 nosmt -- init-arg nosmt2";
        assert_eq!(cmdline_value(c, "isolcpus"), Some("managed_irq,3"));
        assert_eq!(cmdline_value(c, "rcu_nocbs"), None);
        assert_eq!(
            parse_cpu_list_lenient("managed_irq,domain,2-4,7"),
            vec![2, 3, 4, 7]
        );
    }

    #[test]
    fn task_stat_fields_are_found_after_a_comm_with_spaces() {
        // A real line of a SCHED_FIFO 80 user thread, comm "my (rt) loop".
        let mut fields: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        fields[9 - 3] = "4194304".into(); // flags: PF_RANDOMIZE only
        fields[40 - 3] = "80".into();
        fields[41 - 3] = "1".into();
        let line = format!("1234 (my (rt) loop) {}", fields.join(" "));
        let (comm, flags, prio, policy) = parse_task_stat(&line).unwrap();
        assert_eq!(
            (comm.as_str(), flags, prio, policy),
            ("my (rt) loop", 4194304, 80, 1)
        );
    }

    #[test]
    fn cpu_model_from_x86_and_arm() {
        assert_eq!(
            parse_cpu_model("processor: 0\nmodel name\t: AMD EPYC\n").unwrap(),
            "AMD EPYC"
        );
        assert_eq!(
            parse_cpu_model("processor: 0\nBogoMIPS: 108\nModel\t: Raspberry Pi 5 Model B\n")
                .unwrap(),
            "Raspberry Pi 5 Model B"
        );
        assert!(parse_cpu_model("").is_none());
    }
}
