//! The model of a `nodelay compare` result: each target's rounds, its rounds merged into one
//! run, and each target set against the first. Its serde form *is* the JSON contract
//! described by `schema/compare.schema.json`: rename nothing, only add.

use crate::model::bench::{BenchReport, BenchSettings};
use crate::model::doctor::DoctorReport;
use crate::model::series::Machine;
use nodelay_flags::Flag::Rounds;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The `schema` of a compare report (`schema/compare.schema.json`).
pub const COMPARE_SCHEMA_ID: &str = "nodelay-compare/1";

/// The figures of one round of one target. Plain figures, so a saved run's are read back
/// as they are (`crate::saved`), a figure a run lacks taking its default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RoundFigures {
    /// 1 for the first round.
    pub round: u32,
    /// Complete responses in the round.
    pub requests_completed: u64,
    /// Failed attempts in the round.
    pub errors: u64,
    /// The round's responses per second.
    pub requests_per_second: f64,
    /// Null when nothing completed in the round.
    pub p50_ms: Option<f64>,
    /// 90th percentile latency, in milliseconds.
    pub p90_ms: Option<f64>,
    /// 99th percentile latency, in milliseconds.
    pub p99_ms: Option<f64>,
    /// Median time to first byte, in milliseconds.
    pub first_byte_p50_ms: Option<f64>,
    /// Median of the longest pause between two reads of each response, in milliseconds.
    pub read_gap_p50_ms: Option<f64>,
}

/// One target: its rounds, and the rounds merged into one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompareTarget {
    /// The target's label, which names it in the text and the comparisons.
    pub label: String,
    /// The target's URL.
    pub url: String,
    /// The load this target got: the same options as every other target's, its own URL,
    /// address and (https) TLS.
    pub settings: BenchSettings,
    /// Why the target could not be measured (its first connection failed); its other fields
    /// are then empty.
    pub error: Option<String>,
    /// Its rounds, in the order run.
    pub rounds: Vec<RoundFigures>,
    /// Every round's responses in one run: percentiles, spectrum, histogram, timeline (the
    /// rounds one after another). Null when the target could not be measured.
    pub run: Option<BenchReport>,
    /// The doctor's diagnosis of the target (`--diagnose`); null without it, or when it failed
    /// (`diagnosis_error` says why).
    pub diagnosis: Option<DoctorReport>,
    /// Why the diagnosis failed; null when it ran or was not asked for.
    pub diagnosis_error: Option<String>,
    /// Read from a saved run (`--baseline RUN.json`) rather than measured now; null when
    /// measured in this run. Its `run` is then null: the saved file has it.
    pub saved: Option<SavedTarget>,
}

/// Where a saved target's rounds came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SavedTarget {
    /// The saved run's file, as given.
    pub file: String,
    /// The machine it was measured on, when the file says.
    pub machine: Option<Machine>,
}

/// A target set against the first on one figure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Comparison {
    /// The label of the target set against the first.
    pub label: String,
    /// The first target's label.
    pub against: String,
    /// `p50_ms`, `p99_ms` or `requests_per_second`.
    pub metric: Cow<'static, str>,
    /// This target's figure over the first's (Hodges-Lehmann estimate over the rounds: the
    /// median of every ratio of one of its rounds to one of the first's).
    pub ratio: f64,
    /// The ratio's 95 % confidence interval from the same test; null with too few rounds.
    pub interval_low: Option<f64>,
    /// The upper end of that interval; null with too few rounds.
    pub interval_high: Option<f64>,
    /// Two-sided p-value of the Mann-Whitney U test over the rounds' figures.
    pub p_value: f64,
    /// Every round of this target is on the same side of every round of the first.
    pub every_round_agrees: bool,
    /// A difference beyond noise: p < alpha (0.05 unless `--alpha`, as benchstat decides)
    /// and the whole interval beyond ±5 %.
    pub significant: bool,
    /// One sentence: "B is 4.3× slower at p50 (every round agrees; p = 0.008)".
    pub verdict: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// The model of a `nodelay compare` run: targets measured in interleaved rounds and set against
