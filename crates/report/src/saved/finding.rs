//! A diagnosis finding as saved, in every kind of run that has them: its evidence with units,
//! its proof and its fixes.

use serde::Deserialize;

/// One measured figure behind a finding, with its unit (`ms`, `%`, `bytes`, `count`, ...).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct EvidenceView {
    pub what: String,
    pub value: f64,
    pub unit: String,
}

/// What proved (or failed to prove) a finding.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ProofView {
    /// `experiment`, `capture-rule`, `fix-applied`, `server-view`, `upstream-diagnosis`,
    /// `probe` or `relay-rule`.
    pub kind: String,
    pub experiment: String,
    pub baseline_p50_ms: f64,
    pub experiment_p50_ms: f64,
    pub removed: bool,
    pub result: String,
}

/// How one stack fixes it; `detected` when the server's own header named that stack.
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
