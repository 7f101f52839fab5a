//! RTIO behaviour on both backends: every op, chains and chain failure, cancellation with
//! stale handles, multishot re-arm, mempool exhaustion and completion-pool overflow.
//!
//! Each scenario runs on io_uring (skipped with a message where io_uring is unavailable) and
//! on the epoll backend, forced. No test asserts anything about time.

use std::os::fd::OwnedFd;

use preempt_io::rtio::{
    BackendChoice, BackendKind, CallbackCx, Cqe, Iodev, IodevRequest, MultishotMode, Op, Rtio,
    RtioConfig, RtioError, Sqe, Submit,
};
use preempt_io::sys::clock;
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::MemFd;

const ECANCELED: i32 = -libc::ECANCELED;

fn ctx(backend: BackendChoice, cq: usize, blocks: usize) -> Option<Rtio> {
    let cfg = RtioConfig {
        sq_size: 32,
        cq_size: cq,
        mempool_blocks: blocks,
        mempool_block_size: 16,
        backend,
        ..RtioConfig::default()
    };
    match Rtio::new(cfg) {
        Ok(r) => Some(r),
        Err(e) if backend == BackendChoice::IoUring => {
            println!("SKIP io_uring case: io_uring unavailable here: {e}");
            None
        }
        Err(e) => panic!("epoll backend must always work: {e}"),
    }
}

fn both(mut f: impl FnMut(BackendChoice)) {
    f(BackendChoice::IoUring);
    f(BackendChoice::Epoll);
}

fn memfd(len: usize) -> OwnedFd {
    MemFd::new("rtio-test", len).unwrap().into()
}

fn drain(r: &mut Rtio) -> Vec<Cqe> {
    let mut v = Vec::new();
    while let Some(c) = r.cqe_consume() {
        v.push(c);
    }
    v
}

#[test]
fn forced_epoll_reports_its_reason() {
    let r = ctx(BackendChoice::Epoll, 8, 0).unwrap();
    assert_eq!(r.backend().kind, BackendKind::Epoll);
    assert!(
        r.backend().reason.contains("forced"),
        "{}",
        r.backend().reason
    );
    if let Some(u) = ctx(BackendChoice::IoUring, 8, 0) {
        assert_eq!(u.backend().kind, BackendKind::IoUring);
        assert!(!u.backend().features.is_empty());
    }
}

#[test]
fn read_write_tiny_write_transceive() {
    both(|b| {
        let Some(mut r) = ctx(b, 16, 0) else { return };
        let dev = r.register_fd("m", memfd(4096)).unwrap();
        let tx = r.alloc_buffer(8).unwrap();
        let rx = r.alloc_buffer(8).unwrap();
        let rd = r.alloc_buffer(8).unwrap();
        r.buffer_mut(tx).unwrap().copy_from_slice(b"ABCDEFGH");
        // One in-flight entry per buffer: the transceive reuses `tx`, so it follows the write.
        r.prepare(Sqe::write(dev, tx, 8).at(100).chained().userdata(1))
            .unwrap();
        r.prepare(Sqe::transceive(dev, tx, rx, 8).at(300).userdata(3))
            .unwrap();
        r.prepare(Sqe::tiny_write(dev, &[9, 8, 7]).at(200).userdata(2))
            .unwrap();
        r.submit(3).unwrap();
        let mut got: Vec<_> = drain(&mut r)
            .iter()
            .map(|c| (c.userdata, c.result))
            .collect();
        got.sort_unstable();
        assert_eq!(got, vec![(1, 8), (2, 3), (3, 8)], "{b:?}");
        assert_eq!(r.buffer(rx).unwrap(), b"ABCDEFGH");
        r.prepare(Sqe::read(dev, rd, 8).at(198).userdata(4))
            .unwrap();
        r.submit(1).unwrap();
        let c = r.cqe_consume().unwrap();
        assert_eq!((c.userdata, c.result), (4, 8));
        assert_eq!(r.buffer(rd).unwrap(), &[0, 0, 9, 8, 7, 0, 0, 0]);
    });
}

fn add_last_result(cx: &mut CallbackCx<'_>) -> i32 {
    cx.last_result() + i32::try_from(cx.arg()).unwrap()
}

