//! The running kernel: `uname(2)` and its preemption model.
//!
//! Whether a kernel is fully preemptible decides the worst case of every wake-up latency, so
//! preempt reads the model from every place Linux exposes it, most authoritative first:
//!
//! 1. `/sys/kernel/realtime` (exists and reads `1` on PREEMPT_RT kernels);
//! 2. `/sys/kernel/debug/sched/preempt` (PREEMPT_DYNAMIC kernels, needs debugfs mounted): the
//!    active mode is the one in parentheses, e.g. `none voluntary (full) lazy`;
//! 3. `preempt=` on `/proc/cmdline` (PREEMPT_DYNAMIC kernels select the mode at boot);
//! 4. `/proc/config.gz` or `/boot/config-$(uname -r)` (`CONFIG_PREEMPT_*`), the build default;
//! 5. the `uname -v` banner (`PREEMPT_RT`, `PREEMPT_DYNAMIC`, `PREEMPT`).

use std::ffi::CStr;
use std::io::{self, Read};

/// What `uname(2)` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uname {
    /// `Linux`.
    pub sysname: String,
    /// The host name.
    pub nodename: String,
    /// The kernel release, e.g. `6.12.25-rt13-v8+`.
    pub release: String,
    /// The build banner, e.g. `#1 SMP PREEMPT_RT Fri ...`.
    pub version: String,
    /// The machine architecture, e.g. `aarch64`.
    pub machine: String,
}

