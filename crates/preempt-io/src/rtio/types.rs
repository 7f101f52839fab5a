//! Submission and completion entries, their flags, handles and errors: the RTIO vocabulary.
//!
//! Names follow Zephyr's `include/zephyr/rtio/rtio.h` (`RTIO_SQE_CHAINED`, `RTIO_OP_TINY_TX`,
//! …) with Rust spelling; the semantics that differ from Zephyr are stated where they differ.

use std::fmt;

/// Largest payload of a [`Op::TinyWrite`], stored inside the entry itself (Zephyr: 7 bytes;
/// 16 here so a 64-bit register address plus a 64-bit value fit).
pub const TINY_WRITE_MAX: usize = 16;

/// Index of a device registered with an [`Rtio`](super::Rtio) context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IodevId(pub(crate) u16);

impl IodevId {
    /// The index in the context's device table.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// A buffer allocated from a context at setup ([`Rtio::alloc_buffer`](super::Rtio::alloc_buffer)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferId(pub(crate) u16);

/// A generation-checked reference to a submitted entry, for [`cancel`](super::Rtio::cancel)
/// and [`Signaller::signal`](super::Signaller::signal).
///
/// The pool slot behind a handle is reused once its entry completes; the slot's generation
/// changes then, so an old handle is recognised as stale instead of acting on a stranger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SqeHandle {
    pub(crate) idx: u16,
    pub(crate) gn: u32,
}

impl SqeHandle {
    /// Slot index in the submission pool.
    pub fn slot(self) -> usize {
        usize::from(self.idx)
    }

    /// Generation of the slot when the handle was made.
    pub fn generation(self) -> u32 {
        self.gn
    }
}

/// A callback run by the executor as part of a chain (`RTIO_OP_CALLBACK`). Its return value
/// is the entry's result: negative (an `-errno`) fails the chain like a failed I/O would.
pub type CallbackFn = fn(&mut super::CallbackCx<'_>) -> i32;

/// What an entry does.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// Completes at once with 0 (`RTIO_OP_NOP`).
    Nop,
    /// Reads up to `len` bytes into `buf` (or a mempool block when `buf` is `None`, which
    /// requires [`SqeFlags::MEMPOOL_BUFFER`]) at `offset` (`None`: the current position).
    Read {
        /// Device.
        iodev: IodevId,
        /// Destination; `None` = mempool block chosen at completion.
        buf: Option<BufferId>,
        /// Bytes requested.
        len: u32,
        /// File offset (register address); `None` uses the file position / a stream.
        offset: Option<u64>,
    },
    /// Writes `len` bytes of `buf` at `offset`.
    Write {
        /// Device.
        iodev: IodevId,
        /// Source.
        buf: BufferId,
        /// Bytes.
        len: u32,
        /// File offset; `None` = current position / stream.
        offset: Option<u64>,
    },
    /// Writes up to [`TINY_WRITE_MAX`] bytes carried in the entry itself (`RTIO_OP_TINY_TX`):
    /// a register write needs no buffer.
    TinyWrite {
        /// Device.
        iodev: IodevId,
        /// Payload (the first `len` bytes count).
        data: [u8; TINY_WRITE_MAX],
        /// Payload length.
        len: u8,
        /// File offset; `None` = current position / stream.
        offset: Option<u64>,
    },
    /// Writes `tx` then reads `len` bytes into `rx` as one operation (`RTIO_OP_TXRX`; on a
    /// file descriptor: a write linked to a read, the result is the read's).
    Transceive {
        /// Device.
        iodev: IodevId,
        /// Bytes sent.
        tx: BufferId,
        /// Bytes received.
        rx: BufferId,
        /// Length of both.
        len: u32,
        /// File offset of both; `None` = stream.
        offset: Option<u64>,
    },
    /// Runs `f` in the executor (`RTIO_OP_CALLBACK`).
    Callback {
        /// The function.
        f: CallbackFn,
        /// Its argument (Zephyr's `arg0`).
        arg: u64,
    },
    /// Completes with 0 at the absolute `CLOCK_MONOTONIC` time `deadline_ns` (`RTIO_OP_DELAY`;
    /// io_uring: `IORING_OP_TIMEOUT` with `IORING_TIMEOUT_ABS`).
    Delay {
        /// Absolute deadline.
        deadline_ns: u64,
    },
    /// Completes when another thread calls [`Signaller::signal`](super::Signaller::signal) on
    /// its handle (`RTIO_OP_AWAIT` / `rtio_sqe_signal`).
    Await,
}

