//! Which pauses in reading ended with a lost segment's retransmission: the verdict the frame
//! tap needs before it says streams were held behind a hole (see tap.rs's module words).
//!
//! Packets received out of order (TCP_INFO `rcv_ooopack`) prove a hole in the server's
//! bytes at once. Our own retransmissions prove a hole in ours only if the server had not
//! received the originals: a path or a CPU that stalls past the retransmission timer
//! resends segments that were late, not lost, and the server answers each duplicate with a
//! D-SACK (`dsack_dups`). That answer can come a round trip after the pause ends: a stall
//! releases the server's queued replies before it releases our duplicates. So a pause our
//! retransmissions alone explain stays unsettled until a D-SACK has had time to come.

use nodelay_tcp::LossCounters;
use std::time::{Duration, Instant};

/// The shortest wait for a D-SACK after a pause ends: two round trips (the duplicates'
/// way there and the D-SACK's way back, each behind whatever a stall released), and at
/// least this much for a loopback or a starved CPU.
const LEAST_DSACK_WAIT: Duration = Duration::from_millis(20);

/// What a pause's end showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PauseEnd {
    /// Nothing was lost during it.
    NoLoss,
    /// A hole was filled: the server's bytes came out of order.
    Hole,
    /// Our retransmissions alone explain it: a hole if no D-SACK follows.
    Unsettled,
}

/// Pauses our retransmissions explained, waiting for their verdict together.
#[derive(Debug, Clone, Copy)]
struct Unsettled {
    settle_at: Instant,
    /// Segments resent during them...
    resent: u32,
    /// ...and the D-SACKs counted before the first of them.
    dsacks_before: u32,
    pauses: u64,
    streams_held: u64,
}

/// The verdict on unsettled pauses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settled {
    /// At least one resent segment was lost (fewer D-SACKs came than segments were resent).
    pub lost: bool,
    pub pauses: u64,
    pub streams_held: u64,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct LossWatch {
    /// The socket's loss counters when last read at a pause's end.
    counters: LossCounters,
    unsettled: Option<Unsettled>,
}

impl LossWatch {
    pub fn new() -> Self {
        LossWatch { counters: LossCounters::default(), unsettled: None }
    }

    /// The path's round trip (`min_rtt`), 0 before a sample.
    pub fn min_rtt_us(&self) -> u32 {
        self.counters.min_rtt_us
    }

    /// The counters read as a pause ends at `now`, holding `streams_held` streams.
    pub fn pause_ended(&mut self, counters: LossCounters, now: Instant, streams_held: u64) -> PauseEnd {
        let before = std::mem::replace(&mut self.counters, counters);
        if counters.out_of_order_packets > before.out_of_order_packets {
            return PauseEnd::Hole;
        }
        let resent = counters.retransmits.saturating_sub(before.retransmits);
        if resent == 0 {
            return PauseEnd::NoLoss;
        }
        let settle_at = now + (counters.min_rtt() * 2).max(LEAST_DSACK_WAIT);
        match &mut self.unsettled {
            Some(unsettled) => {
                unsettled.settle_at = settle_at;
                unsettled.resent += resent;
                unsettled.pauses += 1;
                unsettled.streams_held += streams_held;
            }
            None if counters.spurious_retransmits.saturating_sub(before.spurious_retransmits) >= resent => {
                // Every duplicate was reported already: the segments were late, not lost.
                return PauseEnd::NoLoss;
            }
            None => {
                self.unsettled = Some(Unsettled {
                    settle_at,
                    resent,
                    dsacks_before: before.spurious_retransmits,
                    pauses: 1,
                    streams_held,
                })
            }
        }
        PauseEnd::Unsettled
    }

    /// Whether unsettled pauses are waiting and their D-SACKs have had time to come by `now`
    /// (then the socket's counters are worth a read).
    pub fn settle_due(&self, now: Instant) -> bool {
        self.unsettled.is_some_and(|u| now >= u.settle_at)
    }

    /// Whether pauses are waiting for a verdict.
    pub fn is_unsettled(&self) -> bool {
        self.unsettled.is_some()
    }

    /// The verdict on the unsettled pauses, from the counters read now.
    pub fn settle(&mut self, counters: LossCounters) -> Option<Settled> {
        let unsettled = self.unsettled.take()?;
        // D-SACKs counted from here on answer later retransmissions.
        self.counters.spurious_retransmits = counters.spurious_retransmits;
        let dsacks = counters.spurious_retransmits.saturating_sub(unsettled.dsacks_before);
        Some(Settled {
            lost: dsacks < unsettled.resent,
            pauses: unsettled.pauses,
            streams_held: unsettled.streams_held,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(out_of_order_packets: u32, retransmits: u32, spurious_retransmits: u32) -> LossCounters {
        LossCounters { out_of_order_packets, retransmits, spurious_retransmits, min_rtt_us: 10_000 }
    }

    #[test]
    fn out_of_order_packets_are_a_hole_at_once() {
        let mut watch = LossWatch::new();
        let now = Instant::now();
        assert_eq!(watch.pause_ended(counters(0, 0, 0), now, 3), PauseEnd::NoLoss);
        assert_eq!(watch.pause_ended(counters(2, 0, 0), now, 3), PauseEnd::Hole);
        assert!(!watch.is_unsettled());
    }

    #[test]
    fn a_retransmission_answered_by_a_dsack_a_round_trip_later_was_no_loss() {
        let mut watch = LossWatch::new();
        let now = Instant::now();
        assert_eq!(watch.pause_ended(counters(0, 2, 0), now, 10), PauseEnd::Unsettled);
        // Two round trips of 10 ms.
        assert!(!watch.settle_due(now + Duration::from_millis(19)));
        assert!(watch.settle_due(now + Duration::from_millis(20)));
        let settled = watch.settle(counters(0, 2, 2)).unwrap();
        assert_eq!(settled, Settled { lost: false, pauses: 1, streams_held: 10 });
        assert!(!watch.is_unsettled());
        // The D-SACKs are spent: a later retransmission without its own is a loss.
        assert_eq!(watch.pause_ended(counters(0, 3, 2), now, 1), PauseEnd::Unsettled);
        assert!(watch.settle(counters(0, 3, 2)).unwrap().lost);
    }

    #[test]
    fn a_retransmission_without_a_dsack_was_a_loss() {
        let mut watch = LossWatch::new();
        let now = Instant::now();
        watch.pause_ended(counters(0, 1, 0), now, 4);
        // A second pause before the verdict joins the first.
        assert_eq!(
            watch.pause_ended(counters(0, 3, 1), now + Duration::from_millis(5), 2),
            PauseEnd::Unsettled
        );
        assert!(!watch.settle_due(now + Duration::from_millis(20)));
        // Three resent, two reported as duplicates: one was lost.
        let settled = watch.settle(counters(0, 3, 2)).unwrap();
        assert_eq!(settled, Settled { lost: true, pauses: 2, streams_held: 6 });
    }

    #[test]
    fn a_dsack_already_counted_settles_the_pause_at_once() {
        let mut watch = LossWatch::new();
        assert_eq!(watch.pause_ended(counters(0, 1, 1), Instant::now(), 4), PauseEnd::NoLoss);
        assert!(!watch.is_unsettled());
    }
}
