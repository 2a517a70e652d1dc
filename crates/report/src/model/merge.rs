//! The model of a `nodelay report merge` result (interval logs of many load machines added
//! into one run). Its serde form *is* the JSON contract described by
//! `schema/merge.schema.json`: rename nothing, only add.

use crate::model::bench::{HISTOGRAM_BUCKETS, HistogramBucket, histogram_buckets};
use crate::model::percentiles::Percentiles;
use crate::model::series::{IntervalPoint, Machine, SpectrumPoint, spectrum_ms};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The `schema` of a merge report (`schema/merge.schema.json`).
pub const MERGE_SCHEMA_ID: &str = "nodelay-merge/1";

/// One interval log that went into the merge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MergedLog {
    /// The log's path as given.
    pub path: String,
    /// Interval histograms in it.
    pub intervals: usize,
    /// Values in its histograms: the responses of its run.
    pub requests: u64,
    /// The wall-clock start of its first interval, in seconds since the Unix epoch.
    pub start_unix_s: f64,
    /// From the start of its first interval to the end of its last, in seconds.
    pub span_s: f64,
    /// The URL its run loaded, as its header names it (`#nodelay VERSION bench METHOD URL`);
    /// `None` for a log another tool wrote.
    pub url: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// The model of a `nodelay report merge` result: interval logs of many load machines added into
/// one run.
pub struct MergeReport {
    /// The schema id, [`MERGE_SCHEMA_ID`].
    pub schema: Cow<'static, str>,
    /// The interval logs merged, in the order given.
    pub logs: Vec<MergedLog>,
    /// Every value of every log.
    pub requests_completed: u64,
    /// The earliest start of any log's first interval, in seconds since the Unix epoch.
    pub start_unix_s: f64,
    /// From that start to the latest end of any log's last interval, in seconds.
    pub span_s: f64,
    /// `requests_completed` over `span_s`: the logs' load together.
    pub requests_per_second: f64,
    /// The timeline's interval in seconds: the longest interval of any log.
    pub interval_s: f64,
    /// Percentiles of one histogram holding every value of every log (lossless).
    pub latency_ms: Option<Percentiles>,
    /// `latency_ms` in equal-width buckets from its min to its max; the counts add up to
    /// `requests_completed`.
    pub latency_histogram: Vec<HistogramBucket>,
    /// `latency_ms` as a percentile spectrum, ending at 100 % with the maximum.
    pub latency_spectrum: Vec<SpectrumPoint>,
    /// The logs' intervals aligned by their wall-clock start, added per interval of
    /// `interval_s` from `start_unix_s`; errors are 0 (interval logs carry responses only).
    pub timeline: Vec<IntervalPoint>,
    /// Where the merge ran (not where the load ran).
    pub machine: Machine,
}

impl MergeReport {
    /// The report of `logs` whose values, all added, are `all_ns`.
    pub fn new(
        logs: Vec<MergedLog>,
        all_ns: &Histogram<u64>,
        start_unix_s: f64,
        span_s: f64,
        interval_s: f64,
        timeline: Vec<IntervalPoint>,
    ) -> Self {
        MergeReport {
            schema: Cow::Borrowed(MERGE_SCHEMA_ID),
            logs,
            requests_completed: all_ns.len(),
            start_unix_s,
            span_s,
            requests_per_second: if span_s > 0.0 { all_ns.len() as f64 / span_s } else { 0.0 },
            interval_s,
            latency_ms: Percentiles::from_ns(all_ns),
            latency_histogram: histogram_buckets(all_ns, HISTOGRAM_BUCKETS),
            latency_spectrum: spectrum_ms(all_ns),
            timeline,
            machine: Machine::this(),
        }
    }
}

impl MergeReport {
    /// A warning when the logs name different targets (each log's header names its URL): the
    /// merged figures then mix them, which is seldom meant. One line, naming each URL once
    /// with the first log that loaded it.
    pub fn mixed_targets(&self) -> Option<String> {
        let mut targets: Vec<(&str, &str)> = Vec::new();
        for log in &self.logs {
            if let Some(url) = &log.url
                && !targets.iter().any(|(seen, _)| seen == url)
            {
                targets.push((url, &log.path));
            }
        }
        (targets.len() > 1).then(|| {
            let named: Vec<String> = targets.iter().map(|(url, path)| format!("{url} ({path})")).collect();
            format!("warning: the logs loaded different targets, merged as one: {}", named.join(", "))
        })
    }
}

impl IntervalPoint {
    /// The point of an interval `start_s` into a run, `duration_s` long, in which `latency_ns`
    /// holds the responses that completed and `errors` requests failed.
    pub fn of(start_s: f64, duration_s: f64, errors: u64, latency_ns: &Histogram<u64>) -> Self {
        let requests = latency_ns.len();
        let quantile = |q: f64| (!latency_ns.is_empty()).then(|| nodelay_tcp::quantile_ms(latency_ns, q));
        IntervalPoint {
            start_s,
            duration_s,
            requests,
            errors,
            requests_per_second: if duration_s > 0.0 { requests as f64 / duration_s } else { 0.0 },
            p50_ms: quantile(0.5),
            p99_ms: quantile(0.99),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Four logs of 100 responses each, 2.7 s in all, at 1 s intervals.
    pub(crate) fn report() -> MergeReport {
        let mut all = Histogram::<u64>::new_with_bounds(1, 2, 3).unwrap();
        all.auto(true);
        for i in 1..=400u64 {
            all.record(i * 37_000).unwrap();
        }
        let log = |n: u32| MergedLog {
            path: format!("/var/tmp/a-rather-long-directory-name/load-machine-{n}/nodelay.hlog"),
            intervals: 3,
            requests: 100,
            start_unix_s: 1_700_000_000.0 + f64::from(n) * 0.1,
            span_s: 2.4,
            url: Some("http://10.0.0.1:8080/".to_string()),
        };
        let point = IntervalPoint::of(0.0, 1.0, 0, &all);
        MergeReport::new((0..4).map(log).collect(), &all, 1_700_000_000.0, 2.7, 1.0, vec![point; 3])
    }

    #[test]
    fn logs_of_different_targets_are_named_in_one_warning() {
        let mut report = report();
        assert_eq!(report.mixed_targets(), None, "one target");
        report.logs[2].url = Some("http://10.0.0.2:8080/".into());
        report.logs[3].url = None;
        let warning = report.mixed_targets().unwrap();
        assert!(warning.contains("http://10.0.0.1:8080/ (/var/tmp/"), "{warning}");
        assert!(
            warning.ends_with(
                "http://10.0.0.2:8080/ (/var/tmp/a-rather-long-directory-name/load-machine-2/nodelay.hlog)"
            ),
            "{warning}"
        );
    }

    #[test]
    fn an_interval_point_has_its_rate_and_percentiles() {
        let report = report();
        let point = report.timeline[0];
        assert_eq!(point.requests, 400);
        assert_eq!(point.requests_per_second, 400.0);
        assert!(point.p50_ms.unwrap() > 7.0 && point.p50_ms.unwrap() < 7.5, "{point:?}");
        let empty = IntervalPoint::of(1.0, 0.5, 2, &Histogram::<u64>::new(3).unwrap());
        assert_eq!((empty.requests, empty.errors, empty.p50_ms), (0, 2, None));
    }
}
