//! The reference run is deterministic: the same seed and script give the same trajectory
//! bit for bit, in two separate processes (a preempt app runs once per process).

use std::process::Command;

fn reference(seed: u64, file: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_gimbal-demo"))
        .args(["--reference-only"])
        .arg(file)
        .args([
            "--duration",
            "0.5",
            "--steps",
            "pan=0.5@0.1s,tilt=-0.3@0.2s",
        ])
        .args(["--seed", &seed.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gimbal-demo --reference-only failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(file).unwrap()
}

#[test]
fn same_seed_same_trajectory_bit_for_bit() {
    let dir = std::env::temp_dir().join(format!("gimbal-ref-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = reference(7, &dir.join("a.txt"));
    let b = reference(7, &dir.join("b.txt"));
    let c = reference(8, &dir.join("c.txt"));
    std::fs::remove_dir_all(&dir).unwrap();

    let lines: Vec<&str> = a.lines().collect();
    assert_eq!(lines.len(), 5000, "one line per 100 µs sample");
    assert_eq!(a, b, "two runs with seed 7 differ");
    // The plant advances four 25 µs steps per sample on the virtual clock; its first step
    // runs at t = 0, before sample 0 (higher priority), so sample k sees 4k + 1 steps.
    let last: Vec<&str> = lines[4999].split(' ').collect();
    assert_eq!(last[0], "4999");
    assert_eq!(last[7], (4999 * 4 + 1).to_string());
    // The trajectory is not trivial: pan has moved to its setpoint.
    let pan = f64::from_bits(u64::from_str_radix(last[1], 16).unwrap());
    assert!((pan - 0.5).abs() < 0.01, "pan at 0.5 s: {pan}");
    // Another seed: other sensor noise, so other currents (the noise is really seeded).
    assert_ne!(a, c);
}
