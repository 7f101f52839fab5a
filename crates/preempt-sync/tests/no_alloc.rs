//! The hot paths never allocate: PCP lock/unlock (fast, nested and contended), queue
//! push/pop, timer push/pop and event notify/wait, measured with a counting allocator.
#![cfg(not(loom))] // real threads and real futexes; loom builds use tests/loom_*.rs

use preempt_sync::event::Event;
use preempt_sync::pcp::{PcpGroup, PcpMutex};
use preempt_sync::queue::MpscQueue;
use preempt_sync::timed::TimerQueue;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

static GROUP: PcpGroup = PcpGroup::new();
static A: PcpMutex<u64> = PcpMutex::new(0, 2, &GROUP);
static B: PcpMutex<u64> = PcpMutex::new(0, 2, &GROUP);
static C: PcpMutex<u64> = PcpMutex::new(0, 3, &GROUP);
static Q: MpscQueue<u64, 8> = MpscQueue::new();
static TQ: TimerQueue<u64, 8> = TimerQueue::new();
static EV: Event = Event::new();

fn hot_paths(rounds: u64) {
    for i in 0..rounds {
        A.lock(1, |a| {
            *a += 1;
            B.lock(1, |b| C.lock(1, |c| *b += *c + 1));
        });
        Q.try_push(i).unwrap();
        // SAFETY: this thread is the only consumer of Q and TQ.
        unsafe {
            assert_eq!(Q.pop(), Some(i));
            TQ.push_at(i, i).unwrap();
            assert_eq!(TQ.pop_due(u64::MAX), Some(i));
        }
        EV.notify();
        EV.wait_until(None);
    }
}

#[test]
fn hot_paths_do_not_allocate() {
    // Warm-up outside counting (first tid read, first registration of each ceiling).
    hot_paths(10);
    static READY: AtomicBool = AtomicBool::new(false);
    static GO: AtomicBool = AtomicBool::new(false);
    // Spawning allocates: do it before counting; the waiter starts only on GO.
    let waiter = std::thread::spawn(|| {
        preempt_sync::futex::current_tid();
        READY.store(true, Ordering::SeqCst);
        while !GO.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
        A.lock(2, |a| *a += 1);
    });
    while !READY.load(Ordering::SeqCst) {
        std::hint::spin_loop();
    }
    COUNTING.store(true, Ordering::SeqCst);
    hot_paths(1_000);
    // A contended lock: we hold A, the waiter sleeps in FUTEX_LOCK_PI on it, and our
    // unlock hands it over with FUTEX_UNLOCK_PI.
    A.lock(1, |_| {
        GO.store(true, Ordering::SeqCst);
        while !A.has_waiters() {
            std::hint::spin_loop();
        }
    });
    waiter.join().unwrap();
    COUNTING.store(false, Ordering::SeqCst);
    assert_eq!(
        ALLOCATIONS.load(Ordering::SeqCst),
        0,
        "allocations on a hot path"
    );
}
