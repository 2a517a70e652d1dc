//! Decides when each thread's next request is due: as soon as a connection is free
//! (closed loop) or on a fixed schedule (open loop, `--rate`), and when the quota is spent.
//! Time is passed in, so the schedule is tested without a clock.

use std::time::{Duration, Instant};

/// What the pacer answers when a connection asks for the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Send now; latency counts from this intended start.
    Now(Instant),
    /// Nothing due before this instant.
    At(Instant),
    /// The request quota is spent.
    Exhausted,
}

/// Nanoseconds from the start to open-loop slot `index` at `rate` per second, rounded to the
/// nearest. Each slot is computed from its index rather than by adding an interval cut to
/// whole nanoseconds, so rounding never accumulates: slot r × d of a d-second run at r/s
/// falls exactly on the run's end (3/s: slot 3 at 1 s, not at 999.999999 ms), for indices
/// below 2^53 (f64's exact integers; a year at 10^8/s is 2^51). `u64::MAX` (never) past the
/// clock's range, and for every slot after the first at a rate that is not a positive finite
/// number.
fn slot_offset_ns(index: u64, rate: f64) -> u64 {
    if index == 0 {
        return 0;
    }
    let offset_ns = (index as f64 * 1e9 / rate).round();
    if rate > 0.0 && rate.is_finite() && offset_ns.is_finite() && offset_ns < u64::MAX as f64 {
        offset_ns as u64
    } else {
        u64::MAX
    }
}

/// One thread's schedule of requests: when each is due and how many are left.
#[derive(Debug, Clone)]
pub struct Pacer {
    start: Instant,
    /// Open loop's requests per second; `None` for closed loop.
    rate: Option<f64>,
    /// The index of the next unclaimed open-loop slot.
    next_slot: u64,
    remaining: Option<u64>,
}

impl Pacer {
    /// `requests_per_second`: `None` for closed loop. `quota`: `None` for unbounded.
    pub fn new(start: Instant, requests_per_second: Option<f64>, quota: Option<u64>) -> Self {
        Pacer { start, rate: requests_per_second, next_slot: 0, remaining: quota }
    }

    /// When open-loop slot `index` is due.
    fn slot_time(&self, index: u64, rate: f64) -> Instant {
        nodelay_tcp::time::later(self.start, Duration::from_nanos(slot_offset_ns(index, rate)))
    }

    /// Takes the next request slot if one is due at `now`.
    pub fn claim(&mut self, now: Instant) -> Claim {
        if self.remaining == Some(0) {
            return Claim::Exhausted;
        }
        let intended = match self.rate {
            None => now,
            Some(rate) => {
                let slot = self.slot_time(self.next_slot, rate);
                if slot > now {
                    return Claim::At(slot);
                }
                self.next_slot = self.next_slot.saturating_add(1);
                slot
            }
        };
        if let Some(remaining) = &mut self.remaining {
            *remaining -= 1;
        }
        Claim::Now(intended)
    }

    /// Requests left of the quota, if there is one.
    pub fn remaining(&self) -> Option<u64> {
        self.remaining
    }

    /// Whether the request quota is spent.
    pub fn is_exhausted(&self) -> bool {
        self.remaining == Some(0)
    }

    /// Open loop: how many slots before `end` were never claimed (every connection was busy);
    /// 0 in closed loop. Bounded by what is left of the quota. A slot at `end` itself is not
    /// the run's: a run of d seconds at r requests/s has r × d slots, the first at its start.
    pub fn overdue(&self, end: Instant) -> u64 {
        let Some(rate) = self.rate else { return 0 };
        let end_ns = u64::try_from(end.saturating_duration_since(self.start).as_nanos()).unwrap_or(u64::MAX);
        // The first slot at or after the end: estimated, then settled against the slots' own
        // rounding (the estimate is off by at most one either way below 2^53 slots; checked
        // against a linear count for 3 M random rates and ends).
        let estimate = (end_ns as f64 * rate / 1e9).ceil();
        let mut first_after = if estimate.is_finite() && estimate > 0.0 { estimate as u64 } else { 0 };
        for _ in 0..2 {
            if first_after > 0 && slot_offset_ns(first_after - 1, rate) >= end_ns {
                first_after -= 1;
            }
        }
        for _ in 0..2 {
            if slot_offset_ns(first_after, rate) < end_ns {
                first_after = first_after.saturating_add(1);
            }
        }
        let behind = first_after.saturating_sub(self.next_slot);
        self.remaining.map_or(behind, |remaining| behind.min(remaining))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_loop_sends_now_until_quota() {
        let t0 = Instant::now();
        let mut pacer = Pacer::new(t0, None, Some(2));
        let later = t0 + Duration::from_millis(5);
        assert_eq!(pacer.claim(later), Claim::Now(later));
        assert_eq!(pacer.claim(later), Claim::Now(later));
        assert_eq!(pacer.claim(later), Claim::Exhausted);
        assert!(pacer.is_exhausted());
    }

    #[test]
    fn open_loop_keeps_the_schedule_when_late() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut pacer = Pacer::new(t0, Some(100.0), None);
        assert_eq!(pacer.claim(t0), Claim::Now(t0));
        assert_eq!(pacer.claim(t0 + ms(1)), Claim::At(t0 + ms(10)));
        // A stalled loop comes back at 35 ms: the missed slots are still owed, each
        // measured from when it was due (coordinated-omission correction).
        let late = t0 + ms(35);
        assert_eq!(pacer.claim(late), Claim::Now(t0 + ms(10)));
        assert_eq!(pacer.claim(late), Claim::Now(t0 + ms(20)));
        assert_eq!(pacer.claim(late), Claim::Now(t0 + ms(30)));
        assert_eq!(pacer.claim(late), Claim::At(t0 + ms(40)));
    }

