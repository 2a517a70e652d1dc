//! A finding of a saved run as text, laid out as a live run's (`text::finding`): its id,
//! proven or not and confidence, title, evidence with units, proof, fix summary and fixes.

use crate::saved::{FindingView, ProofView};
use crate::text::finding::{evidence_scale, format_evidence, write_fixes};
use crate::text::layout::{Col, TextTable};
use crate::text::wrap::wrap;
use std::fmt::Write;

/// `finding` for `width` columns, after a blank line.
pub fn write_finding(out: &mut String, finding: &FindingView, width: usize) -> std::fmt::Result {
    writeln!(out)?;
    let proven = if finding.proven { "proven" } else { "not proven" };
    let heading = format!("{} ({proven}, {} confidence)", finding.id, finding.confidence);
    out.push_str(&wrap(&heading, width, "", "  "));
    out.push_str(&wrap(&finding.title, width, "  ", "    "));
    if !finding.evidence.is_empty() {
        writeln!(out, "  evidence:")?;
        let durations = finding.evidence.iter().filter(|e| e.unit == "ms").map(|e| e.value);
        let scale = evidence_scale(&finding.title, durations);
        let mut evidence = TextTable::new(width, 4, &[Col::Hanging, Col::Right]);
        for item in &finding.evidence {
            // A unit left empty is a count.
            let unit = if item.unit.is_empty() { "count" } else { &item.unit };
            evidence.row([item.what.clone(), format_evidence(item.value, unit, &scale)]);
        }
        out.push_str(&evidence.render());
    }
    if !finding.proof.is_empty() {
        writeln!(out, "  proof:")?;
        for proof in &finding.proof {
            let line = format!("{}: {} ({})", proof.experiment, proof.result, proof_verdict(proof));
            out.push_str(&wrap(&line, width, "    ", "      "));
        }
    }
    if !finding.fix_summary.is_empty() {
        out.push_str(&wrap(&format!("fix: {}", finding.fix_summary), width, "  ", "    "));
    }
    let fixes: Vec<(&str, &str, bool)> =
        finding.fix.iter().map(|fix| (fix.stack.as_str(), fix.how.as_str(), fix.detected)).collect();
    write_fixes(out, &fixes, "the run's JSON", width);
    Ok(())
}

/// What a proof showed, by its kind (the JSON's kebab-case names).
fn proof_verdict(proof: &ProofView) -> &'static str {
    match (proof.kind.as_str(), proof.removed) {
        ("capture-rule", _) => "seen in the capture",
        ("server-view", _) => "read on the server",
        ("probe", _) => "seen",
        ("upstream-diagnosis", true) => "removed it on that hop",
        ("upstream-diagnosis", false) => "seen on that hop",
        ("relay-rule", _) => "seen by the relay",
        (_, true) => "removed it",
        (_, false) => "did not remove it",
    }
}
