//! Typed records the relay emits: one per exchange relayed, per exchange that could not
//! finish, per connection closed and per upstream connection that could not be opened.
//! Everything downstream (statistics, diagnosis, reports) consumes these.

use nodelay_tcp::TcpInfo;
use std::time::{Duration, Instant};

/// How one message (a request on the client leg, a response on the upstream leg) arrived:
/// when its first and last bytes were read, in how many reads, and its longest pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reads {
    /// When the first byte was read.
    pub first: Instant,
    /// When the last byte was read.
    pub last: Instant,
    /// `read()` calls that returned part of it.
    pub reads: u32,
    /// Bytes read for it.
    pub bytes: u64,
    /// Longest pause between two reads of this message (zero for one read).
    pub max_gap: Duration,
    /// Bytes that had arrived before that pause (e.g. only a response's head).
    pub bytes_before_max_gap: u64,
}

impl Reads {
    /// The message's first read, at `at`, of `bytes` bytes.
    pub fn start(at: Instant, bytes: usize) -> Self {
        Reads {
            first: at,
            last: at,
            reads: 1,
            bytes: bytes as u64,
            max_gap: Duration::ZERO,
            bytes_before_max_gap: 0,
        }
    }

    /// Another read of the same message. Two parts of one read (a message that ends and the
    /// next that starts in it) are one read each, so a read at the same instant adds no gap.
    pub fn add(&mut self, at: Instant, bytes: usize) {
        let gap = at.saturating_duration_since(self.last);
        if gap > self.max_gap {
            self.max_gap = gap;
            self.bytes_before_max_gap = self.bytes;
        }
        self.last = at;
        self.reads += 1;
        self.bytes += bytes as u64;
    }

    /// From the first byte to the last.
    pub fn span(&self) -> Duration {
        self.last.saturating_duration_since(self.first)
    }
}

/// How the relay found where exchanges begin and end on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framing {
    /// HTTP/1.x: the request and response framers say where each message ends.
    Http,
    /// Any other protocol: the client's bytes, then the upstream's until the client speaks
    /// again.
    Turns,
}

impl Framing {
    /// Stable name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Framing::Http => "http",
            Framing::Turns => "turns",
        }
    }
}

/// One exchange relayed in full: the request read from the client and written to the
/// upstream, the response read from the upstream and written to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExchangeRecord {
    /// The connection (numbered from 1 in the order accepted).
    pub connection: u64,
    /// 0 for the first exchange on the connection, then 1, 2, ...
    pub sequence: u32,
    /// How the exchange was told apart from the next.
    pub framing: Framing,
    /// The request as read from the client.
    pub request: Reads,
    /// When the request's last byte was written to the upstream.
    pub forwarded: Instant,
    /// The response as read from the upstream.
    pub response: Reads,
    /// When the response's last byte was written to the client.
    pub delivered: Instant,
    /// HTTP status of the response; 0 when not HTTP.
    pub status: u16,
    /// The client leg's round trip (TCP_INFO `min_rtt` of the relay's socket to the
    /// client) as last read on this connection; `None` before the kernel had a sample.
    pub client_rtt: Option<Duration>,
    /// The upstream leg's round trip (TCP_INFO `min_rtt` of the relay's socket to the
    /// upstream) as last read on this connection; `None` before the kernel had a sample.
    pub upstream_rtt: Option<Duration>,
}

impl ExchangeRecord {
    /// From the request's first byte read to the response's last byte written.
    pub fn total(&self) -> Duration {
        self.delivered.saturating_duration_since(self.request.first)
    }

    /// Time on the client's side: its request arriving (first to last byte) and the
    /// response being delivered to it (last byte read from the upstream to last written).
    pub fn client_leg(&self) -> Duration {
        self.request.span() + self.delivered.saturating_duration_since(self.response.last)
    }

    /// From the request forwarded in full to the response's last byte read: the upstream's
    /// work and its network.
    pub fn upstream(&self) -> Duration {
        self.response.last.saturating_duration_since(self.forwarded)
    }

    /// The relay's own time: from the request's last byte read to it written upstream (the
    /// upstream connection's handshake included on a connection's first exchange).
    pub fn relay(&self) -> Duration {
        self.forwarded.saturating_duration_since(self.request.last)
    }

    /// From the request forwarded in full to the response's first byte read.
    pub fn upstream_first_byte(&self) -> Duration {
        self.response.first.saturating_duration_since(self.forwarded)
    }
}

/// Why an exchange that had begun was not relayed in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unfinished {
    /// The client closed or reset its connection first.
    ClientGone,
    /// The upstream closed or reset its connection first.
    UpstreamGone,
    /// The relay stopped (duration, exchange count, Ctrl-C) while it was in flight.
    InFlightAtStop,
    /// Its framing could not be followed (HTTP the framers refused, or too many in flight):
    /// its bytes were relayed, its timing is unknown.
    Untimed,
}

impl Unfinished {
    /// Every reason, in declaration order (the index of the relay's per-reason counts).
    pub const ALL: [Unfinished; 4] =
        [Unfinished::ClientGone, Unfinished::UpstreamGone, Unfinished::InFlightAtStop, Unfinished::Untimed];

