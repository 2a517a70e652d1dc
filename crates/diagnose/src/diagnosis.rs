//! What a diagnosis returns, whatever it looked at: a doctor's target, a bench run, a capture
//! or a relay. One type, so that every report renders the same thing: the findings ranked
//! (costliest first, fixes naming the real target), the notes that cost the run nothing, the
//! unproven suggestions, and the verdict they make. `healthy` is a verdict only when no
//! other finding was made; nothing edits a diagnosis after it is returned.

use crate::finding::{Finding, FindingId, Note};
use crate::server::server_findings;
use crate::suggest::{RunShape, Suggestion, suggest};
use nodelay_host::ServerView;

/// What a diagnosis found, ranked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diagnosis {
    /// The causes found, most important first; `healthy` alone when nothing is wrong, and
    /// empty when there was nothing to look at (a relay that relayed nothing).
    pub findings: Vec<Finding>,
    /// Facts that cost the measured workload nothing (a fresh connection's cost under
    /// keep-alive, a hop nobody saw): said under the verdict, never changing it.
    pub notes: Vec<Note>,
    /// What a run's own numbers suggest, with no experiment run (bench), each with the
    /// command that proves it.
    pub suggestions: Vec<Suggestion>,
}

/// The verdict of a diagnosis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing is wrong: the only finding is `healthy`.
    Healthy,
    /// A cause was found.
    Findings,
    /// Too many requests failed for a verdict.
    Unreliable,
    /// There was nothing to judge.
    NothingSeen,
}

impl Verdict {
    /// The verdict's word in the reports (`nothing-seen` each source names its own way).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Healthy => "healthy",
            Verdict::Findings => "findings",
            Verdict::Unreliable => "unreliable",
            Verdict::NothingSeen => "nothing-seen",
        }
    }

    /// The verdict of several together (a diagnosis's findings, a scenario's requests):
    /// unreliable when any is, healthy when every one is, findings otherwise; nothing seen
    /// when there are none.
    pub fn of_all(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        verdicts.into_iter().fold(Verdict::NothingSeen, |all, one| match (all, one) {
            (Verdict::Unreliable, _) | (_, Verdict::Unreliable) => Verdict::Unreliable,
            (Verdict::NothingSeen, one) => one,
            (all, Verdict::NothingSeen) => all,
            (Verdict::Healthy, Verdict::Healthy) => Verdict::Healthy,
            _ => Verdict::Findings,
        })
    }
}

impl Diagnosis {
    /// The diagnosis of `findings` alone.
    pub fn of(findings: Vec<Finding>) -> Diagnosis {
        Diagnosis { findings, ..Diagnosis::default() }
    }

    /// The verdict the findings make.
    pub fn verdict(&self) -> Verdict {
        Verdict::of_all(self.findings.iter().map(|f| match f.id {
            FindingId::Healthy => Verdict::Healthy,
            FindingId::UnreliableMeasurement => Verdict::Unreliable,
            _ => Verdict::Findings,
        }))
    }

    /// The ids found, in rank order.
    pub fn ids(&self) -> Vec<FindingId> {
        self.findings.iter().map(|f| f.id).collect()
    }
}

/// The server's side of a load run, when it runs on this machine and was looked at.
#[derive(Debug, Clone, Copy)]
pub struct ServerSeen<'a> {
    /// What its processes, threads and sockets did over the run.
    pub view: &'a ServerView,
    /// Responses the run completed.
    pub requests: u64,
    /// The median time per request when they went one at a time (one connection, closed
    /// loop), which the server's CPU per request is set against; `None` under concurrency.
    pub sequential_p50_ms: Option<f64>,
}

/// A load run's diagnosis (bench): what the server's own counters show, when it was looked
/// at, and what the run's numbers suggest with no experiment run.
pub fn diagnose_load(server: Option<ServerSeen<'_>>, shape: &RunShape) -> Diagnosis {
    let findings = server
        .map(|seen| server_findings(seen.view, seen.requests, seen.sequential_p50_ms))
        .unwrap_or_default();
    Diagnosis { findings, notes: Vec::new(), suggestions: suggest(shape) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Confidence;

    fn finding(id: FindingId) -> Finding {
        Finding {
            id,
            title: String::new(),
            proven: false,
            confidence: Confidence::High,
            evidence: Vec::new(),
            proof: Vec::new(),
            fix_summary: String::new(),
            fix: Vec::new(),
        }
    }

    #[test]
    fn the_verdict_is_healthy_only_when_nothing_else_was_found() {
        assert_eq!(Diagnosis::default().verdict(), Verdict::NothingSeen);
        assert_eq!(Diagnosis::of(vec![finding(FindingId::Healthy)]).verdict(), Verdict::Healthy);
        let stall = Diagnosis::of(vec![finding(FindingId::ServerNagleDelayedAck)]);
        assert_eq!(stall.verdict(), Verdict::Findings);
        let failing = Diagnosis::of(vec![
            finding(FindingId::ServerNagleDelayedAck),
            finding(FindingId::UnreliableMeasurement),
        ]);
        assert_eq!(failing.verdict(), Verdict::Unreliable);
        assert_eq!(failing.ids(), [FindingId::ServerNagleDelayedAck, FindingId::UnreliableMeasurement]);
        let unreliable_first =
            Diagnosis::of(vec![finding(FindingId::UnreliableMeasurement), finding(FindingId::Healthy)]);
        assert_eq!(unreliable_first.verdict(), Verdict::Unreliable);
        assert_eq!(Verdict::of_all([Verdict::Healthy, Verdict::NothingSeen]), Verdict::Healthy);
    }
}
