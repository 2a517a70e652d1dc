//! Bounded-memory aggregates of a run: HDR histograms (nanoseconds) and counters, one per
//! sink (a thread's, or past 16 threads a group of threads': `crate::sink_count`), merged at
//! the end. Memory does not grow with the number of requests.
//!
//! Memory model, per `Stats`: seven run-wide histograms, each growing only as far as the
//! largest value recorded (16 KiB to ~270 KiB at 3 significant digits; their counts grow by
//! doubling, so up to twice what the largest value needs); per request name of a scenario,
//! three 2-significant-digit histograms (about 20 KiB each), made when the name is first seen;
//! per connection slot it saw, its last TCP_INFO (a few hundred bytes). ~0.6 MiB in all once
//! it has timed a few loopback responses. Nothing is sized by the total connection count or
//! multiplied by threads × connections. The timeline keeps one small entry per interval of
//! the run and two live interval histograms (see `timeline`).

use crate::config::EngineConfig;
use crate::record::{ConnectionRecord, ErrorKind, ErrorRecord, ResponseRecord};
use crate::sink::RecordSink;
use crate::timeline::Timeline;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// One hour: longer values are clamped to it.
const HISTOGRAM_MAX_NS: u64 = 3_600_000_000_000;
/// Run-wide figures: the one resolution every percentile in nodelay has.
const RUN_SIGNIFICANT_DIGITS: u8 = nodelay_tcp::quantile::SIGNIFICANT_DIGITS;
/// Per request name: 1 % resolution is plenty for a per-name table and costs 8× less memory,
/// which matters for scenarios of hundreds of names on many threads.
const PER_NAME_SIGNIFICANT_DIGITS: u8 = 2;

/// A run's aggregates, one per thread and merged at the end; the records' [`RecordSink`] for a
/// long run.
#[derive(Debug, Clone)]
pub struct Stats {
    /// Requests that received a complete response.
    pub completed: u64,
    /// Bytes read for the completed responses, heads and bodies.
    pub response_bytes: u64,
    /// Request start to last byte.
    pub latency_ns: Histogram<u64>,
    /// From when the client began the request to the last byte (uncorrected for coordinated
    /// omission; the same as `latency_ns` in a closed loop).
    pub latency_uncorrected_ns: Histogram<u64>,
    /// Request start to first byte.
    pub first_byte_ns: Histogram<u64>,
    /// Largest gap between two reads of one response (0 for single-read responses).
    pub read_gap_ns: Histogram<u64>,
    /// TCP handshake, for requests that opened a connection.
    pub connect_ns: Histogram<u64>,
    /// TLS handshakes (after the TCP one) that exchanged certificates.
    pub tls_full_handshake_ns: Histogram<u64>,
    /// TLS handshakes that resumed an earlier session.
    pub tls_resumed_handshake_ns: Histogram<u64>,
    /// What the first TLS connection that completed its handshake settled on.
    tls: Option<crate::TlsSummary>,
    /// `read()` calls that returned part of a completed response, summed.
    pub read_chunks: u64,
    /// Responses that arrived on a connection that had already carried one (keep-alive
    /// reuse, as ab's "Keep-Alive requests").
    pub reused_connection_responses: u64,
    /// Every status code that parsed, with its count.
    status_counts: BTreeMap<u16, u64>,
    errors: [u64; ErrorKind::ALL.len()],
    /// The first message seen for each error kind, to tell the user what went wrong.
    error_examples: [Option<String>; ErrorKind::ALL.len()],
    /// Last closed connection per slot, for the slots this thread used.
    connections: BTreeMap<u32, ConnectionRecord>,
    /// Connection records received: connections closed, or still open at the run's end.
    pub connections_closed: u64,
    /// Requests in flight when the run ended.
    pub unfinished: u64,
    /// How long each connect the run ended before any answer to had waited, over every
    /// round appended (the connection records above keep only each slot's last).
    pub connects_unanswered: Vec<Duration>,
    /// Per request kind, when a run sends more than one (empty otherwise); `None` until the
    /// kind is first recorded.
    by_request: Vec<Option<Box<RequestStats>>>,
    /// Responses, errors and latencies per interval of the run.
    timeline: Timeline,
    /// HTTP/2 runs only: streams, windows and SETTINGS.
    pub http2: Option<Box<crate::h2_stats::Http2Stats>>,
}

