//! The RTIO context: fixed pools, the submission/completion queues and the executor.
//!
//! # Execution model
//!
//! [`Rtio::prepare`] takes an entry from the fixed submission pool and queues it;
//! [`Rtio::submit`] hands the queue to the executor and optionally waits for completions;
//! [`Rtio::cqe_consume`] takes completions from the fixed completion pool.
//!
//! The executor links entries flagged `CHAINED` (or `TRANSACTION`) to their successor and
//! starts every chain head. Ops on file-descriptor devices go to the backend — with io_uring a
//! whole run of them is pushed at once as `IOSQE_IO_LINK`ed SQEs, so the kernel walks the
//! chain without waking the caller; callbacks, awaits and software devices run in the executor.
//!
//! # Chain failure (io_uring's rule)
//!
//! When an entry of a chain fails (negative result) or a read/write of a chain transfers fewer
//! bytes than asked (a *short* transfer, which io_uring also treats as breaking the link), the
//! entry completes with its own result and **every later entry of the chain completes with
//! `-ECANCELED`**, each with its own completion, `NO_RESPONSE` or not (errors are always
//! reported). This is io_uring's `IOSQE_IO_LINK` behaviour and the same as Zephyr's
//! `rtio_executor_err`; both backends and software devices follow it.
//!
//! # Cancellation
//!
//! [`Rtio::cancel`] takes a generation-checked [`SqeHandle`]: a handle whose entry already
//! completed is rejected with [`RtioError::StaleHandle`]. A cancelled entry completes with
//! `-ECANCELED` (io_uring's behaviour; Zephyr suppresses that completion) and so does the
//! rest of its chain. Cancelling an op already inside the kernel is best-effort, as with
//! `IORING_OP_ASYNC_CANCEL`: if it finishes first it completes normally.
//!
//! # No allocation after setup
//!
//! Pools, queues, buffers, the memory pool and the device table are allocated by
//! [`Rtio::new`] and the setup calls (`register_*`, `alloc_buffer`); those fail with
//! [`RtioError::SetupClosed`] after the first submit. The submit/consume path only moves
//! indices between preallocated queues (`tests/rtio_noalloc.rs` checks this with a counting
//! allocator).

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::backend::{self, BackendInfo, Engine};
pub use super::core::{CallbackCx, RtioConfig, Signaller, TaskRun};
use super::core::{Core, Dev, NONE, SignalShared, Slot, State};
use super::iodev::{FdInfo, Iodev, IodevRequest, MultishotMode, Submit};
use super::mempool::Mempool;
use super::types::{
    Block, BufferId, Cqe, IodevId, Op, RtioError, RtioStats, Sqe, SqeFlags, SqeHandle,
};
use crate::sys::eventfd::EventFd;
use crate::sys::{epoll, fdio};

/// An RTIO context (Zephyr's `struct rtio`): fixed submission and completion pools, a memory
/// pool, registered devices and buffers, and an executor on io_uring or epoll.
///
/// Owned and driven by one thread (io_uring's single-issuer mode: the ring is enabled on the
/// first [`submit`](Rtio::submit) and bound to the calling thread). Other threads interact
/// through a [`Signaller`] and [`notify_fd`](Rtio::notify_fd).
pub struct Rtio {
    // Declared before `core`: the ring must close before the buffers it writes are freed
    // (and `Drop` first waits for in-flight kernel ops, see below).
    engine: Engine,
    core: Core,
    setup_open: bool,
}