    #[test]
    fn overdue_counts_slots_nobody_claimed() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut pacer = Pacer::new(t0, Some(100.0), None);
        assert_eq!(pacer.claim(t0), Claim::Now(t0));
        assert_eq!(pacer.overdue(t0 + ms(5)), 0);
        // Slots at 10, 20, 30 ms were due by 35 ms and never claimed.
        assert_eq!(pacer.overdue(t0 + ms(35)), 3);
        // A run that ends at 30 ms has slots at 0 to 20 ms only: 3 per 30 ms at 100/s.
        assert_eq!(pacer.overdue(t0 + ms(30)), 2, "the slot at the end is not the run's");
        assert_eq!(pacer.overdue(t0 + ms(10)), 0);
        // 3/s for 1 s: slots at 0, 333.333333 and 666.666667 ms; the fourth is at 1 s exactly.
        let mut third = Pacer::new(t0, Some(3.0), None);
        for _ in 0..3 {
            assert!(matches!(third.claim(t0 + ms(700)), Claim::Now(_)));
        }
        assert_eq!(third.claim(t0 + ms(700)), Claim::At(t0 + ms(1000)), "slot r x d is the run's end");
        assert_eq!(third.overdue(t0 + ms(1000)), 0, "the slot at the end is not the run's");
        assert_eq!(third.overdue(t0 + ms(1000) + Duration::from_nanos(1)), 1);
        let limited = Pacer::new(t0, Some(100.0), Some(2));
        assert_eq!(limited.overdue(t0 + ms(1000)), 2, "never more than the quota left");
        assert_eq!(Pacer::new(t0, None, None).overdue(t0 + ms(1000)), 0, "closed loop owes nothing");
    }

    #[test]
    fn slots_do_not_drift_from_rounding() {
        // 1/7 s is 142857142.857 ns: a schedule that added the interval cut to 142857142 ns
        // would be 6 ms early after 7 million slots. Each slot is rounded on its own instead.
        assert_eq!(slot_offset_ns(7_000_000, 7.0), 1_000_000 * 1_000_000_000);
        assert_eq!(slot_offset_ns(1, 7.0), 142_857_143);
        assert_eq!(slot_offset_ns(2, 7.0), 285_714_286);
        // Per-thread shares of a rate are fractions: 50 000/s over 3 threads.
        let share = 50_000.0 / 3.0;
        assert_eq!(slot_offset_ns(50_000, share), 3_000_000_000);
        // Claimed just before the end of 1000 s at 7/s: 7000 slots. With the interval cut
        // to whole nanoseconds, slot 7000 would fall 6 µs early and be claimed too.
        let t0 = Instant::now();
        let mut pacer = Pacer::new(t0, Some(7.0), None);
        let end = t0 + Duration::from_secs(1000);
        let just_before_end = end - Duration::from_nanos(1);
        let claimed = std::iter::from_fn(|| match pacer.claim(just_before_end) {
            Claim::Now(at) => Some(at),
            _ => None,
        })
        .count();
        assert_eq!(claimed, 7000);
        assert_eq!(pacer.claim(just_before_end), Claim::At(end));
        assert_eq!(pacer.overdue(end), 0);
    }

    #[test]
    fn a_rate_too_slow_or_not_a_positive_finite_number_sends_once() {
        let t0 = Instant::now();
        for rate in [0.0, -5.0, f64::NAN, f64::INFINITY, 1e-300] {
            let mut pacer = Pacer::new(t0, Some(rate), None);
            assert_eq!(pacer.claim(t0), Claim::Now(t0), "rate {rate}");
            assert!(matches!(pacer.claim(t0 + Duration::from_secs(3600)), Claim::At(_)), "rate {rate}");
            assert_eq!(pacer.overdue(t0 + Duration::from_secs(3600)), 0, "rate {rate}");
        }
    }
}
