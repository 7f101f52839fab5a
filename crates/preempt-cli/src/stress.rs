//! Built-in stress with a bounded lifetime.
//!
//! Stressors run in a child process (`preempt __stress`, or `stress-ng` when asked for) so
//! they compete with the measurement like any other software would, share none of its
//! memory locks, and cannot outlive it:
//! - the child gets `PR_SET_PDEATHSIG = SIGKILL` (via `preempt_io::sys::process`), so it dies
//!   when the run dies, even on SIGKILL or a crash;
//! - [`StressGuard`] kills and reaps it when dropped (end of run, Ctrl-C, error or panic
//!   unwinding);
//! - the worker also exits by itself after `--timeout-s`;
//! - its I/O file is unlinked at creation, so nothing is left on disk.
//!
//! The kinds ([`StressKind`]): `cpu` spins one thread per CPU; `memory` streams one thread per
//! CPU through a buffer twice the last-level cache (so every pass misses); `io` writes 1 MiB
//! blocks and fsyncs each; `sched` is a hackbench-like storm of groups of sender and
//! receiver threads exchanging 100-byte messages over socket pairs (hackbench's default
//! transport).

use std::hint::black_box;
use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use anyhow::{Context, Result};
use preempt_io::sys::clock::{ClockId, monotonic_now_ns, sleep_until_ns};
use preempt_io::sys::{cpu, process};

use crate::config::{StressConfig, StressKind, StressTool, kind_name};
use crate::procfs;

/// Safety net on the worker's life when the parent forgets to stop it: one day.
pub(crate) const DEFAULT_TIMEOUT_S: u64 = 86_400;

/// A running stress process; killed and reaped on drop.
#[derive(Debug)]
pub struct StressGuard {
    child: Child,
    /// What runs, e.g. `builtin: cpu,memory`.
    pub description: String,
}

