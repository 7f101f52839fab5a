//! Error kinds and the process exit codes they map to.
//!
//! Errors travel as `anyhow::Error` with context; `main` prints them as `preempt: {:#}` (the
//! whole context chain on one line) and picks the exit code from the first typed cause found
//! in the chain:
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | success (also when stdout is a closed pipe, e.g. `preempt check \| head -1`) |
//! | 1    | the run failed (I/O error, measurement error) |
//! | 2    | bad usage: unknown flag, bad value, impossible combination, an input file that is missing, a directory or unreadable |
//! | 3    | missing privilege (SCHED_FIFO/DEADLINE refused, tracefs not writable) |
//! | 4    | `preempt check` found at least one `fail` item |
//! | 5    | `preempt compare --baseline` found a figure worse than `--max-ratio` allows; `preempt compare A… -- B…` found a metric `worse` |
//! | 6    | `preempt compare A… -- B…` found a metric `inconclusive` (and none `worse`) |
//! | 130  | interrupted by Ctrl-C, SIGINT (results measured so far were still written, marked `interrupted`) |
//! | 143  | stopped by SIGTERM (as 130: results so far written and marked) |
//!
//! This table, [`EXIT_CODES_HELP`] (printed by `--help`) and the constants below are the one
//! place the codes are defined; every subcommand returns these constants.
//!
//! ```
//! use preempt_cli::error::{exit_code_of, UsageError};
//! let e = anyhow::Error::new(UsageError("--priority 120 is out of range".into()));
//! assert_eq!(exit_code_of(&e), 2);
//! ```

use std::fmt;
use std::io;

use preempt_io::sys::caps;
use preempt_io::sys::sched::Policy;

/// Exit code: success.
pub(crate) const EXIT_OK: u8 = 0;
/// Exit code: the run failed.
pub(crate) const EXIT_FAILURE: u8 = 1;
/// Exit code: bad usage.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: missing privilege.
pub(crate) const EXIT_PRIVILEGE: u8 = 3;
/// Exit code: `check` found a failing item.
pub(crate) const EXIT_CHECK_FAILED: u8 = 4;
/// Exit code: compare found a regression beyond `--max-ratio`.
pub const EXIT_REGRESSION: u8 = 5;
/// Exit code: a comparison of two sets of runs could not decide a metric (and found none worse).
pub const EXIT_INCONCLUSIVE: u8 = 6;
// Interrupted runs exit 130 (SIGINT) or 143 (SIGTERM): `preempt_io::sys::signal::exit_code_for_signal`.

/// The exit-code table for `--help`.
pub const EXIT_CODES_HELP: &str = "Exit codes:\n  0    success (also when stdout is a closed pipe)\n  \
1    the run failed\n  2    bad usage (unknown flag, bad value, impossible combination, an input file \
that is missing, a directory or unreadable)\n  \
3    missing privilege (real-time policy refused, tracefs not writable)\n  \
4    `preempt check` found a failing item\n  \
5    `preempt compare` found a regression beyond --max-ratio, or a metric worse (A… -- B…)\n  \
6    `preempt compare A… -- B…` found a metric inconclusive (none worse)\n  \
130  interrupted by Ctrl-C (results measured so far were written, marked interrupted)\n  \
143  stopped by SIGTERM (likewise)";

/// Bad command-line input: a value out of range or an impossible combination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for UsageError {}

/// The kernel refused an operation for lack of privilege; the message names the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrivilegeError(pub String);

impl fmt::Display for PrivilegeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for PrivilegeError {}

/// Shorthand for a usage error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// Whether an error chain contains a broken pipe (stdout closed by the reader).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// The exit code for an error chain.
pub fn exit_code_of(err: &anyhow::Error) -> u8 {
    if is_broken_pipe(err) {
        EXIT_OK
    } else if err.chain().any(|c| c.is::<UsageError>()) {
        EXIT_USAGE
    } else if err.chain().any(|c| c.is::<PrivilegeError>()) {
        EXIT_PRIVILEGE
    } else {
        EXIT_FAILURE
    }
}

/// What grants `policy` to an unprivileged process, per the kernel's rules
/// (`sched_setscheduler(2)`, `sched(7)`, `setpriority(2)`): SCHED_FIFO/RR up to priority P need
/// RLIMIT_RTPRIO >= P or CAP_SYS_NICE; SCHED_DEADLINE needs CAP_SYS_NICE (no limit grants it);
/// a negative nice N needs CAP_SYS_NICE or RLIMIT_NICE >= 20 - N.
///
/// "Run as root" is offered only to a process that is not root: a root process that lacks
/// CAP_SYS_NICE had it dropped (a container, a unit's capability bounding set).
pub fn privilege_hint(policy: &Policy) -> String {
    let setcap = if caps::is_root() {
        // No `--flag` here: the hint is printed by commands that have their own flags, and a
        // container runtime's would read as one of theirs.
        "grant CAP_SYS_NICE back to this root process where it is started (a container: \
         cap_add SYS_NICE; systemd: AmbientCapabilities=CAP_SYS_NICE)"
    } else {
        "run as root or grant CAP_SYS_NICE (sudo setcap cap_sys_nice,cap_ipc_lock+ep $(which preempt))"
    };
    match policy {
        Policy::Fifo { priority } | Policy::RoundRobin { priority } => format!(
            "{setcap}, or raise RLIMIT_RTPRIO to at least {priority} (ulimit -r {priority}, or \
             `<user> - rtprio {priority}` in /etc/security/limits.conf)"
        ),
        Policy::Deadline { .. } => {
            format!("SCHED_DEADLINE needs CAP_SYS_NICE (RLIMIT_RTPRIO does not grant it): {setcap}")
        }
        Policy::Other { nice } | Policy::Batch { nice } if *nice < 0 => format!(
            "nice {nice} needs CAP_SYS_NICE or RLIMIT_NICE >= {} (ulimit -e {}): {setcap}",
            20 - nice,
            20 - nice
        ),
        _ => setcap.to_string(),
    }
}

/// Turns a "permission denied" from setting `policy` (shown as `what`) into a
/// [`PrivilegeError`]: for a real-time policy the error of `sched::set_thread_policy` already
/// names the cause the kernel refused for and its fix (`sys::rtcause`: privileges, a cpu
/// cgroup without real-time budget, ...), otherwise the capability or limit
/// ([`privilege_hint`]); other errors pass through with context.
pub(crate) fn policy_error(err: io::Error, policy: &Policy, what: &str) -> anyhow::Error {
    if err.kind() == io::ErrorKind::PermissionDenied && policy.is_real_time() {
        anyhow::Error::new(PrivilegeError(format!(
            "cannot set {what}: permission denied; {err}"
        )))
    } else if err.kind() == io::ErrorKind::PermissionDenied {
        anyhow::Error::new(PrivilegeError(format!(
            "cannot set {what}: permission denied; {}",
            privilege_hint(policy)
        )))
    } else if err.raw_os_error() == Some(libc_ebusy()) {
        anyhow::anyhow!(
            "cannot set {what}: admission control refused the bandwidth (EBUSY); lower \
             --runtime or raise --period, or check /proc/sys/kernel/sched_rt_runtime_us"
        )
    } else {
        anyhow::Error::new(err).context(format!("cannot set {what}"))
    }
}

const fn libc_ebusy() -> i32 {
    16 // EBUSY on every Linux architecture (asm-generic/errno-base.h)
}
