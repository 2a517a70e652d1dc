//! Reads and merges interval logs (the pure part of `nodelay report merge LOG...`): interval
//! logs of any number of load machines (`bench --hdr-log`) added into one report, losslessly:
//! every interval histogram of every log goes into one histogram, whose percentiles are those
//! of all the responses together. The logs' intervals are aligned by their wall-clock start
//! into one timeline.

use crate::model::merge::{MergeReport, MergedLog};
use crate::model::series::IntervalPoint;
use anyhow::{Context, Result, anyhow, bail};
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry, LogIteratorError};
use nodelay_flags::Flag::HdrLog;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Entry timestamps at most this much below StartTime are taken as offsets from it (the Java
/// `HistogramLogReader`'s rule for a log without BaseTime): a year.
const ABSOLUTE_AFTER: Duration = Duration::from_secs(365 * 24 * 3600);

/// Points of the merged timeline at most (nearly 3 hours of 1 s intervals): logs whose
/// intervals lie far apart in time (days, or a bogus timestamp) widen the step rather than make
/// a point per interval between.
const MAX_TIMELINE_POINTS: u32 = 10_000;

/// One interval histogram of one log, still encoded.
struct Entry<'a> {
    log: usize,
    /// Wall-clock start, from the Unix epoch.
    start: Duration,
    duration: Duration,
    encoded: &'a str,
    /// 1-based, for messages.
    line: usize,
}

/// The logs' bytes (`contents`, one per path, the paths naming them in messages) merged into
/// one report; a log that is not an interval log, or holds no interval, is an error.
pub fn merge_logs(paths: &[PathBuf], contents: &[Vec<u8>]) -> Result<MergeReport> {
    let urls: Vec<Option<String>> = contents.iter().map(|bytes| url_of(bytes)).collect();
    let mut entries = Vec::new();
    for (log, (path, bytes)) in paths.iter().zip(contents).enumerate() {
        let before = entries.len();
        entries.extend(parse(log, path, bytes)?);
        if entries.len() == before {
            bail!(
                "{}: an interval log without intervals (bench {HdrLog} writes one per interval that had responses)",
                path.display()
            );
        }
    }
    merge_entries(paths, &urls, entries)
}

/// The URL a log's run loaded: the last word of its header's `#nodelay VERSION bench METHOD
/// URL` comment (a URL holds no space; a scenario's METHOD may). `None` when no such line
/// comes before the first interval.
fn url_of(bytes: &[u8]) -> Option<String> {
    let header = bytes.split(|&b| b == b'\n').take_while(|line| line.starts_with(b"#") || line.is_empty());
    header.filter_map(|line| std::str::from_utf8(line).ok()).find_map(|line| {
        let words: Vec<&str> = line.strip_prefix("#nodelay ")?.split_whitespace().collect();
        (words.get(1) == Some(&"bench") && words.len() >= 4).then(|| words[words.len() - 1].to_string())
    })
}

/// The interval entries of one log, with their wall-clock starts.
fn parse<'a>(log: usize, path: &Path, bytes: &'a [u8]) -> Result<Vec<Entry<'a>>> {
    let line_at =
        |offset: usize| bytes[..offset.min(bytes.len())].iter().filter(|&&b| b == b'\n').count() + 1;
    let (mut start_time, mut base_time) = (None, None);
    let mut entries = Vec::new();
    for entry in IntervalLogIterator::new(bytes) {
        let interval = match entry {
            Ok(LogEntry::StartTime(time)) => {
                start_time = Some(time);
                continue;
            }
            Ok(LogEntry::BaseTime(time)) => {
                base_time = Some(time);
                continue;
            }
            Ok(LogEntry::Interval(interval)) => interval,
            Err(LogIteratorError::ParseError { offset }) => bail!(
                "{}: not an HdrHistogram interval log (line {} is neither a comment nor an interval)",
                path.display(),
                line_at(offset)
            ),
        };
        let timestamp = interval.start_timestamp();
        let base = match (base_time, start_time) {
            (Some(base), _) => base,
            (None, Some(start)) if timestamp.saturating_add(ABSOLUTE_AFTER) < start => start,
            _ => Duration::ZERO,
        };
        let offset = interval.encoded_histogram().as_ptr() as usize - bytes.as_ptr() as usize;
        let start = base
            .checked_add(timestamp)
            .filter(|start| start.checked_add(interval.duration()).is_some())
            .ok_or_else(|| {
                anyhow!("{}: line {}: a time beyond any clock", path.display(), line_at(offset))
            })?;
        entries.push(Entry {
            log,
            start,
            duration: interval.duration(),
            encoded: interval.encoded_histogram(),
            line: line_at(offset),
        });
    }
    Ok(entries)
}

