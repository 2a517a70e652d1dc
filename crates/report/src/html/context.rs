//! The template's parts shared by every kind of run: figures (a plot with its legend),
//! summary numbers, findings, settings and the machine. Numbers are formatted here, with their
//! units, and kept raw beside the text (`data-value`) for scripts and tests.

use super::axis::{ValueAxis, differ_tenfold};
use super::error::HtmlError;
use super::markup::arrows;
use super::plots::{Line, spectrum_svg};
use crate::format::format_duration_ms;
use crate::model::bench::BenchSettings;
use crate::model::series::Machine;
use crate::model::series::SpectrumPoint;
use crate::model::server_view::ServerViewReport;
use nodelay_diagnose::{Evidence, Finding, Fix, Proof, ProofKind};
use serde::Serialize;
use serde_json::Value;

/// A plot, or why there is none.
#[derive(Debug, Serialize)]
pub struct Figure {
    /// What it shows (`latency-spectrum`, `histogram`, ...): the `data-plot` attribute.
    pub plot: &'static str,
    pub caption: String,
    /// The SVG drawn by [`super::plots`]: no input text in it.
    pub svg: Option<String>,
    pub legend: Vec<LegendItem>,
    /// Shown instead of the SVG when there is nothing to draw.
    pub empty: String,
    /// `linear` or `log`: the value axis's scale (the `data-scale` attribute); empty when
    /// there is no plot.
    pub scale: &'static str,
}

#[derive(Debug, Serialize)]
pub struct LegendItem {
    pub label: String,
    /// Palette index, for the swatch's class.
    pub colour: usize,
}

impl Figure {
    pub fn nothing(plot: &'static str, caption: &str, why: &str) -> Figure {
        Figure { plot, caption: caption.into(), svg: None, legend: Vec::new(), empty: why.into(), scale: "" }
    }
}

/// The median of a spectrum.
fn median(points: &[SpectrumPoint]) -> Option<f64> {
    points.iter().find(|p| p.percentile >= 50.0).map(|p| p.latency_ms)
}

/// Spectra on one plot, one line per labelled spectrum (the empty ones left out); a legend
/// when more than one line. The value axis, `what` in milliseconds, is log when the spectra's
/// medians differ more than tenfold.
pub fn spectra_figure(
    plot: &'static str,
    caption: &str,
    what: &str,
    spectra: &[(String, &[SpectrumPoint])],
    empty: &str,
) -> Result<Figure, HtmlError> {
    // A spectrum of zeros (no response paused between two reads) would be an empty frame.
    let drawn: Vec<(usize, &(String, &[SpectrumPoint]))> =
        spectra.iter().filter(|(_, points)| points.iter().any(|p| p.latency_ms > 0.0)).enumerate().collect();
    if drawn.is_empty() {
        return Ok(Figure::nothing(plot, caption, empty));
    }
    let lines: Vec<Line> = drawn.iter().map(|(i, (_, points))| Line { points, colour: *i }).collect();
    let legend = if drawn.len() > 1 {
        drawn.iter().map(|(i, (label, _))| LegendItem { label: label.clone(), colour: *i }).collect()
    } else {
        Vec::new()
    };
    let log = differ_tenfold(drawn.iter().filter_map(|(_, (_, points))| median(points)));
    let y =
        ValueAxis::new(drawn.iter().flat_map(|(_, (_, points))| points.iter().map(|p| p.latency_ms)), log);
    Ok(Figure {
        plot,
        caption: caption.into(),
        svg: Some(spectrum_svg(&lines, &y, &y.title(what, "ms"))?),
        legend,
        empty: String::new(),
        scale: y.name(),
    })
}

/// One summary number: its text with unit, and the raw value.
#[derive(Debug, Serialize)]
pub struct Stat {
    /// Stable within the run's section (`p50`, `requests-per-second`): the element's id suffix.
    pub key: String,
    pub label: String,
    pub text: String,
    pub raw: Option<f64>,
}

impl Stat {
    pub fn new(key: &str, label: &str, text: String, raw: Option<f64>) -> Stat {
        Stat { key: key.into(), label: label.into(), text, raw }
    }

    pub fn ms(key: &str, label: &str, ms: f64) -> Stat {
        Stat::new(key, label, format_duration_ms(ms), Some(ms))
    }

    pub fn count(key: &str, label: &str, count: u64) -> Stat {
        Stat::new(key, label, count.to_string(), Some(count as f64))
    }

