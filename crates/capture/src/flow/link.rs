//! The link a sender's bytes cross, as far as a capture next to the sender can tell: when
//! its ACKs come back at a steady pace while data waits to be acknowledged, that pace is the
//! link's rate, and a segment sent behind others waits for their serialization before it
//! reaches the peer. On a slow uplink (250 kbit/s: 46 ms per full segment) that wait is
//! hundreds of milliseconds; counted as the peer's ACK delay, it looked like a delayed ACK,
//! and a segment held while the link was busy anyway looked like time lost to Nagle.
//!
//! Fast paths are unchanged: their ACKs show rates so high that nothing queues.

use super::seq_after;

/// Steady samples in a row before a rate is believed: one pair of ACKs can be spaced by
/// anything (a receiver's timer, a scheduler).
const STEADY_SAMPLES: u32 = 3;

/// What the capture knows of one sender's link.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Link {
    /// The link's rate in payload bytes per second, once its ACKs showed it steadily.
    rate_bytes_per_s: Option<u64>,
    /// Samples in a row within a factor 1.5 of each other: how many, the lowest, the highest.
    streak: (u32, u64, u64),
    /// The last ACK that advanced: when it came, and how far the sender had sent then.
    last_advance: Option<(u64, u32)>,
    /// When the link would finish the bytes sent so far.
    free_at_ns: u64,
}

impl Link {
    /// When the link would be done with every byte sent so far, once its rate is known.
    pub(crate) fn free_at_ns(&self) -> Option<u64> {
        self.rate_bytes_per_s.map(|_| self.free_at_ns)
    }

    /// `bytes` of new data sent at `time_ns`; returns how long after `time_ns` they would
    /// have crossed the link (the queue ahead of them and their own serialization).
    pub(crate) fn sent(&mut self, time_ns: u64, bytes: u32) -> u64 {
        let start = self.free_at_ns.max(time_ns);
        let serialization = self
            .rate_bytes_per_s
            .map_or(0, |rate| u64::from(bytes).saturating_mul(1_000_000_000) / rate.max(1));
        self.free_at_ns = start.saturating_add(serialization);
        self.free_at_ns - time_ns
    }

    /// An ACK at `time_ns` moved the cumulative ACK from `from` to `to`, when the sender had
    /// sent up to `next_seq`. It is a sample of the link's rate when the link was busy all
    /// along: every byte it covers was sent before the previous advance came. A sample counts
    /// only beside others of the same busy period: one period gives a slow link's ACKs, one
    /// per segment or two, paced by its serialization, while a fast path gives at most one
    /// slow-looking ACK per period (a delayed ACK of its last odd segment).
    pub(crate) fn acked(&mut self, time_ns: u64, from: u32, to: u32, next_seq: u32, mss: u32) {
        let bytes = u64::from(to.wrapping_sub(from));
        match self.last_advance {
            Some((previous_ns, sent_then)) if !seq_after(to, sent_then) && time_ns > previous_ns => {
                // ACKs of less than a segment (a header, a tail) say little of a rate.
                if bytes >= u64::from(mss.max(1)) {
                    self.sample(bytes.saturating_mul(1_000_000_000) / (time_ns - previous_ns));
                }
            }
            _ => self.streak = (0, 0, 0),
        }
        self.last_advance = Some((time_ns, next_seq));
    }

    fn sample(&mut self, rate: u64) {
        let (count, low, high) = self.streak;
        let agrees = count > 0
            && rate.saturating_mul(3) >= high.saturating_mul(2)
            && rate.saturating_mul(2) <= low.saturating_mul(3);
        self.streak = if agrees { (count + 1, low.min(rate), high.max(rate)) } else { (1, rate, rate) };
        let (count, low, high) = self.streak;
        if count >= STEADY_SAMPLES {
            // The fastest steady pace seen: a slower one may be the sender's own (an
            // application writing slowly), never faster than the link.
            let steady = low / 2 + high / 2;
            self.rate_bytes_per_s = Some(self.rate_bytes_per_s.map_or(steady, |rate| rate.max(steady)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;

    /// A 250 kbit/s uplink: a segment acknowledged every 46.3 ms while data waits (its
    /// receiver's delayed ACK fires before the next segment arrives).
    fn slow_link() -> Link {
        let mut link = Link::default();
        let mut time_ns = 0;
        let mut acked = 0u32;
        link.acked(time_ns, 0, 0, 20 * MSS, MSS);
        for _ in 0..4 {
            time_ns += 46_336_000;
            link.acked(time_ns, acked, acked + MSS, 20 * MSS, MSS);
            acked += MSS;
        }
        link
    }

    #[test]
    fn steady_acks_while_data_waits_give_the_links_rate() {
        let link = slow_link();
        assert_eq!(link.rate_bytes_per_s, Some(31_250));
        // A full segment behind five others waits for their serialization: 5 x 46.3 ms.
        let mut link = link;
        for _ in 0..5 {
            link.sent(1_000_000_000, MSS);
        }
        assert_eq!(link.free_at_ns().unwrap().saturating_sub(1_000_000_000) / 1_000_000, 231);
    }

    #[test]
    fn a_fast_paths_delayed_acks_are_no_rate_however_regular() {
        let mut link = Link::default();
        let mut time_ns = 0;
        let mut sent = 0u32;
        // Ten responses of three segments on a 10 ms path: the first two ACKed at once (the
        // first ACK of each response covers bytes sent after the ACK before it), the third
        // 40 ms later by the receiver's timer: regular, and no rate.
        for _ in 0..10 {
            sent += 3 * MSS;
            time_ns += 10_000_000;
            link.acked(time_ns, sent - 3 * MSS, sent - MSS, sent, MSS);
            time_ns += 40_000_000;
            link.acked(time_ns, sent - MSS, sent, sent, MSS);
            time_ns += 1_000_000_000;
        }
        assert_eq!(link.rate_bytes_per_s, None);
        assert_eq!(link.sent(time_ns, 100_000), 0, "an unknown rate queues nothing");
    }

    #[test]
    fn samples_that_disagree_start_again() {
        let mut link = Link::default();
        link.acked(0, 0, 0, 100 * MSS, MSS);
        let (mut acked, mut time_ns) = (0, 0);
        for gap_ms in [90u64, 10, 90, 10, 90] {
            time_ns += gap_ms * 1_000_000;
            link.acked(time_ns, acked, acked + 2 * MSS, 100 * MSS, MSS);
            acked += 2 * MSS;
        }
        assert_eq!(link.rate_bytes_per_s, None);
    }
}
