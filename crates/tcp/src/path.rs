//! The TCP facts of a path, and the one judgement every path-aware rule (the doctor, bench,
//! pcap, the proxy, watch) makes of a round trip: from what length it is a path at all, and
//! then how much of it is taken out of the times judged.

use crate::time::{ms, us};
use std::time::Duration;

/// A round trip (TCP_INFO `min_rtt`) shorter than this is loopback's (5-50 µs measured here,
/// busy or not): timings are judged as they are. From this much on, a LAN's 0.5 ms
/// included, a path: only what it does not explain is judged.
pub const MIN_PATH_RTT: Duration = Duration::from_micros(200);
/// [`MIN_PATH_RTT`] in milliseconds.
pub const MIN_PATH_RTT_MS: f64 = ms(MIN_PATH_RTT);

/// The initial congestion window in segments (RFC 6928, Linux's default): a response no
/// larger leaves in the first flight, so a pause inside it is no congestion-window wait.
pub const INITIAL_WINDOW_SEGMENTS: u64 = 10;

/// The MSS of Ethernet IPv4 without options: what to assume before a connection tells its own.
pub const ETHERNET_MSS_BYTES: u64 = 1460;

/// Linux's least retransmission timeout (`TCP_RTO_MIN`): a segment lost and resent costs at
/// least this much on top of the round trip.
pub const RTO_MIN: Duration = Duration::from_millis(200);
/// [`RTO_MIN`] in milliseconds.
pub const RTO_MIN_MS: f64 = ms(RTO_MIN);

/// A gap this close to [`RTO_MIN`] was a retransmission timeout: timers fire a little early
/// as well as late.
pub const RTO_SEEN: Duration = Duration::from_millis(180);

/// Whether a round trip of `rtt_ms` is a path's, not loopback's.
pub fn is_path(rtt_ms: f64) -> bool {
    rtt_ms >= MIN_PATH_RTT_MS
}

/// The round trip, kept only where it is a path's.
pub fn path_rtt_ms(rtt_ms: Option<f64>) -> Option<f64> {
    rtt_ms.filter(|&rtt| is_path(rtt))
}

/// The part of a round trip the rules take out of the times they judge: all of it from
/// [`MIN_PATH_RTT`] on, none below (and none when none was measured).
pub fn judged_rtt_ms(rtt_ms: Option<f64>) -> f64 {
    path_rtt_ms(rtt_ms).unwrap_or(0.0)
}

/// [`judged_rtt_ms`] of a `Duration`.
pub fn judged_rtt(rtt: Option<Duration>) -> Duration {
    rtt.filter(|rtt| *rtt >= MIN_PATH_RTT).unwrap_or(Duration::ZERO)
}

/// [`judged_rtt_ms`] of the kernel's `min_rtt` in µs (0: no sample).
pub fn judged_rtt_us(min_rtt_us: u32) -> u32 {
    if us(MIN_PATH_RTT) <= u64::from(min_rtt_us) { min_rtt_us } else { 0 }
}

/// What the two hosts' scheduling may add to a time an application measures: a thread woken a
/// little late on a busy machine.
pub const SCHEDULING_SLACK_MS: f64 = 1.0;

/// How far a time measured by an application may be from one round trip and still be one: a
/// quarter of it (the path's jitter) and [`SCHEDULING_SLACK_MS`].
pub fn round_trip_slack_ms(rtt_ms: f64) -> f64 {
    rtt_ms / 4.0 + SCHEDULING_SLACK_MS
}

/// The share of responses that must pause about one round trip of `rtt_ms` for the pause to be
/// the path's: `symptom_share` where a round trip outlasts [`SCHEDULING_SLACK_MS`], a majority
/// where it does not. Below it, a minority's pauses are as likely a busy machine's scheduling
/// (a TCP_NODELAY server beside two busy loops paused 0.35 ms in a quarter of its responses
/// across a 0.6 ms path), while bytes held for an ACK pause in nearly every response.
pub fn round_trip_pause_share(rtt_ms: f64, symptom_share: f64) -> f64 {
    if rtt_ms > SCHEDULING_SLACK_MS { symptom_share } else { symptom_share.max(0.5) }
}

/// Whether `time_ms` is about one round trip of `rtt_ms` (a path's, more than 0).
pub fn about_one_round_trip_ms(time_ms: f64, rtt_ms: f64) -> bool {
    rtt_ms > 0.0 && (time_ms - rtt_ms).abs() <= round_trip_slack_ms(rtt_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_judged_as_it_is_and_a_path_has_its_round_trip_taken_out() {
        assert_eq!(judged_rtt_ms(Some(0.05)), 0.0);
        assert_eq!(judged_rtt_ms(None), 0.0);
        assert_eq!(judged_rtt_ms(Some(0.2)), 0.2);
        assert_eq!(judged_rtt_ms(Some(10.3)), 10.3);
        assert_eq!(judged_rtt(Some(Duration::from_micros(199))), Duration::ZERO);
        assert_eq!(judged_rtt(Some(Duration::from_millis(10))), Duration::from_millis(10));
        assert_eq!((judged_rtt_us(50), judged_rtt_us(200), judged_rtt_us(10_000)), (0, 200, 10_000));
    }

    #[test]
    fn under_a_millisecond_only_a_majority_of_pauses_is_the_paths() {
        assert_eq!(round_trip_pause_share(10.0, 0.25), 0.25);
        assert_eq!(round_trip_pause_share(0.6, 0.25), 0.5);
        assert_eq!(round_trip_pause_share(0.6, 0.8), 0.8);
    }

    #[test]
    fn one_round_trip_is_within_a_quarter_and_a_millisecond() {
        assert!(about_one_round_trip_ms(12.4, 10.0));
        assert!(about_one_round_trip_ms(6.6, 10.0));
        assert!(!about_one_round_trip_ms(13.6, 10.0));
        assert!(!about_one_round_trip_ms(0.5, 0.0), "no path, no round trip");
    }
}
