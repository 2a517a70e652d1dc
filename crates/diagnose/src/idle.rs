//! Keep-alive connections closed when idle: a server (or proxy) that closes an idle
//! connection after N seconds races every client pool that keeps it longer; the pool's next
//! request on it fails (Node.js `ECONNRESET` on a reused socket) or is retried, and a proxy
//! whose upstream times out first (4 s against its 5 s) turns that into 502s. The probe
//! measures the timeout (`doctor --idle-probe`) and whether the server announces it.

use crate::finding::{Confidence, Evidence, Finding, FindingId, Proof, ProofKind};
use crate::fixes;
use crate::server::stack_fixes;
use nodelay_engine::IdleProbe;
use nodelay_host::ServerView;
use std::time::Duration;

/// A close sooner than this after the response is no idle timeout: the server closes after
/// every response (`connection-per-request` says so).
const MIN_IDLE_CLOSE: Duration = Duration::from_millis(100);

/// The finding, with the fixes of the server's stack first when its process is known.
pub(crate) fn keepalive_idle_close(probe: &IdleProbe, view: Option<&ServerView>) -> Option<Finding> {
    let after = probe.closed_after.filter(|after| *after >= MIN_IDLE_CLOSE && !probe.said_close)?;
    let seconds = after.as_secs_f64();
    let mut evidence =
        vec![Evidence::new("idle keep-alive connection closed by the server after", seconds * 1e3, "ms")];
    let announced = match probe.announced_timeout_s {
        Some(timeout) => {
            evidence.push(Evidence::new("announced in Keep-Alive: timeout=", timeout as f64 * 1e3, "ms"));
            format!("it announces Keep-Alive: timeout={timeout}")
        }
        None => "it does not announce it (no Keep-Alive: timeout=)".into(),
    };
    Some(Finding {
        id: FindingId::KeepaliveIdleClose,
        title: format!(
            "The server closes idle keep-alive connections after {seconds:.1} s, and {announced}: a client pool \
             that keeps a connection idle longer reuses a closed one, and that request fails (ECONNRESET) or is \
             retried"
        ),
        proven: true,
        confidence: Confidence::High,
        evidence,
        proof: vec![Proof {
            kind: ProofKind::Probe,
            experiment: "one keep-alive request, then the connection left idle".into(),
            baseline_p50_ms: 0.0,
            experiment_p50_ms: 0.0,
            removed: false,
            result: format!("the server closed it {seconds:.2} s after the response; {announced}"),
        }],
        fix_summary: fixes::IDLE_CLOSE_SUMMARY.into(),
        fix: match view {
            Some(view) => stack_fixes(view, fixes::idle_close()),
            None => fixes::idle_close(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(closed_after_ms: Option<u64>, announced: Option<u64>) -> IdleProbe {
        IdleProbe {
            status: 200,
            said_close: false,
            announced_timeout_s: announced,
            closed_after: closed_after_ms.map(Duration::from_millis),
            waited: Duration::from_millis(closed_after_ms.unwrap_or(8000)),
        }
    }

    #[test]
    fn a_close_after_idling_is_a_finding_and_says_whether_it_was_announced() {
        let silent = keepalive_idle_close(&probe(Some(2003), None), None).unwrap();
        assert!(silent.title.contains("after 2.0 s, and it does not announce it"), "{}", silent.title);
        let announced = keepalive_idle_close(&probe(Some(3004), Some(2)), None).unwrap();
        assert!(announced.title.contains("it announces Keep-Alive: timeout=2"), "{}", announced.title);
        assert_eq!(announced.evidence[1].value, 2000.0);
    }

    #[test]
    fn open_until_the_end_or_closed_at_once_is_no_idle_timeout() {
        assert!(keepalive_idle_close(&probe(None, Some(75)), None).is_none());
        assert!(keepalive_idle_close(&probe(Some(1), None), None).is_none());
        let said_close = IdleProbe { said_close: true, ..probe(Some(500), None) };
        assert!(keepalive_idle_close(&said_close, None).is_none());
    }
}
