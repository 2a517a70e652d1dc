//! What a diagnosis says: stable ids, evidence with units, the proving experiment, fixes.

pub use nodelay_tcp::FindingId;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// How sure a finding is, as each rule grades what it saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Weak: few of the signs the rule looks for, or too little to go on.
    Low,
    /// Likely: some of the signs agree, others are missing or thin.
    Medium,
    /// The signs the rule looks for agree, on enough samples.
    High,
}

/// One measured fact. `value` is in `unit` (ms, %, bytes, count, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Evidence {
    /// What was measured, in words.
    pub what: String,
    /// The measured value, in `unit`.
    pub value: f64,
    /// The unit of `value`: `ms`, `%`, `bytes`, `count`, ...
    pub unit: Cow<'static, str>,
}

impl Evidence {
    /// A fact `what` measured at `value` in `unit`.
    pub fn new(what: impl Into<String>, value: f64, unit: &'static str) -> Self {
        Evidence { what: what.into(), value, unit: Cow::Borrowed(unit) }
    }
}

/// How a finding was proven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProofKind {
    /// A live experiment changed one thing and compared.
    Experiment,
    /// A packet capture showed the stall's packet pattern.
    CaptureRule,
    /// The fix itself was applied to the running server and the baseline measured again.
    FixApplied,
    /// Read from the server's own counters during the run (/proc: CPU, schedstat, sockets).
    ServerView,
    /// The hop's own diagnosis, run on the upstream address directly.
    UpstreamDiagnosis,
    /// One request sent to see what the server does (not a change that removes a symptom).
    Probe,
    /// An inspecting relay (`nodelay proxy`) saw the stall's pattern in the traffic it
    /// relayed: no experiment was run.
    RelayRule,
}

/// The experiment that tested the finding and what it changed (or, from a capture, the
/// packet pattern that shows it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proof {
    /// How it was proven.
    pub kind: ProofKind,
    /// What was changed or looked at, in words.
    #[serde(default)]
    pub experiment: String,
    /// Median total latency of the baseline, for an experiment; other kinds of proof carry
    /// their own figure here (a capture: the median ACK delay), or 0.
    #[serde(default)]
    pub baseline_p50_ms: f64,
    /// Median total latency with the change made, for an experiment; other kinds of proof
    /// carry their own figure here (a capture: the median release after the ACK), or 0.
    #[serde(default)]
    pub experiment_p50_ms: f64,
    /// Whether the experiment removed the symptom.
    #[serde(default)]
    pub removed: bool,
    /// What happened, in one line.
    #[serde(default)]
    pub result: String,
}

/// How to fix the cause in one stack.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Fix {
    /// The stack: a server, proxy, language or library.
    pub stack: Cow<'static, str>,
    /// What to change there.
    pub how: Cow<'static, str>,
    /// This is the stack the server runs (from its `Server` header); listed first.
    pub detected: bool,
}

impl Fix {
    /// How to fix the cause in `stack`, from the fix tables (not the detected stack).
    pub const fn of(stack: &'static str, how: &'static str) -> Fix {
        Fix { stack: Cow::Borrowed(stack), how: Cow::Borrowed(how), detected: false }
    }
}

/// One diagnosis: a cause (or health), what shows it, what proved it, and how to fix it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The stable id of the cause.
    pub id: FindingId,
    /// One line saying what was found.
    #[serde(default)]
    pub title: String,
    /// True when an experiment confirmed the cause; otherwise the finding only says what
    /// was seen.
    #[serde(default)]
    pub proven: bool,
    /// How sure the finding is.
    pub confidence: Confidence,
    /// The measured facts that show it.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// The experiments, probes or packet patterns that tested it.
    #[serde(default)]
    pub proof: Vec<Proof>,
    /// What to change, in one sentence, then per stack.
    #[serde(default)]
    pub fix_summary: String,
    /// Per-stack fixes, the detected stack first.
    #[serde(default)]
    pub fix: Vec<Fix>,
}

/// A fact the run measured that costs the measured workload nothing, said under the verdict
/// rather than as a finding: what a fresh connection would cost a client that keeps its
/// connections alive, as this one does. Never changes the verdict or the exit status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    /// The finding it would be if the workload paid it.
    pub id: FindingId,
    /// One line: what was measured, what it would cost, and why it costs nothing here.
    #[serde(default)]
    pub title: String,
    /// The measured facts that show it.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// The experiment that measured it.
    #[serde(default)]
    pub proof: Vec<Proof>,
}
