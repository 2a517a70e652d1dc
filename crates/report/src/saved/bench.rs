//! A load run as saved: a bench run (`nodelay-bench/1`, alone or a target's inside a compare),
//! or interval logs merged (`nodelay-merge/1`), which have the same figures and lack the
//! settings.

use super::finding::FindingView;
use super::server_view::ServerViewView;
use crate::model::series::{IntervalPoint, SpectrumPoint};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
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

/// One bucket of the latency histogram.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BucketView {
    pub up_to_ms: f64,
    pub count: u64,
}

/// The machine that ran the load.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MachineView {
    pub kernel: String,
    pub cores: u64,
    pub hostname: String,
}

/// What a bench run was asked to do, the settings its text heads it with
/// ([`BenchView::bench_settings`]); the page shows every setting as it is saved.
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

/// One of bench's "what these numbers suggest" (not proven), as its JSON has it.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(default)]
pub struct SuggestionView {
    pub id: String,
    pub why: String,
    pub prove: String,
}

/// An interval log of a merge.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MergedLogView {
    pub path: String,
}

/// A bench run, or a merge of interval logs (which has `logs` and `span_s`, and may lack the
/// settings).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BenchView {
    pub settings: Option<Map<String, Value>>,
    pub requests_completed: u64,
    pub non_success_responses: u64,
    pub reused_connection_responses: u64,
    pub requests_unfinished: u64,
    pub elapsed_s: f64,
    pub requests_per_second: f64,
    pub response_bytes: u64,
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
    pub error_examples: BTreeMap<String, String>,
    pub connections_opened: u64,
    pub interrupted: bool,
    pub server_view: Option<ServerViewView>,
    pub findings: Vec<FindingView>,
    pub suggestions: Vec<SuggestionView>,
    /// A merge's logs.
    pub logs: Vec<MergedLogView>,
    /// A merge's span: the first interval's start to the last one's end, in seconds.
    pub span_s: f64,
}

impl BenchView {
    pub fn url(&self) -> Option<&str> {
        self.settings.as_ref()?.get("url")?.as_str()
    }

    /// The settings the text prints; a setting of the wrong type is an error naming it.
    pub fn bench_settings(&self) -> Result<BenchSettingsView, serde_json::Error> {
        match &self.settings {
            Some(settings) => BenchSettingsView::deserialize(&Value::Object(settings.clone())),
            None => Ok(BenchSettingsView::default()),
        }
    }
}
