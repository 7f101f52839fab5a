//! `preempt rtio-bench` end to end (issue 7): a short real run against the `imu-sim`
//! simulator whose result file `preempt report` draws and `preempt compare` reads, Ctrl-C
//! keeping every finished cell (and leaving no simulator behind), and bad flags.
//!
//! The runs use the memfd bus, one ODR and the shortest window the benchmark accepts
//! (`--duration 0.2`: 10 cells, about 3 s). They need the `imu-sim` binary next to `preempt`
//! (`cargo test --workspace` builds it; alone: `cargo build -p preempt-imu-sim`) and skip with
//! a message without it. Without SCHED_FIFO or io_uring the benchmark still runs (it records
//! the refusal and falls back to epoll), so nothing else is skipped. Nothing here asserts a
//! time.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};

use assert_cmd::Command;
use preempt_cli::results::input::{self, Loaded};
use preempt_cli::results::rtio::RtioBenchResult;
use preempt_cli::results::{ResultFile, RunResult};

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_preempt");

fn preempt() -> Command {
    let mut c = Command::new(BIN);
    c.env("PREEMPT_HISTORY", support::test_history());
    c.env_remove("RUST_BACKTRACE");
    c
}

/// The simulator next to the `preempt` binary, or `None` with a printed reason.
fn imu_sim() -> Option<PathBuf> {
    let p = Path::new(BIN).with_file_name("imu-sim");
    if p.is_file() {
        Some(p)
    } else {
        eprintln!(
            "skipped: {} not built (cargo build -p preempt-imu-sim, or run cargo test --workspace)",
            p.display()
        );
        None
    }
}

fn load(path: &Path) -> (ResultFile, RtioBenchResult) {
    let i = input::load_path(path).unwrap();
    let Loaded::Result(f) = i.loaded else {
        panic!("{} is not a preempt result", path.display());
    };
    let RunResult::RtioBench(r) = &f.result else {
        panic!("{} has kind {}", path.display(), f.result.kind());
    };
    let r = r.as_ref().clone();
    (*f, r)
}

/// Every cell of one group: the talk's five rows, both designs, each with samples.
fn assert_one_group(r: &RtioBenchResult, odr: u32) {
    assert_eq!(r.cells.len(), 10, "5 rows x 2 designs");
    let rows = r.rows();
    let extras: Vec<&str> = rows.iter().map(|(_, _, e)| e.as_str()).collect();
    assert_eq!(
        extras,
        vec!["none", "1@100Hz", "2@100Hz", "1@400Hz", "2@400Hz"]
    );
    for (bus, o, extra) in &rows {
        assert_eq!((bus.as_str(), *o), ("memfd", odr));
        for d in ["thread", "rtio"] {
            let c = r
                .cell(bus, *o, extra, d)
                .unwrap_or_else(|| panic!("no {d} cell in row {extra}"));
            assert!(
                c.imu_samples_processed > 0,
                "{d} {extra}: nothing processed"
            );
            assert!(c.samples_processed >= c.imu_samples_processed);
            assert!(c.latency_p50_ns <= c.latency_p99_ns && c.latency_p99_ns <= c.latency_max_ns);
            assert_eq!(c.rtio_backend.is_some(), d == "rtio");
        }
    }
}

#[test]
fn a_short_run_writes_a_result_that_report_and_compare_read() {
    let Some(sim) = imu_sim() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rtio.json");
    let run = preempt()
        .args([
            "rtio-bench",
            "--odr",
            "3200",
            "--bus",
            "memfd",
            "--duration",
            "0.2",
        ])
        .arg("--imu-sim")
        .arg(&sim)
        .arg("--json")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    // The benchmark's own table on stdout, as the standalone binary prints it.
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("memfd 3200  2@400Hz"), "{stdout}");
    assert!(
        stderr.contains("preempt report"),
        "where the results are: {stderr}"
    );

    let (f, r) = load(&out);
    assert!(f.complete && !f.interrupted);
    assert_eq!(f.sysinfo.argv[1], "rtio-bench");
    assert_eq!(
        (
            r.settings.mode.as_str(),
            r.settings.buses.clone(),
            r.settings.odrs_hz.clone()
        ),
        ("table", vec!["memfd".to_string()], vec![3200])
    );
    assert_eq!(r.settings.duration_per_cell_ns, 200_000_000);
    assert!(r.sweep.is_empty());
    assert_one_group(&r, 3200);

    let html_dir = dir.path().join("report");
    preempt()
        .args(["report", "--no-png", "-o"])
        .arg(&html_dir)
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(html_dir.join("index.html")).unwrap();
    assert!(html.contains("Thread-based vs RTIO-based sensor reading"));
    assert!(html.contains("<th>latency p50 / p99 / max µs RTIO</th>"));
    let c = r.cell("memfd", 3200, "2@400Hz", "rtio").unwrap();
    assert!(
        html.contains(&format!(">{:.1}</td>", c.process_cpu_pct)),
        "the RTIO cell's process CPU is on the page"
    );
    assert!(html_dir.join("plots/rtio-cpu-memfd-rtio.svg").is_file());
    assert!(html_dir.join("plots/rtio-latency-memfd-rtio.svg").is_file());

    // The same file twice: every quantity present, ratio 1 where the value is not 0.
    let cmp = preempt()
        .arg("compare")
        .arg(&out)
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert_eq!(
        cmp.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    assert!(text.contains("rtio/memfd/3200/2@400Hz/rtio"), "{text}");
    assert!(
        text.contains("latency p99") && text.contains("1.00x"),
        "{text}"
    );
}

