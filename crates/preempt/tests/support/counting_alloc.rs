//! A global allocator that counts every allocation of the test binary that includes it, for
//! the tests proving that the spawn, dispatch, lock and timer paths allocate nothing.
//!
//! Include it with `#[path = "support/counting_alloc.rs"] mod counting_alloc;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts every allocation of this binary (all threads).
struct Counting;

pub(crate) static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// Allocations made by the threads that called [`count_this_thread`] only (for apps whose
/// other threads, such as a metrics server, allocate by design).
#[allow(dead_code, reason = "only some test binaries count per thread")]
pub(crate) static THREAD_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // `const` initialisation and no destructor: reading it never allocates.
    static COUNT_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Counts this thread's allocations in [`THREAD_ALLOCATIONS`] from now on.
#[allow(dead_code, reason = "only some test binaries count per thread")]
pub(crate) fn count_this_thread() {
    COUNT_HERE.with(|c| c.set(true));
}

fn count() {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    if COUNT_HERE.try_with(|c| c.get()).unwrap_or(false) {
        THREAD_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;
