//! [`UdpSource`] and [`UnixDatagramSource`]: datagram sockets as hardware-task event sources.
//!
//! A datagram longer than the buffer is cut by the kernel. To *know* that without `MSG_TRUNC`,
//! the buffer is one byte longer than the capacity asked for: a datagram that fills that extra
//! byte was longer than the capacity, and is reported with `truncated: true` and its first
//! `capacity` bytes. The default capacity, 65 536 bytes, exceeds the largest UDP payload
//! (65 507 bytes over IPv4, 65 527 over IPv6 without jumbograms, RFC 768/8200), so UDP
//! datagrams are never truncated by default.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{self, UnixDatagram};
use std::path::Path;

use super::FdSource;

/// Default receive capacity: any UDP datagram fits.
pub const DEFAULT_CAPACITY: usize = 65_536;

/// One received datagram.
#[derive(Debug, PartialEq, Eq)]
pub struct Datagram<'a, A> {
    /// Its payload (the first `capacity` bytes when truncated).
    pub data: &'a [u8],
    /// The sender.
    pub from: A,
    /// The datagram was longer than the capacity and was cut.
    pub truncated: bool,
}

fn buffer(capacity: usize) -> io::Result<Box<[u8]>> {
    if capacity == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a datagram source needs a capacity of at least 1 byte",
        ));
    }
    Ok(vec![0_u8; capacity + 1].into_boxed_slice())
}

fn datagram<A>(buf: &[u8], n: usize, from: A) -> Datagram<'_, A> {
    let capacity = buf.len() - 1;
    Datagram {
        data: &buf[..n.min(capacity)],
        from,
        truncated: n > capacity,
    }
}

/// A non-blocking UDP socket.
#[derive(Debug)]
pub struct UdpSource {
    socket: UdpSocket,
    buf: Box<[u8]>,
}

impl UdpSource {
    /// Binds a UDP socket to `addr` (`"0.0.0.0:9000"`, `"[::1]:0"`).
    ///
    /// # Errors
    /// The bind error (`EADDRINUSE`: another process has the port).
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSource> {
        Self::from_socket(UdpSocket::bind(addr)?, DEFAULT_CAPACITY)
    }

    /// Adopts a configured socket (multicast, `SO_RCVBUF`…) and sets it non-blocking.
    ///
    /// # Errors
    /// `InvalidInput` for a zero capacity; whatever `fcntl` reports.
    pub fn from_socket(socket: UdpSocket, capacity: usize) -> io::Result<UdpSource> {
        let buf = buffer(capacity)?;
        socket.set_nonblocking(true)?;
        Ok(UdpSource { socket, buf })
    }

    /// The socket, for replies (`send_to`) and options.
    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }
}

impl FdSource for UdpSource {
    type Event<'a> = Datagram<'a, SocketAddr>;

