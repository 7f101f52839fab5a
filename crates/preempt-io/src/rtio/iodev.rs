//! I/O devices: what submissions are addressed to.
//!
//! Two kinds, as in Zephyr where a sensor driver and an SPI bus are both `rtio_iodev`s:
//!
//! * **File-descriptor devices** ([`Rtio::register_fd`](super::Rtio::register_fd)): a memfd
//!   register file, an eventfd INT line, `/dev/iio:deviceN`, a pipe, a socket, a tty. Their
//!   reads and writes are executed by the kernel through the backend (io_uring SQEs, or
//!   epoll + non-blocking syscalls), so a chain of them runs without waking the caller.
//!   Each is probed on registration ([`FdInfo`]).
//! * **Software devices** implementing [`Iodev`]: their `submit` is called by the executor and
//!   must be short and non-blocking; it completes the request at once or later from another
//!   thread through a [`Signaller`](super::Signaller).

use super::types::{Op, SqeHandle};
use crate::sys::fdio::FileKind;

/// A software I/O device (Zephyr's `struct rtio_iodev_api::submit`).
pub trait Iodev: Send {
    /// Short name for diagnostics.
    fn name(&self) -> &str;

    /// Starts `req`. Must not block, sleep or allocate. `req.data` holds the bytes to send
    /// (write, tiny write, transceive) and `req.rx` the buffer to fill (read, transceive).
    /// For a transaction, `submit` is called once per member in order with
    /// `req.in_transaction` set for all but the last.
    fn submit(&mut self, req: &mut IodevRequest<'_>) -> Submit;
}

/// A request as a software device sees it.
#[derive(Debug)]
pub struct IodevRequest<'a> {
    /// The op.
    pub op: Op,
    /// Handle to complete a `Pending` request later.
    pub handle: SqeHandle,
    /// Bytes to send.
    pub data: &'a [u8],
    /// Buffer to fill.
    pub rx: &'a mut [u8],
    /// More members of the same transaction follow.
    pub in_transaction: bool,
}

/// What [`Iodev::submit`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    /// Finished now with this result (bytes or `-errno`).
    Done(i32),
    /// Will be finished by [`Signaller::complete`](super::Signaller::complete) with the
    /// request's handle, from any thread.
    Pending,
}

/// How multishot reads run on a descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultishotMode {
    /// io_uring `IORING_OP_READ_MULTISHOT`: one armed request, one completion per arrival.
    Native,
    /// Readiness poll then a read per arrival (multishot poll on io_uring, epoll otherwise).
    /// The string says why native multishot is not used.
    PollThenRead(String),
    /// The descriptor cannot be polled (a regular file is always readable), so a multishot
    /// read would spin; multishot is refused with `-EINVAL`.
    Unsupported(String),
}

/// What the registration probe found about a descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FdInfo {
    /// Name given at registration.
    pub name: String,
    /// `fstat` file type.
    pub kind: FileKind,
    /// Whether epoll accepts it (readiness-driven); regular files and memfds are not.
    pub pollable: bool,
    /// How multishot reads run on it.
    pub multishot: MultishotMode,
    /// Whether its open file description is `O_NONBLOCK`. On io_uring a transfer on a
    /// non-pollable, non-`O_NONBLOCK` file (a plain memfd) is run by the executor with
    /// `pread`/`pwrite`, since the kernel would punt it to an io-wq worker; an `O_NONBLOCK`
    /// one (see `sys::fdio::reopen_nonblocking`) is linked into the kernel chain and runs
    /// inline in the task work that continues the chain.
    pub nonblocking: bool,
}