    pub fn text(key: &str, label: &str, text: &str) -> Stat {
        Stat::new(key, label, text.into(), None)
    }
}

/// A number to three significant figures or so, without trailing zeros.
pub fn number(value: f64) -> String {
    let decimals = if value.abs() >= 100.0 || value == value.trunc() {
        0
    } else if value.abs() >= 10.0 {
        1
    } else if value.abs() >= 1.0 {
        2
    } else {
        3
    };
    let text = format!("{value:.decimals$}");
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text }
}

/// `12.3 req/s`-style text for a rate.
pub fn per_second(value: f64, unit: &str) -> String {
    format!("{} {unit}/s", number(value))
}

/// One line of a finding's proof: what was done, what it showed, and whether the symptom went.
#[derive(Debug, Serialize)]
pub struct ProofText {
    pub kind: String,
    pub experiment: String,
    /// `p50 44.01 ms → 210.0 µs` for an experiment whose result does not say it already;
    /// empty otherwise.
    pub p50: String,
    /// `symptom removed` or `symptom stayed` for an experiment; empty for what was only seen.
    pub outcome: String,
    pub result: String,
}

/// A proof as one line: the p50 before and after said once (the diagnosis's result often
/// starts with it, in the terminal's `->`).
fn proof(p: &Proof) -> ProofText {
    let experiment =
        matches!(p.kind, ProofKind::Experiment | ProofKind::FixApplied | ProofKind::UpstreamDiagnosis);
    let says_p50 = p.result.trim_start().starts_with("p50 ");
    ProofText {
        kind: as_json_text(&p.kind),
        experiment: p.experiment.clone(),
        p50: if experiment && !says_p50 {
            format!(
                "p50 {} → {}",
                format_duration_ms(p.baseline_p50_ms),
                format_duration_ms(p.experiment_p50_ms)
            )
        } else {
            String::new()
        },
        outcome: match (experiment, p.removed) {
            (true, true) => "symptom removed".into(),
            (true, false) => "symptom stayed".into(),
            (false, _) => String::new(),
        },
        result: arrows(&p.result),
    }
}

/// A finding's proofs, each said once.
fn proofs(list: &[Proof]) -> Vec<ProofText> {
    let mut seen: Vec<(ProofKind, &str, &str)> = Vec::new();
    list.iter()
        .filter(|p| {
            let key = (p.kind, p.experiment.as_str(), p.result.as_str());
            let first = !seen.contains(&key);
            seen.push(key);
            first
        })
        .map(proof)
        .collect()
}

#[derive(Debug, Serialize)]
pub struct FixText {
    pub stack: String,
    pub how: String,
    pub detected: bool,
}

/// A finding as the page shows it: what was seen (evidence with units), how it was proven,
/// and the fix (the detected stack's first).
#[derive(Debug, Serialize)]
pub struct FindingText {
    pub id: String,
    pub title: String,
    pub proven: bool,
    pub confidence: String,
    pub evidence: Vec<String>,
    pub proof: Vec<ProofText>,
    pub fix_summary: String,
    /// The fix for the stack detected, or every fix when none was.
    pub fixes: Vec<FixText>,
    /// The fixes for the other stacks when one was detected: folded away on the page.
    pub other_fixes: Vec<FixText>,
}

/// `what: 40.2 ms`; a count goes without its unit, and a ratio of counts keeps two decimals
/// as the text does (1.0002 connections per response is not "1").
fn evidence(e: &Evidence) -> String {
    match &*e.unit {
        "count" | "" if e.value.fract() != 0.0 => format!("{}: {:.2}", e.what, e.value),
        "count" | "" => format!("{}: {}", e.what, number(e.value)),
        unit => format!("{}: {} {unit}", e.what, number(e.value)),
    }
}

fn fix(x: &Fix) -> FixText {
    FixText { stack: x.stack.to_string(), how: x.how.to_string(), detected: x.detected }
}

/// Whether the finding names the server's stack among its fixes.
fn detected(f: &Finding) -> bool {
    f.fix.iter().any(|x| x.detected)
}

/// A value's JSON text, for an enum whose serde name is its word (`high`, `experiment`).
fn as_json_text(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(text)) => text,
        _ => String::new(),
    }
}

