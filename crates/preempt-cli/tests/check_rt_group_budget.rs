//! No false PASS in a cpu cgroup without real-time budget (issue 36): on a kernel with
//! `CONFIG_RT_GROUP_SCHED` (cgroup v1 `cpu` controller) a new cgroup starts with
//! `cpu.rt_runtime_us = 0`, and the kernel refuses SCHED_FIFO there with `EPERM` even to
//! root, who holds CAP_SYS_NICE. `preempt check` used to PASS the real-time item from the
//! capability alone and tell root to "run as root"; an app started there got the same advice.
//!
//! Each test makes such a cgroup, starts the real binary inside it (`sh` writes its own pid to
//! `cgroup.procs`, then `exec`s), and checks that the item fails, names the cgroup and gives
//! the write that fixes it. The cgroup is removed on every exit path ([`ZeroBudgetGroup`]).
//!
//! Needs root and the cgroup v1 cpu controller with real-time group scheduling
//! (`/sys/fs/cgroup/cpu/cpu.rt_runtime_us`): skips with a message without them, fails under
//! `PREEMPT_REQUIRE_PRIVILEGED=1`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;

mod support;

#[path = "../../preempt/tests/support/child.rs"]
mod child_process;
use child_process::{pause, requested_app, run_requested_app, run_with_watchdog, text};

const BIN: &str = env!("CARGO_BIN_EXE_preempt");

/// The cgroup v1 cpu hierarchy of this machine.
const CPU_ROOT: &str = "/sys/fs/cgroup/cpu";

/// One SCHED_FIFO 10 task that ends the app at once: it must never run in a cgroup without
/// budget, the start-up check must stop the app first.
#[preempt::app(main = false)]
mod budgetless {
    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        (Shared {}, Local {}, init::Monotonics())
    }

    #[task(priority = 10, period = 1.millis())]
    fn tick(_: tick::Context) {
        preempt::exit(0);
    }
}

#[test]
fn child() {
    run_requested_app(&[("budgetless", budgetless::run)]);
}

/// A cpu cgroup (v1) with no real-time budget, made for one test and removed when dropped,
/// whether the test passes or panics. The tests take turns ([`TURN`]): their cgroups share
/// the root's budget, and one test gives its cgroup all that is free.
struct ZeroBudgetGroup {
    dir: PathBuf,
    _turn: MutexGuard<'static, ()>,
}

/// Held by the test whose cgroup exists.
static TURN: Mutex<()> = Mutex::new(());

impl ZeroBudgetGroup {
    /// Makes `CPU_ROOT/preempt-test-PID-name`, or says why it cannot (then skips, or fails
    /// under `PREEMPT_REQUIRE_PRIVILEGED=1`); `None` too in a re-executed child, which runs
    /// only its app.
    fn create(name: &str) -> Option<ZeroBudgetGroup> {
        if requested_app().is_some() {
            return None;
        }
        if !Path::new(CPU_ROOT).join("cpu.rt_runtime_us").exists() {
            support::skip_unprivileged(&format!(
                "{CPU_ROOT}/cpu.rt_runtime_us does not exist: no cgroup v1 cpu controller with \
                 RT_GROUP_SCHED here"
            ));
            return None;
        }
        let turn = TURN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = Path::new(CPU_ROOT).join(format!("preempt-test-{}-{name}", std::process::id()));
        if let Err(err) = std::fs::create_dir(&dir) {
            support::skip_unprivileged(&format!(
                "cannot make the cgroup {} ({err}): needs root",
                dir.display()
            ));
            return None;
        }
        let group = ZeroBudgetGroup { dir, _turn: turn };
        // A new cgroup starts at 0; say so rather than assume it.
        let budget = std::fs::read_to_string(group.dir.join("cpu.rt_runtime_us")).unwrap();
        assert_eq!(budget.trim(), "0", "{}", group.dir.display());
        Some(group)
    }

    /// Runs `program args..` inside the cgroup: `sh` moves itself there, then `exec`s it.
    fn run(&self, program: &Path, args: &[&str], env: &[(&str, &str)], what: &str) -> Output {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(r#"echo $$ > "$0/cgroup.procs" && exec "$@""#)
            .arg(&self.dir)
            .arg(program)
            .args(args)
            .env("PREEMPT_HISTORY", support::test_history())
            .env_remove("PREEMPT_SOFT")
            .envs(env.iter().copied());
        run_with_watchdog(cmd, what, Duration::from_secs(120))
    }
}

impl ZeroBudgetGroup {
    /// `preempt check --json` inside the cgroup: its report.
    fn check_json(&self) -> Value {
        let out = self.run(
            Path::new(BIN),
            &["check", "--json"],
            &[],
            "preempt check --json",
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)))
    }
}

