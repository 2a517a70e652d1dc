//! What an experiment must remove and how its proof reads: the symptom a rule judges (a share
//! of responses and the median it inflates) and the proof line comparing a phase with the
//! baseline. Shared by the rules of every finding that an experiment proves.

use crate::finding::{Proof, ProofKind};
use crate::phase::{Experiment, Phase, PhaseSummary};

/// An experiment removed a symptom when at most this share still shows it...
pub(crate) const REMOVED_FRACTION: f64 = 0.1;
/// ...and the median the symptom inflates fell to at most this share of the baseline's.
const REMOVED_P50_RATIO: f64 = 0.5;

/// What an experiment must remove: the share of responses that show it, and the median it
/// inflates. A late first byte is judged by the first byte, not the total: a client stall on
/// top of a server stall (a POST to Python over TLS) halves the total when it is removed,
/// 88.01 ms -> 44.04 ms, a hair above half, while its first byte fell from 44 ms to 0.6 ms.
#[derive(Clone, Copy)]
pub(crate) struct Symptom {
    pub(crate) share: fn(&PhaseSummary) -> f64,
    pub(crate) median_ms: fn(&PhaseSummary) -> f64,
    pub(crate) label: &'static str,
}

/// Did `experiment` remove the symptom measured by `symptom` (a fraction of responses)?
pub(crate) fn removed(baseline: &PhaseSummary, experiment: &PhaseSummary, symptom: Symptom) -> bool {
    experiment.responses > 0
        && (symptom.share)(experiment) <= REMOVED_FRACTION
        && (symptom.median_ms)(experiment) <= (symptom.median_ms)(baseline) * REMOVED_P50_RATIO
}

pub(crate) fn proof(
    experiment: Experiment,
    baseline: &PhaseSummary,
    phase: &Phase,
    symptom: Symptom,
) -> Proof {
    proof_of(ProofKind::Experiment, experiment.describe().into(), baseline, phase, symptom)
}

/// What changing one thing (`what`) did to the symptom, against the baseline.
pub(crate) fn proof_of(
    kind: ProofKind,
    what: String,
    baseline: &PhaseSummary,
    phase: &Phase,
    symptom: Symptom,
) -> Proof {
    let summary = phase.summary();
    let gone = removed(baseline, &summary, symptom);
    let affected = ((symptom.share)(&summary) * summary.steady_responses as f64).round();
    let label = symptom.label;
    // "in 0 of 22 responses (did not remove it)" reads as a contradiction: say which half
    // of "removed" failed.
    let why_not = if !gone && (symptom.share)(&summary) <= REMOVED_FRACTION && summary.responses > 0 {
        format!(
            ", but its median fell only to {:.2} ms of {:.2} ms, not to half",
            (symptom.median_ms)(&summary),
            (symptom.median_ms)(baseline)
        )
    } else {
        String::new()
    };
    Proof {
        kind,
        experiment: what,
        baseline_p50_ms: baseline.total_p50_ms,
        experiment_p50_ms: summary.total_p50_ms,
        removed: gone,
        result: format!(
            "p50 {:.2} ms -> {:.2} ms{}; {label} in {affected} of {} responses{why_not}",
            baseline.total_p50_ms,
            summary.total_p50_ms,
            handshake_share(baseline, &summary),
            summary.steady_responses
        ),
    }
}

/// Over TLS, an experiment whose requests each open a connection pays a TLS handshake that
/// the keep-alive baseline did not: said apart, so the comparison is read for what it is.
fn handshake_share(baseline: &PhaseSummary, experiment: &PhaseSummary) -> String {
    match experiment.tls_handshake_p50_ms {
        Some(handshake) if !experiment.reuses_connections && baseline.reuses_connections => {
            format!(" (of which a TLS handshake {handshake:.2} ms)")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::tests::{phase, response};

    fn first_byte_p50_ms(summary: &PhaseSummary) -> f64 {
        summary.first_byte_p50_ms
    }

    #[test]
    fn a_symptom_gone_whose_median_stayed_says_which_half_failed() {
        let late = Symptom {
            share: PhaseSummary::late_first_byte_fraction,
            median_ms: first_byte_p50_ms,
            label: "a late first byte",
        };
        let baseline = phase(None, (0..20).map(|i| response(i, 30.0, None)).collect()).summary();
        let experiment =
            phase(Some(Experiment::QuickAck), (0..20).map(|i| response(i, 20.0, None)).collect());
        let said = proof(Experiment::QuickAck, &baseline, &experiment, late);
        assert!(!said.removed);
        assert!(said.result.contains("a late first byte in 0 of 19 responses, but its median fell only to 20.00 ms of 30.02 ms, not to half"), "{}", said.result);
    }
}
