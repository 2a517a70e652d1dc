//! When each packet of one direction leaves: pure, so what the path does to a packet can be
//! tested without a device. A packet is dropped with the loss probability; otherwise it waits
//! for the link to be free (serialised at the rate), then for the one-way delay, varied by
//! jitter, and never leaves before the packet ahead of it (no reordering, as netem with rate).

use std::time::{Duration, Instant};

/// Most packets waiting in one direction. A real link's buffer is finite; past this, packets
/// are dropped at the tail as a full router queue drops them.
pub const QUEUE_LIMIT_PACKETS: usize = 10_000;

/// One direction's link: its delay, jitter, loss and rate, and the state they leave behind.
#[derive(Debug)]
pub struct Schedule {
    one_way_delay: Duration,
    jitter: Duration,
    loss_fraction: f64,
    rate_bits_per_s: Option<u64>,
    /// When the link finishes serialising the packets it has taken.
    link_free_at: Option<Instant>,
    /// When the packet taken last leaves.
    last_departure: Option<Instant>,
    rng: fastrand::Rng,
}

impl Schedule {
    /// A direction of `one_way_delay` ± `jitter`, dropping `loss_percent` of packets, at
    /// `rate_bits_per_s` (`None`: no limit); draws come from `seed`.
    pub fn new(
        one_way_delay: Duration,
        jitter: Duration,
        loss_percent: f64,
        rate_bits_per_s: Option<u64>,
        seed: u64,
    ) -> Schedule {
        Schedule {
            one_way_delay,
            jitter,
            loss_fraction: (loss_percent / 100.0).clamp(0.0, 1.0),
            rate_bits_per_s: rate_bits_per_s.filter(|rate| *rate > 0),
            link_free_at: None,
            last_departure: None,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// When a packet of `length_bytes` that arrived at `arrived` leaves the far end, or
    /// `None` if the path drops it.
    pub fn departure(&mut self, arrived: Instant, length_bytes: usize) -> Option<Instant> {
        if self.loss_fraction > 0.0 && self.rng.f64() < self.loss_fraction {
            return None;
        }
        let mut sent = arrived;
        if let Some(rate) = self.rate_bits_per_s {
            let start = self.link_free_at.map_or(arrived, |free| free.max(arrived));
            let serialisation = Duration::from_secs_f64(length_bytes as f64 * 8.0 / rate as f64);
            sent = start + serialisation;
            self.link_free_at = Some(sent);
        }
        let mut departure = sent + self.one_way_delay;
        if !self.jitter.is_zero() {
            // Uniform in [-jitter, +jitter], never before the packet was sent.
            let offset = self.jitter.mul_f64(self.rng.f64() * 2.0);
            departure = (departure + offset).checked_sub(self.jitter).unwrap_or(sent).max(sent);
        }
        if let Some(last) = self.last_departure {
            departure = departure.max(last);
        }
        self.last_departure = Some(departure);
        Some(departure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_plain_path_adds_the_one_way_delay() {
        let mut schedule = Schedule::new(20 * MS, Duration::ZERO, 0.0, None, 1);
        let now = Instant::now();
        assert_eq!(schedule.departure(now, 1500), Some(now + 20 * MS));
        assert_eq!(schedule.departure(now + MS, 60), Some(now + 21 * MS));
    }

    #[test]
    fn a_rate_serialises_packets_one_after_another() {
        // 1500 bytes at 12 Mbit/s take 1 ms each.
        let mut schedule = Schedule::new(5 * MS, Duration::ZERO, 0.0, Some(12_000_000), 1);
        let now = Instant::now();
        let departures: Vec<_> = (0..3).map(|_| schedule.departure(now, 1500).unwrap() - now).collect();
        assert_eq!(departures, [6 * MS, 7 * MS, 8 * MS]);
        // An idle link starts afresh.
        assert_eq!(schedule.departure(now + 100 * MS, 1500), Some(now + 106 * MS));
    }

    #[test]
    fn jitter_stays_in_its_band_and_never_reorders() {
        let mut schedule = Schedule::new(10 * MS, 4 * MS, 0.0, None, 7);
        let start = Instant::now();
        let mut last = start;
        let mut earliest = Duration::MAX;
        let mut latest = Duration::ZERO;
        // Dense at first (order holds packets back), then sparse (each keeps its own draw).
        for step in 0..10_000u32 {
            let gap_us = if step < 5_000 { 50 } else { 10_000 };
            let arrived = start + Duration::from_micros(u64::from(step) * gap_us);
            let departure = schedule.departure(arrived, 100).unwrap();
            assert!(departure >= last, "packet {step} overtook the one before it");
            last = departure;
            let delay = departure - arrived;
            earliest = earliest.min(delay);
            latest = latest.max(delay);
        }
        assert!(earliest >= 6 * MS, "a packet left after {earliest:?}, under 10 ms - 4 ms");
        // Holding order may add to a packet's delay, but never past the latest draw.
        assert!(latest <= 14 * MS, "a packet left after {latest:?}, over 10 ms + 4 ms");
        assert!(latest - earliest > 6 * MS, "jitter spread only {:?}", latest - earliest);
    }

    #[test]
    fn loss_drops_its_share_and_repeats_with_the_seed() {
        let drops = |seed| {
            let mut schedule = Schedule::new(MS, Duration::ZERO, 5.0, None, seed);
            let now = Instant::now();
            (0..20_000).filter(|_| schedule.departure(now, 100).is_none()).count()
        };
        let dropped = drops(3);
        assert!((800..=1200).contains(&dropped), "{dropped} of 20000 dropped at 5 %");
        assert_eq!(drops(3), dropped, "the same seed drops the same packets");
    }

    #[test]
    fn total_loss_drops_everything() {
        let mut schedule = Schedule::new(MS, Duration::ZERO, 100.0, None, 1);
        assert!((0..100).all(|_| schedule.departure(Instant::now(), 100).is_none()));
    }
}
