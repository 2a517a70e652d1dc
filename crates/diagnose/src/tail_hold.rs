//! The tail hold as a finding (the model is `tail.rs`): keep-alive responses that end one
//! round trip after their first byte, with lone sub-segment tails, across a path, are
//! `server-nagle-round-trip` once the client's quick ACKs leave the end where it is.

use crate::finding::{Confidence, Evidence, Finding, FindingId, Proof, ProofKind};
use crate::fixes;
use crate::phase::{Experiment, Observations, Phase, PhaseSummary};
use crate::symptom::{Symptom, proof_of};
use crate::tail::{HELD_SHARE, round_trip_slack_ms};

const TAIL: Symptom = Symptom {
    share: PhaseSummary::tail_held_fraction,
    median_ms: held_body_p50_ms,
    label: "an end one round trip after the first byte",
};

fn held_body_p50_ms(summary: &PhaseSummary) -> f64 {
    summary.tail_held_body_p50_ms.unwrap_or(0.0)
}

/// Across a path, keep-alive responses that end one round trip after their first byte, with
/// a sub-segment tail seen alone after the rest: Nagle on the server held the tail for the
/// ACK of the head. The proof is the ACK clock with the client's quick ACKs (the end keeps
/// time with the round trip when every ACK leaves at once) and, with `--try-fix`, TCP_NODELAY
/// on the server removing it.
pub(crate) fn server_tail_hold(observations: &Observations, baseline: &PhaseSummary) -> Option<Finding> {
    let rtt = baseline.judged_rtt_ms();
    if rtt <= 0.0 || !baseline.tail_held_in_view() {
        return None;
    }
    let body = baseline.tail_held_body_p50_ms?;
    let pause = baseline.tail_pause_p50_ms?;
    let tail_bytes = baseline.tail_bytes_p50?;
    let mut evidence = vec![
        Evidence::new(
            "keep-alive responses that end one round trip after their first byte",
            baseline.tail_held_fraction() * 100.0,
            "%",
        ),
        Evidence::new("median time from first byte to last, over those", body, "ms"),
        Evidence::new("path round trip (client TCP_INFO min_rtt)", rtt, "ms"),
        Evidence::new(
            "responses whose last part came alone after the rest",
            baseline.tail_alone as f64,
            "count",
        ),
        Evidence::new("median size of that last part (under one segment)", tail_bytes as f64, "bytes"),
        Evidence::new("segment size (client TCP_INFO rcv_mss)", baseline.mss_bytes as f64, "bytes"),
        Evidence::new("median pause before it (the round trip less the rest's transfer)", pause, "ms"),
        Evidence::new("median total", baseline.total_p50_ms, "ms"),
    ];
    let quick = observations.experiment(Experiment::QuickAck).filter(|phase| phase.is_reliable());
    let keeps_time = |summary: &PhaseSummary| {
        summary.tail_held_fraction() >= HELD_SHARE
            && summary
                .tail_held_body_p50_ms
                .is_some_and(|quick_body| (quick_body - rtt).abs() <= round_trip_slack_ms(rtt))
    };
    let mut proofs: Vec<Proof> =
        quick.iter().map(|phase| quick_ack_proof(phase, baseline, keeps_time)).collect();
    let ack_clocked = quick.is_some_and(|phase| keeps_time(&phase.summary()));
    let fix_trial = observations.fix_trial.as_ref().filter(|trial| trial.phase.is_reliable());
    if let Some(trial) = fix_trial {
        proofs.push(proof_of(ProofKind::FixApplied, trial.applied.clone(), baseline, &trial.phase, TAIL));
    }
    let fix_removed = proofs.iter().any(|proof| proof.kind == ProofKind::FixApplied && proof.removed);
    if !ack_clocked && !fix_removed {
        return Some(Finding {
            id: FindingId::SlowResponseBody,
            title: format!(
                "Responses end {body:.1} ms after their first byte, about the path's {rtt:.1} ms round trip, and \
                 their last {tail_bytes} bytes came alone {pause:.1} ms after the rest; {}",
                if quick.is_some() {
                    "the client's quick ACKs did not show the end released by an ACK"
                } else {
                    "the experiment that tells a held tail from a slow server (client TCP_QUICKACK) did not run"
                }
            ),
            proven: false,
            confidence: Confidence::Low,
            evidence,
            proof: proofs,
            fix_summary: "Look at what the server does between writing most of a response and its end."
                .into(),
            fix: fixes::slow_body(),
        });
    }
    evidence.push(Evidence::new(
        "what the last part waited for: the ACK of the first segment, one round trip",
        rtt,
        "ms",
    ));
    Some(Finding {
        id: FindingId::ServerNagleRoundTrip,
        title: format!(
            "The last {tail_bytes} bytes of each response wait one round trip ({rtt:.1} ms) for the client's ACK \
             of its first segment: Nagle's algorithm on the server holds a sub-segment tail while the small head \
             is unacknowledged, so responses end {body:.1} ms after their first byte"
        ),
        proven: true,
        confidence: if baseline.tail_held_fraction() >= 0.75 { Confidence::High } else { Confidence::Medium },
        evidence,
        proof: proofs,
        fix_summary: format!(
            "{} TCP_NODELAY on the server (or the head and body in one write) sends the tail with the rest: it \
             saves the pause before the tail, about {pause:.1} ms of {:.1} ms per response, up to one round trip.",
            fixes::SERVER_NODELAY_SUMMARY,
            baseline.total_p50_ms
        ),
        fix: fixes::server_nodelay(),
    })
}

