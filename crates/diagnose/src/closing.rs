//! A server that closes the connection after every response without saying so (no
//! `Connection: close`), as uWSGI's `--http` router does when started as its quickstart
//! shows. A keep-alive client sends its next request on the connection the server closed; it
//! fails (closed early, or reset), the client opens another, and so every second request
//! fails, while a client that opens a connection per request never does. Recognised in the
//! keep-alive phase's records ([`closes_after_each_response`]), the server is judged on the
//! fresh connections the doctor then measures, and named `connection-per-request` with the
//! missing announcement as evidence. Failures without this pattern leave the measurement
//! unreliable.

use crate::finding::{Evidence, Finding, FindingId, Fix, Proof, ProofKind};
use crate::phase::{Experiment, Observations, Phase};
use crate::server::server_findings;
use nodelay_engine::ErrorKind;
use std::collections::BTreeMap;
use std::time::Duration;

/// Fewest responses for the pattern to count: three alternations are no coincidence.
const MIN_RESPONSES: usize = 3;

/// How the title of `connection-per-request` begins; the close is said to be unannounced
/// right after it.
const CLOSES: &str = "The server closes the connection after every response";

/// Whether a keep-alive phase failed the way a client of a server that closes after every
/// response without saying so fails: every response was the first on its connection, every
/// failure was a connection closed early or reset, and on each connection slot a failure
/// followed every response (but, perhaps, the slot's last) and nothing else.
pub fn closes_after_each_response(phase: &Phase) -> bool {
    let responses = &phase.responses;
    if responses.len() < MIN_RESPONSES
        || phase.errors.is_empty()
        || responses.iter().any(|r| r.sequence_on_connection > 0)
        || phase.errors.iter().any(|e| !matches!(e.kind, ErrorKind::ClosedEarly | ErrorKind::Reset))
    {
        return false;
    }
    // Each slot's attempts in the order they happened: a response from when it began, a
    // failure from when it failed (a failure ends before the slot's next attempt begins, so
    // at the same instant it comes first).
    let mut slots: BTreeMap<u32, Vec<(Duration, bool)>> = BTreeMap::new();
    for response in responses {
        slots.entry(response.connection).or_default().push((response.start_offset, true));
    }
    for error in &phase.errors {
        slots.entry(error.connection).or_default().push((error.offset, false));
    }
    let mut answered_last = 0;
    for attempts in slots.values_mut() {
        attempts.sort_by_key(|&(at, answered)| (at, answered));
        // Answered, failed, answered, failed...: a failure only ever right after an answer.
        if attempts.iter().enumerate().any(|(i, &(_, answered))| answered != (i % 2 == 0)) {
            return false;
        }
        answered_last += usize::from(attempts.last().is_some_and(|&(_, answered)| answered));
    }
    phase.errors.len() + answered_last == responses.len()
}

/// What to judge instead of a keep-alive baseline that failed in that pattern: the same
/// observations with the phase of fresh connections measured after it
/// (`new-connection-per-request`) as the baseline. `None` when the baseline shows no such
/// pattern, or no fresh-connection phase was measured with few enough failures.
pub(crate) fn on_fresh_connections(observations: &Observations) -> Option<Observations> {
    if !closes_after_each_response(&observations.baseline) {
        return None;
    }
    let fresh = observations.experiment(Experiment::NewConnectionPerRequest)?;
    if fresh.responses.len() < MIN_RESPONSES {
        return None;
    }
    Some(Observations {
        baseline: Phase { experiment: None, ..fresh.clone() },
        experiments: Vec::new(),
        fix_trial: None,
        // Read over the keep-alive phase: weighed by that phase's count in `unannounced`.
        server_view: None,
        ..observations.clone()
    })
}

