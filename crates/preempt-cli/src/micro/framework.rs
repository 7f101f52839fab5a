//! The framework set (seed `004_…` §6.2): what the preempt runtime's own primitives cost, the
//! task switch and the resource lock, measured inside real `#[preempt::app]` apps.
//!
//! # Background
//! The thesis measured, on a Raspberry Pi 4 with PREEMPT_RT, a same-priority task switch
//! (394 ns: both tasks on one executor thread), a cross-priority task switch (9.89 µs across
//! cores, 6.48 µs pinned to one core: a futex wake and a kernel context switch), an
//! uncontended resource lock/unlock (309/171 ns) and a contended unlock (5.43 µs: the kernel
//! wakes the waiter). It timed whole loops and divided, so it reported means only.
//!
//! # Solution
//! Each scenario is one of the thesis's apps ([`apps`]: Listing 1 at one and at two
//! priorities, the lock loop, Listing 2) with counter reads *inside* the tasks, so every
//! switch, lock and unlock is one sample and the result is a distribution:
//!
//! | row | between the two counter reads |
//! |-----|-------------------------------|
//! | `task_switch_same_prio` | `task1` before `task2::spawn(..)` → `task2`'s first statement (and back): one executor thread, no kernel |
//! | `task_switch_cross_prio` | `task1` (low priority) before `task2::spawn(..)` → first statement of `task2` (high priority) on its own thread, which may run on another CPU |
//! | `task_switch_cross_prio_one_core` | the same, the process pinned to `--cpu`: the spawn preempts the spawner |
//! | `resource_lock` | before `r.lock(..)` → first statement of the closure (PCP resource shared by the low and the high priority, uncontended) |
//! | `resource_unlock` | last statement of the closure → after `lock` returns |
//! | `resource_unlock_contended` | Listing 2: `task1` (high) holds `a` while `task2` (low) is blocked on it; last statement of the closure → after `lock` returns, which hands the PI futex to `task2` |
//! | `resource_unlock_contended_high_waiter` | Listing 2 reversed (not in the thesis): the low holder (its thread on another CPU) releases `a` to a high waiter on `--cpu`; the kernel had boosted the holder, and the unlock ends the boost too |
//!
//! Before timing a contended unlock, the holder waits inside the lock until the waiter is seen
//! asleep in the kernel (Listing 2 sleeps 20 µs and trusts it), so no uncontended unlock is
//! counted as contended.
//!
//! Every row is measured in the default app (accounting on: a release stamp per spawn,
//! statistics per job, timed critical sections), which is what users run, and again in the
//! bare runtime (`#[preempt::app(accounting = false)]`) as `<row>_bare`, so the price of the
//! accounting is visible. The executors run at SCHED_FIFO 70 (low) and 80 (high), the other
//! sets' default levels, where the thesis used 1 and 2 (see [`apps`] for why; the priorities are
//! literals of the apps, so `--priority` does not move them, and `--priority 0` selects soft
//! mode, below). Each row's notes say what policy the executor threads really had, as seen
//! from inside the tasks.
//!
//! An app owns process-wide state (memory locking, real-time threads, its exit code, and it
//! runs once per process), so each scenario runs in a child process: the parent re-executes
//! the `preempt` binary as `preempt micro` with [`CHILD_ENV`] naming the scenario, [`micro::run`]
//! sees the variable first and runs [`child_main`], which pins itself when the row asks for
//! one CPU, runs the app, and writes the raw counter ticks on stdout ([`protocol`]). The
//! parent reads them into [`Samples`], converts with its own calibrated clock (the counter is
//! the CPU's, shared by both processes), and records them like every other set. A child that
//! fails, hangs past its time limit or is interrupted by Ctrl-C is killed ([`child`]) and its
//! row says why, with the last lines of the child's stderr.
//!
//! Without real-time privileges the runtime refuses to start an app; the rows then run in the
//! runtime's soft mode (`PREEMPT_SOFT=1`: SCHED_OTHER executors, no memory locking) and say so
//! in their notes, except the one-core cross-priority switch and the high-waiter unlock, whose
//! meaning (the spawn preempts the spawner; the kernel boosts the holder) needs real
//! priorities: they are skipped with the fix, like the Zephyr set.
//!
//! # Why it works
//! The counter is read with the same fenced instruction as the other sets, and the TSC (or
//! the arm generic timer) is synchronised across CPUs, so a stamp taken on one executor thread
//! and read on another is a valid difference. Sample counts are a fraction of the thesis's
//! (it ran 10 million switches, a minute of kernel switches here), see [`Kind::count`];
//! `--scale` multiplies them.
//!
//! ```
//! use preempt_cli::micro::framework::{self, SCENARIOS};
//! // One benchmark per scenario; `preempt micro --sets framework` runs each in a child.
//! assert_eq!(framework::benches().len(), SCENARIOS.len());
//! let resource = SCENARIOS.iter().find(|s| s.id == "resource").unwrap();
//! assert_eq!(resource.rows, ["resource_lock", "resource_unlock"]);
//! assert_eq!(framework::title_of("resource_unlock_bare"), Some("resource unlock, uncontended, bare runtime"));
//! ```
//!
//! [`micro::run`]: crate::app::micro::run

