//! The tail hold, judged by the ACK clock: Nagle's algorithm on the server (Linux's
//! Minshall variant) keeps a response's last, sub-segment part while an earlier small
//! segment (the head, written apart) is unacknowledged. The full segments leave at once;
//! the tail leaves when the client's ACK of the head is back. So the response ends one round
//! trip after its first byte, however fast the rest came: the pause before the tail is the
//! round trip less the rest's transfer, shorter than a round trip, and no stall.
//!
//! From the client this is the one model, over its reads: [`tail_figures`] for a phase (the
//! finding is `tail_hold.rs`'s). A path that is merely slow ends a response one round
//! trip after its first byte too when the bytes happen to take that long; it never delivers
//! all but a sub-segment tail well inside the round trip and then the tail alone. A sender
//! that paces (BBR) learns the held rate and spreads the full segments over the round trip,
//! so the lone tail is seen on a connection's first responses, not its later ones.

use nodelay_engine::ResponseRecord;
use nodelay_tcp::quantile::{median, percentile_ms};
use nodelay_tcp::time::ms;

/// A response "ends one round trip after its first byte" within this share of the round
/// trip, and a millisecond more (the path's jitter, the reader's wake-up), or on a path
/// under 2 ms half a round trip more: a whole millisecond would take in any end there.
pub(crate) const ROUND_TRIP_SLACK_SHARE: f64 = 0.25;
pub(crate) const ROUND_TRIP_SLACK_MS: f64 = 1.0;

/// How far from one round trip (`rtt_ms`) an end may be and still keep its time.
pub(crate) fn round_trip_slack_ms(rtt_ms: f64) -> f64 {
    rtt_ms * ROUND_TRIP_SLACK_SHARE + ROUND_TRIP_SLACK_MS.min(rtt_ms * 0.5)
}
/// A tail came alone when the pause before it was at least this share of the round trip:
/// the rest came faster than the path's round trip, so the path did not keep the tail.
pub(crate) const LONE_TAIL_PAUSE_SHARE: f64 = 0.25;
/// Lone tails needed before the path's own pace is ruled out: one could be a chance.
pub(crate) const LONE_TAILS_NEEDED: usize = 2;
/// Share of the steady responses that must end one round trip after their first byte.
pub(crate) const HELD_SHARE: f64 = 0.25;

/// A phase's figures for the tail hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TailFigures {
    /// Responses of more than a segment that ended one round trip after their first byte.
    pub(crate) held: usize,
    /// Their median time from first byte to last, in ms.
    pub(crate) held_body_p50_ms: Option<f64>,
    /// Of those, the ones whose last read was a sub-segment tail after a pause.
    pub(crate) alone: usize,
    /// The median pause before that lone tail, in ms.
    pub(crate) pause_p50_ms: Option<f64>,
    /// The median size of that lone tail, in bytes.
    pub(crate) tail_bytes_p50: Option<u64>,
}

/// Does `response` end one round trip (`rtt_ms`) after its first byte, with at least one full
/// segment (`mss` bytes) in it? Only keep-alive responses are judged: a fresh connection's
/// second flight keeps the same time for a reason of its own (the initial window).
fn ends_one_round_trip_after_first_byte(response: &ResponseRecord, rtt_ms: f64, mss: u64) -> bool {
    let body_ms = ms(response.total.saturating_sub(response.first_byte));
    response.read_chunks >= 2
        && response.response_bytes > mss
        && (body_ms - rtt_ms).abs() <= round_trip_slack_ms(rtt_ms)
}

/// Did the response's last read bring only a sub-segment tail, a quarter round trip or more
/// after the rest?
fn tail_came_alone(response: &ResponseRecord, rtt_ms: f64, mss: u64) -> bool {
    response.last_read_bytes > 0
        && response.last_read_bytes < mss
        && ms(response.last_read_gap) >= rtt_ms * LONE_TAIL_PAUSE_SHARE
}

/// The tail-hold figures over a phase's steady responses on reused connections, on a path
/// of `rtt_ms` (0: no path, nothing judged) with segments of `mss` bytes.
pub(crate) fn tail_figures(steady: &[&ResponseRecord], rtt_ms: f64, mss: u64, reused: bool) -> TailFigures {
    if rtt_ms <= 0.0 || !reused {
        return TailFigures::default();
    }
    let held: Vec<&&ResponseRecord> = steady
        .iter()
        .filter(|r| r.http2.is_none() && ends_one_round_trip_after_first_byte(r, rtt_ms, mss))
        .collect();
    let alone: Vec<&&&ResponseRecord> = held.iter().filter(|r| tail_came_alone(r, rtt_ms, mss)).collect();
    let bodies: Vec<f64> = held.iter().map(|r| ms(r.total.saturating_sub(r.first_byte))).collect();
    let pauses: Vec<f64> = alone.iter().map(|r| ms(r.last_read_gap)).collect();
    TailFigures {
        held: held.len(),
        held_body_p50_ms: (!bodies.is_empty()).then(|| percentile_ms(&bodies, 0.5)),
        alone: alone.len(),
        pause_p50_ms: (!pauses.is_empty()).then(|| percentile_ms(&pauses, 0.5)),
        tail_bytes_p50: median(alone.iter().map(|r| r.last_read_bytes).collect()),
    }
}
