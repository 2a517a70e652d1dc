//! The one convention for time, and the only conversions between its units:
//!
//! - facts and thresholds are `Duration`s (this crate's constants);
//! - what an engine or a capture measures is integer nanoseconds (`_ns: u64`);
//! - the kernel's figures keep its microseconds (`_us: u32`);
//! - what rules compare and reports print is milliseconds (`_ms: f64`).
//!
//! A name says its unit; these functions move between them. Deadlines go through [`later`].

use std::time::{Duration, Instant};

/// A hundred years: later than any run, still representable.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `at + by`, or as far ahead as the clock goes when that overflows: `Instant + Duration`
/// panics past the clock's range, and durations come from users and budgets.
pub fn later(at: Instant, by: Duration) -> Instant {
    at.checked_add(by).or_else(|| at.checked_add(FAR_FUTURE)).unwrap_or(at)
}

/// A `Duration` in milliseconds.
pub const fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// A `Duration` in whole nanoseconds (saturating past 584 years).
pub const fn ns(duration: Duration) -> u64 {
    let nanos = duration.as_nanos();
    if nanos > u64::MAX as u128 { u64::MAX } else { nanos as u64 }
}

/// A `Duration` in whole microseconds (saturating).
pub const fn us(duration: Duration) -> u64 {
    let micros = duration.as_micros();
    if micros > u64::MAX as u128 { u64::MAX } else { micros as u64 }
}

/// Nanoseconds in milliseconds.
pub fn ms_from_ns(nanos: u64) -> f64 {
    nanos as f64 / 1e6
}

/// Microseconds in milliseconds.
pub fn ms_from_us(micros: impl Into<u64>) -> f64 {
    micros.into() as f64 / 1e3
}

/// Milliseconds as a `Duration`; negative, NaN and infinite ones as zero.
pub fn duration_from_ms(millis: f64) -> Duration {
    Duration::try_from_secs_f64(millis / 1e3).unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_convert_both_ways() {
        assert_eq!(ms(Duration::from_micros(1500)), 1.5);
        assert_eq!(ns(Duration::from_millis(25)), 25_000_000);
        assert_eq!(us(Duration::from_millis(2)), 2_000);
        assert_eq!(ms_from_ns(40_000_000), 40.0);
        assert_eq!(ms_from_us(250u32), 0.25);
        assert_eq!(ms_from_us(1_500u64), 1.5);
        assert_eq!(duration_from_ms(1.5), Duration::from_micros(1500));
        assert_eq!(duration_from_ms(-1.0), Duration::ZERO);
        assert_eq!(duration_from_ms(f64::NAN), Duration::ZERO);
    }

    #[test]
    fn a_deadline_saturates_instead_of_panicking() {
        let now = Instant::now();
        assert_eq!(later(now, Duration::from_millis(5)), now + Duration::from_millis(5));
        assert!(later(now, Duration::MAX) > now + Duration::from_secs(3600 * 24 * 365));
    }
}
