//! Findings from an inspecting relay (`nodelay proxy`), in the doctor's vocabulary. The relay
//! sits between a client and an upstream and sees, on each leg, when every piece of every
//! message arrived. No experiment is run: a finding rests on the pattern seen (proof kind
//! `relay-rule`), and is called proven only when the pattern is the whole Nagle signature
//! (FIELD_NOTES §1-2): pauses inside messages as long as a delayed-ACK timer, clustered like
//! a timer's, on several exchanges, and either sparing each connection's first exchange
//! (which a fresh connection ACKs at once) or matching the relay's own delayed-ACK timeout.
//!
//! On the upstream leg the relay is the upstream's client: its delayed ACKs release what
//! the upstream's Nagle holds, so a pause inside responses there is held by the upstream. On
//! the client leg the relay is the client's server: a pause inside requests is held by the
//! client.

use crate::finding::{Confidence, Evidence, Finding, FindingId, Proof, ProofKind};
use crate::fixes;
use crate::phase::{LATE_FIRST_BYTE_MS, STALL_GAP_MS, is_clustered};
use crate::timers::{hop_stall_timer, match_delayed_ack_timer};
use nodelay_engine::TcpInfo;

/// A median first byte from the upstream later than this makes it "slow to answer".
const SLOW_FIRST_BYTE_MS: f64 = 10.0;
/// A late first byte in at least this share of exchanges is worth a finding.
const SYMPTOM_FRACTION: f64 = 0.25;
/// Stalls needed before the pattern can count as proof.
const MIN_STALLS_FOR_PROOF: u64 = 3;
/// Connections needed, and exchanges per connection at most, to call it connection-per-request.
const MIN_CONNECTIONS: u64 = 10;
const MAX_EXCHANGES_PER_CONNECTION: f64 = 1.5;

/// The pauses inside one leg's messages (requests on the client leg, responses on the
/// upstream leg). Times in milliseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LegPauses {
    /// Messages relayed in full on this leg.
    pub messages: u64,
    /// Messages with a pause of at least [`STALL_GAP_MS`] between two reads.
    pub stalled: u64,
    /// Messages of a connection's first exchange, and how many of those stalled.
    pub first_on_connection: u64,
    /// Of the first-exchange messages, those that stalled.
    pub stalled_first_on_connection: u64,
    /// Percentiles of the stalled messages' pauses.
    pub gap_p10_ms: f64,
    /// Median of the stalled messages' pauses.
    pub gap_p50_ms: f64,
    /// 90th percentile of the stalled messages' pauses.
    pub gap_p90_ms: f64,
    /// The stalled messages' pauses, summed.
    pub lost_ms: f64,
    /// Median bytes that came before the pause.
    pub bytes_before_p50: Option<u64>,
    /// The relay's own socket on this leg (the busiest connection's): its `ato` is the
    /// delayed-ACK timeout that releases what the other side holds.
    pub relay_socket: Option<TcpInfo>,
    /// One stalled message spelled out.
    pub example: String,
}

impl LegPauses {
    fn stalled_share(&self) -> f64 {
        if self.messages == 0 { 0.0 } else { self.stalled as f64 / self.messages as f64 }
    }

    /// Each connection's first exchange was spared while later ones stalled: a fresh
    /// connection ACKs at once, a Nagle stall starts from the second exchange.
    fn spares_first_exchanges(&self) -> bool {
        self.first_on_connection > 0
            && self.stalled_first_on_connection == 0
            && self.stalled > 0
            && self.messages > self.first_on_connection
    }

    /// The median pause is within a few milliseconds of the relay socket's ACK timeout.
    fn matches_relay_ato(&self) -> bool {
        self.relay_socket.is_some_and(|info| {
            let ato_ms = f64::from(info.ato_us) / 1e3;
            ato_ms > 0.0 && (self.gap_p50_ms - ato_ms).abs() <= 8.0
        })
    }
}

/// What the relay saw over its run (milliseconds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RelayObservations {
    /// Exchanges relayed in full.
    pub exchanges: u64,
    /// Connections that carried them (closed ones and those open at the end).
    pub connections: u64,
    /// Requests as read from the client.
    pub client: LegPauses,
    /// Responses as read from the upstream.
    pub upstream: LegPauses,
    /// From the request forwarded to the upstream's first byte.
    pub upstream_first_byte_p10_ms: f64,
    /// Median from the request forwarded to the upstream's first byte.
    pub upstream_first_byte_p50_ms: f64,
    /// 90th percentile from the request forwarded to the upstream's first byte.
    pub upstream_first_byte_p90_ms: f64,
    /// Exchanges whose upstream first byte came [`LATE_FIRST_BYTE_MS`] or more after the request.
    pub late_first_bytes: u64,
    /// Median handshake of the relay's upstream connections.
    pub upstream_connect_p50_ms: Option<f64>,
    /// The upstream's HTTP `Server` header, naming its stack for the fixes.
    pub upstream_server_header: Option<String>,
}

