//! Text rendering of a doctor report: what was measured, then each finding with its
//! evidence, proof and fix, then the verdict.

use crate::format::{DurationScale, format_duration_ms};
use crate::model::doctor::{DoctorReport, DoctorScenarioReport, PhaseReport};
use crate::render::Render;
use crate::text::MIN_WIDTH;
use crate::text::finding::write_finding_fitted;
use crate::text::layout::{Col, TextTable};
use crate::text::server_view::write_server_view;
use crate::text::wrap::wrap;
use crate::text::{FittedText, Text};
use nodelay_diagnose::{MAX_FAILED_SHARE, STALL_GAP_MS};
use std::fmt::Write;

impl Render<DoctorReport> for Text {
    fn render(&self, report: &DoctorReport) -> String {
        FittedText::default().render(report)
    }
}

impl Render<DoctorReport> for FittedText {
    fn render(&self, report: &DoctorReport) -> String {
        let mut out = String::new();
        write_doctor(&mut out, report, self.width.max(MIN_WIDTH)).expect("writing to a String cannot fail");
        out + &self.thresholds(&report.thresholds)
    }
}

/// A phase as the table of what was measured shows it.
pub(crate) struct PhaseRow<'a> {
    pub description: &'a str,
    pub responses: u64,
    pub errors: u64,
    pub total_p50_ms: f64,
    pub first_byte_p50_ms: f64,
    pub read_gap_p50_ms: f64,
    /// Share of the steady responses that paused (`None`: none was steady).
    pub paused_share: Option<f64>,
}

fn phase_row(phase: &PhaseReport) -> PhaseRow<'_> {
    let s = &phase.summary;
    PhaseRow {
        description: &phase.description,
        responses: s.responses as u64,
        errors: s.errors,
        total_p50_ms: s.total_p50_ms,
        first_byte_p50_ms: s.first_byte_p50_ms,
        read_gap_p50_ms: s.read_gap_p50_ms,
        paused_share: (s.steady_responses > 0).then(|| s.stalled_fraction()),
    }
}

/// What each phase measured: its responses and failures, its medians, and the share that
/// paused.
pub(crate) fn write_phases(out: &mut String, phases: &[PhaseRow], width: usize) {
    // One unit per column: each compares one figure across the phases.
    let column = |pick: fn(&PhaseRow) -> f64| DurationScale::for_ms(phases.iter().map(pick));
    let total = column(|p| p.total_p50_ms);
    let first_byte = column(|p| p.first_byte_p50_ms);
    let read_gap = column(|p| p.read_gap_p50_ms);
    let mut columns = vec![Col::Hanging];
    columns.extend([Col::Right; 6]);
    let mut table = TextTable::new(width, 2, &columns);
    table.header(["measured", "resp.", "failed", "p50 total", "1st byte", "read gap", "paused"]);
    for phase in phases {
        table.row([
            phase.description.to_string(),
            phase.responses.to_string(),
            phase.errors.to_string(),
            total.format(phase.total_p50_ms),
            first_byte.format(phase.first_byte_p50_ms),
            read_gap.format(phase.read_gap_p50_ms),
            phase.paused_share.map_or_else(|| "-".into(), |share| format!("{:.0} %", share * 100.0)),
        ]);
    }
    out.push_str(&table.render());
}

