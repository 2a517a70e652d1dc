//! Responses with an error status: what the doctor timed is an error page, not the page the
//! user meant. Named as a finding of its own (so `doctor URL || exit 1` fails the gate), and
//! above a share of them the verdict is about the errors alone. A gRPC call that fails says
//! so in its grpc-status (its HTTP status stays 200): a non-OK grpc-status is an error too.

use crate::finding::{Confidence, Evidence, Finding, FindingId};
use crate::phase::{MAX_FAILED_SHARE, Phase};
use nodelay_flags::Flag;
use std::collections::BTreeMap;

/// Above this share of error responses, the verdict is about the errors: the timings are
/// mostly an error page's. The same bar as failed requests, for the same reason.
pub const MAX_ERROR_SHARE: f64 = MAX_FAILED_SHARE;

/// How a response failed: its HTTP status (4xx, 5xx), or, with a successful HTTP status, a
/// gRPC call's non-OK grpc-status. Ordered HTTP first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum ErrorStatus {
    Http(u16),
    Grpc(u16),
}

impl ErrorStatus {
    /// The response's error status; `None` when it succeeded (0 is a raw protocol's "no status").
    fn of(response: &nodelay_engine::ResponseRecord) -> Option<ErrorStatus> {
        if response.status >= 400 {
            return Some(ErrorStatus::Http(response.status));
        }
        let grpc = response.http2.as_ref()?.grpc_status?;
        (grpc != 0).then_some(ErrorStatus::Grpc(grpc))
    }

    /// `404`, `grpc-status 12`.
    fn label(self) -> String {
        match self {
            ErrorStatus::Http(status) => status.to_string(),
            ErrorStatus::Grpc(status) => format!("grpc-status {status}"),
        }
    }

    /// The evidence's name: `status 404`, `grpc-status 12 (UNIMPLEMENTED)`.
    fn evidence_label(self) -> String {
        match self {
            ErrorStatus::Http(status) => format!("status {status}"),
            ErrorStatus::Grpc(status) => match grpc_code_name(status) {
                Some(name) => format!("grpc-status {status} ({name})"),
                None => format!("grpc-status {status}"),
            },
        }
    }

    /// The server failed (5xx; gRPC's server-side codes) rather than refused the request.
    fn is_server_failure(self) -> bool {
        match self {
            ErrorStatus::Http(status) => status >= 500,
            // UNKNOWN, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, INTERNAL, UNAVAILABLE, DATA_LOSS.
            ErrorStatus::Grpc(status) => matches!(status, 2 | 4 | 8 | 10 | 13 | 14 | 15),
        }
    }
}

/// The name gRPC gives a status code (grpc/doc/statuscodes.md).
pub fn grpc_code_name(code: u16) -> Option<&'static str> {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    NAMES.get(usize::from(code)).copied()
}

/// The error responses of a phase by status, and the responses they are among.
fn error_statuses(phase: &Phase) -> (BTreeMap<ErrorStatus, u64>, u64) {
    let mut counts = BTreeMap::new();
    for status in phase.responses.iter().filter_map(ErrorStatus::of) {
        *counts.entry(status).or_insert(0) += 1;
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
    let statuses =
        counts.iter().map(|(status, n)| format!("{} ×{n}", status.label())).collect::<Vec<_>>().join(", ");
    let mut evidence = vec![
        Evidence::new(
            "baseline responses with an error status (4xx, 5xx, non-OK grpc-status)",
            errors as f64,
            "count",
        ),
        Evidence::new("baseline responses", of as f64, "count"),
        Evidence::new("share with an error status", share * 100.0, "%"),
    ];
    for (status, n) in &counts {
        evidence.push(Evidence::new(status.evidence_label(), *n as f64, "count"));
    }
    let server_error = counts.keys().any(|status| status.is_server_failure());
    let grpc = counts.keys().any(|status| matches!(status, ErrorStatus::Grpc(_)));
    let most = if share > MAX_ERROR_SHARE {
        format!(
            ": more than {:.0} %, so the verdict is about them (the timings are mostly {})",
            MAX_ERROR_SHARE * 100.0,
            if grpc { "failed calls'" } else { "an error page's" }
        )
    } else {
        String::new()
    };
    let finding = Finding {
        id: FindingId::ErrorResponses,
        title: format!("{errors} of {of} responses were errors ({statuses}){most}"),
        // Counted, not inferred.
        proven: true,
        confidence: Confidence::High,
        evidence,
        proof: Vec::new(),
        fix_summary: match (server_error, grpc) {
            (true, false) => {
                "The server fails these requests: read its error log and the error page itself.".to_string()
            }
            (false, false) => {
                "The server refuses the request as sent (4xx): check the URL, the method, the headers and the body."
                    .to_string()
            }
            (true, true) => "The server fails these calls: read its log and the calls' grpc-message.".to_string(),
            (false, true) => format!(
                "The server refuses the call as sent: check the method's name (/package.Service/Method), the \
                 request message ({} for protobuf text) and the metadata; its grpc-message says which.",
                Flag::GrpcProto
            ),
        },
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
        diagnose(observations).ids()
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
        let findings = diagnose(&one_in_forty).findings;
        assert_eq!(findings.iter().map(|f| f.id).collect::<Vec<_>>(), [FindingId::ErrorResponses]);
        assert!(
            findings[0].title.starts_with("1 of 40 responses were errors (502 ×1)"),
            "{}",
            findings[0].title
        );
        assert!(!findings[0].title.contains("verdict is about them"));
    }

    #[test]
    fn a_grpc_call_that_fails_is_an_error_though_its_http_status_is_200() {
        let mut observations = with_errors(0, 200);
        for (i, response) in observations.baseline.responses.iter_mut().enumerate() {
            let grpc_status = if i % 4 == 0 { 0 } else { 12 };
            response.http2 = Some(nodelay_engine::StreamRecord {
                grpc_status: Some(grpc_status),
                ..nodelay_engine::StreamRecord::default()
            });
        }
        let findings = diagnose(&observations).findings;
        assert_eq!(findings.iter().map(|f| f.id).collect::<Vec<_>>(), [FindingId::ErrorResponses]);
        assert!(
            findings[0].title.starts_with("30 of 40 responses were errors (grpc-status 12 ×30)"),
            "{}",
            findings[0].title
        );
        assert!(
            findings[0].evidence.iter().any(|e| e.what == "grpc-status 12 (UNIMPLEMENTED)"),
            "{findings:#?}"
        );
        assert!(findings[0].fix_summary.contains("method's name"), "{}", findings[0].fix_summary);
        // grpc-status 0 is OK: no finding.
        for response in observations.baseline.responses.iter_mut() {
            response.http2.as_mut().unwrap().grpc_status = Some(0);
        }
        assert_eq!(diagnose(&observations).findings[0].id, FindingId::Healthy);
    }
}