/// the first.
pub struct CompareReport {
    /// The schema id, [`COMPARE_SCHEMA_ID`].
    pub schema: Cow<'static, str>,
    /// Rounds per target asked for, interleaved.
    pub rounds: u32,
    /// Rounds every target ran to their end: the only ones counted, in `targets[].rounds` and
    /// `targets[].run` alike.
    pub rounds_completed: u32,
    /// The first target's load, kept for readers of the first version of this report; each
    /// target's own is `targets[].settings`.
    pub settings: BenchSettings,
    /// Every target, the first (the reference) first.
    pub targets: Vec<CompareTarget>,
    /// Each target after the first against the first, per figure in [`COMPARED`].
    pub comparisons: Vec<Comparison>,
    /// One verdict per target after the first: every figure that differs significantly, with
    /// its ratio; "no difference" only when none does ([`target_verdicts`]).
    pub verdicts: Vec<String>,
    /// The test behind `comparisons`, in words.
    pub test: String,
    /// The significance level of `comparisons` and the regression gate (`--alpha`, default
    /// 0.05); the intervals are (1 - alpha) ones. Runs saved before `--alpha` lack it: 0.05.
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// The machine the targets were measured from.
    pub machine: Machine,
    /// Stopped early (Ctrl-C): fewer rounds than asked were run.
    pub interrupted: bool,
    /// The round a Ctrl-C cut short: left out of every figure, the runs of it that had ended
    /// included (a round counts only whole, every target once). Null when none was cut.
    pub interrupted_round: Option<u32>,
    /// Each `--fail-if` threshold held against each target's run; empty without `--fail-if`.
    pub thresholds: Vec<crate::gate::ThresholdResult>,
}

/// The significance level of a run saved before `--alpha`.
fn default_alpha() -> f64 {
    nodelay_diagnose::ALPHA
}

/// The figures `comparisons` set side by side, with whether a larger value is worse.
pub const COMPARED: [(&str, bool); 3] = [("p50_ms", true), ("p99_ms", true), ("requests_per_second", false)];

impl RoundFigures {
    /// One round's figures from its report.
    pub fn of(round: u32, run: &BenchReport) -> RoundFigures {
        RoundFigures {
            round,
            requests_completed: run.requests_completed,
            errors: run.total_errors(),
            requests_per_second: run.requests_per_second,
            p50_ms: run.latency_ms.map(|p| p.p50),
            p90_ms: run.latency_ms.map(|p| p.p90),
            p99_ms: run.latency_ms.map(|p| p.p99),
            first_byte_p50_ms: run.first_byte_ms.map(|p| p.p50),
            read_gap_p50_ms: run.read_gap_ms.map(|p| p.p50),
        }
    }

    /// The figure named by `metric` (one of [`COMPARED`]'s).
    pub fn figure(&self, metric: &str) -> Option<f64> {
        match metric {
            "p50_ms" => self.p50_ms,
            "p99_ms" => self.p99_ms,
            "requests_per_second" => Some(self.requests_per_second),
            _ => None,
        }
    }
}

impl Comparison {
    /// `target` set against `first` on `metric` at the significance level `alpha`; `None`
    /// when either has no round with the figure.
    pub fn between(
        first: &CompareTarget,
        target: &CompareTarget,
        metric: &'static str,
        alpha: f64,
    ) -> Option<Comparison> {
        let figures =
            |t: &CompareTarget| -> Vec<f64> { t.rounds.iter().filter_map(|r| r.figure(metric)).collect() };
        let difference = nodelay_diagnose::compare_rounds_at(&figures(first), &figures(target), alpha)?;
        let higher_is_worse = higher_is_worse(metric);
        Some(Comparison {
            label: target.label.clone(),
            against: first.label.clone(),
            metric: Cow::Borrowed(metric),
            ratio: difference.ratio,
            interval_low: difference.interval.map(|(low, _)| low),
            interval_high: difference.interval.map(|(_, high)| high),
            p_value: difference.p_value,
            every_round_agrees: difference.every_round_agrees,
            significant: difference.is_real(),
            verdict: verdict(&target.label, &first.label, metric, higher_is_worse, &difference),
        })
    }
}