/// Pids of live `imu-sim` processes whose environment holds `marker` (inherited from the
/// `preempt` run that spawned them, so other tests' simulators are not counted).
fn simulators_with(marker: &str) -> Vec<u32> {
    let needle = format!("RTIO_BENCH_TEST_MARKER={marker}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        // A process that exits between the two reads has no environment left: not counted.
        let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
        if comm.trim() == "imu-sim" && env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn ctrl_c_keeps_the_finished_cells_of_the_running_group() {
    let Some(sim) = imu_sim() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rtio.json");
    let marker = format!("{}-{}", std::process::id(), dir.path().display());
    // Two groups (one per ODR). preempt runs in a process group of its own, as a terminal's
    // foreground job does, and the SIGINT goes to the whole group, as a terminal's Ctrl-C
    // does: it must not reach the simulator (which has a process group of its own).
    let mut child = StdCommand::new(BIN)
        .env("PREEMPT_HISTORY", support::test_history())
        .args([
            "rtio-bench",
            "--odr",
            "3200,6400",
            "--bus",
            "memfd",
            "--duration",
            "0.2",
        ])
        .arg("--imu-sim")
        .arg(&sim)
        .arg("--json")
        .arg(&out)
        .env("RTIO_BENCH_TEST_MARKER", &marker)
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first write comes after the first finished cell, long before the first group (10
    // cells) ends.
    loop {
        if out.is_file() {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("preempt exited before writing a partial file: {status}");
        }
        #[allow(
            clippy::disallowed_methods,
            reason = "polling a child process in a test"
        )]
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (partial, r) = load(&out);
    assert!(!partial.complete && !partial.interrupted, "a partial file");
    let before = r.cells.len();
    assert!(before >= 1, "written after a finished cell");
    let pgid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) with the negated id of the live child's process group (it leads it:
    // process_group(0)) and a valid signal number.
    assert_eq!(unsafe { libc::kill(-pgid, libc::SIGINT) }, 0);
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("Ctrl-C: finishing the running cell"),
        "the first Ctrl-C is acknowledged: {stderr}"
    );
    let (f, r) = load(&out);
    assert!(f.complete && f.interrupted);
    assert!(f.warnings.iter().any(|w| w.code == "interrupted"));
    assert!(
        r.cells.len() >= before,
        "every cell that had finished is kept ({} < {before})",
        r.cells.len()
    );
    assert!(
        r.cells.iter().all(|c| c.odr_hz == 3200),
        "stopped within the first group"
    );
    for c in &r.cells {
        // A simulator killed by the Ctrl-C would leave the running cell without samples.
        assert!(
            c.imu_samples_processed > 0,
            "{} {}: nothing processed",
            c.extra_streams,
            c.design
        );
    }
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("interrupted (Ctrl-C)")),
        "{:?}",
        r.notes
    );
    // The benchmark stopped (and reaped) its simulator itself before exiting.
    assert_eq!(
        simulators_with(&marker),
        Vec::<u32>::new(),
        "imu-sim left behind"
    );
}

/// A usage error: exit 2, one line on stderr naming `needle`, nothing on stdout.
fn assert_usage_error(args: &[&str], needle: &str) {
    let out = preempt().arg("rtio-bench").args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(
        stderr.starts_with("preempt: ") && stderr.contains(needle),
        "{args:?}: {stderr}"
    );
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    assert_usage_error(&["--frobnicate"], "--frobnicate");
    assert_usage_error(&["--odr", "5000"], "--odr");
    assert_usage_error(&["--duration", "0.01"], "--duration");
    assert_usage_error(&["--bus", "i2c"], "--bus");
    assert_usage_error(&["--priority", "99"], "--priority");
    assert_usage_error(&["--imu-sim", "/nonexistent/imu-sim"], "--imu-sim");
    assert_usage_error(
        &[
            "--imu-sim",
            "/bin/true",
            "--json",
            "/nonexistent/dir/r.json",
        ],
        "/nonexistent/dir",
    );
}

#[test]
fn help_lists_the_subcommand_and_its_flags() {
    let out = preempt().arg("--help").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("rtio-bench"));
    let out = preempt().args(["rtio-bench", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    for flag in [
        "--odr",
        "--bus",
        "--sweep",
        "--work-us",
        "--duration",
        "--imu-sim",
    ] {
        assert!(help.contains(flag), "{flag} missing from {help}");
    }
    assert!(help.contains("kind rtio_bench"), "{help}");
}
