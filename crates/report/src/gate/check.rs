//! Holds a run's figures against its `--fail-if` thresholds: which command measures which
//! metric (asked before the run, so a threshold that could never be checked is a usage
//! error), and each threshold's result, for the text, the JSON and the exit status.

use super::expr::{Condition, Metric, Stat, Threshold};
use crate::model::bench::BenchReport;
use crate::model::compare::CompareTarget;
use crate::model::doctor::DoctorReport;
use crate::model::percentiles::Percentiles;
use nodelay_diagnose::FindingId;
use nodelay_flags::Flag::{Baseline, Diagnose, FailIf};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The command a threshold is checked on: each measures a different set of figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatedCommand {
    /// bench: every metric; its suggestions stand for findings.
    Bench,
    /// doctor: the baseline's figures and the findings.
    Doctor,
    /// compare: each target's run; findings only with `--diagnose`.
    Compare {
        /// Each target is diagnosed too.
        diagnose: bool,
        /// How many targets: `slower` needs a baseline and a target.
        targets: usize,
    },
}

/// A threshold this command cannot check, in words naming what it can; `None` when it can.
pub fn unsupported(threshold: &Threshold, command: GatedCommand) -> Option<String> {
    let doctor_measures = |metric: Metric| match metric {
        Metric::Total(stat) => matches!(stat, Stat::P50 | Stat::P90 | Stat::P99),
        Metric::FirstByte(stat) => matches!(stat, Stat::P50 | Stat::P90),
        Metric::ReadGap(stat) => stat == Stat::P50,
        Metric::ErrorShare | Metric::ErrorCount => true,
        Metric::Rps => false,
    };
    match (threshold.condition, command) {
        (Condition::Figure { metric, .. }, GatedCommand::Doctor) if !doctor_measures(metric) => {
            Some(format!(
                "{FailIf} '{threshold}': the doctor's baseline measures p50, p90, p99, first_byte.p50, \
             first_byte.p90, read_gap.p50 and errors (not {}); bench measures every metric",
                metric.name()
            ))
        }
        (Condition::Finding(_) | Condition::Stall, GatedCommand::Compare { diagnose: false, .. }) => {
            Some(format!("{FailIf} '{threshold}': compare names findings only with {Diagnose}"))
        }
        (Condition::Slower { .. }, GatedCommand::Bench | GatedCommand::Doctor) => Some(format!(
            "{FailIf} '{threshold}': slower holds a target against a baseline: nodelay compare {Baseline} URL|RUN.json URL"
        )),
        (Condition::Slower { .. }, GatedCommand::Compare { targets, .. }) if targets < 2 => Some(format!(
            "{FailIf} '{threshold}': slower needs a baseline and a target: nodelay compare {Baseline} URL|RUN.json URL"
        )),
        _ => None,
    }
}

/// One threshold held against one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThresholdResult {
    /// The threshold as written.
    pub threshold: String,
    /// compare: the target's label; null for bench and doctor.
    pub target: Option<String>,
    /// The metric's name (`p99`, `first_byte.p50`, `rps`, `errors`), or `finding`.
    pub metric: String,
    /// What was measured, in `unit`; for a finding, how many matching were reported; null
    /// when the run measured nothing to hold it against.
    pub measured: Option<f64>,
    /// The limit, in `unit`; null for a finding.
    pub limit: Option<f64>,
    /// `ms`, `req/s`, `%`, `count`.
    pub unit: Cow<'static, str>,
    /// The threshold was crossed, or could not be checked (nothing measured): the gate fails.
    pub crossed: bool,
    /// How far past the limit, in `unit` (measured less limit, as a magnitude); null when not
    /// crossed or for a finding.
    pub by: Option<f64>,
    /// The findings (doctor) or suggestions (bench) that crossed it; empty for a figure.
    pub found: Vec<String>,
    /// `slower`: the Mann-Whitney p-value of the difference across rounds; null otherwise.
    pub p_value: Option<f64>,
    /// `slower`: the rounds were too few for any difference to reach significance, so the
    /// gate cannot tell and does not pass.
    pub cannot_tell: bool,
    /// `slower`: the significance level `p_value` is held to (`--alpha`, default 0.05); null
    /// otherwise.
    pub alpha: Option<f64>,
}

