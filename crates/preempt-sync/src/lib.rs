//! Real-time synchronisation for Linux threads, usable on its own.
//!
//! | module     | what                                                                  |
//! |------------|-----------------------------------------------------------------------|
//! | [`clock`]  | `CLOCK_MONOTONIC` nanoseconds, the time base of all deadlines          |
//! | [`futex`]  | raw, checked `futex(2)` calls: wait/wake with absolute monotonic deadlines, PI lock/unlock |
//! | [`queue`]  | [`MpscQueue`](queue::MpscQueue): bounded lock-free MPSC FIFO, `const fn new` |
//! | [`event`]  | [`Event`](event::Event): consumer wake-up, a system call only if it sleeps |
//! | [`timed`]  | [`TimerQueue`](timed::TimerQueue): timed MPSC queue, sleeps until the earliest release |
//! | [`pcp`]    | [`PcpMutex`](pcp::PcpMutex): original Priority Ceiling Protocol on PI futexes |
//!
//! Everything is constructible in `static`s (all constructors are `const fn`) and nothing
//! allocates after construction. Deadlines are absolute `CLOCK_MONOTONIC` nanoseconds.
//!
//! The lock-free algorithms sit behind a [loom] shim: `RUSTFLAGS="--cfg loom"` swaps the
//! atomics for loom's and the futex calls for a model (see the crate README for the
//! command). Under loom the constructors are not `const` and [`pcp::MAX_CEILING`] is 7.
//!
//! ## API notes
//!
//! Additions to the contract in `notes/sync-api.md` (nothing was removed or renamed):
//! - [`Event::wait_until`](event::Event::wait_until) returns a [`Woke`](event::Woke)
//!   (`Notified` or `Deadline`) instead of `()`; ignoring it is fine. The protocol needs no
//!   `prepare_wait`: drain the queue, then call `wait_until` (see [`event`]).
//! - [`TimerQueue`](timed::TimerQueue) also has `push(value)` (due at once, before every
//!   timed value, FIFO) and `unsafe fn wait()` (consumer sleeps until the earliest release
//!   or an earlier push), so one `TimerQueue` can be an executor's whole run queue.
//! - [`PcpMutex::lock`](pcp::PcpMutex::lock) panics if `priority > ceiling` or on a
//!   re-entrant lock of one mutex; nested locks of *different* mutexes are the multi-lock.
//! - [`futex::lock_pi`] returns `Err` of kind `TimedOut` when its deadline passes.
//!
//! [loom]: https://docs.rs/loom/0.7

pub mod clock;
pub mod event;
pub mod futex;
pub(crate) mod loom;
pub mod pcp;
pub mod queue;
pub mod timed;
