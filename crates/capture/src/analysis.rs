//! Typed results of reading a flow as a packet-analysis book does (Wireshark's
//! `tcp.analysis.*`, the latency chapter of *Practical Packet Analysis*): the round trip on
//! each side of the capture point, each exchange's time split into network, client, server
//! and transfer, retransmissions with their timing, and zero windows. Plain values, filled
//! in place while packets stream by: nothing here allocates.

use nodelay_tcp::time::ns;

/// Shortest retransmission timeout of common stacks ([`nodelay_tcp::RTO_MIN`]); Windows
/// starts at 300 ms, RFC 6298 at 1 s.
pub const RTO_MIN_NS: u64 = ns(nodelay_tcp::RTO_MIN);
/// A resend this long after the sender's previous transmission (and no sooner than one round
/// trip, and not after three duplicate ACKs) is a timeout's ([`nodelay_tcp::path::RTO_SEEN`]).
pub const RTO_SEEN_NS: u64 = ns(nodelay_tcp::path::RTO_SEEN);
/// A zero window this long is reported: the receiver's application stopped reading.
pub const ZERO_WINDOW_NS: u64 = 200_000_000;
/// Resends of one series kept in detail.
pub const SERIES_KEPT: usize = 8;

/// Where the capture point sits on the path, from how the round trip splits around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// Next to the client: the server's side holds (nearly) the whole round trip.
    Client,
    /// Next to the server: the client's side holds (nearly) the whole round trip.
    Server,
    /// Somewhere on the path: each side holds a part.
    Between,
}

impl Position {
    /// `client`, `server` or `between`.
    pub fn as_str(self) -> &'static str {
        match self {
            Position::Client => "client",
            Position::Server => "server",
            Position::Between => "between",
        }
    }
}

/// The round trip between the capture point and each end, the smallest the capture showed:
/// SYN → SYN-ACK and the client's data → the server's ACK on the server's side, SYN-ACK →
/// ACK and the server's data → the client's ACK on the client's side (Karn's rule: never
/// from a resent segment). Together they are one round trip wherever the capture was taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Legs {
    /// From the capture point to the client and back.
    pub client_ns: Option<u64>,
    /// From the capture point to the server and back.
    pub server_ns: Option<u64>,
}

impl Legs {
    /// Below this round trip the split tells nothing (one host, or a switch away).
    const POSITION_MIN_RTT_NS: u64 = 200_000;

    /// The round trip, when both sides are known.
    pub fn rtt_ns(&self) -> Option<u64> {
        Some(self.client_ns?.saturating_add(self.server_ns?))
    }

    /// The round trip with what is known (an unknown side counts 0).
    pub fn known_rtt_ns(&self) -> u64 {
        self.client_ns.unwrap_or(0).saturating_add(self.server_ns.unwrap_or(0))
    }

    /// Where the capture was taken: a side holding less than a fifth of the round trip is
    /// the capture's own.
    pub fn position(&self) -> Option<Position> {
        let (client, server) = (self.client_ns?, self.server_ns?);
        let rtt = client + server;
        if rtt < Self::POSITION_MIN_RTT_NS {
            return None;
        }
        Some(if client * 5 < rtt {
            Position::Client
        } else if server * 5 < rtt {
            Position::Server
        } else {
            Position::Between
        })
    }

    /// Takes a sample for one side: the smallest stays.
    pub(crate) fn note(slot: &mut Option<u64>, sample_ns: u64) {
        *slot = Some(slot.map_or(sample_ns, |known| known.min(sample_ns)));
    }
}

/// One request and its response, its time split up (each figure as the capture position
/// implies it: net of the round trip's share on the far side of the capture point).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExchangeTiming {
    /// The exchange's number on its connection (1 = first request).
    pub exchange: u32,
    /// Capture time of the request's first byte.
    pub at_ns: u64,
    /// Capture packet number of the request's first segment.
    pub request_packet: u64,
    /// The client's wait before it sent the request: after the handshake, or after the
    /// previous response (less the client's side of the round trip).
    pub client_wait_ns: u64,
    /// The wait followed the handshake (else the previous response).
    pub after_handshake: bool,
    /// Packet the wait is counted from: the handshake's ACK or the previous response's last
    /// segment (0 when there was none).
    pub wait_from_packet: u64,
    /// The server's ACK of the request, when it came before the response: its delay after
    /// the request's last byte, less the server's side of the round trip.
    pub server_ack_ns: Option<u64>,
    /// Capture packet number of that ACK.
    pub server_ack_packet: u64,
    /// The server's time: from the request's last byte to the response's first, less the
    /// server's side of the round trip.
    pub server_ns: u64,
    /// Capture packet number of the response's first segment.
    pub response_packet: u64,
    /// From the request's first byte to its last, and from the response's first byte to its
    /// last (holds, resends and window waits included).
    pub transfer_ns: u64,
    /// The round trip the exchange paid (the flow's, as known when it ended).
    pub rtt_ns: u64,
}

/// Where a flow's exchanges spent their time, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    /// Exchanges with a request and a response.
    pub exchanges: u64,
    /// Handshakes seen whole (SYN to the client's ACK).
    pub handshakes: u64,
    /// Their round trips.
    pub handshake_ns: u64,
    /// One round trip per exchange.
    pub network_ns: u64,
    /// The clients' waits between a handshake and the first request.
    pub client_wait_ns: u64,
    /// The clients' idle time between a response and the next request (not a delay of any
    /// request: reported, never a finding).
    pub client_idle_ns: u64,
    /// The servers' time before their first byte.
    pub server_ns: u64,
    /// Requests and responses on the wire, first byte to last.
    pub transfer_ns: u64,
}