pub fn findings(findings: &[Finding]) -> Vec<FindingText> {
    findings
        .iter()
        .map(|f| FindingText {
            id: f.id.as_str().to_string(),
            title: f.title.clone(),
            proven: f.proven,
            confidence: as_json_text(&f.confidence),
            evidence: f.evidence.iter().map(evidence).collect(),
            proof: proofs(&f.proof),
            fix_summary: f.fix_summary.clone(),
            fixes: f.fix.iter().filter(|x| x.detected || !detected(f)).map(fix).collect(),
            other_fixes: f.fix.iter().filter(|x| !x.detected && detected(f)).map(fix).collect(),
        })
        .collect()
}

/// A run's settings as name/value rows, in the JSON's order (every setting, as it is saved).
pub fn settings(settings: &BenchSettings) -> Vec<(String, String)> {
    let Ok(Value::Object(settings)) = serde_json::to_value(settings) else { return Vec::new() };
    settings.iter().map(|(name, value)| (name.replace('_', " "), setting_text(value))).collect()
}

fn setting_text(value: &Value) -> String {
    match value {
        Value::Null => "—".into(),
        Value::String(text) => text.clone(),
        Value::Array(items) if items.is_empty() => "—".into(),
        Value::Array(items) => items.iter().map(setting_text).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

#[derive(Debug, Serialize)]
pub struct MachineText {
    pub kernel: String,
    pub cores: usize,
    pub hostname: String,
}

/// The machine, when the run says which it was (a run saved before it did reads as empty).
pub fn machine(machine: &Machine) -> Option<MachineText> {
    let m = machine;
    (!m.kernel.is_empty() || m.cores > 0).then(|| MachineText {
        kernel: m.kernel.clone(),
        cores: m.cores,
        hostname: m.hostname.clone(),
    })
}

/// The server's side, when it was looked at.
#[derive(Debug, Serialize)]
pub struct ServerText {
    pub available: bool,
    pub why_unavailable: String,
    pub processes: String,
    pub stats: Vec<Stat>,
    /// name, on CPU, waiting for a CPU.
    pub threads: Vec<[String; 3]>,
    /// destination, opened, per request, open at the end.
    pub upstreams: Vec<[String; 4]>,
    /// Why some counts are floors, and what bounds them above (empty when none is).
    pub upstream_note: String,
    pub warnings: Vec<String>,
}

/// Said under the upstreams when a count is a floor (≥): why, and the namespace's bound.
fn upstream_note(view: &ServerViewReport) -> String {
    if !view.upstreams.iter().any(|u| u.ports_cycled) {
        return String::new();
    }
    let bound = match view.namespace_connects_by_others {
        Some(connects) => format!(
            " Any process of the server's network namespace but nodelay made {connects} connects during \
             the run: the most the server's can be."
        ),
        None => String::new(),
    };
    format!("≥: the server's local ports went round, and a 4-tuple used again may count once.{bound}")
}

pub fn server(view: Option<&ServerViewReport>) -> Option<ServerText> {
    let view = view?;
    let percent = |share: f64| format!("{:.0} %", share * 100.0);
    let mut stats = vec![
        Stat::count("server-requests", "requests seen", view.requests),
        Stat::new("cores-busy", "cores busy", number(view.cores_busy), Some(view.cores_busy)),
    ];
    if let Some(cpu) = view.cpu_per_request_ms {
        stats.push(Stat::ms("cpu-per-request", "CPU per request", cpu));
    }
    if let Some(ceiling) = view.ceiling_per_second {
        stats.push(Stat::new("ceiling", "CPU ceiling", per_second(ceiling, "req"), Some(ceiling)));
    }
    Some(ServerText {
        available: view.available,
        why_unavailable: view.why_unavailable.clone().unwrap_or_default(),
        processes: view
            .processes
            .iter()
            .map(|p| format!("{} ({})", p.command, p.pid))
            .collect::<Vec<_>>()
            .join(", "),
        stats,
        threads: view
            .threads
            .iter()
            .map(|t| {
                [format!("{} ({})", t.name, t.tid), percent(t.on_cpu_share), percent(t.waiting_for_cpu_share)]
            })
            .collect(),
        upstreams: view
            .upstreams
            .iter()
            .map(|u| {
                let floor = if u.ports_cycled { "≥ " } else { "" };
                [
                    u.destination.clone(),
                    format!("{floor}{}", u.opened),
                    u.opened_per_request.map_or("—".into(), |n| format!("{floor}{}", number(n))),
                    u.open_at_end.to_string(),
                ]
            })
            .collect(),
        upstream_note: upstream_note(view),
        warnings: view.warnings.clone(),
    })
}
