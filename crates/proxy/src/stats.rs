//! The relay's records aggregated in bounded memory: histograms of each part of an exchange,
//! per-leg pause figures, counts of what failed, and a few examples. Nothing grows with the
//! number of exchanges or connections.

use crate::record::{
    ConnectFailure, ConnectFailureRecord, ConnectionRecord, ExchangeRecord, Framing, IncompleteRecord, Reads,
    Unfinished,
};
use crate::sink::RelaySink;
use hdrhistogram::Histogram;
use nodelay_tcp::path::about_one_round_trip_ms;
use nodelay_tcp::time::ms;
use nodelay_tcp::{distribution_ns, judged_rtt};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Paused messages kept as examples.
pub const STALL_EXAMPLES: usize = 5;
/// The most bytes a message may have for a pause of one round trip inside it to be a hold
/// an ACK released, not a congestion window's wait: the initial window of 1460-byte segments.
pub const INITIAL_WINDOW_BYTES: u64 =
    nodelay_tcp::INITIAL_WINDOW_SEGMENTS * nodelay_tcp::path::ETHERNET_MSS_BYTES;

/// Which leg a message crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leg {
    /// Between the client and the relay: requests arrive on it.
    Client,
    /// Between the relay and the upstream: responses arrive on it.
    Upstream,
}

impl Leg {
    /// Stable name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Leg::Client => "client",
            Leg::Upstream => "upstream",
        }
    }
}

/// How one leg's messages arrived: requests on the client leg, responses on the upstream's.
#[derive(Debug, Clone)]
pub struct LegStats {
    /// Messages relayed in full on this leg.
    pub messages: u64,
    /// Bytes of those messages.
    pub bytes: u64,
    /// `read()` calls that returned part of those messages.
    pub reads: u64,
    /// Messages that arrived in two reads or more.
    pub split: u64,
    /// Messages with a pause of at least the stall threshold between two reads.
    pub stalled: u64,
    /// Of the messages, those of a connection's first exchange (a fresh connection ACKs at
    /// once, so a Nagle stall spares it), and how many of those stalled.
    pub first_on_connection: u64,
    /// Of the first-exchange messages, those that stalled.
    pub stalled_first_on_connection: u64,
    /// The pauses of the stalled messages.
    pub stall_gap_ns: Histogram<u64>,
    /// Bytes of each stalled message that came before its pause.
    pub bytes_before_stall: Histogram<u64>,
    /// Sum of those pauses.
    pub lost_ns: u64,
    /// The leg's round trip (TCP_INFO `min_rtt` of the relay's socket) per message, when
    /// the kernel had a sample.
    pub rtt_ns: Histogram<u64>,
    /// Messages no larger than the initial window that paused for about one round trip of
    /// a path (the leg's round trip at least [`nodelay_tcp::MIN_PATH_RTT`]): the sender held the rest
    /// until the relay's ACK of the first part came back.
    pub round_trip_held: u64,
    /// Of them, messages of a connection's first exchange.
    pub round_trip_held_first_on_connection: u64,
    /// Those messages' pauses.
    pub round_trip_hold_ns: Histogram<u64>,
    /// Sum of those pauses.
    pub round_trip_lost_ns: u64,
}

impl LegStats {
    fn new() -> Self {
        LegStats {
            messages: 0,
            bytes: 0,
            reads: 0,
            split: 0,
            stalled: 0,
            first_on_connection: 0,
            stalled_first_on_connection: 0,
            stall_gap_ns: empty(),
            bytes_before_stall: empty(),
            lost_ns: 0,
            rtt_ns: empty(),
            round_trip_held: 0,
            round_trip_held_first_on_connection: 0,
            round_trip_hold_ns: empty(),
            round_trip_lost_ns: 0,
        }
    }

