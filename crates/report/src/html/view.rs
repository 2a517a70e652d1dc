//! What the page reads of each run: small views of the JSON contracts, holding only the
//! fields drawn (serde ignores the rest, and a field a run lacks takes its default), and the
//! schema ids this build reads.

use super::error::HtmlError;
use crate::model::series::{IntervalPoint, SpectrumPoint};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The schema ids this build draws, with the kind of run each names.
pub const SCHEMAS_READ: [(&str, Kind); 6] = [
    ("nodelay-bench/1", Kind::Bench),
    ("nodelay-merge/1", Kind::Merge),
    ("nodelay-compare/1", Kind::Compare),
    ("nodelay-doctor/1", Kind::Doctor),
    (crate::model::doctor::DOCTOR_SCENARIO_SCHEMA_ID, Kind::DoctorScenario),
    ("nodelay-pcap/1", Kind::Pcap),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bench,
    Merge,
    Compare,
    Doctor,
    DoctorScenario,
    Pcap,
}

impl Kind {
    /// Fields every version of the kind's schema has written, that its page's figures come
    /// from: a file without them is no such report (the page would show zeros), while a field
    /// added later may be missing from an older file and takes its default.
    fn core_fields(self) -> &'static [&'static str] {
        match self {
            Kind::Bench | Kind::Merge => &["requests_completed", "requests_per_second", "latency_ms"],
            Kind::Compare => &["rounds", "targets"],
            Kind::Doctor => &["url", "verdict", "phases", "findings"],
            Kind::DoctorScenario => &["url", "verdict", "requests"],
            Kind::Pcap => &["packets", "flows", "stalls", "verdict"],
        }
    }
}

/// One run, read.
pub enum Run {
    /// A bench run, or a merge of interval logs (`merged`), which has the same figures.
    Bench {
        view: Box<BenchView>,
        merged: bool,
    },
    Compare(Box<CompareView>),
    Doctor(Box<DoctorView>),
    DoctorScenario(Box<DoctorScenarioView>),
    Pcap(Box<PcapView>),
}

fn schemas_read() -> String {
    SCHEMAS_READ.iter().map(|(id, _)| *id).collect::<Vec<_>>().join(", ")
}