/// What a run measured, as the gate reads it.
pub trait Gated {
    /// The figure of `metric`, in its unit; `None` when the run has none.
    fn figure(&self, metric: Metric) -> Option<f64>;
    /// The ids the run reported: the doctor's findings, bench's suggestions.
    fn reported_ids(&self) -> Vec<String>;
}

/// Holds `run` against every threshold.
pub fn check(thresholds: &[Threshold], run: &impl Gated, target: Option<&str>) -> Vec<ThresholdResult> {
    thresholds.iter().map(|threshold| check_one(threshold, run, target)).collect()
}

fn check_one(threshold: &Threshold, run: &impl Gated, target: Option<&str>) -> ThresholdResult {
    let base = ThresholdResult {
        threshold: threshold.text.clone(),
        target: target.map(str::to_string),
        metric: "finding".into(),
        measured: None,
        limit: None,
        unit: Cow::Borrowed("count"),
        crossed: true,
        by: None,
        found: Vec::new(),
        p_value: None,
        cannot_tell: false,
        alpha: None,
    };
    match threshold.condition {
        Condition::Figure { metric, op, limit } => {
            let measured = run.figure(metric);
            let crossed = measured.is_none_or(|value| op.holds(value, limit));
            ThresholdResult {
                metric: metric.name(),
                measured,
                limit: Some(limit),
                unit: Cow::Borrowed(metric.unit()),
                crossed,
                by: measured.filter(|_| crossed).map(|value| (value - limit).abs()),
                ..base
            }
        }
        Condition::Finding(_) | Condition::Stall => {
            let matches = |id: &str| match threshold.condition {
                Condition::Finding(wanted) => id == wanted.as_str(),
                _ => FindingId::parse(id).is_some_and(FindingId::is_stall),
            };
            let found: Vec<String> = run.reported_ids().into_iter().filter(|id| matches(id)).collect();
            ThresholdResult { measured: Some(found.len() as f64), crossed: !found.is_empty(), found, ..base }
        }
        // Held by regression.rs, against the baseline's rounds: a run alone has no baseline.
        Condition::Slower { .. } => ThresholdResult { metric: threshold.text.clone(), ..base },
    }
}

/// Any threshold crossed: the run fails its gate.
pub fn any_crossed(results: &[ThresholdResult]) -> bool {
    results.iter().any(|result| result.crossed)
}

fn stat_of(percentiles: Option<&Percentiles>, stat: Stat) -> Option<f64> {
    let p = percentiles?;
    Some(match stat {
        Stat::P50 => p.p50,
        Stat::P90 => p.p90,
        Stat::P95 => p.p95,
        Stat::P99 => p.p99,
        Stat::P999 => p.p999,
        Stat::Max => p.max,
        Stat::Mean => p.mean,
    })
}

impl Gated for BenchReport {
    fn figure(&self, metric: Metric) -> Option<f64> {
        let failed = self.total_errors();
        let errors = failed + self.non_success_responses;
        let ended = self.requests_completed + failed;
        match metric {
            Metric::Total(stat) => stat_of(self.latency_ms.as_ref(), stat),
            Metric::FirstByte(stat) => stat_of(self.first_byte_ms.as_ref(), stat),
            Metric::ReadGap(stat) => stat_of(self.read_gap_ms.as_ref(), stat),
            Metric::Rps => Some(self.requests_per_second),
            Metric::ErrorCount => Some(errors as f64),
            Metric::ErrorShare => (ended > 0).then(|| errors as f64 * 100.0 / ended as f64),
        }
    }

    fn reported_ids(&self) -> Vec<String> {
        self.suggestions.iter().map(|s| s.id.to_string()).collect()
    }
}

impl Gated for DoctorReport {
    fn figure(&self, metric: Metric) -> Option<f64> {
        let baseline = &self.phases.first()?.summary;
        let timed = baseline.responses > 0;
        let failed_calls: u64 =
            baseline.grpc_status_counts.iter().filter(|(status, _)| *status != "0").map(|(_, n)| n).sum();
        let error_pages = self.error_page.as_ref().map_or(0, |page| page.responses);
        let errors = baseline.errors + error_pages + failed_calls;
        match metric {
            Metric::Total(Stat::P50) => timed.then_some(baseline.total_p50_ms),
            Metric::Total(Stat::P90) => timed.then_some(baseline.total_p90_ms),
            Metric::Total(Stat::P99) => timed.then_some(baseline.total_p99_ms),
            Metric::FirstByte(Stat::P50) => timed.then_some(baseline.first_byte_p50_ms),
            Metric::FirstByte(Stat::P90) => timed.then_some(baseline.first_byte_p90_ms),
            Metric::ReadGap(Stat::P50) => timed.then_some(baseline.read_gap_p50_ms),
            Metric::ErrorCount => Some(errors as f64),
            Metric::ErrorShare => {
                (baseline.attempts > 0).then(|| errors as f64 * 100.0 / baseline.attempts as f64)
            }
            _ => None,
        }
    }