/// The findings the rules made of [`on_fresh_connections`]'s observations, completed:
/// `connection-per-request` says that the close was not announced and what it costs
/// keep-alive clients, with the fresh connections as proof, and the server's own counters
/// (read over the keep-alive phase) are weighed by that phase's responses.
pub(crate) fn unannounced(mut findings: Vec<Finding>, observations: &Observations) -> Vec<Finding> {
    let keep_alive = &observations.baseline;
    let Some(fresh) = observations.experiment(Experiment::NewConnectionPerRequest) else { return findings };
    let fresh_p50_ms = fresh.summary().total_p50_ms;
    let failed = keep_alive.errors.len();
    let attempts = failed + keep_alive.responses.len();
    if let Some(finding) = findings.iter_mut().find(|f| f.id == FindingId::ConnectionPerRequest) {
        let unannounced = format!(
            "{CLOSES} without saying so (no Connection: close), so a keep-alive client's next request fails \
             ({failed} of {attempts} did)"
        );
        finding.title = match finding.title.strip_prefix(CLOSES) {
            Some(rest) => format!("{unannounced}{rest}"),
            None => format!("{unannounced}. {}", finding.title),
        };
        finding.evidence.extend([
            Evidence::new("keep-alive requests that failed", failed as f64, "count"),
            Evidence::new("keep-alive responses with Connection: close", 0.0, "count"),
            Evidence::new("fresh-connection requests that failed", fresh.errors.len() as f64, "count"),
        ]);
        finding.proof.push(Proof {
            kind: ProofKind::Experiment,
            experiment: Experiment::NewConnectionPerRequest.describe().into(),
            baseline_p50_ms: keep_alive.summary().total_p50_ms,
            experiment_p50_ms: fresh_p50_ms,
            removed: fresh.errors.is_empty(),
            result: format!(
                "{} of {} requests failed on fresh connections, {failed} of {attempts} on keep-alive ones",
                fresh.errors.len(),
                fresh.errors.len() + fresh.responses.len()
            ),
        });
        finding.fix.insert(0, UWSGI_HTTP_ROUTER);
    }
    if let Some(view) = &observations.server_view {
        let server = server_findings(view, keep_alive.responses.len() as u64, Some(fresh_p50_ms));
        findings.extend(server);
    }
    findings
}