impl Drop for ZeroBudgetGroup {
    fn drop(&mut self) {
        // The child was waited for, so the cgroup is empty; a straggler is moved out first.
        for _ in 0..50 {
            let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
            for pid in procs.split_whitespace() {
                let _ = std::fs::write(Path::new(CPU_ROOT).join("cgroup.procs"), pid);
            }
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            pause(Duration::from_millis(20));
        }
        eprintln!(
            "warning: could not remove the test cgroup {}",
            self.dir.display()
        );
    }
}

/// The `rtprio` item of a `preempt check --json` report.
fn rtprio_item(report: &Value) -> &Value {
    report["data"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["id"] == "rtprio")
        .expect("the rtprio item")
}

#[test]
fn check_fails_the_real_time_item_in_a_cgroup_without_budget_and_names_it() {
    let Some(group) = ZeroBudgetGroup::create("check") else {
        return;
    };
    let dir = group.dir.display().to_string();
    // The budget is what the root has free (950000 µs of 1 s when nothing else holds any).
    let write = format!(" > {dir}/cpu.rt_runtime_us");

    let out = group.run(Path::new(BIN), &["check"], &[], "preempt check");
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(4),
        "a failed item exits 4\n{stdout}"
    );
    let line = stdout
        .lines()
        .find(|l| l.contains("Real-time priority"))
        .unwrap_or_else(|| panic!("no real-time item:\n{stdout}"));
    assert!(line.starts_with("  FAIL  "), "{line}");
    assert!(line.contains(&dir), "the item names the cgroup: {line}");
    assert!(line.contains("EPERM"), "{line}");
    assert!(stdout.contains(&write), "the fix is the write:\n{stdout}");
    // The wake-up probe is refused too, for the same cause, with the same fix.
    let wakeup = stdout
        .lines()
        .find(|l| l.contains("Wake-up from idle"))
        .unwrap_or_else(|| panic!("no wake-up item:\n{stdout}"));
    assert!(wakeup.contains(&dir), "{wakeup}");
    assert!(
        !stdout.contains("run as root") && !stdout.contains("run preempt check as root"),
        "root is told to run as root:\n{stdout}"
    );

    let report = group.check_json();
    let item = rtprio_item(&report);
    assert_eq!(item["status"], "fail", "{item}");
    let value = item["value"].as_str().unwrap();
    assert!(value.contains("[rt_group_budget]"), "{item}");
    assert!(value.contains(&dir), "{item}");
    assert!(item["fix"].as_str().unwrap().contains(&write), "{item}");
}

#[test]
fn an_app_refused_by_the_cgroup_names_it_instead_of_run_as_root() {
    let Some(group) = ZeroBudgetGroup::create("app") else {
        return;
    };
    let dir = group.dir.display().to_string();
    let exe = std::env::current_exe().unwrap();
    let out = group.run(
        &exe,
        &["child", "--exact", "--nocapture", "--test-threads=1"],
        &[(child_process::CHILD_ENV, "budgetless")],
        "app budgetless",
    );
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the app must refuse to start\n{stderr}"
    );
    for needle in [
        "cannot start its real-time executors",
        "the kernel refused it with EPERM",
        "[rt_group_budget]",
        &format!(" > {dir}/cpu.rt_runtime_us"),
    ] {
        assert!(stderr.contains(needle), "missing `{needle}`:\n{stderr}");
    }
    assert!(!stderr.contains("run it as root"), "{stderr}");
    assert!(!stderr.contains("run as root"), "{stderr}");
}

#[test]
fn giving_the_cgroup_the_printed_budget_passes_the_item() {
    let Some(group) = ZeroBudgetGroup::create("fixed") else {
        return;
    };
    // Applying the printed fix: the item passes, judged by the kernel.
    let report = group.check_json();
    let fix = rtprio_item(&report)["fix"].as_str().unwrap().to_string();
    let write = fix
        .split("; ")
        .find_map(|part| part.split(": ").last().filter(|w| w.starts_with("echo ")))
        .unwrap_or_else(|| panic!("no write in the fix: {fix}"));
    let (value, file) = write
        .strip_prefix("echo ")
        .and_then(|w| w.split_once(" > "))
        .unwrap_or_else(|| panic!("{write}"));
    std::fs::write(file, value).unwrap_or_else(|e| panic!("{write}: {e}"));
    let report = group.check_json();
    let item = rtprio_item(&report);
    assert_eq!(item["status"], "pass", "{item}");
    assert!(
        item["value"]
            .as_str()
            .unwrap()
            .contains("granted by the kernel"),
        "{item}"
    );
}
