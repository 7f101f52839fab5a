//! Observation, not a timing: does linux-rtic 0.1.1 run same-priority tasks in spawn order?
//!
//! `init` spawns one task `--spawns` times (16 by default, at most 64) with the arguments
//! 0, 1, 2, …; the task records the order it actually runs in. The line printed is
//!
//! ```text
//! observation=rtic_spawn_order spawns=16 fifo=<true|false> ran=<comma-separated args>
//! ```
//!
//! futex-queue keeps ready items in a heapless `BinaryHeap` whose `Ord` calls every pair of
//! immediate items "less" than each other, so the heap's sift order, not the spawn order,
//! decides who runs next (issue 3 saw `15 14 9 11 4 …`). The exit code is 0 either way.

// linux-rtic's `#[rtic::app]` expands to undocumented items and tests `feature = "profiling"`
// of THIS crate; neither is ours to fix.
#![allow(missing_docs, unexpected_cfgs)]

#[rtic::app]
mod app {
    /// Must match the `capacity` of `record` below.
    const MAX_SPAWNS: u64 = 64;

    #[shared]
    struct Shared {}

    #[local]
    struct Local {
        ran: Vec<u32>,
        spawns: usize,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        let spawns = preempt_peers::cli::parse_or_exit(
            "--spawns",
            16,
            "Spawn-order observation on linux-rtic 0.1.1 (same-priority tasks)",
        );
        if spawns > MAX_SPAWNS {
            eprintln!("error: `--spawns {spawns}` exceeds the task capacity; at most {MAX_SPAWNS}");
            std::process::exit(2);
        }
        preempt_peers::sys::require_fifo_or_exit(1);
        let spawns = u32::try_from(spawns).expect("at most MAX_SPAWNS");
        for i in 0..spawns {
            if record::spawn(i).is_err() {
                eprintln!("error: spawn {i} of {spawns} was refused (queue full)");
                std::process::exit(1);
            }
        }
        let spawns = usize::try_from(spawns).expect("u32 fits in usize on Linux targets");
        (
            Shared {},
            Local {
                ran: Vec::with_capacity(spawns),
                spawns,
            },
            init::Monotonics(),
        )
    }

    #[task(priority = 1, capacity = 64, local = [ran, spawns])]
    fn record(cx: record::Context, i: u32) {
        cx.local.ran.push(i);
        if cx.local.ran.len() == *cx.local.spawns {
            let fifo = cx.local.ran.windows(2).all(|w| w[0] < w[1]);
            let ran: Vec<String> = cx.local.ran.iter().map(u32::to_string).collect();
            println!(
                "observation=rtic_spawn_order spawns={} fifo={fifo} ran={}",
                cx.local.spawns,
                ran.join(",")
            );
            std::process::exit(0);
        }
    }
}