impl Drop for Rtio {
    /// Cancels every op still inside the kernel and waits for their completions before the
    /// pools are freed: an io_uring read in flight (or run by an io-wq worker) would otherwise
    /// write into freed memory after the ring descriptor is closed, because ring teardown is
    /// asynchronous.
    fn drop(&mut self) {
        if self.setup_open {
            return;
        }
        let in_kernel = |core: &Core| {
            core.slots
                .iter()
                .filter(|s| s.state == State::InKernel)
                .count()
        };
        for i in 0..self.core.slots.len() {
            if self.core.slots[i].state == State::InKernel {
                let idx = u16::try_from(i).unwrap_or(NONE);
                self.core.slots[i].canceled = true;
                self.engine.cancel(&mut self.core, idx);
            }
        }
        // Bounded: each round reaps at least one completion; a cancel always completes.
        for _ in 0..(4 * self.core.slots.len() + 16) {
            if in_kernel(&self.core) == 0 {
                return;
            }
            // Completions posted now may overflow the pool; nobody will read them anyway.
            self.core.cq.clear();
            if let Err(e) = self.engine.poll(&mut self.core, true) {
                eprintln!("preempt-io rtio: waiting for cancelled ops on drop failed: {e}");
                break;
            }
        }
        if in_kernel(&self.core) > 0 {
            // Leak the pools rather than free memory the kernel may still write.
            eprintln!("preempt-io rtio: ops still in the kernel on drop; leaking their buffers");
            std::mem::forget(std::mem::take(&mut self.core.buffers));
            std::mem::forget(std::mem::replace(
                &mut self.core.mempool,
                Mempool::new(0, 0),
            ));
        }
    }
}

impl std::fmt::Debug for Rtio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rtio")
            .field("backend", self.engine.info())
            .field("stats", &self.core.stats)
            .finish_non_exhaustive()
    }
}

