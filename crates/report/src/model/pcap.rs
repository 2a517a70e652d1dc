//! The model of a `nodelay pcap` result. Its serde form is the JSON contract described by
//! `schema/pcap.schema.json`: rename nothing, only add. Findings share the doctor's types.

use nodelay_capture::analysis::{Budget, ExchangeTiming, Retransmissions, ZeroWindows};
use nodelay_capture::{CaptureSummary, Endpoint, FlowSummary, HoldKind, StallExample};
use nodelay_diagnose::{
    CaptureObservations, Diagnosis, Finding, Verdict, capture_time, match_delayed_ack_timer,
};
use nodelay_tcp::quantile::{distribution_ns, quantile_ms};
use nodelay_tcp::time::ms_from_ns as ms;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::net::IpAddr;

/// The `schema` of a pcap report (`schema/pcap.schema.json`).
pub const PCAP_SCHEMA_ID: &str = "nodelay-pcap/1";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// One stall in a capture: a segment held until the peer's delayed ACK released it.
pub struct StallReport {
    /// `server` or `client`: the side that held its data (the Nagling sender).
    pub held_by: Cow<'static, str>,
    /// Request/response exchange on the connection (1 = first request).
    pub exchange: u32,
    /// Seconds since the first packet of the capture.
    pub at_s: f64,
    /// Size of the segment whose ACK was delayed, in bytes.
    pub segment_bytes: u32,
    /// The capture's number of the segment the sender held its next data after.
    pub held_after_packet: u64,
    /// The capture's number of the peer's delayed pure ACK.
    pub ack_packet: u64,
    /// The capture's number of the segment the ACK released.
    pub release_packet: u64,
    /// How long the peer delayed its ACK, in milliseconds.
    pub ack_delay_ms: f64,
    /// From that ACK to the released segment, in microseconds.
    pub release_after_ack_us: f64,
    /// From the held-after segment to the release, in milliseconds.
    pub lost_ms: f64,
    /// `delayed-ack` (the peer's timer released it) or `round-trip` (an ACK sent at once).
    pub kind: Cow<'static, str>,
    /// The peer's own ACK delay: `ack_delay_ms` less its side of the round trip.
    pub peer_ack_delay_ms: f64,
    /// The flow's round trip as the capture had timed it then (0: unknown).
    pub rtt_ms: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// One TCP flow of a capture that stalled: its figures and its first stalls.
pub struct FlowReport {
    /// Wireshark's `tcp.stream` index of the flow's conversation.
    pub tcp_stream: u64,
    /// A Wireshark display filter that shows this flow.
    pub wireshark_filter: String,
    /// The client's address, IP:port (IPv6 as `[addr]:port`).
    pub client: String,
    /// The server's address, IP:port.
    pub server: String,
    /// Roles come from the SYN; without it the side that sent data first is the client.
    pub roles_from_handshake: bool,
    /// Packets of the flow.
    pub packets: u64,
    /// Request/response exchanges seen on it.
    pub exchanges: u32,
    /// Payload bytes the client sent.
    pub client_bytes: u64,
    /// Payload bytes the server sent.
    pub server_bytes: u64,
    /// Segments sent again.
    pub retransmissions: u64,
    /// From the SYN to the client's first ACK, in milliseconds; null without a handshake in the
    /// capture.
    pub handshake_rtt_ms: Option<f64>,
    /// Stalls on the flow, both sides.
    pub stalls: u64,
    /// Time the stalls held data, in milliseconds.
    pub time_lost_ms: f64,
    /// `server`, `client` or `both`.
    pub held_by: Cow<'static, str>,
    /// The side whose delayed ACK released the data.
    pub ack_delayed_by: Cow<'static, str>,
    /// Median delay of the delayed ACKs, in milliseconds.
    pub ack_delay_p50_ms: f64,
    /// The delayed-ACK timer that delay matches, naming the acking side's stack.
    pub suggested_stack: Option<String>,
    /// The flow's first stalls, in capture order.
    pub examples: Vec<StallReport>,
    /// Of `stalls`, holds of one round trip (released by an ACK sent at once).
    pub round_trip_holds: u64,
    /// The flow's round trip, from its handshake and ACKs; null when unknown.
    pub rtt_ms: Option<f64>,
    /// Where the capture was taken on this flow's path: `client`, `server`, `between`; null
    /// when the round trip is too short (or unknown) to tell.
    pub capture_position: Option<Cow<'static, str>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// The model of a `nodelay pcap` analysis: the capture's totals, its stalled flows and findings.
pub struct PcapReport {
    /// The schema id, [`PCAP_SCHEMA_ID`].
    pub schema: Cow<'static, str>,
    /// The capture file as given.
    pub file: String,
    /// Packets read.
    pub packets: u64,
    /// Of them, TCP packets.
    pub tcp_packets: u64,
    /// Packets not TCP, or not decodable.
    pub other_packets: u64,
    /// Captured bytes of all packets.
    pub bytes: u64,
    /// From the first packet to the last, in seconds.
    pub duration_s: f64,
    /// TCP flows seen.
    pub flows: u64,
    /// Of them, flows with at least one stall.
    pub flows_with_stalls: u64,
    /// Stalls in all flows.
    pub stalls: u64,
    /// Time the stalls held data, all flows, in milliseconds.
    pub time_lost_ms: f64,
    /// `healthy` or `findings`.
    pub verdict: Cow<'static, str>,
    /// What the capture shows, in the doctor's finding contract (proof of kind `capture-rule`).
    pub findings: Vec<Finding>,
    /// The flows with stalls, most time lost first (up to --top).
    pub top_flows: Vec<FlowReport>,
    /// Flows with stalls not listed in `top_flows`.
    pub flows_not_listed: u64,
    /// What might make the figures wrong (a truncated capture, missing handshakes, ...).
    pub warnings: Vec<String>,
    /// Why reading stopped early, when it did; the figures cover the packets before it.
    pub error: Option<String>,
    /// Of `stalls`, holds of one round trip (released by an ACK sent at once).
    pub round_trip_holds: u64,
    /// Where the exchanges of all flows spent their time.
    pub time: TimeReport,
    /// Round trips of the flows, from their handshakes and ACKs.
    pub rtt: RttReport,
    /// Segments resent, timeouts and their series.
    pub retransmissions: RetransmissionReport,
    /// Zero windows of 200 ms or more.
    pub zero_windows: ZeroWindowReport,
    /// Flows that lost time to a slow path, a client's wait, a late first byte, a timeout or a
    /// zero window, the most first (up to --top).
    pub slow_flows: Vec<SlowFlowReport>,
    /// Such flows not listed in `slow_flows`.
    pub slow_flows_not_listed: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// Where exchanges spent their time, in milliseconds, summed over flows.
pub struct TimeReport {
    /// Exchanges with a request and a response.
    pub exchanges: u64,
    /// Handshakes seen whole.
    pub handshakes: u64,
    /// Round trips: one per handshake and one per exchange.
    pub network_ms: f64,
    /// Clients' waits between their handshake and their first request.
    pub client_wait_ms: f64,
    /// Clients' idle time between a response and their next request (not counted below).
    pub client_idle_ms: f64,
    /// Servers' time before their first byte, net of the round trip.
    pub server_ms: f64,
    /// Requests and responses on the wire, first byte to last.
    pub transfer_ms: f64,
    /// Of the transfer, time Nagle held data.
    pub nagle_held_ms: f64,
    /// `network`, `client`, `server` or `transfer`: the part that took most; null: none.
    pub dominant: Option<Cow<'static, str>>,
    /// Its share of network, client wait, server and transfer, in %.
    pub dominant_percent: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// The flows' round trips.
pub struct RttReport {
    /// Flows whose round trip is known (both sides of the capture point).
    pub flows: u64,
    /// Smallest, median and largest round trip, in milliseconds (null: none known).
    pub min_ms: Option<f64>,
    /// Median round trip.
    pub p50_ms: Option<f64>,
    /// Largest round trip.
    pub max_ms: Option<f64>,
    /// Flows by where the capture was taken on their path.
    pub captured_at_client: u64,
    /// Flows captured next to the server.
    pub captured_at_server: u64,
    /// Flows captured between the two.
    pub captured_between: u64,
    /// Flows whose round trip is 200 ms or more.
    pub slow_path_flows: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// Retransmissions in a capture (or a flow).
pub struct RetransmissionReport {
    /// Segments that resent bytes already sent (SYNs included).
    pub segments: u64,
    /// Of them, resends after a timeout.
    pub timeouts: u64,
    /// Series: one segment resent until an ACK covered it (or never).
    pub series: u64,
    /// Series that no ACK ended: the peer was gone.
    pub unanswered: u64,
    /// Time the series waited on timers, in milliseconds.
    pub lost_ms: f64,
    /// The worst series.
    pub worst: Option<SeriesReport>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// A segment resent after timeouts.
pub struct SeriesReport {
    /// Wireshark's `tcp.stream` of its flow.
    pub tcp_stream: u64,
    /// `client` or `server`: who resent.
    pub sent_by: Cow<'static, str>,
    /// A SYN (or SYN-ACK): the connection being opened.
    pub syn: bool,
    /// Capture packet number of the first resend.
    pub first_packet: u64,
    /// Each resend's time after the original transmission, in seconds.
    pub resent_after_s: Vec<f64>,
    /// An ACK covered the resent bytes at last.
    pub answered: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// Zero windows in a capture (or a flow).
pub struct ZeroWindowReport {
    /// Zero windows of 200 ms or more.
    pub count: u64,
    /// Their time, summed, in milliseconds.
    pub total_ms: f64,
    /// Window probes during them.
    pub probes: u64,
    /// The longest.
    pub longest: Option<WindowReport>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// One zero window.
pub struct WindowReport {
    /// Wireshark's `tcp.stream` of its flow.
    pub tcp_stream: u64,
    /// `client` or `server`: the receiver that shut its window.
    pub receiver: Cow<'static, str>,
    /// Seconds since the capture's first packet.
    pub at_s: f64,
    /// How long it stayed shut, in milliseconds.
    pub duration_ms: f64,
    /// Capture packet number of the first zero window.
    pub first_packet: u64,
    /// Capture packet number of the segment that opened it (null: never did).
    pub reopened_packet: Option<u64>,
    /// The sender's probes meanwhile.
    pub probes: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// One exchange, its time split up (in milliseconds).
pub struct ExchangeReport {
    /// The exchange's number on its connection (1 = first request).
    pub exchange: u32,
    /// Seconds since the capture's first packet.
    pub at_s: f64,
    /// Capture packet number of the request's first segment.
    pub request_packet: u64,
    /// The client's wait before the request.
    pub client_wait_ms: f64,
    /// The wait followed the handshake (else the previous response).
    pub after_handshake: bool,
    /// The server's ACK of the request, net of the round trip (null: none before the response).
    pub server_ack_ms: Option<f64>,
    /// The server's time before its first byte, net of the round trip.
    pub server_ms: f64,
    /// Capture packet number of the response's first segment.
    pub response_packet: u64,
    /// Request and response on the wire.
    pub transfer_ms: f64,
    /// The round trip it paid.
    pub rtt_ms: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// A flow that lost time to something other than Nagle.
pub struct SlowFlowReport {
    /// Wireshark's `tcp.stream` index of the flow's conversation.
    pub tcp_stream: u64,
    /// A Wireshark display filter that shows this flow.
    pub wireshark_filter: String,
    /// The client's address, IP:port.
    pub client: String,
    /// The server's address, IP:port.
    pub server: String,
    /// The flow's round trip (null: unknown).
    pub rtt_ms: Option<f64>,
    /// Of it, from the capture point to the client and back.
    pub client_side_ms: Option<f64>,
    /// Of it, from the capture point to the server and back.
    pub server_side_ms: Option<f64>,
    /// `client`, `server`, `between` or null.
    pub capture_position: Option<Cow<'static, str>>,
    /// Where its exchanges spent their time.
    pub time: TimeReport,
    /// Time lost to what made it slow, in milliseconds.
    pub lost_ms: f64,
    /// The exchange whose first byte took longest.
    pub slowest_first_byte: Option<ExchangeReport>,
    /// The longest wait between the handshake and the first request.
    pub longest_client_wait: Option<ExchangeReport>,
    /// Its retransmissions.
    pub retransmissions: RetransmissionReport,
    /// Its zero windows.
    pub zero_windows: ZeroWindowReport,
}

fn stall_report(held_by: &'static str, example: &StallExample, origin_ns: u64) -> StallReport {
    StallReport {
        held_by: Cow::Borrowed(held_by),
        exchange: example.exchange,
        at_s: example.at_ns.saturating_sub(origin_ns) as f64 / 1e9,
        segment_bytes: example.segment_bytes,
        held_after_packet: example.held_after_packet,
        ack_packet: example.ack_packet,
        release_packet: example.release_packet,
        ack_delay_ms: ms(example.ack_delay_ns),
        release_after_ack_us: example.release_after_ack_ns as f64 / 1e3,
        lost_ms: ms(example.lost_ns),
        kind: Cow::Borrowed(hold_kind(example.kind)),
        peer_ack_delay_ms: ms(example.peer_ack_delay_ns),
        rtt_ms: ms(example.rtt_ns),
    }
}

fn hold_kind(kind: HoldKind) -> &'static str {
    match kind {
        HoldKind::DelayedAck => "delayed-ack",
        HoldKind::RoundTrip => "round-trip",
    }
}

fn side(by_server: bool) -> &'static str {
    if by_server { "server" } else { "client" }
}

fn time_report(budget: &Budget, nagle_held_ns: u64) -> TimeReport {
    let time = capture_time(budget);
    let dominant = time.dominant();
    TimeReport {
        exchanges: budget.exchanges,
        handshakes: budget.handshakes,
        network_ms: time.network_ms,
        client_wait_ms: time.client_wait_ms,
        client_idle_ms: ms(budget.client_idle_ns),
        server_ms: time.server_ms,
        transfer_ms: time.transfer_ms,
        nagle_held_ms: ms(nagle_held_ns),
        dominant: dominant.map(|(part, _)| Cow::Borrowed(part)),
        dominant_percent: dominant.map_or(0.0, |(_, part)| part / time.total_ms() * 100.0),
    }
}

fn retransmission_report(losses: &Retransmissions, stream: u64) -> RetransmissionReport {
    RetransmissionReport {
        segments: losses.segments,
        timeouts: losses.timeouts,
        series: losses.series,
        unanswered: losses.unanswered,
        lost_ms: ms(losses.lost_ns),
        worst: losses.worst.map(|series| SeriesReport {
            tcp_stream: stream,
            sent_by: Cow::Borrowed(side(series.by_server)),
            syn: series.syn,
            first_packet: series.first_packet,
            resent_after_s: series.resent_after().iter().map(|ns| *ns as f64 / 1e9).collect(),
            answered: series.answered,
        }),
    }
}

fn zero_window_report(windows: &ZeroWindows, stream: u64, origin_ns: u64) -> ZeroWindowReport {
    ZeroWindowReport {
        count: windows.count,
        total_ms: ms(windows.total_ns),
        probes: windows.probes,
        longest: windows.longest.map(|window| WindowReport {
            tcp_stream: stream,
            receiver: Cow::Borrowed(side(window.by_server)),
            at_s: window.at_ns.saturating_sub(origin_ns) as f64 / 1e9,
            duration_ms: ms(window.duration_ns),
            first_packet: window.first_packet,
            reopened_packet: (window.reopened_packet > 0).then_some(window.reopened_packet),
            probes: window.probes,
        }),
    }
}

fn exchange_report(timing: &ExchangeTiming, origin_ns: u64) -> ExchangeReport {
    ExchangeReport {
        exchange: timing.exchange,
        at_s: timing.at_ns.saturating_sub(origin_ns) as f64 / 1e9,
        request_packet: timing.request_packet,
        client_wait_ms: ms(timing.client_wait_ns),
        after_handshake: timing.after_handshake,
        server_ack_ms: timing.server_ack_ns.map(ms),
        server_ms: ms(timing.server_ns),
        response_packet: timing.response_packet,
        transfer_ms: ms(timing.transfer_ns),
        rtt_ms: ms(timing.rtt_ns),
    }
}

fn slow_flow_report(flow: &FlowSummary, origin_ns: u64) -> SlowFlowReport {
    SlowFlowReport {
        tcp_stream: flow.stream,
        wireshark_filter: wireshark_filter(flow.stream, flow.client, flow.server),
        client: format_endpoint(flow.client),
        server: format_endpoint(flow.server),
        rtt_ms: flow.legs.rtt_ns().map(ms),
        client_side_ms: flow.legs.client_ns.map(ms),
        server_side_ms: flow.legs.server_ns.map(ms),
        capture_position: flow.legs.position().map(|p| Cow::Borrowed(p.as_str())),
        time: time_report(&flow.budget, flow.lost_ns()),
        lost_ms: ms(flow.slow_ns()),
        slowest_first_byte: flow
            .slowest_first_byte
            .filter(|_| flow.late_first_bytes > 0)
            .map(|t| exchange_report(&t, origin_ns)),
        longest_client_wait: flow
            .longest_client_wait
            .filter(|_| flow.client_waits > 0)
            .map(|t| exchange_report(&t, origin_ns)),
        retransmissions: retransmission_report(&flow.losses, flow.stream),
        zero_windows: zero_window_report(&flow.zero_windows, flow.stream, origin_ns),
    }
}

fn flow_report(flow: &FlowSummary, origin_ns: u64) -> FlowReport {
    let server_held = flow.server_stalls.count + flow.server_round_trips.count > 0;
    let client_held = flow.client_stalls.count + flow.client_round_trips.count > 0;
    let held_by = match (server_held, client_held) {
        (true, true) => "both",
        (false, true) => "client",
        _ => "server",
    };
    let delays = distribution_ns(
        [&flow.server_stalls, &flow.client_stalls, &flow.server_round_trips, &flow.client_round_trips]
            .into_iter()
            .flat_map(|stalls| stalls.ack_delays_ns.iter().copied()),
    );
    let ack_delay_p50_ms = quantile_ms(&delays, 0.5);
    let mut examples: Vec<StallReport> = flow
        .server_stalls
        .examples
        .iter()
        .map(|e| stall_report("server", e, origin_ns))
        .chain(flow.client_stalls.examples.iter().map(|e| stall_report("client", e, origin_ns)))
        .chain(flow.server_round_trips.examples.iter().map(|e| stall_report("server", e, origin_ns)))
        .chain(flow.client_round_trips.examples.iter().map(|e| stall_report("client", e, origin_ns)))
        .collect();
    examples.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    FlowReport {
        tcp_stream: flow.stream,
        wireshark_filter: wireshark_filter(flow.stream, flow.client, flow.server),
        client: format_endpoint(flow.client),
        server: format_endpoint(flow.server),
        roles_from_handshake: flow.roles_from_handshake,
        packets: flow.packets,
        exchanges: flow.exchanges,
        client_bytes: flow.client_bytes,
        server_bytes: flow.server_bytes,
        retransmissions: flow.retransmissions,
        handshake_rtt_ms: flow.handshake_rtt_ns.map(ms),
        stalls: flow.stalls(),
        time_lost_ms: ms(flow.lost_ns()),
        held_by: Cow::Borrowed(held_by),
        ack_delayed_by: match held_by {
            "server" => Cow::Borrowed("client"),
            "client" => Cow::Borrowed("server"),
            _ => Cow::Borrowed("both"),
        },
        ack_delay_p50_ms,
        suggested_stack: match_delayed_ack_timer(ack_delay_p50_ms).map(|t| t.describe().to_string()),
        examples,
        round_trip_holds: flow.server_round_trips.count + flow.client_round_trips.count,
        rtt_ms: flow.legs.rtt_ns().map(ms),
        capture_position: flow.legs.position().map(|p| Cow::Borrowed(p.as_str())),
    }
}

fn format_endpoint((ip, port): (IpAddr, u16)) -> String {
    std::net::SocketAddr::new(ip, port).to_string()
}

/// `tcp.stream eq N` and the flow's addresses and ports (`ip.addr==127.0.0.1 &&
/// tcp.port==46043 && tcp.port==51234`): the addresses make the filter readable, and should
/// Wireshark number the capture differently (TCP that nodelay does not decode, such as
/// tunnels), it shows nothing rather than another flow.
fn wireshark_filter(
    stream: u64,
    (client_ip, client_port): Endpoint,
    (server_ip, server_port): Endpoint,
) -> String {
    let field = if client_ip.is_ipv4() { "ip.addr" } else { "ipv6.addr" };
    let mut terms = vec![format!("tcp.stream eq {stream}"), format!("{field}=={client_ip}")];
    if server_ip != client_ip {
        terms.push(format!("{field}=={server_ip}"));
    }
    terms.push(format!("tcp.port=={client_port}"));
    if server_port != client_port {
        terms.push(format!("tcp.port=={server_port}"));
    }
    terms.join(" && ")
}

impl PcapReport {
    /// `top`: how many stalling flows to list. `observations` and `diagnosis` are what the
    /// rules made of `summary` (`nodelay_diagnose::CaptureObservations`).
    pub fn new(
        file: String,
        summary: &CaptureSummary,
        observations: &CaptureObservations,
        diagnosis: Diagnosis,
        top: usize,
        warnings: Vec<String>,
        error: Option<String>,
    ) -> Self {
        let origin = summary.first_ns.unwrap_or(0);
        let (rtts_ms, path) = (&observations.rtts_ms, &observations.path);
        let round_trip_holds = summary.server_round_trips.count + summary.client_round_trips.count;
        let stalls = summary.server_stalls.count + summary.client_stalls.count + round_trip_holds;
        let nagle_lost_ns = [
            &summary.server_stalls,
            &summary.client_stalls,
            &summary.server_round_trips,
            &summary.client_round_trips,
        ]
        .iter()
        .fold(0u64, |sum, s| sum.saturating_add(s.lost_ns));
        let listed = summary.flows.len().min(top);
        let slow_listed = summary.slow_flows.len().min(top);
        // A capture with nothing in it has nothing wrong with it either.
        let verdict = match diagnosis.verdict() {
            Verdict::NothingSeen => Verdict::Healthy,
            verdict => verdict,
        };
        PcapReport {
            schema: Cow::Borrowed(PCAP_SCHEMA_ID),
            file,
            packets: summary.read.packets,
            tcp_packets: summary.tcp_packets,
            other_packets: summary.other_packets,
            bytes: summary.read.bytes,
            duration_s: match (summary.first_ns, summary.last_ns) {
                (Some(first), Some(last)) => last.saturating_sub(first) as f64 / 1e9,
                _ => 0.0,
            },
            flows: summary.flows_seen,
            flows_with_stalls: summary.flows_with_stalls,
            stalls,
            time_lost_ms: ms(nagle_lost_ns),
            verdict: Cow::Borrowed(verdict.as_str()),
            findings: diagnosis.findings,
            top_flows: summary.flows.iter().take(listed).map(|f| flow_report(f, origin)).collect(),
            flows_not_listed: summary.flows_with_stalls - listed as u64,
            warnings,
            error,
            round_trip_holds,
            time: time_report(&summary.budget, nagle_lost_ns),
            rtt: RttReport {
                flows: summary.flows_with_rtt,
                min_ms: rtts_ms.first().copied(),
                p50_ms: path.rtt_p50_ms,
                max_ms: rtts_ms.last().copied(),
                captured_at_client: summary.positions[0],
                captured_at_server: summary.positions[1],
                captured_between: summary.positions[2],
                slow_path_flows: summary.slow_path_flows,
            },
            retransmissions: retransmission_report(&summary.losses, summary.worst_series_stream.unwrap_or(0)),
            zero_windows: zero_window_report(
                &summary.zero_windows,
                summary.longest_zero_window_stream.unwrap_or(0),
                origin,
            ),
            slow_flows: summary
                .slow_flows
                .iter()
                .take(slow_listed)
                .map(|f| slow_flow_report(f, origin))
                .collect(),
            slow_flows_not_listed: (summary.slow_flows.len() - slow_listed) as u64
                + summary.slow_flows_not_kept,
        }
    }

    /// Nothing was found: the verdict is `healthy`.
    pub fn is_healthy(&self) -> bool {
        self.verdict == "healthy"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(text: &str) -> Endpoint {
        let address: std::net::SocketAddr = text.parse().unwrap();
        (address.ip(), address.port())
    }

    #[test]
    fn wireshark_filters_name_the_stream_and_both_ends() {
        assert_eq!(
            wireshark_filter(7, end("127.0.0.1:46043"), end("127.0.0.1:51234")),
            "tcp.stream eq 7 && ip.addr==127.0.0.1 && tcp.port==46043 && tcp.port==51234"
        );
        assert_eq!(
            wireshark_filter(0, end("10.0.0.1:40000"), end("10.0.0.2:8080")),
            "tcp.stream eq 0 && ip.addr==10.0.0.1 && ip.addr==10.0.0.2 && tcp.port==40000 && tcp.port==8080"
        );
        assert_eq!(
            wireshark_filter(12, end("[fd00::1]:179"), end("[fd00::2]:179")),
            "tcp.stream eq 12 && ipv6.addr==fd00::1 && ipv6.addr==fd00::2 && tcp.port==179"
        );
    }
}
