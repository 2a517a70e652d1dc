//! A diagnosis finding as text, the same in every report that shows one (bench, doctor,
//! compare, pcap, proxy): its title, evidence, proof and fix.

use crate::format::{DurationScale, format_duration_ms};
use crate::text::layout::{Col, TextTable};
use crate::text::wrap::wrap;
use nodelay_diagnose::{Finding, ProofKind};
use nodelay_flags::Flag;
use std::fmt::Write;

/// An evidence value with its `unit`, milliseconds in the finding's one `scale`.
pub(crate) fn format_evidence(value: f64, unit: &str, scale: &DurationScale) -> String {
    match unit {
        // The block's unit, unless it would show a small value as zero (0.46 ms among seconds).
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
        "count" if value.fract() == 0.0 => format!("{value:.0}"),
        "count" => format!("{value:.2}"),
        unit => format!("{value} {unit}"),
    }
}

/// One unit for a finding's evidence in milliseconds (`durations`): milliseconds when its
/// `title` speaks in them (not "1501.6 ms" above "1.50 s").
pub(crate) fn evidence_scale(title: &str, durations: impl IntoIterator<Item = f64>) -> DurationScale {
    if says_milliseconds(title) {
        DurationScale::milliseconds(durations)
    } else {
        DurationScale::for_ms(durations)
    }
}

/// The fixes (stack, how, detected): only the server's own stack when its Server header
/// named it, the others folded into a line saying where they are `listed`.
pub(crate) fn write_fixes(out: &mut String, fixes: &[(&str, &str, bool)], listed: Flag, width: usize) {
    let detected = fixes.iter().filter(|(_, _, detected)| *detected).count();
    let mut table = TextTable::new(width, 4, &[Col::Left, Col::Hanging]);
    for (stack, how, yours) in fixes.iter().filter(|(_, _, yours)| detected == 0 || *yours) {
        let yours = if *yours { " (your server's stack)" } else { "" };
        table.row([stack.to_string(), format!("{how}{yours}")]);
    }
    out.push_str(&table.render());
    let others = fixes.len() - detected;
    if detected > 0 && others > 0 {
        let folded = format!("(fixes for {others} other stacks: {listed} lists them)");
        out.push_str(&wrap(&folded, width, "    ", "      "));
    }
}

/// A finding laid out for `width` columns: the title and proofs wrap with a hanging indent,
/// the evidence and the fixes are tables whose text wraps beside its label.
pub(crate) fn write_finding_fitted(out: &mut String, f: &Finding, width: usize) -> std::fmt::Result {
    let proven = if f.proven { "proven" } else { "not proven" };
    let confidence = serde_json::to_value(f.confidence).ok().and_then(|v| v.as_str().map(str::to_string));
    let heading = format!("{} ({proven}, {} confidence)", f.id.as_str(), confidence.unwrap_or_default());
    out.push_str(&wrap(&heading, width, "", "  "));
    out.push_str(&wrap(&f.title, width, "  ", "    "));
    writeln!(out, "  evidence:")?;
    let scale = evidence_scale(&f.title, f.evidence.iter().filter(|e| e.unit == "ms").map(|e| e.value));
    let mut evidence = TextTable::new(width, 4, &[Col::Hanging, Col::Right]);
    for item in &f.evidence {
        evidence.row([item.what.clone(), format_evidence(item.value, &item.unit, &scale)]);
    }
    out.push_str(&evidence.render());
    if !f.proof.is_empty() {
        writeln!(out, "  proof:")?;
        for proof in &f.proof {
            let line = format!("{}: {} ({})", proof.experiment, proof.result, proof_verdict(proof));
            out.push_str(&wrap(&line, width, "    ", "      "));
        }
    }
    out.push_str(&wrap(&format!("fix: {}", f.fix_summary), width, "  ", "    "));
    let fixes: Vec<(&str, &str, bool)> =
        f.fix.iter().map(|fix| (&*fix.stack, &*fix.how, fix.detected)).collect();
    write_fixes(out, &fixes, Flag::Json, width);
    Ok(())
}

/// The text has a number in milliseconds ("43 ms", "1501.6 ms").
fn says_milliseconds(text: &str) -> bool {
    text.match_indices(" ms").any(|(at, _)| {
        let after = text[at + 3..].chars().next();
        text[..at].ends_with(|c: char| c.is_ascii_digit()) && !after.is_some_and(char::is_alphanumeric)
    })
}

fn proof_verdict(proof: &nodelay_diagnose::Proof) -> &'static str {
    match (proof.kind, proof.removed) {
        (ProofKind::CaptureRule, _) => "seen in the capture",
        (ProofKind::ServerView, _) => "read on the server",
        (ProofKind::Probe, _) => "seen",
        (ProofKind::UpstreamDiagnosis, true) => "removed it on that hop",
        (ProofKind::UpstreamDiagnosis, false) => "seen on that hop",
        (ProofKind::RelayRule, _) => "seen by the relay",
        (ProofKind::Experiment | ProofKind::FixApplied, true) => "removed it",
        (ProofKind::Experiment | ProofKind::FixApplied, false) => "did not remove it",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nodelay_diagnose::{Confidence, Evidence, FindingId};

    #[test]
    fn a_finding_speaks_one_unit() {
        let finding = Finding {
            id: FindingId::ListenBacklogOverflow,
            title: "New connections waited 1501.6 ms for a SYN retransmission".into(),
            proven: true,
            confidence: Confidence::High,
            evidence: vec![
                Evidence::new("slowest open", 1501.6, "ms"),
                Evidence::new("median open", 0.42, "ms"),
            ],
            proof: Vec::new(),
            fix_summary: String::new(),
            fix: Vec::new(),
        };
        let mut out = String::new();
        write_finding_fitted(&mut out, &finding, 80).unwrap();
        assert!(out.contains("1501.60 ms") && out.contains("0.42 ms"), "{out}");
        assert!(!out.contains(" s\n") && !out.contains("1.50 s"), "{out}");
        assert!(
            says_milliseconds("waits 43 ms.") && !says_milliseconds("10 msgs") && !says_milliseconds("1.5 s")
        );
    }
}
