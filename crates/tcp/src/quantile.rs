//! The one percentile definition nodelay uses everywhere, so the same data never rounds two
//! ways: the nearest rank (the smallest value with at least that share of the values at or
//! below it). Latencies go through HdrHistogram's `value_at_quantile` over nanoseconds at 3
//! significant digits (reported as the top of their 0.1 % bucket); `bench` keeps such
//! histograms per thread, and the doctor and `pcap`, which hold a few samples, build one from
//! them. Counts (bytes, segments, pauses) take the same rank without the buckets.

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

/// The `quantile` (0..=1) of a histogram of any unit; `None` when it is empty.
pub fn quantile_of(histogram: &Histogram<u64>, quantile: f64) -> Option<u64> {
    (!histogram.is_empty()).then(|| histogram.value_at_quantile(quantile))
}

/// The `quantile` (0..=1) of a nanosecond histogram, in milliseconds; 0 when it is empty.
pub fn quantile_ms(histogram: &Histogram<u64>, quantile: f64) -> f64 {
    quantile_of(histogram, quantile).map_or(0.0, crate::time::ms_from_ns)
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

/// The `quantile` of millisecond values, through the same histogram as bench's, so doctor,
/// pcap and bench never round apart; 0 when there are none.
pub fn percentile_ms(values_ms: &[f64], quantile: f64) -> f64 {
    quantile_ms(&distribution_ns(values_ms.iter().map(|&ms| (ms * 1e6).round() as u64)), quantile)
}

/// The `quantile` of values already sorted, by the nearest rank; `None` when there are none.
pub fn nearest_rank<T: Copy>(sorted: &[T], quantile: f64) -> Option<T> {
    let rank = (quantile.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.max(1) - 1).copied()
}

/// The median of `values` by the nearest rank (the lower middle of an even count); `None`
/// when there are none.
pub fn median<T: Copy + PartialOrd>(mut values: Vec<T>) -> Option<T> {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    nearest_rank(&values, 0.5)
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
        assert!(close(percentile_ms(&[4.0, 1.0, 3.0, 2.0], 0.5), 2.0));
    }

    #[test]
    fn counts_take_the_same_rank_as_the_histogram() {
        assert_eq!(nearest_rank(&[1, 2, 3, 4], 0.5), Some(2));
        assert_eq!(nearest_rank(&[1, 2, 3], 0.5), Some(2));
        assert_eq!(nearest_rank(&[1, 2, 3, 4], 0.0), Some(1));
        assert_eq!(nearest_rank(&[1, 2, 3, 4], 0.9), Some(4));
        assert_eq!(nearest_rank::<u32>(&[], 0.5), None);
        assert_eq!(median(vec![9, 1, 5, 3]), Some(3));
    }
}
