//! RTIO chains on a pollable, message-based descriptor (a `SOCK_SEQPACKET` pair, the simulated
//! SPI bus): command → response chains whose intermediate entries report nothing on success
//! (on io_uring: `IOSQE_CQE_SKIP_SUCCESS`), responses that arrive later from another thread
//! (poll-armed reads), and a short response breaking the chain. Both backends; no timing
//! assertions. The io_uring tunings ([`TaskRun`] modes, registered files, RECV with
//! POLL_FIRST, the completion eventfd) must run the same chains with the same results.

use std::os::fd::{AsFd, OwnedFd};

use preempt_io::rtio::{BackendChoice, BackendKind, Cqe, Rtio, RtioConfig, Sqe, TaskRun};
use preempt_io::sys::{fdio, socket};

fn ctx(backend: BackendChoice) -> Option<Rtio> {
    let cfg = RtioConfig {
        sq_size: 16,
        cq_size: 16,
        mempool_blocks: 0,
        mempool_block_size: 0,
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

fn drain(r: &mut Rtio) -> Vec<(u64, i32)> {
    let mut v = Vec::new();
    while let Some(Cqe {
        userdata, result, ..
    }) = r.cqe_consume()
    {
        v.push((userdata, result));
    }
    v
}

fn both(mut f: impl FnMut(BackendChoice)) {
    f(BackendChoice::IoUring);
    f(BackendChoice::Epoll);
}

#[test]
fn command_response_chain_reports_only_its_last_entry() {
    both(|b| {
        let Some(mut r) = ctx(b) else { return };
        let (mine, peer): (OwnedFd, OwnedFd) = socket::seqpacket_pair().unwrap();
        let dev = r.register_fd("bus", mine).unwrap();
        let st = r.alloc_buffer(4).unwrap();
        let cnt = r.alloc_buffer(8).unwrap();
        // The responder answers each command after a pause, from another thread, so every
        // response read finds nothing and must wait (poll-armed on io_uring).
        let responder = std::thread::spawn(move || {
            let mut cmd = [0_u8; 16];
            for reply in [&b"STAT"[..], &b"COUNT..."[..]] {
                let n = fdio::read(peer.as_fd(), &mut cmd).unwrap();
                assert_eq!(n, 3);
                #[allow(clippy::disallowed_methods, reason = "test: make the reader wait")]
                std::thread::sleep(std::time::Duration::from_millis(20));
                fdio::write(peer.as_fd(), reply).unwrap();
            }
            peer
        });
        r.prepare(
            Sqe::tiny_write(dev, b"c1!")
                .chained()
                .no_response()
                .userdata(1),
        )
        .unwrap();
        r.prepare(Sqe::read(dev, st, 4).chained().no_response().userdata(2))
            .unwrap();
        r.prepare(
            Sqe::tiny_write(dev, b"c2!")
                .chained()
                .no_response()
                .userdata(3),
        )
        .unwrap();
        r.prepare(Sqe::read(dev, cnt, 8).userdata(4)).unwrap();
        r.submit(1).unwrap();
        assert_eq!(drain(&mut r), vec![(4, 8)], "{b:?}");
        assert_eq!(r.buffer(st).unwrap(), b"STAT");
        assert_eq!(r.buffer(cnt).unwrap(), b"COUNT...");
        // Every slot came back: the skipped entries were completed by the executor.
        assert_eq!(r.sq_free(), 16, "{b:?}");
        let peer = responder.join().unwrap();
        // The context is reusable: a second chain on the same buffers works.
        fdio::write(peer.as_fd(), b"next").unwrap();
        r.prepare(Sqe::read(dev, st, 4).userdata(5)).unwrap();
        r.submit(1).unwrap();
        assert_eq!(drain(&mut r), vec![(5, 4)], "{b:?}");
    });
}

#[test]
fn short_response_breaks_the_chain_and_cancels_the_rest() {
    both(|b| {
        let Some(mut r) = ctx(b) else { return };
        let (mine, peer) = socket::seqpacket_pair().unwrap();
        let dev = r.register_fd("bus", mine).unwrap();
        let st = r.alloc_buffer(4).unwrap();
        let cnt = r.alloc_buffer(8).unwrap();
        fdio::write(peer.as_fd(), b"ab").unwrap(); // 2 bytes where 4 are expected
        r.prepare(Sqe::read(dev, st, 4).chained().no_response().userdata(1))
            .unwrap();
        r.prepare(
            Sqe::tiny_write(dev, b"c2!")
                .chained()
                .no_response()
                .userdata(2),
        )
        .unwrap();
        r.prepare(Sqe::read(dev, cnt, 8).userdata(3)).unwrap();
        r.submit(2).unwrap();
        let got = drain(&mut r);
        // The short read reports nothing (NO_RESPONSE, non-negative result); the rest of the
        // chain is cancelled and, being errors, reported.
        assert_eq!(
            got,
            vec![(2, -libc::ECANCELED), (3, -libc::ECANCELED)],
            "{b:?}"
        );
        assert_eq!(r.sq_free(), 16, "{b:?}");
        // The cancelled write never reached the peer.
        fdio::set_nonblocking(peer.as_fd(), true).unwrap();
        let mut buf = [0_u8; 8];
        assert!(fdio::read(peer.as_fd(), &mut buf).is_err(), "{b:?}");
        // A later, good chain on the same context still works.
        fdio::write(peer.as_fd(), b"okay").unwrap();
        r.prepare(Sqe::read(dev, st, 4).userdata(7)).unwrap();
        r.submit(1).unwrap();
        assert_eq!(drain(&mut r), vec![(7, 4)], "{b:?}");
    });
}

/// The command → response chain of the first test, with a responder that answers after a
/// short pause (so reads are poll-armed), under `cfg`.
fn command_response(cfg: RtioConfig) -> Rtio {
    let mut r = Rtio::new(cfg).unwrap();
    let (mine, peer): (OwnedFd, OwnedFd) = socket::seqpacket_pair().unwrap();
    let dev = r.register_fd("bus", mine).unwrap();
    let st = r.alloc_buffer(4).unwrap();
    let cnt = r.alloc_buffer(8).unwrap();
    let responder = std::thread::spawn(move || {
        let mut cmd = [0_u8; 16];
        for reply in [&b"STAT"[..], &b"COUNT..."[..]] {
            assert_eq!(fdio::read(peer.as_fd(), &mut cmd).unwrap(), 3);
            #[allow(clippy::disallowed_methods, reason = "test: make the reader wait")]
            std::thread::sleep(std::time::Duration::from_millis(2));
            fdio::write(peer.as_fd(), reply).unwrap();
        }
    });
    r.prepare(Sqe::tiny_write(dev, b"c1!").chained().no_response())
        .unwrap();
    r.prepare(Sqe::read(dev, st, 4).chained().no_response())
        .unwrap();
    r.prepare(Sqe::tiny_write(dev, b"c2!").chained().no_response())
        .unwrap();
    r.prepare(Sqe::read(dev, cnt, 8).userdata(4)).unwrap();
    r.submit(1).unwrap();
    assert_eq!(drain(&mut r), vec![(4, 8)]);
    assert_eq!(r.buffer(st).unwrap(), b"STAT");
    assert_eq!(r.buffer(cnt).unwrap(), b"COUNT...");
    assert_eq!(r.sq_free(), 16);
    responder.join().unwrap();
    r
}

#[test]
fn io_uring_tunings_run_the_same_chains() {
    if ctx(BackendChoice::IoUring).is_none() {
        return;
    }
    for task_run in [TaskRun::Defer, TaskRun::Cooperative, TaskRun::Signal] {
        for fixed_files in [true, false] {
            for socket_poll_first in [true, false] {
                let cfg = RtioConfig {
                    sq_size: 16,
                    cq_size: 16,
                    mempool_blocks: 0,
                    mempool_block_size: 0,
                    backend: BackendChoice::IoUring,
                    task_run,
                    notify_eventfd: false,
                    fixed_files,
                    socket_poll_first,
                };
                let r = command_response(cfg);
                let info = r.backend();
                assert_eq!(info.kind, BackendKind::IoUring);
                let has = |f: &str| info.features.iter().any(|x| x.contains(f));
                // Each tuning is either in effect or its absence is explained.
                assert!(
                    has("registered files") == fixed_files,
                    "{task_run:?} {fixed_files}: {:?}",
                    info.features
                );
                assert_eq!(has("POLL_FIRST"), socket_poll_first, "{:?}", info.features);
                let mode = match task_run {
                    TaskRun::Defer => "defer taskrun",
                    TaskRun::Cooperative => "coop taskrun",
                    TaskRun::Signal => "signal-notified",
                };
                assert!(has(mode), "{task_run:?}: {:?}", info.features);
            }
        }
    }
}

#[test]
fn completion_eventfd_is_signalled_only_when_registered() {
    if ctx(BackendChoice::IoUring).is_none() {
        return;
    }
    for notify_eventfd in [true, false] {
        let cfg = RtioConfig {
            sq_size: 16,
            cq_size: 16,
            mempool_blocks: 0,
            mempool_block_size: 0,
            backend: BackendChoice::IoUring,
            notify_eventfd,
            ..RtioConfig::default()
        };
        let r = command_response(cfg);
        let mut v = [0_u8; 8];
        // The eventfd is non-blocking: a read either returns the count or fails (EAGAIN).
        let signalled = fdio::read(r.notify_fd(), &mut v).is_ok();
        assert_eq!(signalled, notify_eventfd);
    }
}
