//! The epoll backend: regular files (memfd registers) are read inline — they never block —
//! and pollable descriptors (eventfd, pipes, sockets, IIO buffers) are parked until epoll
//! reports them ready, then read or written with one syscall. Chains run one entry at a time
//! in the executor; delays share one timerfd armed at the earliest absolute deadline.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use super::super::core::{Core, Dev, NONE, State};
use super::super::types::{Block, Op, SqeFlags};
use super::{BackendInfo, BackendKind};
use crate::sys::clock::{self, ClockId};
use crate::sys::epoll::{Epoll, Event, Interest};
use crate::sys::fdio;
use crate::sys::timerfd::TimerFd;

const TOKEN_WAKE: u64 = u64::MAX;
const TOKEN_TIMER: u64 = u64::MAX - 1;

pub(crate) struct EpollEngine {
    pub(crate) info: BackendInfo,
    ep: Epoll,
    timer: TimerFd,
    /// Registered interest per device (None = not registered: not pollable).
    interest: Vec<Option<Interest>>,
}

fn neg_errno(e: &io::Error) -> i32 {
    -e.raw_os_error().unwrap_or(libc::EIO)
}

fn res_of(r: io::Result<usize>) -> i32 {
    match r {
        Ok(n) => i32::try_from(n).unwrap_or(i32::MAX),
        Err(e) => neg_errno(&e),
    }
}

/// Runs the transfer of `idx` with plain syscalls. Returns the result and the mempool block
/// filled (mempool reads). Shared with the io_uring backend's fallback paths.
pub(crate) fn sync_io(core: &mut Core, idx: u16) -> (i32, Option<Block>) {
    let op = core.slots[usize::from(idx)].sqe.op;
    let Some(dev) = op.iodev() else {
        return (-libc::EINVAL, None);
    };
    let Some(Dev::Fd { fd, .. }) = core.devs.get(dev.index()) else {
        return (-libc::EINVAL, None);
    };
    let fd = fd.as_fd();
    let rd = |fd: BorrowedFd<'_>, b: &mut [u8], off: Option<u64>| match off {
        Some(o) => fdio::pread(fd, b, o),
        None => fdio::read(fd, b),
    };
    let wr = |fd: BorrowedFd<'_>, b: &[u8], off: Option<u64>| match off {
        Some(o) => fdio::pwrite(fd, b, o),
        None => fdio::write(fd, b),
    };
    match op {
        Op::Read {
            buf: Some(b),
            len,
            offset,
            ..
        } => (
            res_of(rd(
                fd,
                &mut core.buffers[usize::from(b.0)][..len as usize],
                offset,
            )),
            None,
        ),
        Op::Read {
            buf: None,
            len,
            offset,
            ..
        } => {
            let Some(id) = core.mempool.take() else {
                core.stats.mempool_exhausted += 1;
                return (-libc::ENOBUFS, None);
            };
            let r = res_of(rd(
                fd,
                &mut core.mempool.block_mut(id)[..len as usize],
                offset,
            ));
            (
                r,
                Some(Block {
                    id,
                    len: r.max(0).unsigned_abs(),
                }),
            )
        }
        Op::Write {
            buf, len, offset, ..
        } => (
            res_of(wr(
                fd,
                &core.buffers[usize::from(buf.0)][..len as usize],
                offset,
            )),
            None,
        ),
        Op::TinyWrite {
            data, len, offset, ..
        } => (res_of(wr(fd, &data[..usize::from(len)], offset)), None),
        Op::Transceive {
            tx,
            rx,
            len,
            offset,
            ..
        } => {
            let w = res_of(wr(
                fd,
                &core.buffers[usize::from(tx.0)][..len as usize],
                offset,
            ));
            if w < 0 {
                return (w, None);
            }
            (
                res_of(rd(
                    fd,
                    &mut core.buffers[usize::from(rx.0)][..len as usize],
                    offset,
                )),
                None,
            )
        }
        _ => (-libc::EINVAL, None),
    }
}

