//! Text rendering of a doctor report: what was measured, then each finding with its
//! evidence, proof and fix, then the verdict.

use crate::Render;
use crate::doctor::{DoctorReport, DoctorScenarioReport};
use crate::format::format_duration_ms;
use crate::text::Text;
use nodelay_diagnose::{Evidence, Finding, ProofKind, STALL_GAP_MS};
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
        "nodelay doctor {} ({}): {:.1} s of a {:.0} s budget",
        r.url, r.address, r.elapsed_s, r.budget_s
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "  {:<56}{:>6}{:>12}{:>12}{:>12}{:>8}",
        "measured", "resp.", "p50 total", "1st byte", "read gap", "paused"
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
            "  {:<56}{:>6}{:>12}{:>12}{:>12}{:>8}",
            phase.description,
            s.responses,
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
    if !r.skipped_experiments.is_empty() {
        writeln!(out, "  skipped for lack of budget: {}", r.skipped_experiments.join(", "))?;
    }
    for finding in &r.findings {
        writeln!(out)?;
        write_finding(out, finding)?;
    }
    writeln!(out)?;
    let ids: Vec<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
    writeln!(out, "verdict: {}", ids.join(", "))
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
