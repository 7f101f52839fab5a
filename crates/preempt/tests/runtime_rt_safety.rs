//! The real-time safety mode (`preempt::rt_safety`) catches, in a real-time task's job,
//! each kind of thing a real-time path must not do, names the task and the line of this
//! file that did it, and stops the app with exit code 4 in `abort` mode; an app that does
//! none of them (while it locks PCP resources across levels, spawns across levels and
//! spawns timed messages: the framework's own paths) has no finding.
//!
//! Each app runs in a child process (see `support/child.rs`) with `PREEMPT_RT_SAFETY` and
//! `PREEMPT_STATS_JSON` set; the findings are read back from the JSON.

use std::time::Duration;

#[path = "support/child.rs"]
mod child_process;
use child_process::{run_child, run_requested_app, text};

// Test binaries get no allocator from the app macro (libtest's `main` is the program's).
#[global_allocator]
static ALLOCATOR: preempt::rt_safety::CheckedAlloc = preempt::rt_safety::CheckedAlloc::SYSTEM;

#[preempt::app(main = false)]
mod allocates {
    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        sample::spawn().unwrap();
        (Shared {}, Local {})
    }

    #[task(priority = 2)]
    fn sample(_: sample::Context) {
        let buf: Vec<u64> = Vec::with_capacity(64); // site: allocation
        std::hint::black_box(&buf);
        drop(buf); // site: deallocation
        preempt::exit(0);
    }
}

#[preempt::app(main = false)]
mod locks_a_mutex {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};

    pub(crate) static STATE: Mutex<u64> = Mutex::new(0);
    static HELD: AtomicBool = AtomicBool::new(false);

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        // Another thread holds the mutex while the task takes it: the lock blocks (an
        // uncontended `std::sync::Mutex` is one atomic instruction, invisible to any check).
        std::thread::spawn(|| {
            let guard = STATE.lock().unwrap();
            HELD.store(true, Ordering::Release);
            crate::child_process::pause(Duration::from_millis(200));
            drop(guard);
        });
        while !HELD.load(Ordering::Acquire) {
            std::hint::spin_loop();
        }
        sample::spawn().unwrap();
        (Shared {}, Local {})
    }

    #[task(priority = 2)]
    fn sample(_: sample::Context) {
        *STATE.lock().unwrap() += 1; // site: lock
        preempt::exit(0);
    }
}

#[preempt::app(main = false)]
mod prints {
    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        sample::spawn().unwrap();
        (Shared {}, Local {})
    }

    #[task(priority = 2)]
    fn sample(_: sample::Context) {
        println!("sample"); // site: io
        preempt::exit(0);
    }
}

#[preempt::app(main = false)]
mod sleeps {
    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        sample::spawn().unwrap();
        (Shared {}, Local {})
    }

    #[task(priority = 2)]
    #[allow(
        clippy::disallowed_methods,
        reason = "the sleep is what the test catches"
    )]
    fn sample(_: sample::Context) {
        std::thread::sleep(Duration::from_millis(1)); // site: sleep
        preempt::exit(0);
    }
}

#[preempt::app(main = false)]
mod touches_a_fresh_page {
    /// 64 pages nobody touched before the job: zero-initialised, so in `.bss`, mapped on
    /// first touch (the app runs without `mlockall`, see the test).
    static mut FRESH: [u8; 64 * 4096] = [0; 64 * 4096];

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        sample::spawn().unwrap();
        (Shared {}, Local {})
    }

    #[task(priority = 2)]
    fn sample(_: sample::Context) {
        // SAFETY: only this task touches FRESH, and it runs once.
        let fresh = unsafe { &mut *std::ptr::addr_of_mut!(FRESH) };
        for page in fresh.chunks_mut(4096) {
            page[0] = 1;
        }
        std::hint::black_box(&fresh);
        preempt::exit(0);
    }
}

#[preempt::app(main = false)]
mod waits_outside_libc {
    use std::sync::atomic::AtomicU32;

    static WORD: AtomicU32 = AtomicU32::new(0);

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        sample::spawn().unwrap();
        (Shared {}, Local {})
    }

    #[task(priority = 2)]
    fn sample(_: sample::Context) {
        // A futex wait that no libc interposer sees (preempt-sync enters the kernel with the
        // `syscall` instruction): only the job's voluntary context switch tells.
        let deadline = preempt_io::sys::clock::monotonic_now_ns() + 1_000_000;
        preempt_sync::futex::wait(&WORD, 0, Some(deadline)).unwrap();
        preempt::exit(0);
    }
}

#[preempt::app(main = false)]
mod clean {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::time::Instant;

    /// `high` has begun its job (it sets this before it locks).
    static STARTED: AtomicBool = AtomicBool::new(false);
    /// Jobs of `high` whose lock slept in the kernel (the PCP slow path).
    static CONTENDED: AtomicU32 = AtomicU32::new(0);