impl EpollEngine {
    pub(crate) fn new(reason: String) -> io::Result<EpollEngine> {
        Ok(EpollEngine {
            info: BackendInfo {
                kind: BackendKind::Epoll,
                reason,
                features: vec![
                    "chains run entry by entry in the executor".into(),
                    "delays on one CLOCK_MONOTONIC timerfd (absolute)".into(),
                    "multishot = level-triggered readiness + read".into(),
                ],
            },
            ep: Epoll::new()?,
            timer: TimerFd::new(ClockId::Monotonic, true)?,
            interest: Vec::new(),
        })
    }

    pub(crate) fn enable(&mut self, core: &mut Core) -> io::Result<()> {
        self.ep
            .add(core.signals.wake.as_fd(), Interest::READ, TOKEN_WAKE)?;
        self.ep
            .add(self.timer.as_fd(), Interest::READ, TOKEN_TIMER)?;
        self.interest = Vec::with_capacity(core.devs.len());
        for (i, d) in core.devs.iter().enumerate() {
            let reg = match d {
                Dev::Fd { fd, info } if info.pollable => {
                    self.ep.add(fd.as_fd(), Interest::NONE, i as u64)?;
                    Some(Interest::NONE)
                }
                _ => None,
            };
            self.interest.push(reg);
        }
        Ok(())
    }