/// Reads a run named `name` (its file, or its position) by its `schema` id.
pub fn read_run(name: &str, run: &Value) -> Result<Run, HtmlError> {
    let Some(schema) = run.get("schema").and_then(Value::as_str) else {
        return Err(HtmlError(format!(
            "{name} is not a nodelay report (it has no \"schema\" field; this nodelay reads {})",
            schemas_read()
        )));
    };
    let Some((_, kind)) = SCHEMAS_READ.iter().find(|(id, _)| *id == schema) else {
        let family = schema.split('/').next().unwrap_or(schema);
        let known_family = SCHEMAS_READ.iter().any(|(id, _)| id.split('/').next() == Some(family));
        let what = if known_family { "a schema version" } else { "a schema" };
        return Err(HtmlError(format!(
            "{name} has schema \"{schema}\", {what} this nodelay does not read (it reads {})",
            schemas_read()
        )));
    };
    let missing: Vec<&str> =
        kind.core_fields().iter().copied().filter(|field| run.get(field).is_none()).collect();
    if !missing.is_empty() {
        return Err(HtmlError(format!(
            "{name} is not a valid \"{schema}\" report: it lacks {}",
            missing.join(", ")
        )));
    }
    let parse_error =
        |e: serde_json::Error| HtmlError(format!("{name} is not a valid \"{schema}\" report: {e}"));
    Ok(match kind {
        Kind::Bench | Kind::Merge => Run::Bench {
            view: Box::new(BenchView::deserialize(run).map_err(parse_error)?),
            merged: *kind == Kind::Merge,
        },
        Kind::Compare => Run::Compare(Box::new(CompareView::deserialize(run).map_err(parse_error)?)),
        Kind::Doctor => Run::Doctor(Box::new(DoctorView::deserialize(run).map_err(parse_error)?)),
        Kind::DoctorScenario => {
            Run::DoctorScenario(Box::new(DoctorScenarioView::deserialize(run).map_err(parse_error)?))
        }
        Kind::Pcap => Run::Pcap(Box::new(PcapView::deserialize(run).map_err(parse_error)?)),
    })
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PercentilesView {
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BucketView {
    pub up_to_ms: f64,
    pub count: u64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MachineView {
    pub kernel: String,
    pub cores: u64,
    pub hostname: String,
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
    pub kind: String,
    pub experiment: String,
    pub baseline_p50_ms: f64,
    pub experiment_p50_ms: f64,
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

/// A bench run (or a merge, which has the same figures; it may lack the settings).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BenchView {
    pub settings: Option<Map<String, Value>>,
    pub requests_completed: u64,
    pub elapsed_s: f64,
    pub requests_per_second: f64,
    pub transfer_bytes_per_second: f64,
    pub latency_ms: Option<PercentilesView>,
    /// Open loop only: from when each request was sent (not when it was due).
    pub latency_uncorrected_ms: Option<PercentilesView>,
    pub first_byte_ms: Option<PercentilesView>,
    pub read_gap_ms: Option<PercentilesView>,
    pub connect_ms: Option<PercentilesView>,
    pub tls_handshake_ms: Option<PercentilesView>,
    /// What TLS settled on (https runs): `version` and `cipher` are read.
    pub tls: Option<Map<String, Value>>,
    pub latency_histogram: Vec<BucketView>,
    pub latency_spectrum: Vec<SpectrumPoint>,
    pub read_gap_spectrum: Vec<SpectrumPoint>,
    pub timeline: Vec<IntervalPoint>,
    pub machine: Option<MachineView>,
    pub status_counts: BTreeMap<String, u64>,
    pub errors: BTreeMap<String, u64>,
    pub connections_opened: u64,
    pub interrupted: bool,
    pub server_view: Option<ServerViewView>,
    pub findings: Vec<FindingView>,
    pub suggestions: Vec<SuggestionView>,
}

/// One of bench's "what these numbers suggest" (not proven), as its JSON has it.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(default)]
pub struct SuggestionView {
    pub id: String,
    pub why: String,
    pub prove: String,
}

impl BenchView {
    pub fn url(&self) -> Option<&str> {
        self.settings.as_ref()?.get("url")?.as_str()
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ThreadView {
    pub pid: i64,
    pub tid: i64,
    pub name: String,
    pub on_cpu_ms: f64,
    pub on_cpu_share: f64,
    pub waiting_for_cpu_share: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct UpstreamView {
    pub destination: String,
    pub opened: u64,
    pub opened_per_request: Option<f64>,
    pub open_at_end: u64,
    pub ports_cycled: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ProcessView {
    pub pid: i64,
    pub command: String,
}

/// The server's side of a run on this machine.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ServerViewView {
    pub available: bool,
    pub why_unavailable: Option<String>,
    pub processes: Vec<ProcessView>,
    pub requests: u64,
    pub cpu_per_request_ms: Option<f64>,
    pub cores_busy: f64,
    pub ceiling_per_second: Option<f64>,
    pub threads: Vec<ThreadView>,
    pub upstreams: Vec<UpstreamView>,
    pub namespace_connects_by_others: Option<u64>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PhaseView {
    pub name: String,
    pub description: String,
    pub responses: u64,
    pub errors: u64,
    pub total_p50_ms: f64,
    pub total_p90_ms: f64,
    pub first_byte_p50_ms: f64,
    pub read_gap_p50_ms: f64,
    pub stalled: u64,
    pub latency_spectrum: Vec<SpectrumPoint>,
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
    pub applied: bool,
    pub outcome: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DoctorView {
    pub url: String,
    pub address: String,
    pub verdict: String,
    pub budget_s: f64,
    pub elapsed_s: f64,
    pub server: Option<String>,
    pub phases: Vec<PhaseView>,
    pub findings: Vec<FindingView>,
    pub skipped_experiments: Vec<String>,
    pub interrupted: bool,
    pub try_fix: Option<TryFixView>,
    pub server_view: Option<ServerViewView>,
    pub hops: Vec<HopView>,
    pub expect_continue: Option<crate::model::probes::ExpectContinueReport>,
    pub idle_keep_alive: Option<crate::model::probes::IdleKeepAliveReport>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct NamedDoctorView {
    pub name: String,
    #[serde(flatten)]
    pub report: DoctorView,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DoctorScenarioView {
    pub url: String,
    pub verdict: String,
    pub requests: Vec<NamedDoctorView>,
}

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

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RoundView {
    pub round: u64,
    pub requests_completed: u64,
    pub errors: u64,
    pub requests_per_second: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TargetView {
    pub label: String,
    pub url: String,
    /// The target's own settings (absent from the first version's reports).
    pub settings: Option<Map<String, Value>>,
    pub error: Option<String>,
    pub rounds: Vec<RoundView>,
    pub run: Option<BenchView>,
    pub diagnosis: Option<DoctorView>,
    pub diagnosis_error: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ComparisonView {
    pub label: String,
    pub against: String,
    pub metric: String,
    pub ratio: f64,
    pub interval_low: Option<f64>,
    pub interval_high: Option<f64>,
    pub p_value: f64,
    pub every_round_agrees: bool,
    pub significant: bool,
    pub verdict: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CompareView {
    pub rounds: u64,
    /// Absent from the first version's reports (which counted a cut round).
    pub rounds_completed: Option<u64>,
    pub settings: Option<Map<String, Value>>,
    pub targets: Vec<TargetView>,
    pub comparisons: Vec<ComparisonView>,
    pub test: String,
    pub machine: Option<MachineView>,
    pub interrupted: bool,
    pub interrupted_round: Option<u64>,
}
