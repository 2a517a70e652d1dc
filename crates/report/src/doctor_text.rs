//! Text rendering of a doctor report: what was measured, then each finding with its
//! evidence, proof and fix, then the verdict.

use crate::Render;
use crate::doctor::{DoctorReport, DoctorScenarioReport, PhaseReport};
use crate::format::format_duration_ms;
use crate::text::Text;
use nodelay_diagnose::{Evidence, Finding, MAX_FAILED_SHARE, ProofKind, STALL_GAP_MS};
use std::fmt::Write;

impl Render<DoctorReport> for Text {
    fn render(&self, report: &DoctorReport) -> String {
        let mut out = String::new();
        write_doctor(&mut out, report).expect("writing to a String cannot fail");
        out
    }
}

fn format_evidence(evidence: &Evidence) -> String {
    match evidence.unit {
        "ms" => format_duration_ms(evidence.value),
        "%" => format!("{:.0} %", evidence.value),
        "bytes" => format!("{:.0} bytes", evidence.value),
        "count" if evidence.value.fract() == 0.0 => format!("{:.0}", evidence.value),
        "count" => format!("{:.2}", evidence.value),
        unit => format!("{} {unit}", evidence.value),
    }
}

fn write_doctor(out: &mut String, r: &DoctorReport) -> std::fmt::Result {
    writeln!(
        out,
        "nodelay doctor {} ({}): {:.1} s of a {} s budget",
        r.url,
        r.address,
        r.elapsed_s,
        // A scenario request's share is rarely whole seconds.
        format!("{:.2}", r.budget_s).trim_end_matches('0').trim_end_matches('.')
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "  {:<56}{:>6}{:>7}{:>12}{:>12}{:>12}{:>8}",
        "measured", "resp.", "failed", "p50 total", "1st byte", "read gap", "paused"
    )?;
    for phase in &r.phases {
        let s = &phase.summary;
        let paused = if s.steady_responses == 0 {
            "-".into()
        } else {
            format!("{:.0} %", s.stalled_fraction() * 100.0)
        };
        writeln!(
            out,
            "  {:<56}{:>6}{:>7}{:>12}{:>12}{:>12}{:>8}",
            phase.description,
            s.responses,
            s.errors,
            format_duration_ms(s.total_p50_ms),
            format_duration_ms(s.first_byte_p50_ms),
            format_duration_ms(s.read_gap_p50_ms),
            paused,
        )?;
    }
    if let Some(baseline) = r.phases.first()
        && baseline.summary.reuses_connections
        && let Some(first) = baseline.summary.first_request_total_ms
    {
        let escaped = baseline.summary.first_request_read_gap_ms.is_some_and(|gap| gap < STALL_GAP_MS)
            && baseline.summary.stalled > 0;
        let why = if escaped { " (a fresh connection ACKs at once, so it escapes the stall)" } else { "" };
        writeln!(out, "  first request on the fresh connection: {}{why}", format_duration_ms(first))?;
    }
    for phase in r.phases.iter().filter(|p| p.summary.errors > 0) {
        write_failures(out, phase)?;
    }
    if !r.skipped_experiments.is_empty() {
        writeln!(out, "  skipped for lack of budget: {}", r.skipped_experiments.join(", "))?;
    }
    if let Some(page) = &r.error_page {
        writeln!(
            out,
            "  note: {} of {} baseline responses were not 2xx/3xx ({}): this diagnoses an error page; check the URL",
            page.responses,
            page.of,
            page.statuses()
        )?;
    }
    for finding in &r.findings {
        writeln!(out)?;
        write_finding(out, finding)?;
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
    writeln!(out, "verdict: {}{of_what}", ids.join(", "))
}

/// `baseline: 14 of 40 requests failed, 12 of them malformed_response ("..."); too many
/// failures for a verdict (more than 10 % failed)`.
fn write_failures(out: &mut String, phase: &PhaseReport) -> std::fmt::Result {
    let s = &phase.summary;
    let label = match phase.description.strip_prefix("experiment: ") {
        Some(experiment) => format!("experiment '{experiment}'"),
        None => phase.name.clone(),
    };
    write!(out, "  {label}: {} of {} requests failed", s.errors, s.attempts)?;
    if let Some(error) = &s.most_common_error {
        write!(out, ", {} of them {} (\"{}\")", error.count, error.kind, error.example)?;
    }
    if !s.reliable {
        let consequence = if phase.name == "baseline" { "for a verdict" } else { "to count as proof" };
        write!(
            out,
            "; too many failures {consequence} (more than {:.0} % failed)",
            MAX_FAILED_SHARE * 100.0
        )?;
    }
    writeln!(out)
}

pub(crate) fn write_finding(out: &mut String, f: &Finding) -> std::fmt::Result {
    let proven = if f.proven { "proven" } else { "not proven" };
    let confidence = serde_json::to_value(f.confidence).ok().and_then(|v| v.as_str().map(str::to_string));
    writeln!(out, "{} ({proven}, {} confidence)", f.id.as_str(), confidence.unwrap_or_default())?;
    writeln!(out, "  {}", f.title)?;
    writeln!(out, "  evidence:")?;
    for evidence in &f.evidence {
        writeln!(out, "    {:<58}{:>12}", evidence.what, format_evidence(evidence))?;
    }
    if !f.proof.is_empty() {
        writeln!(out, "  proof:")?;
        for proof in &f.proof {
            let verdict = match (proof.kind, proof.removed) {
                (ProofKind::CaptureRule, _) => "seen in the capture",
                (ProofKind::Experiment, true) => "removed it",
                (ProofKind::Experiment, false) => "did not remove it",
            };
            writeln!(out, "    {}: {} ({verdict})", proof.experiment, proof.result)?;
        }
    }
    writeln!(out, "  fix: {}", f.fix_summary)?;
    // The server's own stack, when its Server header named it, and the others folded.
    let detected: Vec<_> = f.fix.iter().filter(|fix| fix.detected).collect();
    if !detected.is_empty() {
        let others = f.fix.len() - detected.len();
        for fix in detected {
            writeln!(out, "    {:<36}{} (your server, by its Server header)", fix.stack, fix.how)?;
        }
        if others > 0 {
            writeln!(out, "    (fixes for {others} other stacks: --json lists them)")?;
        }
        return Ok(());
    }
    for fix in &f.fix {
        writeln!(out, "    {:<36}{}", fix.stack, fix.how)?;
    }
    Ok(())
}

impl Render<DoctorScenarioReport> for Text {
    fn render(&self, report: &DoctorScenarioReport) -> String {
        let mut out =
            format!("nodelay doctor {}: {} requests of a scenario\n", report.url, report.requests.len());
        for named in &report.requests {
            let ids: Vec<&str> = named.report.findings.iter().map(|f| f.id.as_str()).collect();
            out.push_str(&format!("  {:<32}{}\n", named.name, ids.join(", ")));
        }
        for named in &report.requests {
            out.push_str(&format!("\n=== request '{}' ===\n", named.name));
            out.push_str(&self.render(&named.report));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
                first_byte: d,
                total: d,
                read_chunks: 1,
                max_read_gap: Duration::ZERO,
                bytes_before_max_gap: 0,
                response_bytes: 40,
                status: 200,
            })
            .collect()
    }

    fn failures(kind: ErrorKind, message: &str, count: usize) -> Vec<ErrorRecord> {
        (0..count).map(|_| ErrorRecord { connection: 0, request: 0, kind, message: message.into() }).collect()
    }

    fn render(observations: &Observations) -> String {
        let findings = diagnose(observations);
        let report = DoctorReport::new(
            "http://h/".into(),
            "127.0.0.1:1".into(),
            Duration::from_secs(10),
            Duration::from_secs(1),
            observations,
            findings,
            &[],
        );
        Text.render(&report)
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
            experiments: Vec::new(),
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
}
