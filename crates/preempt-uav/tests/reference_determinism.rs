//! The reference flight is a function of the seed and the mission: two runs (two processes,
//! preempt's one-app-per-process rule) give the same records bit for bit, and it flies the
//! square without crashing.

use std::process::Command;

const CHILD: &str = "UAV_REFERENCE_CHILD";

fn digest() -> String {
    let m = preempt_uav::control::Mission::default();
    let samples = (m.duration_s() / preempt_uav::control::PERIOD_S) as u64;
    let recs = preempt_uav::reference::run(3, &m, samples).expect("the reference flies");
    assert_eq!(recs.len() as u64, samples);
    assert!(
        recs.iter().all(|r| !r.sensors.crashed),
        "the reference crashed"
    );
    let (a, b) = m.square_window();
    let worst = recs
        .iter()
        .filter(|r| (a..b).contains(&(r.k as f64 * preempt_uav::control::PERIOD_S)))
        .map(|r| {
            (0..3)
                .map(|i| f64::from(r.sensors.p[i] - r.setpoint[i]).powi(2))
                .sum::<f64>()
                .sqrt()
        })
        .fold(0.0, f64::max);
    assert!(
        worst < 0.15,
        "the reference strays {worst} m from the square"
    );
    let mut h: u64 = 0xcbf2_9ce4_8422_2325; // FNV-1a over every field's bits
    for r in &recs {
        let s = &r.sensors;
        let vecs = [s.p, s.v, s.rpy, s.w];
        let words = vecs
            .iter()
            .flatten()
            .chain(r.command.speeds.iter())
            .map(|x| u64::from(x.to_bits()))
            .chain([r.k, r.t_ns, u64::from(s.step)]);
        for w in words {
            h = (h ^ w).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x} {}", recs.len())
}

#[test]
fn reference_flight_is_deterministic() {
    if std::env::var(CHILD).is_ok() {
        println!("DIGEST {}", digest());
        return;
    }
    let run = || {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "reference_flight_is_deterministic",
                "--exact",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "child failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text.lines()
            .find_map(|l| l.strip_prefix("DIGEST ").map(str::to_owned))
            .expect("digest line")
    };
    let (a, b) = (run(), run());
    assert_eq!(a, b, "two reference flights differ");
}