pub mod apps;
pub mod child;
pub mod protocol;

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use preempt_io::sys::{cpu, sched};

use super::bench::{Bench, Ctx, Runner, Samples};
use protocol::ChildRow;

/// Names the scenario a child process runs (set by the parent; its presence makes
/// `preempt micro` a framework child).
pub const CHILD_ENV: &str = "PREEMPT_MICRO_FRAMEWORK_CHILD";
/// Samples per row the child records.
pub const SAMPLES_ENV: &str = "PREEMPT_MICRO_FRAMEWORK_SAMPLES";
/// The CPU the child pins itself to before the app starts (absent: unpinned).
pub(crate) const CPU_ENV: &str = "PREEMPT_MICRO_FRAMEWORK_CPU";
/// `holder,waiter`: the CPUs the two tasks of the high-waiter scenario pin their own threads
/// to.
pub(crate) const TASK_CPUS_ENV: &str = "PREEMPT_MICRO_FRAMEWORK_TASK_CPUS";
/// The `preempt` binary to re-execute, when the measuring program is not it (e.g. a program
/// that links `preempt_cli` as a library).
pub const EXE_ENV: &str = "PREEMPT_MICRO_EXE";

/// The note of every row measured in the runtime's soft mode.
pub const SOFT_NOTE: &str = "SOFT MODE (PREEMPT_SOFT=1): the executors ran as SCHED_OTHER \
                             without mlockall, because SCHED_FIFO is not in use (--priority 0, \
                             or no CAP_SYS_NICE: see the warnings); priorities did not preempt";
/// How [`SOFT_NOTE`] starts (to recognise it in a results file).
pub(crate) const SOFT_NOTE_PREFIX: &str = "SOFT MODE";

/// Time a child may take to start and stop around its samples (10 s: `mlockall` of the
/// binary and the executors' stack prefaulting take tens of ms; a loaded VM, far more).
pub const CHILD_START_LIMIT: Duration = Duration::from_secs(10);

/// Most samples a child records per row (10 million, 80 MB of ticks: the thesis's largest
/// count).
pub(crate) const MAX_SAMPLES: usize = 10_000_000;

/// What a scenario measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Listing 1, both tasks at one priority.
    SamePrio,
    /// Listing 1 at two priorities, unpinned.
    CrossPrio,
    /// Listing 1 at two priorities, the process pinned to one CPU.
    CrossPrioOneCore,
    /// Uncontended lock and unlock of a PCP resource.
    Resource,
    /// Listing 2: unlock of a resource another task waits for.
    Contended,
    /// Unlock by a lower-priority holder of a resource a higher-priority task on another CPU
    /// waits for.
    ContendedHighWaiter,
}

impl Kind {
    /// The thesis's sample count (`None`: not in the thesis).
    pub(crate) const fn thesis_count(self) -> Option<u64> {
        match self {
            Self::SamePrio | Self::CrossPrio | Self::CrossPrioOneCore => Some(10_000_000),
            Self::Resource => Some(1_000_000),
            Self::Contended => Some(50_000),
            Self::ContendedHighWaiter => None,
        }
    }

    /// Samples per row at `--scale 1`: enough for a stable p99 and a set of a few seconds.
    /// A same-priority switch or a lock costs 0.1 µs here (10⁻² of the thesis's count is
    /// 10 ms), a cross-priority switch 5–20 µs (20 000 take 0.1–0.4 s), a contended round a
    /// wake-up, a few 5 µs polls and a switch back, 50–200 µs (5 000 take up to 1 s).
    pub const fn count(self) -> u64 {
        match self {
            Self::SamePrio | Self::Resource => 100_000,
            Self::CrossPrio | Self::CrossPrioOneCore => 20_000,
            Self::Contended | Self::ContendedHighWaiter => 5_000,
        }
    }

