//! Compare's section of the page, what a team lead comparing services reads: the verdict as
//! its heading, each round's p50 as a dot (the spread seen, not summed up), the targets'
//! latency spectra and per-second timelines on one axis (log when they differ more than
//! tenfold), the figures and the test, the diagnoses side by side, and every target's
//! settings. Each target keeps one colour on every plot.

use super::axis::{ValueAxis, differ_tenfold};
use super::context::{Figure, FindingText, LegendItem, MachineText, findings, machine, per_second};
use super::error::HtmlError;
use super::plots::{Line, Series, rounds_svg, spectrum_svg, timeline_svg};
use crate::format::{format_duration_ms, plural};
use crate::model::bench::{BenchReport, BenchSettings};
use crate::model::compare::{CompareReport, CompareTarget, Comparison};
use crate::model::compare::{figure_words, format_ratio, higher_is_worse};
use crate::model::doctor::DoctorReport;
use crate::text::compare::interrupted_line;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct TargetRow {
    pub label: String,
    pub colour: usize,
    pub url: String,
    pub error: String,
    pub rounds: usize,
    pub rate: String,
    pub p50: String,
    pub p50_ms: Option<f64>,
    pub p99: String,
    /// The lowest and highest of the rounds' figures.
    pub rate_spread: String,
    pub p50_spread: String,
    pub p99_spread: String,
}

#[derive(Debug, Serialize)]
pub struct ComparisonRow {
    pub label: String,
    pub against: String,
    pub metric: String,
    pub ratio: String,
    pub interval: String,
    pub p_value: String,
    pub significant: bool,
    pub verdict: String,
}

#[derive(Debug, Serialize)]
pub struct DiagnosisColumn {
    pub label: String,
    /// `healthy`, `1 finding`, ...; empty when the diagnosis failed.
    pub outcome: String,
    pub findings: Vec<FindingText>,
    pub error: String,
}

/// Every target's settings: the ones they share once, the others side by side.
#[derive(Debug, Serialize)]
pub struct SettingsByTarget {
    pub shared: Vec<(String, String)>,
    pub labels: Vec<String>,
    /// A setting and its value for each target, in `labels`' order.
    pub differing: Vec<(String, Vec<String>)>,
}

#[derive(Debug, Serialize)]
pub struct CompareSection {
    /// The p50 verdict in a few words: "stalling is 252× slower at p50 than fixed".
    pub headline: String,
    /// How the targets were measured, in one sentence.
    pub how: String,
    /// What a Ctrl-C left out, when one stopped the rounds.
    pub interrupted: String,
    /// The intervals' confidence: `95 %` at the default alpha.
    pub confidence: String,
    pub rounds_plot: Figure,
    pub spectrum: Figure,
    pub timeline: Vec<Figure>,
    pub targets: Vec<TargetRow>,
    pub comparisons: Vec<ComparisonRow>,
    pub test: String,
    pub diagnoses: Vec<DiagnosisColumn>,
    pub settings: SettingsByTarget,
    pub machine: Option<MachineText>,
}

/// "stalling is 252× slower at p50, 3.1× slower at p99 than fixed": a target's figures that
/// differ significantly, in a few words (the JSON's `verdicts` give their p-values); with none,
/// its p50 verdict: too few rounds to be sure, or no difference.
fn short_verdict(of: &[&Comparison], alpha: f64) -> String {
    let (label, against) = (&of[0].label, &of[0].against);
    let words = |c: &Comparison| {
        let factor = format_ratio(if c.ratio >= 1.0 { c.ratio } else { 1.0 / c.ratio });
        let word = if (c.ratio > 1.0) == higher_is_worse(&c.metric) { "slower" } else { "faster" };
        format!("{factor}× {word} {}", figure_words(&c.metric))
    };
    let differ: Vec<String> = of.iter().filter(|c| c.significant).map(|c| words(c)).collect();
    if !differ.is_empty() {
        return format!("{label} is {} than {against}", differ.join(", "));
    }
    let p50 = of.iter().find(|c| c.metric == "p50_ms").unwrap_or(&of[0]);
    if p50.every_round_agrees && p50.p_value >= alpha {
        format!("{label} was {} than {against} in every round, too few rounds to be sure", words(p50))
    } else {
        format!("{label} and {against}: no difference")
    }
}

