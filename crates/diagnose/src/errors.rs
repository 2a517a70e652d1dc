//! Responses with an error status: what the doctor timed is an error page, not the page the
//! user meant. Named as a finding of its own (so `doctor URL || exit 1` fails the gate), and
//! above a share of them the verdict is about the errors alone.

use crate::finding::{Confidence, Evidence, Finding, FindingId};
use crate::phase::{MAX_FAILED_SHARE, Phase};
use std::collections::BTreeMap;

/// Above this share of error responses, the verdict is about the errors: the timings are
/// mostly an error page's. The same bar as failed requests, for the same reason.
pub const MAX_ERROR_SHARE: f64 = MAX_FAILED_SHARE;

/// A status the doctor counts as an error: 4xx and 5xx (0 is a raw protocol's "no status").
fn is_error(status: u16) -> bool {
    status >= 400
}

/// The error responses of a phase by status, and the responses they are among.
fn error_statuses(phase: &Phase) -> (BTreeMap<u16, u64>, u64) {
    let mut counts = BTreeMap::new();
    for response in phase.responses.iter().filter(|r| is_error(r.status)) {
        *counts.entry(response.status).or_insert(0) += 1;
    }
    (counts, phase.responses.len() as u64)
}

/// The finding for a baseline that got error responses, and whether they are so many that
/// the verdict is about them alone; `None` when it got none.
pub(crate) fn error_responses(phase: &Phase) -> Option<(Finding, bool)> {
    let (counts, of) = error_statuses(phase);
    let errors: u64 = counts.values().sum();
    if errors == 0 {
        return None;
    }
    let share = errors as f64 / of as f64;
    let statuses = counts.iter().map(|(status, n)| format!("{status} ×{n}")).collect::<Vec<_>>().join(", ");
    let mut evidence = vec![
        Evidence::new("baseline responses with an error status (4xx, 5xx)", errors as f64, "count"),
        Evidence::new("baseline responses", of as f64, "count"),
        Evidence::new("share with an error status", share * 100.0, "%"),
    ];
    for (status, n) in &counts {
        evidence.push(Evidence::new(format!("status {status}"), *n as f64, "count"));
    }
    let most = if share > MAX_ERROR_SHARE {
        format!(
            ": more than {:.0} %, so the verdict is about them (the timings are mostly an error page's)",
            MAX_ERROR_SHARE * 100.0
        )
    } else {
        String::new()
    };
    let server_error = counts.keys().any(|status| *status >= 500);
    let finding = Finding {
        id: FindingId::ErrorResponses,
        title: format!("{errors} of {of} responses were errors ({statuses}){most}"),
        // Counted, not inferred.
        proven: true,
        confidence: Confidence::High,
        evidence,
        proof: Vec::new(),
        fix_summary: if server_error {
            "The server fails these requests: read its error log and the error page itself."
        } else {
            "The server refuses the request as sent (4xx): check the URL, the method, the headers and the body."
        }
        .into(),
        fix: Vec::new(),
    };
    Some((finding, share > MAX_ERROR_SHARE))
}

#[cfg(test)]
mod tests {
    use crate::phase::tests::{phase, response};
    use crate::phase::{Observations, RequestShape};
    use crate::{FindingId, diagnose};

    fn with_errors(every: u32, status: u16) -> Observations {
        let responses = (0..40)
            .map(|i| {
                let mut r = response(i, 0.3, None);
                if every > 0 && i % every == 0 {
                    r.status = status;
                }
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

    fn ids(observations: &Observations) -> Vec<FindingId> {
        diagnose(observations).iter().map(|f| f.id).collect()
    }

    #[test]
    fn an_error_page_is_a_finding_never_healthy() {
        assert_eq!(ids(&with_errors(1, 500)), [FindingId::ErrorResponses]);
        assert_eq!(ids(&with_errors(4, 503)), [FindingId::ErrorResponses], "25 % of 503s");
        assert_eq!(ids(&with_errors(0, 200)), [FindingId::Healthy]);
    }

    #[test]
    fn a_few_errors_are_named_beside_the_rest() {
        let one_in_forty = with_errors(40, 502);
        let findings = diagnose(&one_in_forty);
        assert_eq!(findings.iter().map(|f| f.id).collect::<Vec<_>>(), [FindingId::ErrorResponses]);
        assert!(
            findings[0].title.starts_with("1 of 40 responses were errors (502 ×1)"),
            "{}",
            findings[0].title
        );
        assert!(!findings[0].title.contains("verdict is about them"));
    }
}
