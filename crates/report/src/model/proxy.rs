//! The model of a `nodelay proxy` run. Its serde form is the JSON contract described by
//! `schema/proxy.schema.json`: rename nothing, only add. Findings share the doctor's types;
//! they come from `nodelay_diagnose::RelayObservations::diagnose` over the relay's aggregated records.

use crate::model::percentiles::Percentiles;
use hdrhistogram::Histogram;
use nodelay_diagnose::{Diagnosis, Finding, Verdict};
use nodelay_proxy::{ConnectFailure, Leg, LegStats, ProxyStats, RelayEnd, Unfinished};
use nodelay_tcp::TcpInfo;
use nodelay_tcp::quantile_ms;
use nodelay_tcp::time::ms_from_ns as ms;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The `schema` of a proxy report (`schema/proxy.schema.json`).
pub const PROXY_SCHEMA_ID: &str = "nodelay-proxy/1";

/// Each part of an exchange, as percentiles over the exchanges relayed in full (`None` when
/// there were none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExchangeParts {
    /// From the request's first byte read from the client to the response's last byte
    /// written to it.
    pub total: Option<Percentiles>,
    /// The request arriving (first to last byte) plus the response delivered to the client.
    pub client_leg: Option<Percentiles>,
    /// From the request's last byte read to it written to the upstream (the upstream
    /// handshake included on a connection's first exchange).
    pub relay: Option<Percentiles>,
    /// From the request written to the upstream to the response's last byte read.
    pub upstream: Option<Percentiles>,
    /// From the request written to the upstream to the response's first byte read.
    pub upstream_first_byte: Option<Percentiles>,
    /// The upstream's own time: its first byte less the upstream leg's round trip (TCP_INFO
    /// `min_rtt`, from 1 ms on; the first byte as it is below).
    pub upstream_time: Option<Percentiles>,
}

/// Percentiles of the pauses of the messages that stalled.
#[derive(Debug, Clone, Default, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Pauses {
    /// 10th percentile pause, in milliseconds.
    pub p10: f64,
    /// Median pause, in milliseconds.
    pub p50: f64,
    /// 90th percentile pause, in milliseconds.
    pub p90: f64,
    /// The longest pause, in milliseconds.
    pub max: f64,
}

/// How one leg's messages arrived: requests on the client leg, responses on the upstream's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LegReport {
    /// `requests` or `responses`.
    pub messages_are: Cow<'static, str>,
    /// Messages read in full on this leg.
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Reads the messages took.
    pub reads: u64,
    /// Messages that arrived in two reads or more.
    pub split: u64,
    /// Messages with a pause of at least `stall_threshold_ms` between two reads.
    pub stalled: u64,
    /// Messages that were the first exchange on their connection.
    pub first_on_connection: u64,
    /// Of them, messages that stalled.
    pub stalled_first_on_connection: u64,
    /// The stalled messages' longest pauses; null when none stalled.
    pub stall_pause_ms: Option<Pauses>,
    /// The stalled messages' longest pauses added up, in milliseconds.
    pub time_lost_ms: f64,
    /// The side whose data waited when a message of this leg stalled.
    pub held_by: Cow<'static, str>,
    /// TCP_INFO of the relay's own socket on this leg, on the busiest connection.
    pub relay_socket: Option<TcpInfo>,
    /// The leg's round trip: the median TCP_INFO `min_rtt` of the relay's socket on it over
    /// the messages, in milliseconds; null when the kernel gave none. From 1 ms on it is
    /// taken out of pauses (a stall is `stall_threshold_ms` beyond it) and first bytes.
    pub path_rtt_ms: Option<f64>,
    /// Messages no larger than the initial window (10 segments) that paused about one round
    /// trip (within a quarter of it plus 1 ms), across a path only: the sender's Nagle held
    /// the rest until the relay's ACK came back.
    pub round_trip_held: u64,
    /// Of them, messages that were the first exchange on their connection.
    pub round_trip_held_first_on_connection: u64,
    /// Those messages' pauses; null when none.
    pub round_trip_hold_ms: Option<Pauses>,
    /// Those pauses added up, in milliseconds.
    pub round_trip_time_lost_ms: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// The client connections the relay accepted, and how they ended.
pub struct ConnectionsReport {
    /// Client connections accepted.
    pub accepted: u64,
    /// Closed during the run (those whose upstream could not be reached included).
    pub closed: u64,
    /// Open when the relay stopped (it closed them).
    pub open_at_end: u64,
    /// Closed because a side reset the connection or a read or write failed.
    pub failed: u64,
    /// accept() calls that failed.
    pub accept_failures: u64,
    /// Upstream TCP handshake, in milliseconds; null when none was opened.
    pub upstream_connect_ms: Option<Percentiles>,
    /// Connections whose HTTP framing the relay had to give up, and the first reason.
    pub framing_lost: u64,
    /// Why the first of them lost its framing; null when none did.
    pub framing_lost_example: Option<String>,
}

