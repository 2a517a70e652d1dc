//! The TCP facts every path-aware rule shares (the doctor, bench, pcap and the proxy): from
//! what round trip a path is judged at all, how much a sender may send before its first
//! ACK, and what a lost segment costs at least.

/// A round trip (TCP_INFO `min_rtt`) shorter than this is loopback's (5-50 µs measured here,
/// busy or not): timings are judged as they are. From this much on, a LAN's 0.5 ms
/// included, a path: only what it does not explain is judged.
pub const MIN_PATH_RTT_MS: f64 = 0.2;

/// The initial congestion window in segments (RFC 6928, Linux's default): a response no
/// larger leaves in the first flight, so a pause inside it is no congestion-window wait.
pub const INITIAL_WINDOW_SEGMENTS: u64 = 10;

/// Linux's least retransmission timeout (`TCP_RTO_MIN`): a segment lost and resent costs at
/// least this much on top of the round trip.
pub const RTO_MIN_MS: f64 = 200.0;
