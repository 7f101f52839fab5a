//! Every benchmark binary, run small: exits 0 and prints a well-formed `figure=` line (the
//! contract `scripts/bench_framework.sh` parses), and rejects bad flags with exit code 2.
//! No timing is asserted. Binaries that need SCHED_FIFO are skipped, with a message, when
//! this process may not use it.

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Generous: each run below does at most a few thousand hand-offs.
const TIMEOUT: Duration = Duration::from_secs(30);

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(bin: &str, args: &[&str]) -> Run {
    let mut child = Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            child.kill().expect("kill a hung benchmark");
            child.wait().expect("reap the killed benchmark");
            panic!("{bin} {args:?} did not finish within {TIMEOUT:?}");
        }
        #[allow(
            clippy::disallowed_methods,
            reason = "test polling a child process, not RT code"
        )]
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    Run {
        code: status.code(),
        stdout,
        stderr,
    }
}

fn may_use_fifo() -> bool {
    let param = libc::sched_param { sched_priority: 2 };
    // SAFETY: sched_setscheduler on a fresh thread (pid 0 = that thread) with a valid param;
    // the thread ends right after, so this process's policy is untouched.
    std::thread::spawn(
        move || unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0,
    )
    .join()
    .unwrap()
}

/// Parses `figure=<name> ns_per_op=<f> samples=<n>`; returns (ns_per_op, samples).
fn timing(stdout: &str, figure: &str) -> (f64, u64) {
    let line = stdout
        .lines()
        .find(|l| l.split(' ').next() == Some(&format!("figure={figure}")))
        .unwrap_or_else(|| panic!("no `figure={figure}` line in:\n{stdout}"));
    let field = |key: &str| {
        line.split(' ')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {key}= in `{line}`"))
    };
    (
        field("ns_per_op").parse().unwrap(),
        field("samples").parse().unwrap(),
    )
}

fn check(bin: &str, figure: &str, args: &[&str], expected_samples: u64) {
    let out = run(bin, args);
    assert_eq!(
        out.code,
        Some(0),
        "{bin} {args:?} failed:\n{}{}",
        out.stdout,
        out.stderr
    );
    let (ns, samples) = timing(&out.stdout, figure);
    assert!(ns.is_finite() && ns > 0.0, "{figure}: ns_per_op = {ns}");
    assert_eq!(samples, expected_samples, "{figure}: samples");
}

#[test]
fn unprivileged_binaries_print_their_figure() {
    check(
        env!("CARGO_BIN_EXE_vecdeque"),
        "vecdeque_push_pop",
        &["--iterations", "1000"],
        1000,
    );
}

#[test]
fn fifo_binaries_print_their_figure() {
    if !may_use_fifo() {
        eprintln!("SKIPPED: SCHED_FIFO not permitted here (run as root or with CAP_SYS_NICE)");
        return;
    }
    let n = ["--iterations", "2000"];
    let s = ["--samples", "200"];
    check(env!("CARGO_BIN_EXE_raw_pi_cas"), "raw_pi_cas", &n, 2000);
    check(
        env!("CARGO_BIN_EXE_pcp_mutex_uncontended"),
        "pcp_mutex_uncontended",
        &n,
        2000,
    );
    check(
        env!("CARGO_BIN_EXE_futex_queue_send_recv"),
        "futex_queue_send_recv",
        &n,
        2000,
    );
    check(
        env!("CARGO_BIN_EXE_futex_queue_pingpong"),
        "futex_queue_pingpong",
        &n,
        2000,
    );
    check(
        env!("CARGO_BIN_EXE_raw_futex_pingpong"),
        "raw_futex_pingpong",
        &n,
        2000,
    );
    check(
        env!("CARGO_BIN_EXE_raw_unlock_pi"),
        "raw_unlock_pi",
        &s,
        200,
    );
    // Listing 1 counts spawns; task2 stops at the first odd value >= N: N + 1 of them.
    check(
        env!("CARGO_BIN_EXE_rtic_switch_same"),
        "rtic_switch_same",
        &n,
        2001,
    );
    check(
        env!("CARGO_BIN_EXE_rtic_switch_cross"),
        "rtic_switch_cross",
        &n,
        2001,
    );
    check(
        env!("CARGO_BIN_EXE_rtic_contended_unlock"),
        "rtic_contended_unlock",
        &s,
        200,
    );
}

#[test]
fn spawn_order_observation_is_reported() {
    if !may_use_fifo() {
        eprintln!("SKIPPED: SCHED_FIFO not permitted here (run as root or with CAP_SYS_NICE)");
        return;
    }
    let out = run(env!("CARGO_BIN_EXE_rtic_spawn_order"), &["--spawns", "8"]);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("observation=rtic_spawn_order"))
        .unwrap();
    let ran = line
        .split(' ')
        .find_map(|kv| kv.strip_prefix("ran="))
        .unwrap();
    let mut ran: Vec<u32> = ran.split(',').map(|v| v.parse().unwrap()).collect();
    // Whatever the order, every spawned task ran exactly once.
    ran.sort_unstable();
    assert_eq!(ran, (0..8).collect::<Vec<_>>());
}

#[test]
fn peak_rss_reports_vmhwm_and_passes_the_exit_code_through() {
    let out = run(
        env!("CARGO_BIN_EXE_peak_rss"),
        &["--label", "t", "--", "sh", "-c", "exit 3"],
    );
    assert_eq!(out.code, Some(3), "{}", out.stderr);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("figure=t_rss "))
        .unwrap();
    let kib: u64 = line
        .split(' ')
        .find_map(|kv| kv.strip_prefix("vmhwm_kib="))
        .unwrap()
        .parse()
        .unwrap();
    assert!(kib > 0, "{line}");
}

#[test]
fn bad_flags_exit_2_and_name_the_flag() {
    let bin = env!("CARGO_BIN_EXE_vecdeque");
    let out = run(bin, &["--iterations", "ten"]);
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("--iterations ten"), "{}", out.stderr);
    let out = run(env!("CARGO_BIN_EXE_raw_unlock_pi"), &["--iterations", "5"]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("unknown argument `--iterations`"),
        "{}",
        out.stderr
    );
    let out = run(env!("CARGO_BIN_EXE_peak_rss"), &["--", "true"]);
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("--label"), "{}", out.stderr);
}