/// The page's heading for the comparison: each target's verdict against the first.
pub fn headline(view: &CompareReport) -> String {
    let mut labels: Vec<&str> = view.comparisons.iter().map(|c| c.label.as_str()).collect();
    labels.dedup();
    let verdicts: Vec<String> = labels
        .into_iter()
        .map(|label| {
            let of: Vec<&Comparison> = view.comparisons.iter().filter(|c| c.label == label).collect();
            short_verdict(&of, view.alpha)
        })
        .collect();
    if !verdicts.is_empty() {
        return verdicts.join("; ");
    }
    if view.interrupted && rounds_completed(view) == 0 {
        return "nothing to compare: interrupted before a round was complete".into();
    }
    match view.targets.iter().find(|t| t.error.is_some()) {
        Some(target) => format!("no verdict: {} could not be measured", target.label),
        None => "no verdict: no p50 to compare".into(),
    }
}

/// Rounds counted (the reader works it out for older reports, which lack it).
fn rounds_completed(view: &CompareReport) -> u32 {
    view.rounds_completed
}

fn spread(values: impl Iterator<Item = Option<f64>>, text: impl Fn(f64) -> String) -> String {
    let values: Vec<f64> = values.flatten().collect();
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() { "—".into() } else { format!("{} – {}", text(low), text(high)) }
}

fn target_row(index: usize, t: &CompareTarget) -> TargetRow {
    let latency = t.run.as_ref().and_then(|r| r.latency_ms.as_ref());
    TargetRow {
        label: t.label.clone(),
        colour: index,
        url: t.url.clone(),
        error: t.error.clone().unwrap_or_default(),
        rounds: t.rounds.len(),
        rate: t.run.as_ref().map_or("—".into(), |r| per_second(r.requests_per_second, "req")),
        p50: latency.map_or("—".into(), |p| format_duration_ms(p.p50)),
        p50_ms: latency.map(|p| p.p50),
        p99: latency.map_or("—".into(), |p| format_duration_ms(p.p99)),
        rate_spread: spread(t.rounds.iter().map(|r| Some(r.requests_per_second)), |v| per_second(v, "req")),
        p50_spread: spread(t.rounds.iter().map(|r| r.p50_ms), format_duration_ms),
        p99_spread: spread(t.rounds.iter().map(|r| r.p99_ms), format_duration_ms),
    }
}

/// The targets that have something on a plot, with their colour (their place in the report).
fn legend(view: &CompareReport, has: impl Fn(&CompareTarget) -> bool) -> Vec<LegendItem> {
    view.targets
        .iter()
        .enumerate()
        .filter(|(_, t)| has(t))
        .map(|(colour, t)| LegendItem { label: t.label.clone(), colour })
        .collect()
}

/// The figure each target is compared on, for the choice of a log axis.
fn run_figures(view: &CompareReport, pick: fn(&BenchReport) -> Option<f64>) -> Vec<f64> {
    view.targets.iter().filter_map(|t| t.run.as_ref().and_then(pick)).collect()
}

fn p50_of(run: &BenchReport) -> Option<f64> {
    run.latency_ms.as_ref().map(|p| p.p50)
}

fn spectrum_of(t: &CompareTarget) -> &[crate::model::series::SpectrumPoint] {
    t.run.as_ref().map_or(&[][..], |r| r.latency_spectrum.as_slice())
}

fn timeline_of(t: &CompareTarget) -> &[crate::model::series::IntervalPoint] {
    t.run.as_ref().map_or(&[][..], |r| r.timeline.as_slice())
}

fn rounds_figure(view: &CompareReport, log: bool) -> Result<Figure, HtmlError> {
    let caption = "p50 of each round: one dot per target and round";
    let points: Vec<Vec<(f64, Option<f64>)>> =
        view.targets.iter().map(|t| t.rounds.iter().map(|r| (r.round as f64, r.p50_ms)).collect()).collect();
    let values = points.iter().flatten().filter_map(|(_, v)| *v);
    if values.clone().next().is_none() {
        return Ok(Figure::nothing("rounds", caption, "No round was complete."));
    }
    let y = ValueAxis::new(values, log);
    let series: Vec<Series> =
        points.iter().enumerate().map(|(colour, points)| Series { points, colour }).collect();
    let rounds = view.targets.iter().flat_map(|t| &t.rounds).map(|r| r.round).max().unwrap_or(1);
    Ok(Figure {
        plot: "rounds",
        caption: caption.into(),
        svg: Some(rounds_svg(&series, rounds, &y, &y.title("p50 latency", "ms"))?),
        legend: legend(view, |t| t.rounds.iter().any(|r| r.p50_ms.is_some())),
        empty: String::new(),
        scale: y.name(),
    })
}

