//! Executor backends: io_uring (preferred) and epoll + plain syscalls (fallback).
//!
//! `BackendChoice::Auto` tries io_uring and falls back to epoll where io_uring is unavailable:
//! `kernel.io_uring_disabled = 2` (or 1 without the allowed group), a seccomp filter that
//! rejects `io_uring_setup` (containers), or a kernel too old for the opcodes we need. The
//! reason for the choice is kept in [`BackendInfo::reason`] so programs and tests can show or
//! check it; nothing is only printed. `PREEMPT_RTIO_BACKEND=epoll|io_uring` overrides `Auto`.

mod epoll;
mod uring;

use std::io;
use std::os::fd::BorrowedFd;

use super::core::{Core, RtioConfig};
use super::iodev::MultishotMode;
use crate::sys::fdio::FileKind;

pub use super::types::BackendChoice;

/// The backend in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// io_uring.
    IoUring,
    /// epoll + syscalls.
    Epoll,
}

/// The backend a context runs on and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendInfo {
    /// Backend.
    pub kind: BackendKind,
    /// Why this backend (e.g. "io_uring_setup failed: Operation not permitted (kernel.io_uring_disabled = 2)").
    pub reason: String,
    /// Features in use or missing, one line each (single issuer, defer taskrun, provided
    /// buffer ring, multishot read, eventfd notification).
    pub features: Vec<String>,
}

pub(crate) enum Engine {
    Uring(Box<uring::UringEngine>),
    Epoll(epoll::EpollEngine),
}

/// Reads `/proc/sys/kernel/io_uring_disabled` (absent on kernels before 6.6).
pub fn io_uring_disabled_sysctl() -> Option<u8> {
    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()?
        .trim()
        .parse()
        .ok()
}

pub(crate) fn create(cfg: &RtioConfig, core: &mut Core) -> io::Result<Engine> {
    let mut choice = cfg.backend;
    let mut why_env = None;
    if choice == BackendChoice::Auto {
        match std::env::var("PREEMPT_RTIO_BACKEND").as_deref() {
            Ok("epoll") => {
                choice = BackendChoice::Epoll;
                why_env = Some("PREEMPT_RTIO_BACKEND=epoll");
            }
            Ok("io_uring") => choice = BackendChoice::IoUring,
            _ => {}
        }
    }
    match choice {
        BackendChoice::Epoll => {
            let reason = why_env
                .unwrap_or("forced by RtioConfig::backend = Epoll")
                .to_owned();
            Ok(Engine::Epoll(epoll::EpollEngine::new(reason)?))
        }
        BackendChoice::IoUring => Ok(Engine::Uring(Box::new(uring::UringEngine::new(
            cfg,
            core,
            "forced".into(),
        )?))),
        BackendChoice::Auto => {
            let sysctl = io_uring_disabled_sysctl();
            if sysctl == Some(2) {
                let reason =
                    "kernel.io_uring_disabled = 2 (io_uring disabled for all processes)".to_owned();
                return Ok(Engine::Epoll(epoll::EpollEngine::new(reason)?));
            }
            match uring::UringEngine::new(cfg, core, "auto: io_uring works here".into()) {
                Ok(e) => Ok(Engine::Uring(Box::new(e))),
                Err(e) => {
                    let reason = format!(
                        "io_uring unavailable, using epoll: {e} (kernel.io_uring_disabled = {}; a seccomp filter or an old kernel also cause this)",
                        sysctl.map_or("absent".to_owned(), |v| v.to_string())
                    );
                    Ok(Engine::Epoll(epoll::EpollEngine::new(reason)?))
                }
            }
        }
    }
}

impl Engine {
    pub(crate) fn info(&self) -> &BackendInfo {
        match self {
            Engine::Uring(e) => &e.info,
            Engine::Epoll(e) => &e.info,
        }
    }

    pub(crate) fn multishot_mode_for(&self, kind: FileKind) -> MultishotMode {
        match self {
            Engine::Uring(e) => e.multishot_mode_for(kind),
            Engine::Epoll(_) => {
                MultishotMode::PollThenRead("epoll backend: readiness, then read()".into())
            }
        }
    }

    pub(crate) fn enable(&mut self, core: &mut Core) -> io::Result<()> {
        match self {
            Engine::Uring(e) => e.enable(core),
            Engine::Epoll(e) => e.enable(core),
        }
    }

    pub(crate) fn notify_fd(&self) -> BorrowedFd<'_> {
        match self {
            Engine::Uring(e) => e.notify_fd(),
            Engine::Epoll(e) => e.notify_fd(),
        }
    }

    pub(crate) fn kernel_overflow(&self) -> u64 {
        match self {
            Engine::Uring(e) => e.kernel_overflow(),
            Engine::Epoll(_) => 0,
        }
    }

    pub(crate) fn poll(&mut self, core: &mut Core, wait: bool) -> io::Result<()> {
        match self {
            Engine::Uring(e) => e.poll(core, wait),
            Engine::Epoll(e) => e.poll(core, wait),
        }
    }

    /// Waits until the kernel posted `want` completions or `timeout_ns` passed (one wake-up
    /// for several devices on io_uring; see `Rtio::submit_coalesced`).
    pub(crate) fn poll_many(
        &mut self,
        core: &mut Core,
        want: usize,
        timeout_ns: u64,
    ) -> io::Result<()> {
        match self {
            Engine::Uring(e) => e.poll_many(core, want, timeout_ns),
            Engine::Epoll(e) => e.poll_timeout(core, timeout_ns),
        }
    }

    /// Whether a non-waiting poll would find work (see `Rtio::run_pending`).
    pub(crate) fn work_pending(&mut self) -> bool {
        match self {
            Engine::Uring(e) => e.work_pending(),
            Engine::Epoll(_) => true,
        }
    }

    pub(crate) fn issue(&mut self, core: &mut Core, idx: u16) {
        match self {
            Engine::Uring(e) => e.issue(core, idx),
            Engine::Epoll(e) => e.issue(core, idx),
        }
    }

    pub(crate) fn delay(&mut self, core: &mut Core, idx: u16) {
        match self {
            Engine::Uring(e) => e.issue(core, idx),
            Engine::Epoll(e) => e.delay(core, idx),
        }
    }

    pub(crate) fn cancel(&mut self, core: &mut Core, idx: u16) {
        match self {
            Engine::Uring(e) => e.cancel(core, idx),
            Engine::Epoll(e) => e.cancel(core, idx),
        }
    }

    pub(crate) fn recycle_block(&mut self, core: &mut Core, id: u16) {
        match self {
            Engine::Uring(e) => e.recycle_block(core, id),
            Engine::Epoll(e) => e.recycle_block(core, id),
        }
    }
}
