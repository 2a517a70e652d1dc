//! Traffic analysed, as saved: a capture (`nodelay-pcap/1`) with its flows that stalled, and a
//! relay run (`nodelay-proxy/1`) with each part of an exchange and each leg.

use super::bench::PercentilesView;
use super::finding::FindingView;
use serde::Deserialize;
use std::collections::BTreeMap;

/// One stall of a flow, as an example.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct StallView {
    pub held_by: String,
    pub exchange: u64,
    pub at_s: f64,
    pub segment_bytes: u64,
    pub ack_delay_ms: f64,
    pub lost_ms: f64,
}

/// A TCP flow of a capture that stalled.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct FlowView {
    pub tcp_stream: u64,
    pub wireshark_filter: String,
    pub client: String,
    pub server: String,
    pub packets: u64,
    pub exchanges: u64,
    pub stalls: u64,
    pub time_lost_ms: f64,
    pub held_by: String,
    pub ack_delay_p50_ms: f64,
    pub suggested_stack: Option<String>,
    pub examples: Vec<StallView>,
}

/// A capture analysed.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PcapView {
    pub file: String,
    pub packets: u64,
    pub tcp_packets: u64,
    pub bytes: u64,
    pub duration_s: f64,
    pub flows: u64,
    pub flows_with_stalls: u64,
    pub stalls: u64,
    pub time_lost_ms: f64,
    pub verdict: String,
    pub findings: Vec<FindingView>,
    pub top_flows: Vec<FlowView>,
    pub flows_not_listed: u64,
    pub warnings: Vec<String>,
    pub error: Option<String>,
}

/// A leg's stall pauses: their median is shown.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default)]
pub struct PauseView {
    pub p50: f64,
}

/// One leg of a relay (client or upstream): its messages, and those that stalled.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct LegView {
    pub messages_are: String,
    pub messages: u64,
    pub stalled: u64,
    pub stall_pause_ms: Option<PauseView>,
    pub time_lost_ms: f64,
    pub held_by: String,
}

/// Each part of a relayed exchange.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ExchangePartsView {
    pub total: Option<PercentilesView>,
    pub client_leg: Option<PercentilesView>,
    pub relay: Option<PercentilesView>,
    pub upstream: Option<PercentilesView>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ProxyConnectionsView {
    pub accepted: u64,
    pub closed: u64,
    pub open_at_end: u64,
    pub failed: u64,
}

/// A relay run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ProxyView {
    pub listen: String,
    pub upstream: String,
    pub elapsed_s: f64,
    pub stopped_by: String,
    pub exchanges: u64,
    pub exchanges_per_second: f64,
    pub latency_ms: ExchangePartsView,
    pub client_leg: LegView,
    pub upstream_leg: LegView,
    pub status_counts: BTreeMap<String, u64>,
    pub connections: ProxyConnectionsView,
    pub verdict: String,
    pub findings: Vec<FindingView>,
}