    fn reported_ids(&self) -> Vec<String> {
        self.findings.iter().map(|f| f.id.as_str().to_string()).collect()
    }
}

/// A compare target: its rounds' run for the figures, its diagnosis (`--diagnose`) for the
/// findings.
impl Gated for CompareTarget {
    fn figure(&self, metric: Metric) -> Option<f64> {
        self.run.as_ref()?.figure(metric)
    }

    fn reported_ids(&self) -> Vec<String> {
        self.diagnosis.as_ref().map_or_else(Vec::new, Gated::reported_ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run that measured fixed figures and reported fixed ids.
    struct Fixed(Vec<&'static str>);

    impl Gated for Fixed {
        fn figure(&self, metric: Metric) -> Option<f64> {
            match metric {
                Metric::Total(Stat::P99) => Some(63.2),
                Metric::ErrorShare => Some(0.0),
                Metric::Rps => Some(2500.0),
                _ => None,
            }
        }
        fn reported_ids(&self) -> Vec<String> {
            self.0.iter().map(|id| id.to_string()).collect()
        }
    }

    fn results(texts: &[&str], run: &Fixed) -> Vec<ThresholdResult> {
        let thresholds: Vec<Threshold> = texts.iter().map(|t| t.parse().unwrap()).collect();
        check(&thresholds, run, None)
    }

    #[test]
    fn a_figure_past_its_limit_crosses_by_the_difference() {
        let run = Fixed(vec![]);
        let [p99, errors, rps, read_gap] = <[ThresholdResult; 4]>::try_from(results(
            &["p99 > 50ms", "errors > 1%", "rps < 2000", "read_gap.p99 > 5ms"],
            &run,
        ))
        .unwrap();
        assert!(p99.crossed);
        assert!((p99.by.unwrap() - 13.2).abs() < 1e-9, "{p99:?}");
        assert_eq!((errors.crossed, &*errors.unit), (false, "%"));
        assert_eq!((rps.crossed, rps.by), (false, None));
        // Nothing measured to hold it against: the gate does not pass it.
        assert_eq!((read_gap.crossed, read_gap.measured), (true, None));
    }

    #[test]
    fn stall_is_any_nagle_finding_and_an_id_is_itself() {
        let stalled = Fixed(vec!["client-nagle-delayed-ack", "slow-first-byte"]);
        let [stall, slow, window] =
            <[ThresholdResult; 3]>::try_from(results(&["stall", "slow-first-byte", "zero-window"], &stalled))
                .unwrap();
        assert_eq!(
            (stall.crossed, stall.found.as_slice()),
            (true, &["client-nagle-delayed-ack".to_string()][..])
        );
        assert!(slow.crossed);
        assert!(!window.crossed);
        assert!(!results(&["stall"], &Fixed(vec!["slow-first-byte"]))[0].crossed);
    }

    #[test]
    fn a_command_refuses_what_it_does_not_measure() {
        let rps: Threshold = "rps < 100".parse().unwrap();
        let said = unsupported(&rps, GatedCommand::Doctor).unwrap();
        assert!(said.contains("the doctor's baseline measures p50, p90, p99"), "{said}");
        assert!(unsupported(&rps, GatedCommand::Bench).is_none());
        let stall: Threshold = "stall".parse().unwrap();
        assert!(
            unsupported(&stall, GatedCommand::Compare { diagnose: false, targets: 2 })
                .unwrap()
                .contains("--diagnose")
        );
        assert!(unsupported(&stall, GatedCommand::Compare { diagnose: true, targets: 2 }).is_none());
        let slower: Threshold = "slower > 5%".parse().unwrap();
        assert!(unsupported(&slower, GatedCommand::Compare { diagnose: false, targets: 1 }).is_some());
        assert!(unsupported(&slower, GatedCommand::Compare { diagnose: false, targets: 2 }).is_none());
    }
}
