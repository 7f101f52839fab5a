//! [`Mono`]: the monotonic clock of async tasks, an [`rtic_time::Monotonic`] on
//! `CLOCK_MONOTONIC`, so RTIC v2 code (`Mono::now()`, `Mono::delay(d).await`,
//! `Mono::delay_until(t).await`, `Mono::timeout_after(d, fut).await`) runs unchanged.
//!
//! ```no_run
//! # use preempt::{Mono, Instant, Duration};
//! # async fn doc() {
//! let mut next = Mono::now();
//! for _ in 0..10 {
//!     next += Duration::from_millis(1);
//!     Mono::delay_until(next).await; // drift-free: absolute release times
//! }
//! let r = Mono::timeout_after(Duration::from_micros(500), core::future::pending::<()>()).await;
//! assert!(r.is_err());
//! # }
//! ```
//!
//! # Background
//!
//! On a microcontroller, `rtic-time`'s timer queue keeps the waiting delays in one list and
//! programs a hardware compare register for the earliest; its interrupt wakes the tasks. On
//! Linux every executor already sleeps until an absolute deadline (its next timed spawn or
//! periodic release), so a delay needs no timer thread of its own: it joins the **delay list
//! of the executor that polls it**, and that executor includes the list's earliest deadline
//! in its sleep. A delay that expires wakes its task on the same thread, with no extra
//! context switch.
//!
//! # Solution
//!
//! The delay list is an intrusive doubly linked list sorted by deadline, whose nodes live
//! inside the pinned [`Delay`] futures (as in tokio's timer wheel), so registering a delay
//! allocates nothing. Only the executor's own thread touches its list: a `Delay` is polled
//! by the task that owns it, which its executor polls, and a `Delay` is `!Send`, so it is
//! also dropped on that thread. A delay polled on a thread that is not an executor (a
//! plain thread running `block_on`) falls back to a lazily started `preempt-timer` thread
//! with an ordinary mutex-protected list.
//!
//! # Why it works
//!
//! A node is linked only while its future is pinned and pending, and `Drop` unlinks it; the
//! `Pin` drop guarantee says the memory of a pinned value is not reused before its `drop`
//! runs, so the list never holds a dangling node. The executor fires a node by unlinking it
//! first and waking its task after, so a wake that polls the delay again finds it unlinked.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::{Future, poll_fn};
use std::marker::{PhantomData, PhantomPinned};
use std::pin::{Pin, pin};
use std::ptr;
use std::sync::{Condvar, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::time::{Instant, driver};

pub use rtic_time::TimeoutError;

/// The monotonic clock of async tasks (see the [module docs](self)).
///
/// Its instants are [`Instant`]s and its durations `std::time::Duration`s. The methods are
/// inherent (no import needed) and also available through [`rtic_time::Timebase`] and
/// [`rtic_time::Monotonic`] for code generic over RTIC monotonics.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mono;

impl Mono {
    /// The current time.
    #[inline]
    pub fn now() -> Instant {
        Instant::now()
    }

    /// Waits until `duration` has passed.
    pub fn delay(duration: Duration) -> Delay {
        Delay::until(Instant::now() + duration)
    }

    /// Waits until `instant` (at once if it has passed). Use it for drift-free periodic
    /// loops: `next += period; Mono::delay_until(next).await`.
    pub fn delay_until(instant: Instant) -> Delay {
        Delay::until(instant)
    }

    /// Runs `future` until `instant`; `Err(TimeoutError)` if it has not finished by then.
    pub async fn timeout_at<F: Future>(
        instant: Instant,
        future: F,
    ) -> Result<F::Output, TimeoutError> {
        let mut future = pin!(future);
        let mut delay = pin!(Delay::until(instant));
        poll_fn(|cx| {
            if let Poll::Ready(out) = future.as_mut().poll(cx) {
                return Poll::Ready(Ok(out));
            }
            match delay.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(TimeoutError)),
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    }

    /// Runs `future` for at most `duration`; `Err(TimeoutError)` if it has not finished.
    pub async fn timeout_after<F: Future>(
        duration: Duration,
        future: F,
    ) -> Result<F::Output, TimeoutError> {
        Mono::timeout_at(Instant::now() + duration, future).await
    }
}

impl rtic_time::Timebase for Mono {
    type Instant = Instant;
    type Duration = Duration;

    fn now() -> Instant {
        Mono::now()
    }

    async fn delay(duration: Duration) {
        Mono::delay(duration).await;
    }

    async fn delay_until(instant: Instant) {
        Mono::delay_until(instant).await;
    }

    async fn timeout_at<F: Future>(instant: Instant, future: F) -> Result<F::Output, TimeoutError> {
        Mono::timeout_at(instant, future).await
    }

    async fn timeout_after<F: Future>(
        duration: Duration,
        future: F,
    ) -> Result<F::Output, TimeoutError> {
        Mono::timeout_after(duration, future).await
    }
}

/// A node of a [`DelayList`], inside a pinned [`Delay`].
struct Node {
    deadline_ns: u64,
    waker: Cell<Option<Waker>>,
    prev: Cell<*const Node>,
    next: Cell<*const Node>,
    /// In a list (the executor unlinks a node when it fires).
    linked: Cell<bool>,
}

/// An executor's list of pending delays, sorted by deadline (FIFO among equal deadlines).
/// Only the executor's own thread touches it (see the module docs).
#[doc(hidden)]
pub struct DelayList {
    head: Cell<*const Node>,
}

// SAFETY: the list lives in the executor (a `static`, hence `Sync` is needed), but only the
// executor's thread ever dereferences or changes it: it is reached through the
// thread-local `CURRENT_LIST`, which only that thread sets to this list, and a linked
// `Delay` is `!Send`, so it is polled and dropped on that thread.
unsafe impl Sync for DelayList {}

impl Default for DelayList {
    fn default() -> Self {
        Self::new()
    }
}

impl DelayList {
    /// An empty list.
    pub const fn new() -> DelayList {
        DelayList {
            head: Cell::new(ptr::null()),
        }
    }

    /// The earliest deadline, if any delay is pending.
    pub(crate) fn next_deadline_ns(&self) -> Option<u64> {
        let head = self.head.get();
        // SAFETY: a linked node is alive (module docs, "Why it works").
        (!head.is_null()).then(|| unsafe { (*head).deadline_ns })
    }

    /// Unlinks every node due at `now_ns` and wakes its task; returns how many fired.
    pub(crate) fn fire_due(&self, now_ns: u64) -> usize {
        let mut fired = 0;
        loop {
            let head = self.head.get();
            if head.is_null() {
                return fired;
            }
            // SAFETY: a linked node is alive; only this thread touches the list.
            let node = unsafe { &*head };
            if node.deadline_ns > now_ns {
                return fired;
            }
            // SAFETY: `node` is linked in this list.
            unsafe { self.unlink(node) };
            if let Some(waker) = node.waker.take() {
                waker.wake();
            }
            fired += 1;
        }
    }

    /// Links `node`, keeping the list sorted (after every node with the same deadline).
    ///
    /// # Safety
    /// `node` is pinned, not linked anywhere, and stays alive until it is unlinked.
    unsafe fn insert(&self, node: &Node) {
        let mut prev: *const Node = ptr::null();
        let mut cur = self.head.get();
        while !cur.is_null() {
            // SAFETY: `cur` is a linked node, alive until unlinked.
            let c = unsafe { &*cur };
            if c.deadline_ns > node.deadline_ns {
                break;
            }
            prev = cur;
            cur = c.next.get();
        }
        node.prev.set(prev);
        node.next.set(cur);
        node.linked.set(true);
        if prev.is_null() {
            self.head.set(node);
        } else {
            // SAFETY: `prev` is a linked, alive node.
            unsafe { (*prev).next.set(node) };
        }
        if !cur.is_null() {
            // SAFETY: `cur` is a linked, alive node.
            unsafe { (*cur).prev.set(node) };
        }
    }

    /// Unlinks `node`.
    ///
    /// # Safety
    /// `node` is linked in this list.
    unsafe fn unlink(&self, node: &Node) {
        let prev = node.prev.get();
        let next = node.next.get();
        if prev.is_null() {
            debug_assert!(ptr::eq(self.head.get(), node), "node not in this list");
            self.head.set(next);
        } else {
            // SAFETY: neighbours of a linked node are linked and alive.
            unsafe { (*prev).next.set(next) };
        }
        if !next.is_null() {
            // SAFETY: as above.
            unsafe { (*next).prev.set(prev) };
        }
        node.prev.set(ptr::null());
        node.next.set(ptr::null());
        node.linked.set(false);
    }
}

thread_local! {
    /// The delay list of the executor running on this thread (null elsewhere).
    static CURRENT_LIST: Cell<*const DelayList> = const { Cell::new(ptr::null()) };
}

/// Makes `list` this thread's delay list; returns the previous one (to restore).
pub(crate) fn set_current_list(list: *const DelayList) -> *const DelayList {
    CURRENT_LIST.with(|c| c.replace(list))
}

/// Where a [`Delay`] is registered.
enum Registration {
    None,
    /// Linked in this executor's list.
    Executor(*const DelayList),
    /// In the fallback timer thread's table, under this key.
    Fallback(u64),
}

/// The future of [`Mono::delay`] and [`Mono::delay_until`]. `!Send`: it belongs to the thread
/// that polls it (see the module docs).
#[must_use = "a delay does nothing unless awaited"]
pub struct Delay {
    node: Node,
    registration: Registration,
    _pinned: PhantomPinned,
    _not_send: PhantomData<*const ()>,
}

impl Delay {
    fn until(instant: Instant) -> Delay {
        Delay {
            node: Node {
                deadline_ns: instant.as_nanos(),
                waker: Cell::new(None),
                prev: Cell::new(ptr::null()),
                next: Cell::new(ptr::null()),
                linked: Cell::new(false),
            },
            registration: Registration::None,
            _pinned: PhantomPinned,
            _not_send: PhantomData,
        }
    }

    /// The instant this delay ends.
    pub fn deadline(&self) -> Instant {
        Instant::from_nanos(self.node.deadline_ns)
    }

    fn deregister(&mut self) {
        match std::mem::replace(&mut self.registration, Registration::None) {
            Registration::None => {}
            Registration::Executor(list) => {
                if self.node.linked.get() {
                    // SAFETY: the node is linked in `list` (registered there, not fired), and
                    // we are on the list's thread (`Delay` is `!Send`; it was linked here).
                    unsafe { (*list).unlink(&self.node) };
                }
            }
            Registration::Fallback(key) => fallback().remove(key),
        }
    }
}

impl Future for Delay {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: nothing is moved out of `this`; the node stays where it is pinned.
        let this = unsafe { self.get_unchecked_mut() };
        if driver::now_ns() >= this.node.deadline_ns {
            this.deregister();
            return Poll::Ready(());
        }
        if matches!(this.registration, Registration::Executor(_)) && !this.node.linked.get() {
            // Fired early (another clock?) or never linked: register afresh.
            this.registration = Registration::None;
        }
        match this.registration {
            Registration::Executor(_) => {
                let old = this.node.waker.take();
                this.node.waker.set(Some(match old {
                    Some(w) if w.will_wake(cx.waker()) => w,
                    _ => cx.waker().clone(),
                }));
            }
            Registration::Fallback(key) => fallback().update(key, cx.waker()),
            Registration::None => {
                let list = CURRENT_LIST.with(Cell::get);
                if list.is_null() {
                    let key = fallback().add(this.node.deadline_ns, cx.waker().clone());
                    this.registration = Registration::Fallback(key);
                } else {
                    this.node.waker.set(Some(cx.waker().clone()));
                    // SAFETY: the node is pinned (we are in `poll` of a pinned future), not
                    // linked (registration None), and `Drop` unlinks it before its memory
                    // goes; `list` is this thread's executor list.
                    unsafe { (*list).insert(&this.node) };
                    this.registration = Registration::Executor(list);
                }
            }
        }
        Poll::Pending
    }
}

impl Drop for Delay {
    fn drop(&mut self) {
        self.deregister();
    }
}

/// The timer thread for delays polled outside executors.
struct Fallback {
    table: Mutex<FallbackTable>,
    changed: Condvar,
}

#[derive(Default)]
struct FallbackTable {
    /// `(deadline, key)` -> waker.
    waiting: BTreeMap<(u64, u64), Waker>,
    /// key -> deadline.
    keys: BTreeMap<u64, u64>,
    next_key: u64,
}

fn fallback() -> &'static Fallback {
    static FALLBACK: OnceLock<&'static Fallback> = OnceLock::new();
    FALLBACK.get_or_init(|| {
        let fb: &'static Fallback = Box::leak(Box::new(Fallback {
            table: Mutex::new(FallbackTable::default()),
            changed: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("preempt-timer".into())
            .spawn(move || fb.run())
            .expect("cannot start the preempt-timer thread for Mono delays outside executors");
        fb
    })
}