/// The server this was met on: uWSGI's HTTP router (`--http`), which closes after every
/// response unless told to keep connections, and does not say so.
const UWSGI_HTTP_ROUTER: Fix = Fix::of(
    "uWSGI --http",
    "keep connections: --http11-socket :PORT --tcp-nodelay in place of --http :PORT (the router's \
     --http-keepalive keeps them too, but leaves Nagle on: a streamed response then stalls)",
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::FindingId;
    use crate::phase::tests::{error, response};
    use nodelay_engine::{ErrorRecord, ResponseRecord};

    const CLOSED: &str = "connection closed before the response was complete";

    /// `count` attempts on slot 0, 1 ms apart, each answered (first on a fresh connection)
    /// or failed as `fails` says.
    fn attempts(count: u32, fails: impl Fn(u32) -> Option<ErrorKind>) -> Phase {
        let mut phase = Phase::default();
        for i in 0..count {
            let at = Duration::from_millis(u64::from(i));
            match fails(i) {
                Some(kind) => phase.errors.push(ErrorRecord { offset: at, ..error(kind, CLOSED) }),
                None => phase.responses.push(ResponseRecord { start_offset: at, ..response(0, 0.2, None) }),
            }
        }
        phase
    }

    fn every_second(i: u32) -> Option<ErrorKind> {
        (i % 2 == 1).then_some(ErrorKind::ClosedEarly)
    }

    #[test]
    fn every_second_request_failing_on_a_closed_connection_is_the_pattern() {
        assert!(closes_after_each_response(&attempts(40, every_second)));
        // Ending on an answer (the run stopped there), and resets as well as early closes.
        let mixed = |i: u32| {
            (i % 2 == 1).then_some(if i % 4 == 1 { ErrorKind::Reset } else { ErrorKind::ClosedEarly })
        };
        assert!(closes_after_each_response(&attempts(41, mixed)));
    }

    #[test]
    fn failures_without_the_pattern_are_not_it() {
        // Two failures in a row.
        assert!(!closes_after_each_response(
            &attempts(40, |i| matches!(i, 1 | 2 | 5).then_some(ErrorKind::Reset))
        ));
        // Answers in a row without a failure between them: the server kept some connections.
        assert!(!closes_after_each_response(
            &attempts(40, |i| (i % 4 == 1).then_some(ErrorKind::ClosedEarly))
        ));
        // Another kind of failure.
        assert!(!closes_after_each_response(&attempts(40, |i| (i % 2 == 1).then_some(ErrorKind::Timeout))));
        // A failure first.
        assert!(!closes_after_each_response(
            &attempts(40, |i| (i % 2 == 0).then_some(ErrorKind::ClosedEarly))
        ));
        // No failure, or too few answers.
        assert!(!closes_after_each_response(&attempts(40, |_| None)));
        assert!(!closes_after_each_response(&attempts(4, every_second)));
        // A response that was the second on its connection: connections were kept.
        let mut kept = attempts(40, every_second);
        kept.responses[3].sequence_on_connection = 1;
        assert!(!closes_after_each_response(&kept));
    }

    #[test]
    fn several_slots_each_alternate_on_their_own() {
        let mut phase = attempts(20, every_second);
        let mut other = attempts(21, every_second);
        other.responses.iter_mut().for_each(|r| r.connection = 1);
        other.errors.iter_mut().for_each(|e| e.connection = 1);
        phase.responses.extend(other.responses);
        phase.errors.extend(other.errors);
        assert!(closes_after_each_response(&phase));
    }

    /// What `rules::diagnose` does with them.
    fn judged_on_fresh_connections(observations: &Observations) -> Option<Vec<Finding>> {
        let judged = on_fresh_connections(observations)?;
        Some(unannounced(crate::rules::rule_findings(&judged), observations))
    }

    fn observations(fresh: Option<Phase>) -> Observations {
        let mut observations =
            Observations { baseline: attempts(40, every_second), ..Observations::default() };
        observations.experiments.extend(fresh);
        observations
    }

    fn fresh(count: u32) -> Phase {
        Phase { experiment: Some(Experiment::NewConnectionPerRequest), ..attempts(count, |_| None) }
    }

    #[test]
    fn on_fresh_connections_it_is_connection_per_request_without_connection_close() {
        let findings = judged_on_fresh_connections(&observations(Some(fresh(30)))).unwrap();
        let ids: Vec<FindingId> = findings.iter().map(|f| f.id).collect();
        assert_eq!(ids, [FindingId::ConnectionPerRequest]);
        let finding = &findings[0];
        assert!(
            finding.title.starts_with(
                "The server closes the connection after every response without saying so (no Connection: close), \
                 so a keep-alive client's next request fails (20 of 40 did): each request pays"
            ),
            "{}",
            finding.title
        );
        let evidence = |what: &str| finding.evidence.iter().find(|e| e.what == what).map(|e| e.value);
        assert_eq!(evidence("keep-alive responses with Connection: close"), Some(0.0));
        assert_eq!(evidence("keep-alive requests that failed"), Some(20.0));
        assert_eq!(evidence("fresh-connection requests that failed"), Some(0.0));
        let proof = &finding.proof[0];
        assert!(proof.removed && proof.result.starts_with("0 of 30 requests failed on fresh connections"));
        assert_eq!(finding.fix[0].stack, "uWSGI --http");
    }

    #[test]
    fn without_a_fresh_measurement_or_the_pattern_there_is_no_judgement() {
        assert!(judged_on_fresh_connections(&observations(None)).is_none());
        // Fresh connections that fail as much say nothing either (not reliable).
        let failing = Phase { errors: vec![error(ErrorKind::Reset, "reset"); 20], ..fresh(30) };
        assert!(judged_on_fresh_connections(&observations(Some(failing))).is_none());
        let mut random = observations(Some(fresh(30)));
        random.baseline = attempts(40, |i| matches!(i, 1 | 2 | 3 | 9 | 10).then_some(ErrorKind::Reset));
        assert!(judged_on_fresh_connections(&random).is_none());
    }
}