    /// Time allowed per sample beyond [`CHILD_START_LIMIT`], ~50× the expected cost.
    const fn limit_per_sample(self) -> Duration {
        match self {
            Self::SamePrio | Self::Resource => Duration::from_micros(10),
            Self::CrossPrio | Self::CrossPrioOneCore => Duration::from_micros(500),
            Self::Contended | Self::ContendedHighWaiter => Duration::from_millis(5),
        }
    }

    /// Whether the child pins itself to `--cpu` (unpinned rows let the executors use every
    /// CPU, as the thesis's unpinned runs did).
    pub const fn pinned(self) -> bool {
        matches!(
            self,
            Self::SamePrio | Self::CrossPrioOneCore | Self::Resource
        )
    }

    /// Whether the row means nothing without real priorities.
    pub(crate) const fn needs_rt(self) -> bool {
        matches!(self, Self::CrossPrioOneCore | Self::ContendedHighWaiter)
    }
}

/// One scenario: a child process running one app.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// Benchmark id (`--only`) and the child's scenario name.
    pub id: &'static str,
    /// What it measures.
    pub kind: Kind,
    /// The bare runtime (`accounting = false`).
    pub bare: bool,
    /// The rows it produces.
    pub rows: &'static [&'static str],
    /// Table title.
    pub title: &'static str,
    /// What lies between the counter reads.
    pub method: &'static str,
}

const SAME: &str = "Listing 1, task1 and task2 at priority 80 ping-pong by spawn on one executor thread; each sample: counter in the spawner just before spawn(stamp) -> counter as the spawned task's first statement (both directions)";
const CROSS: &str = "Listing 1 at priorities 70 and 80 (the thesis: 1 and 2; SCHED_FIFO executor threads, unpinned); each sample: counter in task1 just before task2::spawn(stamp) -> counter as task2's first statement (futex wake + kernel switch; the way back is not timed)";
const CROSS_ONE: &str = "as task_switch_cross_prio with the process pinned to --cpu: the spawn preempts the spawner (the thesis's single-core case)";
const RESOURCE: &str = "one task at priority 70 locks r (a PCP resource shared with priority 80, so a PI-futex mutex) in a loop; lock: counter before lock() -> first statement of the closure; unlock: last statement of the closure -> counter after lock() returns";
const CONTENDED: &str = "Listing 2: task1 (priority 80; the thesis: 2) locks a, spawns task2 (priority 70; the thesis: 1) and waits inside the lock until task2 is blocked on a (seen sleeping in /proc); sample: last statement of task1's closure -> counter after lock() returns (FUTEX_UNLOCK_PI hands a to task2); unpinned";
const HIGH_WAITER: &str = "Listing 2 reversed (not in the thesis): holder (priority 70, its thread pinned to a CPU other than --cpu) locks a, spawns waiter (priority 80, pinned to --cpu) and waits inside the lock until the waiter is blocked on a (the kernel then boosts the holder to 80); sample: last statement of the holder's closure -> counter after lock() returns (FUTEX_UNLOCK_PI hands a to the waiter and ends the boost)";

