//! The io_uring backend.
//!
//! * Ring set up with `IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN` (completions
//!   are processed only when the owner thread enters the kernel, so no task-work interrupts
//!   the owner mid-computation; `RtioConfig::task_run` selects COOP_TASKRUN or plain task
//!   work instead) and `IORING_SETUP_R_DISABLED`, enabled on the first submit so
//!   the context can be built on one thread and driven on another. Kernels without those flags
//!   get a plain ring; [`BackendInfo::features`] says which.
//! * A run of consecutive fd transfers/delays of one chain is pushed as `IOSQE_IO_LINK`ed
//!   SQEs; the kernel runs the chain and cancels its rest with `-ECANCELED` on failure.
//! * Delays are `IORING_OP_TIMEOUT` with `IORING_TIMEOUT_ABS | IORING_TIMEOUT_ETIME_SUCCESS`
//!   (an expiry completes the delay with 0 and does not break its chain).
//! * The memory pool is a provided buffer ring (`IORING_REGISTER_PBUF_RING`); mempool reads
//!   use `IOSQE_BUFFER_SELECT` and the kernel picks the block when data arrives.
//! * Multishot reads are `IORING_OP_READ_MULTISHOT` where the descriptor supports it; where it
//!   cannot stay armed (old kernel, the first arm fails) a multishot `IORING_OP_POLL_ADD` plus
//!   one read per readiness replaces it, and the descriptor's [`FdInfo`] says so.
//! * An eventfd is registered for completion notification ([`Rtio::notify_fd`]) unless
//!   `RtioConfig::notify_eventfd` is off (the kernel signals it on every completion batch).
//! * Device descriptors are registered with the ring at enable (`IOSQE_FIXED_FILE`, slot =
//!   iodev index) unless `RtioConfig::fixed_files` is off; a socket read that ends its link
//!   run is `IORING_OP_RECV` with `IORING_RECVSEND_POLL_FIRST` (`socket_poll_first`).
//! * Why a chain's consumer still runs once per asynchronous step: a poll-armed request is
//!   continued by task work of the submitting thread, and `io_req_local_work_add` wakes that
//!   thread for every task-work item of a *linked* request (lazy wake, which waits until as
//!   many items are queued as the waiter wants completions, applies to unlinked requests
//!   only); a multishot request queues at most one item however many events arrive, so
//!   waiting for several of its completions at once would never be woken.
//!
//! [`FdInfo`]: super::super::FdInfo
//! [`Rtio::notify_fd`]: super::super::Rtio::notify_fd

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::{BufRingEntry, Fd, Fixed, TimeoutFlags, Timespec};
use io_uring::{IoUring, cqueue, opcode, squeue};

use super::super::core::{Core, Dev, NONE, RtioConfig, State, TaskRun};
use super::super::iodev::MultishotMode;
use super::super::types::{Block, IodevId, Op, SqeFlags};
use super::{BackendInfo, BackendKind};
use crate::sys::eventfd::EventFd;
use crate::sys::fdio::FileKind;

const TAG_OP: u64 = 1;
const TAG_TX: u64 = 2;
const TAG_CANCEL: u64 = 3;
const TAG_WAKE: u64 = 4;
const TAG_POLL: u64 = 5;
const TAG_MSREAD: u64 = 6;
const BGID: u16 = 0;
/// `IORING_RECVSEND_POLL_FIRST` (in the SQE's ioprio field for RECV).
const POLL_FIRST: u16 = 1;

fn ud(tag: u64, idx: u16, gn: u32) -> u64 {
    (tag << 56) | ((u64::from(gn) & 0xff_ffff) << 16) | u64::from(idx)
}

fn ud_parts(u: u64) -> (u64, u16, u32) {
    // Truncations intended: the fields were packed by `ud`.
    (
        (u >> 56),
        (u & 0xffff) as u16,
        ((u >> 16) & 0xff_ffff) as u32,
    )
}

/// A provided buffer ring: `entries` `BufRingEntry`s in page-aligned memory we own.
struct BufRing {
    base: *mut BufRingEntry,
    layout: Layout,
    mask: u16,
    tail: u16,
}

impl BufRing {
    fn new(entries: u16) -> io::Result<BufRing> {
        let size = usize::from(entries) * std::mem::size_of::<BufRingEntry>();
        let layout = Layout::from_size_align(size.max(4096), 4096).map_err(io::Error::other)?;
        // SAFETY: the layout has a non-zero size.
        let base = unsafe { alloc_zeroed(layout) }.cast::<BufRingEntry>();
        if base.is_null() {
            return Err(io::Error::from(io::ErrorKind::OutOfMemory));
        }
        Ok(BufRing {
            base,
            layout,
            mask: entries - 1,
            tail: 0,
        })
    }

