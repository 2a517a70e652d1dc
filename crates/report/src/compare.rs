//! The model of a `nodelay compare` result: each target's rounds, its rounds merged into one
//! run, and each target set against the first. Its serde form *is* the JSON contract
//! described by `schema/compare.schema.json`: rename nothing, only add.

use crate::bench::{BenchReport, BenchSettings};
use crate::doctor::DoctorReport;
use crate::series::Machine;
use serde::Serialize;

pub const COMPARE_SCHEMA_ID: &str = "nodelay-compare/1";

/// The figures of one round of one target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundFigures {
    /// 1 for the first round.
    pub round: u32,
    pub requests_completed: u64,
    pub errors: u64,
    pub requests_per_second: f64,
    /// Null when nothing completed in the round.
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub first_byte_p50_ms: Option<f64>,
    pub read_gap_p50_ms: Option<f64>,
}

/// One target: its rounds, and the rounds merged into one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareTarget {
    pub label: String,
    pub url: String,
    /// Why the target could not be measured (its first connection failed); its other fields
    /// are then empty.
    pub error: Option<String>,
    pub rounds: Vec<RoundFigures>,
    /// Every round's responses in one run: percentiles, spectrum, histogram, timeline (the
    /// rounds one after another). Null when the target could not be measured.
    pub run: Option<BenchReport>,
    /// The doctor's diagnosis of the target (`--diagnose`); null without it, or when it failed
    /// (`diagnosis_error` says why).
    pub diagnosis: Option<DoctorReport>,
    pub diagnosis_error: Option<String>,
}

/// A target set against the first on one figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub label: String,
    /// The first target's label.
    pub against: String,
    /// `p50_ms`, `p99_ms` or `requests_per_second`.
    pub metric: &'static str,
    /// This target's figure over the first's (Hodges-Lehmann estimate over the rounds: the
    /// median of every ratio of one of its rounds to one of the first's).
    pub ratio: f64,
    /// The ratio's 95 % confidence interval from the same test; null with too few rounds.
    pub interval_low: Option<f64>,
    pub interval_high: Option<f64>,
    /// Two-sided p-value of the Mann-Whitney U test over the rounds' figures.
    pub p_value: f64,
    /// Every round of this target is on the same side of every round of the first.
    pub every_round_agrees: bool,
    /// p < 0.05 (as benchstat decides).
    pub significant: bool,
    /// One sentence: "B is 4.3× slower at p50 (every round agrees; p = 0.008)".
    pub verdict: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareReport {
    pub schema: &'static str,
    /// Rounds per target, interleaved.
    pub rounds: u32,
    /// The load each target got (its url is the first target's; the others differ only there).
    pub settings: BenchSettings,
    pub targets: Vec<CompareTarget>,
    pub comparisons: Vec<Comparison>,
    /// The test behind `comparisons`, in words.
    pub test: &'static str,
    pub machine: Machine,
    /// Stopped early (Ctrl-C): fewer rounds than asked were run.
    pub interrupted: bool,
}
