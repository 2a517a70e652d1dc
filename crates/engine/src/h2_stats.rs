//! A run's HTTP/2 figures, aggregated from its stream and connection records: how long
//! streams queued before their HEADERS left, how long they waited on a flow-control window,
//! what the server's SETTINGS allowed, how long they were held behind lost segments, and gRPC
//! statuses. Bounded memory, as `Stats`: four histograms and counters.

use crate::record::{Http2Connection, StreamRecord};
use hdrhistogram::Histogram;
use nodelay_tcp::quantile::histogram;
use std::collections::BTreeMap;
use std::time::Duration;

/// The HTTP/2 side of a run's statistics.
#[derive(Debug, Clone)]
pub struct Http2Stats {
    /// Responses that came over HTTP/2 (streams completed).
    pub streams: u64,
    /// From a request's due time to its HEADERS leaving (queued behind the stream limit or the
    /// connection's opening), per stream.
    pub queued_ns: Histogram<u64>,
    /// From a request's start to its response's first DATA frame, per stream with a body.
    pub first_data_ns: Histogram<u64>,
    /// Time each stream's DATA waited on a used-up window, per stream (zeros included).
    pub window_blocked_ns: Histogram<u64>,
    /// Streams that waited on a window at least once...
    pub window_blocked_streams: u64,
    /// ...and all their waits, summed.
    pub window_blocked: Duration,
    /// Time each stream was held with others behind a lost segment, per stream (zeros
    /// included).
    pub loss_held_ns: Histogram<u64>,
    /// Streams held so at least once...
    pub loss_held_streams: u64,
    /// ...and all that time, summed.
    pub loss_held: Duration,
    /// Pauses in reading that ended with a lost segment's retransmission...
    pub loss_holes: u64,
    /// ...and the streams they held, summed.
    pub streams_held_by_loss: u64,
    /// Streams whose request body waited on the server's window at least once...
    pub send_window_blocked_streams: u64,
    /// ...and all those waits, summed.
    pub send_window_blocked: Duration,
    /// Times request bodies used up the server's window (a stream's or a connection's).
    pub send_window_stalls: u64,
    /// grpc-status of each gRPC response, with counts.
    pub grpc_status_counts: BTreeMap<u16, u64>,
    /// gRPC responses with a non-OK grpc-status, by their HTTP status (200 nearly always):
    /// a failed call whose HTTP status counts as a success is still a failure.
    pub grpc_failed_by_http_status: BTreeMap<u16, u64>,
    /// Connection records seen.
    pub connections: u64,
    /// The smallest SETTINGS_MAX_CONCURRENT_STREAMS a server connection announced (None:
    /// none announced one, so no limit was stated).
    pub peer_max_concurrent_streams: Option<u32>,
    /// The server's SETTINGS_INITIAL_WINDOW_SIZE (the window of our request bodies).
    pub peer_initial_window_bytes: Option<u32>,
    /// What we advertised: each stream's window and the connection's.
    pub stream_window_bytes: u32,
    /// The connection window we advertised.
    pub connection_window_bytes: u32,
    /// Stalls of a whole connection on its used-up window, and their time summed.
    pub connection_window_stalls: u64,
    /// The time of those stalls, summed.
    pub connection_window_blocked: Duration,
    /// WINDOW_UPDATE frames we sent.
    pub window_updates_sent: u64,
    /// Streams the server reset (RST_STREAM).
    pub streams_reset: u64,
    /// Requests the run ended with that never left: queued behind the stream limit.
    pub streams_unsent_at_end: u64,
    /// Connections the server ended with GOAWAY.
    pub goaways: u64,
    /// The most streams one connection had open at once.
    pub max_open_streams: u32,
}

impl Default for Http2Stats {
    fn default() -> Self {
        Http2Stats {
            streams: 0,
            queued_ns: histogram(nodelay_tcp::quantile::SIGNIFICANT_DIGITS),
            first_data_ns: histogram(nodelay_tcp::quantile::SIGNIFICANT_DIGITS),
            window_blocked_ns: histogram(nodelay_tcp::quantile::SIGNIFICANT_DIGITS),
            window_blocked_streams: 0,
            window_blocked: Duration::ZERO,
            loss_held_ns: histogram(nodelay_tcp::quantile::SIGNIFICANT_DIGITS),
            loss_held_streams: 0,
            loss_held: Duration::ZERO,
            loss_holes: 0,
            streams_held_by_loss: 0,
            send_window_blocked_streams: 0,
            send_window_blocked: Duration::ZERO,
            send_window_stalls: 0,
            grpc_status_counts: BTreeMap::new(),
            grpc_failed_by_http_status: BTreeMap::new(),
            connections: 0,
            peer_max_concurrent_streams: None,
            peer_initial_window_bytes: None,
            stream_window_bytes: 0,
            connection_window_bytes: 0,
            connection_window_stalls: 0,
            connection_window_blocked: Duration::ZERO,
            window_updates_sent: 0,
            streams_reset: 0,
            streams_unsent_at_end: 0,
            goaways: 0,
            max_open_streams: 0,
        }
    }
}

