//! A finding of a saved run as text, laid out as a live run's (`text::finding`): its id,
//! proven or not and confidence, title, evidence with units, proof, fix summary and fixes.

use crate::format::{DurationScale, format_duration_ms};
use crate::saved::{EvidenceView, FindingView, ProofView};
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
        // One unit for the finding's durations, as live: milliseconds when its title speaks
        // in them (not "1501.6 ms" above "1.50 s").
        let durations = finding.evidence.iter().filter(|e| e.unit == "ms").map(|e| e.value);
        let scale = if says_milliseconds(&finding.title) {
            DurationScale::milliseconds(durations)
        } else {
            DurationScale::for_ms(durations)
        };
        let mut evidence = TextTable::new(width, 4, &[Col::Hanging, Col::Right]);
        for item in &finding.evidence {
            evidence.row([item.what.clone(), format_evidence(item, &scale)]);
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
    // The server's own stack, when its Server header named it, and the others folded.
    let detected = finding.fix.iter().filter(|fix| fix.detected).count();
    let mut fixes = TextTable::new(width, 4, &[Col::Left, Col::Hanging]);
    for fix in finding.fix.iter().filter(|fix| detected == 0 || fix.detected) {
        let yours = if fix.detected { " (your server's stack)" } else { "" };
        fixes.row([fix.stack.clone(), format!("{}{yours}", fix.how)]);
    }
    out.push_str(&fixes.render());
    let others = finding.fix.len() - detected;
    if detected > 0 && others > 0 {
        let folded = format!("(fixes for {others} other stacks: the run's JSON lists them)");
        out.push_str(&wrap(&folded, width, "    ", "      "));
    }
    Ok(())
}

/// An evidence value with its unit, milliseconds in the finding's one scale.
fn format_evidence(evidence: &EvidenceView, scale: &DurationScale) -> String {
    let value = evidence.value;
    match evidence.unit.as_str() {
        // The scale's, unless it would show a small value as zero (0.46 ms among seconds).
        "ms" => match scale.format(value) {
            shown if value > 0.0 && !shown.chars().any(|c| c.is_ascii_digit() && c != '0') => {
                format_duration_ms(value)
            }
            shown => shown,
        },
        "%" => format!("{value:.0} %"),
        "bytes" => format!("{value:.0} bytes"),
        "cores" => format!("{value:.2} cores"),
        "requests/s" => format!("{value:.0} requests/s"),
        "count" | "" if value.fract() == 0.0 => format!("{value:.0}"),
        "count" | "" => format!("{value:.2}"),
        unit => format!("{value} {unit}"),
    }
}

/// The text has a number in milliseconds ("43 ms", "1501.6 ms").
fn says_milliseconds(text: &str) -> bool {
    text.match_indices(" ms").any(|(at, _)| {
        let after = text[at + 3..].chars().next();
        text[..at].ends_with(|c: char| c.is_ascii_digit()) && !after.is_some_and(char::is_alphanumeric)
    })
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
