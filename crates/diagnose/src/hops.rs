//! The chain behind a proxy: when the target's process used upstreams during the baseline and
//! each was diagnosed directly, `proxy-hop-stall` names the hop where the time goes, with
//! that hop's own proof and fix. Pure: the front's summary and the hops' findings in.

use crate::finding::{Confidence, Evidence, Finding, FindingId, Proof, ProofKind};
use crate::fixes;
use crate::phase::{HopDiagnosis, PhaseSummary};
use nodelay_engine::HoldProbe;
use std::time::Duration;

/// The front must be at least this slow (median total) for a hop to be blamed.
const SLOW_FRONT_MS: f64 = 10.0;
/// A hop explains the front when its own median total is at least this share of the front's.
const EXPLAINED_SHARE: f64 = 0.5;

/// An HTTP/1.0 connection still open this long after its response was held on purpose.
const HELD_TOO_LONG: Duration = Duration::from_millis(200);

/// Findings of a hop that account for time: a stall or a slow server, not `healthy`.
fn is_cause(id: FindingId) -> bool {
    matches!(
        id,
        FindingId::ServerNagleDelayedAck
            | FindingId::ServerNagleRoundTrip
            | FindingId::ClientNagleDelayedAck
            | FindingId::ProxyHopStall
            | FindingId::SlowFirstByte
            | FindingId::SlowResponseBody
            | FindingId::ServerCpuBound
    )
}

/// The hop that explains a slow front, as a finding on the front; `None` when the front is
/// not slow or no hop accounts for its time.
pub(crate) fn proxy_hop_stall(front: &PhaseSummary, hops: &[HopDiagnosis]) -> Option<Finding> {
    if front.responses == 0 || front.total_p50_ms < SLOW_FRONT_MS {
        return None;
    }
    let (hop, cause) = hops.iter().find_map(|hop| {
        let explains = hop.baseline.total_p50_ms >= EXPLAINED_SHARE * front.total_p50_ms;
        let cause =
            hop.findings.iter().filter(|f| is_cause(f.id)).max_by_key(|f| (f.proven, f.confidence))?;
        explains.then_some((hop, cause))
    })?;
    let who = match &hop.process {
        Some(process) => format!("{process} at {}", hop.address),
        None => hop.address.to_string(),
    };
    let proven_there = if cause.proven { "proven there" } else { "seen there, not proven" };
    let explained = hop.baseline.total_p50_ms / front.total_p50_ms * 100.0;
    let proof = cause
        .proof
        .iter()
        .map(|p| Proof {
            kind: ProofKind::UpstreamDiagnosis,
            experiment: format!("on {}: {}", hop.address, p.experiment),
            baseline_p50_ms: p.baseline_p50_ms,
            experiment_p50_ms: p.experiment_p50_ms,
            removed: p.removed,
            result: p.result.clone(),
        })
        .collect();
    Some(Finding {
        id: FindingId::ProxyHopStall,
        title: format!(
            "The time goes at the hop to {who}: {} ({proven_there}). {}",
            cause.id.as_str(),
            cause.title
        ),
        proven: cause.proven,
        confidence: cause.confidence,
        evidence: vec![
            Evidence::new("median total through the front", front.total_p50_ms, "ms"),
            Evidence::new("median first byte through the front", front.first_byte_p50_ms, "ms"),
            Evidence::new(
                format!("median total of {} on its own", hop.address),
                hop.baseline.total_p50_ms,
                "ms",
            ),
            Evidence::new("share of the front's time the hop accounts for", explained.min(100.0), "%"),
        ],
        proof,
        fix_summary: format!("Fix the hop at {}: {}", hop.address, cause.fix_summary),
        fix: cause.fix.clone(),
    })
}

/// Stalls a fresh connection per request hides: proven on a hop reached with keep-alive.
fn hidden_by_fresh_connections(id: FindingId) -> bool {
    matches!(id, FindingId::ServerNagleDelayedAck | FindingId::ServerNagleRoundTrip)
}