/// One verdict per target: the figures that differ significantly, each with its ratio and
/// p-value, then those that do not; "no difference" only when no figure differs. A p50
/// verdict of too few rounds stands alone: nothing can be significant then.
pub fn target_verdicts(comparisons: &[Comparison]) -> Vec<String> {
    let mut labels: Vec<&str> = comparisons.iter().map(|c| c.label.as_str()).collect();
    labels.dedup();
    labels
        .into_iter()
        .map(|label| {
            let of: Vec<&Comparison> = comparisons.iter().filter(|c| c.label == label).collect();
            let against = &of[0].against;
            let (differ, same): (Vec<&Comparison>, Vec<&Comparison>) = of.iter().partition(|c| c.significant);
            if differ.is_empty() {
                let p50 = of.iter().find(|c| c.metric == "p50_ms").unwrap_or(&of[0]);
                if p50.verdict.starts_with("too few rounds") {
                    return p50.verdict.clone();
                }
                let least_p = of.iter().map(|c| c.p_value).fold(f64::INFINITY, f64::min);
                let figures: Vec<&str> = of.iter().map(|c| figure_words(&c.metric)).collect();
                return format!(
                    "{label} and {against}: no difference {} beyond round-to-round noise (least p: {})",
                    join_or(&figures),
                    format_p(least_p)
                );
            }
            let differences: Vec<String> = differ
                .iter()
                .map(|c| {
                    let worse = (c.ratio > 1.0) == higher_is_worse(&c.metric);
                    let factor = if c.ratio >= 1.0 { c.ratio } else { 1.0 / c.ratio };
                    let agreement = if c.every_round_agrees { "every round agrees; " } else { "" };
                    format!(
                        "{}× {} {} ({agreement}{})",
                        format_ratio(factor),
                        if worse { "slower" } else { "faster" },
                        figure_words(&c.metric),
                        format_p(c.p_value)
                    )
                })
                .collect();
            let mut sentence = format!("{label} is {} than {against}", differences.join(", "));
            if !same.is_empty() {
                let figures: Vec<&str> = same.iter().map(|c| figure_words(&c.metric)).collect();
                let least_p = same.iter().map(|c| c.p_value).fold(f64::INFINITY, f64::min);
                sentence.push_str(&format!("; no difference {} ({})", join_or(&figures), format_p(least_p)));
            }
            sentence
        })
        .collect()
}

/// `at p50`, `at p99`, `in requests/s`.
pub(crate) fn figure_words(metric: &str) -> &'static str {
    match metric {
        "p50_ms" => "at p50",
        "p99_ms" => "at p99",
        _ => "in requests/s",
    }
}

/// A larger value of `metric` is worse (latency), or better (requests/s).
pub(crate) fn higher_is_worse(metric: &str) -> bool {
    COMPARED.iter().find(|(name, _)| *name == metric).is_some_and(|(_, worse)| *worse)
}