/// Every scenario, default app first, then the bare runtime.
pub const SCENARIOS: [Scenario; 12] = [
    Scenario {
        id: "task_switch_same_prio",
        kind: Kind::SamePrio,
        bare: false,
        rows: &["task_switch_same_prio"],
        title: "task switch, same priority (one executor thread)",
        method: SAME,
    },
    Scenario {
        id: "task_switch_cross_prio",
        kind: Kind::CrossPrio,
        bare: false,
        rows: &["task_switch_cross_prio"],
        title: "task switch, cross priority (two threads, unpinned)",
        method: CROSS,
    },
    Scenario {
        id: "task_switch_cross_prio_one_core",
        kind: Kind::CrossPrioOneCore,
        bare: false,
        rows: &["task_switch_cross_prio_one_core"],
        title: "task switch, cross priority, one core",
        method: CROSS_ONE,
    },
    Scenario {
        id: "resource",
        kind: Kind::Resource,
        bare: false,
        rows: &["resource_lock", "resource_unlock"],
        title: "resource lock / unlock, uncontended",
        method: RESOURCE,
    },
    Scenario {
        id: "resource_unlock_contended",
        kind: Kind::Contended,
        bare: false,
        rows: &["resource_unlock_contended"],
        title: "resource unlock with a waiter (FUTEX_UNLOCK_PI)",
        method: CONTENDED,
    },
    Scenario {
        id: "resource_unlock_contended_high_waiter",
        kind: Kind::ContendedHighWaiter,
        bare: false,
        rows: &["resource_unlock_contended_high_waiter"],
        title: "resource unlock, higher-priority waiter on another CPU",
        method: HIGH_WAITER,
    },
    Scenario {
        id: "task_switch_same_prio_bare",
        kind: Kind::SamePrio,
        bare: true,
        rows: &["task_switch_same_prio_bare"],
        title: "task switch, same priority, bare runtime",
        method: SAME,
    },
    Scenario {
        id: "task_switch_cross_prio_bare",
        kind: Kind::CrossPrio,
        bare: true,
        rows: &["task_switch_cross_prio_bare"],
        title: "task switch, cross priority, unpinned, bare runtime",
        method: CROSS,
    },
    Scenario {
        id: "task_switch_cross_prio_one_core_bare",
        kind: Kind::CrossPrioOneCore,
        bare: true,
        rows: &["task_switch_cross_prio_one_core_bare"],
        title: "task switch, cross priority, one core, bare runtime",
        method: CROSS_ONE,
    },
    Scenario {
        id: "resource_bare",
        kind: Kind::Resource,
        bare: true,
        rows: &["resource_lock_bare", "resource_unlock_bare"],
        title: "resource lock / unlock, uncontended, bare runtime",
        method: RESOURCE,
    },
    Scenario {
        id: "resource_unlock_contended_bare",
        kind: Kind::Contended,
        bare: true,
        rows: &["resource_unlock_contended_bare"],
        title: "resource unlock with a waiter, bare runtime",
        method: CONTENDED,
    },
    Scenario {
        id: "resource_unlock_contended_high_waiter_bare",
        kind: Kind::ContendedHighWaiter,
        bare: true,
        rows: &["resource_unlock_contended_high_waiter_bare"],
        title: "resource unlock, higher-priority waiter on another CPU, bare runtime",
        method: HIGH_WAITER,
    },
];

/// Every row of the set, `(id, title)`. The report titles the rows with it; files written
/// before the set was measured list these ids as reserved (`SetStatus::planned`).
pub const PLANNED: [(&str, &str); 14] = [
    (
        "task_switch_same_prio",
        "task switch, same priority (one executor thread)",
    ),
    (
        "task_switch_cross_prio",
        "task switch, cross priority (two threads, unpinned)",
    ),
    (
        "task_switch_cross_prio_one_core",
        "task switch, cross priority, one core",
    ),
    ("resource_lock", "resource lock, uncontended"),
    ("resource_unlock", "resource unlock, uncontended"),
    (
        "resource_unlock_contended",
        "resource unlock with a waiter (FUTEX_UNLOCK_PI)",
    ),
    (
        "resource_unlock_contended_high_waiter",
        "resource unlock, higher-priority waiter on another CPU",
    ),
    (
        "task_switch_same_prio_bare",
        "task switch, same priority, bare runtime",
    ),
    (
        "task_switch_cross_prio_bare",
        "task switch, cross priority, unpinned, bare runtime",
    ),
    (
        "task_switch_cross_prio_one_core_bare",
        "task switch, cross priority, one core, bare runtime",
    ),
    (
        "resource_lock_bare",
        "resource lock, uncontended, bare runtime",
    ),
    (
        "resource_unlock_bare",
        "resource unlock, uncontended, bare runtime",
    ),
    (
        "resource_unlock_contended_bare",
        "resource unlock with a waiter, bare runtime",
    ),
    (
        "resource_unlock_contended_high_waiter_bare",
        "resource unlock, higher-priority waiter on another CPU, bare runtime",
    ),
];

/// The note of result files written before the set was measured (the report's sample data
/// still shows one).
pub(crate) const NOT_AVAILABLE: &str = "the preempt runtime does not expose its task and resource API yet \
                                 (framework-core issue); the rows are reserved";

