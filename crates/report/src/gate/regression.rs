//! compare's regression gate: `slower > 5%` holds each target against the first (the
//! baseline) on one compared figure. It fails only when the target is slower by more than the
//! share with confidence: the Mann-Whitney p below alpha (`--alpha`, 0.05 by default) and
//! the ratio's whole (1 - alpha) interval past the share, so round-to-round noise never fails
//! it. Rounds too few for any difference to reach alpha cannot tell, and do not pass.

use super::check::{ThresholdResult, check};
use super::expr::{Condition, Threshold, slower_name};
use crate::model::compare::{CompareTarget, Comparison};
use nodelay_diagnose::least_p_value;
use std::borrow::Cow;

/// Every threshold held against every target: figures and findings on each target's own
/// run, `slower` against the first target's rounds at the significance level `alpha` (that of
/// `comparisons`). A saved target's figures were held when it was measured: only `slower`
/// is held against it now.
pub fn check_compare(
    thresholds: &[Threshold],
    targets: &[CompareTarget],
    comparisons: &[Comparison],
    alpha: f64,
) -> Vec<ThresholdResult> {
    let (regressions, others): (Vec<Threshold>, Vec<Threshold>) =
        thresholds.iter().cloned().partition(|t| matches!(t.condition, Condition::Slower { .. }));
    let mut results: Vec<ThresholdResult> = targets
        .iter()
        .filter(|t| t.saved.is_none())
        .flat_map(|t| check(&others, t, Some(&t.label)))
        .collect();
    for threshold in &regressions {
        let Condition::Slower { figure, percent } = threshold.condition else { continue };
        for target in targets.iter().skip(1) {
            results.push(slower(threshold, (figure, percent, alpha), &targets[0], target, comparisons));
        }
    }
    results
}

fn slower(
    threshold: &Threshold,
    (figure, percent, alpha): (&str, f64, f64),
    baseline: &CompareTarget,
    target: &CompareTarget,
    comparisons: &[Comparison],
) -> ThresholdResult {
    let rounds = |t: &CompareTarget| t.rounds.iter().filter(|r| r.figure(figure).is_some()).count();
    let comparison = comparisons.iter().find(|c| c.label == target.label && c.metric == figure);
    let base = ThresholdResult {
        threshold: threshold.text.clone(),
        target: Some(target.label.clone()),
        metric: slower_name(figure).to_string(),
        measured: None,
        limit: Some(percent),
        unit: Cow::Borrowed("%"),
        crossed: true,
        by: None,
        found: Vec::new(),
        p_value: None,
        cannot_tell: false,
        alpha: Some(alpha),
    };
    let Some(comparison) = comparison else { return base };
    if least_p_value(rounds(baseline), rounds(target)) >= alpha {
        return ThresholdResult { cannot_tell: true, ..base };
    }
    // A rate is slower when it is lower: its slowdown is the inverse ratio.
    let rate = figure == "requests_per_second";
    let slowdown = |ratio: f64| if rate { 1.0 / ratio } else { ratio };
    let ratio = slowdown(comparison.ratio);
    // The least slowdown the interval allows (the estimate itself without an interval).
    let low = match (comparison.interval_low, comparison.interval_high) {
        (Some(low), Some(high)) => slowdown(low).min(slowdown(high)),
        _ => ratio,
    };
    let measured = (ratio - 1.0) * 100.0;
    let crossed = comparison.p_value < alpha && low > 1.0 + percent / 100.0;
    ThresholdResult {
        measured: Some(measured),
        crossed,
        by: crossed.then_some(measured - percent),
        p_value: Some(comparison.p_value),
        ..base
    }
}