/// The figures of one request kind in a multi-request run.
#[derive(Debug, Clone)]
pub struct RequestStats {
    /// Requests of this kind that received a complete response.
    pub completed: u64,
    /// Failed attempts of this kind, every error kind together.
    pub errors: u64,
    /// Bytes read for this kind's completed responses, heads and bodies.
    pub response_bytes: u64,
    /// Request start to last byte.
    pub latency_ns: Histogram<u64>,
    /// Request start to first byte.
    pub first_byte_ns: Histogram<u64>,
    /// Largest gap between two reads of one response (0 for single-read responses).
    pub read_gap_ns: Histogram<u64>,
    /// Every HTTP status code that parsed, with its count (raw protocols have none).
    pub status_counts: BTreeMap<u16, u64>,
}

impl Default for RequestStats {
    fn default() -> Self {
        RequestStats::new()
    }
}

impl RequestStats {
    /// Empty figures, at the per-name resolution (2 significant digits).
    pub fn new() -> Self {
        RequestStats {
            completed: 0,
            errors: 0,
            response_bytes: 0,
            latency_ns: histogram(PER_NAME_SIGNIFICANT_DIGITS),
            first_byte_ns: histogram(PER_NAME_SIGNIFICANT_DIGITS),
            read_gap_ns: histogram(PER_NAME_SIGNIFICANT_DIGITS),
            status_counts: BTreeMap::new(),
        }
    }

    fn merge(&mut self, other: &RequestStats) {
        self.completed += other.completed;
        self.errors += other.errors;
        self.response_bytes += other.response_bytes;
        self.latency_ns.add(&other.latency_ns).expect("histograms share bounds");
        self.first_byte_ns.add(&other.first_byte_ns).expect("histograms share bounds");
        self.read_gap_ns.add(&other.read_gap_ns).expect("histograms share bounds");
        for (code, n) in &other.status_counts {
            *self.status_counts.entry(*code).or_default() += n;
        }
    }
}

use nodelay_tcp::quantile::histogram;

/// Records a value, growing the histogram to fit it (values are clamped to an hour first, so
/// growing cannot fail; clamping is the fallback all the same).
fn record_ns(histogram: &mut Histogram<u64>, value_ns: u64) {
    if histogram.record(value_ns).is_err() {
        histogram.saturating_record(value_ns);
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX).min(HISTOGRAM_MAX_NS)
}

impl Stats {
    /// Aggregates for a run sending `request_kinds` kinds of request (per-kind figures are
    /// kept only when there is more than one).
    pub fn with_requests(request_kinds: usize) -> Self {
        let mut stats = Stats::new();
        if request_kinds > 1 {
            stats.by_request = (0..request_kinds).map(|_| None).collect();
        }
        stats
    }

    /// Empty aggregates that keep no per-kind figures.
    pub fn new() -> Self {
        let run_histogram = || histogram(RUN_SIGNIFICANT_DIGITS);
        Stats {
            completed: 0,
            response_bytes: 0,
            latency_ns: run_histogram(),
            latency_uncorrected_ns: run_histogram(),
            first_byte_ns: run_histogram(),
            read_gap_ns: run_histogram(),
            connect_ns: run_histogram(),
            tls_full_handshake_ns: run_histogram(),
            tls_resumed_handshake_ns: run_histogram(),
            tls: None,
            read_chunks: 0,
            reused_connection_responses: 0,
            status_counts: BTreeMap::new(),
            errors: [0; ErrorKind::ALL.len()],
            error_examples: Default::default(),
            connections: BTreeMap::new(),
            connections_closed: 0,
            unfinished: 0,
            connects_unanswered: Vec::new(),
            by_request: Vec::new(),
            timeline: Timeline::default(),
            http2: None,
        }
    }

    /// The run's time series: per interval, its responses, errors and latency histogram.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// HTTP status codes seen, ascending, with counts (raw protocols have none).
    pub fn status_counts(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.status_counts.iter().map(|(code, n)| (*code, *n))
    }

    /// Per request kind of a scenario, in the run's order (empty for a single request);
    /// `None` for a kind nothing was recorded for.
    pub fn by_request(&self) -> impl ExactSizeIterator<Item = Option<&RequestStats>> {
        self.by_request.iter().map(|kind| kind.as_deref())
    }

    fn request_kind(&mut self, request: u16) -> Option<&mut RequestStats> {
        let slot = self.by_request.get_mut(usize::from(request))?;
        Some(slot.get_or_insert_with(|| Box::new(RequestStats::new())))
    }

    /// Failed attempts of `kind`.
    pub fn errors(&self, kind: ErrorKind) -> u64 {
        self.errors[kind.index()]
    }