#[test]
fn nop_callback_delay_and_await() {
    both(|b| {
        let Some(mut r) = ctx(b, 16, 0) else { return };
        let dev = r.register_fd("m", memfd(64)).unwrap();
        let buf = r.alloc_buffer(4).unwrap();
        r.prepare(Sqe::nop().userdata(1)).unwrap();
        // The callback sees the previous entry's result (4 bytes read) and adds its arg.
        r.prepare(Sqe::read(dev, buf, 4).chained().userdata(2))
            .unwrap();
        r.prepare(Sqe::callback(add_last_result, 100).userdata(3))
            .unwrap();
        let deadline = clock::monotonic_now_ns() + 2_000_000;
        r.prepare(Sqe::delay_until(deadline).userdata(4)).unwrap();
        r.submit(4).unwrap();
        let mut got: Vec<_> = drain(&mut r)
            .iter()
            .map(|c| (c.userdata, c.result))
            .collect();
        got.sort_unstable();
        assert_eq!(got, vec![(1, 0), (2, 4), (3, 104), (4, 0)], "{b:?}");
        assert!(
            clock::monotonic_now_ns() >= deadline,
            "a delay completes at or after its deadline"
        );

        let h = r.prepare(Sqe::await_signal().userdata(5)).unwrap();
        r.submit(0).unwrap();
        assert!(
            r.cqe_consume().is_none(),
            "await completes only when signalled"
        );
        let sig = r.signaller();
        std::thread::spawn(move || sig.signal(h).unwrap())
            .join()
            .unwrap();
        r.submit(1).unwrap();
        let c = r.cqe_consume().unwrap();
        assert_eq!((c.userdata, c.result), (5, 0));
    });
}

#[test]
fn chain_failure_cancels_the_rest_with_ecanceled() {
    both(|b| {
        let Some(mut r) = ctx(b, 16, 0) else { return };
        let regs = r.register_fd("m", memfd(64)).unwrap();
        let int = EventFd::new(1, true).unwrap();
        let int = r.register_fd("int", int.into()).unwrap();
        let a = r.alloc_buffer(8).unwrap();
        let c = r.alloc_buffer(8).unwrap();
        // An eventfd read shorter than 8 bytes fails with EINVAL: the rest is cancelled.
        r.prepare(Sqe::tiny_write(regs, &[1]).chained().userdata(1))
            .unwrap();
        r.prepare(Sqe::read(int, a, 4).chained().userdata(2))
            .unwrap();
        r.prepare(Sqe::read(regs, c, 8).chained().no_response().userdata(3))
            .unwrap();
        r.prepare(Sqe::callback(add_last_result, 1).userdata(4))
            .unwrap();
        r.submit(4).unwrap();
        let got: Vec<_> = drain(&mut r)
            .iter()
            .map(|c| (c.userdata, c.result))
            .collect();
        assert_eq!(
            got,
            vec![(1, 1), (2, -libc::EINVAL), (3, ECANCELED), (4, ECANCELED)],
            "{b:?}"
        );

        // A short read breaks the chain too (io_uring's rule), reporting its own byte count.
        r.prepare(Sqe::read(regs, a, 8).at(60).chained().userdata(5))
            .unwrap();
        r.prepare(Sqe::read(regs, c, 8).userdata(6)).unwrap();
        r.submit(2).unwrap();
        let got: Vec<_> = drain(&mut r)
            .iter()
            .map(|c| (c.userdata, c.result))
            .collect();
        assert_eq!(got, vec![(5, 4), (6, ECANCELED)], "{b:?}");

        // A successful chain with NO_RESPONSE in the middle reports only the others.
        r.prepare(Sqe::read(regs, a, 8).chained().no_response().userdata(7))
            .unwrap();
        r.prepare(Sqe::read(regs, c, 8).userdata(8)).unwrap();
        r.submit(1).unwrap();
        let got: Vec<_> = drain(&mut r)
            .iter()
            .map(|c| (c.userdata, c.result))
            .collect();
        assert_eq!(got, vec![(8, 8)], "{b:?}");
        assert_eq!(r.sq_free(), 32, "every slot is back in the pool");
    });
}

