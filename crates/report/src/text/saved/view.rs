//! What the text of a saved run reads of its JSON: small views of the contracts (schema/*),
//! holding only the fields printed. Serde ignores the rest, and a field a run lacks takes its
//! default, so that a run saved by an older nodelay of the same schema still reads.

use serde::Deserialize;
use std::collections::BTreeMap;

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default)]
pub struct PercentilesView {
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct EvidenceView {
    pub what: String,
    pub value: f64,
    pub unit: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ProofView {
    /// `experiment`, `capture-rule`, `fix-applied`, `server-view`, `upstream-diagnosis`,
    /// `probe` or `relay-rule`.
    pub kind: String,
    pub experiment: String,
    pub removed: bool,
    pub result: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct FixView {
    pub stack: String,
    pub how: String,
    pub detected: bool,
}

/// A diagnosis finding, in every kind of run that has them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct FindingView {
    pub id: String,
    pub title: String,
    pub proven: bool,
    pub confidence: String,
    pub evidence: Vec<EvidenceView>,
    pub proof: Vec<ProofView>,
    pub fix_summary: String,
    pub fix: Vec<FixView>,
}

/// What a bench run was asked to do.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct BenchSettingsView {
    pub url: String,
    pub address: String,
    pub method: String,
    pub protocol: String,
    pub connections: u64,
    pub threads: u64,
    pub requests: Option<u64>,
    pub duration_s: Option<f64>,
    pub rate_per_second: Option<f64>,
    pub keep_alive: bool,
}

impl Default for BenchSettingsView {
    fn default() -> Self {
        BenchSettingsView {
            url: String::new(),
            address: String::new(),
            method: "GET".into(),
            protocol: "http".into(),
            connections: 1,
            threads: 1,
            requests: None,
            duration_s: None,
            rate_per_second: None,
            keep_alive: true,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SuggestionView {
    pub id: String,
    pub why: String,
    pub prove: String,
}

/// A bench run (`nodelay-bench/1`), or a bench run inside a compare.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BenchView {
    pub settings: BenchSettingsView,
    pub requests_completed: u64,
    pub non_success_responses: u64,
    pub reused_connection_responses: u64,
    pub requests_unfinished: u64,
    pub elapsed_s: f64,
    pub requests_per_second: f64,
    pub response_bytes: u64,
    pub transfer_bytes_per_second: f64,
    pub latency_ms: Option<PercentilesView>,
    pub first_byte_ms: Option<PercentilesView>,
    pub read_gap_ms: Option<PercentilesView>,
    pub connect_ms: Option<PercentilesView>,
    pub tls_handshake_ms: Option<PercentilesView>,
    pub status_counts: BTreeMap<String, u64>,
    pub errors: BTreeMap<String, u64>,
    pub error_examples: BTreeMap<String, String>,
    pub connections_opened: u64,
    pub interrupted: bool,
    pub findings: Vec<FindingView>,
    pub suggestions: Vec<SuggestionView>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MergedLogView {
    pub path: String,
}

/// Interval logs merged (`nodelay-merge/1`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MergeView {
    pub logs: Vec<MergedLogView>,
    pub requests_completed: u64,
    pub span_s: f64,
    pub requests_per_second: f64,
    pub latency_ms: Option<PercentilesView>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PhaseView {
    pub name: String,
    pub description: String,
    pub responses: u64,
    pub steady_responses: u64,
    pub errors: u64,
    pub attempts: u64,
    pub total_p50_ms: f64,
    pub first_byte_p50_ms: f64,
    pub read_gap_p50_ms: f64,
    pub stalled: u64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct HopView {
    pub address: String,
    pub how_used: String,
    pub report: Option<Box<DoctorView>>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TryFixView {
    pub outcome: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ErrorPageView {
    pub responses: u64,
    pub of: u64,
    pub status_counts: BTreeMap<String, u64>,
}

/// A doctor run (`nodelay-doctor/1`), a hop of one, or a request of a scenario.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DoctorView {
    pub url: String,
    pub address: String,
    pub verdict: String,
    pub budget_s: f64,
    pub elapsed_s: f64,
    pub phases: Vec<PhaseView>,
    pub findings: Vec<FindingView>,
    pub skipped_experiments: Vec<String>,
    pub error_page: Option<ErrorPageView>,
    pub interrupted: bool,
    pub try_fix: Option<TryFixView>,
    pub hops: Vec<HopView>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct NamedDoctorView {
    pub name: String,
    #[serde(flatten)]
    pub report: DoctorView,
}

/// `nodelay doctor --scenario` (`nodelay-doctor-scenario/1`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DoctorScenarioView {
    pub url: String,
    pub verdict: String,
    pub requests: Vec<NamedDoctorView>,
    pub interrupted: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct FlowView {
    pub tcp_stream: u64,
    pub client: String,
    pub server: String,
    pub stalls: u64,
    pub time_lost_ms: f64,
    pub ack_delay_p50_ms: f64,
    pub held_by: String,
    pub wireshark_filter: String,
}

/// A capture analysed (`nodelay-pcap/1`).
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

/// A leg's stall pauses: their median is printed.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default)]
pub struct PauseView {
    pub p50: f64,
}

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

/// A relay run (`nodelay-proxy/1`).
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

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TargetView {
    pub label: String,
    pub url: String,
    pub error: Option<String>,
    pub run: Option<BenchView>,
    pub diagnosis: Option<DoctorView>,
    pub diagnosis_error: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ComparisonView {
    pub metric: String,
    pub verdict: String,
}

/// Targets compared over interleaved rounds (`nodelay-compare/1`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CompareView {
    pub rounds: u64,
    /// Absent from the first version's reports (which counted a cut round).
    pub rounds_completed: Option<u64>,
    pub targets: Vec<TargetView>,
    pub comparisons: Vec<ComparisonView>,
    pub interrupted: bool,
    /// The round a Ctrl-C cut short, left out (absent from the first version's reports).
    pub interrupted_round: Option<u64>,
}
