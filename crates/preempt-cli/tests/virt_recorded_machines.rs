//! Virtualisation and emulation detection on the files of real machines
//! (`fixtures/machines/*/`, provenance in `fixtures/machines/README.md`): bare metal is bare
//! metal, a virtual machine is virtual, an emulated CPU is emulated, and the validity ledger of
//! a run on any but bare metal is never `clean`.

use std::path::{Path, PathBuf};

use preempt_cli::measure::ledger::{Observations, RunFacts, judge};
use preempt_cli::virt::{Finding, Kind, Sources, detect};

fn machine(name: &str) -> Sources {
    let root: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests/fixtures/machines", name]
        .iter()
        .collect();
    assert!(root.is_dir(), "no fixture {}", root.display());
    let extra = |f: &str| std::fs::read_to_string(root.join(f)).ok();
    Sources {
        binary_arch: extra("arch")
            .map(|a| a.trim().to_string())
            .unwrap_or_default(),
        cpuid_signature: extra("cpuid-signature").map(|s| s.trim().to_string()),
        kernel_log: extra("kmsg"),
        ..Sources::from_root(Path::new(&root))
    }
}

/// A quiet run's verdict on a machine with this finding.
fn verdict(f: &Option<Finding>) -> String {
    let obs = Observations {
        rt_throttle_us: Some((950_000, 1_000_000)),
        ..Default::default()
    };
    let facts = RunFacts {
        cpus: vec![0],
        max_latency_ns: 20_000,
        virtualization: f.as_ref().map(Finding::label),
        ..RunFacts::default()
    };
    judge(&obs, &facts).verdict
}

#[test]
fn raspberry_pis_are_bare_metal_and_their_quiet_runs_clean() {
    for name in ["raspberry-pi-4", "raspberry-pi-5"] {
        let s = machine(name);
        assert!(
            s.dt_compatible[0].starts_with("raspberrypi,"),
            "{name}: {s:?}"
        );
        let f = detect(&s);
        assert_eq!(f, None, "{name}");
        assert_eq!(verdict(&f), "clean", "{name}");
        assert!(
            preempt_cli::virt::bare_metal_basis(&s).contains("raspberrypi,"),
            "{name}"
        );
    }
}

#[test]
fn aws_graviton_instance_is_virtual_and_its_metal_sibling_is_not() {
    let f = detect(&machine("aws-graviton2-m6g-large")).expect("m6g.large is a Nitro VM");
    assert_eq!((f.kind, f.platform.as_str()), (Kind::Virtual, "amazon"));
    assert!(verdict(&Some(f)).starts_with("contaminated: virtualization (amazon"));
    assert_eq!(detect(&machine("aws-graviton2-m6g-metal")), None);
}

#[test]
fn qemu_virt_arm64_guest_without_kvm_is_an_emulated_cpu() {
    let s = machine("qemu-virt-arm64-tcg");
    let f = detect(&s).expect("a qemu virt machine is not bare metal");
    assert_eq!(
        (f.kind, f.platform.as_str()),
        (Kind::Emulated, "qemu"),
        "{f:?}"
    );
    let why = f.describe();
    assert!(
        why.contains("linux,dummy-virt") && why.contains("fw-cfg@9020000"),
        "{why}"
    );
    assert!(f.label().contains("emulated CPU"), "{}", f.label());
    let v = verdict(&Some(f));
    assert!(
        v.starts_with("contaminated: ") && v.contains("emulated CPU"),
        "{v}"
    );
}

#[test]
fn qemu_virt_guest_with_an_unreadable_log_says_it_cannot_tell_kvm_from_tcg() {
    let s = Sources {
        kernel_log: None,
        ..machine("qemu-virt-arm64-tcg")
    };
    let f = detect(&s).unwrap();
    assert_eq!(f.kind, Kind::Virtual);
    assert!(
        f.describe().contains("KVM or an emulated CPU"),
        "{}",
        f.describe()
    );
    assert_ne!(verdict(&Some(f)), "clean");
}

#[test]
fn qemu_virt_guest_with_kvm_services_in_its_log_is_a_kvm_virtual_machine() {
    let mut s = machine("qemu-virt-arm64-tcg");
    s.kernel_log = Some(format!(
        "{}smccc: KVM: hypervisor services detected (0x00000000 0x00000000 0x00000000 0x00000003)\n",
        s.kernel_log.unwrap_or_default()
    ));
    let f = detect(&s).unwrap();
    assert_eq!((f.kind, f.platform.as_str()), (Kind::Virtual, "qemu"));
    assert!(f.describe().contains("smccc: KVM"), "{}", f.describe());
}

#[test]
fn kvm_x86_guest_is_virtual_from_its_cpuid_signature() {
    let s = machine("kvm-x86-firecracker");
    let f = detect(&s).expect("KVM guest");
    assert_eq!(
        (f.kind, f.platform.as_str()),
        (Kind::Virtual, "kvm"),
        "{f:?}"
    );
    assert!(
        f.describe().contains("cpuid signature KVMKVMKVM"),
        "{}",
        f.describe()
    );
    assert!(verdict(&Some(f)).starts_with("contaminated: virtualization (kvm, virtual machine"));
}

#[test]
fn arm64_binary_reading_an_x86_cpuinfo_runs_under_user_mode_emulation() {
    let s = Sources {
        binary_arch: "aarch64".into(),
        ..machine("kvm-x86-firecracker")
    };
    let f = detect(&s).unwrap();
    assert_eq!((f.kind, f.platform.as_str()), (Kind::Emulated, "qemu-user"));
    assert!(verdict(&Some(f)).contains("emulated CPU (user-mode emulation)"));
}

#[test]
fn tcg_cpuid_signature_is_an_emulated_cpu() {
    let s = Sources {
        cpuid_signature: Some("TCGTCGTCGTCG".into()),
        clocksources: "tsc hpet acpi_pm".into(),
        ..machine("kvm-x86-firecracker")
    };
    let f = detect(&s).unwrap();
    assert_eq!((f.kind, f.platform.as_str()), (Kind::Emulated, "qemu"));
}

#[test]
fn this_machine_is_judged_from_what_it_exposes() {
    // The live reading must agree with the same rules applied to the same files.
    let live = Sources::live();
    assert_eq!(live.binary_arch, std::env::consts::ARCH);
    let f = detect(&live);
    let flagged = live
        .cpuinfo
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|w| w == "hypervisor"));
    if flagged {
        let f = f.as_ref().expect("the CPU says a hypervisor is present");
        assert!(!f.evidence.is_empty(), "{f:?}");
    }
    assert_eq!(
        preempt_cli::virt::detect_live().map(|f| f.label()),
        f.map(|f| f.label())
    );
}