#[test]
fn cancel_rejects_stale_handles_and_cancels_chains() {
    both(|b| {
        let Some(mut r) = ctx(b, 16, 0) else { return };
        let regs = r.register_fd("m", memfd(64)).unwrap();
        let buf = r.alloc_buffer(4).unwrap();
        let done = r.prepare(Sqe::read(regs, buf, 4).userdata(1)).unwrap();
        r.submit(1).unwrap();
        assert_eq!(r.cqe_consume().unwrap().result, 4);
        assert_eq!(r.cancel(done), Err(RtioError::StaleHandle));

        // Reuse the slot: the old handle stays stale even though the slot is busy again.
        let h = r
            .prepare(Sqe::await_signal().chained().userdata(2))
            .unwrap();
        assert_eq!(h.slot(), done.slot());
        assert_ne!(h.generation(), done.generation());
        assert_eq!(r.cancel(done), Err(RtioError::StaleHandle));
        r.prepare(Sqe::read(regs, buf, 4).userdata(3)).unwrap();
        r.submit(0).unwrap();
        r.cancel(h).unwrap();
        r.submit(2).unwrap();
        let got: Vec<_> = drain(&mut r)
            .iter()
            .map(|c| (c.userdata, c.result))
            .collect();
        assert_eq!(got, vec![(2, ECANCELED), (3, ECANCELED)], "{b:?}");
        assert_eq!(r.cancel(h), Err(RtioError::StaleHandle));

        // Cancelling a queued entry before submit.
        let q = r.prepare(Sqe::read(regs, buf, 4).userdata(4)).unwrap();
        r.cancel(q).unwrap();
        r.submit(1).unwrap();
        assert_eq!(r.cqe_consume().unwrap().result, ECANCELED);
    });
}

#[test]
fn multishot_rearms_after_mempool_exhaustion() {
    both(|b| {
        let Some(mut r) = ctx(b, 16, 2) else { return };
        let int = EventFd::new(0, true).unwrap();
        let line = int.try_clone().unwrap();
        let dev = r.register_fd("int", int.into()).unwrap();
        assert_ne!(
            r.fd_info(dev).unwrap().multishot,
            MultishotMode::Unsupported(String::new())
        );
        let h = r
            .prepare(Sqe::read_mempool(dev, 8).multishot().userdata(9))
            .unwrap();
        r.submit(0).unwrap();
        let mut held = Vec::new();
        for n in 1..=2_u64 {
            line.write(n).unwrap();
            let c = r.cqe_consume_block().unwrap();
            assert_eq!((c.userdata, c.result, c.more), (9, 8, true), "{b:?}");
            let blk = c.block.unwrap();
            assert_eq!(r.block(&blk), &n.to_ne_bytes());
            held.push(blk);
        }
        // Both blocks held: the next arrival finds the pool empty.
        line.write(7).unwrap();
        let c = r.cqe_consume_block().unwrap();
        assert_eq!((c.result, c.more), (-libc::ENOBUFS, true), "{b:?}");
        assert!(r.stats().mempool_exhausted >= 1);
        // Give one block back: the entry re-arms and picks up the pending data.
        r.release_block(held.pop().unwrap());
        let c = r.cqe_consume_block().unwrap();
        assert_eq!((c.result, c.more), (8, true), "{b:?}");
        let blk = c.block.unwrap();
        assert_eq!(r.block(&blk), &7_u64.to_ne_bytes());
        assert!(r.stats().multishot_rearms >= 1, "{:?}", r.stats());
        r.release_block(blk);
        r.release_block(held.pop().unwrap());
        r.cancel(h).unwrap();
        let c = r.cqe_consume_block().unwrap();
        assert_eq!((c.result, c.more), (ECANCELED, false), "{b:?}");
        assert_eq!(r.cancel(h), Err(RtioError::StaleHandle));
        assert_eq!(r.mempool_blocks_out(), 0);
    });
}

#[test]
fn mempool_exhaustion_fails_one_shot_reads_with_enobufs() {
    both(|b| {
        let Some(mut r) = ctx(b, 16, 1) else { return };
        let dev = r.register_fd("m", memfd(64)).unwrap();
        r.prepare(Sqe::read_mempool(dev, 16).at(0).userdata(1))
            .unwrap();
        r.submit(1).unwrap();
        let first = r.cqe_consume().unwrap();
        assert_eq!(first.result, 16);
        r.prepare(Sqe::read_mempool(dev, 16).at(0).userdata(2))
            .unwrap();
        r.submit(1).unwrap();
        let c = r.cqe_consume().unwrap();
        assert_eq!((c.userdata, c.result), (2, -libc::ENOBUFS), "{b:?}");
        assert!(c.block.is_none());
        assert_eq!(r.stats().mempool_exhausted, 1);
        r.release_block(first.block.unwrap());
        r.prepare(Sqe::read_mempool(dev, 16).at(0).userdata(3))
            .unwrap();
        r.submit(1).unwrap();
        let c = r.cqe_consume().unwrap();
        assert_eq!(c.result, 16);
        r.release_block(c.block.unwrap());
    });
}