impl Fallback {
    fn lock(&self) -> std::sync::MutexGuard<'_, FallbackTable> {
        // A panic while holding this lock can only come from a waker; the table stays
        // consistent (every update is a single map operation), so keep using it.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, deadline_ns: u64, waker: Waker) -> u64 {
        let mut t = self.lock();
        let key = t.next_key;
        t.next_key += 1;
        t.waiting.insert((deadline_ns, key), waker);
        t.keys.insert(key, deadline_ns);
        drop(t);
        self.changed.notify_one();
        key
    }

    fn update(&self, key: u64, waker: &Waker) {
        let mut t = self.lock();
        if let Some(&deadline) = t.keys.get(&key) {
            if let Some(w) = t.waiting.get_mut(&(deadline, key)) {
                if !w.will_wake(waker) {
                    *w = waker.clone();
                }
            }
        }
    }

    fn remove(&self, key: u64) {
        let mut t = self.lock();
        if let Some(deadline) = t.keys.remove(&key) {
            t.waiting.remove(&(deadline, key));
        }
    }

    fn run(&self) {
        let mut t = self.lock();
        loop {
            let now = driver::now_ns();
            let mut due = Vec::new();
            while let Some((&(deadline, key), _)) = t.waiting.iter().next() {
                if deadline > now {
                    break;
                }
                if let Some(waker) = t.waiting.remove(&(deadline, key)) {
                    due.push(waker);
                }
                t.keys.remove(&key);
            }
            if !due.is_empty() {
                drop(t);
                due.into_iter().for_each(Waker::wake);
                t = self.lock();
                continue;
            }
            t = match t.waiting.keys().next() {
                None => self.changed.wait(t).unwrap_or_else(|e| e.into_inner()),
                Some(&(deadline, _)) => {
                    let wait = Duration::from_nanos(deadline.saturating_sub(now));
                    self.changed
                        .wait_timeout(t, wait)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll_once<F: Future>(f: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn executor_list_orders_fires_and_unlinks_on_drop() {
        let list = DelayList::new();
        let previous = set_current_list(&list);
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let base = Instant::now() + Duration::from_secs(3600);
        let mut late = pin!(Mono::delay_until(base + Duration::from_secs(2)));
        let mut early = pin!(Mono::delay_until(base + Duration::from_secs(1)));
        assert!(poll_once(late.as_mut(), &waker).is_pending());
        assert!(poll_once(early.as_mut(), &waker).is_pending());
        assert_eq!(list.next_deadline_ns(), Some(early.deadline().as_nanos()));
        {
            // A third delay, dropped while linked, leaves the list intact.
            let mut dropped = Box::pin(Mono::delay_until(base));
            assert!(poll_once(dropped.as_mut(), &waker).is_pending());
            assert_eq!(list.next_deadline_ns(), Some(base.as_nanos()));
        }
        assert_eq!(list.next_deadline_ns(), Some(early.deadline().as_nanos()));
        assert_eq!(list.fire_due(base.as_nanos() + 1_500_000_000), 1);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(list.next_deadline_ns(), Some(late.deadline().as_nanos()));
        assert_eq!(list.fire_due(u64::MAX), 1);
        assert_eq!(list.next_deadline_ns(), None);
        set_current_list(previous);
    }

    #[test]
    fn a_past_deadline_is_ready_at_once_and_fallback_delays_fire() {
        let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        let mut past = pin!(Mono::delay_until(Instant::from_nanos(1)));
        assert!(poll_once(past.as_mut(), &waker).is_ready());
        // Not on an executor: the fallback timer thread wakes the thread blocked below.
        let start = Instant::now();
        let out = block_on(Mono::timeout_after(
            Duration::from_millis(5),
            std::future::pending::<()>(),
        ));
        assert!(out.is_err());
        assert!(start.elapsed() >= Duration::from_millis(5));
        let ok = block_on(Mono::timeout_after(Duration::from_secs(5), async { 7 }));
        assert_eq!(ok.ok(), Some(7));
    }

    /// A minimal `block_on` for the fallback path (the thread parks until woken).
    fn block_on<F: Future>(f: F) -> F::Output {
        struct Unpark(std::thread::Thread);
        impl Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut f = pin!(f);
        loop {
            if let Poll::Ready(v) = poll_once(f.as_mut(), &waker) {
                return v;
            }
            std::thread::park();
        }
    }
}