    /// Counts a message that crossed a leg of round trip `rtt`; whether it stalled: paused
    /// `stall_gap` beyond the round trip (beyond nothing under [`nodelay_tcp::MIN_PATH_RTT`]).
    fn message(
        &mut self,
        reads: &Reads,
        first_exchange: bool,
        stall_gap: Duration,
        rtt: Option<Duration>,
    ) -> bool {
        self.messages += 1;
        self.bytes += reads.bytes;
        self.reads += u64::from(reads.reads);
        self.split += u64::from(reads.reads > 1);
        self.first_on_connection += u64::from(first_exchange);
        if let Some(rtt) = rtt {
            add(&mut self.rtt_ns, nanos(rtt));
        }
        let path = judged_rtt(rtt);
        let stalled = reads.reads > 1 && reads.max_gap >= stall_gap + path;
        let held = !stalled
            && !path.is_zero()
            && reads.reads > 1
            && reads.bytes <= INITIAL_WINDOW_BYTES
            && about_one_round_trip_ms(ms(reads.max_gap), ms(path));
        if held {
            self.round_trip_held += 1;
            self.round_trip_held_first_on_connection += u64::from(first_exchange);
            add(&mut self.round_trip_hold_ns, nanos(reads.max_gap));
            self.round_trip_lost_ns = self.round_trip_lost_ns.saturating_add(nanos(reads.max_gap));
        }
        if stalled {
            self.stalled += 1;
            self.stalled_first_on_connection += u64::from(first_exchange);
            add(&mut self.stall_gap_ns, nanos(reads.max_gap));
            add(&mut self.bytes_before_stall, reads.bytes_before_max_gap);
            self.lost_ns = self.lost_ns.saturating_add(nanos(reads.max_gap));
        }
        stalled
    }
}

/// One message that paused, spelled out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallExample {
    /// The connection (numbered from 1 in the order accepted).
    pub connection: u64,
    /// The exchange's number on the connection, from 0.
    pub sequence: u32,
    /// The leg the message crossed.
    pub leg: Leg,
    /// When its exchange began, from the start of the run.
    pub at: Duration,
    /// Bytes of the message.
    pub bytes: u64,
    /// `read()` calls that returned part of it.
    pub reads: u32,
    /// Its longest pause between two reads.
    pub gap: Duration,
    /// Bytes that had arrived before that pause.
    pub bytes_before_gap: u64,
}

/// The relay's records aggregated in bounded memory: its [`RelaySink`] for a run of any length.
#[derive(Debug, Clone)]
pub struct ProxyStats {
    /// A pause at least this long inside a message counts as a stall.
    stall_gap: Duration,
    started: Instant,
    /// Exchanges relayed in full.
    pub exchanges: u64,
    /// Of those, the ones framed as HTTP.
    pub http_exchanges: u64,
    /// Request's first byte read to response's last byte written.
    pub total_ns: Histogram<u64>,
    /// Time on the client's side (see [`ExchangeRecord::client_leg`]).
    pub client_leg_ns: Histogram<u64>,
    /// The relay's own time (see [`ExchangeRecord::relay`]).
    pub relay_ns: Histogram<u64>,
    /// Request forwarded in full to the response's last byte read (see
    /// [`ExchangeRecord::upstream`]).
    pub upstream_ns: Histogram<u64>,
    /// Request forwarded to the response's first byte.
    pub upstream_first_byte_ns: Histogram<u64>,
    /// The upstream's own time: its first byte less the upstream leg's round trip (from
    /// [`nodelay_tcp::MIN_PATH_RTT`] on; the first byte as it is below).
    pub upstream_time_ns: Histogram<u64>,
    /// Requests, as read from the client.
    pub client: LegStats,
    /// Responses, as read from the upstream.
    pub upstream: LegStats,
    /// Exchanges that stalled on either leg, and their time lost (both pauses).
    pub stalled_exchanges: u64,
    status_counts: BTreeMap<u16, u64>,
    unfinished: [u64; Unfinished::ALL.len()],
    /// Relayed connections that ended, however they ended.
    pub connections_closed: u64,
    /// Connections that ended because a side reset or failed.
    pub connections_failed: u64,
    /// Connections whose HTTP framing was given up, and the first reason.
    pub framing_lost: u64,
    /// The first reason HTTP framing was given up, when it was.
    pub framing_lost_example: Option<String>,
    connect_failures: [u64; ConnectFailure::ALL.len()],
    connect_failure_example: Option<String>,
    /// Upstream connections' handshakes.
    pub upstream_connect_ns: Histogram<u64>,
    /// The first HTTP `Server` header the upstream sent.
    pub upstream_server: Option<String>,
    /// The closed connection that carried the most exchanges: its TCP_INFO on both legs.
    pub busiest: Option<ConnectionRecord>,
    /// The first stalled messages.
    pub examples: Vec<StallExample>,
}

fn empty() -> Histogram<u64> {
    distribution_ns(std::iter::empty())
}