/// Orders the fixes where one would expose another that was proven: a front that opens a
/// new connection to its upstream per request, whose upstream stalls on a reused connection
/// (Nagle on the hop), would wait that stall on every request once it pools connections. The
/// front's finding then says so, carries the hop's proof, and puts the hop's fix first.
pub(crate) fn order_fixes(findings: &mut [Finding], hops: &[HopDiagnosis]) {
    for finding in findings.iter_mut().filter(|f| f.id == FindingId::UpstreamConnectionPerRequest) {
        let names_hop = |hop: &&HopDiagnosis| {
            let address = hop.address.to_string();
            finding.evidence.iter().any(|e| e.what.contains(&address))
        };
        let Some((hop, stall)) = hops.iter().filter(names_hop).find_map(|hop| {
            let stall = hop.findings.iter().find(|f| f.proven && hidden_by_fresh_connections(f.id))?;
            Some((hop, stall))
        }) else {
            continue;
        };
        let pause = hop.baseline.stalled_gap_p50_ms.unwrap_or(hop.baseline.total_p50_ms);
        finding.title.push_str(&format!(
            ". Fix the hop first: {} proved {} there ({pause:.0} ms per response on a reused connection), which a \
             fresh connection per request hides; pooled connections would wait it on every request",
            hop.address,
            stall.id.as_str()
        ));
        finding.evidence.push(Evidence::new(
            format!("pause per response of {} on a reused connection", hop.address),
            pause,
            "ms",
        ));
        finding.proof.extend(stall.proof.iter().map(|p| Proof {
            kind: ProofKind::UpstreamDiagnosis,
            experiment: format!("on {}: {}", hop.address, p.experiment),
            result: p.result.clone(),
            ..p.clone()
        }));
        finding.fix_summary = format!(
            "In this order: 1. fix the hop at {}: {} 2. then reuse connections to it: {}",
            hop.address, stall.fix_summary, finding.fix_summary
        );
        let mut ordered = stall.fix.clone();
        ordered.append(&mut finding.fix);
        finding.fix = ordered;
    }
}

