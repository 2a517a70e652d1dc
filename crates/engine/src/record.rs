//! Typed records the engine emits: one per finished request, per failed attempt, and per
//! closed connection. Everything downstream (stats, diagnosis, reports) consumes these.

use nodelay_tcp::TcpInfo;
use std::time::Duration;

/// One request that received a complete response.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseRecord {
    /// Connection slot (0..connections) that carried it.
    pub connection: u32,
    /// Index of the request kind in the run's request list.
    pub request: u16,
    /// 0 for the first request on a TCP connection, then 1, 2, ...
    pub sequence_on_connection: u32,
    /// When the request was due, relative to the run's start.
    pub start_offset: Duration,
    /// Handshake time when this request had to open the connection.
    pub connect: Option<Duration>,
    /// TLS handshake time (after the TCP handshake) when this request opened the connection.
    pub tls_handshake: Option<Duration>,
    /// That TLS handshake resumed an earlier session (no certificate exchange).
    pub tls_resumed: bool,
    /// From the request's start (intended start under `--rate`; connect start for a fresh
    /// connection) to the first response byte read.
    pub first_byte: Duration,
    /// From the request's start to the last response byte read.
    pub total: Duration,
    /// From when the client actually began the request (opened its connection or wrote its
    /// first byte) to the last response byte: the latency without the coordinated-omission
    /// correction. Under `--rate` a request can begin after it was due (every connection
    /// busy); in a closed loop it begins when due, and this equals `total`.
    pub total_uncorrected: Duration,
    /// How many `read()` calls returned part of this response.
    pub read_chunks: u32,
    /// Longest pause between two consecutive reads of this response (zero for one chunk).
    pub max_read_gap: Duration,
    /// Bytes that arrived before that longest pause (e.g. only the head).
    pub bytes_before_max_gap: u64,
    /// The pause before the response's last read (zero for one chunk)...
    pub last_read_gap: Duration,
    /// ...and the bytes that last read returned. A sub-segment tail that comes alone, one
    /// round trip after the first byte, is what Nagle's algorithm on the server held back
    /// until the client's ACK of an earlier small segment arrived.
    pub last_read_bytes: u64,
    /// The pauses between reads of this response of [`PAUSE_MIN`] or more, added up: a body
    /// sent in several short pauses, none as long as a stall, still costs their sum.
    pub paused: Duration,
    /// How many pauses of [`PAUSE_MIN`] or more there were.
    pub pauses: u32,
    /// Bytes read for this response, head and body.
    pub response_bytes: u64,
    /// HTTP status of the final response; 0 for raw protocols.
    pub status: u16,
    /// Over HTTP/2: the stream's own figures (`read_chunks` counts its frames then, and the
    /// read gaps are the pauses between them).
    pub http2: Option<StreamRecord>,
}

/// One HTTP/2 stream's figures beside its response's.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StreamRecord {
    /// The stream's id on its connection.
    pub stream_id: u32,
    /// From when the request was due (its start: `first_byte` and `total` count from there)
    /// to when its HEADERS left: time it queued behind the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS or behind the connection's opening.
    pub queued: Duration,
    /// Closed loop: from when the slot freed (the previous response's last frame reached
    /// this machine) to when the loop took the request up: our own wake-up, before `queued`.
    /// Reported queueing is the two together, as tcpdump sees it; diagnosis leaves this out,
    /// being the client's and not the server's limit.
    pub turnaround: Duration,
    /// From the request's start to the response's first DATA frame (None: no body).
    pub first_data: Option<Duration>,
    /// The pauses in its DATA that began with a flow-control window used up (the server
    /// waiting for our WINDOW_UPDATE), summed.
    pub window_blocked: Duration,
    /// A gRPC response's grpc-status (its trailers, or a trailers-only answer's headers).
    pub grpc_status: Option<u16>,
    /// Time it waited, with other streams of its connection, for a lost segment's
    /// retransmission: the kernel held the bytes after the hole, whichever stream they were
    /// for (head-of-line blocking of one TCP byte stream)...
    pub loss_held: Duration,
    /// ...and the part of that before its response's HEADERS came.
    pub loss_held_before_headers: Duration,
    /// Pauses in its request body that began with the server's flow-control window used up
    /// (we waited for the server's WINDOW_UPDATE), summed.
    pub send_window_blocked: Duration,
}

