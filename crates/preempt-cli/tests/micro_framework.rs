//! `preempt micro --sets framework`: the runtime's task switches and resource locks, measured
//! in child processes of the real `preempt` binary. Checks that every row arrives with the
//! requested sample count and honest labels (default app or bare runtime, real-time or soft
//! mode), and that a child that fails or writes garbage turns into a skipped row that says
//! why, never a short or silent one. Timing values are never asserted (STYLE: tests assert
//! behaviour, not speed).

use std::os::unix::fs::PermissionsExt;

use assert_cmd::Command;
use preempt_cli::micro::{self, framework};
use preempt_cli::results::ResultFile;

mod support;

/// `preempt micro --sets framework --scale 0.01` plus `args`, parsed from `--json`.
fn run(args: &[&str], env: &[(&str, &str)]) -> ResultFile {
    let mut cmd = Command::cargo_bin("preempt").unwrap();
    cmd.args([
        "micro",
        "--sets",
        "framework",
        "--scale",
        "0.01",
        "--no-history",
        "--no-progress",
        "--json",
    ])
    .args(args)
    .env_remove(framework::CHILD_ENV)
    .env_remove(framework::EXE_ENV)
    .timeout(std::time::Duration::from_secs(120));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).expect("micro --json prints a micro file")
}

/// Samples per row at `--scale 0.01`.
fn expected_count(row: &str) -> u64 {
    let kind = framework::SCENARIOS
        .iter()
        .find(|s| s.rows.contains(&row))
        .unwrap()
        .kind;
    (kind.count() as f64 * 0.01).round() as u64
}

#[test]
fn every_framework_row_has_samples_when_privileged() {
    if let Err(e) = micro::fifo_permitted(80) {
        support::skip_unprivileged(&format!(
            "SCHED_FIFO is not permitted ({e}); the framework apps need real-time \
             privileges (root or CAP_SYS_NICE + CAP_IPC_LOCK); soft mode is tested below"
        ));
        return;
    }
    let f = run(&[], &[]);
    let m = micro::micro_of(&f).unwrap();
    let set = m.sets.iter().find(|s| s.set == "framework").unwrap();
    assert_eq!(set.benches, framework::SCENARIOS.len());
    assert!(set.planned.is_empty() && set.note.is_none(), "{set:?}");
    let two_cpus = preempt_io::sys::cpu::online_cpus().unwrap().len() >= 2;
    if !two_cpus {
        eprintln!("one online CPU: the high-waiter rows are checked as skipped");
    }
    for (id, title) in framework::PLANNED {
        if !two_cpus && id.contains("high_waiter") {
            let b = m.benches.iter().find(|b| b.id == id).unwrap();
            assert!(b.skipped.as_deref().unwrap().contains("second online CPU"));
            continue;
        }
        let b = m
            .benches
            .iter()
            .find(|b| b.id == id)
            .unwrap_or_else(|| panic!("{id} missing"));
        assert!(b.skipped.is_none(), "{id}: {:?}", b.skipped);
        assert_eq!(b.set, "framework");
        assert_eq!(b.title, title);
        let c = b.cycles.unwrap_or_else(|| panic!("{id}: no cycles"));
        assert_eq!(c.count, expected_count(id), "{id}");
        assert!(c.count > 0 && c.min_cycles <= c.p50_cycles && c.p99_cycles <= c.max_cycles);
        assert_eq!(b.ns.as_ref().unwrap().summary.count, c.count, "{id}");
        let label = if id.ends_with("_bare") {
            "bare runtime"
        } else {
            "default app"
        };
        assert!(
            b.notes.iter().any(|n| n.contains(label)),
            "{id}: {:?}",
            b.notes
        );
        assert!(
            b.notes.iter().any(|n| n.contains("SCHED_FIFO 70 and 80")),
            "{id}: {:?}",
            b.notes
        );
        // What the tasks saw of their own threads, not what the app declared.
        let seen = b
            .notes
            .iter()
            .find(|n| n.starts_with("executor threads seen from inside the tasks"))
            .unwrap_or_else(|| panic!("{id}: {:?}", b.notes));
        assert!(
            seen.contains("level: SCHED_FIFO ") && !seen.contains("not SCHED_FIFO"),
            "{id}: {seen}"
        );
        assert!(!b.notes.iter().any(|n| n.contains("SOFT MODE")), "{id}");
    }
}