impl Budget {
    /// Adds another flow's budget.
    pub fn merge(&mut self, other: &Budget) {
        self.exchanges += other.exchanges;
        self.handshakes += other.handshakes;
        self.handshake_ns = self.handshake_ns.saturating_add(other.handshake_ns);
        self.network_ns = self.network_ns.saturating_add(other.network_ns);
        self.client_wait_ns = self.client_wait_ns.saturating_add(other.client_wait_ns);
        self.client_idle_ns = self.client_idle_ns.saturating_add(other.client_idle_ns);
        self.server_ns = self.server_ns.saturating_add(other.server_ns);
        self.transfer_ns = self.transfer_ns.saturating_add(other.transfer_ns);
    }
}

/// A segment resent after timeouts, again and again while no ACK came (the timer doubling
/// each time): its timing, and whether an ACK ever came.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RtoSeries {
    /// The sender was the server (else the client).
    pub by_server: bool,
    /// The resent segment was a SYN (or SYN-ACK): the connection was being opened.
    pub syn: bool,
    /// Capture time of the last transmission before the first resend.
    pub original_ns: u64,
    /// Capture packet number of the first resend.
    pub first_packet: u64,
    /// Resends in the series.
    pub resends: u32,
    /// Each resend's time after `original_ns`, for the first [`SERIES_KEPT`].
    pub resent_after_ns: [u64; SERIES_KEPT],
    /// An ACK covered the resent bytes (else the peer never answered in the capture).
    pub answered: bool,
    /// From `original_ns` to that ACK, or to the last resend when none came.
    pub lost_ns: u64,
}

impl RtoSeries {
    /// The kept resend times.
    pub fn resent_after(&self) -> &[u64] {
        &self.resent_after_ns[..(self.resends as usize).min(SERIES_KEPT)]
    }
}

/// Retransmissions of one flow (or of a whole capture, merged).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retransmissions {
    /// Segments that resent bytes already sent (SYNs included).
    pub segments: u64,
    /// Of them, resends after a timeout ([`RTO_SEEN_NS`] or more after the sender's previous
    /// transmission).
    pub timeouts: u64,
    /// Series of timeouts (a segment resent until answered, or never).
    pub series: u64,
    /// Series that no ACK ended: the peer was gone.
    pub unanswered: u64,
    /// Time the series cost, summed.
    pub lost_ns: u64,
    /// The series that cost most.
    pub worst: Option<RtoSeries>,
}

impl Retransmissions {
    pub(crate) fn add_series(&mut self, series: RtoSeries) {
        self.series += 1;
        self.unanswered += u64::from(!series.answered);
        self.lost_ns = self.lost_ns.saturating_add(series.lost_ns);
        if self.worst.is_none_or(|worst| series.lost_ns > worst.lost_ns) {
            self.worst = Some(series);
        }
    }

    /// Adds another flow's.
    pub fn merge(&mut self, other: &Retransmissions) {
        self.segments += other.segments;
        self.timeouts += other.timeouts;
        self.series += other.series;
        self.unanswered += other.unanswered;
        self.lost_ns = self.lost_ns.saturating_add(other.lost_ns);
        if let Some(series) = other.worst
            && self.worst.is_none_or(|worst| series.lost_ns > worst.lost_ns)
        {
            self.worst = Some(series);
        }
    }
}

/// A receiver that advertised a zero window: from its first window of 0 to the window it
/// opened again (or the end of the capture).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZeroWindow {
    /// The receiver was the server (else the client).
    pub by_server: bool,
    /// Capture time of the first zero window.
    pub at_ns: u64,
    /// Capture packet number of the first zero window.
    pub first_packet: u64,
    /// Capture packet number of the segment that opened the window again (0: never did).
    pub reopened_packet: u64,
    /// How long the window stayed shut.
    pub duration_ns: u64,
    /// The sender's window probes meanwhile (segments of at most one byte).
    pub probes: u32,
}

/// Zero windows of one flow (or of a capture): those of [`ZERO_WINDOW_NS`] or more.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZeroWindows {
    /// Zero windows that lasted [`ZERO_WINDOW_NS`] or more.
    pub count: u64,
    /// Their time, summed.
    pub total_ns: u64,
    /// The sender's probes during them.
    pub probes: u64,
    /// The longest.
    pub longest: Option<ZeroWindow>,
}

impl ZeroWindows {
    pub(crate) fn add(&mut self, window: ZeroWindow) {
        if window.duration_ns < ZERO_WINDOW_NS {
            return;
        }
        self.count += 1;
        self.total_ns = self.total_ns.saturating_add(window.duration_ns);
        self.probes += u64::from(window.probes);
        if self.longest.is_none_or(|longest| window.duration_ns > longest.duration_ns) {
            self.longest = Some(window);
        }
    }

    /// Adds another flow's.
    pub fn merge(&mut self, other: &ZeroWindows) {
        self.count += other.count;
        self.total_ns = self.total_ns.saturating_add(other.total_ns);
        self.probes += other.probes;
        if let Some(window) = other.longest
            && self.longest.is_none_or(|longest| window.duration_ns > longest.duration_ns)
        {
            self.longest = Some(window);
        }
    }
}
