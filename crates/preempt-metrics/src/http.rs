//! A small HTTP/1.1 server for `/metrics`, on its own non-real-time threads.
//!
//! # Why not a web framework
//! The endpoint answers one request shape (`GET /metrics`) a few times a minute. A framework
//! would bring an async runtime and dozens of crates into a real-time process; this is
//! `std::net` plus the request line and one header.
//!
//! # A slow client never blocks measurement
//! The measuring threads share nothing with the server but atomics: a scrape *reads* them
//! (a [`Registry`] of collectors, see [`crate::expo`]) and never takes a lock a measuring thread
//! takes. Each connection is served by one of at most [`MAX_CONNECTIONS`] worker threads
//! (started when needed, then kept), with [`IO_TIMEOUT`] on reads and writes, so a client that
//! connects and sends nothing, or never reads its response, only holds its own worker; at
//! most [`MAX_CONNECTIONS`] are served at once and the rest get `503`. The threads run under
//! `SCHED_OTHER` whatever policy the thread that started the server had.
//!
//! # Responses
//! `GET`/`HEAD /metrics` → 200 (OpenMetrics when the `Accept` header names it, else the
//! Prometheus text format); `/` → 200 with a link; any other path → 404; another method on
//! `/metrics` → 405 with `Allow: GET, HEAD`; an unparsable request → 400.
//!
//! ```no_run
//! use std::sync::Arc;
//! use prometheus_client::registry::Registry;
//! let server = preempt_metrics::http::Server::start("127.0.0.1:0", Arc::new(Registry::default()))?;
//! println!("serving on http://{}/metrics", server.local_addr());
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use preempt_io::sys::sched::{self, Policy};
use prometheus_client::registry::Registry;

use crate::expo::{self, Format};

/// Read and write timeout of a connection: a scrape that takes longer is abandoned
/// (Prometheus' default `scrape_timeout` is 10 s; ours must not hold a thread longer).
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at once; more get `503 Service Unavailable`.
pub const MAX_CONNECTIONS: usize = 8;
/// The longest request head read (request line + headers).
const MAX_HEAD_BYTES: u64 = 16 * 1024;

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
    /// The thread cannot be spawned.
    pub fn serve(self, registry: Arc<Registry>) -> io::Result<Server> {
        let listener = self.listener;
        let local = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let workers = Arc::new(AtomicUsize::new(0));
        let accept = {
            let stop = Arc::clone(&stop);
            let workers = Arc::clone(&workers);
            std::thread::Builder::new()
                .name("preempt-metrics".into())
                .spawn(move || {
                    leave_real_time();
                    let pool = Pool::new(registry, workers);
                    for conn in listener.incoming() {
                        if stop.load(Ordering::Acquire) {
                            break;
                        }
                        // A failed accept (e.g. the peer reset) concerns that peer only.
                        let Ok(stream) = conn else { continue };
                        pool.serve_or_refuse(stream);
                    }
                    // Dropping the pool closes its queue: idle workers exit, busy ones after
                    // their connection.
                })?
        };
        Ok(Server {
            addr: local,
            stop,
            workers,
            accept: Some(accept),
        })
    }
}