/// Without SCHED_FIFO (`--priority 0`, or no privilege) the apps run in the runtime's soft
/// mode and every row says so; the one-core switch, which means nothing without priorities,
/// is skipped with the fix. Runs unprivileged too.
#[test]
fn soft_mode_rows_are_labelled_and_the_one_core_switch_is_skipped() {
    let f = run(
        &[
            "--priority",
            "0",
            "--only",
            "task_switch_same_prio,task_switch_cross_prio_one_core,resource_bare",
        ],
        &[],
    );
    let m = micro::micro_of(&f).unwrap();
    let ids: Vec<&str> = m.benches.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "task_switch_same_prio",
            "task_switch_cross_prio_one_core",
            "resource_lock_bare",
            "resource_unlock_bare"
        ]
    );
    for b in &m.benches {
        if b.id == "task_switch_cross_prio_one_core" {
            assert!(
                b.skipped.as_deref().unwrap().contains("SCHED_FIFO"),
                "{:?}",
                b.skipped
            );
            continue;
        }
        assert!(b.skipped.is_none(), "{}: {:?}", b.id, b.skipped);
        assert_eq!(b.cycles.unwrap().count, expected_count(&b.id), "{}", b.id);
        assert!(
            b.notes
                .iter()
                .any(|n| n.contains("SOFT MODE (PREEMPT_SOFT=1)")),
            "{}: {:?}",
            b.id,
            b.notes
        );
        assert!(
            b.notes.iter().any(|n| n.contains("not SCHED_FIFO")),
            "{}: {:?}",
            b.id,
            b.notes
        );
    }
}

/// A child that exits non-zero, one that prints something else, and one whose output stops
/// half-way each give a skipped row naming the cause; the run itself still succeeds.
#[test]
fn a_failing_or_corrupt_child_is_a_skipped_row_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let script = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.to_str().unwrap().to_string()
    };
    let cases = [
        (
            script("fails.sh", "echo 'app refused to start' >&2; exit 1"),
            "exited with code 1; its stderr: app refused to start",
        ),
        (
            script("garbage.sh", "echo 'Usage: something else'"),
            "does not start with `preempt-micro-framework 1`",
        ),
        (
            script(
                "short.sh",
                "printf 'preempt-micro-framework 1\\nscenario resource\\nrow resource_lock 5\\n1\\n2\\n'",
            ),
            "row resource_lock has 2 of 5 samples",
        ),
    ];
    for (exe, expect) in cases {
        let f = run(&["--only", "resource"], &[(framework::EXE_ENV, &exe)]);
        let b = &micro::micro_of(&f).unwrap().benches[0];
        assert_eq!(b.id, "resource");
        assert!(b.cycles.is_none(), "{exe}");
        let why = b.skipped.as_deref().unwrap();
        assert!(why.contains(expect), "{exe}: {why}");
    }
}

/// The child entry point refuses an unknown scenario and a bad sample count by name.
#[test]
fn the_child_entry_names_bad_settings() {
    let cases = [
        (
            vec![(framework::CHILD_ENV, "nope")],
            "no such framework scenario",
        ),
        (
            vec![
                (framework::CHILD_ENV, "resource"),
                (framework::SAMPLES_ENV, "many"),
            ],
            "PREEMPT_MICRO_FRAMEWORK_SAMPLES must be a sample count",
        ),
    ];
    for (env, expect) in cases {
        let mut cmd = Command::cargo_bin("preempt").unwrap();
        cmd.args(["micro", "--no-history"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.assert().failure().get_output().clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{err}");
        assert!(out.stdout.is_empty(), "no samples on a failure");
    }
}