/// Reads `uname(2)`.
///
/// # Errors
/// Whatever `uname` reports (it cannot fail with a valid buffer).
pub fn uname() -> io::Result<Uname> {
    // SAFETY: utsname is a struct of char arrays; all-zero is a valid value.
    let mut raw: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `raw` is a valid, writable utsname.
    if unsafe { libc::uname(&mut raw) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let field = |chars: &[libc::c_char]| {
        // SAFETY: the kernel NUL-terminates every utsname field within its array.
        unsafe { CStr::from_ptr(chars.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    Ok(Uname {
        sysname: field(&raw.sysname),
        nodename: field(&raw.nodename),
        release: field(&raw.release),
        version: field(&raw.version),
        machine: field(&raw.machine),
    })
}

/// A kernel preemption model, from least to most preemptible.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PreemptModel {
    /// The model could not be determined.
    Unknown,
    /// `PREEMPT_NONE`: kernel code is never preempted (server default).
    None,
    /// `PREEMPT_VOLUNTARY`: preemption at explicit points in kernel code.
    Voluntary,
    /// `PREEMPT_LAZY`: full preemption for real-time tasks, lazy for the rest.
    Lazy,
    /// `PREEMPT` (full): kernel code is preemptible outside critical sections.
    Full,
    /// `PREEMPT_RT`: fully preemptible, threaded interrupts, sleeping spinlocks.
    Rt,
}

impl PreemptModel {
    /// The model's name as in the kernel's Kconfig (`PREEMPT_RT`, ...).
    pub fn name(self) -> &'static str {
        match self {
            PreemptModel::Unknown => "unknown",
            PreemptModel::None => "PREEMPT_NONE",
            PreemptModel::Voluntary => "PREEMPT_VOLUNTARY",
            PreemptModel::Lazy => "PREEMPT_LAZY",
            PreemptModel::Full => "PREEMPT (full)",
            PreemptModel::Rt => "PREEMPT_RT",
        }
    }

    fn from_mode(word: &str) -> Option<PreemptModel> {
        Some(match word {
            "none" => PreemptModel::None,
            "voluntary" => PreemptModel::Voluntary,
            "full" => PreemptModel::Full,
            "lazy" => PreemptModel::Lazy,
            _ => return None,
        })
    }
}

/// The preemption model in force and where it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreemptInfo {
    /// The model in force.
    pub model: PreemptModel,
    /// Whether the kernel is PREEMPT_DYNAMIC (the model can be chosen at boot).
    pub dynamic: bool,
    /// `/sys/kernel/realtime`, when it exists.
    pub realtime_flag: Option<bool>,
    /// Where `model` was read, for a person to check.
    pub source: String,
}

/// Reads the preemption model of the running kernel (see the module docs for the order).
pub fn preempt_info() -> PreemptInfo {
    let banner = uname().map(|u| u.version).unwrap_or_default();
    let realtime_flag = std::fs::read_to_string("/sys/kernel/realtime")
        .ok()
        .map(|s| s.trim() == "1");
    let debugfs = std::fs::read_to_string("/sys/kernel/debug/sched/preempt").ok();
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let config = kernel_config();
    decide(
        &banner,
        realtime_flag,
        debugfs.as_deref(),
        &cmdline,
        config.as_deref(),
    )
}

/// Whether the running kernel is PREEMPT_RT.
pub fn is_preempt_rt() -> bool {
    preempt_info().model == PreemptModel::Rt
}

/// Where the kernel says at which SCHED_FIFO priority RCU's kthreads run.
pub const RCU_KTHREAD_PRIO_PATH: &str = "/sys/module/rcutree/parameters/kthread_prio";

/// The SCHED_FIFO priority of RCU's kthreads (`rcutree.kthread_prio`: on PREEMPT_RT the
/// per-CPU callback threads `rcuc/N`, the boost threads `rcub/N` and the grace-period
/// kthreads; 1 by default there). A real-time thread above it that keeps a CPU busy starves
/// `rcuc/N` inside an RCU read-side section and stalls RCU for the whole machine
/// (`Documentation/RCU/stallwarn.rst`).
///
/// # Errors
/// The file cannot be read (a kernel without tree RCU), or does not hold a number: the
/// message says which.
pub fn rcu_kthread_prio() -> Result<i32, String> {
    let text = std::fs::read_to_string(RCU_KTHREAD_PRIO_PATH)
        .map_err(|e| format!("{RCU_KTHREAD_PRIO_PATH}: not readable ({e})"))?;
    text.trim()
        .parse()
        .map_err(|_| format!("{RCU_KTHREAD_PRIO_PATH}: unexpected {:?}", text.trim()))
}

/// The kernel's message buffer as `/dev/kmsg` holds it now (one message per line, without
/// the `priority,sequence,time,flags;` prefix), read without waiting for new messages. It
/// starts at the boot banner (`Linux version ...`) unless the ring buffer wrapped.
///
/// # Errors
/// `/dev/kmsg` cannot be opened (`EPERM` for an unprivileged reader when
/// `kernel.dmesg_restrict = 1`) or a read fails with anything but "no more messages" and
/// "overwritten while reading" (`EPIPE`, after which reading continues at the oldest message).
pub fn kernel_log() -> io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/kmsg")?;
    // Each read returns one record; the kernel refuses buffers smaller than a record
    // (EINVAL), and a record is at most 8 KiB (CONSOLE_EXT_LOG_MAX, printk.h).
    let mut buf = vec![0u8; 8192];
    let mut out = String::new();
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let record = String::from_utf8_lossy(&buf[..n]);
                let first = record.lines().next().unwrap_or_default();
                if let Some((_, message)) = first.split_once(';') {
                    out.push_str(message);
                    out.push('\n');
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// The kernel's build configuration, from `/proc/config.gz` (needs CONFIG_IKCONFIG_PROC) or
/// `/boot/config-<release>`; `None` when neither is readable.
pub(crate) fn kernel_config() -> Option<String> {
    if let Ok(file) = std::fs::File::open("/proc/config.gz") {
        let mut text = String::new();
        if flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .is_ok()
        {
            return Some(text);
        }
    }
    let release = uname().ok()?.release;
    std::fs::read_to_string(format!("/boot/config-{release}")).ok()
}

fn decide(
    banner: &str,
    realtime_flag: Option<bool>,
    debugfs: Option<&str>,
    cmdline: &str,
    config: Option<&str>,
) -> PreemptInfo {
    let config_has = |key: &str| {
        config.is_some_and(|c| c.lines().any(|l| l.trim() == format!("CONFIG_{key}=y")))
    };
    let dynamic = banner.contains("PREEMPT_DYNAMIC") || config_has("PREEMPT_DYNAMIC");
    let info = |model, source: &str| PreemptInfo {
        model,
        dynamic,
        realtime_flag,
        source: source.to_owned(),
    };
    if realtime_flag == Some(true) || banner.contains("PREEMPT_RT") || config_has("PREEMPT_RT") {
        return info(
            PreemptModel::Rt,
            "/sys/kernel/realtime, uname -v or kernel config",
        );
    }
    if let Some(text) = debugfs {
        let active = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix('(').and_then(|w| w.strip_suffix(')')));
        if let Some(model) = active.and_then(PreemptModel::from_mode) {
            return info(model, "/sys/kernel/debug/sched/preempt");
        }
    }
    if dynamic {
        let chosen = cmdline
            .split_whitespace()
            .find_map(|w| w.strip_prefix("preempt="))
            .and_then(PreemptModel::from_mode);
        if let Some(model) = chosen {
            return info(model, "preempt= on /proc/cmdline");
        }
    }
    for (key, model) in [
        ("PREEMPT_LAZY", PreemptModel::Lazy),
        ("PREEMPT", PreemptModel::Full),
        ("PREEMPT_VOLUNTARY", PreemptModel::Voluntary),
        ("PREEMPT_NONE", PreemptModel::None),
    ] {
        if config_has(key) {
            return info(model, "kernel config (the boot default)");
        }
    }
    let words: Vec<&str> = banner.split_whitespace().collect();
    if words.contains(&"PREEMPT") {
        return info(PreemptModel::Full, "uname -v");
    }
    info(PreemptModel::Unknown, "no source readable")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uname_names_linux() {
        let u = uname().unwrap();
        assert_eq!(u.sysname, "Linux");
        assert!(!u.release.is_empty());
    }

    #[test]
    fn realtime_flag_wins() {
        let i = decide("#1 SMP PREEMPT_DYNAMIC", Some(true), None, "", None);
        assert_eq!(i.model, PreemptModel::Rt);
        assert!(i.dynamic);
    }

    #[test]
    fn debugfs_names_the_active_mode() {
        let i = decide(
            "#1 SMP",
            None,
            Some("none voluntary (full) lazy\n"),
            "",
            None,
        );
        assert_eq!(i.model, PreemptModel::Full);
    }

    #[test]
    fn cmdline_then_config_default() {
        let config =
            "CONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\n# CONFIG_PREEMPT is not set\n";
        let i = decide(
            "#1 SMP PREEMPT_DYNAMIC",
            None,
            None,
            "quiet preempt=full",
            Some(config),
        );
        assert_eq!(i.model, PreemptModel::Full);
        let i = decide("#1 SMP PREEMPT_DYNAMIC", None, None, "quiet", Some(config));
        assert_eq!(i.model, PreemptModel::None);
        assert!(i.source.contains("config"));
    }

    #[test]
    fn banner_is_the_last_resort() {
        assert_eq!(
            decide("#1 SMP PREEMPT_RT", None, None, "", None).model,
            PreemptModel::Rt
        );
        assert_eq!(
            decide("#1 SMP PREEMPT Mon", None, None, "", None).model,
            PreemptModel::Full
        );
        assert_eq!(
            decide("#1 SMP", None, None, "", None).model,
            PreemptModel::Unknown
        );
    }

    #[test]
    fn this_kernel_is_classified() {
        let info = preempt_info();
        assert!(!info.source.is_empty());
    }
}
