//! `Expect: 100-continue` left unanswered: a client that sends it holds the body back until
//! the server answers `100 Continue` or its own timer runs out (curl 1 s; .NET Framework
//! 350 ms), so a server that waits for the body costs such clients that wait on every request
//! with a body. The doctor's probe shows it directly: no experiment is needed.

use crate::finding::{Confidence, Evidence, Finding, FindingId, Proof, ProofKind};
use crate::fixes;
use nodelay_engine::{ExpectAnswer, ExpectProbe};
use nodelay_tcp::time::ms;

pub(crate) fn expect_continue_wait(probe: &ExpectProbe) -> Option<Finding> {
    let ExpectAnswer::Silence { waited } = probe.answer else { return None };
    let mut evidence = vec![Evidence::new(
        "silence after a head with Expect: 100-continue (the probe's wait)",
        ms(waited),
        "ms",
    )];
    if let Some(after) = probe.body_to_response {
        evidence.push(Evidence::new("response once the body was sent", ms(after), "ms"));
    }
    let answered = match (probe.final_status, probe.body_to_response) {
        (Some(status), Some(after)) => format!("once the body was sent, {status} in {:.2} ms", ms(after)),
        _ => "the body then got no complete response".into(),
    };
    Some(Finding {
        id: FindingId::ExpectContinueWait,
        title: format!(
            "The server does not answer Expect: 100-continue: clients that send it (curl for large bodies, .NET \
             Framework, S3 SDKs) hold the body back until their own timer ends, 1 s for curl, on every request with \
             a body (silent for {:.0} ms)",
            ms(waited)
        ),
        proven: true,
        confidence: Confidence::High,
        evidence,
        proof: vec![Proof {
            kind: ProofKind::Probe,
            experiment: "one request with Expect: 100-continue, its body held back until the server answers"
                .into(),
            baseline_p50_ms: 0.0,
            experiment_p50_ms: 0.0,
            removed: false,
            result: format!("no answer in {:.0} ms; {answered}", ms(waited)),
        }],
        fix_summary: fixes::EXPECT_CONTINUE_SUMMARY.into(),
        fix: fixes::expect_continue(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_silence_is_a_finding() {
        let silence = ExpectProbe {
            answer: ExpectAnswer::Silence { waited: Duration::from_millis(1200) },
            final_status: Some(200),
            body_to_response: Some(Duration::from_micros(400)),
        };
        let finding = expect_continue_wait(&silence).unwrap();
        assert!(finding.proven);
        assert!(
            finding.proof[0].result.contains("no answer in 1200 ms; once the body was sent, 200 in 0.40 ms")
        );
        let answered =
            ExpectProbe { answer: ExpectAnswer::Continue { after: Duration::from_micros(300) }, ..silence };
        assert!(expect_continue_wait(&answered).is_none());
        let refused = ExpectProbe {
            answer: ExpectAnswer::FinalAtOnce { status: 417, after: Duration::from_micros(300) },
            final_status: Some(417),
            body_to_response: None,
        };
        assert!(expect_continue_wait(&refused).is_none());
    }
}