/// `at p50`, `at p50 or at p99`, `at p50, at p99 or in requests/s`.
fn join_or(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// "B is 4.31× slower at p50 than A (every round agrees; p = 0.008)".
fn verdict(
    label: &str,
    against: &str,
    metric: &str,
    higher_is_worse: bool,
    difference: &nodelay_diagnose::Difference,
) -> String {
    let figure = match metric {
        "p50_ms" => "at p50",
        "p99_ms" => "at p99",
        _ => "in requests/s",
    };
    let p = format_p(difference.p_value);
    let worse = (difference.ratio > 1.0) == higher_is_worse;
    let factor = if difference.ratio >= 1.0 { difference.ratio } else { 1.0 / difference.ratio };
    let word = if worse { "slower" } else { "faster" };
    if difference.every_round_agrees && difference.p_value >= difference.alpha {
        // Rounds that all agree give the smallest p-value their number allows.
        return format!(
            "too few rounds for a verdict: {label} was {}× {word} {figure} than {against} in every round, but so few rounds cannot reach p < {} ({p}; {})",
            format_ratio(factor),
            difference.alpha,
            rounds_needed(difference.alpha)
        );
    }
    if !difference.is_real() {
        return format!("{label} and {against}: no difference {figure} beyond round-to-round noise ({p})");
    }
    let agreement = if difference.every_round_agrees { "every round agrees; " } else { "" };
    format!("{label} is {}× {word} {figure} than {against} ({agreement}{p})", format_ratio(factor))
}

/// The advice for rounds too few to reach `alpha`: the fewest rounds each whose least p
/// is below it, `--rounds 5 or more` at 0.05.
pub fn rounds_needed(alpha: f64) -> String {
    let rounds = (2..=100).find(|&n| nodelay_diagnose::least_p_value(n, n) < alpha).unwrap_or(100);
    // 4 against 4 reach 0.029, but one round lost to an error leaves 4 against 3: ask for 5.
    format!("{Rounds} {} or more", (rounds + 1).max(5))
}

/// The intervals' confidence in words: `95 %` for alpha 0.05, `99.9 %` for 0.001.
pub fn confidence(alpha: f64) -> String {
    let percent = (1.0 - alpha) * 100.0;
    // Rounded to what an alpha given in a few digits means: 99.9, not 99.899999.
    let percent = (percent * 1e6).round() / 1e6;
    format!("{percent} %")
}

/// A ratio to 3 significant digits: `258`, `4.31`, `0.00362`.
pub fn format_ratio(ratio: f64) -> String {
    if !ratio.is_finite() || ratio <= 0.0 {
        return format!("{ratio}");
    }
    let digits_before_point = ratio.log10().floor() as i32 + 1;
    let decimals = (3 - digits_before_point).max(0) as usize;
    format!("{ratio:.decimals$}")
}

/// `p = 0.008`, `p < 0.001`.
pub fn format_p(p_value: f64) -> String {
    if p_value < 0.001 { "p < 0.001".into() } else { format!("p = {p_value:.3}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(metric: &'static str, ratio: f64, p_value: f64) -> Comparison {
        Comparison {
            label: "go".into(),
            against: "nginx".into(),
            metric: Cow::Borrowed(metric),
            ratio,
            interval_low: None,
            interval_high: None,
            p_value,
            every_round_agrees: p_value < 0.01,
            significant: p_value < nodelay_diagnose::ALPHA,
            verdict: format!("{metric} verdict"),
        }
    }

    #[test]
    fn the_verdict_names_every_figure_that_differs_and_no_difference_only_when_none_does() {
        // The case that was called "no difference": p50 alike, req/s and p99 apart.
        let mixed = [
            comparison("p50_ms", 1.04, 0.222),
            comparison("p99_ms", 3.15, 0.008),
            comparison("requests_per_second", 0.514, 0.008),
        ];
        assert_eq!(
            target_verdicts(&mixed),
            [
                "go is 3.15× slower at p99 (every round agrees; p = 0.008), 1.95× slower in requests/s (every round \
              agrees; p = 0.008) than nginx; no difference at p50 (p = 0.222)"
            ]
        );
        let alike = [
            comparison("p50_ms", 1.01, 0.7),
            comparison("p99_ms", 1.2, 0.3),
            comparison("requests_per_second", 0.99, 0.9),
        ];
        assert_eq!(
            target_verdicts(&alike),
            [
                "go and nginx: no difference at p50, at p99 or in requests/s beyond round-to-round noise (least p: \
              p = 0.300)"
            ]
        );
        let faster = [comparison("requests_per_second", 2.0, 0.004)];
        assert_eq!(
            target_verdicts(&faster),
            ["go is 2.00× faster in requests/s (every round agrees; p = 0.004) than nginx"]
        );
    }
}
