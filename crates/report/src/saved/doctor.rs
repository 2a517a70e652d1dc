//! A diagnosis as saved: a doctor run (`nodelay-doctor/1`), a hop of one, or the requests of
//! a scenario (`nodelay-doctor-scenario/1`).

use super::finding::FindingView;
use super::server_view::ServerViewView;
use crate::model::probes::{ExpectContinueReport, IdleKeepAliveReport};
use crate::model::series::SpectrumPoint;
use serde::Deserialize;
use std::collections::BTreeMap;

/// What one phase (the baseline, an experiment) measured.
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
    pub total_p90_ms: f64,
    pub first_byte_p50_ms: f64,
    pub read_gap_p50_ms: f64,
    pub stalled: u64,
    pub latency_spectrum: Vec<SpectrumPoint>,
}

/// An upstream found behind the target, and its own diagnosis.
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

/// The responses that were an error page.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ErrorPageView {
    pub responses: u64,
    pub of: u64,
    pub status_counts: BTreeMap<String, u64>,
}

/// A note under the verdict: what a workload the client does not run would cost, or what
/// the doctor could not see.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct NoteView {
    pub id: String,
    pub title: String,
}

/// A doctor run, a hop of one, or a request of a scenario.
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
    pub notes: Vec<NoteView>,
    pub skipped_experiments: Vec<String>,
    pub error_page: Option<ErrorPageView>,
    pub interrupted: bool,
    pub try_fix: Option<TryFixView>,
    pub server_view: Option<ServerViewView>,
    pub hops: Vec<HopView>,
    pub expect_continue: Option<ExpectContinueReport>,
    pub idle_keep_alive: Option<IdleKeepAliveReport>,
}

/// A request of a scenario, diagnosed.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct NamedDoctorView {
    pub name: String,
    #[serde(flatten)]
    pub report: DoctorView,
}

/// `nodelay doctor --scenario`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DoctorScenarioView {
    pub url: String,
    pub verdict: String,
    pub requests: Vec<NamedDoctorView>,
    pub interrupted: bool,
}
