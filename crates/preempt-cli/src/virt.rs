//! Is this machine virtual or emulated? Every source Linux exposes, read as evidence.
//!
//! # Background
//! A latency figure measured in a virtual machine describes the host's scheduler as much as
//! the guest, and one measured on an emulated CPU (qemu's TCG, qemu-user) describes the
//! emulator: neither may be called clean. The x86 `hypervisor` CPU flag alone misses the
//! common arm64 cases: a qemu `virt` guest has no DMI tables when booted with `-kernel`, and
//! arm64 has no CPUID, so such a guest looked like bare metal. systemd-detect-virt
//! (`src/basic/virt.c`) is the checklist this module follows, with emulation as a finding of
//! its own:
//!
//! | source | read from | finds |
//! |---|---|---|
//! | user-mode emulation | `/proc/cpuinfo` describes another architecture than this binary's | qemu-user |
//! | CPUID leaf `0x4000_0000` (x86) | the hypervisor's vendor signature | KVM, TCG, Hyper-V, VMware, Xen, ... |
//! | DMI | `/sys/class/dmi/id/{sys_vendor,product_name,board_vendor,bios_vendor}` | QEMU, KVM, Amazon EC2, Google, ... |
//! | device tree | `/proc/device-tree/hypervisor/compatible`, `/compatible`, `fw-cfg` nodes | KVM, Xen, qemu `virt` (`linux,dummy-virt`) |
//! | Xen | `/sys/hypervisor/type` | Xen |
//! | CPU flag (x86) | `hypervisor` in `/proc/cpuinfo` | some hypervisor |
//! | accelerator | `kvm-clock` clocksource, the boot log's `Hypervisor detected: KVM` (x86) or `smccc: KVM: hypervisor services detected` (arm64) | KVM behind qemu |
//!
//! # Solution
//! [`Sources`] holds what was read (from `/` or from a recorded fixture directory, so every
//! rule is tested on real machines' files); [`detect`] turns it into a [`Finding`] or `None`
//! (bare metal). A qemu machine (DMI `QEMU`, device tree `linux,dummy-virt` or a `fw-cfg`
//! node) without a KVM signature is an emulated CPU when the complete boot log is readable
//! and names no KVM; when the log is unreadable the finding says it cannot tell KVM from TCG.
//! AWS bare-metal instances carry `Amazon EC2` DMI with a product name ending in `.metal`
//! and are not virtual (systemd's rule).
//!
//! # Why it works
//! Every hypervisor and emulator that preempt's users meet leaves at least one of these
//! marks, and none of them appears on bare metal; the fixtures in
//! `tests/fixtures/machines/` hold the files of a Raspberry Pi 4 and 5, an AWS Graviton
//! instance (virtual and metal), a qemu `virt` arm64 guest and a KVM x86 guest.
//!
//! ```
//! use preempt_cli::virt::{detect, Sources};
//! let s = Sources { dt_compatible: vec!["linux,dummy-virt".into()], ..Sources::default() };
//! let f = detect(&s).unwrap();
//! assert!(f.label().starts_with("qemu"));
//! ```

use std::fs;
use std::path::Path;

/// Whether the machine runs under a hypervisor or on an emulated CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A virtual machine: real CPU, scheduled by a host.
    Virtual,
    /// An emulated CPU (qemu TCG, qemu-user): its timing is the emulator's.
    Emulated,
}

/// What was found, and from which files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Virtual or emulated.
    pub kind: Kind,
    /// Short platform name (`kvm`, `qemu`, `qemu-user`, `amazon`, `xen`, ...).
    pub platform: String,
    /// Each piece of evidence, e.g. `device tree compatible linux,dummy-virt`.
    pub evidence: Vec<String>,
}

impl Finding {
    /// One line for verdicts and result files, e.g. `qemu, emulated CPU (TCG)` or
    /// `kvm, virtual machine`.
    pub fn label(&self) -> String {
        match (self.kind, self.platform.as_str()) {
            (Kind::Emulated, "qemu-user") => {
                "qemu-user, emulated CPU (user-mode emulation)".to_string()
            }
            (Kind::Emulated, p) => format!("{p}, emulated CPU (TCG)"),
            (Kind::Virtual, p) => format!("{p}, virtual machine"),
        }
    }

    /// The label and its evidence, for `preempt check`.
    pub fn describe(&self) -> String {
        format!("{}: {}", self.label(), self.evidence.join("; "))
    }
}

