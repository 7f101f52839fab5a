//! A small HTTP/1.1 server for `/metrics`, on one non-real-time thread.
//!
//! # Why not a web framework
//! The endpoint answers one request shape (`GET /metrics`) a few times a minute. A framework
//! would bring an async runtime and dozens of crates into a real-time process; this is
//! `std::net`, `epoll` ([`preempt_io::sys::epoll`]) and the request line plus two headers.
//!
//! # No client can blind it
//! The measuring threads share nothing with the server but atomics: a scrape *reads* them
//! (a [`Registry`] of collectors, see [`crate::expo`]) and never takes a lock a measuring
//! thread takes.
//!
//! Every connection is non-blocking and served by one event loop, so a slow client holds a
//! table entry, never a thread. Each request's whole lifetime is bounded, not each read: the
//! request head must arrive within [`HEAD_DEADLINE`] of the connection (or of the previous
//! response, on a kept-alive connection: [`IDLE_TIMEOUT`]) and the response must be taken
//! within [`WRITE_DEADLINE`]; a client that trickles one byte a second is closed at the
//! deadline like a silent one. At most [`MAX_CONNECTIONS`] are open at once; a new connection
//! beyond that closes the oldest one that has not sent its request yet, so a scrape gets in
//! whatever number of slow or silent clients connect (only connections arriving faster
//! than a scrape sends its head could still push it out).
//!
//! (The server before this one had 8 worker threads with a 5 s limit *per read*: eight
//! clients trickling a byte every few seconds kept every scrape at `503` indefinitely.)
//!
//! Per-client limits by address would not help here: the clients that matter (Prometheus on
//! the robot, `curl`) and the misbehaving ones share `127.0.0.1`. The bound is per
//! connection instead.
//!
//! Connections are kept alive between requests (HTTP/1.1 default; Prometheus reuses one):
//! cheap in an event loop, and it saves the TCP set-up that was most of a scrape's cost
//! (docs/PERFORMANCE.md). The loop thread runs under `SCHED_OTHER` whatever policy the
//! thread that started the server had.
//!
//! # Responses
//! `GET`/`HEAD /metrics` → 200 (OpenMetrics when the `Accept` header names it, else the
//! Prometheus text format); `/` → 200 with a link; any other path → 404; another method on
//! `/metrics` → 405 with `Allow: GET, HEAD`; an unparsable request → 400; a head longer
//! than 16 KiB → 431.
//!
//! ```no_run
//! use std::sync::Arc;
//! use prometheus_client::registry::Registry;
//! let server = preempt_metrics::http::Server::start("127.0.0.1:0", Arc::new(Registry::default()))?;
//! println!("serving on http://{}/metrics", server.local_addr());
//! # Ok::<(), std::io::Error>(())
//! ```

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use preempt_io::sys::epoll::{Epoll, Event, Interest};
use preempt_io::sys::sched::{self, Policy};
use prometheus_client::registry::Registry;

use crate::expo::{self, Format};

/// The whole request head (request line and headers) must arrive within this of the
/// connection being accepted. Prometheus sends it in one segment; 2 s is generous for any
/// client on a robot's network and short enough that a stalled one frees its entry soon.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(2);
/// A kept-alive connection may wait this long for its next request (Prometheus scrapes every
/// 15 s by default and reopens a closed connection at no cost worth keeping it for).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// The whole response must be taken within this (Prometheus' default `scrape_timeout` is
/// 10 s; a client that reads slower is closed).
pub const WRITE_DEADLINE: Duration = Duration::from_secs(5);
/// Connections open at once; a new one beyond closes the oldest that has not sent its
/// request yet.
pub const MAX_CONNECTIONS: usize = 64;
/// The longest request head read (request line + headers).
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The listener's epoll token (connections count up from 1).
const LISTENER: u64 = 0;

/// A bound listening socket, not yet serving: bind first (a bad address fails before any
/// measurement starts), serve once the collectors exist.
#[derive(Debug)]
pub struct Bound {
    listener: TcpListener,
}

