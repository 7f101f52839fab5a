//! Event sources behind file descriptors, for hardware tasks, and a poller that waits on many of
//! them until an absolute deadline.
//!
//! On a microcontroller an RTIC hardware task is bound to an interrupt; on Linux the interrupt
//! reaches user space as a file descriptor becoming readable: a timer expiring (timerfd),
//! another thread signalling (eventfd), a datagram arriving (UDP, UNIX socket), bytes on a UART
//! (serial port) or an edge on a GPIO line (GPIO character device). An executor waits on the
//! descriptors of its priority level with [`Poller`] and runs the task bound to a ready one;
//! the task calls [`FdSource::read_event`] (or [`FdSource::drain`]) to take what arrived, which
//! also *acknowledges* it: the descriptor stops being readable, as clearing an interrupt flag
//! stops an interrupt. A task that leaves an event unread is run again at once (epoll is
//! level-triggered here), so nothing is lost silently.
//!
//! | source                  | event                                      | acknowledging read   |
//! |-------------------------|--------------------------------------------|----------------------|
//! | [`TimerSource`]         | expirations since the last read (`u64`)    | `read` of 8 bytes    |
//! | [`EventSource`]         | sum of the values signalled (`u64`)        | `read` of 8 bytes    |
//! | [`UdpSource`]           | one [`Datagram`] with its sender           | `recvfrom`           |
//! | [`UnixDatagramSource`]  | one [`Datagram`] with its sender           | `recvfrom`           |
//! | [`SerialSource`]        | the bytes waiting (`&[u8]`)                | `read`               |
//! | [`GpioSource`]          | one [`GpioEdge`] with its kernel time stamp | `read` of 48 bytes  |
//!
//! Every source is non-blocking (a read never sleeps), allocates only when it is built, and
//! reads into a buffer it owns, so `read_event` on the hot path neither allocates nor copies
//! beyond what the kernel writes.
//!
//! ```
//! use preempt_io::fd::{EventSource, FdSource, Poller, TimerSource};
//! use preempt_io::sys::clock;
//!
//! let mut timer = TimerSource::new()?;
//! let mut wake = EventSource::new()?;
//! let mut poller = Poller::new()?;
//! poller.register(&timer, 1)?;
//! poller.register(&wake, 2)?;
//! timer.arm_at(clock::monotonic_now_ns() + 200_000, 0)?;
//! wake.notifier()?.notify()?;
//!
//! let mut ready = [Default::default(); 4];
//! let mut seen = (0, 0);
//! while seen != (1, 1) {
//!     let deadline = clock::monotonic_now_ns() + 1_000_000_000;
//!     let n = poller.wait_until(&mut ready, Some(deadline))?;
//!     for ev in &ready[..n] {
//!         match ev.token {
//!             1 => seen.0 += timer.drain(16, |expirations| assert_eq!(expirations, 1))?,
//!             2 => seen.1 += wake.drain(16, |count| assert_eq!(count, 1))?,
//!             _ => unreachable!(),
//!         }
//!     }
//! }
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use std::os::fd::AsFd;

mod event;
mod gpio;
mod net;
mod poller;
mod serial;
mod timer;

pub use event::{EventSource, Notifier};
pub use gpio::{GpioEdge, GpioSource};
pub use net::{DEFAULT_CAPACITY, Datagram, UdpSource, UnixDatagramSource};
pub use poller::{DEADLINE_TOKEN, Poller};
pub use serial::SerialSource;
pub use timer::TimerSource;

/// A file descriptor that signals events by becoming readable. See the module docs.
pub trait FdSource: AsFd {
    /// What one event carries; may borrow the source's own buffer.
    type Event<'a>
    where
        Self: 'a;

    /// Takes one pending event without blocking, which acknowledges it. `Ok(None)` means
    /// nothing is pending (the kernel said `EAGAIN`).
    ///
    /// # Errors
    /// Whatever the read reports but `EAGAIN`; a hung-up source (serial line closed) is an
    /// error, so that a level-triggered poller does not spin on it.
    fn read_event(&mut self) -> io::Result<Option<Self::Event<'_>>>;

    /// Takes pending events, at most `max` (so a flood cannot starve the executor), handing
    /// each to `f`; returns how many.
    ///
    /// # Errors
    /// The first error of [`FdSource::read_event`]; the events before it were handed over.
    fn drain(&mut self, max: usize, mut f: impl FnMut(Self::Event<'_>)) -> io::Result<usize>
    where
        Self: Sized,
    {
        let mut n = 0;
        while n < max {
            match self.read_event()? {
                Some(event) => f(event),
                None => break,
            }
            n += 1;
        }
        Ok(n)
    }
}
