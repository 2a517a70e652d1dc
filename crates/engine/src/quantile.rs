//! The one percentile definition nodelay uses everywhere, so the same data never rounds two
//! ways: HdrHistogram's `value_at_quantile` over nanoseconds at 3 significant digits (the
//! nearest rank, reported as the top of its 0.1 % bucket). `bench` keeps such histograms per
//! thread; the doctor and `pcap`, which hold a few samples, build one from them.

use hdrhistogram::Histogram;

/// Three significant digits: 0.1 % resolution, as wrk and oha print.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// An empty histogram that grows as far as the values recorded.
pub fn histogram(significant_digits: u8) -> Histogram<u64> {
    let mut histogram =
        Histogram::new_with_bounds(1, 2, significant_digits).expect("static histogram bounds are valid");
    histogram.auto(true);
    histogram
}

/// The `quantile` (0..=1) of a nanosecond histogram, in milliseconds; 0 when it is empty.
pub fn quantile_ms(histogram: &Histogram<u64>, quantile: f64) -> f64 {
    if histogram.is_empty() {
        return 0.0;
    }
    histogram.value_at_quantile(quantile) as f64 / 1e6
}

/// Samples in nanoseconds, ready for `quantile_ms`.
pub fn distribution_ns(values_ns: impl IntoIterator<Item = u64>) -> Histogram<u64> {
    let mut histogram = histogram(SIGNIFICANT_DIGITS);
    for value in values_ns {
        // Auto-resize cannot fail below u64::MAX / 2; clamp rather than panic all the same.
        if histogram.record(value).is_err() {
            histogram.saturating_record(value);
        }
    }
    histogram
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_within_a_tenth_of_a_percent() {
        let ms = |v: u64| v * 1_000_000;
        let values = distribution_ns([1, 2, 3, 4].map(ms));
        let close = |got: f64, want: f64| (got - want).abs() <= want * 0.001;
        assert!(close(quantile_ms(&values, 0.5), 2.0), "{}", quantile_ms(&values, 0.5));
        assert!(close(quantile_ms(&values, 0.9), 4.0));
        assert!(close(quantile_ms(&values, 0.0), 1.0));
        assert_eq!(quantile_ms(&distribution_ns([]), 0.5), 0.0);
        // A read gap of zero (one read) stays zero, not the smallest bucket's 1 ns.
        assert_eq!(quantile_ms(&distribution_ns([0, 0, 0]), 0.5), 0.0);
    }
}
