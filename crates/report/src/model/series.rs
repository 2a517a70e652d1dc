//! The series a report draws besides its summary figures: the latency percentile spectrum
//! (as HdrHistogram plots it), the per-interval timeline, and the machine the run was on.
//! Part of the JSON contract of bench and compare.

use hdrhistogram::Histogram;
use nodelay_tcp::time::ms_from_ns;
use serde::{Deserialize, Serialize};

/// One point of a percentile spectrum: `percentile` % of the values were at most
/// `latency_ms`.
#[derive(Debug, Clone, Default, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SpectrumPoint {
    /// Percent of the values at most `latency_ms` (0 to 100).
    pub percentile: f64,
    /// The value at that percentile, in milliseconds.
    pub latency_ms: f64,
}

/// Ticks per halving of the distance to 100 %, as HdrHistogram's percentile output uses (5):
/// 0, 10, 20, 30, 40, 50, 55, 60, 65, 70, 75, 77.5, ... up to the largest value.
const TICKS_PER_HALF_DISTANCE: u32 = 5;

/// The spectrum of a nanosecond histogram, in milliseconds: every percentile HdrHistogram
/// would print, ending at 100 % (the maximum); empty when the histogram is.
pub fn spectrum_ms(histogram: &Histogram<u64>) -> Vec<SpectrumPoint> {
    if histogram.is_empty() {
        return Vec::new();
    }
    let mut points: Vec<SpectrumPoint> = histogram
        .iter_quantiles(TICKS_PER_HALF_DISTANCE)
        .map(|step| SpectrumPoint {
            percentile: step.quantile_iterated_to() * 100.0,
            latency_ms: ms_from_ns(histogram.highest_equivalent(step.value_iterated_to())),
        })
        .collect();
    // The iterator ends at the last value's quantile; the plot ends at 100 %.
    let max_ms = ms_from_ns(histogram.max());
    if points.last().is_none_or(|last| last.percentile < 100.0) {
        points.push(SpectrumPoint { percentile: 100.0, latency_ms: max_ms });
    }
    points
}

/// One interval of a run's timeline (`--interval`, default 1 s).
#[derive(Debug, Clone, Default, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IntervalPoint {
    /// Seconds from the start of the run to the start of this interval.
    pub start_s: f64,
    /// The interval's length in seconds (the last one may be cut short by the run's end).
    pub duration_s: f64,
    /// Responses completed in the interval.
    pub requests: u64,
    /// Requests that failed in the interval.
    pub errors: u64,
    /// `requests` over `duration_s`.
    pub requests_per_second: f64,
    /// Null when nothing completed in the interval.
    pub p50_ms: Option<f64>,
    /// 99th percentile latency of the interval's responses, in milliseconds.
    pub p99_ms: Option<f64>,
}

/// The machine a run was measured on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Machine {
    /// Kernel name and release (`uname -sr`), e.g. `Linux 6.1.0`.
    pub kernel: String,
    /// CPUs this process may run on.
    pub cores: usize,
    /// The machine's host name (empty when unknown).
    pub hostname: String,
}

impl Machine {
    /// This machine.
    pub fn this() -> Machine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_string()).ok();
        let kernel = match (read("/proc/sys/kernel/ostype"), read("/proc/sys/kernel/osrelease")) {
            (Some(name), Some(release)) => format!("{name} {release}"),
            _ => std::env::consts::OS.to_string(),
        };
        let hostname = read("/proc/sys/kernel/hostname").unwrap_or_default();
        Machine { kernel, cores, hostname }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spectrum_rises_to_the_maximum_at_100_percent() {
        let mut histogram = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for ms in 1..=1000u64 {
            histogram.record(ms * 1_000_000).unwrap();
        }
        let points = spectrum_ms(&histogram);
        assert!(points.len() > 20, "{points:?}");
        assert!(
            points
                .windows(2)
                .all(|w| w[0].percentile <= w[1].percentile && w[0].latency_ms <= w[1].latency_ms)
        );
        let last = points.last().unwrap();
        assert_eq!(last.percentile, 100.0);
        assert!((last.latency_ms - 1000.0).abs() < 1.0, "{last:?}");
        let median = points.iter().find(|p| p.percentile >= 50.0).unwrap();
        assert!((median.latency_ms - 500.0).abs() < 1.0, "{median:?}");
        assert!(spectrum_ms(&Histogram::<u64>::new(3).unwrap()).is_empty());
    }
}