#[test]
fn completion_overflow_is_counted_not_silent() {
    both(|b| {
        let Some(mut r) = ctx(b, 2, 0) else { return };
        let dev = r.register_fd("m", memfd(64)).unwrap();
        for i in 0..5 {
            r.prepare(Sqe::tiny_write(dev, &[1]).userdata(i)).unwrap();
        }
        r.submit(0).unwrap();
        // Run the executor until all five are done (only two fit in the pool).
        while r.sq_free() < 32 {
            r.submit(0).unwrap();
        }
        assert_eq!(r.cq_len(), 2);
        assert_eq!(r.stats().cq_overflow, 3, "{b:?}");
        assert_eq!(r.stats().completions, 2);
        if b == BackendChoice::IoUring {
            let workers = std::fs::read_dir("/proc/self/task")
                .unwrap()
                .filter(|t| {
                    let p = t.as_ref().unwrap().path().join("comm");
                    std::fs::read_to_string(p)
                        .unwrap_or_default()
                        .starts_with("iou-wrk")
                })
                .count();
            println!("io-wq workers after memfd writes: {workers}");
        }
    });
}

#[test]
fn invalid_submissions_are_rejected_up_front() {
    let mut r = ctx(BackendChoice::Epoll, 4, 1).unwrap();
    let regs = r.register_fd("m", memfd(64)).unwrap();
    let small = r.alloc_buffer(2).unwrap();
    assert!(matches!(
        r.prepare(Sqe::read(regs, small, 4)),
        Err(RtioError::Invalid(_))
    ));
    // Multishot on a regular file would spin: refused, and the probe says why.
    assert!(matches!(
        r.fd_info(regs).unwrap().multishot,
        MultishotMode::Unsupported(_)
    ));
    assert!(matches!(
        r.prepare(Sqe::read_mempool(regs, 8).multishot()),
        Err(RtioError::Invalid(_))
    ));
    r.submit(0).unwrap();
    assert_eq!(r.alloc_buffer(4), Err(RtioError::SetupClosed));
}

/// A software device: a little register bank that completes at once, or later for reads of
/// register 0xff (completed from another thread through the signaller).
struct Bank {
    regs: [u8; 256],
}

impl Iodev for Bank {
    fn name(&self) -> &str {
        "bank"
    }
    fn submit(&mut self, req: &mut IodevRequest<'_>) -> Submit {
        match req.op {
            Op::TinyWrite {
                offset: Some(o), ..
            }
            | Op::Write {
                offset: Some(o), ..
            } => {
                let o = usize::try_from(o).unwrap();
                self.regs[o..o + req.data.len()].copy_from_slice(req.data);
                Submit::Done(i32::try_from(req.data.len()).unwrap())
            }
            Op::Read {
                offset: Some(0xff), ..
            } => Submit::Pending,
            Op::Read {
                offset: Some(o), ..
            } => {
                let o = usize::try_from(o).unwrap();
                let n = req.rx.len();
                req.rx.copy_from_slice(&self.regs[o..o + n]);
                Submit::Done(i32::try_from(n).unwrap())
            }
            _ => Submit::Done(-libc::ENOTSUP),
        }
    }
}

#[test]
fn software_iodev_chains_and_pending_completion() {
    both(|b| {
        let Some(mut r) = ctx(b, 8, 0) else { return };
        let bank = r.register_iodev(Box::new(Bank { regs: [0; 256] })).unwrap();
        let buf = r.alloc_buffer(2).unwrap();
        r.prepare(Sqe::tiny_write(bank, &[5, 6]).at(10).chained().userdata(1))
            .unwrap();
        r.prepare(Sqe::read(bank, buf, 2).at(10).userdata(2))
            .unwrap();
        r.submit(2).unwrap();
        let got: Vec<_> = drain(&mut r)
            .iter()
            .map(|c| (c.userdata, c.result))
            .collect();
        assert_eq!(got, vec![(1, 2), (2, 2)]);
        assert_eq!(r.buffer(buf).unwrap(), &[5, 6]);
        let h = r
            .prepare(Sqe::read(bank, buf, 1).at(0xff).userdata(3))
            .unwrap();
        r.submit(0).unwrap();
        let sig = r.signaller();
        std::thread::spawn(move || sig.complete(h, -libc::EIO).unwrap())
            .join()
            .unwrap();
        r.submit(1).unwrap();
        assert_eq!(r.cqe_consume().unwrap().result, -libc::EIO);
    });
}
