//! What one engine run does: target, request bytes, concurrency, bounds and socket options.

use crate::tls::TlsClient;
use nodelay_wire::Framing;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// One kind of request a run sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    /// Name used in per-request reports.
    pub name: String,
    /// The encoded request, sent as-is; shared, because configs are cloned per phase and a
    /// body may be tens of MiB.
    pub bytes: Arc<Vec<u8>>,
    /// An HTTP HEAD request: responses carry no body.
    pub expects_no_body: bool,
    /// Byte counts of the leading writes the request is split into (the rest goes in a last
    /// write); empty sends it in one write.
    pub write_split: Vec<usize>,
}

impl RequestSpec {
    /// A request named `name` of these encoded bytes, sent in one write and answered with a
    /// body (`expects_no_body` false).
    pub fn new(name: impl Into<String>, bytes: impl Into<Arc<Vec<u8>>>) -> Self {
        RequestSpec {
            name: name.into(),
            bytes: bytes.into(),
            expects_no_body: false,
            write_split: Vec::new(),
        }
    }

    /// Ends of each write of the request, the last being its length.
    pub(crate) fn write_ends(&self) -> Vec<usize> {
        let mut ends = Vec::new();
        let mut end = 0;
        for &piece in &self.write_split {
            end += piece;
            if end >= self.bytes.len() {
                break;
            }
            ends.push(end);
        }
        ends.push(self.bytes.len());
        ends
    }
}

/// Which request a connection sends next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// The requests in order, round and round, on every connection.
    Sequence,
    /// At random, in proportion to these weights (one per request; seeded per connection,
    /// so runs are repeatable).
    Weighted(Vec<u32>),
}

/// What one engine run does: where, what, how many at once, for how long, and how.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The server's address; every connection goes to it.
    pub address: SocketAddr,
    /// At least one.
    pub requests: Vec<RequestSpec>,
    /// Which request each connection sends next.
    pub selection: Selection,
    /// How the server's responses are delimited.
    pub framing: Framing,
    /// Connection slots kept busy, over all threads.
    pub connections: usize,
    /// Worker threads (event loops); at most one per connection.
    pub threads: usize,
    /// Stop after this many requests (completed or failed).
    pub max_requests: Option<u64>,
    /// Stop issuing after this long; requests still in flight then are not counted.
    pub duration: Option<Duration>,
    /// Open loop: requests are due at this rate overall, latency counted from when due.
    pub rate_per_second: Option<f64>,
    /// A request's deadline from its first write to its response's last byte.
    pub timeout: Duration,
    /// A new connection's deadline for its TCP handshake, and again for its TLS handshake.
    pub connect_timeout: Duration,
    /// `false`: a new connection for every request.
    pub keep_alive: bool,
    /// Speak HTTP/2 (prior knowledge on plain TCP; over TLS, the server must choose `h2` by
    /// ALPN, which [`TlsClient::offering_h2`] offers); None: HTTP/1.1 as framed by `framing`.
    pub http2: Option<Http2Settings>,
    /// Options set on every connection's socket.
    pub socket: SocketOptions,
    /// Length of one interval of the run's time series (`Stats::timeline`).
    pub interval: Duration,
    /// `https`: every connection speaks TLS after its TCP handshake.
    pub tls: Option<TlsClient>,
    /// Whether the threads poll without sleeping, so that a response need not wake them (the
    /// server is spared the wake-up).
    pub busy_poll: BusyPoll,
    /// Wait for readiness through io_uring (`io_uring_unavailable` says whether this machine
    /// can); its waits are always batched (`batched_waits`). False in [`EngineConfig::new`]:
    /// bench and compare choose it (nodelay_load's `choose_event_loop`), the doctor's phases
    /// and probes keep epoll (see `new`).
    pub io_uring: bool,
    /// A closed loop's waits hold out for several responses (io_uring's minimum wait, or
    /// epoll's short timer sleeps) so that neither the server nor this machine pays a wake-up
    /// per response, and responses are timed by the kernel's arrival stamps. Implied by
    /// `io_uring`; false in [`EngineConfig::new`].
    pub batched_waits: bool,
}

/// How an HTTP/2 run uses each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http2Settings {
    /// Requests in flight at once on each connection (`--streams`).
    pub streams_per_connection: usize,
    /// SETTINGS_INITIAL_WINDOW_SIZE we send: what the server may send on a stream before
    /// our WINDOW_UPDATE.
    pub stream_window_bytes: u32,
    /// The connection's window, over all its streams.
    pub connection_window_bytes: u32,
}

impl Default for Http2Settings {
    /// One stream, and the protocol's default windows (65,535 bytes), as a client that
    /// changes nothing advertises them.
    fn default() -> Self {
        Http2Settings {
            streams_per_connection: 1,
            stream_window_bytes: 65_535,
            connection_window_bytes: 65_535,
        }
    }
}

/// How a worker waits for events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BusyPoll {
    /// Sleep in `epoll_wait` until an event or a timer.
    #[default]
    Off,
    /// Never sleep: a whole core per thread.
    Always,
    /// Keep polling without sleeping for this long after the last event, then sleep. Against
    /// nginx on one core (a response every ~12 µs) 10 µs gained nothing and 30 µs spun as
    /// much as `Always`: the window either covers the gaps between responses or it does not.
    After(Duration),
}

/// Socket options set on every client connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketOptions {
    /// TCP_NODELAY on the client socket. On by default so the client is never the cause.
    pub nodelay: bool,
    /// Set TCP_QUICKACK after every read: the client never delays its ACKs, which removes a
    /// server-side Nagle stall (the doctor's experiment).
    pub quickack_after_read: bool,
}

impl Default for SocketOptions {
    fn default() -> Self {
        SocketOptions { nodelay: true, quickack_after_read: false }
    }
}

impl EngineConfig {
    /// A closed-loop, keep-alive, 10-second HTTP run of one request on one connection, waiting
    /// with epoll. The doctor builds its phases on this and stays on epoll on purpose: it times
    /// one connection unless told otherwise, where io_uring's waits never hold out and would only
    /// drop the generator's wake-up from each time, so its phases keep the clock of its probes
    /// and of wrk-like tools, against which its thresholds (a 40 ms stall, a path RTT) are read.
    pub fn new(address: SocketAddr, request: Vec<u8>) -> Self {
        EngineConfig {
            address,
            requests: vec![RequestSpec::new("request", request)],
            selection: Selection::Sequence,
            framing: Framing::Http { max_head_bytes: 64 * 1024, max_response_bytes: u64::MAX },
            connections: 1,
            threads: 1,
            max_requests: None,
            duration: Some(Duration::from_secs(10)),
            rate_per_second: None,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
            keep_alive: true,
            http2: None,
            socket: SocketOptions::default(),
            interval: crate::timeline::DEFAULT_INTERVAL,
            tls: None,
            busy_poll: BusyPoll::Off,
            io_uring: false,
            batched_waits: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_ends_stop_at_request_length() {
        let mut request = RequestSpec::new("r", vec![0; 100]);
        assert_eq!(request.write_ends(), vec![100]);
        request.write_split = vec![40];
        assert_eq!(request.write_ends(), vec![40, 100]);
        request.write_split = vec![40, 30, 500];
        assert_eq!(request.write_ends(), vec![40, 70, 100]);
    }
}