impl Bound {
    /// Binds `addr`.
    ///
    /// # Errors
    /// The address does not resolve or cannot be bound; the message names it.
    pub fn bind(addr: impl ToSocketAddrs + std::fmt::Display) -> io::Result<Bound> {
        let listener = TcpListener::bind(&addr).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot listen on {addr}: {e} (pick a free port, or another address that \
                     belongs to this machine)"
                ),
            )
        })?;
        Ok(Bound { listener })
    }

    /// Serves `registry` on a new thread.
    ///
    /// # Errors
    /// The socket cannot be made non-blocking, epoll cannot be set up, or the thread cannot
    /// be spawned.
    pub fn serve(self, registry: Arc<Registry>) -> io::Result<Server> {
        let listener = self.listener;
        let local = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let epoll = Epoll::new()?;
        epoll.add(listener.as_fd(), Interest::READ, LISTENER)?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("preempt-metrics".into())
                .spawn(move || {
                    leave_real_time();
                    Loop {
                        listener,
                        epoll,
                        registry,
                        conns: HashMap::new(),
                        next_token: LISTENER + 1,
                    }
                    .run(&stop);
                })?
        };
        Ok(Server {
            addr: local,
            stop,
            thread: Some(thread),
        })
    }
}

/// A running `/metrics` server. Dropping it stops the server and closes its connections.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` and serves `registry` on a new thread.
    ///
    /// # Errors
    /// The address does not resolve or cannot be bound; the message names it.
    pub fn start(
        addr: impl ToSocketAddrs + std::fmt::Display,
        registry: Arc<Registry>,
    ) -> io::Result<Server> {
        Bound::bind(addr)?.serve(registry)
    }

    /// The address actually bound (the port is chosen by the kernel for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the loop with a connection of our own (it waits at most until the next
        // deadline anyway).
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}

/// Threads started by a real-time thread inherit its policy: the server's must not.
fn leave_real_time() {
    // Lowering one's own policy to SCHED_OTHER is always permitted; if it failed the thread
    // would stay at the starter's policy, which the server can survive (it blocks in
    // epoll_wait).
    let _ = sched::set_current_thread_policy(&Policy::Other { nice: 0 });
}

/// Where a connection is in its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Reading a request head (none of it yet, on a kept-alive connection).
    Head,
    /// Writing a response.
    Write,
}

/// One open connection.
struct Conn {
    stream: TcpStream,
    phase: Phase,
    /// Bytes read and not yet consumed (a head being received, or a pipelined next one).
    input: Vec<u8>,
    /// The response being written, and how much of it went out.
    output: Vec<u8>,
    written: usize,
    /// Keep the connection after this response.
    keep_alive: bool,
    /// The end of this phase: a connection still in it then is closed.
    deadline: Instant,
    /// When the connection was accepted (the oldest unfinished one is evicted first).
    accepted: Instant,
}

/// The server's event loop: the listener and every connection, on one thread.
struct Loop {
    listener: TcpListener,
    epoll: Epoll,
    registry: Arc<Registry>,
    conns: HashMap<u64, Conn>,
    next_token: u64,
}

impl Loop {
    fn run(mut self, stop: &AtomicBool) {
        let mut events = [Event::default(); 32];
        while !stop.load(Ordering::Acquire) {
            let timeout = self.next_deadline().map(|d| {
                let ms = d.saturating_duration_since(Instant::now()).as_millis() + 1;
                u32::try_from(ms).unwrap_or(u32::MAX)
            });
            // An error here (EBADF, EINVAL) cannot get better by retrying: the server stops.
            let Ok(n) = self.epoll.wait(&mut events, timeout) else {
                return;
            };
            for ev in &events[..n] {
                if ev.token == LISTENER {
                    self.accept_all();
                } else {
                    self.step(ev.token);
                }
            }
            self.expire(Instant::now());
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.conns.values().map(|c| c.deadline).min()
    }

    /// Closes every connection whose phase outlived its deadline.
    fn expire(&mut self, now: Instant) {
        let late: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| c.deadline <= now)
            .map(|(t, _)| *t)
            .collect();
        for t in late {
            self.close(t);
        }
    }

    fn close(&mut self, token: u64) {
        if let Some(c) = self.conns.remove(&token) {
            let _ = self.epoll.delete(c.stream.as_fd());
        }
    }

