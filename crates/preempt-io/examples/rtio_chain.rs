//! RTIO ops and chains in one page: a register write and read on a memfd, a command →
//! response chain on a `SOCK_SEQPACKET` "bus" where only the last entry reports, a callback,
//! an absolute delay, and a chain broken by a short read (the rest completes with
//! `-ECANCELED`). Runs on io_uring, or on epoll where io_uring is unavailable
//! (`PREEMPT_RTIO_BACKEND=epoll` forces it).
//!
//! ```text
//! cargo run -p preempt-io --example rtio_chain
//! ```

use std::os::fd::AsFd;

use preempt_io::rtio::{CallbackCx, Rtio, RtioConfig, Sqe};
use preempt_io::sys::memfd::MemFd;
use preempt_io::sys::{clock, fdio, socket};

fn checksum(cx: &mut CallbackCx<'_>) -> i32 {
    // Runs in the executor between two entries of a chain; sees the previous result.
    println!(
        "  callback: previous entry moved {} bytes",
        cx.last_result()
    );
    0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut r = Rtio::new(RtioConfig::default())?;
    println!("backend: {:?} ({})", r.backend().kind, r.backend().reason);
    let regs = r.register_fd("regs", MemFd::new("regs", 64)?.into())?;
    let (mine, peer) = socket::seqpacket_pair()?;
    let bus = r.register_fd("bus", mine)?;
    let out = r.alloc_buffer(4)?;
    let resp = r.alloc_buffer(8)?;

    // 1. Register write then read back, linked; only the read reports.
    r.prepare(
        Sqe::tiny_write(regs, &[0xde, 0xad, 0xbe, 0xef])
            .at(0x10)
            .chained()
            .no_response(),
    )?;
    r.prepare(Sqe::read(regs, out, 4).at(0x10).userdata(1))?;
    r.submit(1)?;
    let c = r.cqe_consume().ok_or("no completion")?;
    println!(
        "register chain: userdata {} result {} bytes {:02x?}",
        c.userdata,
        c.result,
        r.buffer(out)?
    );

    // 2. Command -> response on the bus, then a callback and a delay 1 ms from now, all one
    //    chain. The "device" (the peer end) answered in advance.
    fdio::write(peer.as_fd(), b"RESPONSE")?;
    let deadline = clock::monotonic_now_ns() + 1_000_000;
    r.prepare(Sqe::tiny_write(bus, b"read 8").chained().no_response())?;
    r.prepare(Sqe::read(bus, resp, 8).chained().no_response())?;
    r.prepare(Sqe::callback(checksum, 0).chained().no_response())?;
    r.prepare(Sqe::delay_until(deadline).userdata(2))?;
    r.submit(1)?;
    let c = r.cqe_consume().ok_or("no completion")?;
    let mut cmd = [0_u8; 16];
    let n = fdio::read(peer.as_fd(), &mut cmd)?;
    println!(
        "bus chain: userdata {} result {}, device got {:?}, reader got {:?}, {} us after the deadline",
        c.userdata,
        c.result,
        String::from_utf8_lossy(&cmd[..n]),
        String::from_utf8_lossy(r.buffer(resp)?),
        clock::monotonic_now_ns().saturating_sub(deadline) / 1000
    );

    // 3. A short response breaks the chain: the rest is cancelled, each with a completion.
    fdio::write(peer.as_fd(), b"ab")?;
    r.prepare(Sqe::read(bus, out, 4).chained().userdata(3))?;
    r.prepare(Sqe::tiny_write(bus, b"never sent").chained().userdata(4))?;
    r.prepare(Sqe::read(bus, resp, 8).userdata(5))?;
    r.submit(3)?;
    while let Some(c) = r.cqe_consume() {
        println!("broken chain: userdata {} result {}", c.userdata, c.result);
    }
    println!("stats: {:?}", r.stats());
    Ok(())
}
