//! Decides when each thread's next request is due: as soon as a connection is free
//! (closed loop) or on a fixed schedule (open loop, `--rate`), and when the quota is spent.
//! Time is passed in, so the schedule is tested without a clock.

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Send now; latency counts from this intended start.
    Now(Instant),
    /// Nothing due before this instant.
    At(Instant),
    /// The request quota is spent.
    Exhausted,
}

/// More than the rounding of r × d intervals of whole nanoseconds can add up to in a run.
const SLOT_ROUNDING: Duration = Duration::from_micros(1);

#[derive(Debug, Clone)]
pub struct Pacer {
    interval: Option<Duration>,
    next_slot: Instant,
    remaining: Option<u64>,
}

impl Pacer {
    /// `requests_per_second`: `None` for closed loop. `quota`: `None` for unbounded.
    pub fn new(start: Instant, requests_per_second: Option<f64>, quota: Option<u64>) -> Self {
        // An absurd rate gives an interval too long to represent: then nothing more is ever due.
        let interval =
            requests_per_second.map(|rate| Duration::try_from_secs_f64(1.0 / rate).unwrap_or(Duration::MAX));
        Pacer { interval, next_slot: start, remaining: quota }
    }

    /// Takes the next request slot if one is due at `now`.
    pub fn claim(&mut self, now: Instant) -> Claim {
        if self.remaining == Some(0) {
            return Claim::Exhausted;
        }
        let intended = match self.interval {
            None => now,
            Some(_) if self.next_slot > now => return Claim::At(self.next_slot),
            Some(interval) => {
                let slot = self.next_slot;
                self.next_slot = crate::time::later(self.next_slot, interval);
                slot
            }
        };
        if let Some(remaining) = &mut self.remaining {
            *remaining -= 1;
        }
        Claim::Now(intended)
    }

    pub fn is_exhausted(&self) -> bool {
        self.remaining == Some(0)
    }

    /// Open loop: how many slots before `end` were never claimed (every connection was busy);
    /// 0 in closed loop. Bounded by what is left of the quota. A slot at `end` itself is not
    /// the run's: a run of d seconds at r requests/s has r × d slots, the first at its start.
    pub fn overdue(&self, end: Instant) -> u64 {
        let Some(interval) = self.interval else { return 0 };
        // The interval is 1/rate cut to whole nanoseconds, so the (r × d + 1)-th slot may land
        // a few before the end (3/s: the fourth at 999.999999 ms): not the run's either.
        let end = end.checked_sub(SLOT_ROUNDING).unwrap_or(end);
        if self.next_slot >= end || interval.is_zero() {
            return 0;
        }
        // The slots in [next_slot, end): ceil(gap / interval).
        let behind = ((end - self.next_slot).as_nanos() - 1) / interval.as_nanos() + 1;
        let behind = u64::try_from(behind).unwrap_or(u64::MAX);
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
        // 3/s for 1 s: slots at 0, 333.333333 and 666.666666 ms, and one at 999.999999 ms.
        let mut third = Pacer::new(t0, Some(3.0), None);
        for _ in 0..3 {
            assert!(matches!(third.claim(t0 + ms(700)), Claim::Now(_)));
        }
        assert_eq!(third.overdue(t0 + ms(1000)), 0, "the rounded fourth slot is not the run's");
        let limited = Pacer::new(t0, Some(100.0), Some(2));
        assert_eq!(limited.overdue(t0 + ms(1000)), 2, "never more than the quota left");
        assert_eq!(Pacer::new(t0, None, None).overdue(t0 + ms(1000)), 0, "closed loop owes nothing");
    }
}