fn decode(path: &Path, entry: &Entry) -> Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(entry.encoded.trim())
        .map_err(|e| anyhow!("{}: line {}: the histogram is not base64: {e}", path.display(), entry.line))?;
    let mut histogram: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).map_err(|e| {
        anyhow!("{}: line {}: the histogram does not decode: {e}", path.display(), entry.line)
    })?;
    histogram.auto(true);
    Ok(histogram)
}

/// A histogram empty and alike `like` (resolution and lowest value), that grows as needed.
fn empty_like(like: &Histogram<u64>) -> Histogram<u64> {
    let low = like.low();
    let mut histogram = Histogram::new_with_bounds(low, like.high().max(2 * low), like.sigfig())
        .expect("bounds of a histogram that exists are valid");
    histogram.auto(true);
    histogram
}

/// Per log: intervals, values, earliest start and latest end.
#[derive(Default, Clone, Copy)]
struct LogFigures {
    intervals: usize,
    requests: u64,
    start: Option<Duration>,
    end: Duration,
}

fn merge_entries(paths: &[PathBuf], urls: &[Option<String>], mut entries: Vec<Entry>) -> Result<MergeReport> {
    entries.sort_by_key(|entry| entry.start);
    let origin = entries.first().map(|entry| entry.start).context("no interval in any log")?;
    let end = entries.iter().map(|entry| entry.start + entry.duration).max().unwrap_or(origin);
    let span = end - origin;
    // The timeline's step: the longest interval (a log's last one may be cut short).
    let longest = entries.iter().map(|entry| entry.duration).max().unwrap_or_default();
    let widest_step = span.as_nanos().div_ceil(u128::from(MAX_TIMELINE_POINTS));
    let step = longest
        .max(Duration::from_millis(1))
        .max(Duration::from_nanos(u64::try_from(widest_step).unwrap_or(u64::MAX)));
    let index_of = |start: Duration| ((start - origin).as_nanos() / step.as_nanos()) as usize;
    let buckets = (span.as_nanos().div_ceil(step.as_nanos()) as usize).max(1);

    let mut logs = vec![LogFigures::default(); paths.len()];
    let mut all: Option<(Histogram<u64>, usize)> = None;
    let mut timeline = Vec::with_capacity(buckets);
    let mut bucket: Option<Histogram<u64>> = None;
    let close_bucket = |timeline: &mut Vec<IntervalPoint>, histogram: &Histogram<u64>| {
        let start = step.checked_mul(timeline.len() as u32).unwrap_or(Duration::MAX);
        let duration = step.min(span.saturating_sub(start));
        timeline.push(IntervalPoint::of(start.as_secs_f64(), duration.as_secs_f64(), 0, histogram));
    };
    for entry in &entries {
        let path = &paths[entry.log];
        let histogram = decode(path, entry)?;
        let (total, first_log) = all.get_or_insert_with(|| (empty_like(&histogram), entry.log));
        if histogram.sigfig() != total.sigfig() || histogram.low() != total.low() {
            bail!(
                "{} and {} cannot be added losslessly: histograms of {} and {} significant digits, lowest values {} and {}",
                paths[*first_log].display(),
                path.display(),
                total.sigfig(),
                histogram.sigfig(),
                total.low(),
                histogram.low()
            );
        }
        total.add(&histogram).map_err(|e| anyhow!("{}: line {}: {e:?}", path.display(), entry.line))?;
        let index = index_of(entry.start).min(buckets - 1);
        while timeline.len() < index {
            let histogram = bucket.take().unwrap_or_else(|| empty_like(total));
            close_bucket(&mut timeline, &histogram);
        }
        bucket.get_or_insert_with(|| empty_like(total)).add(&histogram).expect("alike histograms add");
        let figures = &mut logs[entry.log];
        figures.intervals += 1;
        figures.requests += histogram.len();
        figures.start = Some(figures.start.map_or(entry.start, |start| start.min(entry.start)));
        figures.end = figures.end.max(entry.start + entry.duration);
    }
    let (all, _) = all.context("no interval in any log")?;
    while timeline.len() < buckets {
        let histogram = bucket.take().unwrap_or_else(|| empty_like(&all));
        close_bucket(&mut timeline, &histogram);
    }
    let logs = paths
        .iter()
        .zip(logs)
        .zip(urls)
        .map(|((path, figures), url)| {
            let start = figures.start.unwrap_or(origin);
            MergedLog {
                path: path.display().to_string(),
                intervals: figures.intervals,
                requests: figures.requests,
                start_unix_s: start.as_secs_f64(),
                span_s: figures.end.saturating_sub(start).as_secs_f64(),
                url: url.clone(),
            }
        })
        .collect();
    Ok(MergeReport::new(logs, &all, origin.as_secs_f64(), span.as_secs_f64(), step.as_secs_f64(), timeline))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdr_log::write::interval_log;
    use crate::hdr_log::write::tests::{response, settings};
    use nodelay_engine::{EngineConfig, RecordSink, Stats};
    use std::time::SystemTime;

    /// The log of a run started at `started_ms` (Unix time) with responses of 2, 3 and 40 ms
    /// in its first and third 100 ms intervals.
    fn log(started_ms: u64) -> Vec<u8> {
        let mut stats = Stats::new();
        let config = EngineConfig {
            interval: Duration::from_millis(100),
            ..EngineConfig::new(([127, 0, 0, 1], 1).into(), Vec::new())
        };
        stats.run_started(&config, SystemTime::UNIX_EPOCH + Duration::from_millis(started_ms));
        for (at_ms, total_ms) in [(0, 2), (10, 3), (250, 40)] {
            stats.response(&response(at_ms, total_ms));
        }
        stats.run_ended(Duration::from_millis(300));
        interval_log(&stats, &settings()).unwrap()
    }

    #[test]
    fn logs_written_by_bench_merge_into_one_report_aligned_by_their_start() {
        let paths = [PathBuf::from("a.hlog"), PathBuf::from("b.hlog")];
        let report = merge_logs(&paths, &[log(1_700_000_000_000), log(1_700_000_000_050)]).unwrap();
        assert_eq!(report.requests_completed, 6);
        assert_eq!((report.logs[0].intervals, report.logs[0].requests), (2, 3));
        assert_eq!(report.logs[1].path, "b.hlog");
        assert_eq!(report.logs[1].url.as_deref(), Some("http://127.0.0.1:8080/"));
        assert_eq!(report.mixed_targets(), None);
        assert_eq!(report.start_unix_s, 1_700_000_000.0);
        assert_eq!(report.timeline.iter().map(|p| p.requests).sum::<u64>(), 6);
        assert!(report.latency_ms.unwrap().max >= 40.0);
    }

    #[test]
    fn a_log_names_its_url_in_its_header() {
        assert_eq!(url_of(&log(0)).as_deref(), Some("http://127.0.0.1:8080/"));
        let scenario = b"#nodelay 0.1.0 bench scenario (2 requests) http://h:1/api\n#[StartTime: 1]\n";
        assert_eq!(url_of(scenario).as_deref(), Some("http://h:1/api"));
        // Another tool's log, or a comment after the first interval, names no URL.
        assert_eq!(url_of(b"#[StartTime: 1]\n"), None);
        assert_eq!(url_of(b"0.1,1.0,2.0,HISTFAA\n#nodelay 0.1.0 bench GET http://x/\n"), None);
    }

    #[test]
    fn what_is_not_an_interval_log_is_refused_naming_the_file_and_line() {
        let paths = [PathBuf::from("x.hlog")];
        let error = merge_logs(&paths, &[b"#a comment\nhello\n".to_vec()]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "x.hlog: not an HdrHistogram interval log (line 2 is neither a comment nor an interval)"
        );
        let error = merge_logs(&paths, &[b"#only comments\n".to_vec()]).unwrap_err();
        assert!(error.to_string().starts_with("x.hlog: an interval log without intervals"), "{error}");
    }
}
