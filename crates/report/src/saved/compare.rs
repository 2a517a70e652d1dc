//! Targets compared over interleaved rounds, as saved (`nodelay-compare/1`): each target's
//! rounds (read as the model's own `RoundFigures`), run and diagnosis, and the verdicts
//! between them.

use super::bench::{BenchView, MachineView};
use super::doctor::DoctorView;
use crate::model::compare::RoundFigures;
use serde::Deserialize;
use serde_json::{Map, Value};

/// One target: its rounds, and its run and diagnosis when it had them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TargetView {
    pub label: String,
    pub url: String,
    /// The target's own settings (absent from the first version's reports).
    pub settings: Option<Map<String, Value>>,
    pub error: Option<String>,
    pub rounds: Vec<RoundFigures>,
    pub run: Option<BenchView>,
    pub diagnosis: Option<DoctorView>,
    pub diagnosis_error: Option<String>,
    /// Read from a saved run rather than measured (absent before `--baseline RUN.json`).
    pub saved: Option<SavedTargetView>,
}

/// Where a saved target came from.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SavedTargetView {
    pub file: String,
    pub machine: Option<MachineView>,
}

/// A target against another on one metric, and what the test made of it.
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

/// Targets compared over interleaved rounds.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CompareView {
    pub rounds: u64,
    /// Absent from the first version's reports (which counted a cut round).
    pub rounds_completed: Option<u64>,
    pub settings: Option<Map<String, Value>>,
    pub targets: Vec<TargetView>,
    /// One per target after the first; absent from reports before it was added.
    pub verdicts: Vec<String>,
    pub comparisons: Vec<ComparisonView>,
    pub test: String,
    /// The significance level (absent before `--alpha`: 0.05).
    pub alpha: Option<f64>,
    pub machine: Option<MachineView>,
    pub interrupted: bool,
    /// The round a Ctrl-C cut short, left out (absent from the first version's reports).
    pub interrupted_round: Option<u64>,
}
