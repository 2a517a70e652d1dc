//! A body that arrives slowly without one stall: several short pauses that add up, or a
//! transfer that takes long with none. Judged by the time spent after the first byte, so a
//! 42 ms response is never called healthy because each of its pauses is short.

use crate::finding::{Confidence, Evidence, Finding, FindingId};
use crate::fixes;
use crate::phase::{Experiment, Observations, PhaseSummary, STALL_GAP_MS};
use crate::symptom::{Symptom, proof};

/// A response whose time after its first byte (beyond the path's transfer rounds) is at
/// least this long is slow, in pauses or not: as long as one stall.
pub(crate) const SLOW_BODY_MS: f64 = STALL_GAP_MS;
/// The share of steady responses that must show it.
const SLOW_BODY_SHARE: f64 = 0.25;

fn paused_p50_ms(summary: &PhaseSummary) -> f64 {
    summary.paused_p50_ms
}

const PIECES: Symptom = Symptom {
    share: PhaseSummary::slow_body_fraction,
    median_ms: paused_p50_ms,
    label: "a body in slow pieces",
};

/// The body is slow: in pieces (pauses adding up to a stall's length), or as a whole.
pub(crate) fn slow_in_pieces(baseline: &PhaseSummary) -> bool {
    baseline.slow_body_fraction() >= SLOW_BODY_SHARE
}

/// The finding for a body that takes [`SLOW_BODY_MS`] or more after the first byte when no
/// single pause was a stall; `None` otherwise.
pub(crate) fn slow_response_body(observations: &Observations, baseline: &PhaseSummary) -> Option<Finding> {
    let pieces = slow_in_pieces(baseline);
    if !pieces && baseline.body_p50_ms < SLOW_BODY_MS {
        return None;
    }
    let mut evidence = vec![
        Evidence::new("median time after the first byte", baseline.body_p50_ms, "ms"),
        Evidence::new("median pauses of 1 ms or more, added up", baseline.paused_p50_ms, "ms"),
        Evidence::new("median number of such pauses per response", f64::from(baseline.pauses_p50), "count"),
        Evidence::new("median longest pause", baseline.read_gap_p50_ms, "ms"),
        Evidence::new(
            "responses that pause 25 ms or more in all",
            baseline.slow_body_fraction() * 100.0,
            "%",
        ),
        Evidence::new("median first byte", baseline.first_byte_p50_ms, "ms"),
        Evidence::new("median total", baseline.total_p50_ms, "ms"),
        Evidence::new("median response size", baseline.response_bytes_p50 as f64, "bytes"),
    ];
    let rtt = baseline.judged_rtt_ms();
    if rtt > 0.0 {
        evidence.push(Evidence::new("path round trip (client TCP_INFO min_rtt)", rtt, "ms"));
    }
    let proofs: Vec<_> = observations
        .experiment(Experiment::QuickAck)
        .map(|phase| proof(Experiment::QuickAck, baseline, phase, PIECES))
        .into_iter()
        .collect();
    let removed = proofs.iter().any(|p| p.removed);
    if pieces {
        let title = format!(
            "Responses pause {} times after their first byte, {:.1} ms in all (median), each pause shorter than a \
             stall ({STALL_GAP_MS:.0} ms): the server sends each response slowly, in pieces",
            baseline.pauses_p50, baseline.paused_p50_ms
        );
        return Some(Finding {
            id: FindingId::SlowResponseBody,
            title,
            // The client's quick ACKs leave the pauses as they were: the server's, not TCP's.
            proven: !proofs.is_empty() && !removed,
            confidence: if proofs.is_empty() || removed { Confidence::Low } else { Confidence::High },
            evidence,
            proof: proofs,
            fix_summary:
                "Look at what the server does between the writes of one response: each pause is its own \
                          (a flush per chunk, a slow source streamed through, a lock taken per part)."
                    .into(),
            fix: fixes::slow_body(),
        });
    }
    let mb_per_s = baseline.response_bytes_p50 as f64 / 1e6 / (baseline.body_p50_ms / 1e3);
    Some(Finding {
        id: FindingId::SlowResponseBody,
        title: format!(
            "Responses take {:.1} ms after their first byte without pausing ({} bytes at {mb_per_s:.1} MB/s): the \
             transfer itself is slow",
            baseline.body_p50_ms, baseline.response_bytes_p50
        ),
        proven: false,
        confidence: Confidence::Low,
        evidence,
        proof: proofs,
        fix_summary: "Send less (compression, a smaller page), or look at what limits the sender's rate."
            .into(),
        fix: fixes::slow_body(),
    })
}

#[cfg(test)]
mod tests {
    use crate::phase::tests::{phase, response};
    use crate::phase::{Observations, RequestShape, extra_flights};
    use crate::{FindingId, diagnose};
    use std::time::Duration;

    /// Keep-alive responses whose body comes in `pauses` pauses of `pause_ms` each.
    fn trickled(pauses: u32, pause_ms: f64) -> Observations {
        let responses = (0..30)
            .map(|i| {
                let mut r = response(i, 1.4, Some(pause_ms));
                r.read_chunks = pauses + 1;
                r.pauses = pauses;
                r.paused = Duration::from_secs_f64(f64::from(pauses) * pause_ms / 1e3);
                r.total = r.first_byte + r.paused;
                r
            })
            .collect();
        Observations {
            request: Some(RequestShape {
                has_body: false,
                baseline_split: false,
                baseline_nodelay: true,
                http2_streams: None,
            }),
            baseline: phase(None, responses),
            ..Observations::default()
        }
    }

    #[test]
    fn four_short_pauses_that_add_up_are_a_slow_body_not_healthy() {
        for (pauses, pause_ms) in [(4, 10.0), (2, 20.0)] {
            let findings = diagnose(&trickled(pauses, pause_ms)).findings;
            assert_eq!(findings[0].id, FindingId::SlowResponseBody, "{pauses} x {pause_ms}: {findings:#?}");
            assert!(findings.iter().all(|f| f.id != FindingId::Healthy));
            assert!(findings[0].title.contains(&format!("pause {pauses} times")), "{}", findings[0].title);
        }
    }

    #[test]
    fn short_pauses_that_stay_short_are_healthy() {
        let findings = diagnose(&trickled(4, 2.0)).findings;
        assert_eq!(findings[0].id, FindingId::Healthy, "{findings:#?}");
    }

    #[test]
    fn the_path_may_pause_one_round_trip_per_extra_flight() {
        assert_eq!(extra_flights(13, 1448), 0);
        assert_eq!(extra_flights(10 * 1448, 1448), 0);
        assert_eq!(extra_flights(25_000, 1448), 1);
        assert_eq!(extra_flights(100_000, 1448), 2);
    }
}
