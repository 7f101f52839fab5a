//! The state an RTIO context shares with its backends: the pools' slots, the device table,
//! the configuration, and the core both backends drive. Below both [`super::context`] and
//! [`super::backend`], so that neither imports the other's internals.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::iodev::{FdInfo, Iodev};
use super::mempool::Mempool;
use super::types::{
    BackendChoice, Block, BufferId, Cqe, IodevId, Op, RtioStats, Sqe, SqeFlags, SqeHandle,
};
use crate::sys::eventfd::EventFd;
pub(crate) const NONE: u16 = u16::MAX;

/// Sizes of a context's fixed pools and the backend to use.
#[derive(Clone, Debug)]
pub struct RtioConfig {
    /// Submission pool entries (in flight + queued), at most 65534.
    pub sq_size: usize,
    /// Completion pool entries; completions beyond it are dropped and counted.
    pub cq_size: usize,
    /// Memory-pool blocks (0 = no mempool; at most 32768 for io_uring's buffer ring).
    pub mempool_blocks: usize,
    /// Bytes per memory-pool block.
    pub mempool_block_size: usize,
    /// Which backend to use.
    pub backend: BackendChoice,
    /// io_uring: how the kernel hands completion work to the owner thread.
    pub task_run: TaskRun,
    /// io_uring: register the [`notify_fd`](super::context::Rtio::notify_fd) eventfd, which the kernel then
    /// signals on every completion batch (a wake-up attempt each time). Turn it off when no
    /// other thread or poll loop watches the context; `notify_fd` then never becomes
    /// readable on io_uring.
    pub notify_eventfd: bool,
    /// io_uring: register the devices' descriptors with the ring (`IORING_REGISTER_FILES`,
    /// `IOSQE_FIXED_FILE`), sparing the kernel a descriptor lookup and reference count per
    /// operation. Falls back to plain descriptors if the registration fails.
    pub fixed_files: bool,
    /// io_uring: a socket read that ends its chain (or stands alone) is sent as
    /// `IORING_OP_RECV` + `IORING_RECVSEND_POLL_FIRST`: the kernel arms the poll before
    /// trying, instead of first attempting a receive that fails with `EAGAIN` (a response
    /// that has not arrived yet). Reads with a linked successor stay `IORING_OP_READ`,
    /// because a short RECV succeeds and would not break the chain.
    pub socket_poll_first: bool,
}

/// How an io_uring context's deferred completion work (task work) reaches the owner
/// thread (`IORING_SETUP_*` flags; the [`BackendInfo`](super::backend::BackendInfo) features say
/// which the kernel accepted).
///
/// Every asynchronous step of a chain that waits on a descriptor (a poll-armed read) is
/// continued by task work *of the submitting thread*: the kernel must run that thread to
/// continue the chain, whichever mode is chosen. The modes differ in how it is told:
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TaskRun {
    /// `SINGLE_ISSUER | DEFER_TASKRUN | TASKRUN_FLAG`: task work is queued on the ring and
    /// runs only when the owner enters `io_uring_enter` to wait; a thread busy in user
    /// space is never interrupted. Unlinked poll completions wake a waiting owner only once
    /// enough are queued for the completions it waits for (lazy wake, Linux 6.10+); a
    /// *linked* request always wakes it.
    #[default]
    Defer,
    /// `SINGLE_ISSUER | COOP_TASKRUN | TASKRUN_FLAG`: task work is queued on the thread
    /// without an IPI; it runs at the thread's next kernel entry or wake-up.
    Cooperative,
    /// No flags: task work interrupts the owner thread (signal-style notification).
    Signal,
}

