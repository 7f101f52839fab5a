//! Helpers shared by the real-thread tests: SCHED_FIFO, CPU pinning, a watchdog, a PRNG.
#![allow(dead_code, reason = "each test binary uses a subset")]

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

/// Puts the calling thread under SCHED_FIFO at `priority`. `false` (and nothing changed)
/// if not permitted (no CAP_SYS_NICE / RLIMIT_RTPRIO).
pub(crate) fn set_fifo(priority: i32) -> bool {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pthread_self() is the calling thread; `param` is a valid sched_param.
    // pthread_setschedparam returns the error number instead of setting errno.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    rc == 0
}

/// Whether CI's rule holds (`PREEMPT_REQUIRE_PRIVILEGED=1`): a test that lacks a privilege
/// fails instead of skipping.
pub(crate) fn privileges_required() -> bool {
    std::env::var("PREEMPT_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1")
}

/// Whether this process may use SCHED_FIFO (tried on a throw-away thread).
pub(crate) fn fifo_permitted() -> bool {
    std::thread::spawn(|| set_fifo(1)).join().unwrap()
}

/// Pins the calling thread to `cpu`; `false` if that CPU is not allowed here.
pub(crate) fn pin_to_cpu(cpu: usize) -> bool {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE is checked by the caller's choice of 0; CPU_SET writes
    // only into `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 = calling thread; `set` is valid for size_of::<cpu_set_t>() bytes.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    rc == 0
}

/// Runs `f` and fails the whole test process (exit code 101, like a failed test) if it
/// does not finish within `limit`, so that a livelock or deadlock never hangs CI. Returns
/// `f`'s result; a panic in `f` is propagated.
pub(crate) fn with_watchdog<R: Send + 'static>(
    name: &str,
    limit: Duration,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        // The receiver may have given up (timeout path exits the process anyway).
        let _ = tx.send(());
        r
    });
    match rx.recv_timeout(limit) {
        Ok(()) => match worker.join().unwrap() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(_) => {
            // Straight to the stderr handle: libtest captures the test thread's eprintln!
            // and would drop it at the exit below.
            let mut err = std::io::stderr().lock();
            let _ = writeln!(
                err,
                "WATCHDOG: {name} did not finish within {limit:?}: deadlock or livelock"
            );
            let _ = write!(err, "{}", thread_states());
            let _ = writeln!(err, "{}", demote_other_threads());
            std::process::exit(101);
        }
    }
}

/// Puts every other thread of this process under SCHED_OTHER, so that the watchdog's exit
/// can end the process. `exit_group`'s SIGKILL takes effect only where a thread leaves the
/// kernel; a thread that spins inside a system call at the top real-time priority of its CPU
/// (seen on the PREEMPT_RT arm64 guest: a SCHED_FIFO 13 thread with 103 s of system time in
/// `FUTEX_LOCK_PI`, the thread it waited for preempted on the same CPU inside
/// `FUTEX_UNLOCK_PI`) never lets the lower thread finish what its retry waits for, so the
/// process never died and the guest's console went silent. Demoted, the lower thread runs,
/// the retry ends and the kill is delivered. Returns what it did, for the watchdog's report.
pub(crate) fn demote_other_threads() -> String {
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return "demote: cannot read /proc/self/task".into();
    };
    let param = libc::sched_param { sched_priority: 0 };
    let (mut done, mut failed) = (0, Vec::new());
    for task in tasks.flatten() {
        let Ok(tid) = task.file_name().to_string_lossy().parse::<libc::pid_t>() else {
            continue;
        };
        if tid == me {
            continue;
        }
        // SAFETY: `param` is a valid sched_param; a tid that has exited gives ESRCH.
        if unsafe { libc::sched_setscheduler(tid, libc::SCHED_OTHER, &param) } == 0 {
            done += 1;
        } else {
            failed.push(format!("{tid}: {}", std::io::Error::last_os_error()));
        }
    }
    format!("watchdog: {done} other threads put under SCHED_OTHER before exit; failed: {failed:?}")
}