/// The title of a row id of this set.
pub fn title_of(row: &str) -> Option<&'static str> {
    PLANNED.iter().find(|(id, _)| *id == row).map(|(_, t)| *t)
}

/// One runner per scenario (a [`Runner`] is a plain `fn`, so the index is a const parameter).
const RUNNERS: [Runner; 12] = [
    run_nth::<0>,
    run_nth::<1>,
    run_nth::<2>,
    run_nth::<3>,
    run_nth::<4>,
    run_nth::<5>,
    run_nth::<6>,
    run_nth::<7>,
    run_nth::<8>,
    run_nth::<9>,
    run_nth::<10>,
    run_nth::<11>,
];

fn run_nth<const I: usize>(ctx: &Ctx<'_>) -> Result<Vec<(&'static str, Samples)>> {
    run_scenario(ctx, &SCENARIOS[I])
}

/// The benchmarks of this set.
pub fn benches() -> Vec<Bench> {
    SCENARIOS
        .iter()
        .zip(RUNNERS)
        .map(|(s, run)| Bench {
            set: "framework",
            id: s.id,
            title: s.title,
            method: s.method,
            needs_rt: s.kind.needs_rt(),
            run,
        })
        .collect()
}

/// The `preempt` binary to re-execute: [`EXE_ENV`], else this program, unless this program
/// is a cargo test harness (`target/<profile>/deps/<name>-<hash>`), whose `preempt` binary
/// cargo builds one directory up.
pub(crate) fn child_exe() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(EXE_ENV) {
        return Ok(p.into());
    }
    let exe = std::env::current_exe().context("cannot find the preempt executable")?;
    let dir = exe.parent();
    if dir.and_then(Path::file_name) == Some(OsStr::new("deps")) {
        let bin = dir
            .and_then(Path::parent)
            .map(|d| d.join("preempt"))
            .filter(|b| b.is_file());
        return bin.with_context(|| {
            format!(
                "the framework set re-executes the `preempt` binary, and {} is a test harness \
                 with no `preempt` next to it: build it (cargo build -p preempt-cli) or set \
                 {EXE_ENV}",
                exe.display()
            )
        });
    }
    Ok(exe)
}

/// Parent side: runs `sc` in a child and returns its rows as samples.
fn run_scenario(ctx: &Ctx<'_>, sc: &Scenario) -> Result<Vec<(&'static str, Samples)>> {
    let n = ctx.count(sc.kind.count()).min(MAX_SAMPLES as u64);
    let exe = child_exe()?;
    let mut cmd = Command::new(&exe);
    // The flags only matter when the program is not `preempt`: a foreign binary (a test
    // harness) rejects them and exits instead of running anything.
    cmd.args(["micro", "--sets", "framework", "--no-history"])
        .env(CHILD_ENV, sc.id)
        .env(SAMPLES_ENV, n.to_string())
        // The child's statistics are not wanted; a user's setting must not make every
        // child overwrite the same file.
        .env_remove(preempt::STATS_JSON_ENV);
    cmd.env_remove(CPU_ENV).env_remove(TASK_CPUS_ENV);
    let placement = if sc.kind.pinned() {
        cmd.env(CPU_ENV, ctx.cpu.to_string());
        format!("child process pinned to CPU {}", ctx.cpu)
    } else if sc.kind == Kind::ContendedHighWaiter {
        let online = cpu::online_cpus().context("cannot read the online CPUs")?;
        let holder = online
            .iter()
            .copied()
            .find(|&c| c != ctx.cpu)
            .with_context(|| {
                format!(
                    "needs a second online CPU for the holder (the waiter runs on --cpu {}; \
                 online: {online:?})",
                    ctx.cpu
                )
            })?;
        cmd.env(TASK_CPUS_ENV, format!("{holder},{}", ctx.cpu));
        format!(
            "holder's thread pinned to CPU {holder}, waiter's to CPU {}",
            ctx.cpu
        )
    } else {
        "child process unpinned: the executors may run on any online CPU".to_string()
    };
    // Soft mode exactly when the other sets run without SCHED_FIFO, whatever the caller's
    // environment says, so the label below is true.
    let soft = ctx.priority.is_none();
    if soft {
        cmd.env(preempt::SOFT_ENV, "1");
    } else {
        cmd.env_remove(preempt::SOFT_ENV);
    }
    let limit = CHILD_START_LIMIT + sc.kind.limit_per_sample() * u32::try_from(n)?;
    let out = child::run(cmd, limit, ctx.stop)?;
    let tail = out.stderr_tail();
    let why = |what: String| {
        if tail.is_empty() {
            what
        } else {
            format!("{what}; its stderr: {tail}")
        }
    };
    match out.ended {
        child::Ended::Exited(0) => {}
        child::Ended::Exited(code) => bail!(why(format!(
            "the child app ({} {}) exited with code {code}",
            exe.display(),
            sc.id
        ))),
        child::Ended::Signal(sig) => {
            bail!(why(format!("the child app was killed by signal {sig}")))
        }
        child::Ended::TimedOut => bail!(why(format!(
            "the child app did not finish within {} s and was killed (a hang, or a machine \
             far slower than expected: try a smaller --scale)",
            limit.as_secs()
        ))),
        child::Ended::Stopped => bail!("stopped by Ctrl-C before the child app finished"),
    }
    let rows = protocol::parse(&out.stdout, sc.id)
        .with_context(|| format!("framework child `{}`", sc.id))?;
    samples_of(sc, rows, n, soft, &placement, out.elapsed)
}

