//! The histogram of stall durations, fed either way watch learns of stalls: one length at a
//! time (a capture times each hold), or counts already bucketed with their summed length (the
//! kernel's programs bucket each hold by the same bounds). prometheus-client's `Histogram`
//! only observes one value at a time, and bucketed counts observed as one value each would
//! make its sum up.

use std::sync::{Arc, Mutex};

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Upper bounds of the stall duration buckets, in seconds. Linux's delayed-ACK timer fires
/// 40 ms after the segment at its shortest and 200 ms at its longest (Windows' default is
/// 200 ms): 38-50 ms and 190-250 ms are buckets of their own, so a 40 ms stall and a 200 ms
/// one never share a bucket with their neighbours.
pub const STALL_BUCKETS_SECONDS: [f64; 15] =
    [0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.038, 0.05, 0.075, 0.1, 0.15, 0.19, 0.25, 0.5, 1.0];

/// Buckets: one per upper bound, then +Inf.
pub const STALL_BUCKETS: usize = STALL_BUCKETS_SECONDS.len() + 1;

#[derive(Debug, Default)]
struct Inner {
    sum_seconds: f64,
    count: u64,
    /// Per bucket, not cumulative (the encoder adds them up).
    counts: [u64; STALL_BUCKETS],
}

/// A histogram over [`STALL_BUCKETS_SECONDS`]; clones share their figures.
#[derive(Debug, Clone, Default)]
pub struct StallHistogram {
    inner: Arc<Mutex<Inner>>,
}

/// The bucket of `seconds`: the first whose upper bound is at least it (+Inf last).
pub fn bucket_of(seconds: f64) -> usize {
    STALL_BUCKETS_SECONDS.iter().position(|bound| seconds <= *bound).unwrap_or(STALL_BUCKETS - 1)
}

impl StallHistogram {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// One stall of `seconds`.
    pub fn observe(&self, seconds: f64) {
        let mut inner = self.inner();
        inner.sum_seconds += seconds;
        inner.count += 1;
        inner.counts[bucket_of(seconds)] += 1;
    }

    /// Stalls already bucketed (`counts`, one per bucket) whose lengths sum to `sum_seconds`.
    pub fn add(&self, counts: &[u64; STALL_BUCKETS], sum_seconds: f64) {
        let mut inner = self.inner();
        inner.sum_seconds += sum_seconds;
        for (bucket, count) in inner.counts.iter_mut().zip(counts) {
            *bucket += count;
        }
        inner.count += counts.iter().sum::<u64>();
    }
}

impl TypedMetric for StallHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for StallHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, buckets) = {
            let inner = self.inner();
            // The last bound is +Inf, which prometheus-client spells as f64::MAX.
            let bounds = STALL_BUCKETS_SECONDS.iter().copied().chain(std::iter::once(f64::MAX));
            let buckets: Vec<(f64, u64)> = bounds.zip(inner.counts).collect();
            (inner.sum_seconds, inner.count, buckets)
        };
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_on_a_bound_is_in_that_bound_s_bucket_and_past_the_last_in_inf() {
        assert_eq!(bucket_of(0.001), 0);
        assert_eq!(bucket_of(0.0011), 1);
        assert_eq!(bucket_of(0.042), STALL_BUCKETS_SECONDS.iter().position(|b| *b == 0.05).unwrap());
        assert_eq!(bucket_of(2.0), STALL_BUCKETS - 1);
    }

    #[test]
    fn bucketed_counts_and_single_values_add_up_alike() {
        let one_by_one = StallHistogram::default();
        [0.041, 0.043, 0.2].iter().for_each(|seconds| one_by_one.observe(*seconds));
        let bucketed = StallHistogram::default();
        let mut counts = [0; STALL_BUCKETS];
        counts[bucket_of(0.041)] += 2;
        counts[bucket_of(0.2)] += 1;
        bucketed.add(&counts, 0.041 + 0.043 + 0.2);
        let (a, b) = (one_by_one.inner(), bucketed.inner());
        assert_eq!((a.count, a.counts), (b.count, b.counts));
        assert!((a.sum_seconds - b.sum_seconds).abs() < 1e-12);
    }
}
