//! Bounded-memory aggregates of a run: HDR histograms (nanoseconds) and counters, one per
//! thread, merged at the end. Memory does not grow with the number of requests.

use crate::record::{ConnectionRecord, ErrorKind, ErrorRecord, ResponseRecord};
use crate::sink::RecordSink;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::Duration;

/// One hour: longer values are clamped into the top bucket.
const HISTOGRAM_MAX_NS: u64 = 3_600_000_000_000;
const STATUS_CODES: usize = 600;

#[derive(Debug, Clone)]
pub struct Stats {
    pub completed: u64,
    pub response_bytes: u64,
    /// Request start to last byte.
    pub latency_ns: Histogram<u64>,
    /// Request start to first byte.
    pub first_byte_ns: Histogram<u64>,
    /// Largest gap between two reads of one response (0 for single-read responses).
    pub read_gap_ns: Histogram<u64>,
    /// TCP handshake, for requests that opened a connection.
    pub connect_ns: Histogram<u64>,
    pub read_chunks: u64,
    /// Indexed by status code; codes outside 0..600 land in 0.
    status_counts: Vec<u64>,
    errors: [u64; ErrorKind::ALL.len()],
    /// The first message seen for each error kind, to tell the user what went wrong.
    error_examples: [Option<String>; ErrorKind::ALL.len()],
    /// Last closed connection per slot.
    connections: Vec<Option<ConnectionRecord>>,
    pub connections_closed: u64,
    /// Requests in flight when the run ended.
    pub unfinished: u64,
    /// Per request kind, when a run sends more than one (empty otherwise).
    pub by_request: Vec<RequestStats>,
}

/// The figures of one request kind in a multi-request run.
#[derive(Debug, Clone)]
pub struct RequestStats {
    pub completed: u64,
    pub errors: u64,
    pub response_bytes: u64,
    pub latency_ns: Histogram<u64>,
    pub first_byte_ns: Histogram<u64>,
    pub read_gap_ns: Histogram<u64>,
    pub status_counts: BTreeMap<u16, u64>,
}

