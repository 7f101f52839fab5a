//! `peak_rss --label NAME -- COMMAND [ARGS…]`: runs COMMAND (its output passes through) and
//! prints its peak resident set size as
//!
//! ```text
//! figure=NAME_rss vmhwm_kib=<n> source=<exit-stop|ru_maxrss> ru_maxrss_kib=<n>
//! ```
//!
//! The peak is `VmHWM` from `/proc/<pid>/status`, read at the last moment it exists: the child
//! is started under ptrace with `PTRACE_O_TRACEEXIT`, so its main thread stops inside exit(2)
//! before its memory is torn down, and we read `VmHWM` there (`source=exit-stop`). No other
//! event stops the child (no syscall tracing), so the measured run is not slowed. If the kernel
//! skips that stop (it does when the exit is a group exit started by another thread, which then
//! kills the main thread), the tool falls back to `ru_maxrss` from wait4(2)
//! (`source=ru_maxrss`). That fallback is the same high-water mark but computed from the
//! kernel's per-CPU approximate RSS counters: on this machine it reads 70–160 KiB below `VmHWM`.
//!
//! Exit status: the child's, or 128 + signal number if it was killed (like a shell); 2 for bad
//! usage; 1 if the command could not be started or traced.

use std::io;
use std::os::unix::process::CommandExt as _;
use std::process::Command;

const USAGE: &str = "usage: peak_rss --label NAME -- COMMAND [ARGS...]";

fn usage_error(msg: &str) -> ! {
    eprintln!("peak_rss: {msg}\n{USAGE}");
    std::process::exit(2);
}

fn fail(msg: &str) -> ! {
    eprintln!("peak_rss: {msg}");
    std::process::exit(1);
}

fn ptrace(request: libc::c_uint, pid: libc::pid_t, data: usize) -> io::Result<()> {
    // SAFETY: the requests used (TRACEME, SETOPTIONS, CONT) take no address and an integer
    // `data` (options bits or a signal number); `pid` is our own child or 0 for TRACEME.
    let ret = unsafe { libc::ptrace(request, pid, std::ptr::null_mut::<libc::c_void>(), data) };
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// wait4 on `pid`, retrying on EINTR; `__WALL` so a traced child's stops are reported.
fn wait(pid: libc::pid_t, usage: &mut libc::rusage) -> io::Result<libc::c_int> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` and `usage` are valid and writable for the call; `pid` is our child.
        let ret = unsafe { libc::wait4(pid, &mut status, libc::__WALL, usage) };
        if ret == pid {
            return Ok(status);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut label = None;
    loop {
        match args.next().as_deref() {
            Some("--label") => {
                label = Some(
                    args.next()
                        .unwrap_or_else(|| usage_error("`--label` needs a name")),
                );
            }
            Some("--") => break,
            Some("--help" | "-h") => {
                println!("Runs a command and prints its peak RSS (VmHWM at exit).\n{USAGE}");
                return;
            }
            Some(other) => usage_error(&format!("unknown argument `{other}`")),
            None => usage_error("missing `-- COMMAND`"),
        }
    }
    let label = label.unwrap_or_else(|| usage_error("missing `--label NAME`"));
    let program = args
        .next()
        .unwrap_or_else(|| usage_error("missing COMMAND after `--`"));
    let mut command = Command::new(&program);
    command.args(args);
    // SAFETY: the closure runs in the forked child before exec and only makes one
    // async-signal-safe system call (ptrace), touching no locks or allocator state.
    unsafe {
        command.pre_exec(|| ptrace(libc::PTRACE_TRACEME, 0, 0));
    }
    let child = command
        .spawn()
        .unwrap_or_else(|err| fail(&format!("cannot start `{program}`: {err}")));
    let pid = libc::pid_t::try_from(child.id()).expect("Linux pids fit in pid_t");
    // We reap the child ourselves with wait4 below; `child` is never waited on or killed.

    // SAFETY: rusage is plain old data; all-zero is a valid value for the kernel to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // A traced child stops with SIGTRAP after a successful exec.
    let status = wait(pid, &mut usage).unwrap_or_else(|e| fail(&format!("wait4: {e}")));
    if !(libc::WIFSTOPPED(status) && libc::WSTOPSIG(status) == libc::SIGTRAP) {
        fail(&format!(
            "`{program}` did not stop after exec (wait status {status:#x})"
        ));
    }
    let options = libc::PTRACE_O_TRACEEXIT | libc::PTRACE_O_EXITKILL;
    let options = usize::try_from(options).expect("ptrace options are non-negative");
    ptrace(libc::PTRACE_SETOPTIONS, pid, options)
        .and_then(|()| ptrace(libc::PTRACE_CONT, pid, 0))
        .unwrap_or_else(|e| fail(&format!("ptrace: {e}")));

    let mut vmhwm = None;
    let status = loop {
        let status = wait(pid, &mut usage).unwrap_or_else(|e| fail(&format!("wait4: {e}")));
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            break status;
        }
        // Stopped: either our exit event, or a signal for the child that we pass on.
        let exit_event = libc::SIGTRAP | (libc::PTRACE_EVENT_EXIT << 8);
        let deliver = if status >> 8 == exit_event {
            match std::fs::read_to_string(format!("/proc/{pid}/status")) {
                Ok(text) => vmhwm = preempt_peers::sys::parse_vmhwm_kib(&text),
                Err(err) => eprintln!("peak_rss: reading /proc/{pid}/status at exit: {err}"),
            }
            0
        } else {
            libc::WSTOPSIG(status)
        };
        let deliver = usize::try_from(deliver).expect("signal numbers are positive");
        if let Err(err) = ptrace(libc::PTRACE_CONT, pid, deliver) {
            // ESRCH: the child died (e.g. SIGKILL) between the stop and now; wait4 reports it.
            if err.raw_os_error() != Some(libc::ESRCH) {
                fail(&format!("PTRACE_CONT: {err}"));
            }
        }
    };

    // ru_maxrss is in KiB on Linux (getrusage(2)).
    let ru_maxrss = usage.ru_maxrss;
    match vmhwm {
        Some(kib) => println!(
            "figure={label}_rss vmhwm_kib={kib} source=exit-stop ru_maxrss_kib={ru_maxrss}"
        ),
        None => println!(
            "figure={label}_rss vmhwm_kib={ru_maxrss} source=ru_maxrss ru_maxrss_kib={ru_maxrss}"
        ),
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    std::process::exit(code);
}