/// A pause between two reads of one response this long or longer counts in
/// [`ResponseRecord::paused`]: far above the microseconds between the reads of one burst on
/// loopback, far below any timer or round trip worth naming.
pub const PAUSE_MIN: Duration = Duration::from_millis(1);

/// Why a request attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The server refused the connection (ECONNREFUSED).
    ConnectRefused,
    /// The TCP or TLS handshake did not finish within `connect_timeout`.
    ConnectTimeout,
    /// The connection was reset or aborted, or a write found it closed (EPIPE).
    Reset,
    /// No complete response within `timeout`.
    Timeout,
    /// The response broke its framing: unparseable, too large, or followed by bytes nobody
    /// asked for.
    MalformedResponse,
    /// The server closed the connection before the response was complete.
    ClosedEarly,
    /// The process or the system ran out of file descriptors (EMFILE, ENFILE).
    OutOfFiles,
    /// No local port was free for a new connection (EADDRNOTAVAIL): this machine's
    /// ephemeral ports are all taken, most often by connections in TIME-WAIT.
    PortsExhausted,
    /// The TLS handshake or a TLS record failed (certificate, alert, not TLS at all).
    Tls,
    /// Any other failure, as the message says.
    Other,
}

impl ErrorKind {
    /// Every kind, in the order of `index`.
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::Reset,
        ErrorKind::Timeout,
        ErrorKind::MalformedResponse,
        ErrorKind::ClosedEarly,
        ErrorKind::OutOfFiles,
        ErrorKind::PortsExhausted,
        ErrorKind::Tls,
        ErrorKind::Other,
    ];

    /// Stable name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Timeout => "timeout",
            ErrorKind::MalformedResponse => "malformed_response",
            ErrorKind::ClosedEarly => "closed_early",
            ErrorKind::OutOfFiles => "out_of_files",
            ErrorKind::PortsExhausted => "ports_exhausted",
            ErrorKind::Tls => "tls",
            ErrorKind::Other => "other",
        }
    }

    /// This kind's position in `ALL`, for per-kind arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Classifies a socket error from connect, read or write.
    pub fn from_io(error: &std::io::Error, connecting: bool) -> ErrorKind {
        use std::io::ErrorKind as Io;
        if matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
            return ErrorKind::OutOfFiles;
        }
        if connecting && error.raw_os_error() == Some(libc::EADDRNOTAVAIL) {
            return ErrorKind::PortsExhausted;
        }
        match error.kind() {
            Io::ConnectionRefused => ErrorKind::ConnectRefused,
            Io::TimedOut if connecting => ErrorKind::ConnectTimeout,
            Io::TimedOut => ErrorKind::Timeout,
            Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe => ErrorKind::Reset,
            _ => ErrorKind::Other,
        }
    }
}

/// One failed attempt; the connection is closed and reopened after it.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorRecord {
    /// Connection slot (0..connections) the attempt was made on.
    pub connection: u32,
    /// Index of the request kind in the run's request list.
    pub request: u16,
    /// When the attempt failed, relative to the run's start (its interval of the timeline).
    pub offset: Duration,
    /// The kind of failure.
    pub kind: ErrorKind,
    /// What went wrong, in the words of the error that said so.
    pub message: String,
}

