//! The `/metrics` endpoint: tiny_http on a thread of its own, answering `GET /metrics` with
//! [`WatchMetrics::encode`] and 404 elsewhere, until the [`MetricsServer`] is dropped.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use tiny_http::{Header, Method, Request, Response, Server};

use super::WatchMetrics;

/// The Content-Type of `/metrics`: the OpenMetrics text format prometheus-client writes,
/// which Prometheus asks for first and parses by this header.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The running `/metrics` endpoint. Dropping it stops it: the port refuses connections at
/// once and the serving thread is joined.
pub struct MetricsServer {
    local_addr: SocketAddr,
    server: Arc<Server>,
    /// A second handle on the listening socket, to shut it down on drop: tiny_http's accept
    /// thread closes its own only once it wakes up, and is not joined.
    listener: TcpListener,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// The address it listens on (the real port when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer").field("local_addr", &self.local_addr).finish_non_exhaustive()
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            // The thread only responds to requests; a panic there has nothing left to report.
            let _ = thread.join();
        }
        // SAFETY: shutdown(2) on a descriptor this struct owns (its TcpListener); no memory
        // is involved. It stops the socket listening, so connections are refused from now on.
        unsafe { libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR) };
    }
}

/// Serves `metrics` on `addr` (`127.0.0.1:9464`, `0.0.0.0:9464`, port 0 for any free one)
/// until the returned server is dropped. A bind error (address in use, not this host's)
/// comes back as one line naming the address.
pub fn serve(addr: SocketAddr, metrics: Arc<WatchMetrics>) -> io::Result<MetricsServer> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot serve /metrics on {addr}: {e}")))?;
    let local_addr = listener.local_addr()?;
    let handle = listener.try_clone()?;
    let server = Server::from_listener(listener, None)
        .map_err(|e| io::Error::other(format!("cannot serve /metrics on {addr}: {e}")))?;
    let server = Arc::new(server);
    let serving = Arc::clone(&server);
    let thread = thread::Builder::new().name("watch-metrics".to_owned()).spawn(move || {
        // Ends when the server is unblocked (drop) or its accept thread fails.
        for request in serving.incoming_requests() {
            respond(request, &metrics);
        }
    })?;
    Ok(MetricsServer { local_addr, server, listener: handle, thread: Some(thread) })
}

fn respond(request: Request, metrics: &WatchMetrics) {
    let path = request.url().split('?').next().unwrap_or_default();
    let method = request.method().clone();
    let response = match (path, &method) {
        ("/metrics", Method::Get | Method::Head) => {
            Response::from_string(metrics.encode()).with_header(header("Content-Type", CONTENT_TYPE))
        }
        ("/metrics", _) => Response::from_string("only GET /metrics\n")
            .with_status_code(405)
            .with_header(header("Allow", "GET, HEAD")),
        _ => Response::from_string("not found: nodelay watch serves /metrics\n").with_status_code(404),
    };
    // A scraper that hung up before the answer has nothing to be told.
    let _ = request.respond(response);
}

fn header(name: &str, value: &str) -> Header {
    // Both are ASCII constants of this file, which Header::from_bytes accepts.
    Header::from_bytes(name.as_bytes(), value.as_bytes())
        .unwrap_or_else(|()| unreachable!("ASCII header {name}"))
}

/// Parses `--prometheus ADDR`: `HOST:PORT`, `[IPv6]:PORT`, or `:PORT` for every interface
/// (as Prometheus exporters accept). The error is one line, for clap's value parser.
pub fn parse_listen_addr(text: &str) -> Result<SocketAddr, String> {
    let full = match text.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => text.to_owned(),
    };
    full.parse().map_err(|_| {
        format!("{text:?} is not an address to listen on: give IP:PORT, such as 127.0.0.1:9464 or :9464")
    })
}