fn spectrum_figure(view: &CompareReport, log: bool) -> Result<Figure, HtmlError> {
    let caption = "Latency by percentile, every round of each target";
    let lines: Vec<Line> = view
        .targets
        .iter()
        .enumerate()
        .filter(|(_, t)| !spectrum_of(t).is_empty())
        .map(|(colour, t)| Line { points: spectrum_of(t), colour })
        .collect();
    if lines.is_empty() {
        return Ok(Figure::nothing(
            "latency-spectrum",
            caption,
            &no_runs(view, "No target completed a response."),
        ));
    }
    let y = ValueAxis::new(lines.iter().flat_map(|l| l.points).map(|p| p.latency_ms), log);
    Ok(Figure {
        plot: "latency-spectrum",
        caption: caption.into(),
        svg: Some(spectrum_svg(&lines, &y, &y.title("latency", "ms"))?),
        legend: legend(view, |t| !spectrum_of(t).is_empty()),
        empty: String::new(),
        scale: y.name(),
    })
}

/// Throughput and p50 of each second (each interval) of each target's rounds, back to back.
fn timeline_figures(view: &CompareReport, latency_log: bool) -> Result<Vec<Figure>, HtmlError> {
    if view.targets.iter().all(|t| timeline_of(t).is_empty()) {
        return Ok(vec![Figure::nothing(
            "timeline",
            "Each second",
            &no_runs(view, "No timeline was recorded."),
        )]);
    }
    let end_s =
        view.targets.iter().flat_map(timeline_of).map(|p| p.start_s + p.duration_s).fold(0.0, f64::max);
    let x_desc = "seconds measured (each target's rounds back to back)";
    let middle = |p: &crate::model::series::IntervalPoint| p.start_s + p.duration_s / 2.0;
    let rates: Vec<Vec<(f64, Option<f64>)>> = view
        .targets
        .iter()
        .map(|t| timeline_of(t).iter().map(|p| (middle(p), Some(p.requests_per_second))).collect())
        .collect();
    let p50s: Vec<Vec<(f64, Option<f64>)>> =
        view.targets.iter().map(|t| timeline_of(t).iter().map(|p| (middle(p), p.p50_ms)).collect()).collect();
    let rate_log = differ_tenfold(run_figures(view, |r| Some(r.requests_per_second)));
    let mut figures = Vec::new();
    for (plot, caption, what, unit, points, log) in [
        ("timeline-rate", "Throughput, each second", "throughput", "req/s", &rates, rate_log),
        ("timeline-p50", "p50 latency, each second", "p50 latency", "ms", &p50s, latency_log),
    ] {
        let y = ValueAxis::new(points.iter().flatten().filter_map(|(_, v)| *v), log);
        let series: Vec<Series> =
            points.iter().enumerate().map(|(colour, points)| Series { points, colour }).collect();
        figures.push(Figure {
            plot,
            caption: caption.into(),
            svg: Some(timeline_svg(&series, end_s, x_desc, &y, &y.title(what, unit))?),
            legend: legend(view, |t| !timeline_of(t).is_empty()),
            empty: String::new(),
            scale: y.name(),
        });
    }
    Ok(figures)
}

/// A target's settings: its own (this version's reports), its run's, or for the first target
/// the report's (the first version kept only that one). A report of the first version reads
/// with empty settings where it had none.
fn settings_of(view: &CompareReport, index: usize) -> Option<&BenchSettings> {
    let known = |settings: &BenchSettings| !settings.url.is_empty();
    let target = &view.targets[index];
    Some(&target.settings)
        .filter(|s| known(s))
        .or_else(|| target.run.as_ref().map(|run| &run.settings).filter(|s| known(s)))
        .or(Some(&view.settings).filter(|s| index == 0 && known(s)))
}

