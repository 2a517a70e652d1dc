//! Deadlines that never overflow: `Instant + Duration` panics past the clock's range, and
//! durations come from users and budgets.

use std::time::{Duration, Instant};

/// A hundred years: later than any run, still representable.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `at + by`, or as far ahead as the clock goes when that overflows.
pub fn later(at: Instant, by: Duration) -> Instant {
    at.checked_add(by).or_else(|| at.checked_add(FAR_FUTURE)).unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturates_instead_of_panicking() {
        let now = Instant::now();
        assert_eq!(later(now, Duration::from_millis(5)), now + Duration::from_millis(5));
        assert!(later(now, Duration::MAX) > now + Duration::from_secs(3600 * 24 * 365));
    }
}