fn write_doctor(out: &mut String, r: &DoctorReport, width: usize) -> std::fmt::Result {
    let header = format!(
        "nodelay doctor {} ({}): {:.1} s of a {} budget",
        r.url,
        r.address,
        r.elapsed_s,
        // A scenario request's share is rarely whole seconds.
        crate::format::format_seconds(r.budget_s)
    );
    out.push_str(&wrap(&header, width, "", "  "));
    if let Some(tls) = &r.tls {
        out.push_str(&wrap(&tls.describe(), width, "  ", "    "));
    }
    writeln!(out)?;
    let phases: Vec<PhaseRow> = r.phases.iter().map(phase_row).collect();
    write_phases(out, &phases, width);
    // Across a path, the round trip beside the figures it is part of (none on loopback).
    if let Some(rtt) =
        r.phases.first().and_then(|baseline| nodelay_tcp::path_rtt_ms(baseline.summary.path_rtt_ms))
    {
        let line = format!(
            "path round trip {} (client TCP_INFO min_rtt): every first byte includes it; first bytes and pauses \
             are judged beyond it",
            format_duration_ms(rtt)
        );
        out.push_str(&wrap(&line, width, "  ", "    "));
    }
    if let Some(baseline) = r.phases.first()
        && baseline.summary.reuses_connections
        && let Some(first) = baseline.summary.first_request_total_ms
    {
        // It escaped only if no stall-sized wait is anywhere in it: over TLS the wait can come
        // before its first byte (the server's session tickets hold the response back).
        let escaped = baseline.summary.first_request_read_gap_ms.is_some_and(|gap| gap < STALL_GAP_MS)
            && first < STALL_GAP_MS
            && baseline.summary.stalled > 0;
        let why = if escaped { " (a fresh connection ACKs at once, so it escapes the stall)" } else { "" };
        let handshake = baseline
            .summary
            .tls_handshake_p50_ms
            .map(|tls| format!(", of which the TLS handshake {}", format_duration_ms(tls)))
            .unwrap_or_default();
        let line =
            format!("first request on the fresh connection: {}{handshake}{why}", format_duration_ms(first));
        out.push_str(&wrap(&line, width, "  ", "    "));
    }
    if let Some(expect) = &r.expect_continue {
        let line = format!("Expect: 100-continue: {}", expect.describe());
        out.push_str(&wrap(&line, width, "  ", "    "));
    }
    if let Some(idle) = &r.idle_keep_alive {
        let line = format!("idle keep-alive connection: {}", idle.describe());
        out.push_str(&wrap(&line, width, "  ", "    "));
    }
    for phase in r.phases.iter().filter(|p| p.summary.errors > 0) {
        out.push_str(&wrap(&failures(phase, r.verdict != "unreliable"), width, "  ", "    "));
    }
    if !r.skipped_experiments.is_empty() {
        let line = format!("skipped for lack of budget: {}", r.skipped_experiments.join(", "));
        out.push_str(&wrap(&line, width, "  ", "    "));
    }
    if r.interrupted {
        let line = "interrupted (Ctrl-C) during the last phase above: no later experiment was run, and the \
                    findings rest on what was measured until then";
        out.push_str(&wrap(line, width, "  ", "    "));
    }
    if let Some(view) = &r.server_view {
        writeln!(out)?;
        write_server_view(out, view, width)?;
    }
    write_hops(out, r, width)?;
    for finding in &r.findings {
        writeln!(out)?;
        write_finding_fitted(out, finding, width)?;
    }
    if let Some(try_fix) = &r.try_fix {
        writeln!(out)?;
        out.push_str(&wrap(&format!("try-fix: {}", try_fix.outcome), width, "", "  "));
    }
    writeln!(out)?;
    let ids: Vec<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
    // Never "healthy" alone when what was measured is an error page.
    let of_what = match &r.error_page {
        Some(page) if page.responses == page.of => format!(" (of an error page: {})", page.statuses()),
        Some(page) => {
            format!(" ({} of {} responses an error page: {})", page.responses, page.of, page.statuses())
        }
        None => String::new(),
    };
    let interrupted = if r.interrupted { " (interrupted)" } else { "" };
    out.push_str(&wrap(&format!("verdict: {}{of_what}{interrupted}", ids.join(", ")), width, "", "  "));
    // Facts the measured workload does not pay: under the verdict, which they do not change.
    for note in &r.notes {
        out.push_str(&wrap(&format!("note: {}", note.title), width, "", "  "));
    }
    Ok(())
}

/// The chain the doctor followed, in one line, then each hop's own diagnosis, indented.
fn write_hops(out: &mut String, r: &DoctorReport, width: usize) -> std::fmt::Result {
    if r.hops.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    let front = r
        .phases
        .first()
        .map(|p| format!(" (first byte {})", format_duration_ms(p.summary.first_byte_p50_ms)));
    let line = format!("chain: client → {}{}{}", server_name(r), front.unwrap_or_default(), chain_after(r));
    out.push_str(&wrap(&line, width, "", "  "));
    for hop in &r.hops {
        writeln!(out)?;
        let heading = format!("upstream {} ({}), diagnosed directly:", hop.address, hop.how_used);
        out.push_str(&wrap(&heading, width, "", "  "));
        match (&hop.report, &hop.error) {
            (Some(report), _) => {
                // Indented 4 under its hop, less where that would take the nested report
                // below the narrowest width laid out.
                let indent = " ".repeat(width.saturating_sub(MIN_WIDTH).min(4));
                let mut nested = String::new();
                write_doctor(&mut nested, report, width - indent.len())?;
                for line in nested.lines() {
                    if line.is_empty() {
                        writeln!(out)?;
                    } else {
                        writeln!(out, "{indent}{line}")?;
                    }
                }
            }
            (None, error) => {
                let why = error.as_deref().unwrap_or("not diagnosed");
                out.push_str(&wrap(why, width, "    ", "      "));
            }
        }
    }
    Ok(())
}

