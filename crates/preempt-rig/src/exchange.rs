//! The controller's end of the SPI exchange, on preempt's RTIO layer: one transaction is
//! one chain of four linked entries submitted at once, so the sample task makes one
//! `io_uring_enter` per exchange and sleeps until the plant answers.
//!
//! ```text
//!  write TX frame -> page[TX_OFF]   (chained, no completion)
//!  write 1        -> doorbell       (chained, no completion)
//!  read 8 bytes   <- done           (chained, no completion; waits for the plant)
//!  read RX frame  <- page[RX_OFF]   (the one completion)
//! ```
//!
//! A failing entry fails the rest of the chain with `-ECANCELED` and every error has its own
//! completion (`rtio::context`), so [`Exchange::transfer_bytes`] sees any failure.
//!
//! The context must be created on the thread that submits (io_uring's `SINGLE_ISSUER`), so
//! the app creates it in a task of the sample's priority, not in `init`.
//!
//! The chain moves bytes ([`Exchange::transfer_bytes`]) of the lengths given at set-up, so
//! any plant on the page's slots uses it: the gimbal's frames (`preempt_gimbal::frame::transfer`)
//! and `preempt-uav`'s rotor commands and sensor frames.

use std::io;
use std::os::fd::OwnedFd;

use preempt_io::rtio::{BufferId, IodevId, Rtio, RtioConfig, Sqe};

use crate::page::{self, SLOT_LEN};

/// The userdata of the chain's last entry.
const DONE: u64 = 0x5350_4921; // "SPI!"

thread_local! {
    /// The exchange of the thread that made it ([`install_here`]): the executor thread of
    /// the app's exchanging task, the only one to submit (io_uring `SINGLE_ISSUER`; the
    /// context is not `Send`, so it cannot be an app resource).
    static HERE: std::cell::RefCell<Option<Exchange>> = const { std::cell::RefCell::new(None) };
}

/// Sets up an exchange of `tx_len`/`rx_len`-byte frames on the calling thread; returns its
/// backend's name.
///
/// # Errors
/// The set-up error, as a message for the run's result.
pub fn install_here(fds: [OwnedFd; 3], tx_len: usize, rx_len: usize) -> Result<String, String> {
    let mut x = Exchange::with_lengths(fds, tx_len, rx_len)
        .map_err(|e| format!("cannot set up the RTIO exchange: {e}"))?;
    // Close the context's set-up here (the engine enabled, its buffers registered: allocations
    // and system calls), not in the first transfer of the real-time loop.
    x.rtio
        .run_pending()
        .map_err(|e| format!("cannot start the RTIO exchange: {e}"))?;
    let backend = x.backend();
    HERE.with(|e| *e.borrow_mut() = Some(x));
    Ok(backend)
}

/// [`install_here`] for the descriptors an app's set-up task holds (`None`: already done),
/// storing the backend's name in `backend` for the run's result.
///
/// # Errors
/// The set-up error, as a message.
pub fn set_up_here(
    fds: Option<[OwnedFd; 3]>,
    tx_len: usize,
    rx_len: usize,
    backend: &std::sync::Mutex<String>,
) -> Result<(), String> {
    let Some(fds) = fds else {
        return Ok(());
    };
    let name = install_here(fds, tx_len, rx_len)?;
    // Once, at set-up (not on a periodic path): a lock is fine here.
    *backend.lock().unwrap_or_else(|e| e.into_inner()) = name;
    Ok(())
}

/// Runs `f` on the calling thread's exchange; `None` when it has none (its set-up failed).
pub fn with_here<R>(f: impl FnOnce(&mut Exchange) -> R) -> Option<R> {
    HERE.with(|e| e.borrow_mut().as_mut().map(f))
}

/// An RTIO context set up for transactions with the plant.
pub struct Exchange {
    rtio: Rtio,
    page: IodevId,
    doorbell: IodevId,
    done: IodevId,
    tx: BufferId,
    ack: BufferId,
    rx: BufferId,
    tx_len: usize,
    rx_len: usize,
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("backend", &self.rtio.backend().kind)
            .finish_non_exhaustive()
    }
}

