//! RTIC v2 features beyond what RTIC's own examples show (those run in
//! `rtic_conformance.rs`): priority-0 async tasks run on a SCHED_OTHER thread; `#[cfg]` on resources and tasks keeps what is enabled and drops what
//! is not; the `Mono` patterns (`now`, `delay`, `delay_until`, `timeout_after`,
//! `timeout_at`, units on bare literals) behave as RTIC's.
//!
//! Each app runs in a child process under a watchdog (see `support/child.rs`).

use std::time::Duration;

#[path = "support/child.rs"]
mod child_process;
use child_process::{run_child_ok, run_requested_app};

/// Priority-0 async tasks (RTIC v2: they run when no other task does) run on a SCHED_OTHER
/// thread, and share resources with the real-time levels.
#[preempt::app(main = false)]
mod zero_priority {
    use preempt_io::sys::sched;

    #[shared]
    struct Shared {
        log: Vec<&'static str>,
    }

    #[local]
    struct Local {}

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        urgent::spawn().unwrap();
        (
            Shared {
                log: Vec::with_capacity(4),
            },
            Local {},
        )
    }

    #[task(priority = 0, shared = [log])]
    async fn background(mut cx: background::Context) {
        let policy = sched::current_thread_policy().unwrap();
        let log = cx.shared.log.lock(|log| {
            log.push("background");
            log.clone()
        });
        println!("order: {log:?}");
        println!("background policy: {policy:?}");
        preempt::exit(0);
    }

    #[task(priority = 1, shared = [log])]
    async fn urgent(mut cx: urgent::Context) {
        cx.shared.log.lock(|log| log.push("urgent"));
        background::spawn().unwrap();
    }
}

/// `#[cfg]` on shared and local fields and on tasks: enabled ones (`unix`) are there, the
/// others (`not(unix)`) are gone, including a task that uses a gone resource.
#[preempt::app(main = false)]
mod cfg_items {
    #[shared]
    struct Shared {
        #[cfg(unix)]
        kept: u32,
        #[cfg(not(unix))]
        gone: String,
    }

    #[local]
    struct Local {
        #[cfg(unix)]
        kept_local: u8,
        #[cfg(not(unix))]
        gone_local: u8,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        kept::spawn(7).unwrap();
        (
            Shared {
                #[cfg(unix)]
                kept: 35,
                #[cfg(not(unix))]
                gone: String::new(),
            },
            Local {
                #[cfg(unix)]
                kept_local: 1,
                #[cfg(not(unix))]
                gone_local: 2,
            },
        )
    }

    #[cfg(unix)]
    #[task(shared = [kept], local = [kept_local])]
    async fn kept(mut cx: kept::Context, x: u32) {
        let total = cx
            .shared
            .kept
            .lock(|k| *k + x + u32::from(*cx.local.kept_local));
        println!("kept: {total}");
        preempt::exit(0);
    }

    #[cfg(not(unix))]
    #[task(shared = [gone], local = [gone_local])]
    async fn gone(cx: gone::Context) {
        println!("gone ran: {}", cx.shared.gone);
    }
}

/// The RTIC v2 `Mono` patterns, with units on bare integer literals.
#[preempt::app(main = false)]
mod mono_patterns {
    #[init]
    fn init(_: init::Context) -> (Shared, Local) {
        timing::spawn().unwrap();
        (Shared {}, Local {})
    }

    #[task(priority = 2)]
    async fn timing(_: timing::Context) {
        let start = Mono::now();
        Mono::delay(2.millis()).await;
        let after_delay = Mono::now() - start;
        let next = start + 20.millis();
        Mono::delay_until(next).await;
        let after_until = Mono::now();
        let slow = Mono::timeout_after(5.millis(), Mono::delay(2.secs())).await;
        let fast = Mono::timeout_after(2.secs(), async { 5 }).await;
        let at = Mono::timeout_at(Mono::now() + 1.millis(), Mono::delay(1.secs())).await;
        println!("delay waited at least 2 ms: {}", after_delay >= 2.millis());
        println!("delay_until reached its instant: {}", after_until >= next);
        println!("slow timed out: {}", slow.is_err());
        println!("fast: {:?}", fast.ok());
        println!("at timed out: {}", at.is_err());
        preempt::exit(0);
    }
}

#[test]
fn child() {
    run_requested_app(&[
        ("zero_priority", zero_priority::run),
        ("cfg_items", cfg_items::run),
        ("mono_patterns", mono_patterns::run),
    ]);
}

#[test]
fn priority_zero_tasks_run_on_a_sched_other_thread() {
    let stdout = run_child_ok("zero_priority", &[], 1, Duration::from_secs(30));
    assert!(
        stdout.contains("order: [\"urgent\", \"background\"]\n"),
        "{stdout}"
    );
    // SCHED_OTHER at whatever nice value the test itself runs at (a CI job may be niced).
    assert!(
        stdout.contains("background policy: Other { nice: "),
        "{stdout}"
    );
}

#[test]
fn cfg_keeps_enabled_resources_and_tasks_and_drops_the_others() {
    let stdout = run_child_ok("cfg_items", &[], 1, Duration::from_secs(30));
    // The child's stdout starts with the test harness's own lines.
    assert!(stdout.ends_with("child ... kept: 43\n"), "{stdout}");
    assert!(!stdout.contains("gone"), "{stdout}");
}

#[test]
fn mono_now_delay_delay_until_and_timeouts_behave_as_in_rtic() {
    let stdout = run_child_ok("mono_patterns", &[], 2, Duration::from_secs(30));
    assert!(
        stdout.ends_with(
            "child ... delay waited at least 2 ms: true\ndelay_until reached its instant: true\n\
         slow timed out: true\nfast: Some(5)\nat timed out: true\n"
        ),
        "{stdout}"
    );
}
