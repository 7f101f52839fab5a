//! Async software tasks with RTIC v2 semantics: `#[task(priority = N)] async fn t(cx: t::Context)`.
//!
//! Each async task has **one live instance**: `t::spawn(args)` creates its future and
//! returns `Err(args)` while a previous instance is still running. The future is polled
//! only by the executor of its priority, whenever its waker is woken, from any thread.
//!
//! # The path of a spawn and of a wake-up
//!
//! ```text
//! t::spawn(args)   running: false -> true (else Err(args))
//!                  push Start(args) on the level's queues (ready ring / inbox, as any spawn)
//! executor         Start(args): build the future in the task's slot, poll it
//! waker.wake()     queued: false -> true (else nothing: a poll is already on its way)
//!                  push Poll on the level's queues
//! executor         Poll: queued := false, poll the future
//! future Ready     drop it, running := false: the next spawn may start a new instance
//! ```
//!
//! The slot is allocated once at start-up, before any task runs (the future's size is only
//! known to the compiler, so it cannot be a `static`); starting and polling allocate
//! nothing. The future type is recovered at every use from the generated constructor
//! function `fn(A) -> F` (a zero-sized "witness" argument), as RTIC v2 does.
//!
//! The waker is a pointer to the task's static [`AsyncTask`] header and costs nothing to
//! clone or drop. At most one `Poll` message per task is in flight (the `queued` flag), plus
//! at most one `Start`, so two queue slots per task always suffice.

use std::cell::UnsafeCell;
use std::future::Future;
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use crate::executor::Dispatched;

/// The static header of an async task (one per `async fn` task, generated).
#[doc(hidden)]
pub struct AsyncTask {
    /// An instance exists (spawned and not yet finished).
    running: AtomicBool,
    /// A `Poll` message is queued.
    queued: AtomicBool,
    /// The slot: a leaked `Box<Slot<F>>`, set at start-up.
    slot: AtomicPtr<()>,
    /// Pushes the task's `Poll` message on its executor.
    enqueue_poll: fn(),
}

/// Where the future lives.
struct Slot<F> {
    future: UnsafeCell<Option<F>>,
}

impl AsyncTask {
    /// A header whose wake-ups call `enqueue_poll`.
    pub const fn new(enqueue_poll: fn()) -> AsyncTask {
        AsyncTask {
            running: AtomicBool::new(false),
            queued: AtomicBool::new(false),
            slot: AtomicPtr::new(ptr::null_mut()),
            enqueue_poll,
        }
    }

    /// Allocates the slot for futures made by `_make`. Called once per task by `run`, before
    /// any executor starts (allocates).
    pub fn allocate<A, F: Future<Output = ()>>(&'static self, _make: fn(A) -> F) {
        let slot: Box<Slot<F>> = Box::new(Slot {
            future: UnsafeCell::new(None),
        });
        let previous = self.slot.swap(Box::into_raw(slot).cast(), Ordering::AcqRel);
        assert!(previous.is_null(), "async task slot allocated twice");
    }

    /// Spawn side: claims the single instance. `false` if one is running.
    #[inline]
    pub fn try_claim(&self) -> bool {
        !self.running.swap(true, Ordering::AcqRel)
    }

    /// Spawn side: gives the claim back (the `Start` message could not be queued).
    #[inline]
    pub fn unclaim(&self) {
        self.running.store(false, Ordering::Release);
    }