impl Rtio {
    /// Creates a context; the backend is chosen per `cfg.backend` and the choice with its
    /// reason is available from [`backend`](Rtio::backend).
    ///
    /// # Errors
    /// `InvalidInput` for pool sizes out of range; the backend's setup errors (when a backend
    /// is forced; `Auto` falls back to epoll instead).
    pub fn new(cfg: RtioConfig) -> io::Result<Rtio> {
        if cfg.sq_size == 0 || cfg.sq_size >= usize::from(NONE) || cfg.cq_size == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "RtioConfig: sq_size must be 1..65534 and cq_size >= 1",
            ));
        }
        if cfg.mempool_blocks > 32768 || (cfg.mempool_blocks > 0 && cfg.mempool_block_size == 0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "RtioConfig: mempool_blocks must be <= 32768 with a non-zero mempool_block_size",
            ));
        }
        let slots = (0..cfg.sq_size)
            .map(|_| Slot {
                sqe: Sqe::nop(),
                gn: 0,
                state: State::Free,
                next: NONE,
                canceled: false,
                prev_result: 0,
                tx_err: 0,
                shots: 0,
                read_inflight: false,
                busy: [NONE, NONE],
                kprev: NONE,
                skipped: false,
            })
            .collect::<Vec<_>>()
            .into_boxed_slice();
        let signals = Arc::new(SignalShared {
            words: (0..cfg.sq_size).map(|_| AtomicU64::new(0)).collect(),
            wake: EventFd::new(0, true)?,
        });
        let mut core = Core {
            slots,
            free: (0..cfg.sq_size)
                .rev()
                .map(|i| u16::try_from(i).unwrap_or(NONE))
                .collect(),
            sq: VecDeque::with_capacity(cfg.sq_size),
            cq: VecDeque::with_capacity(cfg.cq_size),
            cq_cap: cfg.cq_size,
            ready: VecDeque::with_capacity(cfg.sq_size),
            buffers: Vec::new(),
            busy: Vec::new(),
            mempool: Mempool::new(cfg.mempool_blocks, cfg.mempool_block_size),
            devs: Vec::new(),
            stats: RtioStats::default(),
            signals,
            awaiting: 0,
            starved: 0,
            wake_seen: false,
        };
        let engine = backend::create(&cfg, &mut core)?;
        Ok(Rtio {
            core,
            engine,
            setup_open: true,
        })
    }

    /// Which backend runs this context, and why it was chosen.
    pub fn backend(&self) -> &BackendInfo {
        self.engine.info()
    }

    fn check_setup(&self) -> Result<(), RtioError> {
        if self.setup_open {
            Ok(())
        } else {
            Err(RtioError::SetupClosed)
        }
    }

    /// Registers a file-descriptor device (setup only). The descriptor is probed: file type,
    /// pollability, and how multishot reads will run ([`FdInfo`]).
    ///
    /// # Errors
    /// [`RtioError::SetupClosed`] after the first submit; `fstat`/epoll probe errors.
    pub fn register_fd(&mut self, name: &str, fd: OwnedFd) -> io::Result<IodevId> {
        self.check_setup()?;
        let kind = fdio::file_kind(fd.as_fd())?;
        let pollable = epoll::is_pollable(fd.as_fd())?;
        let multishot = if !pollable {
            MultishotMode::Unsupported(format!(
                "{kind:?} descriptor cannot be polled: always readable, a multishot read would spin"
            ))
        } else {
            self.engine.multishot_mode_for(kind)
        };
        let info = FdInfo {
            name: name.to_owned(),
            kind,
            pollable,
            multishot,
            nonblocking: fdio::is_nonblocking(fd.as_fd())?,
        };
        self.push_dev(Dev::Fd { fd, info })
    }

    /// Registers a software device (setup only).
    ///
    /// # Errors
    /// [`RtioError::SetupClosed`] after the first submit.
    pub fn register_iodev(&mut self, dev: Box<dyn Iodev>) -> io::Result<IodevId> {
        self.check_setup()?;
        self.push_dev(Dev::Soft(dev))
    }

    fn push_dev(&mut self, d: Dev) -> io::Result<IodevId> {
        let id =
            u16::try_from(self.core.devs.len()).map_err(|_| io::Error::other("too many iodevs"))?;
        self.core.devs.push(d);
        Ok(IodevId(id))
    }

    /// The probe result of a file-descriptor device (`None` for software devices).
    pub fn fd_info(&self, id: IodevId) -> Option<&FdInfo> {
        self.core.dev_info(id)
    }

    /// Allocates a zeroed buffer of `len` bytes owned by the context (setup only).
    ///
    /// # Errors
    /// [`RtioError::SetupClosed`] after the first submit.
    pub fn alloc_buffer(&mut self, len: usize) -> Result<BufferId, RtioError> {
        self.check_setup()?;
        let id = u16::try_from(self.core.buffers.len())
            .map_err(|_| RtioError::Invalid("too many buffers"))?;
        self.core.buffers.push(vec![0_u8; len].into_boxed_slice());
        self.core.busy.push(false);
        Ok(BufferId(id))
    }

    /// A buffer's bytes, if no in-flight entry uses it.
    ///
    /// # Errors
    /// Unknown or busy buffer.
    pub fn buffer(&self, id: BufferId) -> Result<&[u8], RtioError> {
        let i = usize::from(id.0);
        match (self.core.buffers.get(i), self.core.busy.get(i)) {
            (Some(_), Some(true)) => Err(RtioError::BufferBusy(id.0)),
            (Some(b), _) => Ok(b),
            _ => Err(RtioError::UnknownBuffer(id.0)),
        }
    }

    /// A buffer's bytes for writing, if no in-flight entry uses it.
    ///
    /// # Errors
    /// Unknown or busy buffer.
    pub fn buffer_mut(&mut self, id: BufferId) -> Result<&mut [u8], RtioError> {
        let i = usize::from(id.0);
        match (self.core.buffers.get_mut(i), self.core.busy.get(i)) {
            (Some(_), Some(true)) => Err(RtioError::BufferBusy(id.0)),
            (Some(b), _) => Ok(b),
            _ => Err(RtioError::UnknownBuffer(id.0)),
        }
    }

    /// A handle to signal awaits / complete pending software requests from other threads.
    pub fn signaller(&self) -> Signaller {
        Signaller {
            shared: Arc::clone(&self.core.signals),
        }
    }

    /// A descriptor that becomes readable when the context has completions to reap (io_uring:
    /// the registered eventfd; epoll: the epoll descriptor). Lets the owner thread sleep in its
    /// own poll loop or another thread learn that work is waiting.
    pub fn notify_fd(&self) -> BorrowedFd<'_> {
        self.engine.notify_fd()
    }

    /// Counters (overflows, exhaustion, re-arms).
    pub fn stats(&self) -> RtioStats {
        let mut s = self.core.stats;
        s.kernel_cq_overflow = self.engine.kernel_overflow();
        s
    }

    /// Completions waiting in the pool.
    pub fn cq_len(&self) -> usize {
        self.core.cq.len()
    }

    /// Free entries in the submission pool.
    pub fn sq_free(&self) -> usize {
        self.core.free.len()
    }

    /// Mempool blocks currently held by completions or the caller.
    pub fn mempool_blocks_out(&self) -> usize {
        self.core.mempool.out_count()
    }

    fn validate(&self, sqe: &Sqe) -> Result<(), RtioError> {
        let f = sqe.flags;
        if let Some(d) = sqe.op.iodev() {
            if d.index() >= self.core.devs.len() {
                return Err(RtioError::UnknownIodev(d.0));
            }
        }
        let check_buf = |b: BufferId, len: u32| -> Result<(), RtioError> {
            let buf = self
                .core
                .buffers
                .get(usize::from(b.0))
                .ok_or(RtioError::UnknownBuffer(b.0))?;
            if len as usize > buf.len() {
                return Err(RtioError::Invalid("transfer longer than its buffer"));
            }
            Ok(())
        };
        match sqe.op {
            Op::Read {
                buf: Some(b), len, ..
            } => {
                check_buf(b, len)?;
                if f.contains(SqeFlags::MEMPOOL_BUFFER) {
                    return Err(RtioError::Invalid(
                        "MEMPOOL_BUFFER read must not name a buffer",
                    ));
                }
            }
            Op::Read { buf: None, len, .. } => {
                if !f.contains(SqeFlags::MEMPOOL_BUFFER) {
                    return Err(RtioError::Invalid(
                        "read without a buffer needs MEMPOOL_BUFFER",
                    ));
                }
                if self.core.mempool.count() == 0 {
                    return Err(RtioError::Invalid(
                        "mempool read on a context without a mempool",
                    ));
                }
                if len as usize > self.core.mempool.block_size() {
                    return Err(RtioError::Invalid("mempool read longer than a block"));
                }
            }
            Op::Write { buf, len, .. } => check_buf(buf, len)?,
            Op::Transceive { tx, rx, len, .. } => {
                check_buf(tx, len)?;
                check_buf(rx, len)?;
                if tx == rx {
                    return Err(RtioError::Invalid(
                        "transceive tx and rx must be different buffers",
                    ));
                }
            }
            _ => {}
        }
        if f.contains(SqeFlags::MULTISHOT) {
            if f.contains(SqeFlags::CHAINED) || f.contains(SqeFlags::TRANSACTION) {
                return Err(RtioError::Invalid(
                    "MULTISHOT cannot be CHAINED or TRANSACTION",
                ));
            }
            let Op::Read {
                iodev, buf: None, ..
            } = sqe.op
            else {
                return Err(RtioError::Invalid("MULTISHOT needs a MEMPOOL_BUFFER read"));
            };
            match self.core.dev_info(iodev) {
                None => return Err(RtioError::Invalid("MULTISHOT on a software iodev")),
                Some(FdInfo {
                    multishot: MultishotMode::Unsupported(_),
                    ..
                }) => {
                    return Err(RtioError::Invalid(
                        "MULTISHOT on a descriptor that cannot be polled",
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Queues `sqe` (Zephyr: `rtio_sqe_acquire` + `rtio_sqe_prep_*`). Nothing runs until
    /// [`submit`](Rtio::submit).
    ///
    /// # Errors
    /// [`RtioError::SubmissionPoolFull`], or a malformed entry.
    pub fn prepare(&mut self, sqe: Sqe) -> Result<SqeHandle, RtioError> {
        self.validate(&sqe)?;
        let idx = self.core.free.pop().ok_or(RtioError::SubmissionPoolFull)?;
        let s = &mut self.core.slots[usize::from(idx)];
        debug_assert_eq!(s.state, State::Free);
        s.sqe = sqe;
        s.state = State::Queued;
        s.next = NONE;
        s.canceled = false;
        s.prev_result = 0;
        s.tx_err = 0;
        s.kprev = NONE;
        s.skipped = false;
        self.core.signals.words[usize::from(idx)].store(0, Ordering::Relaxed);
        self.core.sq.push_back(idx);
        Ok(SqeHandle { idx, gn: s.gn })
    }

    /// Hands queued entries to the executor and runs it until at least `wait_for`
    /// completions are in the pool (0: do not wait; capped at the pool size).
    ///
    /// # Errors
    /// Backend errors (e.g. `EEXIST` when an io_uring context is driven from a second thread).
    pub fn submit(&mut self, wait_for: usize) -> io::Result<()> {
        self.hand_off()?;
        let want = wait_for.min(self.core.cq_cap);
        loop {
            let wait = self.core.cq.len() < want;
            {
                // RTIO's wait for its completions is the real-time I/O path itself, not a
                // blocking call of the task that submitted (preempt::rt_safety).
                let _rtio = crate::sys::interpose::suppress();
                self.engine.poll(&mut self.core, wait)?;
            }
            self.core.drain_signals()?;
            self.run_ready();
            if self.core.cq.len() >= want {
                return Ok(());
            }
        }
    }

    /// Cross-device coalescing: hands queued entries to the executor, then waits until at
    /// least `wait_for` completions are in the pool **with one sleep for all of them**, or
    /// until `timeout_ns` has passed. Returns whether `wait_for` were reached.
    ///
    /// On io_uring this is one `io_uring_enter(GETEVENTS, min_complete = n)` with a timeout
    /// (`IORING_ENTER_EXT_ARG`), `n` the completions still missing; with
    /// [`TaskRun::Defer`] the kernel wakes the caller for *unlinked*
    /// poll-armed requests (e.g. one interrupt read per device) only once enough are ready
    /// (lazy wake), so requests on several devices are reaped by one wake-up instead of one
    /// each. It fits where the completions can wait for each other: devices sampled together,
    /// or low-rate streams whose deadline is longer than the spread of their interrupts (the
    /// timeout bounds the added latency). It does not fit linked chains (their task work
    /// always wakes the owner) nor completions that only the executor posts (callbacks, soft
    /// devices): the kernel counts *its* completions, one per unlinked request. The epoll
    /// backend cannot wait for several descriptors: it wakes on each and loops until the
    /// deadline, like repeated [`submit`](Self::submit)s.
    ///
    /// # Errors
    /// Backend errors, as [`submit`](Self::submit).
    pub fn submit_coalesced(&mut self, wait_for: usize, timeout_ns: u64) -> io::Result<bool> {
        self.hand_off()?;
        let want = wait_for.min(self.core.cq_cap);
        let deadline = crate::sys::clock::monotonic_now_ns().saturating_add(timeout_ns);
        loop {
            let missing = want.saturating_sub(self.core.cq.len());
            let now = crate::sys::clock::monotonic_now_ns();
            if missing == 0 || now >= deadline {
                // Submit what the executor queued and take what is already there.
                let _rtio = crate::sys::interpose::suppress();
                self.engine.poll(&mut self.core, false)?;
                self.core.drain_signals()?;
                self.run_ready();
                return Ok(self.core.cq.len() >= want);
            }
            {
                let _rtio = crate::sys::interpose::suppress();
                self.engine
                    .poll_many(&mut self.core, missing, deadline - now)?;
            }
            self.core.drain_signals()?;
            self.run_ready();
        }
    }

    /// Moves the queued entries to the executor (linking chains) and starts what is ready.
    fn hand_off(&mut self) -> io::Result<()> {
        if self.setup_open {
            self.engine.enable(&mut self.core)?;
            self.setup_open = false;
        }
        let mut prev = NONE;
        while let Some(idx) = self.core.sq.pop_front() {
            self.core.stats.submitted += 1;
            let s = &mut self.core.slots[usize::from(idx)];
            s.state = State::Waiting;
            let links = s.sqe.flags.contains(SqeFlags::CHAINED)
                || s.sqe.flags.contains(SqeFlags::TRANSACTION);
            if prev == NONE {
                self.core.ready.push_back(idx);
            } else {
                self.core.slots[usize::from(prev)].next = idx;
            }
            prev = if links { idx } else { NONE };
        }
        self.run_ready();
        Ok(())
    }

    /// Lets the executor make progress without sleeping, and only if there is something to
    /// do: entries queued since the last submit, completions the kernel has posted, or (on
    /// io_uring) deferred task work the kernel flagged with `IORING_SQ_TASKRUN` — e.g. a
    /// linked chain whose poll-armed step became ready while the caller was computing. Then
    /// it is [`submit(0)`](Self::submit) (`io_uring_enter(GETEVENTS, min_complete = 0)`, which
    /// runs the task work and returns); otherwise it costs two loads from the shared ring and
    /// no syscall. Returns whether it entered the kernel. The epoll backend always polls.
    ///
    /// # Errors
    /// As [`submit`](Self::submit).
    pub fn run_pending(&mut self) -> io::Result<bool> {
        if self.core.sq.is_empty() && !self.setup_open && !self.engine.work_pending() {
            return Ok(false);
        }
        self.submit(0)?;
        Ok(true)
    }

    fn run_ready(&mut self) {
        while let Some(idx) = self.core.ready.pop_front() {
            self.start(idx);
        }
    }

    fn start(&mut self, idx: u16) {
        let i = usize::from(idx);
        let (op, flags, canceled, prev, gn) = {
            let s = &self.core.slots[i];
            (s.sqe.op, s.sqe.flags, s.canceled, s.prev_result, s.gn)
        };
        if canceled {
            self.finish_now(idx, -libc::ECANCELED);
            return;
        }
        match op {
            Op::Nop => self.finish_now(idx, 0),
            Op::Callback { f, arg } => {
                let mut cx = CallbackCx {
                    arg,
                    last_result: prev,
                    handle: SqeHandle { idx, gn },
                    buffers: &mut self.core.buffers,
                    busy: &self.core.busy,
                };
                let r = f(&mut cx);
                self.finish_now(idx, r);
            }
            Op::Await => {
                self.core.slots[i].state = State::Awaiting;
                self.core.awaiting += 1;
            }
            Op::Delay { .. } => self.engine.delay(&mut self.core, idx),
            _ => {
                let Some(dev) = op.iodev() else {
                    return self.finish_now(idx, -libc::EINVAL);
                };
                if !self.core.claim_buffers(idx) {
                    return self.finish_now(idx, -libc::EBUSY);
                }
                match self.core.devs[dev.index()] {
                    Dev::Fd { .. } => self.engine.issue(&mut self.core, idx),
                    Dev::Soft(_) => {
                        self.soft_submit(idx, dev, flags.contains(SqeFlags::TRANSACTION))
                    }
                }
            }
        }
    }

    fn finish_now(&mut self, idx: u16, res: i32) {
        if let Some(b) = self.core.finish(idx, res, false, None) {
            self.recycle(b);
        }
    }

    fn soft_submit(&mut self, idx: u16, dev: IodevId, in_transaction: bool) {
        let i = usize::from(idx);
        let gn = self.core.slots[i].gn;
        let op = self.core.slots[i].sqe.op;
        let mut block = None;
        let core = &mut self.core;
        let mut empty: [u8; 0] = [];
        let (data, rx): (&[u8], &mut [u8]) = match op {
            Op::Write { buf, len, .. } => (
                &core.buffers[usize::from(buf.0)][..len as usize],
                &mut empty,
            ),
            Op::TinyWrite { ref data, len, .. } => (
                &core.slots[i].sqe_tiny_data()[..usize::from(len).min(data.len())],
                &mut empty,
            ),
            Op::Read {
                buf: Some(b), len, ..
            } => (&[], &mut core.buffers[usize::from(b.0)][..len as usize]),
            Op::Read { buf: None, len, .. } => match core.mempool.take() {
                Some(id) => {
                    block = Some(id);
                    (&[], &mut core.mempool.block_mut(id)[..len as usize])
                }
                None => {
                    core.stats.mempool_exhausted += 1;
                    return self.finish_now(idx, -libc::ENOBUFS);
                }
            },
            Op::Transceive { tx, rx, len, .. } => {
                let (t, r) = two_mut(&mut core.buffers, usize::from(tx.0), usize::from(rx.0));
                (&t[..len as usize], &mut r[..len as usize])
            }
            _ => (&[], &mut empty),
        };
        let Dev::Soft(d) = &mut core.devs[dev.index()] else {
            return;
        };
        let mut req = IodevRequest {
            op,
            handle: SqeHandle { idx, gn },
            data,
            rx,
            in_transaction,
        };
        match d.submit(&mut req) {
            Submit::Done(res) => {
                let blk = block.map(|id| Block {
                    id,
                    len: res.max(0).unsigned_abs(),
                });
                if let Some(b) = self.core.finish(idx, res, false, blk) {
                    self.recycle(b);
                }
            }
            Submit::Pending => {
                if let Some(id) = block {
                    // Pending software reads into the mempool are not supported: the block
                    // would be filled from another thread. Give it back and fail the request.
                    let _was_out = self.core.mempool.mark_released(id);
                    self.core.mempool.push_free(id);
                    return self.finish_now(idx, -libc::EINVAL);
                }
                self.core.slots[i].state = State::Awaiting;
                self.core.awaiting += 1;
            }
        }
    }

    /// Takes the oldest completion, if any (`rtio_cqe_consume`).
    pub fn cqe_consume(&mut self) -> Option<Cqe> {
        self.core.cq.pop_front()
    }

    /// Waits for and takes one completion (`rtio_cqe_consume_block`).
    ///
    /// # Errors
    /// Backend errors.
    pub fn cqe_consume_block(&mut self) -> io::Result<Cqe> {
        loop {
            if let Some(c) = self.core.cq.pop_front() {
                return Ok(c);
            }
            self.submit(1)?;
        }
    }

    /// The bytes of a mempool block handed out by a completion.
    pub fn block(&self, b: &Block) -> &[u8] {
        self.core.mempool.block(b.id, b.len as usize)
    }

    /// Gives a mempool block back (`rtio_release_buffer`). Multishot reads starved for blocks
    /// are re-armed.
    pub fn release_block(&mut self, b: Block) {
        self.recycle(b);
    }

    fn recycle(&mut self, b: Block) {
        if !self.core.mempool.mark_released(b.id) {
            debug_assert!(false, "mempool block {} released twice", b.id);
            return;
        }
        self.engine.recycle_block(&mut self.core, b.id);
    }

    /// Cancels a submitted entry (`rtio_sqe_cancel`); see the module docs for the semantics.
    ///
    /// # Errors
    /// [`RtioError::StaleHandle`] if the entry already completed.
    pub fn cancel(&mut self, h: SqeHandle) -> Result<(), RtioError> {
        let s = self
            .core
            .slots
            .get(usize::from(h.idx))
            .ok_or(RtioError::StaleHandle)?;
        if s.gn != h.gn || s.state == State::Free {
            return Err(RtioError::StaleHandle);
        }
        match s.state {
            State::Queued | State::Waiting => self.core.slots[usize::from(h.idx)].canceled = true,
            State::Awaiting | State::Starved => self.finish_now(h.idx, -libc::ECANCELED),
            State::InKernel | State::Parked | State::Delayed => {
                self.core.slots[usize::from(h.idx)].canceled = true;
                self.engine.cancel(&mut self.core, h.idx);
            }
            State::Free => return Err(RtioError::StaleHandle),
        }
        self.run_ready();
        Ok(())
    }
}

impl Slot {
    fn sqe_tiny_data(&self) -> &[u8] {
        match &self.sqe.op {
            Op::TinyWrite { data, .. } => data,
            _ => &[],
        }
    }
}

fn two_mut(v: &mut [Box<[u8]>], a: usize, b: usize) -> (&mut [u8], &mut [u8]) {
    assert_ne!(a, b, "validated: transceive buffers differ");
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}