fn record(histogram: &mut Histogram<u64>, value: Duration) {
    let nanos = u64::try_from(value.as_nanos()).unwrap_or(u64::MAX);
    if histogram.record(nanos).is_err() {
        histogram.saturating_record(nanos);
    }
}

impl Http2Stats {
    /// One completed stream, whose response had HTTP status `http_status`.
    pub fn stream(&mut self, stream: &StreamRecord, http_status: u16) {
        self.streams += 1;
        // As tcpdump sees it: our own turnaround too.
        record(&mut self.queued_ns, stream.turnaround + stream.queued);
        if let Some(first_data) = stream.first_data {
            record(&mut self.first_data_ns, first_data);
        }
        record(&mut self.window_blocked_ns, stream.window_blocked);
        if !stream.window_blocked.is_zero() {
            self.window_blocked_streams += 1;
            self.window_blocked += stream.window_blocked;
        }
        record(&mut self.loss_held_ns, stream.loss_held);
        if !stream.loss_held.is_zero() {
            self.loss_held_streams += 1;
            self.loss_held += stream.loss_held;
        }
        if !stream.send_window_blocked.is_zero() {
            self.send_window_blocked_streams += 1;
            self.send_window_blocked += stream.send_window_blocked;
        }
        if let Some(status) = stream.grpc_status {
            *self.grpc_status_counts.entry(status).or_default() += 1;
            if status != 0 {
                *self.grpc_failed_by_http_status.entry(http_status).or_default() += 1;
            }
        }
    }

    /// One closed connection.
    pub fn connection(&mut self, connection: &Http2Connection) {
        self.connections += 1;
        if let Some(limit) = connection.peer.max_concurrent_streams {
            self.peer_max_concurrent_streams =
                Some(self.peer_max_concurrent_streams.map_or(limit, |l| l.min(limit)));
        }
        self.peer_initial_window_bytes =
            self.peer_initial_window_bytes.or(connection.peer.initial_window_bytes);
        self.stream_window_bytes = self.stream_window_bytes.max(connection.stream_window_bytes);
        self.connection_window_bytes = self.connection_window_bytes.max(connection.connection_window_bytes);
        self.connection_window_stalls += connection.connection_window_stalls;
        self.connection_window_blocked += connection.connection_window_blocked;
        self.window_updates_sent += connection.window_updates_sent;
        self.streams_reset += connection.streams_reset;
        self.streams_unsent_at_end += connection.streams_unsent_at_end;
        self.goaways += u64::from(connection.goaway_code.is_some());
        self.max_open_streams = self.max_open_streams.max(connection.max_open_streams);
        self.loss_holes += connection.loss_holes;
        self.streams_held_by_loss += connection.streams_held_by_loss;
        self.send_window_stalls += connection.send_window_stalls;
    }

    /// Adds another sink's figures.
    pub fn merge(&mut self, other: &Http2Stats) {
        self.streams += other.streams;
        for (mine, theirs) in [
            (&mut self.queued_ns, &other.queued_ns),
            (&mut self.first_data_ns, &other.first_data_ns),
            (&mut self.window_blocked_ns, &other.window_blocked_ns),
            (&mut self.loss_held_ns, &other.loss_held_ns),
        ] {
            mine.add(theirs).expect("histograms share bounds");
        }
        self.window_blocked_streams += other.window_blocked_streams;
        self.window_blocked += other.window_blocked;
        self.loss_held_streams += other.loss_held_streams;
        self.loss_held += other.loss_held;
        self.loss_holes += other.loss_holes;
        self.streams_held_by_loss += other.streams_held_by_loss;
        self.send_window_blocked_streams += other.send_window_blocked_streams;
        self.send_window_blocked += other.send_window_blocked;
        self.send_window_stalls += other.send_window_stalls;
        for (code, n) in &other.grpc_status_counts {
            *self.grpc_status_counts.entry(*code).or_default() += n;
        }
        for (code, n) in &other.grpc_failed_by_http_status {
            *self.grpc_failed_by_http_status.entry(*code).or_default() += n;
        }
        self.connections += other.connections;
        if let Some(limit) = other.peer_max_concurrent_streams {
            self.peer_max_concurrent_streams =
                Some(self.peer_max_concurrent_streams.map_or(limit, |l| l.min(limit)));
        }
        self.peer_initial_window_bytes = self.peer_initial_window_bytes.or(other.peer_initial_window_bytes);
        self.stream_window_bytes = self.stream_window_bytes.max(other.stream_window_bytes);
        self.connection_window_bytes = self.connection_window_bytes.max(other.connection_window_bytes);
        self.connection_window_stalls += other.connection_window_stalls;
        self.connection_window_blocked += other.connection_window_blocked;
        self.window_updates_sent += other.window_updates_sent;
        self.streams_reset += other.streams_reset;
        self.streams_unsent_at_end += other.streams_unsent_at_end;
        self.goaways += other.goaways;
        self.max_open_streams = self.max_open_streams.max(other.max_open_streams);
    }
}
