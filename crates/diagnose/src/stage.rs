//! The diagnosis as one stage: everything measured of a target in, its [`Diagnosis`] out:
//! findings ranked, fixes that name the target, the notes, and `healthy` only when nothing was
//! found (the rules themselves never say it). Nothing edits it after this returns.

use crate::diagnosis::Diagnosis;
use crate::finding::{Finding, FindingId};
use crate::hops::{order_fixes, proxy_hop_stall};
use crate::idle::keepalive_idle_close;
use crate::phase::Observations;
use crate::rules::rule_findings;

/// The diagnosis of everything measured of a target: its findings, most important first
/// (`healthy`, alone, when nothing is wrong), and the notes that cost it nothing.
pub fn diagnose(observations: &Observations) -> Diagnosis {
    let mut notes = crate::window::window_notes(observations);
    notes.extend(crate::unseen_hops::unseen_hops_note(observations));
    Diagnosis { findings: findings_of(observations), notes, suggestions: Vec::new() }
}

/// The findings of [`diagnose`].
fn findings_of(observations: &Observations) -> Vec<Finding> {
    let mut findings = rule_findings(observations);
    if let Some(hop_stall) = proxy_hop_stall(&observations.baseline.summary(), &observations.hops) {
        // The hop explains what the front could only describe.
        findings.retain(|f| !matches!(f.id, FindingId::SlowFirstByte | FindingId::SlowResponseBody));
        findings.insert(0, hop_stall);
    }
    // A fix that would expose a stall proven on a hop comes after the hop's.
    order_fixes(&mut findings, &observations.hops);
    let idle_close = observations
        .idle_probe
        .as_ref()
        .and_then(|probe| keepalive_idle_close(probe, observations.server_view.as_ref()));
    findings.extend(idle_close);
    name_the_target(&mut findings, observations);
    if findings.is_empty() {
        findings.extend(crate::rules::healthy_of(observations));
    }
    findings
}

/// The fixes name the port the server listens on, not a placeholder, and an error page is
/// shown as the run asked for it.
fn name_the_target(findings: &mut [Finding], observations: &Observations) {
    if let Some(port) = observations.target_port {
        let port = format!(":{port}");
        for finding in findings.iter_mut() {
            finding.fix_summary = finding.fix_summary.replace(":PORT", &port);
        }
    }
    if let Some(command) = &observations.error_page_command {
        for finding in findings.iter_mut().filter(|f| f.id == FindingId::ErrorResponses) {
            finding.fix_summary.push_str(&format!(" See one: `{command}`"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::HopDiagnosis;
    use crate::phase::tests::{phase, response};
    use nodelay_engine::IdleProbe;
    use std::time::Duration;

    fn ids(findings: &[Finding]) -> Vec<FindingId> {
        findings.iter().map(|f| f.id).collect()
    }

    /// A keep-alive baseline whose responses all take `first_byte_ms`.
    fn answering_in(first_byte_ms: f64) -> Observations {
        let responses = (0..40).map(|i| response(i, first_byte_ms, None)).collect();
        Observations { baseline: phase(None, responses), ..Observations::default() }
    }

    fn proven_stall() -> Finding {
        Finding { fix_summary: "Set TCP_NODELAY on :PORT.".into(), ..crate::hops::tests::stall() }
    }

    #[test]
    fn a_healthy_target_is_healthy_alone_until_the_idle_probe_finds_a_close() {
        let mut observations = answering_in(0.2);
        assert_eq!(ids(&diagnose(&observations).findings), [FindingId::Healthy]);
        observations.idle_probe = Some(IdleProbe {
            status: 200,
            said_close: false,
            announced_timeout_s: None,
            closed_after: Some(Duration::from_millis(2003)),
            waited: Duration::from_millis(2003),
        });
        assert_eq!(ids(&diagnose(&observations).findings), [FindingId::KeepaliveIdleClose]);
    }

    #[test]
    fn a_hop_that_explains_a_slow_front_replaces_what_the_front_could_only_describe() {
        let mut observations = answering_in(44.0);
        assert_eq!(ids(&diagnose(&observations).findings)[0], FindingId::SlowFirstByte);
        let hop_baseline = answering_in(43.8).baseline.summary();
        observations.hops = vec![HopDiagnosis {
            address: "127.0.0.1:9000".parse().unwrap(),
            process: Some("python3 (PID 42)".into()),
            baseline: hop_baseline,
            findings: vec![proven_stall()],
        }];
        let findings = ids(&diagnose(&observations).findings);
        assert_eq!(findings[0], FindingId::ProxyHopStall);
        assert!(!findings.contains(&FindingId::SlowFirstByte), "{findings:?}");
    }

    #[test]
    fn fixes_name_the_target_port_and_an_error_page_its_command() {
        let mut findings = vec![proven_stall(), Finding { id: FindingId::ErrorResponses, ..proven_stall() }];
        let observations = Observations {
            target_port: Some(8080),
            error_page_command: Some("curl -sS http://h:8080/".into()),
            ..Observations::default()
        };
        name_the_target(&mut findings, &observations);
        assert_eq!(findings[0].fix_summary, "Set TCP_NODELAY on :8080.");
        assert_eq!(findings[1].fix_summary, "Set TCP_NODELAY on :8080. See one: `curl -sS http://h:8080/`");
        // Without a port, the placeholder stays for the reader to fill.
        let mut unnamed = vec![proven_stall()];
        name_the_target(&mut unnamed, &Observations::default());
        assert!(unnamed[0].fix_summary.contains(":PORT"));
    }
}