/// Findings, most important first; `healthy` when nothing is wrong; none when nothing was
/// relayed.
pub fn relay_findings(o: &RelayObservations) -> Vec<Finding> {
    if o.exchanges == 0 {
        return Vec::new();
    }
    let mut findings = Vec::new();
    findings.extend(upstream_pauses(o));
    findings.extend(client_pauses(&o.client));
    findings.extend(slow_first_byte(o));
    findings.extend(connection_per_request(o));
    if findings.is_empty() {
        findings.push(healthy(o));
    }
    if let Some(stack) = o.upstream_server_header.as_deref().and_then(fixes::stack_of_server_header) {
        for finding in &mut findings {
            fixes::detected_first(&mut finding.fix, stack);
        }
    }
    findings
}

/// Whether a leg's pauses are a delayed-ACK timer's, and how sure that is.
struct TimerPattern {
    timer: Option<crate::timers::DelayedAckTimer>,
    proven: bool,
    confidence: Confidence,
}

/// The delayed ACK a stall on either leg waits for is the relay's own, a Linux socket's,
/// which never fires before TCP_DELACK_MIN (40 ms); less 3 ms for the relay's read timing
/// (it times reads, not arrivals). A typical pause shorter than this is the peer's own
/// pace: a server that sleeps 35 ms between a response's head and its body.
const RELAY_DELAYED_ACK_FLOOR_MS: f64 = 37.0;

fn timer_pattern(leg: &LegPauses) -> TimerPattern {
    let timer = match leg.gap_p50_ms {
        gap if gap >= RELAY_DELAYED_ACK_FLOOR_MS => match_delayed_ack_timer(gap),
        _ => None,
    };
    let clustered = is_clustered(leg.gap_p10_ms, leg.gap_p50_ms, leg.gap_p90_ms);
    let signature = leg.spares_first_exchanges() || leg.matches_relay_ato();
    let proven = timer.is_some() && clustered && leg.stalled >= MIN_STALLS_FOR_PROOF && signature;
    let confidence = if proven {
        Confidence::High
    } else if timer.is_some() && (clustered || signature) {
        Confidence::Medium
    } else {
        Confidence::Low
    };
    TimerPattern { timer, proven, confidence }
}

/// The evidence both legs share: how many stalled, how long, and the timer's tells.
fn pause_evidence(
    leg: &LegPauses,
    messages: &str,
    relay_role: &str,
    pattern: &TimerPattern,
) -> Vec<Evidence> {
    let mut evidence = vec![
        Evidence::new(format!("{messages} that paused mid-way"), leg.stalled as f64, "count"),
        Evidence::new(format!("{messages} relayed"), leg.messages as f64, "count"),
        Evidence::new("median pause", leg.gap_p50_ms, "ms"),
        Evidence::new("pause, 10th percentile", leg.gap_p10_ms, "ms"),
        Evidence::new("pause, 90th percentile", leg.gap_p90_ms, "ms"),
    ];
    if let Some(bytes) = leg.bytes_before_p50 {
        evidence.push(Evidence::new("median bytes before the pause", bytes as f64, "bytes"));
    }
    if leg.first_on_connection > 0 {
        evidence.push(Evidence::new(
            "of them, first exchanges on their connection (a fresh connection ACKs at once)",
            leg.stalled_first_on_connection as f64,
            "count",
        ));
    }
    if let Some(timer) = pattern.timer {
        evidence.push(Evidence::new(format!("the pause matches {}", timer.describe()), leg.gap_p50_ms, "ms"));
    }
    if let Some(info) = leg.relay_socket.filter(|info| info.ato_us > 0) {
        evidence.push(Evidence::new(
            format!("delayed-ACK timeout (ato) of the relay's socket, {relay_role}"),
            f64::from(info.ato_us) / 1e3,
            "ms",
        ));
    }
    evidence
}

fn relay_proof(leg: &LegPauses, rule: String) -> Proof {
    Proof {
        kind: ProofKind::RelayRule,
        experiment: rule,
        baseline_p50_ms: leg.gap_p50_ms,
        experiment_p50_ms: 0.0,
        removed: false,
        result: leg.example.clone(),
    }
}