    fn accept_all(&mut self) {
        loop {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                // A failed accept (the peer reset, out of descriptors) concerns that peer;
                // the listener stays readable if more wait.
                Err(_) => return,
            };
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            if self.conns.len() >= MAX_CONNECTIONS {
                self.evict_one();
            }
            let token = self.next_token;
            self.next_token += 1;
            if self
                .epoll
                .add(stream.as_fd(), Interest::READ, token)
                .is_err()
            {
                continue;
            }
            let now = Instant::now();
            self.conns.insert(
                token,
                Conn {
                    stream,
                    phase: Phase::Head,
                    input: Vec::new(),
                    output: Vec::new(),
                    written: 0,
                    keep_alive: false,
                    deadline: now + HEAD_DEADLINE,
                    accepted: now,
                },
            );
        }
    }

    /// Makes room for a new connection: closes the oldest one still waiting for its request
    /// (silent, trickling, or idle between requests), else the oldest of all.
    fn evict_one(&mut self) {
        let oldest = |want: Option<Phase>| {
            self.conns
                .iter()
                .filter(|(_, c)| want.is_none_or(|p| c.phase == p))
                .min_by_key(|(_, c)| c.accepted)
                .map(|(t, _)| *t)
        };
        if let Some(t) = oldest(Some(Phase::Head)).or_else(|| oldest(None)) {
            self.close(t);
        }
    }

    /// Advances connection `token` as far as it can go without blocking.
    fn step(&mut self, token: u64) {
        let Some(c) = self.conns.get_mut(&token) else {
            return;
        };
        let open = match c.phase {
            Phase::Head => read_request(c, &self.registry),
            Phase::Write => write_response(c, &self.registry),
        };
        let interest = match (open, c.phase) {
            (false, _) => None,
            (true, Phase::Head) => Some(Interest::READ),
            (true, Phase::Write) => Some(Interest::WRITE),
        };
        match interest {
            Some(i) => {
                if self.epoll.modify(c.stream.as_fd(), i, token).is_err() {
                    self.close(token);
                }
            }
            None => self.close(token),
        }
    }
}