/// Matches the child's rows to the scenario's and turns them into samples with their notes.
fn samples_of(
    sc: &Scenario,
    mut rows: Vec<ChildRow>,
    n: u64,
    soft: bool,
    placement: &str,
    elapsed: Duration,
) -> Result<Vec<(&'static str, Samples)>> {
    let mut out = Vec::with_capacity(sc.rows.len());
    for &id in sc.rows {
        let i = rows.iter().position(|r| r.id == id).with_context(|| {
            format!(
                "framework child `{}` sent no row `{id}` (rows: {})",
                sc.id,
                rows.iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        let row = rows.swap_remove(i);
        let mut notes = vec![
            if sc.bare {
                "bare runtime: #[preempt::app(accounting = false)]".to_string()
            } else {
                "default app (accounting on: release stamp per spawn, statistics per job, timed \
                 critical sections), as users run it"
                    .to_string()
            },
            if soft {
                SOFT_NOTE.to_string()
            } else {
                format!(
                    "executors at SCHED_FIFO {} and {} (the thesis: 1 and 2; fixed in the apps, \
                     --priority does not apply), memory locked",
                    apps::LOW_PRIORITY,
                    apps::HIGH_PRIORITY
                )
            },
            placement.to_string(),
            format!(
                "{n} samples requested ({}); the child ran {} ms including start-up",
                sc.kind
                    .thesis_count()
                    .map_or("not in the thesis".to_string(), |t| format!("thesis: {t}")),
                elapsed.as_millis()
            ),
        ];
        notes.extend(row.notes);
        if row.ticks.len() as u64 != n {
            notes.push(format!("{} samples received of {n}", row.ticks.len()));
        }
        out.push((
            id,
            Samples {
                ticks: row.ticks,
                perf: None,
                perf_extra_ticks: 0.0,
                perf_note: Some(
                    "measured in a child process across executor threads: no perf window".into(),
                ),
                notes,
            },
        ));
    }
    if let Some(extra) = rows.first() {
        bail!(
            "framework child `{}` sent an unexpected row `{}`",
            sc.id,
            extra.id
        );
    }
    Ok(out)
}

/// Child side: runs the scenario named by [`CHILD_ENV`] (`name`) and prints its samples on
/// stdout. Returns the process exit code: the app's own when it failed (the runtime has then
/// said why on stderr).
pub fn child_main(name: &OsStr) -> Result<u8> {
    let sc = SCENARIOS
        .iter()
        .find(|s| OsStr::new(s.id) == name)
        .with_context(|| {
            format!(
                "{CHILD_ENV}={}: no such framework scenario (known: {})",
                name.to_string_lossy(),
                SCENARIOS
                    .iter()
                    .map(|s| s.id)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
    let n = std::env::var(SAMPLES_ENV)
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| (1..=MAX_SAMPLES).contains(n))
        .with_context(|| format!("{SAMPLES_ENV} must be a sample count in 1..={MAX_SAMPLES}"))?;
    if let Some(v) = std::env::var_os(CPU_ENV) {
        let cpu: usize = v
            .to_str()
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("{CPU_ENV}={}: not a CPU number", v.to_string_lossy()))?;
        // The executor threads inherit the affinity of the thread that creates them.
        sched::set_current_thread_affinity(&[cpu])
            .with_context(|| format!("cannot pin the framework child to CPU {cpu}"))?;
    }
    if let Some(v) = std::env::var_os(TASK_CPUS_ENV) {
        let pair = v.to_str().and_then(|v| {
            let (h, w) = v.split_once(',')?;
            Some((h.parse::<usize>().ok()?, w.parse::<usize>().ok()?))
        });
        let (holder, waiter) = pair.with_context(|| {
            format!(
                "{TASK_CPUS_ENV}={}: expected `holder,waiter` CPU numbers",
                v.to_string_lossy()
            )
        })?;
        apps::HOLDER_CPU.store(holder, std::sync::atomic::Ordering::Relaxed);
        apps::WAITER_CPU.store(waiter, std::sync::atomic::Ordering::Relaxed);
    }
    apps::reserve(sc.kind, n);
    let code = apps::run(sc.kind, sc.bare);
    if code != 0 {
        return Ok(u8::try_from(code).unwrap_or(1).max(1));
    }
    let mut rows: Vec<ChildRow> = sc
        .rows
        .iter()
        .zip([&apps::ROW_A, &apps::ROW_B])
        .map(|(id, rec)| ChildRow {
            id: (*id).into(),
            ticks: rec.take(),
            notes: Vec::new(),
        })
        .collect();
    let seen = apps::policies_seen();
    for r in &mut rows {
        r.notes.push(seen.clone());
    }
    let unconfirmed = apps::UNCONFIRMED.load(std::sync::atomic::Ordering::Relaxed);
    if unconfirmed > 0 {
        if let Some(r) = rows.first_mut() {
            r.notes.push(format!(
                "{unconfirmed} rounds not counted: the waiter was not seen blocked on the \
                 resource within 100 ms"
            ));
        }
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(protocol::encode(sc.id, &rows).as_bytes())?;
    stdout.flush()?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_runners_and_rows_agree() {
        let b = benches();
        assert_eq!(b.len(), SCENARIOS.len());
        let rows: Vec<&str> = SCENARIOS
            .iter()
            .flat_map(|s| s.rows.iter().copied())
            .collect();
        let planned: Vec<&str> = PLANNED.iter().map(|(id, _)| *id).collect();
        assert_eq!(rows.len(), planned.len());
        for r in &rows {
            assert!(planned.contains(r), "{r} has no title");
            assert_eq!(
                r.ends_with("_bare"),
                SCENARIOS.iter().any(|s| s.bare && s.rows.contains(r))
            );
        }
        let mut ids: Vec<&str> = b.iter().map(|b| b.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), SCENARIOS.len(), "bench ids are unique");
        assert_eq!(
            title_of("resource_lock_bare"),
            Some("resource lock, uncontended, bare runtime")
        );
    }

    #[test]
    fn child_rows_become_samples_with_notes() {
        let sc = SCENARIOS.iter().find(|s| s.id == "resource").unwrap();
        let rows = vec![
            ChildRow {
                id: "resource_unlock".into(),
                ticks: vec![5, 6],
                notes: vec![],
            },
            ChildRow {
                id: "resource_lock".into(),
                ticks: vec![7, 8, 9],
                notes: vec!["from the child".into()],
            },
        ];
        let s = samples_of(sc, rows, 3, false, "pinned", Duration::from_millis(5)).unwrap();
        assert_eq!(s[0].0, "resource_lock");
        assert_eq!(s[0].1.ticks, vec![7, 8, 9]);
        assert!(s[0].1.notes.iter().any(|n| n == "from the child"));
        assert!(s[0].1.notes.iter().any(|n| n.contains("default app")));
        assert!(s[0].1.notes.iter().any(|n| n == "pinned"));
        assert!(s[0].1.notes.iter().any(|n| n.contains("thesis: 1000000")));
        assert_eq!(s[1].0, "resource_unlock");
        assert!(s[1].1.notes.iter().any(|n| n == "2 samples received of 3"));

        let missing = vec![ChildRow {
            id: "resource_lock".into(),
            ticks: vec![1],
            notes: vec![],
        }];
        let e = samples_of(sc, missing, 1, true, "pinned", Duration::ZERO).unwrap_err();
        assert!(
            e.to_string().contains("sent no row `resource_unlock`"),
            "{e}"
        );
    }
}