    fn read_event(&mut self) -> io::Result<Option<Self::Event<'_>>> {
        match self.socket.recv_from(&mut self.buf) {
            Ok((n, from)) => Ok(Some(datagram(&self.buf, n, from))),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl AsFd for UdpSource {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

/// A non-blocking UNIX datagram socket.
#[derive(Debug)]
pub struct UnixDatagramSource {
    socket: UnixDatagram,
    buf: Box<[u8]>,
}

impl UnixDatagramSource {
    /// Binds a UNIX datagram socket at `path` (which must not exist).
    ///
    /// # Errors
    /// The bind error (`EADDRINUSE`: remove the stale socket file).
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixDatagramSource> {
        Self::from_socket(UnixDatagram::bind(path)?, DEFAULT_CAPACITY)
    }

    /// Adopts a socket (for example one end of `UnixDatagram::pair`) and sets it non-blocking.
    ///
    /// # Errors
    /// `InvalidInput` for a zero capacity; whatever `fcntl` reports.
    pub fn from_socket(socket: UnixDatagram, capacity: usize) -> io::Result<UnixDatagramSource> {
        let buf = buffer(capacity)?;
        socket.set_nonblocking(true)?;
        Ok(UnixDatagramSource { socket, buf })
    }

    /// The socket, for replies and options.
    pub fn socket(&self) -> &UnixDatagram {
        &self.socket
    }
}

impl FdSource for UnixDatagramSource {
    type Event<'a> = Datagram<'a, net::SocketAddr>;

    fn read_event(&mut self) -> io::Result<Option<Self::Event<'_>>> {
        match self.socket.recv_from(&mut self.buf) {
            Ok((n, from)) => Ok(Some(datagram(&self.buf, n, from))),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl AsFd for UnixDatagramSource {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fd::Poller;

    #[test]
    fn udp_datagrams_arrive_with_their_sender() {
        let mut source = UdpSource::bind("127.0.0.1:0").unwrap();
        let addr = source.socket().local_addr().unwrap();
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut poller = Poller::new().unwrap();
        poller.register(&source, 1).unwrap();
        assert!(source.read_event().unwrap().is_none());
        sender.send_to(b"setpoint 1.5", addr).unwrap();
        sender.send_to(b"", addr).unwrap();
        let mut ready = [Default::default(); 1];
        assert_eq!(poller.wait_until(&mut ready, None).unwrap(), 1);
        let mut got = Vec::new();
        let n = source
            .drain(8, |d| {
                assert_eq!(d.from, sender.local_addr().unwrap());
                assert!(!d.truncated);
                got.push(d.data.to_vec());
            })
            .unwrap();
        assert_eq!(n, 2);
        assert_eq!(got, [b"setpoint 1.5".to_vec(), Vec::new()]);
    }

    #[test]
    fn a_datagram_longer_than_the_capacity_is_flagged() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = socket.local_addr().unwrap();
        let mut source = UdpSource::from_socket(socket, 4).unwrap();
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        sender.send_to(b"abcd", addr).unwrap();
        sender.send_to(b"abcdef", addr).unwrap();
        let mut poller = Poller::new().unwrap();
        poller.register(&source, 1).unwrap();
        let mut seen = Vec::new();
        while seen.len() < 2 {
            let mut ready = [Default::default(); 1];
            poller.wait_until(&mut ready, None).unwrap();
            source
                .drain(8, |d| seen.push((d.data.to_vec(), d.truncated)))
                .unwrap();
        }
        assert_eq!(seen, [(b"abcd".to_vec(), false), (b"abcd".to_vec(), true)]);
        assert!(UdpSource::from_socket(UdpSocket::bind("127.0.0.1:0").unwrap(), 0).is_err());
    }

    #[test]
    fn unix_datagrams_arrive_from_pairs_and_bound_paths() {
        let (a, b) = UnixDatagram::pair().unwrap();
        let mut source = UnixDatagramSource::from_socket(a, 64).unwrap();
        b.send(b"tick").unwrap();
        let d = source.read_event().unwrap().unwrap();
        assert_eq!(d.data, b"tick");
        assert!(d.from.is_unnamed());
        assert!(source.read_event().unwrap().is_none());

        let dir = std::env::temp_dir().join(format!("preempt-fd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (rx_path, tx_path) = (dir.join("rx.sock"), dir.join("tx.sock"));
        // Stale files from an earlier, killed run would make bind fail.
        for p in [&rx_path, &tx_path] {
            if p.exists() {
                std::fs::remove_file(p).unwrap();
            }
        }
        let mut bound = UnixDatagramSource::bind(&rx_path).unwrap();
        let tx = UnixDatagram::bind(&tx_path).unwrap();
        tx.send_to(b"hello", &rx_path).unwrap();
        let mut poller = Poller::new().unwrap();
        poller.register(&bound, 5).unwrap();
        let mut ready = [Default::default(); 1];
        assert_eq!(poller.wait_until(&mut ready, None).unwrap(), 1);
        let d = bound.read_event().unwrap().unwrap();
        assert_eq!(d.data, b"hello");
        assert_eq!(d.from.as_pathname(), Some(tx_path.as_path()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