/// DMI strings (`/sys/class/dmi/id/*`); empty when the machine has no SMBIOS tables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dmi {
    /// `sys_vendor`.
    pub sys_vendor: String,
    /// `product_name`.
    pub product_name: String,
    /// `board_vendor`.
    pub board_vendor: String,
    /// `bios_vendor`.
    pub bios_vendor: String,
}

/// Everything [`detect`] reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    /// The architecture this binary runs as (`std::env::consts::ARCH`; empty = unknown).
    pub binary_arch: String,
    /// `/proc/cpuinfo`.
    pub cpuinfo: String,
    /// DMI strings.
    pub dmi: Dmi,
    /// `/proc/device-tree/compatible` (NUL-separated list).
    pub dt_compatible: Vec<String>,
    /// `/proc/device-tree/model`.
    pub dt_model: Option<String>,
    /// `/proc/device-tree/hypervisor/compatible`, if the node exists.
    pub dt_hypervisor: Option<Vec<String>>,
    /// Names of the device tree's top-level nodes (`fw-cfg@9020000`, ...).
    pub dt_nodes: Vec<String>,
    /// `/sys/hypervisor/type`.
    pub sys_hypervisor_type: Option<String>,
    /// x86 CPUID `0x4000_0000` vendor signature.
    pub cpuid_signature: Option<String>,
    /// `/sys/devices/system/clocksource/clocksource0/available_clocksource`.
    pub clocksources: String,
    /// The kernel log (`/dev/kmsg`), `None` when unreadable.
    pub kernel_log: Option<String>,
}

fn read_text(root: &Path, rel: &str) -> Option<String> {
    fs::read(root.join(rel))
        .ok()
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
}