    /// Failed attempts, every kind together.
    pub fn total_errors(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// The message of the first failure of `kind`, when there was one.
    pub fn error_example(&self, kind: ErrorKind) -> Option<&str> {
        self.error_examples[kind.index()].as_deref()
    }

    /// Every TLS handshake, full and resumed together.
    pub fn tls_handshake_ns(&self) -> Histogram<u64> {
        let mut all = self.tls_full_handshake_ns.clone();
        all.add(&self.tls_resumed_handshake_ns).expect("histograms share bounds");
        all
    }

    /// What the TLS connections negotiated (the first one that completed its handshake).
    pub fn tls(&self) -> Option<crate::TlsSummary> {
        self.tls
    }

    /// The last TCP_INFO of each connection slot that had one.
    pub fn connections(&self) -> impl Iterator<Item = &ConnectionRecord> {
        self.connections.values()
    }

    /// Adds another thread's aggregates into this one (same run: same clock).
    pub fn merge(&mut self, other: &Stats) {
        self.merge_totals(other);
        self.timeline.merge(&other.timeline);
    }

    /// Adds another run's aggregates into this one, its timeline after this one's (rounds of
    /// the same load, one after another).
    pub fn append(&mut self, other: &Stats) {
        self.merge_totals(other);
        self.timeline.append(&other.timeline);
    }

    /// Everything but the timeline.
    fn merge_totals(&mut self, other: &Stats) {
        self.completed += other.completed;
        self.response_bytes += other.response_bytes;
        for (mine, theirs) in [
            (&mut self.latency_ns, &other.latency_ns),
            (&mut self.latency_uncorrected_ns, &other.latency_uncorrected_ns),
            (&mut self.first_byte_ns, &other.first_byte_ns),
            (&mut self.read_gap_ns, &other.read_gap_ns),
            (&mut self.connect_ns, &other.connect_ns),
            (&mut self.tls_full_handshake_ns, &other.tls_full_handshake_ns),
            (&mut self.tls_resumed_handshake_ns, &other.tls_resumed_handshake_ns),
        ] {
            mine.add(theirs).expect("histograms share bounds");
        }
        self.tls = self.tls.or(other.tls);
        self.read_chunks += other.read_chunks;
        self.reused_connection_responses += other.reused_connection_responses;
        for (code, n) in &other.status_counts {
            *self.status_counts.entry(*code).or_default() += n;
        }
        for kind in ErrorKind::ALL {
            self.errors[kind.index()] += other.errors[kind.index()];
            if self.error_examples[kind.index()].is_none() {
                self.error_examples[kind.index()].clone_from(&other.error_examples[kind.index()]);
            }
        }
        for (slot, record) in &other.connections {
            self.connections.insert(*slot, record.clone());
        }
        self.connections_closed += other.connections_closed;
        self.unfinished += other.unfinished;
        self.connects_unanswered.extend_from_slice(&other.connects_unanswered);
        match (&mut self.http2, &other.http2) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (mine @ None, Some(theirs)) => *mine = Some(theirs.clone()),
            (_, None) => {}
        }
        if self.by_request.len() < other.by_request.len() {
            self.by_request.resize_with(other.by_request.len(), || None);
        }
        for (mine, theirs) in self.by_request.iter_mut().zip(&other.by_request) {
            match (mine.as_deref_mut(), theirs) {
                (Some(mine), Some(theirs)) => mine.merge(theirs),
                (None, Some(theirs)) => *mine = Some(theirs.clone()),
                (_, None) => {}
            }
        }
    }
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

impl RecordSink for Stats {
    fn response(&mut self, record: &ResponseRecord) {
        self.completed += 1;
        self.response_bytes += record.response_bytes;
        record_ns(&mut self.latency_ns, nanos(record.total));
        record_ns(&mut self.latency_uncorrected_ns, nanos(record.total_uncorrected));
        let completed_at = record.start_offset.saturating_add(record.total);
        self.timeline.response(completed_at, nanos(record.total));
        record_ns(&mut self.first_byte_ns, nanos(record.first_byte));
        record_ns(&mut self.read_gap_ns, nanos(record.max_read_gap));
        if let Some(connect) = record.connect {
            record_ns(&mut self.connect_ns, nanos(connect));
        }
        if let Some(handshake) = record.tls_handshake {
            let histogram = match record.tls_resumed {
                true => &mut self.tls_resumed_handshake_ns,
                false => &mut self.tls_full_handshake_ns,
            };
            record_ns(histogram, nanos(handshake));
        }
        self.read_chunks += u64::from(record.read_chunks);
        self.reused_connection_responses += u64::from(record.sequence_on_connection > 0);
        if record.status > 0 {
            *self.status_counts.entry(record.status).or_default() += 1;
        }
        if let Some(stream) = &record.http2 {
            self.http2.get_or_insert_default().stream(stream, record.status);
        }
        if let Some(kind) = self.request_kind(record.request) {
            kind.completed += 1;
            kind.response_bytes += record.response_bytes;
            record_ns(&mut kind.latency_ns, nanos(record.total));
            record_ns(&mut kind.first_byte_ns, nanos(record.first_byte));
            record_ns(&mut kind.read_gap_ns, nanos(record.max_read_gap));
            if record.status > 0 {
                *kind.status_counts.entry(record.status).or_default() += 1;
            }
        }
    }

