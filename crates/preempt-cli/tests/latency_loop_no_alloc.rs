//! The measuring loop allocates nothing (issue 5, "Tool overhead").
//!
//! A counting global allocator records allocations made by the measuring thread while it runs
//! [`run_loop`] with every feature on (compute step, response/compute histograms, trace
//! buffer): the count must stay zero.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use preempt_cli::measure::latency::{LoopParams, StopFlags, ThreadState, TraceRecord, run_loop};
use preempt_cli::measure::work::{Controller, calibrate};
use preempt_io::sys::clock::monotonic_now_ns;
use preempt_io::sys::schedstat::ThrottleWatch;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static TRACKED: Cell<bool> = const { Cell::new(false) };
}

fn note() {
    // try_with: the thread-local may be gone while a thread exits.
    if TRACKED.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Relaxed);
    }
}

// SAFETY: every method forwards to the system allocator with the caller's arguments
// unchanged, so System's guarantees hold; counting touches no allocator state.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: forwarded with the caller's layout, which meets alloc's contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note();
        // SAFETY: `ptr` came from this allocator (hence System) with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: forwarded unchanged; the caller meets realloc's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn the_measuring_loop_does_not_allocate() {
    let releases = 300;
    let params = LoopParams {
        interval_ns: 200_000,
        releases,
        work_iterations: calibrate(5_000),
        relative_deadline_ns: 200_000,
        break_at_ns: Some(u64::MAX),
        pinned: false, // also exercises the per-period CPU sampling
    };
    let state = ThreadState::new(true);
    let (signal, halt) = (AtomicBool::new(false), AtomicBool::new(false));
    let mut trace: Vec<TraceRecord> = Vec::with_capacity(releases as usize);
    let mut controller = Controller::default();
    let start = monotonic_now_ns() + 1_000_000;
    std::thread::scope(|s| {
        s.spawn(|| {
            // Opened before counting: opening allocates (the loop's reads do not).
            let mut throttle = ThrottleWatch::open();
            TRACKED.with(|t| t.set(true));
            run_loop(
                &params,
                &state,
                0,
                start,
                StopFlags {
                    signal: &signal,
                    halt: &halt,
                },
                &mut trace,
                None,
                &mut controller,
                &mut throttle,
            )
            .unwrap();
            TRACKED.with(|t| t.set(false));
        });
    });
    let samples = state.latency.snapshot().count();
    assert_eq!(samples + state.missed.load(Relaxed), releases);
    assert_eq!(trace.len() as u64, samples);
    assert_eq!(ALLOCATIONS.load(Relaxed), 0, "the measuring loop allocated");
}
