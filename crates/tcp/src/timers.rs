//! The delayed-ACK timers of the stacks nodelay meets, and which one a stall length matches.
//! The stall's length names the peer that delayed its ACK, not the one that held its data
//! (docs/field-notes.md §1).

use crate::time::ns;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Shortest ACK delay a capture counts: the shortest delayed-ACK timer is 40 ms (Linux's
/// `TCP_DELACK_MIN`), less what a busy host may advance it by.
pub const MIN_ACK_DELAY: Duration = Duration::from_millis(25);
/// Longest: delayed-ACK timers stop at 200 ms (Windows, macOS, Linux's `TCP_DELACK_MAX`);
/// beyond 500 ms the wait is something else.
pub const MAX_ACK_DELAY: Duration = Duration::from_millis(500);
/// [`MIN_ACK_DELAY`] in nanoseconds, as captures time.
pub const MIN_ACK_DELAY_NS: u64 = ns(MIN_ACK_DELAY);
/// [`MAX_ACK_DELAY`] in nanoseconds.
pub const MAX_ACK_DELAY_NS: u64 = ns(MAX_ACK_DELAY);

/// A hold released by an ACK sent at once counts from this long: below it, the round trip of
/// one host or a switch, which no one notices.
pub const MIN_ROUND_TRIP_HOLD: Duration = Duration::from_micros(500);
/// How far a quick ACK and an ACK-clocked release may stray from the round trip, timed where
/// the kernel sees them (packets, or the kernel's own programs): this, plus a quarter of the
/// round trip. Tighter than an application's slack (`path::round_trip_slack_ms`): such times
/// carry no scheduling.
pub const KERNEL_ROUND_TRIP_SLACK: Duration = Duration::from_micros(200);

/// Linux's shortest delayed-ACK timeout (`TCP_DELACK_MIN`).
pub const LINUX_DELAYED_ACK_MIN: Duration = Duration::from_millis(40);

/// The delay a Linux socket's delayed ACK gets from its ACK timeout estimate (`tcpi_ato`, zero
/// before it received data) and its smoothed round trip: above 40 ms the estimate is capped at
/// the round trip or 40 ms, whichever is longer, as `tcp_send_delayed_ack` does. On loopback an
/// estimate grown to 160 ms still fires at 40 ms.
pub fn linux_delayed_ack_delay(ato: Duration, srtt: Duration) -> Option<Duration> {
    if ato.is_zero() {
        return None;
    }
    if ato <= LINUX_DELAYED_ACK_MIN {
        return Some(ato);
    }
    Some(ato.min(srtt.max(LINUX_DELAYED_ACK_MIN)))
}

/// A delayed-ACK timer, told by the stall lengths it causes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DelayedAckTimer {
    /// Linux (40 ms minimum), FreeBSD since 2020.
    Linux40ms,
    /// Solaris (50 ms) or a grown Linux ato.
    Around50To90ms,
    /// macOS (100-200 ms).
    MacOs,
    /// Windows (200 ms, TcpAckFrequency); also the 200 ms minimum retransmission timeout.
    Windows200ms,
}

impl DelayedAckTimer {
    /// The timer in a few words, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            DelayedAckTimer::Linux40ms => "the Linux/FreeBSD delayed-ACK timer (40 ms)",
            DelayedAckTimer::Around50To90ms => "a 50-90 ms delayed-ACK timer (Solaris, grown Linux ato)",
            DelayedAckTimer::MacOs => "the macOS delayed-ACK timer (100-200 ms)",
            DelayedAckTimer::Windows200ms => "the Windows delayed-ACK timer (200 ms) or the 200 ms RTO",
        }
    }
}

/// The timer a steady first-byte delay matches when it is an upstream hop's stall: the
/// timer plus a few milliseconds of round trips and work (an nginx front on a stalling Linux
/// backend shows 44 ms). Narrower than `match_delayed_ack_timer`: a handler that simply takes
/// 50 ms is no timer.
pub fn hop_stall_timer(first_byte_ms: f64) -> Option<DelayedAckTimer> {
    match first_byte_ms {
        t if (40.0..=48.0).contains(&t) => Some(DelayedAckTimer::Linux40ms),
        t if (200.0..=215.0).contains(&t) => Some(DelayedAckTimer::Windows200ms),
        _ => None,
    }
}

/// The delayed-ACK timer a typical stall of `gap_ms` matches, if any.
pub fn match_delayed_ack_timer(gap_ms: f64) -> Option<DelayedAckTimer> {
    match gap_ms {
        g if (30.0..65.0).contains(&g) => Some(DelayedAckTimer::Linux40ms),
        g if (65.0..95.0).contains(&g) => Some(DelayedAckTimer::Around50To90ms),
        g if (95.0..185.0).contains(&g) => Some(DelayedAckTimer::MacOs),
        g if (185.0..240.0).contains(&g) => Some(DelayedAckTimer::Windows200ms),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grown_ack_timeout_is_capped_at_the_round_trip_or_40_ms() {
        let ms = Duration::from_millis;
        assert_eq!(linux_delayed_ack_delay(Duration::ZERO, ms(1)), None);
        assert_eq!(linux_delayed_ack_delay(ms(40), Duration::from_micros(50)), Some(ms(40)));
        // Loopback: an estimate grown to 160 ms still fires at 40 ms.
        assert_eq!(linux_delayed_ack_delay(ms(160), Duration::from_micros(50)), Some(ms(40)));
        // A 120 ms path lets it grow to its round trip.
        assert_eq!(linux_delayed_ack_delay(ms(200), ms(120)), Some(ms(120)));
        assert_eq!(linux_delayed_ack_delay(ms(100), ms(300)), Some(ms(100)));
    }

    #[test]
    fn matches_known_timers_only() {
        assert_eq!(match_delayed_ack_timer(43.9), Some(DelayedAckTimer::Linux40ms));
        assert_eq!(match_delayed_ack_timer(150.0), Some(DelayedAckTimer::MacOs));
        assert_eq!(match_delayed_ack_timer(201.0), Some(DelayedAckTimer::Windows200ms));
        assert_eq!(match_delayed_ack_timer(12.0), None);
        assert_eq!(match_delayed_ack_timer(500.0), None);
    }
}
