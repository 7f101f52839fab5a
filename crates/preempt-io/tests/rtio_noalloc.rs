//! "No allocation after setup": a counting global allocator watches the steady-state
//! prepare / submit / consume path on both backends (chains, an eventfd INT read, memfd
//! register reads, a mempool read and its release).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use preempt_io::rtio::{BackendChoice, Rtio, RtioConfig, Sqe};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::MemFd;

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call unchanged to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn steady_state(backend: BackendChoice) -> Option<u64> {
    let cfg = RtioConfig {
        sq_size: 16,
        cq_size: 8,
        mempool_blocks: 4,
        mempool_block_size: 64,
        backend,
        ..RtioConfig::default()
    };
    let Ok(mut r) = Rtio::new(cfg) else {
        println!("SKIP {backend:?}: unavailable here");
        return None;
    };
    let regs = r
        .register_fd("regs", MemFd::new("noalloc", 4096).unwrap().into())
        .unwrap();
    let int = EventFd::new(0, true).unwrap();
    let line = int.try_clone().unwrap();
    let int = r.register_fd("int", int.into()).unwrap();
    let ib = r.alloc_buffer(8).unwrap();
    let sb = r.alloc_buffer(4).unwrap();
    let fb = r.alloc_buffer(2040).unwrap();
    let round = |r: &mut Rtio| {
        line.write(1).unwrap();
        r.prepare(
            Sqe::tiny_write(regs, &[1, 0, 0, 0])
                .at(0x1c)
                .chained()
                .no_response(),
        )
        .unwrap();
        r.prepare(Sqe::read(int, ib, 8).chained().no_response())
            .unwrap();
        r.prepare(Sqe::read(regs, sb, 4).at(0x10).chained().no_response())
            .unwrap();
        r.prepare(Sqe::read(regs, fb, 2040).at(0x40).userdata(1))
            .unwrap();
        r.prepare(Sqe::read_mempool(regs, 64).at(0).userdata(2))
            .unwrap();
        r.submit(2).unwrap();
        while let Some(c) = r.cqe_consume() {
            assert!(c.result > 0, "{c:?}");
            if let Some(b) = c.block {
                r.release_block(b);
            }
        }
    };
    // Warm up (first submit enables the ring, lazy kernel and libc state settles).
    for _ in 0..10 {
        round(&mut r);
    }
    ALLOCS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    for _ in 0..500 {
        round(&mut r);
    }
    COUNTING.store(false, Ordering::SeqCst);
    Some(ALLOCS.load(Ordering::SeqCst))
}

#[test]
fn submit_and_consume_do_not_allocate() {
    for b in [BackendChoice::IoUring, BackendChoice::Epoll] {
        if let Some(n) = steady_state(b) {
            assert_eq!(n, 0, "{b:?}: {n} allocations in the steady state");
        }
    }
}
