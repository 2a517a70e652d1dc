//! Latency percentiles in milliseconds, the figures every report shares (bench, TLS
//! handshakes, proxy legs, merged logs).

use hdrhistogram::Histogram;
use nodelay_tcp::quantile_ms;
use serde::{Deserialize, Serialize};

/// Latency percentiles and moments in milliseconds.
#[derive(Debug, Clone, Default, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Percentiles {
    /// Median, in milliseconds.
    pub p50: f64,
    /// 90th percentile, in milliseconds.
    pub p90: f64,
    /// 99th percentile, in milliseconds.
    pub p99: f64,
    /// 99.9th percentile, in milliseconds.
    pub p999: f64,
    /// The largest value, in milliseconds.
    pub max: f64,
    /// The smallest value, in milliseconds.
    pub min: f64,
    /// The mean, in milliseconds.
    pub mean: f64,
    /// 95th percentile, in milliseconds.
    pub p95: f64,
    /// Standard deviation (of the population: every value was recorded).
    pub stdev: f64,
}

impl Percentiles {
    /// From a nanosecond histogram; `None` when it holds no value.
    pub fn from_ns(histogram: &Histogram<u64>) -> Option<Self> {
        if histogram.is_empty() {
            return None;
        }
        let ms = nodelay_tcp::time::ms_from_ns;
        Some(Percentiles {
            p50: quantile_ms(histogram, 0.50),
            p90: quantile_ms(histogram, 0.90),
            p99: quantile_ms(histogram, 0.99),
            p999: quantile_ms(histogram, 0.999),
            max: ms(histogram.max()),
            min: ms(histogram.min()),
            mean: histogram.mean() / 1e6,
            p95: quantile_ms(histogram, 0.95),
            stdev: histogram.stdev() / 1e6,
        })
    }
}