/// Upstream connections that could not be opened (their clients' connections were closed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UpstreamFailures {
    /// Connects the upstream refused.
    pub refused: u64,
    /// Connects that timed out.
    pub timed_out: u64,
    /// Connects that failed for want of file descriptors.
    pub out_of_files: u64,
    /// Connects that failed otherwise.
    pub other: u64,
    /// All of them.
    pub total: u64,
    /// The first failure's message.
    pub example: Option<String>,
}

/// Exchanges that began and were not relayed in full, by why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IncompleteReport {
    /// The client closed or reset its connection first.
    pub client_gone: u64,
    /// The upstream closed or reset its connection first.
    pub upstream_gone: u64,
    /// Still in flight when the relay stopped.
    pub in_flight_at_end: u64,
    /// Relayed, but not timed: framing the relay could not follow.
    pub untimed: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// One stalled message, as the proof's example reads it.
pub struct StallExampleReport {
    /// The client connection's number, in accept order.
    pub connection: u64,
    /// 1 for a connection's first exchange.
    pub exchange: u32,
    /// `client` (a request paused) or `upstream` (a response paused).
    pub leg: Cow<'static, str>,
    /// When the exchange began, from the start of the run.
    pub at_s: f64,
    /// The message's bytes.
    pub bytes: u64,
    /// Reads it took.
    pub reads: u32,
    /// Its longest pause between two reads, in milliseconds.
    pub pause_ms: f64,
    /// Bytes read before that pause.
    pub bytes_before_pause: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// The model of a `nodelay proxy` run: what the relay saw of each exchange, leg by leg.
pub struct ProxyReport {
    /// The schema id, [`PROXY_SCHEMA_ID`].
    pub schema: Cow<'static, str>,
    /// The address the relay listened on (the port chosen for port 0).
    pub listen: String,
    /// The upstream address the relay connected to.
    pub upstream: String,
    /// How long the relay ran, in seconds.
    pub elapsed_s: f64,
    /// `duration`, `exchanges` or `signal` (Ctrl-C, SIGTERM).
    pub stopped_by: Cow<'static, str>,
    /// Stopped by Ctrl-C or SIGTERM.
    pub interrupted: bool,
    /// Exchanges relayed in full (the response delivered).
    pub exchanges: u64,
    /// Of them, framed as HTTP/1.x (the others by turns).
    pub http_exchanges: u64,
    /// `exchanges` over `elapsed_s`.
    pub exchanges_per_second: f64,
    /// A pause this long or longer between two reads of one message is a stall, in milliseconds.
    pub stall_threshold_ms: f64,
    /// Exchanges with a stall on either leg.
    pub stalled_exchanges: u64,
    /// Each part of an exchange, in milliseconds.
    pub latency_ms: ExchangeParts,
    /// How the requests arrived from the clients.
    pub client_leg: LegReport,
    /// How the responses arrived from the upstream.
    pub upstream_leg: LegReport,
    /// HTTP statuses of the responses relayed.
    pub status_counts: BTreeMap<String, u64>,
    /// The client connections and how they ended.
    pub connections: ConnectionsReport,
    /// Upstream connections that could not be opened.
    pub upstream_failures: UpstreamFailures,
    /// Exchanges that began and were not relayed in full.
    pub incomplete: IncompleteReport,
    /// The first messages that stalled.
    pub stall_examples: Vec<StallExampleReport>,
    /// `healthy`, `findings`, or `nothing-relayed`.
    pub verdict: Cow<'static, str>,
    /// What the relay's figures show (Nagle and delayed ACK on either leg); empty when nothing
    /// was relayed.
    pub findings: Vec<Finding>,
}

fn pauses(histogram: &Histogram<u64>) -> Option<Pauses> {
    (!histogram.is_empty()).then(|| Pauses {
        p10: quantile_ms(histogram, 0.1),
        p50: quantile_ms(histogram, 0.5),
        p90: quantile_ms(histogram, 0.9),
        max: ms(histogram.max()),
    })
}

fn leg_report(leg: &LegStats, kind: Leg, relay_socket: Option<TcpInfo>) -> LegReport {
    LegReport {
        messages_are: if kind == Leg::Client {
            Cow::Borrowed("requests")
        } else {
            Cow::Borrowed("responses")
        },
        messages: leg.messages,
        bytes: leg.bytes,
        reads: leg.reads,
        split: leg.split,
        stalled: leg.stalled,
        first_on_connection: leg.first_on_connection,
        stalled_first_on_connection: leg.stalled_first_on_connection,
        stall_pause_ms: pauses(&leg.stall_gap_ns),
        time_lost_ms: ms(leg.lost_ns),
        held_by: Cow::Borrowed(kind.as_str()),
        relay_socket,
        path_rtt_ms: (!leg.rtt_ns.is_empty()).then(|| quantile_ms(&leg.rtt_ns, 0.5)),
        round_trip_held: leg.round_trip_held,
        round_trip_held_first_on_connection: leg.round_trip_held_first_on_connection,
        round_trip_hold_ms: pauses(&leg.round_trip_hold_ns),
        round_trip_time_lost_ms: ms(leg.round_trip_lost_ns),
    }
}

impl ProxyReport {
    /// The report of a relay's run, with the `diagnosis` the rules made of its figures
    /// (`nodelay_diagnose::RelayObservations`).
    pub fn new(
        listen: String,
        upstream: String,
        stats: &ProxyStats,
        end: &RelayEnd,
        diagnosis: Diagnosis,
    ) -> Self {
        let busiest = stats.busiest.as_ref();
        let client_leg = leg_report(&stats.client, Leg::Client, busiest.and_then(|c| c.client_tcp_info));
        let upstream_leg =
            leg_report(&stats.upstream, Leg::Upstream, busiest.and_then(|c| c.upstream_tcp_info));
        let first_byte = &stats.upstream_first_byte_ns;
        let upstream_time = &stats.upstream_time_ns;
        let verdict = match diagnosis.verdict() {
            Verdict::NothingSeen => "nothing-relayed",
            verdict => verdict.as_str(),
        };
        let findings = diagnosis.findings;
        let elapsed_s = end.elapsed.as_secs_f64();
        ProxyReport {
            schema: Cow::Borrowed(PROXY_SCHEMA_ID),
            listen,
            upstream,
            elapsed_s,
            stopped_by: Cow::Borrowed(end.stopped_by.as_str()),
            interrupted: end.stopped_by == nodelay_proxy::StopReason::Signal,
            exchanges: stats.exchanges,
            http_exchanges: stats.http_exchanges,
            exchanges_per_second: if elapsed_s > 0.0 { stats.exchanges as f64 / elapsed_s } else { 0.0 },
            stall_threshold_ms: stats.stall_gap().as_secs_f64() * 1e3,
            stalled_exchanges: stats.stalled_exchanges,
            latency_ms: ExchangeParts {
                total: Percentiles::from_ns(&stats.total_ns),
                client_leg: Percentiles::from_ns(&stats.client_leg_ns),
                relay: Percentiles::from_ns(&stats.relay_ns),
                upstream: Percentiles::from_ns(&stats.upstream_ns),
                upstream_first_byte: Percentiles::from_ns(first_byte),
                upstream_time: Percentiles::from_ns(upstream_time),
            },
            client_leg,
            upstream_leg,
            status_counts: stats.status_counts().map(|(status, n)| (status.to_string(), n)).collect(),
            connections: ConnectionsReport {
                accepted: end.accepted,
                // Those the relay closed at the end are counted as open at the end; those whose
                // upstream could not be reached were closed, and left no connection record.
                closed: stats.connections_closed.saturating_sub(end.open_at_end)
                    + stats.total_connect_failures(),
                open_at_end: end.open_at_end,
                failed: stats.connections_failed,
                accept_failures: end.accept_failures,
                upstream_connect_ms: Percentiles::from_ns(&stats.upstream_connect_ns),
                framing_lost: stats.framing_lost,
                framing_lost_example: stats.framing_lost_example.clone(),
            },
            upstream_failures: UpstreamFailures {
                refused: stats.connect_failures(ConnectFailure::Refused),
                timed_out: stats.connect_failures(ConnectFailure::TimedOut),
                out_of_files: stats.connect_failures(ConnectFailure::OutOfFiles),
                other: stats.connect_failures(ConnectFailure::Other),
                total: stats.total_connect_failures(),
                example: stats.connect_failure_example().map(str::to_string),
            },
            incomplete: IncompleteReport {
                client_gone: stats.unfinished(Unfinished::ClientGone),
                upstream_gone: stats.unfinished(Unfinished::UpstreamGone),
                in_flight_at_end: stats.unfinished(Unfinished::InFlightAtStop),
                untimed: stats.unfinished(Unfinished::Untimed),
            },
            stall_examples: stats
                .examples
                .iter()
                .map(|e| StallExampleReport {
                    connection: e.connection,
                    exchange: e.sequence + 1,
                    leg: Cow::Borrowed(e.leg.as_str()),
                    at_s: e.at.as_secs_f64(),
                    bytes: e.bytes,
                    reads: e.reads,
                    pause_ms: e.gap.as_secs_f64() * 1e3,
                    bytes_before_pause: e.bytes_before_gap,
                })
                .collect(),
            verdict: Cow::Borrowed(verdict),
            findings,
        }
    }

    /// Something was relayed and nothing found: the verdict is `healthy`.
    pub fn is_healthy(&self) -> bool {
        self.verdict == "healthy"
    }

    /// No exchange was relayed: the verdict is `nothing-relayed`.
    pub fn relayed_nothing(&self) -> bool {
        self.verdict == "nothing-relayed"
    }
}