/// Responses that pause after their first bytes: the upstream's Nagle waiting for the
/// relay's delayed ACK, or (not on a timer) the upstream's own pace.
fn upstream_pauses(o: &RelayObservations) -> Option<Finding> {
    let leg = &o.upstream;
    if leg.stalled == 0 {
        return None;
    }
    let pattern = timer_pattern(leg);
    let share = 100.0 * leg.stalled_share();
    let evidence = pause_evidence(leg, "responses", "the upstream's client", &pattern);
    // On a timer but spread (a busy machine, an ato that grew): still Nagle, not proven.
    if pattern.timer.is_none() {
        return Some(Finding {
            id: FindingId::SlowResponseBody,
            title: format!(
                "The upstream pauses {:.1} ms in the middle of {share:.0} % of its responses, not on a \
                 delayed-ACK timer: its own pace (streaming, a flush per chunk)",
                leg.gap_p50_ms
            ),
            proven: false,
            confidence: Confidence::Medium,
            evidence,
            proof: Vec::new(),
            fix_summary: "Find what the upstream does between the first bytes of a response and the rest."
                .into(),
            fix: fixes::slow_body(),
        });
    }
    let rule =
        "relay rule: responses paused after their first bytes for the length of a delayed-ACK timer, on \
                the upstream leg, where the relay is the upstream's client and delays its ACKs: Nagle on the \
                upstream holds the rest of each response until that ACK"
            .to_string();
    Some(Finding {
        id: FindingId::ServerNagleDelayedAck,
        title: format!(
            "The upstream held the rest of its responses until the relay's delayed ACK ({:.0} ms): {} of {} \
             exchanges, {:.1} ms lost",
            leg.gap_p50_ms, leg.stalled, leg.messages, leg.lost_ms
        ),
        proven: pattern.proven,
        confidence: pattern.confidence,
        evidence,
        proof: vec![relay_proof(leg, rule)],
        fix_summary: fixes::SERVER_NODELAY_SUMMARY.into(),
        fix: fixes::server_nodelay(),
    })
}

/// Requests that pause after their first bytes on a delayed-ACK timer: the client's Nagle.
fn client_pauses(leg: &LegPauses) -> Option<Finding> {
    if leg.stalled == 0 {
        return None;
    }
    let pattern = timer_pattern(leg);
    // A client's own pace between pieces of a request is no finding of its own.
    pattern.timer?;
    let rule =
        "relay rule: requests paused after their first bytes for the length of a delayed-ACK timer, on the \
                client leg, where the relay is the client's server and delays its ACKs: Nagle on the client \
                holds the rest of each request until that ACK"
            .to_string();
    Some(Finding {
        id: FindingId::ClientNagleDelayedAck,
        title: format!(
            "The client held the rest of its requests until the relay's delayed ACK ({:.0} ms): {} of {} \
             exchanges, {:.1} ms lost",
            leg.gap_p50_ms, leg.stalled, leg.messages, leg.lost_ms
        ),
        proven: pattern.proven,
        confidence: pattern.confidence,
        evidence: pause_evidence(leg, "requests", "the client's server", &pattern),
        proof: vec![relay_proof(leg, rule)],
        fix_summary: fixes::CLIENT_SINGLE_WRITE_SUMMARY.into(),
        fix: fixes::client_single_write(),
    })
}

/// The upstream answers late (after the whole request reached it).
fn slow_first_byte(o: &RelayObservations) -> Option<Finding> {
    let late_share = o.late_first_bytes as f64 / o.exchanges as f64;
    if o.upstream_first_byte_p50_ms < SLOW_FIRST_BYTE_MS || late_share < SYMPTOM_FRACTION {
        return None;
    }
    let first_byte = o.upstream_first_byte_p50_ms;
    let mut evidence = vec![
        Evidence::new(
            "median time from the request forwarded to the upstream's first byte",
            first_byte,
            "ms",
        ),
        Evidence::new("first byte, 10th percentile", o.upstream_first_byte_p10_ms, "ms"),
        Evidence::new("first byte, 90th percentile", o.upstream_first_byte_p90_ms, "ms"),
        Evidence::new(
            format!("exchanges with a first byte {LATE_FIRST_BYTE_MS:.0} ms late or more"),
            o.late_first_bytes as f64,
            "count",
        ),
    ];
    let clustered = is_clustered(o.upstream_first_byte_p10_ms, first_byte, o.upstream_first_byte_p90_ms);
    let title = match hop_stall_timer(first_byte).filter(|_| clustered) {
        Some(timer) => {
            evidence.push(Evidence::new(
                format!("first bytes cluster like {}", timer.describe()),
                first_byte,
                "ms",
            ));
            format!(
                "The upstream takes {first_byte:.1} ms before its first byte, a steady delay like a delayed-ACK \
                 timer: it may wait on a stalled hop of its own (nodelay proxy in front of that hop shows it)"
            )
        }
        None => format!(
            "The upstream takes {first_byte:.1} ms before its first byte: its own work, or a hop behind it"
        ),
    };
    Some(Finding {
        id: FindingId::SlowFirstByte,
        title,
        proven: false,
        confidence: Confidence::Medium,
        evidence,
        proof: Vec::new(),
        fix_summary: "Find where the upstream spends the time before its first byte.".into(),
        fix: fixes::server_work(),
    })
}

