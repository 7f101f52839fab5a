//! CPUs: which are online, which one a thread runs on, and the CPU idle-state latency request.
//!
//! [`hold_cpu_dma_latency`] keeps `/dev/cpu_dma_latency` open with a target of `us`
//! microseconds: while the file stays open the kernel's PM QoS keeps CPUs out of idle states
//! whose exit latency is larger (0 = stay in C0). Measurements of wake-up latency hold it, as
//! cyclictest does, so the numbers are not dominated by C-state exits.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};

/// The online CPUs, from `/sys/devices/system/cpu/online` (a list such as `0-3,6`).
///
/// # Errors
/// The file cannot be read or does not parse.
pub fn online_cpus() -> io::Result<Vec<usize>> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    parse_cpu_list(text.trim())
}

/// Parses a kernel CPU list (`0-3,6,8-9`), as in `/sys/devices/system/cpu/online`,
/// `isolcpus=` and taskset's `-c`.
///
/// # Errors
/// `InvalidInput` naming the part that does not parse.
pub fn parse_cpu_list(list: &str) -> io::Result<Vec<usize>> {
    let bad = |part: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{part}` is not a CPU number or range (expected a list like 0-3,6)"),
        )
    };
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((lo, hi)) => {
                let lo: usize = lo.trim().parse().map_err(|_| bad(part))?;
                let hi: usize = hi.trim().parse().map_err(|_| bad(part))?;
                if lo > hi {
                    return Err(bad(part));
                }
                cpus.extend(lo..=hi);
            }
            None => cpus.push(part.parse().map_err(|_| bad(part))?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The CPU the calling thread is running on right now (`sched_getcpu`).
///
/// # Errors
/// Whatever `sched_getcpu` reports (only `ENOSYS` on very old kernels).
pub fn current_cpu() -> io::Result<usize> {
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).map_err(|_| io::Error::last_os_error())
}

/// While alive, keeps a PM QoS request on `/dev/cpu_dma_latency`; dropping it releases it.
#[derive(Debug)]
pub struct CpuDmaLatency {
    _file: File,
    target_us: i32,
}

impl CpuDmaLatency {
    /// The latency target this guard holds, in microseconds.
    pub fn target_us(&self) -> i32 {
        self.target_us
    }
}

/// Asks the kernel to keep CPU wake-up latency at or below `us` microseconds while the
/// returned guard lives.
///
/// # Errors
/// `/dev/cpu_dma_latency` cannot be opened (it needs root) or written.
pub fn hold_cpu_dma_latency(us: i32) -> io::Result<CpuDmaLatency> {
    let mut file = OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")
        .map_err(|err| {
            io::Error::new(
                err.kind(),
                format!("cannot open /dev/cpu_dma_latency (needs root): {err}"),
            )
        })?;
    // The kernel accepts a binary s32 (or an ASCII hex string); the binary form is canonical.
    file.write_all(&us.to_ne_bytes())?;
    Ok(CpuDmaLatency {
        _file: file,
        target_us: us,
    })
}

/// The hypervisor's vendor signature from x86 CPUID leaf `0x4000_0000` (`"KVMKVMKVM"`,
/// `"TCGTCGTCGTCG"` for qemu's emulator, `"Microsoft Hv"`, `"VMwareVMware"`, ...), read only
/// when leaf 1 sets the hypervisor-present bit (ECX bit 31), as systemd-detect-virt does: on
/// bare metal leaf `0x4000_0000` returns whatever the highest basic leaf holds. `None` on bare
/// metal, when the signature is empty, and on other architectures.
pub fn hypervisor_cpuid_signature() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::__cpuid;
        #[allow(unused_unsafe, reason = "__cpuid became a safe fn after our MSRV")]
        // SAFETY: CPUID exists on every x86_64 CPU, touches no memory and only writes its four
        // output registers; any leaf may be queried (an unimplemented one returns the highest
        // basic leaf's data, which the hypervisor-present test before 0x4000_0000 excludes).
        let leaf = unsafe {
            if __cpuid(1).ecx & (1 << 31) != 0 {
                Some(__cpuid(0x4000_0000))
            } else {
                None
            }
        };
        let r = leaf?;
        let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .filter(|b| *b != 0)
            .collect();
        let sig = String::from_utf8_lossy(&bytes).trim().to_string();
        (!sig.is_empty()).then_some(sig)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// The architecture a `/proc/cpuinfo` text describes, from the fields only that
/// architecture's kernel writes (`vendor_id` and `flags` on x86_64; `CPU implementer` and
/// `Features` on arm64); `None` for others.
pub fn cpuinfo_arch(cpuinfo: &str) -> Option<&'static str> {
    let has = |key: &str| {
        cpuinfo
            .lines()
            .any(|l| l.split_once(':').is_some_and(|(k, _)| k.trim() == key))
    };
    if has("vendor_id") && has("flags") {
        Some("x86_64")
    } else if has("CPU implementer") && has("Features") {
        Some("aarch64")
    } else {
        None
    }
}

/// `Some(host architecture)` when this binary runs under user-mode emulation (qemu-user,
/// usually started by binfmt_misc): the kernel's `/proc/cpuinfo` then describes the host's
/// CPU, not the architecture this binary was built for. qemu-user does not translate every
/// system call (no GPIO ioctls, no io_uring, termios rates above 460800 Bd lost in qemu 7.2),
/// so tests use this to say why they take another path there.
pub fn user_mode_emulation() -> Option<&'static str> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    cpuinfo_arch(&text).filter(|a| *a != std::env::consts::ARCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,6").unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_cpu_list("1").unwrap(), vec![1]);
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_cpu_list("3,1-2,2").unwrap(), vec![1, 2, 3]);
        let err = parse_cpu_list("0-x").unwrap_err();
        assert!(err.to_string().contains("0-x"), "{err}");
        assert!(parse_cpu_list("3-1").is_err());
    }

    #[test]
    fn this_cpu_is_online() {
        let online = online_cpus().unwrap();
        assert!(online.contains(&current_cpu().unwrap()));
    }
}
