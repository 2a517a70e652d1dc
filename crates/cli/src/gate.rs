//! The exit status of a run held against `--fail-if` (nodelay_load::GateArgs).

use crate::exit::Outcome;
use nodelay_report::gate::{ThresholdResult, any_crossed};

/// A crossed threshold fails the gate, unless the run already measured nothing (that says more).
pub fn outcome(results: &[ThresholdResult], otherwise: Outcome) -> Outcome {
    match otherwise {
        Outcome::Failed | Outcome::Usage => otherwise,
        _ if any_crossed(results) => Outcome::ThresholdCrossed,
        _ => otherwise,
    }
}