/// Clients that open a connection for (almost) every exchange: a handshake on both legs each time.
fn connection_per_request(o: &RelayObservations) -> Option<Finding> {
    let per_connection = o.exchanges as f64 / o.connections.max(1) as f64;
    if o.connections < MIN_CONNECTIONS || per_connection > MAX_EXCHANGES_PER_CONNECTION {
        return None;
    }
    let mut evidence = vec![
        Evidence::new("connections", o.connections as f64, "count"),
        Evidence::new("exchanges", o.exchanges as f64, "count"),
    ];
    if let Some(connect) = o.upstream_connect_p50_ms {
        evidence.push(Evidence::new("median upstream handshake, paid again each time", connect, "ms"));
    }
    Some(Finding {
        id: FindingId::ConnectionPerRequest,
        title: format!(
            "Clients open a new connection for almost every exchange ({per_connection:.2} exchanges per connection): \
             each pays a handshake, through the relay on both legs"
        ),
        proven: false,
        confidence: Confidence::Medium,
        evidence,
        proof: Vec::new(),
        fix_summary: "Reuse connections (HTTP keep-alive, a client or pool kept between requests).".into(),
        fix: fixes::keep_alive(),
    })
}

fn healthy(o: &RelayObservations) -> Finding {
    Finding {
        id: FindingId::Healthy,
        title: format!(
            "No pause as long as a stall ({STALL_GAP_MS:.0} ms) inside any of {} exchanges, on either leg",
            o.exchanges
        ),
        proven: true,
        confidence: if o.exchanges >= 10 { Confidence::High } else { Confidence::Medium },
        evidence: vec![
            Evidence::new("exchanges relayed", o.exchanges as f64, "count"),
            Evidence::new("median time to the upstream's first byte", o.upstream_first_byte_p50_ms, "ms"),
        ],
        proof: Vec::new(),
        fix_summary: "Nothing to fix.".into(),
        fix: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stalling(stalled: u64, messages: u64, gap_ms: f64) -> LegPauses {
        LegPauses {
            messages,
            stalled,
            first_on_connection: 1,
            stalled_first_on_connection: 0,
            gap_p10_ms: gap_ms - 0.3,
            gap_p50_ms: gap_ms,
            gap_p90_ms: gap_ms + 0.4,
            lost_ms: gap_ms * stalled as f64,
            bytes_before_p50: Some(119),
            relay_socket: Some(TcpInfo { ato_us: 40_000, ..TcpInfo::default() }),
            example: "connection 1, exchange 2: 138 bytes in 2 reads, paused 43.70 ms after 119 bytes".into(),
        }
    }

    fn observations(client: LegPauses, upstream: LegPauses) -> RelayObservations {
        RelayObservations {
            exchanges: 30,
            connections: 1,
            client,
            upstream,
            upstream_first_byte_p10_ms: 0.1,
            upstream_first_byte_p50_ms: 0.2,
            upstream_first_byte_p90_ms: 0.3,
            late_first_bytes: 0,
            upstream_connect_p50_ms: Some(0.1),
            upstream_server_header: Some("BaseHTTP/0.6 Python/3.12".into()),
        }
    }

    fn ids(findings: &[Finding]) -> Vec<FindingId> {
        findings.iter().map(|f| f.id).collect()
    }

    #[test]
    fn upstream_pauses_on_a_timer_are_server_nagle_seen_by_the_relay() {
        let findings = relay_findings(&observations(
            LegPauses { messages: 30, ..LegPauses::default() },
            stalling(29, 30, 43.7),
        ));
        assert_eq!(ids(&findings), [FindingId::ServerNagleDelayedAck]);
        let finding = &findings[0];
        assert!(finding.proven && finding.confidence == Confidence::High, "{finding:#?}");
        assert_eq!(finding.proof[0].kind, ProofKind::RelayRule);
        assert!(
            finding.title.contains("upstream") && finding.title.contains("29 of 30"),
            "{}",
            finding.title
        );
        assert!(finding.evidence.iter().any(|e| e.what.contains("Linux/FreeBSD")));
        assert!(
            finding.fix[0].detected && finding.fix[0].stack.starts_with("Python"),
            "{:?}",
            finding.fix[0]
        );
    }

    /// A server with TCP_NODELAY that sleeps 35 ms between a response's head and its body
    /// (an exploratory tester's): shorter than any delay of the relay's ACK, so its own pace.
    #[test]
    fn a_pause_shorter_than_the_relays_delayed_ack_is_the_upstreams_own_pace() {
        for gap_ms in [35.2, 30.33] {
            let findings = relay_findings(&observations(
                LegPauses { messages: 30, ..LegPauses::default() },
                stalling(28, 28, gap_ms),
            ));
            assert_eq!(ids(&findings), [FindingId::SlowResponseBody], "{gap_ms} ms");
            assert!(findings[0].title.contains("not on a delayed-ACK timer"), "{}", findings[0].title);
        }
    }

    #[test]
    fn requests_paused_on_a_timer_are_client_nagle() {
        let findings = relay_findings(&observations(
            stalling(20, 30, 40.4),
            LegPauses { messages: 30, ..LegPauses::default() },
        ));
        assert_eq!(ids(&findings), [FindingId::ClientNagleDelayedAck]);
        assert!(findings[0].title.contains("client held"), "{}", findings[0].title);
    }

    #[test]
    fn a_few_pauses_or_no_signature_are_not_proof() {
        let mut upstream = stalling(2, 30, 43.7);
        let findings = relay_findings(&observations(LegPauses::default(), upstream.clone()));
        assert_eq!(ids(&findings), [FindingId::ServerNagleDelayedAck]);
        assert!(!findings[0].proven);
        // First exchanges stalling too and no ato to compare with: no signature.
        upstream = stalling(29, 30, 43.7);
        upstream.stalled_first_on_connection = 1;
        upstream.relay_socket = None;
        let finding = &relay_findings(&observations(LegPauses::default(), upstream))[0];
        assert!(!finding.proven && finding.confidence == Confidence::Medium);
    }

    #[test]
    fn pauses_on_a_timer_but_spread_are_nagle_not_proven() {
        // A loaded machine: the relay's ato grew to 60 ms, a few pauses ran long.
        let mut upstream = stalling(28, 30, 43.4);
        (upstream.gap_p10_ms, upstream.gap_p90_ms) = (41.1, 64.2);
        let finding = &relay_findings(&observations(LegPauses::default(), upstream))[0];
        assert_eq!(finding.id, FindingId::ServerNagleDelayedAck);
        assert!(!finding.proven && finding.confidence == Confidence::Medium, "{finding:#?}");
    }

    #[test]
    fn pauses_off_any_timer_are_the_upstreams_own_pace() {
        let mut upstream = stalling(10, 30, 300.0);
        upstream.gap_p10_ms = 120.0;
        let findings = relay_findings(&observations(LegPauses::default(), upstream));
        assert_eq!(ids(&findings), [FindingId::SlowResponseBody]);
        assert!(!findings[0].proven);
    }

    #[test]
    fn a_late_first_byte_and_fresh_connections_are_seen_and_nothing_relayed_says_nothing() {
        let mut o = observations(LegPauses::default(), LegPauses::default());
        o.upstream_first_byte_p10_ms = 43.5;
        o.upstream_first_byte_p50_ms = 44.0;
        o.upstream_first_byte_p90_ms = 44.6;
        o.late_first_bytes = 30;
        o.connections = 30;
        let findings = relay_findings(&o);
        assert_eq!(ids(&findings), [FindingId::SlowFirstByte, FindingId::ConnectionPerRequest]);
        assert!(findings[0].title.contains("stalled hop"), "{}", findings[0].title);
        o.exchanges = 0;
        assert!(relay_findings(&o).is_empty());
    }

    #[test]
    fn no_stall_is_healthy() {
        let findings = relay_findings(&observations(LegPauses::default(), LegPauses::default()));
        assert_eq!(ids(&findings), [FindingId::Healthy]);
        assert!(findings[0].title.contains("30 exchanges"));
    }
}