    /// Adds a block and publishes it to the kernel.
    fn push(&mut self, addr: *mut u8, len: u32, bid: u16) {
        let i = usize::from(self.tail & self.mask);
        // SAFETY: `i <= mask < entries`, so the entry is inside our allocation; the kernel only
        // reads entries between its head and our published tail, and this one is past the tail.
        let e = unsafe { &mut *self.base.add(i) };
        e.set_addr(addr as u64);
        e.set_len(len);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: `base` is the ring's first entry (page-aligned, initialised); the tail field
        // overlays its `resv` and is shared with the kernel, so it is stored atomically with
        // release ordering after the entry (liburing's io_uring_buf_ring_advance does the same).
        let tail = unsafe { &*BufRingEntry::tail(self.base).cast::<AtomicU16>() };
        tail.store(self.tail, Ordering::Release);
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; the ring (which the kernel reads) is
        // dropped before us because `UringEngine` declares `ring` first.
        unsafe { dealloc(self.base.cast(), self.layout) };
    }
}

pub(crate) struct UringEngine {
    // Field order matters: the ring closes (and stops reading the buffer ring) first.
    ring: IoUring,
    bufring: Option<BufRing>,
    notify: EventFd,
    pub(crate) info: BackendInfo,
    read_multi: bool,
    timespecs: Box<[Timespec]>,
    block_size: u32,
    /// Register the devices' descriptors at enable (RtioConfig::fixed_files).
    want_fixed: bool,
    /// Descriptors are registered: fd ops use `IOSQE_FIXED_FILE` with the iodev index.
    fixed: bool,
    /// Socket reads as RECV + POLL_FIRST.
    poll_first: bool,
}

/// The descriptor an SQE names: a plain fd or an index into the registered file table.
#[derive(Clone, Copy)]
enum Target {
    Fd(Fd),
    Fixed(Fixed),
}

/// Builds an opcode with `$t` as its descriptor, whichever kind it is.
macro_rules! on_target {
    ($t:expr, |$f:ident| $body:expr) => {
        match $t {
            Target::Fd($f) => $body,
            Target::Fixed($f) => $body,
        }
    };
}

