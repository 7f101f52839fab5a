//! Shared plumbing for the peer and raw-baseline benchmark binaries of preempt (issue 3).
//!
//! Every binary in `src/bin/` reproduces one figure of the thesis's §6.2 on the peer crates
//! (`linux-rtic` 0.1.1, `futex-queue` 0.1.1, `pcp-mutex` 0.2.0) or measures the raw kernel /
//! data-structure floor that preempt is compared against. They all:
//!
//! * take their size from one flag (`--iterations N` or `--samples N`, see [`cli`]);
//! * print one machine-readable line per figure through [`report`]:
//!   `figure=<name> ns_per_op=<f64> samples=<n>` (extra `key=value` fields may follow);
//! * append `_pinned` to the figure name when the process may run on exactly one CPU
//!   (e.g. under `taskset -c 0`), so pinned and unpinned runs never mix in a table.
//!
//! `scripts/bench_framework.sh` (at the repository root) runs them and computes the ratios.
//!
//! ```
//! // The figure-name rule the script relies on:
//! assert_eq!(preempt_peers::report::figure_name("raw_futex_pingpong", 1), "raw_futex_pingpong_pinned");
//! assert_eq!(preempt_peers::report::figure_name("raw_futex_pingpong", 2), "raw_futex_pingpong");
//! ```

pub mod cli;
pub mod report;
pub mod sys;
pub mod table;