    /// `true` while an instance exists.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    fn slot<A, F>(&self, _make: fn(A) -> F) -> &Slot<F> {
        let p = self.slot.load(Ordering::Acquire);
        assert!(
            !p.is_null(),
            "async task polled before its slot was allocated (app not started)"
        );
        // SAFETY: `allocate` stored a `Box<Slot<F>>` for this task's `make`, whose type is
        // the one the generated code passes here (the same function item every time), and
        // the box is never freed.
        unsafe { &*p.cast::<Slot<F>>() }
    }

    /// Executor side: builds the future from `args` and polls it.
    ///
    /// # Safety
    /// Only the executor thread of the task's level calls `start`/`poll`, one at a time, and
    /// `make` is the function whose slot `allocate` made.
    pub unsafe fn start<A, F: Future<Output = ()>>(
        &'static self,
        make: fn(A) -> F,
        args: A,
    ) -> Dispatched {
        let slot = self.slot(make);
        // SAFETY: the executor thread is the only one touching the slot (contract); no
        // reference into it is alive (polls do not outlive `poll_slot`).
        let future = unsafe { &mut *slot.future.get() };
        debug_assert!(future.is_none(), "async task started twice");
        *future = Some(make(args));
        // SAFETY: forwarded contract.
        unsafe { self.poll_slot(slot) }
    }

    /// Executor side: polls the future (a `Poll` message).
    ///
    /// # Safety
    /// As for [`start`](Self::start).
    pub unsafe fn poll<A, F: Future<Output = ()>>(&'static self, make: fn(A) -> F) -> Dispatched {
        self.queued.store(false, Ordering::Release);
        let slot = self.slot(make);
        // SAFETY: forwarded contract.
        unsafe { self.poll_slot(slot) }
    }

    /// # Safety
    /// As for [`start`](Self::start).
    unsafe fn poll_slot<F: Future<Output = ()>>(&'static self, slot: &Slot<F>) -> Dispatched {
        /// Drops a future that panicked and frees the instance, so the task can be spawned
        /// again after the executor reported the panic.
        struct OnUnwind<'a, F> {
            future: &'a mut Option<F>,
            task: &'static AsyncTask,
        }
        impl<F> Drop for OnUnwind<'_, F> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    *self.future = None;
                    self.task.running.store(false, Ordering::Release);
                }
            }
        }

        // SAFETY: exclusive access to the slot by the contract.
        let future = unsafe { &mut *slot.future.get() };
        let guard = OnUnwind { future, task: self };
        let Some(fut) = guard.future.as_mut() else {
            // A wake-up of an instance that has already finished.
            return Dispatched::Idle;
        };
        // SAFETY: the future lives in the leaked slot and is never moved until it is
        // dropped in place (set to `None`), so it stays pinned.
        let fut = unsafe { Pin::new_unchecked(fut) };
        let waker = self.waker();
        let mut cx = Context::from_waker(&waker);
        match fut.poll(&mut cx) {
            Poll::Pending => Dispatched::Pending,
            Poll::Ready(()) => {
                *guard.future = None;
                self.running.store(false, Ordering::Release);
                Dispatched::Done
            }
        }
    }

    #[inline]
    fn wake(&self) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            (self.enqueue_poll)();
        }
    }

    fn waker(&'static self) -> Waker {
        let raw = RawWaker::new((self as *const AsyncTask).cast(), &VTABLE);
        // SAFETY: the data pointer is a `&'static AsyncTask`, valid forever; the vtable's
        // functions only read it and are thread-safe (atomics, then `enqueue_poll`, which
        // pushes on an MPSC queue or, on the executor's own thread, its ready ring).
        unsafe { Waker::from_raw(raw) }
    }
}

static VTABLE: RawWakerVTable =
    RawWakerVTable::new(clone_waker, wake_waker, wake_waker, drop_waker);

unsafe fn clone_waker(data: *const ()) -> RawWaker {
    RawWaker::new(data, &VTABLE)
}

unsafe fn wake_waker(data: *const ()) {
    // SAFETY: `data` is the `&'static AsyncTask` of `AsyncTask::waker`.
    unsafe { &*data.cast::<AsyncTask>() }.wake();
}

unsafe fn drop_waker(_: *const ()) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    static WAKES: AtomicU32 = AtomicU32::new(0);
    fn count_wake() {
        WAKES.fetch_add(1, Ordering::SeqCst);
    }
    static TASK: AsyncTask = AsyncTask::new(count_wake);

    fn make(n: u32) -> impl Future<Output = ()> {
        let mut polls = 0;
        std::future::poll_fn(move |cx| {
            polls += 1;
            if polls > n {
                Poll::Ready(())
            } else {
                cx.waker().wake_by_ref();
                cx.waker().wake_by_ref(); // a second wake before the poll: still one Poll
                Poll::Pending
            }
        })
    }

    #[test]
    fn one_instance_one_queued_poll_and_reuse_after_completion() {
        TASK.allocate(make);
        assert!(TASK.try_claim());
        assert!(!TASK.try_claim(), "a second instance while one runs");
        // SAFETY: this test is the only "executor" of TASK.
        unsafe {
            assert_eq!(TASK.start(make, 1), Dispatched::Pending);
            assert_eq!(WAKES.load(Ordering::SeqCst), 1);
            assert_eq!(TASK.poll(make), Dispatched::Done);
            assert!(!TASK.is_running());
            // A stale wake-up after completion polls nothing.
            assert_eq!(TASK.poll(make), Dispatched::Idle);
        }
        assert!(TASK.try_claim());
        // SAFETY: as above.
        unsafe { assert_eq!(TASK.start(make, 0), Dispatched::Done) };
    }
}