impl Op {
    /// The device the op addresses, if any (callback, delay, await and nop run in the
    /// executor).
    pub fn iodev(&self) -> Option<IodevId> {
        match *self {
            Op::Read { iodev, .. }
            | Op::Write { iodev, .. }
            | Op::TinyWrite { iodev, .. }
            | Op::Transceive { iodev, .. } => Some(iodev),
            Op::Nop | Op::Callback { .. } | Op::Delay { .. } | Op::Await => None,
        }
    }

    /// Bytes a transfer asks for (0 for non-transfers).
    pub fn transfer_len(&self) -> u32 {
        match *self {
            Op::Read { len, .. } | Op::Write { len, .. } | Op::Transceive { len, .. } => len,
            Op::TinyWrite { len, .. } => u32::from(len),
            _ => 0,
        }
    }
}

/// Submission flags (Zephyr's `RTIO_SQE_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SqeFlags(u16);

impl SqeFlags {
    /// The next entry starts only after this one succeeds; if this one fails, every later
    /// entry of the chain completes with `-ECANCELED` (io_uring's `IOSQE_IO_LINK` rule).
    pub const CHAINED: SqeFlags = SqeFlags(1);
    /// The next entry is part of the same device transaction (e.g. one SPI transfer with CS
    /// held): the device receives them together.
    pub const TRANSACTION: SqeFlags = SqeFlags(1 << 1);
    /// The read buffer comes from the context's memory pool at completion time.
    pub const MEMPOOL_BUFFER: SqeFlags = SqeFlags(1 << 2);
    /// The entry stays armed after each completion until cancelled or failed.
    pub const MULTISHOT: SqeFlags = SqeFlags(1 << 3);
    /// No completion entry on success (errors still produce one; io_uring's
    /// `IOSQE_CQE_SKIP_SUCCESS`).
    pub const NO_RESPONSE: SqeFlags = SqeFlags(1 << 4);

    /// No flags.
    pub const fn empty() -> SqeFlags {
        SqeFlags(0)
    }

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: SqeFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Union.
    #[must_use]
    pub const fn union(self, other: SqeFlags) -> SqeFlags {
        SqeFlags(self.0 | other.0)
    }
}

impl std::ops::BitOr for SqeFlags {
    type Output = SqeFlags;
    fn bitor(self, rhs: SqeFlags) -> SqeFlags {
        self.union(rhs)
    }
}

/// A submission queue entry: an op plus flags and the caller's `userdata`.
///
/// Built with the constructors and chained setters, then handed to
/// [`Rtio::prepare`](super::Rtio::prepare):
///
/// ```
/// use preempt_io::rtio::{Sqe, SqeFlags};
/// # fn f(dev: preempt_io::rtio::IodevId, buf: preempt_io::rtio::BufferId) {
/// let sqe = Sqe::read(dev, buf, 4).at(0x10).chained().userdata(7);
/// assert!(sqe.flags().contains(SqeFlags::CHAINED));
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Sqe {
    pub(crate) op: Op,
    pub(crate) flags: SqeFlags,
    pub(crate) userdata: u64,
}

impl Sqe {
    fn new(op: Op) -> Sqe {
        Sqe {
            op,
            flags: SqeFlags::empty(),
            userdata: 0,
        }
    }

    /// A no-op.
    pub fn nop() -> Sqe {
        Sqe::new(Op::Nop)
    }