/// `python3 (PID 42) 127.0.0.1:9000`, or the address alone when its process was not read.
fn server_name(r: &DoctorReport) -> String {
    match r.server_view.as_ref().filter(|v| v.available) {
        Some(view) => format!("{} {}", view.process_names(), r.address),
        None => r.address.clone(),
    }
}

/// ` → python3 (PID 42) 127.0.0.1:9000 (server-nagle-delayed-ack, proven)`, following each
/// hop's own hops; several upstreams of one server are listed in brackets.
fn chain_after(r: &DoctorReport) -> String {
    let parts: Vec<String> = r
        .hops
        .iter()
        .map(|hop| match &hop.report {
            Some(report) => {
                let ids: Vec<&str> = report.findings.iter().map(|f| f.id.as_str()).collect();
                let proven =
                    report.findings.iter().any(|f| f.proven && f.id != nodelay_diagnose::FindingId::Healthy);
                let proven = if proven { ", proven" } else { "" };
                format!("{} ({}{proven}){}", server_name(report), ids.join(", "), chain_after(report))
            }
            None => format!("{} (not diagnosed)", hop.address),
        })
        .collect();
    match parts.len() {
        0 => String::new(),
        1 => format!(" → {}", parts[0]),
        _ => format!(" → [{}]", parts.join(" | ")),
    }
}

/// `baseline: 14 of 40 requests failed, 12 of them malformed_response ("..."); too many
/// failures for a verdict (more than 10 % failed)`.
/// `verdict_stands`: the report has a verdict all the same (a baseline whose server closed
/// each connection is judged on fresh connections).
fn failures(phase: &PhaseReport, verdict_stands: bool) -> String {
    let s = &phase.summary;
    let label = match phase.description.strip_prefix("experiment: ") {
        Some(experiment) => format!("experiment '{experiment}'"),
        None => phase.name.clone(),
    };
    let mut line = format!("{label}: {} of {} requests failed", s.errors, s.attempts);
    if let Some(error) = &s.most_common_error {
        line += &format!(", {} of them {} (\"{}\")", error.count, error.kind, error.example);
    }
    if !s.reliable && phase.name == "baseline" && verdict_stands {
        line += "; the server closed each keep-alive connection after one response, so the verdict is judged on \
                 fresh connections";
    } else if !s.reliable {
        let consequence = if phase.name == "baseline" { "for a verdict" } else { "to count as proof" };
        line += &format!(
            "; too many failures {consequence} (more than {:.0} % failed)",
            MAX_FAILED_SHARE * 100.0
        );
    }
    line
}

impl Render<DoctorScenarioReport> for Text {
    fn render(&self, report: &DoctorScenarioReport) -> String {
        FittedText::default().render(report)
    }
}