/// A running `/metrics` server. Dropping it stops the listener (connections being served
/// finish on their own within [`IO_TIMEOUT`]).
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// Connection workers started so far.
    workers: Arc<AtomicUsize>,
    accept: Option<JoinHandle<()>>,
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

    /// How many connection worker threads the server has started (at most
    /// [`MAX_CONNECTIONS`]; they stay for the next connections).
    pub fn workers_started(&self) -> usize {
        self.workers.load(Ordering::Acquire)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the blocking accept with a connection of our own.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Threads started by a real-time thread inherit its policy: the server's must not.
fn leave_real_time() {
    // Lowering one's own policy to SCHED_OTHER is always permitted; if it failed the thread
    // would stay at the starter's policy, which the server can survive (it blocks in accept).
    let _ = sched::set_current_thread_policy(&Policy::Other { nice: 0 });
}

/// The connection workers: at most [`MAX_CONNECTIONS`] threads, started as connections need
/// them and kept for the next ones.
///
/// A thread per connection (the first design) spent most of a scrape's CPU creating and
/// tearing down the thread (`clone3`, the stack's `mmap`/`munmap`, glibc's per-thread
/// clean-up: 40 % of the server's samples under `perf record`, docs/PERFORMANCE.md), more than
/// encoding the metrics. A worker that stays serves the next connection for the cost of a
/// channel hand-off, and a slow client still holds only its own worker.
struct Pool {
    registry: Arc<Registry>,
    queue: SyncSender<TcpStream>,
    /// Shared by the workers: the one that holds the lock waits for the next connection.
    take: Arc<Mutex<Receiver<TcpStream>>>,
    /// Connections accepted and not yet answered (queued or being served).
    active: Arc<AtomicUsize>,
    /// Workers waiting for a connection.
    idle: Arc<AtomicUsize>,
    /// Workers started (shared with the [`Server`]).
    workers: Arc<AtomicUsize>,
}

impl Pool {
    fn new(registry: Arc<Registry>, workers: Arc<AtomicUsize>) -> Pool {
        // Room for every connection that may be in flight, so that queueing never blocks.
        let (queue, take) = std::sync::mpsc::sync_channel(MAX_CONNECTIONS);
        Pool {
            registry,
            queue,
            take: Arc::new(Mutex::new(take)),
            active: Arc::new(AtomicUsize::new(0)),
            idle: Arc::new(AtomicUsize::new(0)),
            workers,
        }
    }

    /// Queues `stream` for a worker (starting one if none is idle), or answers `503` when
    /// [`MAX_CONNECTIONS`] are already in flight.
    fn serve_or_refuse(&self, stream: TcpStream) {
        let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
        let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
        if self.active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            self.active.fetch_sub(1, Ordering::AcqRel);
            let mut s = stream;
            let _ = respond(
                &mut s,
                503,
                "Service Unavailable",
                &[],
                "text/plain",
                b"busy\n",
                false,
            );
            return;
        }
        let started = self.workers.load(Ordering::Acquire);
        if self.idle.load(Ordering::Acquire) == 0 && started < MAX_CONNECTIONS {
            self.start_worker();
        }
        if self.workers.load(Ordering::Acquire) == 0 {
            // No worker could be started (out of threads): the connection is closed unanswered.
            self.active.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        // Cannot block: at most MAX_CONNECTIONS are in flight and the queue holds as many.
        if self.queue.send(stream).is_err() {
            self.active.fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn start_worker(&self) {
        let (registry, take) = (Arc::clone(&self.registry), Arc::clone(&self.take));
        let (active, idle) = (Arc::clone(&self.active), Arc::clone(&self.idle));
        let spawned = std::thread::Builder::new()
            .name("preempt-scrape".into())
            .spawn(move || {
                loop {
                    idle.fetch_add(1, Ordering::AcqRel);
                    // A poisoned lock only means another worker panicked while waiting; the
                    // receiver inside is intact.
                    let next = take.lock().unwrap_or_else(PoisonError::into_inner).recv();
                    idle.fetch_sub(1, Ordering::AcqRel);
                    // Err: the server stopped and dropped the queue.
                    let Ok(stream) = next else { break };
                    // The connection's outcome concerns that client only.
                    let _ = handle(stream, &registry);
                    active.fetch_sub(1, Ordering::AcqRel);
                }
            });
        if spawned.is_ok() {
            self.workers.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// A parsed request head.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    method: String,
    path: String,
    accept: Option<String>,
}

fn read_head(stream: &TcpStream) -> io::Result<Option<Request>> {
    let mut reader = BufReader::new(stream.take(MAX_HEAD_BYTES));
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Ok(None);
    };
    if !version.starts_with("HTTP/1.") {
        return Ok(None);
    }
    let path = target.split('?').next().unwrap_or(target).to_string();
    let mut accept = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("accept") {
                accept = Some(v.trim().to_string());
            }
        }
    }
    Ok(Some(Request {
        method: method.to_string(),
        path,
        accept,
    }))
}

fn handle(mut stream: TcpStream, registry: &Registry) -> io::Result<()> {
    let Some(req) = read_head(&stream)? else {
        return respond(
            &mut stream,
            400,
            "Bad Request",
            &[],
            "text/plain",
            b"bad request\n",
            false,
        );
    };
    let head_only = req.method == "HEAD";
    match (req.path.as_str(), req.method.as_str()) {
        ("/metrics", "GET" | "HEAD") => {
            let format = Format::from_accept(req.accept.as_deref());
            match expo::render(registry, format) {
                Ok(body) => respond(
                    &mut stream,
                    200,
                    "OK",
                    &[],
                    format.content_type(),
                    body.as_bytes(),
                    head_only,
                ),
                Err(_) => respond(
                    &mut stream,
                    500,
                    "Internal Server Error",
                    &[],
                    "text/plain",
                    b"encoding the metrics failed\n",
                    false,
                ),
            }
        }
        ("/metrics", _) => respond(
            &mut stream,
            405,
            "Method Not Allowed",
            &["Allow: GET, HEAD"],
            "text/plain",
            b"only GET and HEAD\n",
            false,
        ),
        ("/", "GET" | "HEAD") => respond(
            &mut stream,
            200,
            "OK",
            &[],
            "text/html",
            b"<a href=\"/metrics\">/metrics</a>\n",
            head_only,
        ),
        _ => respond(
            &mut stream,
            404,
            "Not Found",
            &[],
            "text/plain",
            b"not found: try /metrics\n",
            false,
        ),
    }
}

fn respond(
    stream: &mut TcpStream,
    code: u16,
    reason: &str,
    extra: &[&str],
    content_type: &str,
    body: &[u8],
    head_only: bool,
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for h in extra {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    // One write, one TCP segment train: a separate write for the body would cost another
    // system call and could wait for the client's ACK of the head (Nagle).
    let mut response = head.into_bytes();
    if !head_only {
        response.extend_from_slice(body);
    }
    stream.write_all(&response)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
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
    }

    #[test]
    fn a_silent_client_does_not_block_the_next_scrape() {
        let server = Server::start("127.0.0.1:0", Arc::new(Registry::default())).unwrap();
        let a = server.local_addr();
        // Connects and sends nothing: holds one connection thread until IO_TIMEOUT.
        let _silent = TcpStream::connect(a).unwrap();
        let t = std::time::Instant::now();
        assert!(get(a, "GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200 "));
        assert!(
            t.elapsed() < IO_TIMEOUT,
            "served while the silent client waits"
        );
    }

    #[test]
    fn scrapes_reuse_the_connection_workers() {
        let server = Server::start("127.0.0.1:0", Arc::new(Registry::default())).unwrap();
        let a = server.local_addr();
        for _ in 0..40 {
            assert!(get(a, "GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200 "));
        }
        // A thread per connection would have started 40.
        let started = server.workers_started();
        assert!(
            (1..=MAX_CONNECTIONS).contains(&started),
            "{started} workers for 40 scrapes"
        );
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