    /// Reads `len` bytes into `buf`.
    pub fn read(iodev: IodevId, buf: BufferId, len: u32) -> Sqe {
        Sqe::new(Op::Read {
            iodev,
            buf: Some(buf),
            len,
            offset: None,
        })
    }

    /// Reads up to `max_len` bytes into a memory-pool block taken at completion (sets
    /// [`SqeFlags::MEMPOOL_BUFFER`]); the completion carries the block.
    pub fn read_mempool(iodev: IodevId, max_len: u32) -> Sqe {
        let mut s = Sqe::new(Op::Read {
            iodev,
            buf: None,
            len: max_len,
            offset: None,
        });
        s.flags = SqeFlags::MEMPOOL_BUFFER;
        s
    }

    /// Writes `len` bytes of `buf`.
    pub fn write(iodev: IodevId, buf: BufferId, len: u32) -> Sqe {
        Sqe::new(Op::Write {
            iodev,
            buf,
            len,
            offset: None,
        })
    }

    /// Writes `data` (at most [`TINY_WRITE_MAX`] bytes, longer is cut) from inside the entry.
    pub fn tiny_write(iodev: IodevId, data: &[u8]) -> Sqe {
        let n = data.len().min(TINY_WRITE_MAX);
        let mut d = [0_u8; TINY_WRITE_MAX];
        d[..n].copy_from_slice(&data[..n]);
        // n <= 16 always fits in u8.
        let len = u8::try_from(n).unwrap_or(u8::MAX);
        Sqe::new(Op::TinyWrite {
            iodev,
            data: d,
            len,
            offset: None,
        })
    }

    /// Writes `tx` and reads `len` bytes into `rx`.
    pub fn transceive(iodev: IodevId, tx: BufferId, rx: BufferId, len: u32) -> Sqe {
        Sqe::new(Op::Transceive {
            iodev,
            tx,
            rx,
            len,
            offset: None,
        })
    }

    /// Calls `f(cx)` in the executor; `cx.arg()` returns `arg`.
    pub fn callback(f: CallbackFn, arg: u64) -> Sqe {
        Sqe::new(Op::Callback { f, arg })
    }

    /// Completes at the absolute `CLOCK_MONOTONIC` time `deadline_ns`.
    pub fn delay_until(deadline_ns: u64) -> Sqe {
        Sqe::new(Op::Delay { deadline_ns })
    }

    /// Completes when signalled through a [`Signaller`](super::Signaller).
    pub fn await_signal() -> Sqe {
        Sqe::new(Op::Await)
    }

    /// Sets the file offset (register address) of a transfer; ignored by other ops.
    #[must_use]
    pub fn at(mut self, off: u64) -> Sqe {
        match &mut self.op {
            Op::Read { offset, .. }
            | Op::Write { offset, .. }
            | Op::TinyWrite { offset, .. }
            | Op::Transceive { offset, .. } => *offset = Some(off),
            _ => {}
        }
        self
    }

    /// Sets [`SqeFlags::CHAINED`].
    #[must_use]
    pub fn chained(self) -> Sqe {
        self.flag(SqeFlags::CHAINED)
    }

    /// Sets [`SqeFlags::TRANSACTION`].
    #[must_use]
    pub fn transaction(self) -> Sqe {
        self.flag(SqeFlags::TRANSACTION)
    }

    /// Sets [`SqeFlags::MULTISHOT`].
    #[must_use]
    pub fn multishot(self) -> Sqe {
        self.flag(SqeFlags::MULTISHOT)
    }

    /// Sets [`SqeFlags::NO_RESPONSE`].
    #[must_use]
    pub fn no_response(self) -> Sqe {
        self.flag(SqeFlags::NO_RESPONSE)
    }

    /// Adds `f` to the flags.
    #[must_use]
    pub fn flag(mut self, f: SqeFlags) -> Sqe {
        self.flags = self.flags | f;
        self
    }