fn settings(view: &CompareReport) -> SettingsByTarget {
    let each: Vec<Vec<(String, String)>> = (0..view.targets.len())
        .map(|i| settings_of(view, i).map(super::context::settings).unwrap_or_default())
        .collect();
    let mut names: Vec<&String> = Vec::new();
    for (name, _) in each.iter().flatten() {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let value = |rows: &Vec<(String, String)>, name: &String| {
        rows.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    };
    let mut shared = Vec::new();
    let mut differing = Vec::new();
    for name in names {
        let values: Vec<Option<String>> = each.iter().map(|rows| value(rows, name)).collect();
        let known: Vec<&String> = values.iter().flatten().collect();
        if known.windows(2).all(|w| w[0] == w[1]) && known.len() == values.len() {
            shared.push((name.clone(), known[0].clone()));
        } else {
            differing.push((name.clone(), values.into_iter().map(|v| v.unwrap_or("—".into())).collect()));
        }
    }
    SettingsByTarget { shared, labels: view.targets.iter().map(|t| t.label.clone()).collect(), differing }
}

/// Why a figure drawn from the targets' runs is empty: `otherwise`, or that the saved targets'
/// runs stay in their files.
fn no_runs(view: &CompareReport, otherwise: &str) -> String {
    let saved: Vec<&str> =
        view.targets.iter().filter_map(|t| Some(t.saved.as_ref()?.file.as_str())).collect();
    if saved.is_empty() {
        return otherwise.to_string();
    }
    format!(
        "Read from saved runs, the targets brought their rounds only; each run is in its file ({}).",
        saved.join(", ")
    )
}

/// "5 rounds per target, interleaved ...", or which targets were read from saved runs.
fn how(view: &CompareReport) -> String {
    let saved: Vec<String> = view
        .targets
        .iter()
        .filter_map(|t| Some(format!("{} was read from {}", t.label, t.saved.as_ref()?.file)))
        .collect();
    if !saved.is_empty() {
        let whose = if saved.len() == 1 { "its rounds were" } else { "their rounds were" };
        return format!(
            "{}: {whose} not interleaved with the others', so drift between the runs counts as difference. Each target is set against {}.",
            saved.join(", "),
            view.targets.first().map_or("", |t| t.label.as_str())
        );
    }
    let labels: Vec<&str> = view.targets.iter().map(|t| t.label.as_str()).collect();
    let completed = rounds_completed(view);
    let rounds = if completed == view.rounds {
        plural(view.rounds as usize, "round", "rounds")
    } else {
        format!("{completed} of {} rounds", view.rounds)
    };
    format!(
        "{} measured in {rounds} each, interleaved (the order alternating each round), each set against {}.",
        labels.join(", "),
        labels.first().copied().unwrap_or_default()
    )
}

pub fn compare(view: &CompareReport) -> Result<CompareSection, HtmlError> {
    let latency_log = differ_tenfold(run_figures(view, p50_of));
    let diagnosed = view.targets.iter().any(|t| t.diagnosis.is_some() || t.diagnosis_error.is_some());
    Ok(CompareSection {
        headline: headline(view),
        how: how(view),
        confidence: crate::model::compare::confidence(view.alpha),
        interrupted: if view.interrupted {
            let line = interrupted_line(view.rounds, rounds_completed(view), view.interrupted_round);
            format!("{}.", super::markup::sentence(&line))
        } else {
            String::new()
        },
        rounds_plot: rounds_figure(view, latency_log)?,
        spectrum: spectrum_figure(view, latency_log)?,
        timeline: timeline_figures(view, latency_log)?,
        targets: view.targets.iter().enumerate().map(|(i, t)| target_row(i, t)).collect(),
        comparisons: view
            .comparisons
            .iter()
            .map(|c| ComparisonRow {
                label: c.label.clone(),
                against: c.against.clone(),
                metric: c.metric.replace('_', " "),
                // Three significant digits whatever the magnitude: 0.00101×, never 0.001×.
                ratio: format!("{}×", format_ratio(c.ratio)),
                interval: match (c.interval_low, c.interval_high) {
                    (Some(low), Some(high)) => format!("{}× – {}×", format_ratio(low), format_ratio(high)),
                    _ => "—".into(),
                },
                p_value: format!("{:.3}", c.p_value),
                significant: c.significant,
                verdict: c.verdict.clone(),
            })
            .collect(),
        test: view.test.clone(),
        diagnoses: if diagnosed {
            view.targets
                .iter()
                .map(|t| DiagnosisColumn {
                    label: t.label.clone(),
                    outcome: t.diagnosis.as_ref().map(diagnosis_outcome).unwrap_or_default(),
                    findings: t.diagnosis.as_ref().map(|d| findings(&d.findings)).unwrap_or_default(),
                    error: t.diagnosis_error.clone().unwrap_or_default(),
                })
                .collect()
        } else {
            Vec::new()
        },
        settings: settings(view),
        machine: machine(&view.machine),
    })
}

/// `healthy`, `1 finding`, `unreliable`: the doctor's verdict, its findings counted.
fn diagnosis_outcome(report: &DoctorReport) -> String {
    if report.verdict == "findings" {
        plural(report.findings.len(), "finding", "findings")
    } else {
        report.verdict.to_string()
    }
}