    #[shared]
    struct Shared {
        total: u64,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        // Every thread of the app on one CPU (the executors inherit this thread's mask):
        // `high` preempts `low` inside its critical section, and its `FUTEX_LOCK_PI` sleeps.
        // (With the owner running on another CPU, the kernel's rt_mutex spins instead of
        // sleeping, and no context switch happens.)
        preempt_io::sys::sched::set_current_thread_affinity(&[0]).unwrap();
        low::spawn(0).unwrap();
        (Shared { total: 0 }, Local {})
    }

    #[task(priority = 1, shared = [total])]
    fn low(mut cx: low::Context, round: u32) {
        // Holds the resource until the higher level has started its job and wants it: the
        // PCP slow path, a `FUTEX_LOCK_PI` that sleeps, a voluntary context switch of
        // `high`'s job that the check must explain, not report.
        cx.shared.total.lock(|t| {
            STARTED.store(false, Ordering::Relaxed);
            high::spawn(round).unwrap();
            let since = Instant::now();
            while !STARTED.load(Ordering::Acquire) && since.elapsed().as_millis() < 20 {
                std::hint::spin_loop();
            }
            for _ in 0..10_000 {
                *t = std::hint::black_box(*t + 1);
            }
        });
        if round < 200 {
            low::spawn_after(Duration::from_micros(100), round + 1).unwrap();
        } else {
            let contended = CONTENDED.load(Ordering::Acquire);
            preempt::rt_safety::allow(|| println!("contended {contended}"));
            preempt::exit(0);
        }
    }

    #[task(priority = 3, shared = [total], capacity = 4)]
    fn high(mut cx: high::Context, round: u32) {
        let before = preempt_sync::futex::pi_lock_calls();
        STARTED.store(true, Ordering::Release);
        cx.shared.total.lock(|t| *t += u64::from(round));
        if preempt_sync::futex::pi_lock_calls() != before {
            CONTENDED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Runs the app named by `PREEMPT_TEST_CHILD` (when this binary is a child).
#[test]
fn child() {
    run_requested_app(&[
        ("allocates", allocates::run),
        ("locks_a_mutex", locks_a_mutex::run),
        ("prints", prints::run),
        ("sleeps", sleeps::run),
        ("touches_a_fresh_page", touches_a_fresh_page::run),
        ("clean", clean::run),
        ("waits_outside_libc", waits_outside_libc::run),
    ]);
}

/// The line of this file marked `// site: <what>`.
fn site_line(what: &str) -> usize {
    let marker = format!("// site: {what}");
    include_str!("runtime_rt_safety.rs")
        .lines()
        .position(|l| l.trim_end().ends_with(&marker))
        .unwrap_or_else(|| panic!("no `{marker}` in this file"))
        + 1
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    stats: serde_json::Value,
}

fn run(app: &str, mode: &str, extra: &[(&str, &str)]) -> Run {
    let json = std::env::temp_dir().join(format!(
        "preempt-rt-safety-{app}-{mode}-{}.json",
        std::process::id()
    ));
    let path = json.to_str().unwrap().to_owned();
    let mut env = vec![
        (preempt::RT_SAFETY_ENV, mode),
        (preempt::STATS_JSON_ENV, path.as_str()),
    ];
    env.extend_from_slice(extra);
    let out = run_child(app, &env, 3, Duration::from_secs(60));
    let stderr = text(&out.stderr);
    let written = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("{app}: no statistics JSON ({e})\nstderr:\n{stderr}"));
    let _ = std::fs::remove_file(&json);
    Run {
        code: out.status.code(),
        stdout: text(&out.stdout),
        stderr,
        stats: serde_json::from_str(&written).unwrap(),
    }
}

fn finding<'a>(run: &'a Run, task: &str, kind: &str) -> &'a serde_json::Value {
    run.stats["rt_safety"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["task"] == task && f["kind"] == kind)
        .unwrap_or_else(|| {
            panic!(
                "no `{kind}` finding for `{task}` in {}\nstderr:\n{}",
                run.stats["rt_safety"], run.stderr
            )
        })
}

/// The finding names the line marked `// site: <site>` as its call site.
fn assert_site(f: &serde_json::Value, site: &str) {
    let expected = format!("runtime_rt_safety.rs:{}:", site_line(site));
    let at = f["first"]["site"].as_str().unwrap_or_default();
    assert!(
        at.contains(&expected),
        "call site {at:?}, expected {expected}; backtrace: {}",
        f["first"]["backtrace"]
    );
}