    pub(crate) fn notify_fd(&self) -> BorrowedFd<'_> {
        self.ep.as_fd()
    }

    fn pollable(core: &Core, idx: u16) -> Option<usize> {
        let dev = core.slots[usize::from(idx)].sqe.op.iodev()?;
        core.dev_info(dev)
            .filter(|i| i.pollable)
            .map(|_| dev.index())
    }

    fn update_interest(&mut self, core: &Core, dev: usize) {
        let Some(Some(cur)) = self.interest.get(dev).copied() else {
            return;
        };
        let mut want = Interest::NONE;
        for s in core.slots.iter() {
            if s.state == State::Parked && s.sqe.op.iodev().map(|d| d.index()) == Some(dev) {
                want = want.with(match s.sqe.op {
                    Op::Write { .. } | Op::TinyWrite { .. } => Interest::WRITE,
                    _ => Interest::READ,
                });
            }
        }
        if want != cur {
            if let Some(Dev::Fd { fd, .. }) = core.devs.get(dev) {
                // The descriptor was registered in `enable`; MOD can only fail if it was closed,
                // which the context (its owner) never does while running.
                if self.ep.modify(fd.as_fd(), want, dev as u64).is_ok() {
                    self.interest[dev] = Some(want);
                }
            }
        }
    }

    pub(crate) fn issue(&mut self, core: &mut Core, idx: u16) {
        match Self::pollable(core, idx) {
            None => {
                let (res, block) = sync_io(core, idx);
                if let Some(b) = core.finish(idx, res, false, block) {
                    self.give_back(core, b.id);
                }
            }
            Some(dev) => {
                core.slots[usize::from(idx)].state = State::Parked;
                self.update_interest(core, dev);
            }
        }
    }

    fn give_back(&mut self, core: &mut Core, id: u16) {
        if core.mempool.mark_released(id) {
            self.recycle_block(core, id);
        }
    }

    pub(crate) fn delay(&mut self, core: &mut Core, idx: u16) {
        let Op::Delay { deadline_ns } = core.slots[usize::from(idx)].sqe.op else {
            return;
        };
        if deadline_ns <= clock::monotonic_now_ns() {
            let _none = core.finish(idx, 0, false, None);
            return;
        }
        core.slots[usize::from(idx)].state = State::Delayed;
        self.rearm_timer(core);
    }

    fn rearm_timer(&mut self, core: &Core) {
        let next = core
            .slots
            .iter()
            .filter(|s| s.state == State::Delayed)
            .filter_map(|s| match s.sqe.op {
                Op::Delay { deadline_ns } => Some(deadline_ns),
                _ => None,
            })
            .min();
        let r = match next {
            Some(t) => self.timer.set_absolute_ns(t, 0),
            None => self.timer.disarm(),
        };
        debug_assert!(r.is_ok(), "timerfd_settime on our own timer failed: {r:?}");
    }

    pub(crate) fn cancel(&mut self, core: &mut Core, idx: u16) {
        let st = core.slots[usize::from(idx)].state;
        let dev = Self::pollable(core, idx);
        if let Some(b) = core.finish(idx, -libc::ECANCELED, false, None) {
            self.give_back(core, b.id);
        }
        match st {
            State::Delayed => self.rearm_timer(core),
            State::Parked => {
                if let Some(d) = dev {
                    self.update_interest(core, d);
                }
            }
            _ => {}
        }
    }

    pub(crate) fn recycle_block(&mut self, core: &mut Core, id: u16) {
        core.mempool.push_free(id);
        if core.starved == 0 {
            return;
        }
        for i in 0..core.slots.len() {
            if core.slots[i].state == State::Starved {
                core.slots[i].state = State::Parked;
                core.starved -= 1;
                core.stats.multishot_rearms += 1;
                if let Some(d) = core.slots[i].sqe.op.iodev() {
                    self.update_interest(core, d.index());
                }
            }
        }
    }

    pub(crate) fn poll(&mut self, core: &mut Core, wait: bool) -> io::Result<()> {
        self.poll_for(core, if wait { None } else { Some(0) })
    }

    /// Waits at most `timeout_ns` (rounded up to whole ms, epoll's unit) for readiness and
    /// serves it. epoll returns on the first ready descriptor: it cannot wait for several.
    pub(crate) fn poll_timeout(&mut self, core: &mut Core, timeout_ns: u64) -> io::Result<()> {
        let ms = u32::try_from(timeout_ns.div_ceil(1_000_000)).unwrap_or(u32::MAX);
        self.poll_for(core, Some(ms))
    }

    fn poll_for(&mut self, core: &mut Core, timeout_ms: Option<u32>) -> io::Result<()> {
        let mut events = [Event::default(); 32];
        let n = self.ep.wait(&mut events, timeout_ms)?;
        for ev in &events[..n] {
            match ev.token {
                TOKEN_WAKE => core.wake_seen = true,
                TOKEN_TIMER => self.expire_delays(core)?,
                dev => self.ready(core, usize::try_from(dev).unwrap_or(usize::MAX), ev),
            }
        }
        Ok(())
    }

    fn expire_delays(&mut self, core: &mut Core) -> io::Result<()> {
        match self.timer.read_expirations() {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        let now = clock::monotonic_now_ns();
        for i in 0..core.slots.len() {
            if core.slots[i].state != State::Delayed {
                continue;
            }
            if let Op::Delay { deadline_ns } = core.slots[i].sqe.op {
                if deadline_ns <= now {
                    let idx = u16::try_from(i).unwrap_or(NONE);
                    let _none = core.finish(idx, 0, false, None);
                }
            }
        }
        self.rearm_timer(core);
        Ok(())
    }

    fn ready(&mut self, core: &mut Core, dev: usize, ev: &Event) {
        for i in 0..core.slots.len() {
            let s = &core.slots[i];
            if s.state != State::Parked || s.sqe.op.iodev().map(|d| d.index()) != Some(dev) {
                continue;
            }
            let is_write = matches!(s.sqe.op, Op::Write { .. } | Op::TinyWrite { .. });
            if (is_write && !ev.writable) || (!is_write && !ev.readable) {
                continue;
            }
            let multishot = s.sqe.flags.contains(SqeFlags::MULTISHOT);
            let idx = u16::try_from(i).unwrap_or(NONE);
            let (res, block) = sync_io(core, idx);
            if res == -libc::EAGAIN {
                continue;
            }
            let leftover = if multishot && res == -libc::ENOBUFS {
                core.slots[i].state = State::Starved;
                core.starved += 1;
                core.finish(idx, res, true, None)
            } else if multishot && res >= 0 {
                core.finish(idx, res, true, block)
            } else {
                core.finish(idx, res, false, block)
            };
            if let Some(b) = leftover {
                self.give_back(core, b.id);
            }
        }
        self.update_interest(core, dev);
    }
}