impl StressGuard {
    /// Starts the stressors of `cfg` (returns `None` when none are configured) and waits
    /// until they run.
    pub(crate) fn start(cfg: &StressConfig) -> Result<Option<Self>> {
        if cfg.kinds.is_empty() {
            return Ok(None);
        }
        let names = cfg.names().join(",");
        let mut cmd = match cfg.tool {
            StressTool::Builtin => {
                let exe = std::env::current_exe().context("cannot find the preempt executable")?;
                let mut c = Command::new(exe);
                c.args([
                    "__stress",
                    "--kinds",
                    &names,
                    "--timeout-s",
                    &DEFAULT_TIMEOUT_S.to_string(),
                ]);
                c
            }
            StressTool::StressNg => stress_ng_command(&cfg.kinds)?,
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = process::spawn_with_fds(&mut cmd, &[]).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound && cfg.tool == StressTool::StressNg {
                anyhow::anyhow!(
                    "--stress-tool stress-ng: stress-ng is not installed (apt install stress-ng), \
                     or use --stress-tool builtin"
                )
            } else {
                anyhow::Error::new(e).context("cannot start the stress process")
            }
        })?;
        if cfg.tool == StressTool::Builtin {
            // The worker prints "ready" once every stressor thread runs.
            let mut line = String::new();
            let stdout = child.stdout.take().context("stress worker has no stdout")?;
            BufReader::new(stdout)
                .read_line(&mut line)
                .context("stress worker did not start")?;
            if line.trim() != "ready" {
                let _ = child.kill(); // already failing; the error below says why
                let _ = child.wait();
                anyhow::bail!("stress worker failed to start");
            }
        } else {
            // stress-ng has no readiness signal; give its workers time to fork and spin up.
            let t = monotonic_now_ns() + 500_000_000;
            sleep_until_ns(ClockId::Monotonic, t).context("clock_nanosleep")?;
        }
        Ok(Some(Self {
            child,
            description: format!("{}: {names}", cfg.tool_name()),
        }))
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for StressGuard {
    fn drop(&mut self) {
        // Kill fails only if the child already exited; wait reaps it either way.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn stress_ng_command(kinds: &[StressKind]) -> Result<Command> {
    let mut c = Command::new("stress-ng");
    c.args(["--timeout", &format!("{DEFAULT_TIMEOUT_S}s"), "--quiet"]);
    for k in kinds {
        match k {
            StressKind::Cpu => c.args(["--cpu", "0"]),
            StressKind::Memory => c.args(["--stream", "0"]),
            StressKind::Io => c.args(["--hdd", "1", "--hdd-opts", "fsync"]),
            StressKind::Sched => c.args(["--sock", "0"]),
            StressKind::All => unreachable!("StressConfig expands `all`"),
        };
    }
    Ok(c)
}

/// The worker process: runs the stressors until killed or `timeout_s` passes.
pub(crate) fn run_worker(kinds: &[StressKind], timeout_s: u64) -> Result<()> {
    let cfg = StressConfig::new(kinds, StressTool::Builtin);
    let n = cpu::online_cpus().map(|c| c.len()).unwrap_or(1).max(1);
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for &kind in &cfg.kinds {
        match kind {
            StressKind::Cpu => {
                for i in 0..n {
                    let stop = Arc::clone(&stop);
                    handles.push(spawn(format!("stress-cpu{i}"), move || spin(&stop))?);
                }
            }
            StressKind::Memory => {
                let bytes =
                    usize::try_from(procfs::last_level_cache_bytes().unwrap_or(8 << 20) * 2)
                        .unwrap_or(usize::MAX)
                        .max(16 << 20);
                for i in 0..n {
                    let stop = Arc::clone(&stop);
                    handles.push(spawn(format!("stress-mem{i}"), move || {
                        stream(&stop, bytes)
                    })?);
                }
            }
            StressKind::Io => {
                let stop = Arc::clone(&stop);
                let file = tempfile::tempfile().context("cannot create the I/O stress file")?;
                handles.push(spawn("stress-io".into(), move || {
                    if let Err(e) = write_fsync(&stop, file) {
                        eprintln!("preempt: io stressor stopped: {e}");
                    }
                })?);
            }
            StressKind::Sched => {
                for g in 0..2 * n {
                    handles.extend(message_group(g, &stop)?);
                }
            }
            StressKind::All => unreachable!("StressConfig expands `all`"),
        }
    }
    println!("ready");
    std::io::stdout().flush().context("stdout")?;
    let end = monotonic_now_ns().saturating_add(timeout_s.saturating_mul(1_000_000_000));
    sleep_until_ns(ClockId::Monotonic, end).context("clock_nanosleep")?;
    stop.store(true, Relaxed);
    // Stressors blocked in a socket read may never return: exit without joining them.
    std::process::exit(0)
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name)
        .spawn(f)
        .context("cannot spawn a stressor thread")
}

fn spin(stop: &AtomicBool) {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    while !stop.load(Relaxed) {
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        black_box(x);
    }
}

fn stream(stop: &AtomicBool, bytes: usize) {
    let mut buf = vec![1u64; bytes / 8];
    let mut round = 0u64;
    while !stop.load(Relaxed) {
        // Read-modify-write with a cache-line stride first, then sequential: both streams.
        for v in buf.iter_mut().step_by(8) {
            *v = v.wrapping_add(round);
        }
        let sum: u64 = buf.iter().fold(0, |a, v| a.wrapping_add(*v));
        black_box(sum);
        round += 1;
    }
}

fn write_fsync(stop: &AtomicBool, mut file: std::fs::File) -> std::io::Result<()> {
    const BLOCK: usize = 1 << 20;
    const WRAP: u64 = 64 << 20;
    let block = vec![0xA5u8; BLOCK];
    let mut written = 0u64;
    while !stop.load(Relaxed) {
        file.write_all(&block)?;
        file.sync_all()?;
        written += BLOCK as u64;
        if written >= WRAP {
            file.rewind()?;
            written = 0;
        }
    }
    Ok(())
}

/// One hackbench group: 4 senders each writing to all 4 receivers.
fn message_group(g: usize, stop: &Arc<AtomicBool>) -> Result<Vec<std::thread::JoinHandle<()>>> {
    const FAN: usize = 4;
    const MSG: usize = 100; // hackbench's default message size
    let mut handles = Vec::new();
    let mut writers = Vec::new();
    for r in 0..FAN {
        let (tx, mut rx) = UnixStream::pair().context("socketpair")?;
        writers.push(tx);
        let stop = Arc::clone(stop);
        handles.push(spawn(format!("stress-rx{g}.{r}"), move || {
            let mut buf = [0u8; MSG];
            while !stop.load(Relaxed) {
                if rx.read_exact(&mut buf).is_err() {
                    break;
                }
            }
        })?);
    }
    for s in 0..FAN {
        let mut outs: Vec<UnixStream> = writers
            .iter()
            .map(UnixStream::try_clone)
            .collect::<std::io::Result<_>>()
            .context("socket clone")?;
        let stop = Arc::clone(stop);
        handles.push(spawn(format!("stress-tx{g}.{s}"), move || {
            let msg = [0x5Au8; MSG];
            while !stop.load(Relaxed) {
                for o in &mut outs {
                    if o.write_all(&msg).is_err() {
                        return;
                    }
                }
            }
        })?);
    }
    Ok(handles)
}

/// The label of a stress configuration for tables: `idle` or the kinds.
pub(crate) fn label(cfg: &StressConfig) -> String {
    if cfg.kinds.is_empty() {
        "idle".into()
    } else {
        cfg.kinds
            .iter()
            .map(|k| kind_name(*k))
            .collect::<Vec<_>>()
            .join(",")
    }
}