/// `warn`: the app runs to its end (exit 0) and reports; `abort`: it stops with exit code 4
/// at the first finding, reports it on stderr and still writes the JSON.
fn caught(app: &str, kind: &str, site: Option<&str>, extra: &[(&str, &str)]) {
    let warned = run(app, "warn", extra);
    assert_eq!(warned.code, Some(0), "{app} (warn)\n{}", warned.stderr);
    assert_eq!(warned.stats["rt_safety_mode"], "warn");
    let f = finding(&warned, "sample", kind);
    assert!(f["count"].as_u64().unwrap() >= 1, "{f}");
    assert_eq!(f["priority"], 2);
    assert_eq!(f["first"]["cycle"], 1, "{f}");
    if let Some(site) = site {
        assert_site(f, site);
    }
    assert!(
        warned
            .stderr
            .contains(&format!("task `sample` (priority 2): {kind}")),
        "the exit report names it: {}",
        warned.stderr
    );

    let aborted = run(app, "abort", extra);
    assert_eq!(
        aborted.code,
        Some(preempt::EXIT_RT_SAFETY),
        "{app} (abort)\n{}",
        aborted.stderr
    );
    assert!(
        aborted
            .stderr
            .contains("preempt: real-time safety: task `sample` (priority 2), job 1:"),
        "{}",
        aborted.stderr
    );
    let f = finding(&aborted, "sample", kind);
    if let Some(site) = site {
        assert_site(f, site);
    }
}

#[test]
fn an_allocation_and_a_deallocation_in_a_task_are_caught_at_their_lines() {
    caught("allocates", "allocation", Some("allocation"), &[]);
    let warned = run("allocates", "warn", &[]);
    assert_site(finding(&warned, "sample", "deallocation"), "deallocation");
}

#[test]
fn a_blocking_std_mutex_lock_in_a_task_is_caught_at_its_line() {
    caught("locks_a_mutex", "lock", Some("lock"), &[]);
}

#[test]
fn a_println_in_a_task_is_caught_at_its_line() {
    caught("prints", "io", Some("io"), &[]);
    let warned = run("prints", "warn", &[]);
    assert!(
        warned.stdout.lines().any(|l| l.ends_with("sample")),
        "the print itself still happens: {}",
        warned.stdout
    );
    assert_eq!(finding(&warned, "sample", "io")["first"]["call"], "write");
}

#[test]
fn a_sleep_in_a_task_is_caught_at_its_line() {
    caught("sleeps", "sleep", Some("sleep"), &[]);
}

#[test]
fn page_faults_in_a_task_are_counted_for_the_task_and_its_job() {
    if let Some(host) = preempt_io::sys::cpu::user_mode_emulation() {
        // The emulator's own faults would be counted: not counted at all there, and said.
        let warned = run("touches_a_fresh_page", "warn", &[(preempt::SOFT_ENV, "1")]);
        assert!(
            warned
                .stderr
                .contains("page faults and context switches were not counted: this binary runs under user-mode emulation"),
            "under emulation on {host}: {}",
            warned.stderr
        );
        return;
    }
    // Without `mlockall` (soft mode), which would have mapped the pages at start.
    caught(
        "touches_a_fresh_page",
        "page_fault",
        None,
        &[(preempt::SOFT_ENV, "1")],
    );
    let warned = run("touches_a_fresh_page", "warn", &[(preempt::SOFT_ENV, "1")]);
    let f = finding(&warned, "sample", "page_fault");
    // One fault per page (the first page may share a page that was touched already).
    assert!(f["count"].as_u64().unwrap() >= 60, "{f}");
    assert_eq!(f["first"]["site"], serde_json::Value::Null);
}

#[test]
fn a_wait_no_interposer_sees_is_caught_as_a_context_switch_of_its_job() {
    if preempt_io::sys::cpu::user_mode_emulation().is_some() {
        // Context switches are not counted under emulation (the emulator's own would be):
        // `page_faults_in_a_task_are_counted_for_the_task_and_its_job` checks that it says so.
        return;
    }
    caught("waits_outside_libc", "context_switch", None, &[]);
    let warned = run("waits_outside_libc", "warn", &[]);
    let f = finding(&warned, "sample", "context_switch");
    assert_eq!(f["first"]["site"], serde_json::Value::Null, "{f}");
}

#[test]
fn pcp_locks_cross_level_and_timed_spawns_are_not_findings() {
    let clean = run("clean", "abort", &[]);
    assert_eq!(clean.code, Some(0), "{}", clean.stderr);
    // The PCP slow path really slept in `high`'s jobs: its context switches were seen by
    // getrusage and explained by the job's `FUTEX_LOCK_PI` calls.
    let contended: u32 = clean
        .stdout
        .lines()
        .find_map(|l| l.split("contended ").nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `contended` line\n{}", clean.stdout));
    assert!(contended > 0, "no job of `high` took the PCP slow path");
    assert_eq!(
        clean.stats["rt_safety"],
        serde_json::json!([]),
        "{}",
        clean.stderr
    );
    assert_eq!(clean.stats["rt_safety_mode"], "abort");
}

#[test]
fn an_unknown_mode_in_the_environment_is_an_error_that_names_the_variable() {
    let out = run_child(
        "clean",
        &[(preempt::RT_SAFETY_ENV, "loud")],
        3,
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("PREEMPT_RT_SAFETY=\"loud\" is not a real-time safety mode: write PREEMPT_RT_SAFETY=warn, abort or off"),
        "{stderr}"
    );
}
