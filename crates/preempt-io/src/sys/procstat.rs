//! `/proc/stat`: cumulative CPU time per CPU, the one reader of the project.
//!
//! The busy/idle split judges how much else ran on a measured CPU; the steal counter is the
//! time the hypervisor ran something else while this vCPU wanted to run, which the guest
//! kernel cannot trace: on a VM it explains latency spikes nothing else accounts for. The
//! validity ledger of `preempt latency`, the live monitor and the trace attribution
//! (`invisible` time) all read it here.
//!
//! ```
//! use preempt_io::sys::procstat::{self, CpuTimes};
//!
//! let text = "cpu  10 1 5 100 3 2 1 7 0 0\ncpu0 5 0 2 50 1 1 0 3 0 0\nintr 1 2\n";
//! let stat = procstat::parse(text);
//! assert_eq!(stat[0], (None, CpuTimes { busy: 19, idle: 103, steal: 7 }));
//! assert_eq!(procstat::steal_ticks(&stat, 0), Some(3));
//! assert_eq!(procstat::steal_ticks(&stat, 1), None);
//! ```

use std::io;

/// `/proc/stat` counts in USER_HZ ticks, which is 100 on every Linux ABI
/// (`sysconf(_SC_CLK_TCK)`; `include/asm-generic/param.h`; `fs/proc/stat.c` reports
/// `nsec_to_clock_t`).
pub const USER_HZ: u64 = 100;

/// One USER_HZ tick in nanoseconds: the resolution of every counter here.
pub const TICK_NS: u64 = 1_000_000_000 / USER_HZ;

/// Cumulative CPU time counters of one line of `/proc/stat`, in USER_HZ ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Time doing anything but idle/iowait (user, nice, system, irq, softirq).
    pub busy: u64,
    /// Idle + iowait.
    pub idle: u64,
    /// Time the hypervisor ran something else while this vCPU wanted to run.
    pub steal: u64,
}

impl CpuTimes {
    /// All ticks.
    pub fn total(&self) -> u64 {
        self.busy + self.idle + self.steal
    }

    /// The difference `self - earlier` (0 where a counter went backwards).
    pub fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            busy: self.busy.saturating_sub(earlier.busy),
            idle: self.idle.saturating_sub(earlier.idle),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }
}

/// A parsed `/proc/stat`: the aggregate line (`None`) and each `cpuN` line.
pub type Snapshot = Vec<(Option<usize>, CpuTimes)>;

/// Parses `/proc/stat` into the aggregate line (`None` key) and per-CPU lines (`cpuN`). A
/// field the kernel does not print (old kernels lack steal) counts 0.
pub fn parse(text: &str) -> Snapshot {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let cpu = match fields.next()?.strip_prefix("cpu")? {
                "" => None,
                n => Some(n.parse().ok()?),
            };
            // proc(5): user nice system idle iowait irq softirq steal guest guest_nice
            let mut v = [0u64; 8];
            for (slot, f) in v.iter_mut().zip(fields) {
                *slot = f.parse().unwrap_or(0);
            }
            Some((
                cpu,
                CpuTimes {
                    busy: v[0] + v[1] + v[2] + v[5] + v[6],
                    idle: v[3] + v[4],
                    steal: v[7],
                },
            ))
        })
        .collect()
}

/// Reads and parses `/proc/stat` now.
pub fn read() -> io::Result<Snapshot> {
    std::fs::read_to_string("/proc/stat").map(|t| parse(&t))
}

/// The counters of `cpu` in a parsed `/proc/stat`.
pub fn cpu(stat: &[(Option<usize>, CpuTimes)], cpu: usize) -> Option<CpuTimes> {
    stat.iter().find(|(c, _)| *c == Some(cpu)).map(|(_, t)| *t)
}

/// The steal ticks of `cpu` in a parsed `/proc/stat`.
pub fn steal_ticks(stat: &[(Option<usize>, CpuTimes)], cpu: usize) -> Option<u64> {
    self::cpu(stat, cpu).map(|t| t.steal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_and_other_lines() {
        let text = "cpu  1 2 3 4\ncpu12 0 0 0 9 1 0 0 250 0 0\ncpufreq x\nctxt 5\n";
        let v = parse(text);
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[0].1,
            CpuTimes {
                busy: 6,
                idle: 4,
                steal: 0
            }
        );
        assert_eq!(steal_ticks(&v, 12), Some(250));
        assert_eq!(cpu(&v, 12).unwrap().since(&v[0].1).idle, 6);
    }

    #[test]
    fn this_machine_has_a_line_per_online_cpu() {
        let v = read().expect("/proc/stat is readable");
        assert!(v.iter().any(|(c, _)| c.is_none()));
        assert!(cpu(&v, 0).is_some(), "{v:?}");
    }
}