    /// Stable name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Unfinished::ClientGone => "client_gone",
            Unfinished::UpstreamGone => "upstream_gone",
            Unfinished::InFlightAtStop => "in_flight_at_end",
            Unfinished::Untimed => "untimed",
        }
    }
}

/// An exchange that began (request bytes arrived) and was not relayed in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IncompleteRecord {
    /// The connection (numbered from 1 in the order accepted).
    pub connection: u64,
    /// 0 for the first exchange on the connection, then 1, 2, ...
    pub sequence: u32,
    /// Why it was not relayed in full.
    pub why: Unfinished,
}

/// How a relayed connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ending {
    /// Both sides closed their direction (FIN both ways, passed through).
    Closed,
    /// The client reset the connection or a read or write on its leg failed.
    ClientError,
    /// The upstream reset the connection or a read or write on its leg failed.
    UpstreamError,
    /// The relay stopped while it was open.
    Stopped,
}

/// A relayed connection, when it ended: both legs' kernel view and what it carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionRecord {
    /// The connection (numbered from 1 in the order accepted).
    pub connection: u64,
    /// Exchanges relayed in full on it.
    pub exchanges: u32,
    /// Bytes read from the client (all relayed to the upstream unless it failed).
    pub client_bytes: u64,
    /// Bytes read from the upstream (all relayed to the client unless it failed).
    pub upstream_bytes: u64,
    /// The upstream connection's handshake.
    pub upstream_connect: Option<Duration>,
    /// The client leg's TCP_INFO, when the kernel gave one.
    pub client_tcp_info: Option<TcpInfo>,
    /// The upstream leg's TCP_INFO, when the kernel gave one.
    pub upstream_tcp_info: Option<TcpInfo>,
    /// How exchanges were told apart; `None` when the client sent nothing.
    pub framing: Option<Framing>,
    /// HTTP framing was given up on this connection (why), exchange timing lost from there.
    pub framing_lost: Option<String>,
    /// The upstream's first HTTP `Server` header on this connection (printable ASCII).
    pub upstream_server: Option<String>,
    /// How it ended.
    pub ending: Ending,
}

/// Why an upstream connection could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConnectFailure {
    /// The upstream refused the connection (ECONNREFUSED).
    Refused,
    /// The handshake did not finish within the relay's connect timeout.
    TimedOut,
    /// The relay ran out of file descriptors.
    OutOfFiles,
    /// Any other failure, as the message says.
    Other,
}

impl ConnectFailure {
    /// Every kind, in declaration order (the index of the relay's per-kind counts).
    pub const ALL: [ConnectFailure; 4] = [
        ConnectFailure::Refused,
        ConnectFailure::TimedOut,
        ConnectFailure::OutOfFiles,
        ConnectFailure::Other,
    ];

    /// Stable name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectFailure::Refused => "refused",
            ConnectFailure::TimedOut => "timed_out",
            ConnectFailure::OutOfFiles => "out_of_files",
            ConnectFailure::Other => "other",
        }
    }

    /// Classifies a connect error.
    pub fn of(error: &std::io::Error) -> Self {
        if matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
            return ConnectFailure::OutOfFiles;
        }
        match error.kind() {
            std::io::ErrorKind::ConnectionRefused => ConnectFailure::Refused,
            std::io::ErrorKind::TimedOut => ConnectFailure::TimedOut,
            _ => ConnectFailure::Other,
        }
    }
}

/// An upstream connection that could not be opened; its client's connection was closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectFailureRecord {
    /// The client's connection (numbered from 1 in the order accepted), closed for it.
    pub connection: u64,
    /// The kind of failure.
    pub kind: ConnectFailure,
    /// What went wrong, in the words of the error that said so.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_keep_the_longest_pause_and_what_came_before_it() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut reads = Reads::start(t0, 100);
        reads.add(ms(1), 10);
        reads.add(ms(45), 5);
        reads.add(ms(46), 5);
        assert_eq!((reads.reads, reads.bytes), (4, 120));
        assert_eq!(reads.max_gap, Duration::from_millis(44));
        assert_eq!(reads.bytes_before_max_gap, 110);
        assert_eq!(reads.span(), Duration::from_millis(46));
    }

    #[test]
    fn an_exchange_splits_into_client_leg_relay_and_upstream() {
        let t0 = Instant::now();
        let us = |n: u64| t0 + Duration::from_micros(n);
        let mut request = Reads::start(us(0), 50);
        request.add(us(40), 50);
        let exchange = ExchangeRecord {
            connection: 1,
            sequence: 0,
            framing: Framing::Http,
            request,
            forwarded: us(45),
            response: Reads::start(us(100), 200),
            delivered: us(110),
            status: 200,
            client_rtt: None,
            upstream_rtt: None,
        };
        assert_eq!(exchange.client_leg(), Duration::from_micros(50));
        assert_eq!(exchange.relay(), Duration::from_micros(5));
        assert_eq!(exchange.upstream(), Duration::from_micros(55));
        assert_eq!(exchange.upstream_first_byte(), Duration::from_micros(55));
        assert_eq!(exchange.total(), exchange.client_leg() + exchange.relay() + exchange.upstream());
    }
}