/// Reads what `c` sent; on a whole head, prepares the response and starts writing it.
/// Returns whether the connection stays open.
fn read_request(c: &mut Conn, registry: &Registry) -> bool {
    let mut buf = [0_u8; 4096];
    loop {
        let end = head_end(&c.input);
        if let Some(end) = end.filter(|e| *e <= MAX_HEAD_BYTES) {
            let head: Vec<u8> = c.input.drain(..end).collect();
            start_response(c, &head, registry);
            return write_response(c, registry);
        }
        if end.is_some() || c.input.len() > MAX_HEAD_BYTES {
            c.input.clear();
            c.keep_alive = false;
            c.output = response(
                431,
                "Request Header Fields Too Large",
                &[],
                "text/plain",
                b"request head too long\n",
                false,
                false,
            );
            c.written = 0;
            c.phase = Phase::Write;
            c.deadline = Instant::now() + WRITE_DEADLINE;
            return write_response(c, registry);
        }
        match c.stream.read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => c.input.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// Where the head in `input` ends (after its blank line), if it is all there.
fn head_end(input: &[u8]) -> Option<usize> {
    let crlf = input
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4);
    let lf = input.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Writes as much of `c`'s response as the socket takes; when it is all out, either waits
/// for the next request (keep-alive, serving one already received at once) or closes.
/// Returns whether the connection stays open.
fn write_response(c: &mut Conn, registry: &Registry) -> bool {
    while c.written < c.output.len() {
        match c.stream.write(&c.output[c.written..]) {
            Ok(0) => return false,
            Ok(n) => c.written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    if !c.keep_alive {
        return false;
    }
    c.output.clear();
    c.written = 0;
    c.phase = Phase::Head;
    c.deadline = Instant::now() + IDLE_TIMEOUT;
    if head_end(&c.input).is_some() {
        return read_request(c, registry);
    }
    true
}

/// Turns the request head `head` into `c`'s response and switches `c` to writing it.
fn start_response(c: &mut Conn, head: &[u8], registry: &Registry) {
    let req = std::str::from_utf8(head).ok().and_then(parse_head);
    let (keep_alive, output) = match req {
        None => (
            false,
            response(
                400,
                "Bad Request",
                &[],
                "text/plain",
                b"bad request\n",
                false,
                false,
            ),
        ),
        Some(req) => {
            // A request with a body is not one of ours: answer and close rather than parse it.
            let keep = req.keep_alive && !req.has_body;
            (keep, answer(&req, registry, keep))
        }
    };
    c.keep_alive = keep_alive;
    c.output = output;
    c.written = 0;
    c.phase = Phase::Write;
    c.deadline = Instant::now() + WRITE_DEADLINE;
}

/// A parsed request head.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    method: String,
    path: String,
    accept: Option<String>,
    /// HTTP/1.1 without `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`.
    keep_alive: bool,
    /// A `Content-Length` other than 0, or a `Transfer-Encoding`.
    has_body: bool,
}

fn parse_head(text: &str) -> Option<Request> {
    let mut lines = text.lines();
    let mut parts = lines.next()?.split_whitespace();
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if !version.starts_with("HTTP/1.") {
        return None;
    }
    let path = target.split('?').next().unwrap_or(target).to_string();
    let mut accept = None;
    let mut keep_alive = version == "HTTP/1.1";
    let mut has_body = false;
    for h in lines {
        let Some((k, v)) = h.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("accept") {
            accept = Some(v.to_string());
        } else if k.eq_ignore_ascii_case("connection") {
            if v.eq_ignore_ascii_case("close") {
                keep_alive = false;
            } else if v.eq_ignore_ascii_case("keep-alive") {
                keep_alive = true;
            }
        } else if (k.eq_ignore_ascii_case("content-length") && v != "0")
            || k.eq_ignore_ascii_case("transfer-encoding")
        {
            has_body = true;
        }
    }
    Some(Request {
        method: method.to_string(),
        path,
        accept,
        keep_alive,
        has_body,
    })
}

/// The response to `req`.
fn answer(req: &Request, registry: &Registry, keep: bool) -> Vec<u8> {
    let head_only = req.method == "HEAD";
    match (req.path.as_str(), req.method.as_str()) {
        ("/metrics", "GET" | "HEAD") => {
            let format = Format::from_accept(req.accept.as_deref());
            match expo::render(registry, format) {
                Ok(body) => response(
                    200,
                    "OK",
                    &[],
                    format.content_type(),
                    body.as_bytes(),
                    head_only,
                    keep,
                ),
                Err(_) => response(
                    500,
                    "Internal Server Error",
                    &[],
                    "text/plain",
                    b"encoding the metrics failed\n",
                    false,
                    keep,
                ),
            }
        }
        ("/metrics", _) => response(
            405,
            "Method Not Allowed",
            &["Allow: GET, HEAD"],
            "text/plain",
            b"only GET and HEAD\n",
            false,
            keep,
        ),
        ("/", "GET" | "HEAD") => response(
            200,
            "OK",
            &[],
            "text/html",
            b"<a href=\"/metrics\">/metrics</a>\n",
            head_only,
            keep,
        ),
        _ => response(
            404,
            "Not Found",
            &[],
            "text/plain",
            b"not found: try /metrics\n",
            false,
            keep,
        ),
    }
}

/// A whole response, head and body in one buffer (one `write`, one segment train: a
/// separate write for the body would cost another system call and could wait for the
/// client's ACK of the head, Nagle).
fn response(
    code: u16,
    reason: &str,
    extra: &[&str],
    content_type: &str,
    body: &[u8],
    head_only: bool,
    keep_alive: bool,
) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {}\r\n",
        body.len(),
        if keep_alive { "keep-alive" } else { "close" }
    );
    for h in extra {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    if !head_only {
        out.extend_from_slice(body);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads one response (head, then `Content-Length` bytes of body, none for a HEAD).
    fn read_response(s: &mut TcpStream, head_only: bool) -> String {
        let mut got = Vec::new();
        let mut b = [0_u8; 1];
        while !got.ends_with(b"\r\n\r\n") {
            assert_eq!(s.read(&mut b).unwrap(), 1, "closed mid-head: {got:?}");
            got.push(b[0]);
        }
        let head = String::from_utf8(got).unwrap();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .map_or(0, |v| v.trim().parse().unwrap());
        let mut body = vec![0_u8; if head_only { 0 } else { len }];
        s.read_exact(&mut body).unwrap();
        head + &String::from_utf8(body).unwrap()
    }

    /// One request on a new connection; its response.
    fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        read_response(&mut s, request.starts_with("HEAD"))
    }

    #[test]
    fn status_codes_follow_path_and_method() {
        let server = Server::start("127.0.0.1:0", Arc::new(Registry::default())).unwrap();
        let a = server.local_addr();
        let ok = get(a, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("text/plain; version=0.0.4"), "{ok}");
        let om = get(
            a,
            "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n",
        );
        assert!(
            om.contains("application/openmetrics-text") && om.ends_with("# EOF\n"),
            "{om}"
        );
        assert!(get(a, "GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404 "));
        let post = get(a, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
        assert!(
            post.starts_with("HTTP/1.1 405 ") && post.contains("Allow: GET, HEAD"),
            "{post}"
        );
        assert!(get(a, "garbage\r\n\r\n").starts_with("HTTP/1.1 400 "));
        let head = get(a, "HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.1 200 ") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        let long = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "y".repeat(20_000));
        assert!(get(a, &long).starts_with("HTTP/1.1 431 "));
    }

    #[test]
    fn a_kept_alive_connection_serves_several_scrapes_and_closes_on_request() {
        let server = Server::start("127.0.0.1:0", Arc::new(Registry::default())).unwrap();
        let mut s = TcpStream::connect(server.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // Two requests at once (pipelined), then a third that asks to close.
        s.write_all(b"GET /metrics HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n")
            .unwrap();
        assert!(read_response(&mut s, false).contains("Connection: keep-alive"));
        assert!(read_response(&mut s, false).contains("href=\"/metrics\""));
        s.write_all(b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        assert!(read_response(&mut s, false).contains("Connection: close"));
        assert_eq!(s.read(&mut [0_u8; 1]).unwrap(), 0, "closed after it");
    }

    /// Connects a client that sends `GET /metrics HTTP/1.1\r\n` and then nothing more.
    fn stalled(addr: SocketAddr) -> TcpStream {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
        s
    }

    #[test]
    fn scrapes_succeed_while_many_silent_and_trickling_clients_are_connected() {
        let server = Server::start("127.0.0.1:0", Arc::new(Registry::default())).unwrap();
        let a = server.local_addr();
        // Twice as many stalled clients as the server keeps, and some silent ones.
        let mut clients: Vec<TcpStream> = (0..2 * MAX_CONNECTIONS).map(|_| stalled(a)).collect();
        clients.extend((0..16).map(|_| TcpStream::connect(a).unwrap()));
        for round in 0..3 {
            // They trickle a byte each round: a deadline per read would never expire.
            for c in &mut clients {
                let _ = c.write_all(b"X");
            }
            let t = Instant::now();
            let r = get(a, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
            assert!(r.starts_with("HTTP/1.1 200 "), "round {round}: {r}");
            assert!(
                t.elapsed() < HEAD_DEADLINE,
                "round {round}: served at once, not after a deadline ({:?})",
                t.elapsed()
            );
        }
    }

    #[test]
    fn a_trickling_client_is_closed_at_the_head_deadline_not_per_read() {
        let server = Server::start("127.0.0.1:0", Arc::new(Registry::default())).unwrap();
        let mut s = stalled(server.local_addr());
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let t = Instant::now();
        // One byte every 100 ms: each read would be well within any per-read limit.
        let closed = loop {
            assert!(
                t.elapsed() < HEAD_DEADLINE * 3,
                "still open after {:?}",
                t.elapsed()
            );
            if s.write_all(b"X").is_err() {
                break t.elapsed();
            }
            match s.read(&mut [0_u8; 64]) {
                Ok(0) => break t.elapsed(),
                Ok(_) => panic!("answered a request that never ended"),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
                Err(_) => break t.elapsed(),
            }
        };
        assert!(closed >= HEAD_DEADLINE, "closed early: {closed:?}");
    }

    #[test]
    fn binding_a_taken_port_names_the_address() {
        let first = Server::start("127.0.0.1:0", Arc::new(Registry::default())).unwrap();
        let taken = first.local_addr().to_string();
        let err = Server::start(taken.as_str(), Arc::new(Registry::default())).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("cannot listen on {taken}")),
            "{err}"
        );
    }
}