/// Records a value, growing the histogram to fit it (clamped should that ever fail).
fn add(histogram: &mut Histogram<u64>, value: u64) {
    if histogram.record(value.max(1)).is_err() {
        histogram.saturating_record(value);
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl ProxyStats {
    /// Figures for a run that started at `started`; pauses of at least `stall_gap` inside a
    /// message are stalls.
    pub fn new(started: Instant, stall_gap: Duration) -> Self {
        ProxyStats {
            stall_gap,
            started,
            exchanges: 0,
            http_exchanges: 0,
            total_ns: empty(),
            client_leg_ns: empty(),
            relay_ns: empty(),
            upstream_ns: empty(),
            upstream_first_byte_ns: empty(),
            upstream_time_ns: empty(),
            client: LegStats::new(),
            upstream: LegStats::new(),
            stalled_exchanges: 0,
            status_counts: BTreeMap::new(),
            unfinished: [0; Unfinished::ALL.len()],
            connections_closed: 0,
            connections_failed: 0,
            framing_lost: 0,
            framing_lost_example: None,
            connect_failures: [0; ConnectFailure::ALL.len()],
            connect_failure_example: None,
            upstream_connect_ns: empty(),
            upstream_server: None,
            busiest: None,
            examples: Vec::new(),
        }
    }

    /// A pause at least this long inside a message counts as a stall.
    pub fn stall_gap(&self) -> Duration {
        self.stall_gap
    }

    /// Exchanges that began and were not relayed in full for `why`.
    pub fn unfinished(&self, why: Unfinished) -> u64 {
        self.unfinished[why as usize]
    }

    /// Upstream connections that could not be opened for `kind`.
    pub fn connect_failures(&self, kind: ConnectFailure) -> u64 {
        self.connect_failures[kind as usize]
    }

    /// Upstream connections that could not be opened, every kind together.
    pub fn total_connect_failures(&self) -> u64 {
        self.connect_failures.iter().sum()
    }

    /// The first connect failure's message.
    pub fn connect_failure_example(&self) -> Option<&str> {
        self.connect_failure_example.as_deref()
    }

    /// HTTP statuses of the responses, ascending, with counts.
    pub fn status_counts(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.status_counts.iter().map(|(status, n)| (*status, *n))
    }

    fn example(&mut self, record: &ExchangeRecord, leg: Leg, reads: &Reads) {
        if self.examples.len() < STALL_EXAMPLES {
            self.examples.push(StallExample {
                connection: record.connection,
                sequence: record.sequence,
                leg,
                at: record.request.first.saturating_duration_since(self.started),
                bytes: reads.bytes,
                reads: reads.reads,
                gap: reads.max_gap,
                bytes_before_gap: reads.bytes_before_max_gap,
            });
        }
    }
}

impl RelaySink for ProxyStats {
    fn exchange(&mut self, record: &ExchangeRecord) {
        self.exchanges += 1;
        self.http_exchanges += u64::from(record.framing == Framing::Http);
        add(&mut self.total_ns, nanos(record.total()));
        add(&mut self.client_leg_ns, nanos(record.client_leg()));
        add(&mut self.relay_ns, nanos(record.relay()));
        add(&mut self.upstream_ns, nanos(record.upstream()));
        add(&mut self.upstream_first_byte_ns, nanos(record.upstream_first_byte()));
        let upstream_time = record.upstream_first_byte().saturating_sub(judged_rtt(record.upstream_rtt));
        add(&mut self.upstream_time_ns, nanos(upstream_time));
        let first = record.sequence == 0;
        let request_stalled = self.client.message(&record.request, first, self.stall_gap, record.client_rtt);
        let response_stalled =
            self.upstream.message(&record.response, first, self.stall_gap, record.upstream_rtt);
        if request_stalled {
            self.example(record, Leg::Client, &record.request);
        }
        if response_stalled {
            self.example(record, Leg::Upstream, &record.response);
        }
        self.stalled_exchanges += u64::from(request_stalled || response_stalled);
        if record.status > 0 {
            *self.status_counts.entry(record.status).or_default() += 1;
        }
    }

    fn incomplete(&mut self, record: &IncompleteRecord) {
        self.unfinished[record.why as usize] += 1;
    }

    fn connection(&mut self, record: &ConnectionRecord) {
        use crate::record::Ending;
        self.connections_closed += 1;
        self.connections_failed +=
            u64::from(matches!(record.ending, Ending::ClientError | Ending::UpstreamError));
        if let Some(connect) = record.upstream_connect {
            add(&mut self.upstream_connect_ns, nanos(connect));
        }
        if let Some(why) = &record.framing_lost {
            self.framing_lost += 1;
            self.framing_lost_example.get_or_insert_with(|| why.clone());
        }
        if self.upstream_server.is_none() {
            self.upstream_server.clone_from(&record.upstream_server);
        }
        if self.busiest.as_ref().is_none_or(|busiest| record.exchanges > busiest.exchanges) {
            self.busiest = Some(record.clone());
        }
    }

    fn connect_failed(&mut self, record: &ConnectFailureRecord) {
        self.connect_failures[record.kind as usize] += 1;
        self.connect_failure_example.get_or_insert_with(|| record.message.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(t0: Instant, sequence: u32, response_gap_ms: u64) -> ExchangeRecord {
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut response = Reads::start(ms(1), 100);
        if response_gap_ms > 0 {
            response.add(ms(1 + response_gap_ms), 13);
        }
        ExchangeRecord {
            connection: 1,
            sequence,
            framing: Framing::Http,
            request: Reads::start(t0, 80),
            forwarded: t0,
            response,
            delivered: response.last,
            status: 200,
            client_rtt: Some(Duration::from_micros(20)),
            upstream_rtt: Some(Duration::from_micros(30)),
        }
    }

    #[test]
    fn pauses_past_the_threshold_are_stalls_on_their_leg() {
        let t0 = Instant::now();
        let mut stats = ProxyStats::new(t0, Duration::from_millis(25));
        stats.exchange(&exchange(t0, 0, 0));
        for sequence in 1..=3 {
            stats.exchange(&exchange(t0, sequence, 43));
        }
        stats.exchange(&exchange(t0, 4, 10));
        assert_eq!((stats.exchanges, stats.http_exchanges, stats.stalled_exchanges), (5, 5, 3));
        assert_eq!((stats.upstream.stalled, stats.upstream.split, stats.client.stalled), (3, 4, 0));
        assert_eq!((stats.upstream.first_on_connection, stats.upstream.stalled_first_on_connection), (1, 0));
        assert_eq!(stats.upstream.lost_ns, 3 * 43_000_000);
        assert_eq!(stats.examples.len(), 3);
        assert_eq!((stats.examples[0].leg, stats.examples[0].bytes_before_gap), (Leg::Upstream, 100));
        assert_eq!(stats.status_counts().collect::<Vec<_>>(), [(200, 5)]);
    }

    /// Across a path (an upstream leg of 20 ms), the round trip is taken out: a pause of one
    /// round trip is a hold an ACK released, a stall is 25 ms beyond the round trip, and the
    /// upstream's own time is its first byte less the round trip.
    #[test]
    fn across_a_path_pauses_and_first_bytes_are_judged_beyond_the_round_trip() {
        let t0 = Instant::now();
        let mut stats = ProxyStats::new(t0, Duration::from_millis(25));
        let across = |sequence, gap_ms| {
            let mut record = exchange(t0, sequence, gap_ms);
            record.upstream_rtt = Some(Duration::from_millis(20));
            record.forwarded = t0;
            record.response.first = t0 + Duration::from_millis(21);
            record
        };
        for (sequence, gap_ms) in [(0, 21), (1, 62), (2, 40), (3, 19), (4, 0)] {
            stats.exchange(&across(sequence, gap_ms));
        }
        assert_eq!((stats.upstream.stalled, stats.upstream.round_trip_held), (1, 2));
        assert_eq!(stats.upstream.round_trip_held_first_on_connection, 1);
        assert_eq!(stats.upstream.round_trip_lost_ns, 40_000_000);
        assert_eq!(stats.upstream.rtt_ns.len(), 5);
        assert!((stats.upstream_time_ns.value_at_quantile(0.5) as f64 - 1e6).abs() < 1e4);
        // Under MIN_PATH_RTT_MS the round trip is loopback's: nothing is taken out, nothing is a hold.
        let mut loopback = ProxyStats::new(t0, Duration::from_millis(25));
        loopback.exchange(&exchange(t0, 1, 1));
        assert_eq!((loopback.upstream.stalled, loopback.upstream.round_trip_held), (0, 0));
    }

    #[test]
    fn failures_are_counted_by_kind_with_the_first_message() {
        let mut stats = ProxyStats::new(Instant::now(), Duration::from_millis(25));
        for message in ["first", "second"] {
            stats.connect_failed(&ConnectFailureRecord {
                connection: 1,
                kind: ConnectFailure::Refused,
                message: message.into(),
            });
        }
        stats.incomplete(&IncompleteRecord { connection: 2, sequence: 0, why: Unfinished::ClientGone });
        assert_eq!(stats.connect_failures(ConnectFailure::Refused), 2);
        assert_eq!(stats.total_connect_failures(), 2);
        assert_eq!(stats.connect_failure_example(), Some("first"));
        assert_eq!(stats.unfinished(Unfinished::ClientGone), 1);
        assert_eq!(stats.unfinished(Unfinished::UpstreamGone), 0);
    }
}