fn nul_list(text: &str) -> Vec<String> {
    text.split('\0')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

impl Sources {
    /// Reads the files below `root` (`/` for this machine, or a recorded fixture); the
    /// readings that are not files (CPUID, the kernel log, the binary's architecture) stay
    /// empty: [`Sources::live`] adds them.
    pub fn from_root(root: &Path) -> Self {
        let dmi = |f: &str| read_text(root, &format!("sys/class/dmi/id/{f}")).unwrap_or_default();
        let mut dt_nodes: Vec<String> = fs::read_dir(root.join("proc/device-tree"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        dt_nodes.sort();
        Sources {
            binary_arch: String::new(),
            cpuinfo: read_text(root, "proc/cpuinfo").unwrap_or_default(),
            dmi: Dmi {
                sys_vendor: dmi("sys_vendor"),
                product_name: dmi("product_name"),
                board_vendor: dmi("board_vendor"),
                bios_vendor: dmi("bios_vendor"),
            },
            dt_compatible: read_text(root, "proc/device-tree/compatible")
                .map(|t| nul_list(&t))
                .unwrap_or_default(),
            dt_model: read_text(root, "proc/device-tree/model")
                .map(|t| t.trim_end_matches('\0').trim().to_string()),
            dt_hypervisor: read_text(root, "proc/device-tree/hypervisor/compatible")
                .map(|t| nul_list(&t)),
            dt_nodes,
            sys_hypervisor_type: read_text(root, "sys/hypervisor/type").filter(|t| !t.is_empty()),
            cpuid_signature: None,
            clocksources: read_text(
                root,
                "sys/devices/system/clocksource/clocksource0/available_clocksource",
            )
            .unwrap_or_default(),
            kernel_log: None,
        }
    }

    /// This machine: the files below `/`, CPUID, the kernel log and this binary's
    /// architecture.
    pub fn live() -> Self {
        Sources {
            binary_arch: std::env::consts::ARCH.to_string(),
            cpuid_signature: preempt_io::sys::cpu::hypervisor_cpuid_signature(),
            kernel_log: preempt_io::sys::kernel::kernel_log().ok(),
            ..Sources::from_root(Path::new("/"))
        }
    }
}

/// x86 CPUID hypervisor signatures (systemd `virt.c`, `detect_vm_cpuid`).
const CPUID_SIGNATURES: &[(&str, &str)] = &[
    ("KVMKVMKVM", "kvm"),
    ("Linux KVM Hv", "kvm"),
    ("TCGTCGTCGTCG", "qemu"),
    ("XenVMMXenVMM", "xen"),
    ("VMwareVMware", "vmware"),
    ("Microsoft Hv", "microsoft"),
    ("bhyve bhyve", "bhyve"),
    ("QNXQVMBSQG", "qnx"),
    ("ACRNACRNACRN", "acrn"),
    ("SRESRESRESRE", "sre"),
    ("VBoxVBoxVBox", "oracle"),
    ("Apple VZ", "apple"),
];

/// DMI vendor strings (systemd `virt.c`, `detect_vm_dmi_vendor`), matched as prefixes of
/// `sys_vendor`, `product_name`, `board_vendor` and `bios_vendor`.
const DMI_VENDORS: &[(&str, &str)] = &[
    ("KVM", "kvm"),
    ("OpenStack", "kvm"),
    ("KubeVirt", "kvm"),
    ("Amazon EC2", "amazon"),
    ("QEMU", "qemu"),
    ("VMware", "vmware"),
    ("VMW", "vmware"),
    ("innotek GmbH", "oracle"),
    ("VirtualBox", "oracle"),
    ("Oracle Corporation", "oracle"),
    ("Xen", "xen"),
    ("Bochs", "bochs"),
    ("Parallels", "parallels"),
    ("BHYVE", "bhyve"),
    ("Hyper-V", "microsoft"),
    ("Apple Virtualization", "apple"),
    ("Google", "google"),
    ("Firecracker", "firecracker"),
];

/// KVM's own marks in the boot log: x86 (`arch/x86/kernel/cpu/hypervisor.c`) and arm64
/// (`drivers/firmware/smccc/kvm_guest.c`).
const KVM_LOG_LINES: &[&str] = &[
    "Hypervisor detected: KVM",
    "smccc: KVM: hypervisor services detected",
];

/// Evidence gathered so far; the first (most specific) source names the platform.
#[derive(Default)]
struct Evidence {
    items: Vec<String>,
    platform: Option<&'static str>,
}

impl Evidence {
    fn note(&mut self, platform: &'static str, what: String) {
        self.items.push(what);
        self.platform.get_or_insert(platform);
    }
}

/// Judges the sources: `None` is bare metal.
pub fn detect(s: &Sources) -> Option<Finding> {
    if let Some(f) = user_mode_emulation(s) {
        return Some(f);
    }
    let mut ev = Evidence::default();
    // 2. CPUID signature (x86).
    let mut tcg_signature = false;
    if let Some(sig) = &s.cpuid_signature {
        let known = CPUID_SIGNATURES
            .iter()
            .find(|(needle, _)| sig.starts_with(needle));
        let p = known.map_or("unknown hypervisor", |(_, p)| *p);
        tcg_signature = sig.starts_with("TCGTCGTCGTCG");
        ev.note(p, format!("cpuid signature {sig}"));
    }
    dmi_evidence(&s.dmi, &mut ev);
    device_tree_evidence(s, &mut ev);
    // 5. Xen's sysfs.
    if let Some(t) = &s.sys_hypervisor_type {
        ev.note("xen", format!("/sys/hypervisor/type {t}"));
    }
    // 6. The x86 CPU flag, when nothing more specific was found.
    let hypervisor_flag = s
        .cpuinfo
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    if hypervisor_flag && ev.items.is_empty() {
        ev.note("unknown hypervisor", "cpuinfo flag hypervisor".into());
    }
    let mut evidence = ev.items;
    let platform = ev.platform?.to_string();
    // The accelerator behind a qemu machine: KVM leaves marks, TCG leaves none.
    let kvm_clock = s.clocksources.split_whitespace().any(|c| c == "kvm-clock");
    let kvm_line = s
        .kernel_log
        .as_deref()
        .and_then(|log| KVM_LOG_LINES.iter().find(|l| log.contains(**l)));
    let kvm_marks = kvm_clock
        || kvm_line.is_some()
        || s.cpuid_signature
            .as_deref()
            .is_some_and(|x| x.starts_with("KVMKVMKVM"))
        || s.dt_hypervisor.iter().flatten().any(|c| c == "linux,kvm");
    if kvm_clock {
        evidence.push("kvm-clock clocksource".into());
    }
    if let Some(line) = kvm_line {
        evidence.push(format!("boot log: {line}"));
    }
    if tcg_signature {
        return Some(Finding {
            kind: Kind::Emulated,
            platform,
            evidence,
        });
    }
    if platform == "qemu" && !kvm_marks {
        let complete_log = s
            .kernel_log
            .as_deref()
            .is_some_and(|l| l.lines().any(|x| x.starts_with("Linux version")));
        if complete_log {
            evidence.push("no KVM mark in the complete boot log (an emulated CPU)".into());
            return Some(Finding {
                kind: Kind::Emulated,
                platform,
                evidence,
            });
        }
        evidence.push(
            "no KVM mark found, and the boot log is unreadable or wrapped: KVM or an \
             emulated CPU (TCG), run as root to tell"
                .into(),
        );
    }
    Some(Finding {
        kind: Kind::Virtual,
        platform,
        evidence,
    })
}

/// Step 1, user-mode emulation: the kernel describes a CPU of another architecture than
/// the binary's.
fn user_mode_emulation(s: &Sources) -> Option<Finding> {
    if let Some(cpu_arch) = preempt_io::sys::cpu::cpuinfo_arch(&s.cpuinfo) {
        if !s.binary_arch.is_empty() && s.binary_arch != cpu_arch {
            return Some(Finding {
                kind: Kind::Emulated,
                platform: "qemu-user".into(),
                evidence: vec![format!(
                    "this binary is {} code but /proc/cpuinfo describes an {cpu_arch} CPU \
                     (binfmt_misc runs it under an emulator)",
                    s.binary_arch
                )],
            });
        }
    }
    None
}

/// Step 3, DMI: a hypervisor vendor in the system, board or BIOS fields (an AWS `.metal`
/// instance is bare metal).
fn dmi_evidence(dmi: &Dmi, ev: &mut Evidence) {
    let aws_metal =
        dmi.sys_vendor.starts_with("Amazon EC2") && dmi.product_name.ends_with(".metal");
    if !aws_metal {
        for (field, value) in [
            ("sys_vendor", &dmi.sys_vendor),
            ("product_name", &dmi.product_name),
            ("board_vendor", &dmi.board_vendor),
            ("bios_vendor", &dmi.bios_vendor),
        ] {
            if let Some((_, p)) = DMI_VENDORS.iter().find(|(n, _)| value.starts_with(n)) {
                ev.note(p, format!("DMI {field} {value}"));
                break;
            }
        }
        if dmi.sys_vendor.starts_with("Microsoft Corporation")
            && dmi.product_name.starts_with("Virtual Machine")
        {
            ev.note(
                "microsoft",
                format!("DMI {} {}", dmi.sys_vendor, dmi.product_name),
            );
        }
    }
}

/// Step 4, device tree: a `/hypervisor` node, qemu's machine compatibles or its fw-cfg
/// node.
fn device_tree_evidence(s: &Sources, ev: &mut Evidence) {
    if let Some(hv) = &s.dt_hypervisor {
        let joined = hv.join(" ");
        let p = if joined.contains("linux,kvm") {
            "kvm"
        } else if joined.contains("xen") {
            "xen"
        } else if joined.contains("vmware") {
            "vmware"
        } else {
            "unknown hypervisor"
        };
        ev.note(p, format!("device tree /hypervisor compatible {joined}"));
    }
    if let Some(c) = s
        .dt_compatible
        .iter()
        .find(|c| *c == "linux,dummy-virt" || *c == "qemu,pseries")
    {
        ev.note("qemu", format!("device tree compatible {c}"));
    }
    if let Some(n) = s.dt_nodes.iter().find(|n| n.contains("fw-cfg")) {
        ev.note(
            "qemu",
            format!("device tree node {n} (qemu's firmware configuration)"),
        );
    }
}

/// What was looked at when nothing was found, for `preempt check`'s bare-metal line.
pub fn bare_metal_basis(s: &Sources) -> String {
    let mut seen = Vec::new();
    if !s.dt_compatible.is_empty() {
        seen.push(format!("device tree {}", s.dt_compatible.join(", ")));
    }
    if !s.dmi.sys_vendor.is_empty() || !s.dmi.product_name.is_empty() {
        seen.push(format!("DMI {} {}", s.dmi.sys_vendor, s.dmi.product_name));
    }
    if s.binary_arch == "x86_64" {
        seen.push("no cpuid hypervisor bit".into());
    }
    if seen.is_empty() {
        "bare metal (no hypervisor mark in cpuinfo, DMI, device tree or /sys/hypervisor)".into()
    } else {
        format!("bare metal ({})", seen.join("; "))
    }
}

/// Reads this machine and judges it.
pub fn detect_live() -> Option<Finding> {
    detect(&Sources::live())
}