impl UringEngine {
    pub(crate) fn new(
        cfg: &RtioConfig,
        core: &mut Core,
        reason: String,
    ) -> io::Result<UringEngine> {
        // Room for every slot twice (transceive = 2 SQEs) plus cancels and the wake poll.
        let entries = u32::try_from((cfg.sq_size * 2 + 8).next_power_of_two()).unwrap_or(4096);
        let cq = u32::try_from((cfg.cq_size + cfg.sq_size) * 2)
            .unwrap_or(8192)
            .max(entries * 2);
        let mut features = Vec::new();
        let mut b = IoUring::builder();
        let label = match cfg.task_run {
            TaskRun::Defer => {
                b.setup_single_issuer().setup_defer_taskrun();
                "single issuer + defer taskrun"
            }
            TaskRun::Cooperative => {
                b.setup_single_issuer().setup_coop_taskrun();
                "single issuer + coop taskrun"
            }
            TaskRun::Signal => "signal-notified task work",
        };
        if cfg.task_run != TaskRun::Signal {
            // Sets IORING_SQ_TASKRUN when deferred completions wait, so a non-waiting poll
            // still enters the kernel to run them (io-wq completions, e.g. shmem writes).
            b.setup_taskrun_flag();
        }
        let ring = match b
            .setup_r_disabled()
            .setup_submit_all()
            .setup_cqsize(cq)
            .build(entries)
        {
            Ok(r) => {
                features.push(label.into());
                r
            }
            Err(e) => {
                features.push(format!("{label} unavailable ({e}): plain ring"));
                IoUring::builder()
                    .setup_r_disabled()
                    .setup_cqsize(cq)
                    .build(entries)?
            }
        };
        let mut probe = io_uring::Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        for (code, name) in [
            (opcode::Read::CODE, "READ"),
            (opcode::Write::CODE, "WRITE"),
            (opcode::Timeout::CODE, "TIMEOUT"),
            (opcode::PollAdd::CODE, "POLL_ADD"),
            (opcode::AsyncCancel::CODE, "ASYNC_CANCEL"),
        ] {
            if !probe.is_supported(code) {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("io_uring lacks IORING_OP_{name}"),
                ));
            }
        }
        let mut read_multi = probe.is_supported(opcode::ReadMulti::CODE);
        let notify = EventFd::new(0, true)?;
        if cfg.notify_eventfd {
            ring.submitter().register_eventfd(notify.as_raw_fd())?;
            features.push("eventfd completion notification".into());
        } else {
            features.push("no completion eventfd (RtioConfig::notify_eventfd = false)".into());
        }
        if cfg.socket_poll_first {
            features.push("socket reads = IORING_OP_RECV with IORING_RECVSEND_POLL_FIRST".into());
        }
        features.push(
            "regular files (memfd): O_NONBLOCK ones linked into the kernel chain (inline reads), others run by the executor with pread/pwrite (io_uring would punt them to io-wq)"
                .into(),
        );
        let mut bufring = None;
        if core.mempool.count() > 0 {
            let n = u16::try_from(core.mempool.count().next_power_of_two()).unwrap_or(32768);
            let mut br = BufRing::new(n)?;
            // SAFETY: `br.base` points to `n` zeroed, page-aligned entries that live as long as
            // the ring (dropped after it, see the field order), as the registration requires.
            let reg = unsafe {
                ring.submitter()
                    .register_buf_ring_with_flags(br.base as u64, n, BGID, 0)
            };
            match reg {
                Ok(()) => {
                    let bs = u32::try_from(core.mempool.block_size()).unwrap_or(u32::MAX);
                    for id in 0..core.mempool.count() {
                        let id = u16::try_from(id).unwrap_or(NONE);
                        let p = core.mempool.block_ptr(id);
                        // Blocks start in the kernel's hands: drain the software free stack.
                        let taken = core.mempool.take();
                        debug_assert!(taken.is_some());
                        let _was_out = core.mempool.mark_released(id);
                        br.push(p, bs, id);
                    }
                    features.push(format!("mempool = provided buffer ring ({n} entries)"));
                    bufring = Some(br);
                }
                Err(e) => {
                    features.push(format!(
                        "provided buffer ring unavailable ({e}): blocks chosen at submission"
                    ));
                    read_multi = false;
                }
            }
        }
        features.push(if read_multi {
            "IORING_OP_READ_MULTISHOT".into()
        } else {
            "no IORING_OP_READ_MULTISHOT: multishot = poll + read".into()
        });
        let timespecs = (0..cfg.sq_size).map(|_| Timespec::new()).collect();
        let block_size = u32::try_from(core.mempool.block_size()).unwrap_or(u32::MAX);
        Ok(UringEngine {
            ring,
            bufring,
            notify,
            info: BackendInfo {
                kind: BackendKind::IoUring,
                reason,
                features,
            },
            read_multi,
            timespecs,
            block_size,
            want_fixed: cfg.fixed_files,
            fixed: false,
            poll_first: cfg.socket_poll_first,
        })
    }

    pub(crate) fn multishot_mode_for(&self, kind: FileKind) -> MultishotMode {
        if self.read_multi && self.bufring.is_some() {
            MultishotMode::Native
        } else if self.bufring.is_none() {
            MultishotMode::PollThenRead(format!(
                "{kind:?}: no provided buffer ring, multishot = poll + read"
            ))
        } else {
            MultishotMode::PollThenRead(format!(
                "{kind:?}: kernel lacks IORING_OP_READ_MULTISHOT (6.7+), multishot = poll + read"
            ))
        }
    }

    pub(crate) fn enable(&mut self, core: &mut Core) -> io::Result<()> {
        if self.want_fixed && !core.devs.is_empty() {
            // Slot i = iodev i; software devices get an empty slot (-1).
            let fds: Vec<i32> = core
                .devs
                .iter()
                .map(|d| match d {
                    Dev::Fd { fd, .. } => fd.as_raw_fd(),
                    Dev::Soft(_) => -1,
                })
                .collect();
            match self.ring.submitter().register_files(&fds) {
                Ok(()) => {
                    self.fixed = true;
                    self.info
                        .features
                        .push("registered files (IOSQE_FIXED_FILE)".into());
                }
                Err(e) => self.info.features.push(format!(
                    "registered files unavailable ({e}): plain descriptors"
                )),
            }
        }
        self.ring.submitter().register_enable_rings()?;
        self.arm_wake(core);
        Ok(())
    }

    fn arm_wake(&mut self, core: &Core) {
        let e = opcode::PollAdd::new(Fd(core.signals.wake.as_raw_fd()), libc::POLLIN as u32)
            .multi(true)
            .build()
            .user_data(ud(TAG_WAKE, 0, 0));
        self.push(&e);
    }

    pub(crate) fn notify_fd(&self) -> BorrowedFd<'_> {
        self.notify.as_fd()
    }

    pub(crate) fn kernel_overflow(&self) -> u64 {
        // `overflow` reads a kernel-updated counter; the completion queue view is cheap.
        // SAFETY: `completion_shared` requires that no other CompletionQueue view is alive,
        // which holds because we only create them inside `&mut self` methods.
        u64::from(unsafe { self.ring.completion_shared() }.overflow())
    }

    fn push(&mut self, e: &squeue::Entry) {
        if self.ring.submission().is_full() {
            // Make room: entries already queued are complete link groups (see `issue`).
            let r = self.ring.submit();
            debug_assert!(r.is_ok(), "io_uring submit failed: {r:?}");
        }
        // SAFETY: every pointer in the entries we build (slot buffers, tiny-write payloads in
        // slots, timespecs, mempool blocks) lives in boxed storage owned by the context that
        // outlives the ring's use of it: a slot and its buffers are not reused before its
        // completion is reaped.
        let r = unsafe { self.ring.submission().push(e) };
        debug_assert!(r.is_ok(), "submission queue full right after a submit");
    }

    fn sq_free(&mut self) -> usize {
        let sq = self.ring.submission();
        sq.capacity() - sq.len()
    }

    /// Pushes `idx` and, while its chain continues with fd transfers or delays, its
    /// successors, linked with `IOSQE_IO_LINK`.
    pub(crate) fn issue(&mut self, core: &mut Core, idx: u16) {
        if inline(core, idx) {
            // Regular file (memfd register file): run it now with pread/pwrite, see `inline`.
            let (res, block) = super::epoll::sync_io(core, idx);
            if let Some(b) = core.finish(idx, res, false, block) {
                self.give_back(core, b.id);
            }
            return;
        }
        // Count the group first: a link must not be split across two submits.
        let mut len = 0;
        let mut cur = idx;
        loop {
            len += 2;
            let n = core.slots[usize::from(cur)].next;
            if n == NONE || !self.linkable(core, n) {
                break;
            }
            cur = n;
        }
        if self.sq_free() < len {
            let r = self.ring.submit();
            debug_assert!(r.is_ok(), "io_uring submit failed: {r:?}");
        }
        let mut cur = idx;
        let mut kprev = NONE;
        loop {
            let n = core.slots[usize::from(cur)].next;
            let link = n != NONE && self.linkable(core, n);
            self.push_op(core, cur, link, kprev);
            kprev = cur;
            if !link {
                break;
            }
            let claimed = core.claim_buffers(n);
            debug_assert!(claimed, "linkable() checked the buffers");
            cur = n;
        }
    }

    fn linkable(&self, core: &Core, n: u16) -> bool {
        let s = &core.slots[usize::from(n)];
        s.state == State::Waiting
            && !s.canceled
            && !s.sqe.flags.contains(SqeFlags::MULTISHOT)
            && core.is_fd_op(n)
            && !inline(core, n)
            && (!matches!(s.sqe.op, Op::Read { buf: None, .. }) || self.bufring.is_some())
            && buffers_free(core, n)
    }

    fn push_op(&mut self, core: &mut Core, idx: u16, link: bool, kprev: u16) {
        let i = usize::from(idx);
        core.slots[i].state = State::InKernel;
        let (_, gn) = core.user_data(idx);
        let sqe = core.slots[i].sqe;
        let mut flags = if link {
            squeue::Flags::IO_LINK
        } else {
            squeue::Flags::empty()
        };
        // A NO_RESPONSE entry with a linked successor in this run skips its completion on
        // success (IOSQE_CQE_SKIP_SUCCESS): the successor's completion proves it succeeded
        // (see `finish_skipped_before`). Without this every link step would post a CQE and
        // end the owner's io_uring_enter wait, a return to user space per step. Mempool
        // reads (the CQE names the block) and transceives (two SQEs) always report.
        let skip = link
            && sqe.flags.contains(SqeFlags::NO_RESPONSE)
            && !matches!(sqe.op, Op::Read { buf: None, .. } | Op::Transceive { .. });
        if skip {
            flags |= squeue::Flags::SKIP_SUCCESS;
        }
        core.slots[i].kprev = kprev;
        core.slots[i].skipped = skip;
        let user = ud(TAG_OP, idx, gn);
        let off = |o: Option<u64>| o.unwrap_or(u64::MAX);
        let fixed = self.fixed;
        let fd_of = |core: &Core, d: IodevId| {
            if fixed {
                Target::Fixed(Fixed(u32::from(d.0)))
            } else {
                Target::Fd(Fd(core.dev_fd(d).map_or(-1, |f| f.as_raw_fd())))
            }
        };
        let entry = match sqe.op {
            Op::Read {
                iodev,
                buf: Some(b),
                len,
                offset: None,
            } if self.poll_first
                // Only an entry that ends its kernel link run: a short RECV (no MSG_WAITALL)
                // succeeds and would not break the link, where a short READ does, and the
                // skip-success bookkeeping (`finish_skipped_before`) relies on that.
                && !link
                && core
                    .dev_info(iodev)
                    .is_some_and(|x| x.kind == FileKind::Socket) =>
            {
                let ptr = core.buffer_ptr(b);
                on_target!(fd_of(core, iodev), |t| opcode::Recv::new(t, ptr, len)
                    .ioprio(POLL_FIRST)
                    .build())
            }
            Op::Read {
                iodev,
                buf: Some(b),
                len,
                offset,
            } => {
                let ptr = core.buffer_ptr(b);
                on_target!(fd_of(core, iodev), |t| opcode::Read::new(t, ptr, len)
                    .offset(off(offset))
                    .build())
            }
            Op::Read {
                iodev,
                buf: None,
                len,
                offset,
            } => {
                if sqe.flags.contains(SqeFlags::MULTISHOT) {
                    return self.arm_multishot(core, idx);
                }
                if self.bufring.is_none() {
                    // No buffer ring: run the read inline into a block we pick.
                    let (res, block) = super::epoll::sync_io(core, idx);
                    core.slots[i].state = State::Waiting;
                    if let Some(b) = core.finish(idx, res, false, block) {
                        self.give_back(core, b.id);
                    }
                    return;
                }
                on_target!(fd_of(core, iodev), |t| opcode::Read::new(
                    t,
                    std::ptr::null_mut(),
                    len
                )
                .offset(off(offset))
                .buf_group(BGID)
                .build()
                .flags(squeue::Flags::BUFFER_SELECT))
            }
            Op::Write {
                iodev,
                buf,
                len,
                offset,
            } => {
                let ptr = core.buffer_ptr(buf);
                on_target!(fd_of(core, iodev), |t| opcode::Write::new(t, ptr, len)
                    .offset(off(offset))
                    .build())
            }
            Op::TinyWrite {
                iodev, len, offset, ..
            } => {
                let Op::TinyWrite { data, .. } = &core.slots[i].sqe.op else {
                    return;
                };
                let ptr = data.as_ptr();
                on_target!(fd_of(core, iodev), |t| opcode::Write::new(
                    t,
                    ptr,
                    u32::from(len)
                )
                .offset(off(offset))
                .build())
            }
            Op::Transceive {
                iodev,
                tx,
                rx,
                len,
                offset,
            } => {
                core.slots[i].tx_err = 0;
                let (tp, rp) = (core.buffer_ptr(tx), core.buffer_ptr(rx));
                let w = on_target!(fd_of(core, iodev), |t| opcode::Write::new(t, tp, len)
                    .offset(off(offset))
                    .build())
                .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS)
                .user_data(ud(TAG_TX, idx, gn));
                self.push(&w);
                on_target!(fd_of(core, iodev), |t| opcode::Read::new(t, rp, len)
                    .offset(off(offset))
                    .build())
            }
            Op::Delay { deadline_ns } => {
                self.timespecs[i] = Timespec::new()
                    .sec(deadline_ns / 1_000_000_000)
                    .nsec(u32::try_from(deadline_ns % 1_000_000_000).unwrap_or(0));
                opcode::Timeout::new(&self.timespecs[i])
                    .flags(TimeoutFlags::ABS | TimeoutFlags::ETIME_SUCCESS)
                    .build()
            }
            _ => {
                debug_assert!(false, "executor op handed to the backend");
                return;
            }
        };
        let e = entry.user_data(user);
        let e = if link || skip { e.flags(flags) } else { e };
        self.push(&e);
    }

    fn arm_multishot(&mut self, core: &mut Core, idx: u16) {
        let i = usize::from(idx);
        core.slots[i].state = State::InKernel;
        let (_, gn) = core.user_data(idx);
        let Op::Read { iodev, len, .. } = core.slots[i].sqe.op else {
            return;
        };
        let fd = Fd(core.dev_fd(iodev).map_or(-1, |f| f.as_raw_fd()));
        let native = matches!(
            core.dev_info(iodev).map(|x| &x.multishot),
            Some(MultishotMode::Native)
        );
        let e = if native {
            opcode::ReadMulti::new(fd, len, BGID)
                .build()
                .user_data(ud(TAG_OP, idx, gn))
        } else {
            opcode::PollAdd::new(fd, libc::POLLIN as u32)
                .multi(true)
                .build()
                .user_data(ud(TAG_POLL, idx, gn))
        };
        self.push(&e);
    }

    fn issue_ms_read(&mut self, core: &mut Core, idx: u16) {
        let i = usize::from(idx);
        let (_, gn) = core.user_data(idx);
        let Op::Read { iodev, len, .. } = core.slots[i].sqe.op else {
            return;
        };
        let fd = Fd(core.dev_fd(iodev).map_or(-1, |f| f.as_raw_fd()));
        core.slots[i].read_inflight = true;
        let e = opcode::Read::new(fd, std::ptr::null_mut(), len)
            .offset(u64::MAX)
            .buf_group(BGID)
            .build()
            .flags(squeue::Flags::BUFFER_SELECT)
            .user_data(ud(TAG_MSREAD, idx, gn));
        self.push(&e);
    }

    pub(crate) fn cancel(&mut self, core: &mut Core, idx: u16) {
        let (_, gn) = core.user_data(idx);
        for tag in [TAG_OP, TAG_POLL, TAG_MSREAD] {
            let e = opcode::AsyncCancel::new(ud(tag, idx, gn))
                .build()
                .user_data(ud(TAG_CANCEL, idx, gn));
            self.push(&e);
        }
    }

    fn give_back(&mut self, core: &mut Core, id: u16) {
        if core.mempool.mark_released(id) {
            self.recycle_block(core, id);
        }
    }

    pub(crate) fn recycle_block(&mut self, core: &mut Core, id: u16) {
        match &mut self.bufring {
            Some(br) => {
                let p = core.mempool.block_ptr(id);
                br.push(p, self.block_size, id);
            }
            None => core.mempool.push_free(id),
        }
        if core.starved == 0 {
            return;
        }
        for i in 0..core.slots.len() {
            if core.slots[i].state == State::Starved {
                core.starved -= 1;
                core.stats.multishot_rearms += 1;
                let idx = u16::try_from(i).unwrap_or(NONE);
                self.arm_multishot(core, idx);
            }
        }
    }

    /// Deferred task work flagged by the kernel (`IORING_SQ_TASKRUN`, set up with
    /// `IORING_SETUP_TASKRUN_FLAG`), SQEs not yet submitted, or CQEs not yet reaped.
    pub(crate) fn work_pending(&mut self) -> bool {
        let sq = self.ring.submission();
        if sq.taskrun() || !sq.is_empty() || sq.cq_overflow() {
            return true;
        }
        drop(sq);
        !self.ring.completion().is_empty()
    }

    pub(crate) fn poll(&mut self, core: &mut Core, wait: bool) -> io::Result<()> {
        let r = if wait {
            self.ring.submit_and_wait(1)
        } else {
            self.ring.submit()
        };
        match r {
            Ok(_) => {}
            Err(e)
                if e.raw_os_error() == Some(libc::EINTR)
                    || e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => return Err(e),
        }
        self.reap(core);
        Ok(())
    }

    /// Submits what is queued and sleeps in ONE `io_uring_enter(GETEVENTS, min_complete =
    /// want)` until the kernel has posted `want` completions or `timeout_ns` passed
    /// (`IORING_ENTER_EXT_ARG`), then takes what was posted. With `DEFER_TASKRUN` the kernel
    /// wakes this thread for unlinked poll-armed requests only once enough task work is queued
    /// for `want` completions (lazy wake: `io_req_local_work_add` compares its count with
    /// `cq_wait_nr`), so completions of several devices cost one wake-up. A linked request's
    /// task work always wakes it.
    pub(crate) fn poll_many(
        &mut self,
        core: &mut Core,
        want: usize,
        timeout_ns: u64,
    ) -> io::Result<()> {
        let ts = Timespec::new()
            .sec(timeout_ns / 1_000_000_000)
            .nsec(u32::try_from(timeout_ns % 1_000_000_000).unwrap_or(0));
        let args = io_uring::types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EBUSY | libc::ETIME)
                ) => {}
            Err(e) => return Err(e),
        }
        self.reap(core);
        Ok(())
    }

    /// Takes every completion the kernel has posted.
    fn reap(&mut self, core: &mut Core) {
        loop {
            let mut batch = [(0_u64, 0_i32, 0_u32); 32];
            let mut n = 0;
            for c in self.ring.completion().take(batch.len()) {
                batch[n] = (c.user_data(), c.result(), c.flags());
                n += 1;
            }
            if n == 0 {
                return;
            }
            for &(u, res, flags) in &batch[..n] {
                self.complete(core, u, res, flags);
            }
        }
    }

    fn complete(&mut self, core: &mut Core, u: u64, mut res: i32, flags: u32) {
        let (tag, idx, gn) = ud_parts(u);
        if tag == TAG_WAKE {
            core.wake_seen = true;
            if !cqueue::more(flags) {
                self.arm_wake(core);
            }
            return;
        }
        if tag == TAG_CANCEL {
            return;
        }
        let i = usize::from(idx);
        let Some(slot) = core.slots.get(i) else {
            return;
        };
        if slot.state == State::Free || slot.gn & 0xff_ffff != gn {
            // A completion for an entry that already finished (e.g. a cancel raced it).
            if let Some(bid) = cqueue::buffer_select(flags) {
                core.mempool.mark_out(bid);
                self.give_back(core, bid);
            }
            return;
        }
        let block = cqueue::buffer_select(flags).map(|bid| {
            core.mempool.mark_out(bid);
            Block {
                id: bid,
                len: res.max(0).unsigned_abs(),
            }
        });
        if res == -libc::ENOBUFS {
            core.stats.mempool_exhausted += 1;
        }
        let op = slot.sqe.op;
        let multishot = slot.sqe.flags.contains(SqeFlags::MULTISHOT);
        let canceled = slot.canceled;
        let leftover = match tag {
            TAG_TX => {
                core.slots[i].tx_err = res;
                None
            }
            TAG_POLL => self.on_poll(core, idx, res, flags, canceled),
            TAG_MSREAD => {
                core.slots[i].read_inflight = false;
                self.on_shot(core, idx, res, false, block, canceled, true)
            }
            _ if multishot => {
                self.on_shot(core, idx, res, cqueue::more(flags), block, canceled, false)
            }
            _ => {
                self.finish_skipped_before(core, idx);
                if let Op::Delay { .. } = op {
                    if res == -libc::ETIME {
                        res = 0;
                    }
                }
                if let Op::Transceive { .. } = op {
                    let tx = core.slots[i].tx_err;
                    if tx < 0 {
                        res = tx;
                    }
                }
                let rest = core.slots[i].next;
                let broke = core.breaks_chain(idx, res);
                let first = core.finish(idx, res, false, block);
                if broke {
                    self.cancel_rest_of_run(core, idx, rest);
                }
                first
            }
        };
        if let Some(b) = leftover {
            self.give_back(core, b.id);
        }
    }

    /// Finishes, oldest first, the skipped (`IOSQE_CQE_SKIP_SUCCESS`) members of `idx`'s
    /// kernel run that precede it: the kernel started `idx` only after they succeeded with
    /// their full length (a short or failed one would have posted its CQE and broken the
    /// link).
    fn finish_skipped_before(&mut self, core: &mut Core, idx: u16) {
        let skipped_in_kernel = |core: &Core, p: u16| {
            p != NONE && {
                let s = &core.slots[usize::from(p)];
                s.state == State::InKernel && s.skipped
            }
        };
        let mut head = NONE;
        let mut p = core.slots[usize::from(idx)].kprev;
        while skipped_in_kernel(core, p) {
            head = p;
            p = core.slots[usize::from(p)].kprev;
        }
        let mut cur = head;
        while cur != NONE && cur != idx {
            let next = core.slots[usize::from(cur)].next;
            let s = &core.slots[usize::from(cur)];
            let res = match s.sqe.op {
                Op::Delay { .. } => 0,
                op => i32::try_from(op.transfer_len()).unwrap_or(i32::MAX),
            };
            if let Some(b) = core.finish(cur, res, false, None) {
                self.give_back(core, b.id);
            }
            cur = next;
        }
    }

    /// After `idx` broke its chain, completes the rest of its kernel run (`rest` onwards) with
    /// `-ECANCELED` now: the kernel cancels them too, but skips their CQEs when the failed
    /// entry was a skip-success one (`REQ_F_SKIP_LINK_CQES`). Late CQEs of these slots are
    /// recognised as stale by their generation and dropped.
    fn cancel_rest_of_run(&mut self, core: &mut Core, idx: u16, rest: u16) {
        let (mut prev, mut cur) = (idx, rest);
        while cur != NONE {
            let s = &core.slots[usize::from(cur)];
            if s.state != State::InKernel || s.kprev != prev {
                break;
            }
            let next = s.next;
            if let Some(b) = core.finish(cur, -libc::ECANCELED, false, None) {
                self.give_back(core, b.id);
            }
            prev = cur;
            cur = next;
        }
    }

    fn on_poll(
        &mut self,
        core: &mut Core,
        idx: u16,
        res: i32,
        flags: u32,
        canceled: bool,
    ) -> Option<Block> {
        let i = usize::from(idx);
        if res < 0 || canceled {
            if core.slots[i].read_inflight {
                // The read's completion will end the entry.
                core.slots[i].canceled = true;
                return None;
            }
            return core.finish(
                idx,
                if canceled { -libc::ECANCELED } else { res },
                false,
                None,
            );
        }
        if !cqueue::more(flags) {
            core.stats.multishot_rearms += 1;
            self.arm_multishot(core, idx);
        }
        if !core.slots[i].read_inflight && core.slots[i].state != State::Starved {
            self.issue_ms_read(core, idx);
        }
        None
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "one completion's fields, unpacked once"
    )]
    fn on_shot(
        &mut self,
        core: &mut Core,
        idx: u16,
        res: i32,
        more: bool,
        block: Option<Block>,
        canceled: bool,
        poll_mode: bool,
    ) -> Option<Block> {
        let i = usize::from(idx);
        if canceled || res == -libc::ECANCELED {
            if poll_mode || !more {
                // Native: the cancel ended the request. Poll mode: cancel the poll too (done
                // in `cancel`); this was the last read.
                let first = core.finish(idx, -libc::ECANCELED, false, None);
                if let Some(b) = block {
                    self.give_back(core, b.id);
                }
                return first;
            }
            return block;
        }
        if res == -libc::ENOBUFS {
            // Pool empty: report it, keep the entry, re-arm when a block comes back.
            core.slots[i].state = State::Starved;
            core.starved += 1;
            if !poll_mode && more {
                // Native multishot still armed in the kernel; cancel it so it does not spin.
                self.cancel(core, idx);
            }
            return core.finish(idx, res, true, None);
        }
        if res < 0 {
            let first_arm = core.slots[i].shots == 0 && !poll_mode;
            if first_arm && matches!(-res, libc::EINVAL | libc::EOPNOTSUPP | libc::EBADFD) {
                // This descriptor cannot keep a multishot read armed: fall back and say so.
                if let Op::Read { iodev, .. } = core.slots[i].sqe.op {
                    if let Some(info) = core.dev_info_mut(iodev) {
                        info.multishot = MultishotMode::PollThenRead(format!(
                            "IORING_OP_READ_MULTISHOT refused on {} ({}): multishot = poll + read",
                            info.name,
                            io::Error::from_raw_os_error(-res)
                        ));
                    }
                }
                self.arm_multishot(core, idx);
                return None;
            }
            return core.finish(idx, res, false, block);
        }
        if !poll_mode && !more {
            // The kernel ended the multishot read without an error (e.g. CQ overflow): re-arm.
            core.stats.multishot_rearms += 1;
            self.arm_multishot(core, idx);
        }
        core.finish(idx, res, true, block)
    }
}

