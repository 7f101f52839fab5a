//! Conformance with RTIC v2: the rtic repository's own example apps for the lm3s6965 target
//! (MIT OR Apache-2.0), ported by hand with only MCU-specific lines changed
//! (`examples/rtic_conformance/`, one binary), each run pinned to CPU 0 (`taskset -c 0`, so
//! priorities order the output as on RTIC's single core) and its output compared line for
//! line with the output RTIC's CI expects (`ci/expected/lm3s6965/<example>.run`, copied
//! below). Where preempt behaves differently by design, the comparison says how and why; the
//! same list is in docs/RTIC.md ("Differences from RTIC").
//!
//! The apps need SCHED_FIFO (their priorities are what orders the output). Without the
//! privilege the test skips with a message, or fails under `PREEMPT_REQUIRE_PRIVILEGED=1`.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

#[path = "support/child.rs"]
mod child_process;
use child_process::{privileged, run_with_watchdog, text};

/// How an example's output must match RTIC's.
enum Expect {
    /// Line for line.
    Same(&'static str),
    /// The same lines in another order: same-priority async tasks run in spawn order (FIFO)
    /// here, while RTIC's dispatcher polls the ready tasks of a priority in an order of its
    /// own (not the spawn order). The `&str` is preempt's order, checked too.
    SameLinesFifo {
        rtic: &'static str,
        preempt: &'static str,
    },
}

/// (RTIC example name, expected output). RTIC's `common.rs` is `locals.rs` under another
/// name (the same file but for its first line): it is run once, as `locals`.
const EXAMPLES: &[(&str, Expect)] = &[
    (
        "async-channel",
        Expect::Same(
            "Sender 1 sending: 1\nSender 2 sending: 2\nSender 3 sending: 3\nReceiver got: 1\n\
             Receiver got: 2\nReceiver got: 3\n",
        ),
    ),
    (
        "async-delay",
        Expect::SameLinesFifo {
            rtic: "init\nhello from bar\nhello from baz\nhello from foo\nbye from foo\n\
                   bye from bar\nbye from baz\n",
            preempt: "init\nhello from foo\nhello from bar\nhello from baz\nbye from foo\n\
                      bye from bar\nbye from baz\n",
        },
    ),
    (
        "async-task",
        Expect::Same(
            "init\nhello from async2\nhello from async\nhello from async with args a: 1, b: 2\n\
             idle\n",
        ),
    ),
    (
        "async-task-multiple-prios",
        Expect::Same(
            "init\nhello from async 3 a 1\nhello from async 4 a 2\nhello from async 1 a 3\n\
             hello from async 2 a 4\nidle\n",
        ),
    ),
    ("declared_locals", Expect::Same("")),
    (
        "destructure",
        Expect::SameLinesFifo {
            rtic: "bar: a = 0, b = 1, c = 2\nfoo: a = 0, b = 1, c = 2\n",
            preempt: "foo: a = 0, b = 1, c = 2\nbar: a = 0, b = 1, c = 2\n",
        },
    ),
    ("idle", Expect::Same("init\nidle\n")),
    ("init", Expect::Same("init\n")),
    (
        "lock",
        Expect::Same("A\nB - shared = 1\nC\nD - shared = 2\nE\n"),
    ),
    ("lock-free", Expect::Same("  foo = 1\n  bar = 2\n")),
    (
        "locals",
        Expect::SameLinesFifo {
            rtic: "bar: local_to_bar = 1\nfoo: local_to_foo = 1\nidle: local_to_idle = 1\n",
            preempt: "foo: local_to_foo = 1\nbar: local_to_bar = 1\nidle: local_to_idle = 1\n",
        },
    ),
    (
        "multilock",
        Expect::Same("Multiple locks, s1: 1, s2: 1, s3: 1\n"),
    ),
    (
        "only-shared-access",
        Expect::Same("bar(key = 0xdeadbeef)\nfoo(key = 0xdeadbeef)\n"),
    ),
    (
        "preempt",
        Expect::Same("foo - start\n baz - start\n baz - end\n bar\nfoo - end\n"),
    ),
    ("shared", Expect::Same("received message: 42\n")),
    ("smallest", Expect::Same("")),
    ("spawn", Expect::Same("init\nfoo\n")),
    ("spawn_arguments", Expect::Same("foo 1, 1\n")),
    (
        "spawn_err",
        Expect::Same("init\nCannot spawn a spawned (running) task!\nfoo\n"),
    ),
    (
        "spawn_loop",
        Expect::Same("init\nfoo\nidle\nfoo\nidle\nfoo\nidle\n"),
    ),
    (
        "static-resources-in-init",
        Expect::Same("received message: 1\nreceived message: 2\nreceived message: 3\n"),
    ),
    (
        "task",
        Expect::Same("foo - start\nfoo - middle\nbaz\nfoo - end\nbar\n"),
    ),
];

fn binary() -> PathBuf {
    // target/<profile>/deps/rtic_conformance-<hash> -> target/<profile>/examples/rtic_conformance
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples")
        .join("rtic_conformance");
    assert!(
        path.exists(),
        "{} is missing: run the whole suite (`cargo test -p preempt`), which builds the examples",
        path.display()
    );
    path
}

fn sorted(lines: &str) -> Vec<&str> {
    let mut v: Vec<&str> = lines.lines().collect();
    v.sort_unstable();
    v
}

#[test]
fn rtic_examples_print_what_rtic_ci_expects() {
    if !privileged(99) {
        assert!(
            std::env::var_os("PREEMPT_REQUIRE_PRIVILEGED").is_none(),
            "PREEMPT_REQUIRE_PRIVILEGED is set but this process cannot run SCHED_FIFO threads \
             or lock memory: run as root or grant CAP_SYS_NICE and CAP_IPC_LOCK"
        );
        eprintln!(
            "skipped: the RTIC conformance apps need SCHED_FIFO (root, CAP_SYS_NICE or \
             RLIMIT_RTPRIO) and memory locking (CAP_IPC_LOCK or RLIMIT_MEMLOCK unlimited): \
             under SCHED_OTHER their priorities do not order their output"
        );
        return;
    }
    let bin = binary();
    let mut failures = Vec::new();
    for (name, expect) in EXAMPLES {
        let mut cmd = Command::new("taskset");
        cmd.arg("-c").arg("0").arg(&bin).arg(name);
        let out = run_with_watchdog(cmd, name, Duration::from_secs(20));
        let stdout = text(&out.stdout);
        let stderr = text(&out.stderr);
        if !out.status.success() {
            failures.push(format!(
                "{name}: exit status {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                out.status
            ));
            continue;
        }
        let ok = match expect {
            Expect::Same(rtic) => stdout == *rtic,
            Expect::SameLinesFifo { rtic, preempt } => {
                assert_eq!(sorted(rtic), sorted(preempt), "{name}: bad test table");
                stdout == *preempt
            }
        };
        if !ok {
            let wanted = match expect {
                Expect::Same(rtic) => rtic,
                Expect::SameLinesFifo { preempt, .. } => preempt,
            };
            failures.push(format!(
                "{name}: output differs\nexpected:\n{wanted}got:\n{stdout}stderr:\n{stderr}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} RTIC examples failed:\n\n{}",
        failures.len(),
        EXAMPLES.len(),
        failures.join("\n\n")
    );
}
