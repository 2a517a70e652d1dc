//! The model of a `nodelay pcap` result. Its serde form is the JSON contract described by
//! `schema/pcap.schema.json`: rename nothing, only add. Findings share the doctor's types.

use nodelay_capture::{CaptureSummary, Endpoint, FlowSummary, SenderStalls, StallExample};
use nodelay_diagnose::{CaptureStalls, Finding, capture_findings, match_delayed_ack_timer, percentile};
use serde::Serialize;
use std::net::IpAddr;

/// The `schema` of a pcap report (`schema/pcap.schema.json`).
pub const PCAP_SCHEMA_ID: &str = "nodelay-pcap/1";

#[derive(Debug, Clone, PartialEq, Serialize)]
/// One stall in a capture: a segment held until the peer's delayed ACK released it.
pub struct StallReport {
    /// `server` or `client`: the side that held its data (the Nagling sender).
    pub held_by: &'static str,
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
}

#[derive(Debug, Clone, PartialEq, Serialize)]
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
    pub held_by: &'static str,
    /// The side whose delayed ACK released the data.
    pub ack_delayed_by: &'static str,
    /// Median delay of the delayed ACKs, in milliseconds.
    pub ack_delay_p50_ms: f64,
    /// The delayed-ACK timer that delay matches, naming the acking side's stack.
    pub suggested_stack: Option<String>,
    /// The flow's first stalls, in capture order.
    pub examples: Vec<StallReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
/// The model of a `nodelay pcap` analysis: the capture's totals, its stalled flows and findings.
pub struct PcapReport {
    /// The schema id, [`PCAP_SCHEMA_ID`].
    pub schema: &'static str,
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
    pub verdict: &'static str,
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
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Nanosecond samples as milliseconds, sorted for [`percentile`].
fn sorted_ms(values: impl Iterator<Item = u64>) -> Vec<f64> {
    let mut sorted: Vec<f64> = values.map(ms).collect();
    sorted.sort_by(f64::total_cmp);
    sorted
}

fn stall_report(held_by: &'static str, example: &StallExample, origin_ns: u64) -> StallReport {
    StallReport {
        held_by,
        exchange: example.exchange,
        at_s: example.at_ns.saturating_sub(origin_ns) as f64 / 1e9,
        segment_bytes: example.segment_bytes,
        held_after_packet: example.held_after_packet,
        ack_packet: example.ack_packet,
        release_packet: example.release_packet,
        ack_delay_ms: ms(example.ack_delay_ns),
        release_after_ack_us: example.release_after_ack_ns as f64 / 1e3,
        lost_ms: ms(example.lost_ns),
    }
}

fn describe_example(held_by: &str, example: &StallExample) -> String {
    let acker = if held_by == "server" { "client" } else { "server" };
    format!(
        "exchange {}: {held_by} segment #{} ({} bytes), {acker}'s pure ACK #{} after {:.1} ms, {held_by}'s next segment #{} \
         {:.0} µs after that ACK",
        example.exchange,
        example.held_after_packet,
        example.segment_bytes,
        example.ack_packet,
        ms(example.ack_delay_ns),
        example.release_packet,
        example.release_after_ack_ns as f64 / 1e3
    )
}

fn flow_report(flow: &FlowSummary, origin_ns: u64) -> FlowReport {
    let held_by = match (flow.server_stalls.count > 0, flow.client_stalls.count > 0) {
        (true, true) => "both",
        (false, true) => "client",
        _ => "server",
    };
    let delays =
        sorted_ms(flow.server_stalls.ack_delays_ns.iter().chain(&flow.client_stalls.ack_delays_ns).copied());
    let ack_delay_p50_ms = percentile(&delays, 0.5);
    let mut examples: Vec<StallReport> = flow
        .server_stalls
        .examples
        .iter()
        .map(|e| stall_report("server", e, origin_ns))
        .chain(flow.client_stalls.examples.iter().map(|e| stall_report("client", e, origin_ns)))
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
        held_by,
        ack_delayed_by: match held_by {
            "server" => "client",
            "client" => "server",
            _ => "both",
        },
        ack_delay_p50_ms,
        suggested_stack: match_delayed_ack_timer(ack_delay_p50_ms).map(|t| t.describe().to_string()),
        examples,
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

fn group(stalls: &SenderStalls, held_by_server: bool, flows: u64) -> CaptureStalls {
    let held_by = if held_by_server { "server" } else { "client" };
    let delays = sorted_ms(stalls.ack_delays_ns.iter().copied());
    let releases = sorted_ms(stalls.releases_ns.iter().copied());
    CaptureStalls {
        held_by_server,
        stalls: stalls.count,
        flows,
        time_lost_ms: ms(stalls.lost_ns),
        ack_delay_p10_ms: percentile(&delays, 0.1),
        ack_delay_p50_ms: percentile(&delays, 0.5),
        ack_delay_p90_ms: percentile(&delays, 0.9),
        release_after_ack_p50_us: percentile(&releases, 0.5) * 1e3,
        example: stalls.examples.first().map(|e| describe_example(held_by, e)).unwrap_or_default(),
    }
}

impl PcapReport {
    /// `top`: how many stalling flows to list.
    pub fn new(
        file: String,
        summary: &CaptureSummary,
        top: usize,
        warnings: Vec<String>,
        error: Option<String>,
    ) -> Self {
        let origin = summary.first_ns.unwrap_or(0);
        let count_flows = |server: bool| {
            summary
                .flows
                .iter()
                .filter(|f| if server { f.server_stalls.count > 0 } else { f.client_stalls.count > 0 })
                .count() as u64
        };
        let groups = [
            group(&summary.server_stalls, true, count_flows(true)),
            group(&summary.client_stalls, false, count_flows(false)),
        ];
        let findings = capture_findings(&groups, summary.flows_seen);
        let stalls = summary.server_stalls.count + summary.client_stalls.count;
        let listed = summary.flows.len().min(top);
        PcapReport {
            schema: PCAP_SCHEMA_ID,
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
            time_lost_ms: ms(summary.server_stalls.lost_ns.saturating_add(summary.client_stalls.lost_ns)),
            verdict: if stalls == 0 { "healthy" } else { "findings" },
            findings,
            top_flows: summary.flows.iter().take(listed).map(|f| flow_report(f, origin)).collect(),
            flows_not_listed: summary.flows_with_stalls - listed as u64,
            warnings,
            error,
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