/// Whether `idx` is a transfer on a descriptor that cannot be polled (a regular file: memfd,
/// tmpfs, disk) and is not `O_NONBLOCK`, which the executor runs inline with
/// `pread`/`pwrite` instead of as an SQE.
///
/// Why: a file without `FMODE_NOWAIT` (shmem has none) is blocking to io_uring, which then
/// punts every transfer on it to an io-wq worker thread (two context switches, more than the
/// syscall it saves). With `O_NONBLOCK` on the description `io_file_get_flags` marks the
/// request `REQ_F_SUPPORT_NOWAIT`: reads are tried inline with `IOCB_NOWAIT` and a resident
/// shmem page never says `-EAGAIN`, so the whole chain runs in the kernel (writes may still
/// punt when they must update the file's mtime: `file_modified_flags` refuses that under
/// `IOCB_NOWAIT`). The chain semantics are unchanged either way.
fn inline(core: &Core, idx: u16) -> bool {
    let s = &core.slots[usize::from(idx)];
    !s.sqe.flags.contains(SqeFlags::MEMPOOL_BUFFER)
        && s.sqe
            .op
            .iodev()
            .and_then(|d| core.dev_info(d))
            .is_some_and(|i| !i.pollable && !i.nonblocking)
}

fn buffers_free(core: &Core, n: u16) -> bool {
    let ids: [u16; 2] = match core.slots[usize::from(n)].sqe.op {
        Op::Read { buf: Some(b), .. } => [b.0, NONE],
        Op::Write { buf, .. } => [buf.0, NONE],
        Op::Transceive { tx, rx, .. } => [tx.0, rx.0],
        _ => [NONE, NONE],
    };
    ids.iter()
        .all(|&id| id == NONE || !core.busy[usize::from(id)])
}

impl std::fmt::Debug for UringEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringEngine")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

// Keep the `Dev` import meaningful for readers: fd devices are the only ones this backend runs.
const _: fn(&Dev) = |_| {};
