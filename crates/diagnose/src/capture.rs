//! Findings from a packet capture: the same vocabulary as the live doctor, proven by the
//! capture rule of FIELD_NOTES §5 instead of an experiment.

use crate::finding::{Confidence, Evidence, Finding, FindingId, Proof, ProofKind};
use crate::fixes;
use crate::phase::is_clustered;
use crate::timers::match_delayed_ack_timer;

/// The stalls a capture showed where one kind of side (server or client) held its data.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureStalls {
    /// The Nagling sender was the server (else the client).
    pub held_by_server: bool,
    /// Stalls counted.
    pub stalls: u64,
    /// Flows with at least one such stall.
    pub flows: u64,
    /// Time lost to the stalls, summed.
    pub time_lost_ms: f64,
    /// The peer's ACK delay: percentiles over the stalls.
    pub ack_delay_p10_ms: f64,
    /// Median of the peer's ACK delay.
    pub ack_delay_p50_ms: f64,
    /// 90th percentile of the peer's ACK delay.
    pub ack_delay_p90_ms: f64,
    /// How soon after that ACK the held data left.
    pub release_after_ack_p50_us: f64,
    /// One stall spelled out with packet numbers.
    pub example: String,
}

/// Findings for the stalls of a capture; `healthy` when there were none among `tcp_flows`.
pub fn capture_findings(groups: &[CaptureStalls], tcp_flows: u64) -> Vec<Finding> {
    let mut findings: Vec<Finding> = groups.iter().filter(|g| g.stalls > 0).map(finding).collect();
    if findings.is_empty() {
        findings.push(Finding {
            id: FindingId::Healthy,
            title: format!("No Nagle × delayed-ACK stall in {tcp_flows} TCP flows"),
            proven: true,
            confidence: if tcp_flows > 0 { Confidence::High } else { Confidence::Low },
            evidence: vec![Evidence::new("TCP flows examined", tcp_flows as f64, "count")],
            proof: Vec::new(),
            fix_summary: "Nothing to fix.".into(),
            fix: Vec::new(),
        });
    }
    findings
}

fn finding(group: &CaptureStalls) -> Finding {
    let (holder, acker) = if group.held_by_server { ("server", "client") } else { ("client", "server") };
    let timer = match_delayed_ack_timer(group.ack_delay_p50_ms);
    let mut evidence = vec![
        Evidence::new("stalls", group.stalls as f64, "count"),
        Evidence::new("flows with stalls", group.flows as f64, "count"),
        Evidence::new("time lost to them", group.time_lost_ms, "ms"),
        Evidence::new(format!("median delay of the {acker}'s pure ACK"), group.ack_delay_p50_ms, "ms"),
        Evidence::new(
            format!("median release of the {holder}'s held data after that ACK"),
            group.release_after_ack_p50_us / 1e3,
            "ms",
        ),
    ];
    if let Some(timer) = timer {
        evidence.push(Evidence::new(
            format!("the ACK delay matches {} ({acker} side)", timer.describe()),
            group.ack_delay_p50_ms,
            "ms",
        ));
    }
    let clustered = is_clustered(group.ack_delay_p10_ms, group.ack_delay_p50_ms, group.ack_delay_p90_ms);
    let confidence =
        if group.stalls >= 3 && clustered && timer.is_some() { Confidence::High } else { Confidence::Medium };
    let (id, messages, fix_summary, fix) = if group.held_by_server {
        (
            FindingId::ServerNagleDelayedAck,
            "responses",
            fixes::SERVER_NODELAY_SUMMARY,
            fixes::server_nodelay(),
        )
    } else {
        (
            FindingId::ClientNagleDelayedAck,
            "requests",
            fixes::CLIENT_SINGLE_WRITE_SUMMARY,
            fixes::client_single_write(),
        )
    };
    let title = format!(
        "The {holder} held the rest of its {messages} until the {acker}'s delayed ACK ({:.0} ms): {} stalls, {:.1} ms lost",
        group.ack_delay_p50_ms, group.stalls, group.time_lost_ms
    );
    Finding {
        id,
        title,
        proven: true,
        confidence,
        evidence,
        proof: vec![Proof {
            kind: ProofKind::CaptureRule,
            experiment: format!(
                "capture rule: a partial segment from the {holder}, the {acker}'s pure ACK after its delayed-ACK \
                 time, the {holder}'s next segment right after that ACK"
            ),
            baseline_p50_ms: group.ack_delay_p50_ms,
            experiment_p50_ms: group.release_after_ack_p50_us / 1e3,
            removed: true,
            result: group.example.clone(),
        }],
        fix_summary: fix_summary.into(),
        fix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(held_by_server: bool, stalls: u64) -> CaptureStalls {
        CaptureStalls {
            held_by_server,
            stalls,
            flows: 1,
            time_lost_ms: 40.1 * stalls as f64,
            ack_delay_p10_ms: 40.0,
            ack_delay_p50_ms: 40.1,
            ack_delay_p90_ms: 40.3,
            release_after_ack_p50_us: 15.0,
            example: "packet #12".into(),
        }
    }

    #[test]
    fn server_and_client_stalls_get_their_ids() {
        let findings = capture_findings(&[group(true, 9), group(false, 0)], 1);
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].id, FindingId::ServerNagleDelayedAck);
        assert_eq!(findings[0].confidence, Confidence::High);
        assert!(findings[0].evidence.iter().any(|e| e.what.contains("Linux/FreeBSD")));
        let findings = capture_findings(&[group(false, 2)], 1);
        assert_eq!(findings[0].id, FindingId::ClientNagleDelayedAck);
        assert_eq!(findings[0].confidence, Confidence::Medium);
    }

    #[test]
    fn no_stalls_is_healthy() {
        let findings = capture_findings(&[], 12);
        assert_eq!(findings[0].id, FindingId::Healthy);
        assert!(findings[0].title.contains("12 TCP flows"));
    }
}
