//! Steal time per CPU from `/proc/stat`: how long the hypervisor ran something else while a
//! vCPU wanted to run. On a VM it explains latency spikes the guest kernel cannot see.
//!
//! ```
//! let text = "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 250 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\n";
//! let steal = preempt_metrics::procstat::parse_steal_ticks(text);
//! assert_eq!(steal, vec![(0, 250), (1, 0)]);
//! ```

/// `/proc/stat` counts in USER_HZ, which is 100 on every Linux ABI (`sysconf(_SC_CLK_TCK)`;
/// the kernel's `USER_HZ` is fixed by the ABI, see `include/asm-generic/param.h`).
pub const USER_HZ: u64 = 100;

/// `(cpu, steal ticks)` of every `cpuN` line (the 8th value: user nice system idle iowait irq
/// softirq **steal**). A line too short to have the field counts 0.
pub fn parse_steal_ticks(text: &str) -> Vec<(usize, u64)> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let cpu = fields.next()?.strip_prefix("cpu")?.parse().ok()?;
            Some((cpu, fields.nth(7).and_then(|f| f.parse().ok()).unwrap_or(0)))
        })
        .collect()
}

/// Current steal ticks per CPU; empty when `/proc/stat` cannot be read.
pub fn steal_ticks() -> Vec<(usize, u64)> {
    std::fs::read_to_string("/proc/stat")
        .map(|t| parse_steal_ticks(&t))
        .unwrap_or_default()
}