impl Render<DoctorScenarioReport> for FittedText {
    fn render(&self, report: &DoctorScenarioReport) -> String {
        let width = self.width.max(MIN_WIDTH);
        let heading =
            format!("nodelay doctor {}: {} requests of a scenario", report.url, report.requests.len());
        let mut out = wrap(&heading, width, "", "  ");
        let mut table = TextTable::new(width, 2, &[Col::Text, Col::Text]);
        for named in &report.requests {
            let ids: Vec<&str> = named.report.findings.iter().map(|f| f.id.as_str()).collect();
            table.row([named.name.clone(), ids.join(", ")]);
        }
        out.push_str(&table.render());
        if report.interrupted {
            let line = "interrupted (Ctrl-C): the requests after the last one below were not diagnosed";
            out.push_str(&wrap(line, width, "  ", "    "));
        }
        for named in &report.requests {
            out.push('\n');
            out.push_str(&wrap(&format!("=== request '{}' ===", named.name), width, "", "  "));
            out.push_str(&self.render(&named.report));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::doctor::NamedDoctorReport;
    use nodelay_diagnose::{Experiment, Observations, Phase, diagnose};
    use nodelay_engine::{ErrorKind, ErrorRecord, ResponseRecord};
    use std::time::Duration;

    fn responses(count: u32) -> Vec<ResponseRecord> {
        let d = Duration::from_micros(100);
        (0..count)
            .map(|sequence| ResponseRecord {
                connection: 0,
                request: 0,
                sequence_on_connection: sequence,
                start_offset: Duration::ZERO,
                connect: None,
                tls_handshake: None,
                tls_resumed: false,
                first_byte: d,
                total: d,
                total_uncorrected: d,
                read_chunks: 1,
                max_read_gap: Duration::ZERO,
                bytes_before_max_gap: 0,
                last_read_gap: Duration::ZERO,
                last_read_bytes: 0,
                paused: Duration::ZERO,
                pauses: 0,
                response_bytes: 40,
                status: 200,
                http2: None,
            })
            .collect()
    }

    fn failures(kind: ErrorKind, message: &str, count: usize) -> Vec<ErrorRecord> {
        (0..count)
            .map(|_| ErrorRecord {
                connection: 0,
                request: 0,
                offset: Duration::ZERO,
                kind,
                message: message.into(),
            })
            .collect()
    }

    /// Every line fits 80 columns; the text returned is laid out wide, each sentence on one
    /// line, as the assertions below want it.
    fn render(observations: &Observations) -> String {
        let narrow = render_at(observations, 80);
        assert!(narrow.lines().all(|l| l.chars().count() <= 80), "{narrow}");
        render_at(observations, 400)
    }

    fn report(observations: &Observations) -> DoctorReport {
        let findings = diagnose(observations);
        DoctorReport::new(
            "http://h/".into(),
            "127.0.0.1:1".into(),
            Duration::from_secs(10),
            Duration::from_secs(1),
            observations,
            findings,
            &[],
        )
    }

    fn render_at(observations: &Observations, width: usize) -> String {
        FittedText::new(width).render(&report(observations))
    }

    #[test]
    fn failures_are_reported_per_phase_with_what_they_decide() {
        let mut timeouts = failures(ErrorKind::Timeout, "no complete response within 5s", 9);
        timeouts.extend(failures(ErrorKind::Reset, "read: connection reset by peer", 1));
        let observations = Observations {
            request: None,
            baseline: Phase {
                responses: responses(38),
                errors: failures(ErrorKind::Reset, "reset", 2),
                ..Phase::default()
            },
            experiments: vec![Phase {
                experiment: Some(Experiment::QuickAck),
                responses: responses(20),
                errors: timeouts,
                ..Phase::default()
            }],
            fix_trial: None,
            server_view: None,
            hold_probe: None,
            expect_probe: None,
            idle_probe: None,
            interrupted: false,
            linked_libraries: Vec::new(),
            ..Observations::default()
        };
        let text = render(&observations);
        let lines: Vec<&str> = text.lines().collect();
        let baseline_row = lines.iter().find(|l| l.trim_start().starts_with("baseline: keep-alive")).unwrap();
        assert_eq!(baseline_row.split_whitespace().nth(5), Some("2"), "failed column: {text}");
        assert!(
            lines.contains(&r#"  baseline: 2 of 40 requests failed, 2 of them reset ("reset")"#),
            "within the share, no warning:\n{text}"
        );
        assert!(
            lines.contains(
                &r#"  experiment 'client TCP_QUICKACK after every read': 10 of 30 requests failed, 9 of them timeout ("no complete response within 5s"); too many failures to count as proof (more than 10 % failed)"#
            ),
            "{text}"
        );
        assert!(text.ends_with("verdict: healthy\n"), "{text}");
    }

    #[test]
    fn too_many_baseline_failures_make_the_verdict_unreliable() {
        let observations = Observations {
            request: None,
            baseline: Phase {
                responses: responses(20),
                errors: failures(ErrorKind::MalformedResponse, "40 bytes after the end of the response", 20),
                ..Phase::default()
            },
            ..Observations::default()
        };
        let text = render(&observations);
        assert!(
            text.contains(
                r#"  baseline: 20 of 40 requests failed, 20 of them malformed_response ("40 bytes after the end of the response"); too many failures for a verdict (more than 10 % failed)"#
            ),
            "{text}"
        );
        assert!(text.contains("unreliable-measurement (proven, high confidence)"), "{text}");
        assert!(text.ends_with("verdict: unreliable-measurement\n"), "{text}");
    }

    fn healthy() -> Observations {
        Observations {
            request: None,
            baseline: Phase { responses: responses(40), ..Phase::default() },
            ..Observations::default()
        }
    }

    /// A hop's own diagnosis is indented under it, and still fits at the narrowest width.
    #[test]
    fn a_hops_diagnosis_fits_under_its_indent_at_any_width() {
        let mut front = report(&healthy());
        front.hops.push(crate::model::doctor::HopReport {
            address: "127.0.0.1:5432".into(),
            how_used: "1.00 new connections per request".into(),
            report: Some(Box::new(report(&healthy()))),
            error: None,
        });
        for width in [60, 62, 64, 80] {
            let text = FittedText::new(width).render(&front);
            assert!(text.lines().all(|l| l.chars().count() <= width), "{width}:\n{text}");
            let indent = (width - 60).min(4);
            let nested = text.lines().filter(|l| l.trim_start().starts_with("nodelay doctor")).nth(1);
            let nested = nested.expect("the hop's report");
            assert!(nested.starts_with(&format!("{}nodelay", " ".repeat(indent))), "{width}:\n{text}");
        }
    }

    #[test]
    fn long_lines_wrap_with_a_hanging_indent_at_any_width() {
        let report = report(&healthy());
        for width in [60, 80, 132] {
            let text = FittedText::new(width).render(&report);
            assert!(text.lines().all(|l| l.chars().count() <= width), "{width}:\n{text}");
        }
        let text = FittedText::new(60).render(&report);
        let lines: Vec<&str> = text.lines().collect();
        let title = lines.iter().position(|l| l.starts_with("  No TCP stall:")).expect("the title");
        assert!(lines[title + 1].starts_with("    ") && !lines[title + 1].starts_with("     "), "{text}");
        // At 60 columns the numbers leave the phase's description too little room: it goes on
        // a line of its own, above its numbers.
        let row = lines.iter().position(|l| l.starts_with("  baseline:")).expect("the baseline row");
        assert_eq!(lines[row], "  baseline: keep-alive, one connection", "{text}");
        assert!(lines[row + 1].ends_with(" %") && lines[row - 1].contains("resp."), "{text}");
        // At 80 there is room beside them, and the description wraps with a hanging indent.
        let text = FittedText::new(80).render(&report);
        let lines: Vec<&str> = text.lines().collect();
        let row = lines.iter().position(|l| l.starts_with("  baseline:")).expect("the baseline row");
        assert!(lines[row].ends_with(" %") && lines[row - 1].contains("resp."), "{text}");
    }

    #[test]
    fn an_interrupted_diagnosis_says_so_before_its_findings_and_in_its_verdict() {
        let mut report = report(&healthy());
        report.interrupted = true;
        let text = FittedText::new(400).render(&report);
        let interrupted =
            text.find("  interrupted (Ctrl-C) during the last phase above: no later experiment was run");
        let findings = text.find("healthy (proven");
        assert!(interrupted.is_some() && interrupted < findings, "{text}");
        assert!(text.ends_with("verdict: healthy (interrupted)\n"), "{text}");
        report.interrupted = false;
        assert!(!FittedText::default().render(&report).contains("interrupted"));
    }

    #[test]
    fn a_scenario_lists_its_requests_then_each_diagnosis() {
        let named = |name: &str| NamedDoctorReport { name: name.into(), report: report(&healthy()) };
        let mut first = named("a request whose name goes on and on and on and on and on");
        first.report.interrupted = true;
        let scenario = DoctorScenarioReport::new("http://h/".into(), vec![first]);
        assert!(scenario.interrupted);
        let text = Text.render(&scenario);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(
            text.contains("interrupted (Ctrl-C): the requests after the last one below were not diagnosed"),
            "{text}"
        );
        assert!(
            text.contains("=== request 'a request whose name goes on and on and on and on and on' ==="),
            "{text}"
        );
    }
}