/// One line per thread of this process: its id, name, scheduler state (`R` running or
/// runnable, `S` asleep), kernel wait channel, policy and real-time priority, its CPU time in
/// user space and in the kernel (clock ticks), and `/proc/TID/syscall` (the system call it is
/// in, or `running`), so that a watchdog's failure tells a deadlock (every thread asleep on a
/// futex) from a livelock (threads running and their CPU time growing), and a spin in user
/// space (utime growing) from one in the kernel (stime growing, inside the named call).
pub(crate) fn thread_states() -> String {
    let mut out =
        String::from("threads (tid name state wchan policy rt_priority utime stime syscall):\n");
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out + "  (cannot read /proc/self/task)\n";
    };
    for task in tasks.flatten() {
        let dir = task.path();
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let wchan = std::fs::read_to_string(dir.join("wchan")).unwrap_or_default();
        // comm may hold spaces and parentheses: the fields after it follow the last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = &stat[open + 1..close];
        let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // Fields after comm, 0-based: state 0, utime 11, stime 12, rt_priority 37, policy 38.
        let field = |i: usize| f.get(i).copied().unwrap_or("?");
        let syscall = std::fs::read_to_string(dir.join("syscall")).unwrap_or_default();
        let policy = match field(38) {
            "0" => "OTHER",
            "1" => "FIFO",
            "2" => "RR",
            "3" => "BATCH",
            "5" => "IDLE",
            "6" => "DEADLINE",
            other => other,
        };
        out += &format!(
            "  {} {name} {} {} {policy} {} {} {} {}\n",
            task.file_name().to_string_lossy(),
            field(0),
            if wchan.is_empty() {
                "-"
            } else {
                wchan.as_str()
            },
            field(37),
            field(11),
            field(12),
            syscall.trim(),
        );
    }
    out
}

/// Multiplier for stress-test sizes from `PREEMPT_STRESS_SCALE` (default 1), for long
/// manual runs such as `PREEMPT_STRESS_SCALE=50 cargo test --release --test pcp_stress`.
pub(crate) fn stress_scale() -> u64 {
    match std::env::var("PREEMPT_STRESS_SCALE") {
        Err(_) => 1,
        Ok(s) => s.parse().unwrap_or_else(|_| {
            panic!("PREEMPT_STRESS_SCALE must be a positive integer, got {s:?}")
        }),
    }
}

/// Set to `1` by `scripts/rt_guests.py` in its qemu-system guests, whose CPU is emulated (qemu
/// TCG) on a host that may starve it: the stress tests there prove progress on the real
/// kernel's futexes (PI futexes on PREEMPT_RT's rt_mutex), not throughput, so they run
/// [`rounds`]' fewer rounds under [`watchdog_limit`]'s longer watchdog. Unset (natively, CI's
/// host runs) both are the native values.
pub(crate) const EMULATED_CPU_ENV: &str = "PREEMPT_EMULATED_CPU";

/// Divisor of the round counts under [`EMULATED_CPU_ENV`].
pub(crate) const EMULATED_ROUNDS_DIVISOR: u64 = 10;

/// Multiplier of the watchdogs under [`EMULATED_CPU_ENV`].
pub(crate) const EMULATED_WATCHDOG_FACTOR: u32 = 3;

/// Whether [`EMULATED_CPU_ENV`] is `1` (any other value but unset is refused).
pub(crate) fn emulated_cpu() -> bool {
    match std::env::var(EMULATED_CPU_ENV) {
        Err(_) => false,
        Ok(v) if v == "1" => true,
        Ok(v) if v == "0" => false,
        Ok(v) => panic!("{EMULATED_CPU_ENV} must be 1 (an emulated CPU) or 0, got {v:?}"),
    }
}

/// A test's round count: `native`, or `native / EMULATED_ROUNDS_DIVISOR` on an emulated CPU.
pub(crate) fn rounds(native: u64) -> u64 {
    if emulated_cpu() {
        (native / EMULATED_ROUNDS_DIVISOR).max(1)
    } else {
        native
    }
}

/// A watchdog's limit: `native`, or `native * EMULATED_WATCHDOG_FACTOR` on an emulated CPU
/// (a hang still fails, later).
pub(crate) fn watchdog_limit(native: Duration) -> Duration {
    if emulated_cpu() {
        native * EMULATED_WATCHDOG_FACTOR
    } else {
        native
    }
}

/// Sleeps until the absolute monotonic time `deadline` (a futex wait nobody wakes).
pub(crate) fn sleep_until(deadline: u64) {
    let never = preempt_sync::event::Event::new();
    while preempt_sync::clock::now_ns() < deadline {
        never.wait_until(Some(deadline));
    }
}

/// xorshift64*: a tiny deterministic PRNG for random lock orders.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(crate) fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}
