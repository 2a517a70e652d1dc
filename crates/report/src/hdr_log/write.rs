//! Writes interval logs (`bench --hdr-log FILE`): the run's per-interval latency histograms in
//! HdrHistogram's interval-log format (version 1.3, as the Java `HistogramLogWriter` writes
//! it), which `nodelay report merge` and HdrHistogram's own tools (`HistogramLogProcessor`)
//! read.
//!
//! The header: comments naming nodelay, the target and the unit, the format version,
//! `#[StartTime: ...]` and `#[BaseTime: ...]` (both the run's wall-clock start, so entry
//! timestamps are seconds from it), `#[MaxValueDivisor: ...]` and the legend line. Then one
//! entry per interval that had responses: start, length, max in milliseconds, and the
//! histogram of nanoseconds, V2-encoded, deflated, in base64.

use crate::model::bench::BenchSettings;
use anyhow::{Context, Result};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use nodelay_engine::Stats;
use nodelay_flags::Flag::HdrLog;

/// The format version the header announces: that of the Java writer this layout follows.
const FORMAT_VERSION: &str = "[Histogram log format version 1.3]";

/// The legend line that follows the header.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

/// The max column in milliseconds, as the Java writer's default.
const NS_PER_MS: f64 = 1e6;

/// The interval log of a run.
pub fn interval_log(stats: &Stats, settings: &BenchSettings) -> Result<Vec<u8>> {
    let timeline = stats.timeline();
    let started_at = timeline.started_at().context(format!("{HdrLog}: the run's start time is unknown"))?;
    let mut serializer = V2DeflateSerializer::new();
    let mut log = Vec::new();
    IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "nodelay {} bench {} {}",
            env!("CARGO_PKG_VERSION"),
            settings.method,
            settings.url
        ))
        .add_comment(&format!(
            "values: latency in nanoseconds, request start to last byte; intervals of {} s",
            timeline.interval().as_secs_f64()
        ))
        .add_comment(FORMAT_VERSION)
        .with_start_time(started_at)
        .with_base_time(started_at)
        .with_max_value_divisor(NS_PER_MS)
        .begin_log_with(&mut log, &mut serializer)
        .context(format!("{HdrLog}: writing the header"))?;
    log.extend_from_slice(LEGEND.as_bytes());
    // The header is written; a second writer without one appends the entries after the legend.
    let mut entries = Vec::new();
    let mut writer = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(NS_PER_MS)
        .begin_log_with(&mut entries, &mut serializer)
        .context(format!("{HdrLog}: starting the entries"))?;
    for interval in timeline.intervals().filter(|interval| interval.responses > 0) {
        writer
            .write_histogram(&interval.latency_ns, interval.start_offset, interval.duration, None)
            .map_err(|e| anyhow::anyhow!("{HdrLog}: writing an interval: {e}"))?;
    }
    drop(writer);
    // The second writer repeats the divisor line; the header has it already.
    let entries = String::from_utf8(entries).context(format!("{HdrLog}: an entry is not text"))?;
    for line in entries.lines().filter(|line| !line.starts_with("#[MaxValueDivisor")) {
        log.extend_from_slice(line.as_bytes());
        log.push(b'\n');
    }
    Ok(log)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hdrhistogram::Histogram;
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use nodelay_engine::{EngineConfig, RecordSink, ResponseRecord};
    use std::time::{Duration, SystemTime};

    pub(crate) fn settings() -> BenchSettings {
        BenchSettings {
            url: "http://127.0.0.1:8080/".into(),
            address: "127.0.0.1:8080".into(),
            method: "GET".into(),
            protocol: "http".into(),
            connections: 1,
            threads: 1,
            requests: None,
            duration_s: Some(1.0),
            rate_per_second: None,
            keep_alive: true,
            write_split: Vec::new(),
            timeout_s: 10.0,
            connect_timeout_s: 3.0,
            success_status: "2xx,3xx".into(),
            tls: None,
            busy_poll: false,
            busy_poll_after_us: None,
            io_uring: false,
            batched_waits: false,
            event_loop: "epoll".into(),
            event_loop_why: "default".into(),
            http_version: Some("1.1".into()),
            http2: None,
        }
    }

    pub(crate) fn response(at_ms: u64, total_ms: u64) -> ResponseRecord {
        ResponseRecord {
            connection: 0,
            request: 0,
            sequence_on_connection: 0,
            start_offset: Duration::from_millis(at_ms),
            connect: None,
            tls_handshake: None,
            tls_resumed: false,
            first_byte: Duration::from_millis(total_ms),
            total: Duration::from_millis(total_ms),
            total_uncorrected: Duration::from_millis(total_ms),
            read_chunks: 1,
            max_read_gap: Duration::ZERO,
            bytes_before_max_gap: 0,
            last_read_gap: Duration::ZERO,
            last_read_bytes: 0,
            paused: Duration::ZERO,
            pauses: 0,
            response_bytes: 10,
            status: 200,
            http2: None,
        }
    }

    #[test]
    fn the_log_has_the_header_and_one_entry_per_interval_with_responses() {
        let started = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        let mut stats = Stats::new();
        let config = EngineConfig {
            interval: Duration::from_millis(100),
            ..EngineConfig::new(([127, 0, 0, 1], 1).into(), Vec::new())
        };
        stats.run_started(&config, started);
        for (at_ms, total_ms) in [(0, 2), (10, 3), (250, 40), (260, 1)] {
            stats.response(&response(at_ms, total_ms));
        }
        stats.run_ended(Duration::from_millis(350));
        let log = interval_log(&stats, &settings()).unwrap();
        let text = String::from_utf8(log.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("#nodelay ") && lines[0].ends_with("GET http://127.0.0.1:8080/"),
            "{text}"
        );
        assert!(lines[1].contains("nanoseconds"), "{text}");
        assert_eq!(lines[2], "#[Histogram log format version 1.3]");
        assert!(lines[3].starts_with("#[StartTime: 1700000000.250 "), "{text}");
        assert!(lines[4].starts_with("#[BaseTime: 1700000000.250 "), "{text}");
        assert!(lines[5].starts_with("#[MaxValueDivisor: "), "{text}");
        assert_eq!(lines[6], LEGEND.trim_end());
        // Intervals 0 and 2 had responses (completed at 2, 13, 290 and 261 ms); 1 had none.
        assert!(lines[7].starts_with("0.000,0.100,3.000,"), "{text}");
        assert!(lines[8].starts_with("0.200,0.100,40.0"), "{text}");
        assert_eq!(lines.len(), 9, "{text}");

        let mut counts = Vec::new();
        for entry in IntervalLogIterator::new(&log) {
            if let LogEntry::Interval(interval) = entry.unwrap() {
                use base64::Engine as _;
                let bytes =
                    base64::engine::general_purpose::STANDARD.decode(interval.encoded_histogram()).unwrap();
                let histogram: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
                counts.push(histogram.len());
            }
        }
        assert_eq!(counts, vec![2, 2]);
    }
}