impl Exchange {
    /// A context on (page, doorbell, done), as `PlantProcess::dup_fds` returns them, whose
    /// transactions send `tx_len` and receive `rx_len` bytes (each at most [`SLOT_LEN`]).
    ///
    /// # Errors
    /// `InvalidInput` for a length beyond the slot; io_uring/epoll set-up errors.
    pub(crate) fn with_lengths(
        [page, doorbell, done]: [OwnedFd; 3],
        tx_len: usize,
        rx_len: usize,
    ) -> io::Result<Exchange> {
        if tx_len > SLOT_LEN || rx_len > SLOT_LEN || tx_len == 0 || rx_len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("frames of {tx_len}/{rx_len} bytes: expected 1..={SLOT_LEN}"),
            ));
        }
        let mut rtio = Rtio::new(RtioConfig {
            sq_size: 8,
            cq_size: 8,
            mempool_blocks: 0,
            notify_eventfd: false,
            ..RtioConfig::default()
        })?;
        let page = rtio.register_fd("plant-page", page)?;
        let doorbell = rtio.register_fd("plant-doorbell", doorbell)?;
        let done = rtio.register_fd("plant-done", done)?;
        let buf = |r: &mut Rtio, n| r.alloc_buffer(n).map_err(io::Error::other);
        let tx = buf(&mut rtio, tx_len)?;
        let ack = buf(&mut rtio, 8)?;
        let rx = buf(&mut rtio, rx_len)?;
        Ok(Exchange {
            rtio,
            page,
            doorbell,
            done,
            tx,
            ack,
            rx,
            tx_len,
            rx_len,
        })
    }

    /// The backend in use (io_uring or epoll), for the report.
    pub fn backend(&self) -> String {
        format!("{:?}", self.rtio.backend().kind)
    }

    /// One transaction of raw frames: sends `tx` (the set-up's TX length), fills `rx` (its
    /// RX length) with what the plant sent meanwhile.
    ///
    /// # Errors
    /// `InvalidInput` for slices of other lengths; any entry's error (a closed descriptor, a
    /// short transfer).
    pub fn transfer_bytes(&mut self, tx: &[u8], rx: &mut [u8]) -> io::Result<()> {
        if tx.len() != self.tx_len || rx.len() != self.rx_len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "frames of {}/{} bytes for an exchange set up for {}/{}",
                    tx.len(),
                    rx.len(),
                    self.tx_len,
                    self.rx_len
                ),
            ));
        }
        let e = io::Error::other;
        self.rtio
            .buffer_mut(self.tx)
            .map_err(e)?
            .copy_from_slice(tx);
        let (tx_len, rx_len) = (self.tx_len as u32, self.rx_len as u32);
        let r = &mut self.rtio;
        r.prepare(
            Sqe::write(self.page, self.tx, tx_len)
                .at(page::TX_OFF as u64)
                .chained()
                .no_response(),
        )
        .map_err(e)?;
        r.prepare(
            Sqe::tiny_write(self.doorbell, &1_u64.to_ne_bytes())
                .chained()
                .no_response(),
        )
        .map_err(e)?;
        r.prepare(Sqe::read(self.done, self.ack, 8).chained().no_response())
            .map_err(e)?;
        r.prepare(
            Sqe::read(self.page, self.rx, rx_len)
                .at(page::RX_OFF as u64)
                .userdata(DONE),
        )
        .map_err(e)?;
        r.submit(1)?;
        let mut first_error = None;
        loop {
            let c = r.cqe_consume_block()?;
            if c.result < 0 && first_error.is_none() {
                first_error = Some(io::Error::from_raw_os_error(-c.result));
            }
            if c.userdata == DONE {
                if let Some(err) = first_error {
                    return Err(err);
                }
                if c.result != rx_len as i32 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("short RX frame: {} of {rx_len} bytes", c.result),
                    ));
                }
                break;
            }
        }
        rx.copy_from_slice(self.rtio.buffer(self.rx).map_err(e)?);
        Ok(())
    }
}