impl Default for RtioConfig {
    fn default() -> RtioConfig {
        RtioConfig {
            sq_size: 64,
            cq_size: 64,
            mempool_blocks: 16,
            mempool_block_size: 256,
            backend: BackendChoice::Auto,
            task_run: TaskRun::Defer,
            notify_eventfd: true,
            fixed_files: true,
            socket_poll_first: true,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Free,
    /// Prepared, not yet submitted.
    Queued,
    /// Submitted, waiting for its turn (chain predecessor or the ready queue).
    Waiting,
    /// Handed to the kernel (io_uring SQE).
    InKernel,
    /// Waiting for readiness (epoll backend).
    Parked,
    /// Await op or pending software op: waits for a signal.
    Awaiting,
    /// Delay op in the epoll backend's timer list.
    Delayed,
    /// Multishot read waiting for a free mempool block.
    Starved,
}

#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) sqe: Sqe,
    pub(crate) gn: u32,
    pub(crate) state: State,
    pub(crate) next: u16,
    pub(crate) canceled: bool,
    pub(crate) prev_result: i32,
    /// Error of the write half of a transceive (io_uring runs it as a separate SQE).
    pub(crate) tx_err: i32,
    /// Multishot bookkeeping: at least one shot delivered; a read is in flight (poll mode).
    pub(crate) shots: u64,
    pub(crate) read_inflight: bool,
    pub(crate) busy: [u16; 2],
    /// io_uring: the previous entry of the same kernel link run (NONE for a run's head).
    pub(crate) kprev: u16,
    /// io_uring: pushed with `IOSQE_CQE_SKIP_SUCCESS` (its success is learnt from a later
    /// member's completion).
    pub(crate) skipped: bool,
}

pub(crate) enum Dev {
    Fd { fd: OwnedFd, info: FdInfo },
    Soft(Box<dyn Iodev>),
}

pub(crate) struct SignalShared {
    pub(crate) words: Box<[AtomicU64]>,
    pub(crate) wake: EventFd,
}

const SIGNALED: u64 = 1 << 63;

/// A thread-safe handle that completes [`Op::Await`] entries (`rtio_sqe_signal`) and pending
/// software-device requests from any thread. Cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct Signaller {
    pub(crate) shared: Arc<SignalShared>,
}

impl std::fmt::Debug for Signaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signaller").finish_non_exhaustive()
    }
}

impl Signaller {
    /// Completes the await entry `h` with result 0.
    ///
    /// # Errors
    /// `InvalidInput` for a handle from another context; whatever the wake-up write reports.
    pub fn signal(&self, h: SqeHandle) -> io::Result<()> {
        self.complete(h, 0)
    }

    /// Completes the pending entry `h` with `result`. A stale handle (the entry completed or
    /// was cancelled meanwhile) is ignored by the executor, which checks the generation.
    ///
    /// # Errors
    /// `InvalidInput` for a handle from another context; whatever the wake-up write reports.
    pub fn complete(&self, h: SqeHandle, result: i32) -> io::Result<()> {
        let w = self.shared.words.get(usize::from(h.idx)).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "handle from another RTIO context",
            )
        })?;
        let word = SIGNALED | (u64::from(h.gn & 0x7fff_ffff) << 32) | u64::from(result as u32);
        w.store(word, Ordering::Release);
        self.shared.wake.write(1)
    }
}

/// What a callback op sees (Zephyr passes `rtio`, the sqe, the last result and `arg0`).
pub struct CallbackCx<'a> {
    pub(crate) arg: u64,
    pub(crate) last_result: i32,
    pub(crate) handle: SqeHandle,
    pub(crate) buffers: &'a mut [Box<[u8]>],
    pub(crate) busy: &'a [bool],
}

impl CallbackCx<'_> {
    /// The `arg` given to [`Sqe::callback`].
    pub fn arg(&self) -> u64 {
        self.arg
    }

    /// Result of the previous entry of the chain (0 for a chain head).
    pub fn last_result(&self) -> i32 {
        self.last_result
    }

    /// This entry's handle.
    pub fn handle(&self) -> SqeHandle {
        self.handle
    }

    /// A buffer no in-flight entry uses (e.g. what the previous read filled).
    pub fn buffer(&self, id: BufferId) -> Option<&[u8]> {
        let i = usize::from(id.0);
        if *self.busy.get(i)? {
            return None;
        }
        self.buffers.get(i).map(|b| &b[..])
    }

    /// A buffer to fill for a later entry of the chain.
    pub fn buffer_mut(&mut self, id: BufferId) -> Option<&mut [u8]> {
        let i = usize::from(id.0);
        if *self.busy.get(i)? {
            return None;
        }
        self.buffers.get_mut(i).map(|b| &mut b[..])
    }
}