/// The server held a connection an HTTP/1.0 client expected it to close.
pub(crate) fn unrequested_keep_alive(probe: &HoldProbe) -> Option<Finding> {
    // A server that holds without promising anything is a naive one, not a hop-by-hop leak;
    // the issue is the promise a client did not ask for.
    if !probe.said_keep_alive || probe.closed_after.is_some_and(|after| after < HELD_TOO_LONG) {
        return None;
    }
    let held_ms = probe.closed_after.unwrap_or(probe.waited).as_secs_f64() * 1e3;
    let still = if probe.closed_after.is_none() { " and was still open when the probe gave up" } else { "" };
    let seen = format!(
        "an HTTP/1.0 request without keep-alive got its response with `Connection: keep-alive`, then the connection stayed open \
         {held_ms:.0} ms{still}"
    );
    Some(Finding {
        id: FindingId::UnrequestedKeepAlive,
        title: format!(
            "The server keeps connections open that HTTP/1.0 clients expect it to close: {seen}; clients that read \
             until the close (ab without -k, HTTP/1.0 proxies) wait for its idle timeout"
        ),
        proven: true,
        confidence: Confidence::High,
        evidence: vec![Evidence::new("held open after the response", held_ms, "ms")],
        proof: vec![Proof {
            kind: ProofKind::Probe,
            experiment: "one HTTP/1.0 request without Connection: keep-alive on a new connection".into(),
            baseline_p50_ms: 0.0,
            experiment_p50_ms: held_ms,
            removed: false,
            result: seen,
        }],
        fix_summary: "Do not forward hop-by-hop headers (Connection, Keep-Alive) from an upstream's response (RFC \
                      9110 §7.6.1), and close after answering an HTTP/1.0 request that did not ask for keep-alive."
            .into(),
        fix: fixes::hop_by_hop(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn summary(total_p50_ms: f64) -> PhaseSummary {
        PhaseSummary {
            responses: 40,
            total_p50_ms,
            first_byte_p50_ms: total_p50_ms - 0.1,
            ..PhaseSummary::default()
        }
    }

    /// A proven stall, as a hop's diagnosis would give it.
    pub(crate) fn stall() -> Finding {
        Finding {
            id: FindingId::ServerNagleDelayedAck,
            title: "The server's response waits for a delayed ACK".into(),
            proven: true,
            confidence: Confidence::High,
            evidence: Vec::new(),
            proof: vec![Proof {
                kind: ProofKind::Experiment,
                experiment: "client TCP_QUICKACK after every read".into(),
                baseline_p50_ms: 44.0,
                experiment_p50_ms: 0.2,
                removed: true,
                result: "p50 44 ms -> 0.2 ms".into(),
            }],
            fix_summary: "Set TCP_NODELAY on the server's sockets.".into(),
            fix: Vec::new(),
        }
    }

    fn hop(total_p50_ms: f64, findings: &[Finding]) -> HopDiagnosis {
        HopDiagnosis {
            address: "127.0.0.1:9000".parse().unwrap(),
            process: Some("python3 (PID 42)".into()),
            baseline: summary(total_p50_ms),
            findings: findings.to_vec(),
        }
    }

    #[test]
    fn a_slow_front_over_a_stalling_hop_names_the_hop_with_its_proof() {
        let findings = [stall()];
        let finding = proxy_hop_stall(&summary(44.5), &[hop(44.0, &findings)]).expect("the hop is named");
        assert_eq!(finding.id, FindingId::ProxyHopStall);
        assert!(finding.proven);
        assert!(finding.title.contains("python3 (PID 42) at 127.0.0.1:9000: server-nagle-delayed-ack"));
        assert_eq!(finding.proof[0].kind, ProofKind::UpstreamDiagnosis);
        assert!(finding.proof[0].experiment.starts_with("on 127.0.0.1:9000: client TCP_QUICKACK"));
        assert!(finding.fix_summary.contains("127.0.0.1:9000"));
    }

    #[test]
    fn a_fast_front_blames_no_hop_even_when_the_hop_stalls_alone() {
        // nginx with a fresh upstream connection per request hides the backend's stall.
        let findings = [stall()];
        assert!(proxy_hop_stall(&summary(2.5), &[hop(44.0, &findings)]).is_none());
    }

    #[test]
    fn a_server_holding_an_http10_connection_is_found_and_one_closing_is_not() {
        let held = HoldProbe {
            status: 200,
            said_keep_alive: true,
            closed_after: None,
            waited: Duration::from_secs(1),
        };
        let finding = unrequested_keep_alive(&held).expect("held");
        assert_eq!(finding.id, FindingId::UnrequestedKeepAlive);
        assert!(
            finding.title.contains("Connection: keep-alive") && finding.title.contains("1000 ms"),
            "{}",
            finding.title
        );
        let closed = HoldProbe { closed_after: Some(Duration::from_millis(1)), ..held.clone() };
        assert!(unrequested_keep_alive(&closed).is_none());
        // Holding without the promise is a naive server, not this finding.
        let silent = HoldProbe { said_keep_alive: false, ..held };
        assert!(unrequested_keep_alive(&silent).is_none());
        assert!(!finding.title.contains("  "), "{}", finding.title);
        assert_eq!(finding.proof[0].kind, ProofKind::Probe);
    }

    #[test]
    fn a_healthy_hop_does_not_explain_a_slow_front() {
        let healthy = [Finding { id: FindingId::Healthy, ..stall() }];
        assert!(proxy_hop_stall(&summary(44.0), &[hop(0.2, &healthy)]).is_none());
        // A stall far smaller than the front's time does not account for it either.
        let findings = [stall()];
        assert!(proxy_hop_stall(&summary(200.0), &[hop(44.0, &findings)]).is_none());
    }
}
