//! One section of the page per run, by kind: what each shows, as the template's context
//! (compare's, which sets targets side by side, is in `compare`).

use super::axis::ValueAxis;
use super::context::{
    Figure, FindingText, MachineText, ServerText, Stat, findings, machine, per_second, server, settings,
    spectra_figure,
};
use super::error::HtmlError;
use super::plots::{Series, histogram_needs_log_counts, histogram_svg, timeline_svg};
use crate::format::{format_bytes, format_duration_ms, format_seconds};
use crate::model::bench::{BenchReport, HistogramBucket};
use crate::model::doctor::{DoctorReport, DoctorScenarioReport};
use crate::model::merge::MergeReport;
use crate::model::pcap::PcapReport;
use crate::model::percentiles::Percentiles;
use crate::model::series::{IntervalPoint, SpectrumPoint};
use nodelay_diagnose::Suggestion;
use serde::Serialize;

/// A statistic of the latency table: its label, and where it is in the percentiles.
type Statistic = (&'static str, fn(&Percentiles) -> f64);

/// The statistics of the latency table, top to bottom.
const STATISTICS: [Statistic; 7] = [
    ("min", |p| p.min),
    ("p50", |p| p.p50),
    ("p90", |p| p.p90),
    ("p99", |p| p.p99),
    ("p99.9", |p| p.p999),
    ("max", |p| p.max),
    ("mean", |p| p.mean),
];

#[derive(Debug, Serialize)]
pub struct LatencyTable {
    pub columns: Vec<&'static str>,
    /// Per statistic: its label and one cell per column.
    pub rows: Vec<(String, Vec<Cell>)>,
}

/// A figure in milliseconds: its text with unit, and its value.
#[derive(Debug, Serialize)]
pub struct Cell {
    pub text: String,
    pub ms: f64,
}

/// One column per figure measured, one row per statistic; `None` when nothing was measured.
fn latency_table(measured: [(&'static str, Option<&Percentiles>); 6]) -> Option<LatencyTable> {
    let columns: Vec<(&'static str, &Percentiles)> =
        measured.into_iter().filter_map(|(name, p)| Some((name, p?))).collect();
    if columns.is_empty() {
        return None;
    }
    let rows = STATISTICS
        .iter()
        .map(|(label, field)| {
            let cells = columns
                .iter()
                .map(|(_, p)| Cell { text: format_duration_ms(field(p)), ms: field(p) })
                .collect();
            (label.to_string(), cells)
        })
        .collect();
    Some(LatencyTable { columns: columns.iter().map(|(name, _)| *name).collect(), rows })
}

#[derive(Debug, Serialize)]
pub struct BenchSection {
    pub merged: bool,
    pub stats: Vec<Stat>,
    pub latency: Option<LatencyTable>,
    pub spectrum: Figure,
    pub histogram: Figure,
    pub timeline: Vec<Figure>,
    pub read_gap: Figure,
    pub statuses: String,
    pub errors: String,
    pub findings: Vec<FindingText>,
    /// What the numbers suggest, not proven, each with its proving command.
    pub suggestions: Vec<Suggestion>,
    pub server: Option<ServerText>,
    pub settings: Vec<(String, String)>,
    pub machine: Option<MachineText>,
}

/// The summary numbers a load run and a merge of interval logs share.
fn load_stats(responses: u64, requests_per_second: f64, latency: Option<&Percentiles>) -> Vec<Stat> {
    let mut stats = vec![
        Stat::count("requests", "responses", responses),
        Stat::new(
            "requests-per-second",
            "throughput",
            per_second(requests_per_second, "req"),
            Some(requests_per_second),
        ),
    ];
    if let Some(latency) = latency {
        stats.push(Stat::ms("p50", "p50 latency", latency.p50));
        stats.push(Stat::ms("p99", "p99 latency", latency.p99));
        stats.push(Stat::ms("max", "max latency", latency.max));
    }
    stats
}

/// The latency histogram, or why there is none.
fn histogram(buckets: &[HistogramBucket], latency: Option<&Percentiles>) -> Result<Figure, HtmlError> {
    if buckets.is_empty() {
        return Ok(Figure::nothing("histogram", "Latency histogram", "No response completed."));
    }
    let from = latency.map_or(0.0, |p| p.min);
    Ok(Figure {
        plot: "histogram",
        caption: "Latency histogram: responses per latency range".into(),
        svg: Some(histogram_svg(buckets, from)?),
        legend: Vec::new(),
        empty: String::new(),
        scale: if histogram_needs_log_counts(buckets) { "log" } else { "linear" },
    })
}

/// The run's latency spectrum, labelled.
fn latency_spectrum(label: &str, points: &[SpectrumPoint]) -> Result<Figure, HtmlError> {
    spectra_figure(
        "latency-spectrum",
        "Latency by percentile",
        "latency",
        &[(label.to_string(), points)],
        "No response completed.",
    )
}

/// The read gap's spectrum, labelled.
fn read_gap_spectrum(label: &str, points: &[SpectrumPoint]) -> Result<Figure, HtmlError> {
    spectra_figure(
        "read-gap-spectrum",
        "Longest pause between two reads of a response, by percentile",
        "read gap",
        &[(label.to_string(), points)],
        "No pause to draw: every response came in one read (or no read gap was recorded).",
    )
}

pub fn bench(report: &BenchReport, label: &str) -> Result<BenchSection, HtmlError> {
    let mut stats =
        load_stats(report.requests_completed, report.requests_per_second, report.latency_ms.as_ref());
    stats.push(Stat::count("errors", "errors", report.total_errors()));
    stats.push(Stat::new("elapsed", "duration", format_seconds(report.elapsed_s), Some(report.elapsed_s)));
    if let Some((Some(version), Some(cipher))) = report.tls.as_ref().map(|tls| (&tls.version, &tls.cipher)) {
        stats.push(Stat::new("tls", "TLS", format!("{version} {cipher}"), None));
    }
    if report.transfer_bytes_per_second > 0.0 {
        stats.push(Stat::new(
            "transfer",
            "transfer",
            format!("{}/s", format_bytes(report.transfer_bytes_per_second)),
            Some(report.transfer_bytes_per_second),
        ));
    }
    Ok(BenchSection {
        merged: false,
        stats,
        latency: latency_table([
            ("total", report.latency_ms.as_ref()),
            ("uncorrected", report.latency_uncorrected_ms.as_ref()),
            ("first byte", report.first_byte_ms.as_ref()),
            ("read gap", report.read_gap_ms.as_ref()),
            ("connect", report.connect_ms.as_ref()),
            ("TLS handshake", report.tls_handshake_ms.as_ref()),
        ]),
        spectrum: latency_spectrum(label, &report.latency_spectrum)?,
        histogram: histogram(&report.latency_histogram, report.latency_ms.as_ref())?,
        timeline: timeline(&report.timeline)?,
        read_gap: read_gap_spectrum(label, &report.read_gap_spectrum)?,
        statuses: report
            .status_counts
            .iter()
            .map(|(code, n)| format!("{code} ×{n}"))
            .collect::<Vec<_>>()
            .join(", "),
        errors: report
            .errors
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(kind, n)| format!("{kind} ×{n}"))
            .collect::<Vec<_>>()
            .join(", "),
        findings: findings(&report.findings),
        suggestions: report.suggestions.clone(),
        server: server(report.server_view.as_ref()),
        settings: settings(&report.settings),
        machine: machine(&report.machine),
    })
}

/// Interval logs merged: the figures a bench run has, less what logs do not carry (errors,
/// statuses, read gaps, settings).
pub fn merge(report: &MergeReport, label: &str) -> Result<BenchSection, HtmlError> {
    let mut stats =
        load_stats(report.requests_completed, report.requests_per_second, report.latency_ms.as_ref());
    stats.push(Stat::new("elapsed", "span", format_seconds(report.span_s), Some(report.span_s)));
    Ok(BenchSection {
        merged: true,
        stats,
        latency: latency_table([
            ("total", report.latency_ms.as_ref()),
            ("uncorrected", None),
            ("first byte", None),
            ("read gap", None),
            ("connect", None),
            ("TLS handshake", None),
        ]),
        spectrum: latency_spectrum(label, &report.latency_spectrum)?,
        histogram: histogram(&report.latency_histogram, report.latency_ms.as_ref())?,
        timeline: timeline(&report.timeline)?,
        read_gap: read_gap_spectrum(label, &[])?,
        statuses: String::new(),
        errors: String::new(),
        findings: Vec::new(),
        suggestions: Vec::new(),
        server: None,
        settings: Vec::new(),
        machine: machine(&report.machine),
    })
}

/// Requests per second and p99 per interval, or why there is no timeline.
fn timeline(points: &[IntervalPoint]) -> Result<Vec<Figure>, HtmlError> {
    if points.is_empty() {
        return Ok(vec![Figure::nothing("timeline", "Timeline", "No timeline was recorded for this run.")]);
    }
    let end_s = points.iter().map(|p| p.start_s + p.duration_s).fold(0.0, f64::max);
    let middle = |p: &IntervalPoint| p.start_s + p.duration_s / 2.0;
    let rate: Vec<(f64, Option<f64>)> =
        points.iter().map(|p| (middle(p), Some(p.requests_per_second))).collect();
    let p99: Vec<(f64, Option<f64>)> = points.iter().map(|p| (middle(p), p.p99_ms)).collect();
    let x_desc = "time since the start (s)";
    let mut figures = Vec::new();
    for (plot, caption, what, unit, points, colour) in [
        ("timeline-rate", "Throughput per interval", "throughput", "req/s", &rate, 0),
        ("timeline-p99", "p99 latency per interval", "p99 latency", "ms", &p99, 4),
    ] {
        let y = ValueAxis::new(points.iter().filter_map(|(_, v)| *v), false);
        figures.push(Figure {
            plot,
            caption: caption.into(),
            svg: Some(timeline_svg(&[Series { points, colour }], end_s, x_desc, &y, &y.title(what, unit))?),
            legend: Vec::new(),
            empty: String::new(),
            scale: y.name(),
        });
    }
    Ok(figures)
}

#[derive(Debug, Serialize)]
pub struct PhaseRow {
    pub name: String,
    pub description: String,
    pub responses: u64,
    pub errors: u64,
    pub p50: String,
    pub p50_ms: f64,
    pub p90: String,
    pub first_byte_p50: String,
    pub read_gap_p50: String,
    pub stalled: u64,
}

#[derive(Debug, Serialize)]
pub struct HopText {
    pub address: String,
    pub how_used: String,
    pub verdict: String,
    pub findings: Vec<String>,
    pub error: String,
}

#[derive(Debug, Serialize)]
pub struct DoctorSection {
    pub name: String,
    pub url: String,
    pub verdict: String,
    /// The headline: the first (costliest) finding's id and sentence; with no finding, the
    /// verdict (`healthy`, `unreliable`) and no sentence.
    pub headline_id: String,
    pub headline_title: String,
    pub stats: Vec<Stat>,
    pub phases: Vec<PhaseRow>,
    pub spectrum: Figure,
    pub findings: Vec<FindingText>,
    /// The notes under the verdict: (id, title).
    pub notes: Vec<(String, String)>,
    pub skipped: Vec<String>,
    pub try_fix: String,
    /// The one-request probes' sentences: Expect: 100-continue, the idle keep-alive timeout.
    pub probes: Vec<String>,
    pub server: Option<ServerText>,
    pub hops: Vec<HopText>,
}

pub fn doctor(view: &DoctorReport, name: &str) -> Result<DoctorSection, HtmlError> {
    // The costliest finding's id, not the word "findings".
    let headline_id =
        view.findings.first().map_or_else(|| view.verdict.to_string(), |f| f.id.as_str().to_string());
    let mut stats = vec![
        Stat::text("verdict", "verdict", &headline_id),
        Stat::new("elapsed", "took", format_seconds(view.elapsed_s), Some(view.elapsed_s)),
    ];
    if let Some(baseline) = view.phases.first() {
        stats.push(Stat::ms("p50", "baseline p50", baseline.summary.total_p50_ms));
        stats.push(Stat::ms("p90", "baseline p90", baseline.summary.total_p90_ms));
    }
    if let Some(server) = &view.server {
        stats.push(Stat::text("server", "Server header", server));
    }
    let spectra: Vec<(String, &[SpectrumPoint])> =
        view.phases.iter().map(|p| (p.name.clone(), p.latency_spectrum.as_slice())).collect();
    Ok(DoctorSection {
        name: name.into(),
        url: view.url.clone(),
        verdict: view.verdict.to_string(),
        headline_id,
        headline_title: view.findings.first().map(|f| f.title.clone()).unwrap_or_default(),
        stats,
        phases: view
            .phases
            .iter()
            .map(|p| PhaseRow {
                name: p.name.clone(),
                description: p.description.clone(),
                responses: p.summary.responses as u64,
                errors: p.summary.errors,
                p50: format_duration_ms(p.summary.total_p50_ms),
                p50_ms: p.summary.total_p50_ms,
                p90: format_duration_ms(p.summary.total_p90_ms),
                first_byte_p50: format_duration_ms(p.summary.first_byte_p50_ms),
                read_gap_p50: format_duration_ms(p.summary.read_gap_p50_ms),
                stalled: p.summary.stalled as u64,
            })
            .collect(),
        spectrum: spectra_figure(
            "phase-spectrum",
            "Response time by percentile, per phase",
            "response time",
            &spectra,
            "This report has no per-phase spectrum (written by an earlier nodelay).",
        )?,
        findings: findings(&view.findings),
        notes: view.notes.iter().map(|n| (n.id.as_str().to_string(), n.title.clone())).collect(),
        skipped: view.skipped_experiments.clone(),
        try_fix: view.try_fix.as_ref().map(|t| t.outcome.clone()).unwrap_or_default(),
        probes: view
            .expect_continue
            .iter()
            .map(|expect| format!("Expect: 100-continue: {}", expect.describe()))
            .chain(
                view.idle_keep_alive
                    .iter()
                    .map(|idle| format!("Idle keep-alive connection: {}", idle.describe())),
            )
            .collect(),
        server: server(view.server_view.as_ref()),
        hops: view
            .hops
            .iter()
            .map(|hop| HopText {
                address: hop.address.clone(),
                how_used: hop.how_used.clone(),
                verdict: hop.report.as_ref().map(|r| r.verdict.to_string()).unwrap_or_default(),
                findings: hop
                    .report
                    .iter()
                    .flat_map(|r| &r.findings)
                    .map(|f| format!("{}: {}", f.id.as_str(), f.title))
                    .collect(),
                error: hop.error.clone().unwrap_or_default(),
            })
            .collect(),
    })
}

pub fn doctor_scenario(view: &DoctorScenarioReport) -> Result<Vec<DoctorSection>, HtmlError> {
    view.requests.iter().map(|request| doctor(&request.report, &request.name)).collect()
}

#[derive(Debug, Serialize)]
pub struct FlowRow {
    pub stream: u64,
    pub client: String,
    pub server: String,
    pub packets: u64,
    pub exchanges: u64,
    pub stalls: u64,
    pub time_lost: String,
    pub held_by: String,
    pub ack_delay_p50: String,
    pub stack: String,
    pub filter: String,
}

#[derive(Debug, Serialize)]
pub struct PcapSection {
    pub stats: Vec<Stat>,
    pub findings: Vec<FindingText>,
    pub flows: Vec<FlowRow>,
    pub flows_not_listed: u64,
    pub warnings: Vec<String>,
    pub error: String,
}

pub fn pcap(view: &PcapReport) -> PcapSection {
    PcapSection {
        stats: vec![
            Stat::text("verdict", "verdict", &view.verdict),
            Stat::count("packets", "packets", view.packets),
            Stat::count("tcp-packets", "TCP packets", view.tcp_packets),
            Stat::new("duration", "captured over", format_seconds(view.duration_s), Some(view.duration_s)),
            Stat::count("flows", "TCP flows", view.flows),
            Stat::count("flows-with-stalls", "flows with stalls", view.flows_with_stalls),
            Stat::count("stalls", "stalls", view.stalls),
            Stat::ms("time-lost", "time lost", view.time_lost_ms),
        ],
        findings: findings(&view.findings),
        flows: view
            .top_flows
            .iter()
            .map(|f| FlowRow {
                stream: f.tcp_stream,
                client: f.client.clone(),
                server: f.server.clone(),
                packets: f.packets,
                exchanges: u64::from(f.exchanges),
                stalls: f.stalls,
                time_lost: format_duration_ms(f.time_lost_ms),
                held_by: f.held_by.to_string(),
                ack_delay_p50: format_duration_ms(f.ack_delay_p50_ms),
                stack: f.suggested_stack.clone().unwrap_or_default(),
                filter: f.wireshark_filter.clone(),
            })
            .collect(),
        flows_not_listed: view.flows_not_listed,
        warnings: view.warnings.clone(),
        error: view.error.clone().unwrap_or_default(),
    }
}