pub(crate) struct Core {
    pub(crate) slots: Box<[Slot]>,
    pub(crate) free: Vec<u16>,
    pub(crate) sq: VecDeque<u16>,
    pub(crate) cq: VecDeque<Cqe>,
    pub(crate) cq_cap: usize,
    pub(crate) ready: VecDeque<u16>,
    pub(crate) buffers: Vec<Box<[u8]>>,
    pub(crate) busy: Vec<bool>,
    pub(crate) mempool: Mempool,
    pub(crate) devs: Vec<Dev>,
    pub(crate) stats: RtioStats,
    pub(crate) signals: Arc<SignalShared>,
    pub(crate) awaiting: usize,
    pub(crate) starved: usize,
    /// The backend saw the wake eventfd become readable since the last
    /// [`drain_signals`](Core::drain_signals): only then is it read (one `read` syscall per
    /// wake-up, not one per executor pass).
    pub(crate) wake_seen: bool,
}

impl Core {
    pub(crate) fn user_data(&self, idx: u16) -> (u16, u32) {
        (idx, self.slots[usize::from(idx)].gn)
    }

    pub(crate) fn dev_fd(&self, id: IodevId) -> Option<BorrowedFd<'_>> {
        match self.devs.get(id.index())? {
            Dev::Fd { fd, .. } => Some(fd.as_fd()),
            Dev::Soft(_) => None,
        }
    }

    pub(crate) fn dev_info(&self, id: IodevId) -> Option<&FdInfo> {
        match self.devs.get(id.index())? {
            Dev::Fd { info, .. } => Some(info),
            Dev::Soft(_) => None,
        }
    }

    pub(crate) fn dev_info_mut(&mut self, id: IodevId) -> Option<&mut FdInfo> {
        match self.devs.get_mut(id.index())? {
            Dev::Fd { info, .. } => Some(info),
            Dev::Soft(_) => None,
        }
    }

    /// Whether `idx` is an fd transfer the backend can run (used to extend io_uring links).
    pub(crate) fn is_fd_op(&self, idx: u16) -> bool {
        let s = &self.slots[usize::from(idx)];
        match s.sqe.op.iodev() {
            Some(d) => matches!(self.devs.get(d.index()), Some(Dev::Fd { .. })),
            None => matches!(s.sqe.op, Op::Delay { .. }),
        }
    }

    /// Marks the buffers of `idx` busy; `false` if one already is.
    pub(crate) fn claim_buffers(&mut self, idx: u16) -> bool {
        let (a, b) = match self.slots[usize::from(idx)].sqe.op {
            Op::Read { buf: Some(b), .. } => (b.0, NONE),
            Op::Write { buf, .. } => (buf.0, NONE),
            Op::Transceive { tx, rx, .. } => (tx.0, rx.0),
            _ => (NONE, NONE),
        };
        for id in [a, b] {
            if id != NONE && self.busy[usize::from(id)] {
                return false;
            }
        }
        for id in [a, b] {
            if id != NONE {
                self.busy[usize::from(id)] = true;
            }
        }
        self.slots[usize::from(idx)].busy = [a, b];
        true
    }

    pub(crate) fn unclaim_buffers(&mut self, idx: u16) {
        let busy = std::mem::replace(&mut self.slots[usize::from(idx)].busy, [NONE, NONE]);
        for id in busy {
            if id != NONE {
                self.busy[usize::from(id)] = false;
            }
        }
    }

    pub(crate) fn buffer_ptr(&mut self, id: BufferId) -> *mut u8 {
        self.buffers[usize::from(id.0)].as_mut_ptr()
    }

    pub(crate) fn post(&mut self, cqe: Cqe) -> Option<Block> {
        if self.cq.len() >= self.cq_cap {
            self.stats.cq_overflow += 1;
            return cqe.block;
        }
        self.stats.completions += 1;
        self.cq.push_back(cqe);
        None
    }

    /// Completes one shot of `idx`. With `more`, a multishot entry stays armed. Returns a
    /// block the caller must give back to the pool (the completion was dropped or suppressed).
    #[must_use]
    pub(crate) fn finish(
        &mut self,
        idx: u16,
        res: i32,
        more: bool,
        block: Option<Block>,
    ) -> Option<Block> {
        let i = usize::from(idx);
        let (flags, userdata, op) = {
            let s = &self.slots[i];
            (s.sqe.flags, s.sqe.userdata, s.sqe.op)
        };
        let mut leftover = None;
        if flags.contains(SqeFlags::NO_RESPONSE) && res >= 0 {
            leftover = block;
        } else {
            leftover = leftover.or(self.post(Cqe {
                result: res,
                userdata,
                more,
                block,
            }));
        }
        if more {
            self.slots[i].shots += 1;
            return leftover;
        }
        self.unclaim_buffers(idx);
        if self.slots[i].state == State::Awaiting {
            self.awaiting -= 1;
        }
        if self.slots[i].state == State::Starved {
            self.starved -= 1;
        }
        let next = self.slots[i].next;
        let short = res >= 0
            && matches!(
                op,
                Op::Read { buf: Some(_), .. }
                    | Op::Write { .. }
                    | Op::TinyWrite { .. }
                    | Op::Transceive { .. }
            )
            && res.unsigned_abs() < op.transfer_len();
        let failed = res < 0 || short;
        let s = &mut self.slots[i];
        s.gn = s.gn.wrapping_add(1);
        s.state = State::Free;
        s.next = NONE;
        s.canceled = false;
        s.shots = 0;
        s.read_inflight = false;
        self.free.push(idx);
        if next != NONE {
            let n = &mut self.slots[usize::from(next)];
            if n.state != State::InKernel {
                if failed {
                    n.canceled = true;
                }
                n.prev_result = res;
                self.ready.push_back(next);
            }
        }
        leftover
    }

    /// Whether result `res` of `idx` breaks its chain: an error, or a read/write that moved
    /// fewer bytes than asked (the rule [`finish`](Core::finish) applies).
    pub(crate) fn breaks_chain(&self, idx: u16, res: i32) -> bool {
        let op = self.slots[usize::from(idx)].sqe.op;
        res < 0
            || (matches!(
                op,
                Op::Read { buf: Some(_), .. }
                    | Op::Write { .. }
                    | Op::TinyWrite { .. }
                    | Op::Transceive { .. }
            ) && res.unsigned_abs() < op.transfer_len())
    }

    /// Completes signalled awaits and pending software requests.
    pub(crate) fn drain_signals(&mut self) -> io::Result<()> {
        if !std::mem::take(&mut self.wake_seen) {
            return Ok(());
        }
        // Reset the eventfd even with nothing awaiting, so a level-triggered backend does not
        // report it again.
        if self.signals.wake.read()?.is_none() || self.awaiting == 0 {
            return Ok(());
        }
        for i in 0..self.slots.len() {
            if self.slots[i].state != State::Awaiting {
                continue;
            }
            let w = self.signals.words[i].load(Ordering::Acquire);
            if w & SIGNALED == 0
                || ((w >> 32) as u32 & 0x7fff_ffff) != self.slots[i].gn & 0x7fff_ffff
            {
                continue;
            }
            self.signals.words[i].store(0, Ordering::Relaxed);
            // Truncation intended: the low 32 bits carry the i32 result.
            let res = w as u32 as i32;
            let idx = u16::try_from(i).unwrap_or(NONE);
            debug_assert!(idx != NONE);
            let _no_block = self.finish(idx, res, false, None);
            debug_assert!(_no_block.is_none(), "awaits carry no block");
        }
        Ok(())
    }
}
