//! The `--fail-if` section under a report: each threshold with ✔ or ✘, what was measured and,
//! when crossed, by how much.

use super::FittedText;
use super::wrap::wrap;
use crate::format::format_duration_ms;
use crate::gate::ThresholdResult;
use nodelay_flags::Flag::FailIf;

impl FittedText {
    /// The thresholds' section; empty without thresholds.
    pub fn thresholds(&self, results: &[ThresholdResult]) -> String {
        if results.is_empty() {
            return String::new();
        }
        let crossed = results.iter().filter(|r| r.crossed).count();
        let mut out = format!("\nthresholds ({FailIf}): {crossed} of {} crossed\n", results.len());
        for result in results {
            let mark = if result.crossed { "✘" } else { "✔" };
            let target = result.target.as_ref().map_or(String::new(), |label| format!("{label}: "));
            let line = format!("{mark} {target}{}: {}", result.threshold, said(result));
            out.push_str(&wrap(&line, self.width, "  ", "      "));
        }
        out
    }
}

/// What was measured against the threshold, in its unit (the Markdown summary says the same).
pub(crate) fn said(result: &ThresholdResult) -> String {
    let value = |v: f64| match &*result.unit {
        "ms" => format_duration_ms(v),
        "req/s" => format!("{v:.1} req/s"),
        "%" => format!("{v:.2} %"),
        _ => format!("{v:.0}"),
    };
    let alpha = result.alpha.unwrap_or(nodelay_diagnose::ALPHA);
    if result.cannot_tell {
        return format!(
            "cannot tell: these rounds cannot reach p < {alpha} however they fall, so the gate does not pass; \
             {}",
            crate::model::compare::rounds_needed(alpha)
        );
    }
    if let (Some(p), Some(measured)) = (result.p_value, result.measured) {
        let how = if measured >= 0.0 { "slower" } else { "faster" };
        let times = 1.0 + measured / 100.0;
        let said = format!("{:.1} % {how} than the baseline ({times:.3}×; p = {p:.3})", measured.abs());
        return match result.by {
            Some(by) => format!("{said}, {by:.1} % past the limit"),
            None if p >= alpha => format!("{said}: no difference beyond noise"),
            None => format!("{said}: not surely past the limit"),
        };
    }
    match (result.metric.as_str(), result.measured) {
        ("finding", _) if result.found.is_empty() => "not reported".into(),
        ("finding", _) => format!("reported: {}", result.found.join(", ")),
        (metric, None) => format!("not measured: the run has no {metric}, so the gate fails"),
        (metric, Some(measured)) => match result.by {
            Some(by) => format!("{metric} {}, {} past the limit", value(measured), value(by)),
            None => format!("{metric} {}", value(measured)),
        },
    }
}

#[cfg(test)]
mod tests {
    use crate::FittedText;
    use crate::gate::{Gated, Metric, Stat, Threshold, check};

    struct Run;

    impl Gated for Run {
        fn figure(&self, metric: Metric) -> Option<f64> {
            (metric == Metric::Total(Stat::P99)).then_some(63.2)
        }
        fn reported_ids(&self) -> Vec<String> {
            vec!["server-nagle-delayed-ack".into()]
        }
    }

    #[test]
    fn each_threshold_says_what_was_measured_and_by_how_much_it_crossed() {
        let thresholds: Vec<Threshold> =
            ["p99 > 50ms", "p99 > 80ms", "stall", "rps < 10"].iter().map(|t| t.parse().unwrap()).collect();
        let text = FittedText::new(80).thresholds(&check(&thresholds, &Run, None));
        assert!(text.contains("thresholds (--fail-if): 3 of 4 crossed"), "{text}");
        assert!(text.contains("✘ p99 > 50ms: p99 63.20 ms, 13.20 ms past the limit"), "{text}");
        assert!(text.contains("✔ p99 > 80ms: p99 63.20 ms\n"), "{text}");
        assert!(text.contains("✘ stall: reported: server-nagle-delayed-ack"), "{text}");
        assert!(text.contains("✘ rps < 10: not measured: the run has no rps, so the gate fails"), "{text}");
    }
}