    /// Sets the value the completion reports back.
    #[must_use]
    pub fn userdata(mut self, u: u64) -> Sqe {
        self.userdata = u;
        self
    }

    /// The op.
    pub fn op(&self) -> &Op {
        &self.op
    }

    /// The flags.
    pub fn flags(&self) -> SqeFlags {
        self.flags
    }

    /// The userdata.
    pub fn get_userdata(&self) -> u64 {
        self.userdata
    }
}

/// A memory-pool block a completion hands to the caller. Not `Clone`: give it back exactly
/// once with [`Rtio::release_block`](super::Rtio::release_block).
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a mempool block must be released with Rtio::release_block"]
pub struct Block {
    pub(crate) id: u16,
    pub(crate) len: u32,
}

impl Block {
    /// Block index in the pool.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// Valid bytes in the block.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether no byte is valid.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A completion queue entry.
#[derive(Debug)]
pub struct Cqe {
    /// Bytes transferred, 0, or a negative errno (`-ECANCELED` for the cancelled rest of a
    /// failed chain).
    pub result: i32,
    /// The submission's userdata.
    pub userdata: u64,
    /// A multishot entry that is still armed (io_uring's `IORING_CQE_F_MORE`).
    pub more: bool,
    /// The mempool block holding the data, for mempool reads.
    pub block: Option<Block>,
}

/// Errors of the RTIO API itself (I/O errors travel in [`Cqe::result`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RtioError {
    /// The submission pool has no free entry (size it with `RtioConfig::sq_size`).
    SubmissionPoolFull,
    /// The handle's entry has completed; its slot was reused or freed.
    StaleHandle,
    /// A device id that was not registered.
    UnknownIodev(u16),
    /// A buffer id that was not allocated.
    UnknownBuffer(u16),
    /// The buffer is in use by an in-flight entry.
    BufferBusy(u16),
    /// The entry is malformed (the text says how).
    Invalid(&'static str),
    /// A setup-only call after the first submission (no allocation after setup).
    SetupClosed,
}

impl fmt::Display for RtioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RtioError::SubmissionPoolFull => write!(
                f,
                "RTIO submission pool is full; raise RtioConfig::sq_size or consume completions"
            ),
            RtioError::StaleHandle => write!(f, "stale SQE handle: the entry already completed"),
            RtioError::UnknownIodev(i) => write!(f, "unknown iodev {i}"),
            RtioError::UnknownBuffer(i) => write!(f, "unknown buffer {i}"),
            RtioError::BufferBusy(i) => write!(f, "buffer {i} is in use by an in-flight entry"),
            RtioError::Invalid(why) => write!(f, "invalid submission: {why}"),
            RtioError::SetupClosed => write!(
                f,
                "setup call after the first submit (RTIO allocates nothing after setup)"
            ),
        }
    }
}

impl std::error::Error for RtioError {}

impl From<RtioError> for std::io::Error {
    fn from(e: RtioError) -> std::io::Error {
        std::io::Error::other(e)
    }
}

/// Counters of a context; nothing is dropped without being counted here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtioStats {
    /// Entries submitted to the executor.
    pub submitted: u64,
    /// Completions posted to the completion pool.
    pub completions: u64,
    /// Completions dropped because the completion pool was full (their mempool blocks are
    /// returned to the pool).
    pub cq_overflow: u64,
    /// Completions the kernel could not post to io_uring's own CQ ring (`cq.overflow`).
    pub kernel_cq_overflow: u64,
    /// Mempool reads that found the pool empty (`-ENOBUFS`).
    pub mempool_exhausted: u64,
    /// Multishot entries the executor re-armed after the kernel ended them.
    pub multishot_rearms: u64,
}

/// Which backend a context should use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// io_uring if it works here, else epoll (the reason is recorded).
    #[default]
    Auto,
    /// io_uring or an error.
    IoUring,
    /// epoll + non-blocking syscalls, even where io_uring works (tests, comparisons).
    Epoll,
}
