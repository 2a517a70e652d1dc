//! Findings in the order of what they cost each request, and without what costs nothing:
//! the 44 ms stall above a proven but trivial fact, a connection per request left out when
//! its handshakes are a sliver of a slow request's time.

use crate::finding::{Finding, FindingId};
use crate::phase::PhaseSummary;

/// A connection per request whose handshakes are less than this share of each request's
/// time costs nothing worth a finding beside what makes the request slow.
const NEGLIGIBLE_HANDSHAKE_SHARE: f64 = 0.05;

/// The time `finding` costs a typical request of the baseline, in ms: what fixing it would
/// save. Facts that cost no request time (a capacity, a probe's answer) cost 0 and go last;
/// error responses go first, as they make every timing suspect.
fn cost_ms(finding: &Finding, baseline: &PhaseSummary) -> f64 {
    let share = |part: usize| {
        if baseline.steady_responses == 0 { 0.0 } else { part as f64 / baseline.steady_responses as f64 }
    };
    match finding.id {
        FindingId::ErrorResponses => f64::INFINITY,
        FindingId::ListenBacklogOverflow => {
            let opens = baseline.opens.max(1) as f64;
            baseline.slow_opens as f64 / opens * f64::from(baseline.slow_open_retry_s.unwrap_or(1)) * 1e3
        }
        FindingId::ServerNagleDelayedAck => {
            baseline.stalled_gap_p50_ms.unwrap_or(baseline.read_gap_p50_ms) * share(baseline.stalled)
        }
        FindingId::ServerNagleRoundTrip => (baseline.round_trip_hold_p50_ms.unwrap_or(0.0)
            * share(baseline.round_trip_held))
        .max(baseline.tail_pause_p50_ms.unwrap_or(0.0) * share(baseline.tail_held)),
        FindingId::ClientNagleDelayedAck | FindingId::ClientNagleRoundTrip => baseline.first_byte_p50_ms,
        FindingId::SlowFirstByte => baseline.server_first_byte_p50_ms(),
        FindingId::SlowResponseBody => baseline.body_p50_ms,
        FindingId::ConnectionPerRequest => handshake_ms(baseline),
        FindingId::RetransmissionTimeout => {
            baseline.retransmission_wait_p50_ms.unwrap_or(0.0) * share(baseline.retransmission_waits)
        }
        FindingId::InitialWindowLimited | FindingId::SlowStartAfterIdle => baseline.judged_rtt_ms(),
        FindingId::ProxyHopStall => baseline.total_p50_ms,
        FindingId::H2FlowControlWindow => baseline.window_blocked_p50_ms,
        FindingId::H2StreamLimitQueueing => baseline.queued_p50_ms,
        FindingId::H2HeadOfLineLoss => baseline.loss_held_p50_ms * share(baseline.loss_held),
        // One request at a time its CPU per request (the first evidence) is request time;
        // under load it is a ceiling, which costs no request anything.
        FindingId::ServerCpuBound => {
            let one_at_a_time =
                finding.evidence.iter().any(|e| e.what.starts_with("median time per request, one at a time"));
            if one_at_a_time { finding.evidence[0].value } else { 0.0 }
        }
        _ => 0.0,
    }
}

fn handshake_ms(baseline: &PhaseSummary) -> f64 {
    baseline.connect_p50_ms.unwrap_or(0.0) + baseline.tls_handshake_p50_ms.unwrap_or(0.0)
}

/// Drops what costs nothing beside what makes a request slow, then orders the rest by cost,
/// most first (ties keep the rules' order).
pub(crate) fn rank(findings: &mut Vec<Finding>, baseline: &PhaseSummary) {
    let handshakes = handshake_ms(baseline);
    // Beside a cause that costs the request its time, not beside another fact that costs none.
    // Nor beside CPU-bound work: accepting and closing a connection per request is part of
    // that CPU (Node's per-connection cost, a proxy's), so fewer connections is its fix too.
    let slow_cause = findings.iter().any(|f| {
        !matches!(
            f.id,
            FindingId::ConnectionPerRequest | FindingId::ErrorResponses | FindingId::ServerCpuBound
        ) && cost_ms(f, baseline) >= 10.0 * handshakes
    });
    let negligible_handshakes = slow_cause && handshakes < NEGLIGIBLE_HANDSHAKE_SHARE * baseline.total_p50_ms;
    findings.retain(|f| !(f.id == FindingId::ConnectionPerRequest && negligible_handshakes));
    let mut costed: Vec<(f64, Finding)> = findings.drain(..).map(|f| (cost_ms(&f, baseline), f)).collect();
    costed.sort_by(|a, b| b.0.total_cmp(&a.0));
    findings.extend(costed.into_iter().map(|(_, f)| f));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Confidence, Evidence};
    use crate::phase::tests::{phase, response};

    fn finding(id: FindingId) -> Finding {
        Finding {
            id,
            title: id.as_str().into(),
            proven: true,
            confidence: Confidence::High,
            evidence: vec![Evidence::new("x", 1.0, "ms")],
            proof: Vec::new(),
            fix_summary: String::new(),
            fix: Vec::new(),
        }
    }

    #[test]
    fn the_costliest_finding_leads_and_what_costs_nothing_goes_last_or_out() {
        // Fresh connections (0.1 ms handshakes) to a server that answers in 50 ms.
        let baseline = phase(None, (0..20).map(|_| response(0, 50.0, None)).collect()).summary();
        let mut findings = vec![
            finding(FindingId::ServerCpuBound),
            finding(FindingId::ConnectionPerRequest),
            finding(FindingId::UnrequestedKeepAlive),
            finding(FindingId::SlowFirstByte),
        ];
        rank(&mut findings, &baseline);
        let ids: Vec<FindingId> = findings.iter().map(|f| f.id).collect();
        assert_eq!(
            ids,
            [FindingId::SlowFirstByte, FindingId::ServerCpuBound, FindingId::UnrequestedKeepAlive]
        );
        // Beside CPU-bound work alone it stays: its connections are part of that CPU.
        let mut working = vec![finding(FindingId::ServerCpuBound), finding(FindingId::ConnectionPerRequest)];
        working[0].evidence = vec![
            Evidence::new("server CPU per request (all its threads)", 45.0, "ms"),
            Evidence::new("median time per request, one at a time", 50.0, "ms"),
        ];
        rank(&mut working, &baseline);
        let ids: Vec<FindingId> = working.iter().map(|f| f.id).collect();
        assert_eq!(ids, [FindingId::ServerCpuBound, FindingId::ConnectionPerRequest]);
        // Alone, or beside a fact that costs no time, a connection per request stays.
        let mut alone =
            vec![finding(FindingId::ConnectionPerRequest), finding(FindingId::UpstreamConnectionPerRequest)];
        rank(&mut alone, &baseline);
        assert_eq!(alone.len(), 2);
    }
}