/// The quick-ACK experiment read for the ACK clock: with every ACK sent at once, does the
/// end still come one round trip after the first byte?
fn quick_ack_proof(
    phase: &Phase,
    baseline: &PhaseSummary,
    keeps_time: impl Fn(&PhaseSummary) -> bool,
) -> Proof {
    let summary = phase.summary();
    let rtt = baseline.judged_rtt_ms();
    let result = match (keeps_time(&summary), summary.tail_held_body_p50_ms) {
        (true, Some(quick_body)) => format!(
            "with every ACK sent at once, responses still ended {quick_body:.2} ms after their first byte, one \
             round trip ({rtt:.2} ms): the end is released by an ACK, in {} of {} responses",
            summary.tail_held, summary.steady_responses
        ),
        _ => format!(
            "the end did not keep time with the round trip ({} of {} responses ended one round trip after their \
             first byte)",
            summary.tail_held, summary.steady_responses
        ),
    };
    Proof {
        kind: ProofKind::Experiment,
        experiment: Experiment::QuickAck.describe().into(),
        baseline_p50_ms: baseline.total_p50_ms,
        experiment_p50_ms: summary.total_p50_ms,
        removed: false,
        result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::RequestShape;
    use crate::phase::tests::{phase, response};
    use nodelay_engine::ResponseRecord;
    use std::time::Duration;

    const RTT_MS: f64 = 10.0;

    /// A 25 KB keep-alive response across a 10 ms path: the first byte one round trip out,
    /// then the body over `body_ms`, ending in a read of `tail_bytes` after `tail_pause_ms`.
    fn large(sequence: u32, body_ms: f64, tail_bytes: u64, tail_pause_ms: f64) -> ResponseRecord {
        let d = |ms: f64| Duration::from_secs_f64(ms / 1e3);
        let mut record = response(sequence, RTT_MS + 0.5, Some(body_ms));
        record.read_chunks = 8;
        record.response_bytes = 25_141;
        record.max_read_gap = d(tail_pause_ms.max(1.0));
        record.last_read_gap = d(tail_pause_ms);
        record.last_read_bytes = tail_bytes;
        record
    }

    fn on_path(experiment: Option<Experiment>, responses: Vec<ResponseRecord>) -> Phase {
        let tcp_info = nodelay_tcp::TcpInfo {
            min_rtt_us: (RTT_MS * 1e3) as u32,
            rtt_us: (RTT_MS * 1e3) as u32,
            rcv_mss_bytes: 1448,
            ..Default::default()
        };
        Phase { tcp_info: Some(tcp_info), ..phase(experiment, responses) }
    }

    /// What a Nagle server sending its head apart does across the path: the first few
    /// responses show the 384-byte tail alone 7 ms after the rest; a pacing sender then
    /// spreads the rest over the round trip, and the tail comes with the last segment.
    fn held(experiment: Option<Experiment>) -> Phase {
        let responses = (0..30)
            .map(|i| if i < 5 { large(i, 10.4, 384, 7.0) } else { large(i, 10.5, 1832, 1.3) })
            .collect();
        on_path(experiment, responses)
    }

    fn observe(baseline: Phase) -> Observations {
        let shape = RequestShape {
            has_body: false,
            baseline_split: false,
            baseline_nodelay: true,
            http2_streams: None,
        };
        Observations { request: Some(shape), baseline, ..Observations::default() }
    }

    #[test]
    fn a_tail_that_waits_for_the_heads_ack_is_found_and_proven_by_quick_acks() {
        let mut observations = observe(held(None));
        let summary = observations.baseline.summary();
        assert_eq!((summary.tail_held, summary.tail_alone, summary.tail_bytes_p50), (29, 4, Some(384)));
        assert_eq!(crate::rules::next_experiment(&observations), Some(Experiment::QuickAck));
        let unproven = server_tail_hold(&observations, &summary).unwrap();
        assert_eq!((unproven.id, unproven.proven), (FindingId::SlowResponseBody, false));
        observations.experiments.push(held(Some(Experiment::QuickAck)));
        let finding = server_tail_hold(&observations, &summary).unwrap();
        assert_eq!((finding.id, finding.proven), (FindingId::ServerNagleRoundTrip, true));
        assert!(finding.title.contains("last 384 bytes"), "{}", finding.title);
        assert!(finding.fix_summary.contains("about 7.0 ms of"), "{}", finding.fix_summary);
        let ids: Vec<FindingId> = crate::diagnose(&observations).findings.iter().map(|f| f.id).collect();
        assert_eq!(ids, [FindingId::ServerNagleRoundTrip]);
    }

    #[test]
    fn a_path_that_takes_a_round_trip_to_carry_the_body_holds_nothing() {
        // 20 Mbit/s: 25 KB take the round trip, segment after segment; no tail comes alone.
        let responses = (0..30).map(|i| large(i, 10.2, 384, 0.6)).collect();
        let observations = observe(on_path(None, responses));
        let summary = observations.baseline.summary();
        assert_eq!((summary.tail_held, summary.tail_alone), (29, 0));
        assert!(server_tail_hold(&observations, &summary).is_none());
        assert_eq!(crate::diagnose(&observations).findings[0].id, FindingId::Healthy);
    }

    #[test]
    fn a_body_faster_than_the_round_trip_or_a_fresh_connection_is_not_judged() {
        let fast = observe(on_path(None, (0..30).map(|i| large(i, 3.9, 1832, 0.7)).collect()));
        assert_eq!(fast.baseline.summary().tail_held, 0);
        // Every response on its own connection: the second flight keeps the round trip for
        // the initial window's reason, not Nagle's.
        let fresh = observe(on_path(None, (0..30).map(|_| large(0, 10.4, 384, 7.0)).collect()));
        assert_eq!(fresh.baseline.summary().tail_held, 0);
    }
}