impl RequestStats {
    fn new() -> Self {
        RequestStats {
            completed: 0,
            errors: 0,
            response_bytes: 0,
            latency_ns: histogram(),
            first_byte_ns: histogram(),
            read_gap_ns: histogram(),
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

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_NS, 3).expect("static histogram bounds are valid")
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl Stats {
    /// Aggregates for a run on `connections` connections sending `request_kinds` kinds of
    /// request (per-kind figures are kept only when there is more than one).
    pub fn with_requests(connections: usize, request_kinds: usize) -> Self {
        let mut stats = Stats::new(connections);
        if request_kinds > 1 {
            stats.by_request = (0..request_kinds).map(|_| RequestStats::new()).collect();
        }
        stats
    }

    pub fn new(connections: usize) -> Self {
        Stats {
            completed: 0,
            response_bytes: 0,
            latency_ns: histogram(),
            first_byte_ns: histogram(),
            read_gap_ns: histogram(),
            connect_ns: histogram(),
            read_chunks: 0,
            status_counts: vec![0; STATUS_CODES],
            errors: [0; ErrorKind::ALL.len()],
            error_examples: Default::default(),
            connections: vec![None; connections],
            connections_closed: 0,
            unfinished: 0,
            by_request: Vec::new(),
        }
    }

    /// HTTP status codes seen, ascending, with counts (raw protocols have none).
    pub fn status_counts(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.status_counts
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (code as u16, *n))
    }

    pub fn errors(&self, kind: ErrorKind) -> u64 {
        self.errors[kind.index()]
    }

    pub fn total_errors(&self) -> u64 {
        self.errors.iter().sum()
    }

    pub fn error_example(&self, kind: ErrorKind) -> Option<&str> {
        self.error_examples[kind.index()].as_deref()
    }

    /// The last TCP_INFO of each connection slot that had one.
    pub fn connections(&self) -> impl Iterator<Item = &ConnectionRecord> {
        self.connections.iter().flatten()
    }

    /// Adds another thread's aggregates into this one.
    pub fn merge(&mut self, other: &Stats) {
        self.completed += other.completed;
        self.response_bytes += other.response_bytes;
        for (mine, theirs) in [
            (&mut self.latency_ns, &other.latency_ns),
            (&mut self.first_byte_ns, &other.first_byte_ns),
            (&mut self.read_gap_ns, &other.read_gap_ns),
            (&mut self.connect_ns, &other.connect_ns),
        ] {
            mine.add(theirs).expect("histograms share bounds");
        }
        self.read_chunks += other.read_chunks;
        for (mine, theirs) in self.status_counts.iter_mut().zip(&other.status_counts) {
            *mine += theirs;
        }
        for kind in ErrorKind::ALL {
            self.errors[kind.index()] += other.errors[kind.index()];
            if self.error_examples[kind.index()].is_none() {
                self.error_examples[kind.index()].clone_from(&other.error_examples[kind.index()]);
            }
        }
        for (mine, theirs) in self.connections.iter_mut().zip(&other.connections) {
            if theirs.is_some() {
                mine.clone_from(theirs);
            }
        }
        self.connections_closed += other.connections_closed;
        self.unfinished += other.unfinished;
        for (mine, theirs) in self.by_request.iter_mut().zip(&other.by_request) {
            mine.merge(theirs);
        }
    }
}

impl RecordSink for Stats {
    fn response(&mut self, record: &ResponseRecord) {
        self.completed += 1;
        self.response_bytes += record.response_bytes;
        self.latency_ns.saturating_record(nanos(record.total));
        self.first_byte_ns.saturating_record(nanos(record.first_byte));
        self.read_gap_ns.saturating_record(nanos(record.max_read_gap));
        if let Some(connect) = record.connect {
            self.connect_ns.saturating_record(nanos(connect));
        }
        self.read_chunks += u64::from(record.read_chunks);
        let code = usize::from(record.status);
        self.status_counts[if code < STATUS_CODES { code } else { 0 }] += 1;
        if let Some(kind) = self.by_request.get_mut(usize::from(record.request)) {
            kind.completed += 1;
            kind.response_bytes += record.response_bytes;
            kind.latency_ns.saturating_record(nanos(record.total));
            kind.first_byte_ns.saturating_record(nanos(record.first_byte));
            kind.read_gap_ns.saturating_record(nanos(record.max_read_gap));
            if record.status > 0 {
                *kind.status_counts.entry(record.status).or_default() += 1;
            }
        }
    }

    fn error(&mut self, record: &ErrorRecord) {
        let index = record.kind.index();
        self.errors[index] += 1;
        if self.error_examples[index].is_none() {
            self.error_examples[index] = Some(record.message.clone());
        }
        if let Some(kind) = self.by_request.get_mut(usize::from(record.request)) {
            kind.errors += 1;
        }
    }

    fn connection(&mut self, record: &ConnectionRecord) {
        self.connections_closed += 1;
        self.unfinished += u64::from(record.abandoned_request);
        if let Some(slot) = self.connections.get_mut(record.connection as usize) {
            *slot = Some(record.clone());
        }
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
            first_byte: Duration::from_millis(1),
            total: Duration::from_millis(total_ms),
            read_chunks: 2,
            max_read_gap: Duration::from_millis(total_ms - 1),
            bytes_before_max_gap: 10,
            response_bytes: 100,
            status,
        }
    }

    #[test]
    fn merges_counts_histograms_and_errors() {
        let mut a = Stats::with_requests(2, 2);
        let mut b = Stats::with_requests(2, 2);
        a.response(&response(40, 200));
        b.response(&response(2, 404));
        b.error(&ErrorRecord {
            connection: 1,
            request: 0,
            kind: ErrorKind::Reset,
            message: "read: reset".into(),
        });
        b.connection(&ConnectionRecord {
            connection: 1,
            requests: 1,
            abandoned_request: true,
            tcp_info: None,
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
        assert_eq!((a.by_request[0].completed, a.by_request[0].errors), (0, 1));
        assert_eq!(a.by_request[1].completed, 2);
        assert_eq!(a.by_request[1].status_counts.len(), 2);
    }
}