    fn error(&mut self, record: &ErrorRecord) {
        let index = record.kind.index();
        self.errors[index] += 1;
        self.timeline.error(record.offset);
        if self.error_examples[index].is_none() {
            self.error_examples[index] = Some(record.message.clone());
        }
        if let Some(kind) = self.request_kind(record.request) {
            kind.errors += 1;
        }
    }

    fn connection(&mut self, record: &ConnectionRecord) {
        self.connections_closed += 1;
        self.unfinished += u64::from(record.abandoned_requests);
        self.connects_unanswered.extend(record.connect_unanswered_for);
        self.tls = self.tls.or(record.tls);
        if let Some(http2) = &record.http2 {
            self.http2.get_or_insert_default().connection(http2);
        }
        self.connections.insert(record.connection, record.clone());
    }

    fn run_started(&mut self, config: &EngineConfig, started_at: SystemTime) {
        self.timeline.start(config.interval, started_at);
    }

    fn run_ended(&mut self, elapsed: Duration) {
        self.timeline.end(elapsed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(total_ms: u64, status: u16) -> ResponseRecord {
        ResponseRecord {
            connection: 0,
            request: 1,
            sequence_on_connection: 0,
            start_offset: Duration::ZERO,
            connect: None,
            tls_handshake: None,
            tls_resumed: false,
            first_byte: Duration::from_millis(1),
            total: Duration::from_millis(total_ms),
            total_uncorrected: Duration::from_millis(total_ms),
            read_chunks: 2,
            max_read_gap: Duration::from_millis(total_ms - 1),
            bytes_before_max_gap: 10,
            last_read_gap: Duration::ZERO,
            last_read_bytes: 0,
            paused: Duration::ZERO,
            pauses: 0,
            response_bytes: 100,
            status,
            http2: None,
        }
    }

    #[test]
    fn merges_counts_histograms_and_errors() {
        let mut a = Stats::with_requests(2);
        let mut b = Stats::with_requests(2);
        a.response(&response(40, 200));
        b.response(&response(2, 404));
        b.error(&ErrorRecord {
            connection: 1,
            request: 0,
            offset: Duration::from_millis(1500),
            kind: ErrorKind::Reset,
            message: "read: reset".into(),
        });
        b.connection(&ConnectionRecord {
            connection: 1,
            requests: 1,
            abandoned_requests: 1,
            connect_unanswered_for: None,
            tcp_info: None,
            tls: None,
            server_header: None,
            http2: None,
        });
        a.merge(&b);
        assert_eq!(a.completed, 2);
        assert_eq!(a.response_bytes, 200);
        assert_eq!(a.latency_ns.len(), 2);
        assert!(a.latency_ns.max() >= 39_000_000);
        assert_eq!(a.status_counts().collect::<Vec<_>>(), vec![(200, 1), (404, 1)]);
        assert_eq!(a.errors(ErrorKind::Reset), 1);
        assert_eq!(a.error_example(ErrorKind::Reset), Some("read: reset"));
        assert_eq!(a.connections().count(), 1);
        assert_eq!(a.unfinished, 1);
        let kinds: Vec<&RequestStats> = a.by_request().map(Option::unwrap).collect();
        assert_eq!((kinds[0].completed, kinds[0].errors), (0, 1));
        assert_eq!(kinds[1].completed, 2);
        assert_eq!(kinds[1].status_counts.len(), 2);
    }

    #[test]
    fn every_parsed_status_is_counted() {
        let mut stats = Stats::new();
        for status in [200, 999, 600, 101] {
            stats.response(&response(2, status));
        }
        assert_eq!(stats.status_counts().collect::<Vec<_>>(), vec![(101, 1), (200, 1), (600, 1), (999, 1)]);
    }

    #[test]
    fn per_name_figures_exist_only_for_names_seen() {
        let mut a = Stats::with_requests(3);
        let b = Stats::with_requests(3);
        a.response(&response(5, 200));
        a.merge(&b);
        let seen: Vec<bool> = a.by_request().map(|kind| kind.is_some()).collect();
        assert_eq!(seen, vec![false, true, false]);
        let mut c = Stats::with_requests(3);
        c.merge(&a);
        assert_eq!(c.by_request().nth(1).flatten().map(|k| k.completed), Some(1));
    }

    fn error_at(offset_ms: u64) -> ErrorRecord {
        ErrorRecord {
            connection: 0,
            request: 0,
            offset: Duration::from_millis(offset_ms),
            kind: ErrorKind::Timeout,
            message: "timeout".into(),
        }
    }

    /// A thread's stats of a run with 100 ms intervals: responses of 1 to 3 ms completing
    /// through `span_ms` (and one completing late, after later ones), an error every 70 ms.
    fn thread_run(span_ms: u64, seed: u64) -> Stats {
        let mut stats = Stats::new();
        let config = EngineConfig {
            interval: Duration::from_millis(100),
            ..EngineConfig::new(([127, 0, 0, 1], 1).into(), Vec::new())
        };
        stats.run_started(&config, SystemTime::UNIX_EPOCH);
        for at_ms in (0..span_ms).step_by(3) {
            let mut record = response(1 + (at_ms + seed) % 3, 200);
            record.start_offset = Duration::from_millis(at_ms);
            stats.response(&record);
            if at_ms % 70 == 0 {
                stats.error(&error_at(at_ms));
            }
        }
        let mut late = response(9, 200);
        late.start_offset = Duration::from_millis(5);
        stats.response(&late);
        stats.run_ended(Duration::from_millis(span_ms + 10));
        stats
    }

    fn same_counts(a: &Histogram<u64>, b: &Histogram<u64>) -> bool {
        let counts = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
            h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
        };
        a.len() == b.len() && counts(a) == counts(b)
    }

    fn assert_timeline_adds_up(stats: &Stats) {
        let intervals: Vec<_> = stats.timeline().intervals().collect();
        assert_eq!(intervals.iter().map(|i| i.responses).sum::<u64>(), stats.completed);
        assert_eq!(intervals.iter().map(|i| i.errors).sum::<u64>(), stats.total_errors());
        let mut sum = nodelay_tcp::quantile::histogram(RUN_SIGNIFICANT_DIGITS);
        for interval in &intervals {
            assert_eq!(interval.latency_ns.len(), interval.responses);
            sum.add(&interval.latency_ns).unwrap();
        }
        assert!(same_counts(&sum, &stats.latency_ns));
    }

    #[test]
    fn the_timeline_adds_up_to_the_run() {
        let stats = thread_run(1000, 0);
        assert_timeline_adds_up(&stats);
        let first = stats.timeline().intervals().next().unwrap();
        // The late response of 9 ms is in the first interval, where it completed.
        assert!(first.latency_ns.max() >= 8_900_000, "{}", first.latency_ns.max());
        assert_eq!(stats.timeline().len(), 11);
        assert_eq!(stats.timeline().intervals().last().unwrap().duration, Duration::from_millis(10));
    }

    #[test]
    fn threads_merge_interval_by_interval_and_rounds_append() {
        let (a, b) = (thread_run(1000, 0), thread_run(450, 1));
        let mut merged = Stats::new();
        merged.merge(&a);
        merged.merge(&b);
        assert_timeline_adds_up(&merged);
        assert_eq!(merged.timeline().len(), 11);
        let firsts = |s: &Stats| s.timeline().intervals().next().unwrap().responses;
        assert_eq!(firsts(&merged), firsts(&a) + firsts(&b));

        let mut rounds = Stats::new();
        rounds.append(&a);
        rounds.append(&b);
        assert_timeline_adds_up(&rounds);
        assert_eq!(rounds.timeline().len(), 11 + 5);
        assert_eq!(rounds.timeline().intervals().nth(11).unwrap().responses, firsts(&b));
        assert_eq!(rounds.completed, a.completed + b.completed);
    }

    #[test]
    fn histograms_grow_with_the_values_not_their_bounds() {
        let fresh = Stats::with_requests(1000);
        let mut stats = Stats::new();
        stats.response(&response(45, 200));
        // An hour-wide 3-digit histogram is ~270 KiB of counts; one that has seen 45 ms is
        // about half that, and a fresh one 16 KiB.
        assert!(fresh.latency_ns.distinct_values() <= 2048, "{}", fresh.latency_ns.distinct_values());
        assert!(stats.latency_ns.distinct_values() < 20_000, "{}", stats.latency_ns.distinct_values());
        let mut late = response(45, 200);
        late.total = Duration::from_secs(u64::MAX);
        stats.response(&late);
        assert_eq!(stats.latency_ns.max(), stats.latency_ns.highest_equivalent(HISTOGRAM_MAX_NS));
    }
}