/// A TCP connection's kernel view, taken just before it closed or when the run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionRecord {
    /// Connection slot (0..connections) it occupied.
    pub connection: u32,
    /// Complete responses it carried.
    pub requests: u64,
    /// Requests still in flight on it when the run ended (not counted as done or failed): at
    /// most one over HTTP/1.1, one per open stream over HTTP/2.
    pub abandoned_requests: u32,
    /// When the run ended before its TCP handshake did: how long its connect had waited for
    /// an answer by then. On loopback every connect is answered within a millisecond unless
    /// the server's full listen queue dropped the SYN (the client retries after 1 s, then 3 s):
    /// a run shorter than that sees those waits only here.
    pub connect_unanswered_for: Option<Duration>,
    /// Its TCP_INFO, when the kernel gave one (Linux only).
    pub tcp_info: Option<TcpInfo>,
    /// The first HTTP `Server` header seen on this slot (printable ASCII), naming the stack;
    /// on the slot's first record that has one, `None` on the later ones.
    pub server_header: Option<String>,
    /// What the TLS handshake of this connection settled on (none for plain TCP).
    pub tls: Option<TlsSummary>,
    /// Over HTTP/2: the connection's settings, windows and frame counts.
    pub http2: Option<Http2Connection>,
}

/// What the server's SETTINGS said (None: not said, the protocol's default holds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerSettings {
    /// SETTINGS_MAX_CONCURRENT_STREAMS: streams we may have open at once.
    pub max_concurrent_streams: Option<u32>,
    /// SETTINGS_INITIAL_WINDOW_SIZE: what each of our streams may send before a WINDOW_UPDATE.
    pub initial_window_bytes: Option<u32>,
    /// SETTINGS_MAX_FRAME_SIZE.
    pub max_frame_bytes: Option<u32>,
}

/// The connection's flow-control and frame figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Http2Connection {
    /// The server's SETTINGS.
    pub peer: PeerSettings,
    /// The window each of our streams advertised (our SETTINGS_INITIAL_WINDOW_SIZE).
    pub stream_window_bytes: u32,
    /// The connection window we advertised (65,535 plus our first connection WINDOW_UPDATE).
    pub connection_window_bytes: u32,
    /// DATA frames received, over all streams.
    pub data_frames: u64,
    /// Their payload bytes (flow-controlled: padding included).
    pub data_bytes: u64,
    /// WINDOW_UPDATE frames we sent (stream and connection).
    pub window_updates_sent: u64,
    /// Pauses of the whole connection's DATA that began with its window used up, summed...
    pub connection_window_blocked: Duration,
    /// ...and how many there were.
    pub connection_window_stalls: u64,
    /// GOAWAY received, and its error code.
    pub goaway_code: Option<u32>,
    /// Streams the server reset.
    pub streams_reset: u64,
    /// Requests the run ended with that the session held but never sent: their HEADERS waited
    /// behind the server's stream limit (counted among `abandoned_requests` too).
    pub streams_unsent_at_end: u64,
    /// The most streams open at once (HEADERS sent, response not over).
    pub max_open_streams: u32,
    /// Pauses in reading that ended with a lost segment's retransmission (the socket had
    /// received packets out of order, TCP_INFO `rcv_ooopack`, or resent segments the server
    /// did not report as duplicates)...
    pub loss_holes: u64,
    /// ...and the streams they held, summed (each pause holds every stream open through it).
    pub streams_held_by_loss: u64,
    /// Times our request bodies used up the server's window (a stream's or the connection's)...
    pub send_window_stalls: u64,
    /// ...and the pauses that followed in our DATA until its WINDOW_UPDATE, summed.
    pub send_window_blocked: Duration,
}

/// A TLS connection's negotiated parameters; static names, so no allocation per connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlsSummary {
    /// `TLSv1.3` or `TLSv1.2`.
    pub version: &'static str,
    /// IANA name, e.g. `TLS_AES_256_GCM_SHA384`.
    pub cipher: &'static str,
    /// The server chose http/1.1 by ALPN (false: it ignored ALPN, or chose h2).
    pub alpn_http11: bool,
    /// The server chose h2 by ALPN (only offered to an HTTP/2 run).
    pub alpn_h2: bool,
    /// The handshake resumed an earlier session.
    pub resumed: bool,
}
