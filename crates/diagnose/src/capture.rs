//! Findings from a packet capture: the same vocabulary as the live doctor, proven by the
//! capture's own packets instead of an experiment: the Nagle rules of docs/field-notes.md §5 and §9,
//! and what the exchanges spent their time on (the round trip, the client's wait, the
//! server's first byte), retransmission timeouts and zero windows.

use crate::finding::{Confidence, Evidence, Finding, FindingId, Fix, Proof, ProofKind};
use crate::fixes;
use crate::phase::is_clustered;
use nodelay_tcp::timers::match_delayed_ack_timer;

/// The stalls a capture showed where one kind of side (server or client) held its data.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureStalls {
    /// The Nagling sender was the server (else the client).
    pub held_by_server: bool,
    /// Stalls counted.
    pub stalls: u64,
    /// Flows with at least one such stall.
    pub flows: u64,
    /// Time lost to the stalls, summed.
    pub time_lost_ms: f64,
    /// The peer's ACK delay: percentiles over the stalls.
    pub ack_delay_p10_ms: f64,
    /// Median of the peer's ACK delay.
    pub ack_delay_p50_ms: f64,
    /// 90th percentile of the peer's ACK delay.
    pub ack_delay_p90_ms: f64,
    /// How soon after that ACK the held data left.
    pub release_after_ack_p50_us: f64,
    /// One stall spelled out with packet numbers.
    pub example: String,
}

fn finding(group: &CaptureStalls) -> Finding {
    let (holder, acker) = if group.held_by_server { ("server", "client") } else { ("client", "server") };
    let timer = match_delayed_ack_timer(group.ack_delay_p50_ms);
    let mut evidence = vec![
        Evidence::new("stalls", group.stalls as f64, "count"),
        Evidence::new("flows with stalls", group.flows as f64, "count"),
        Evidence::new("time lost to them", group.time_lost_ms, "ms"),
        // Which side of the capture point each figure is on: the ACK delay is the peer's own
        // (the path, and a slow link's queue, taken out); the release is as captured.
        Evidence::new(
            format!("median delay of the {acker}'s pure ACK, at the {acker} (the path taken out)"),
            group.ack_delay_p50_ms,
            "ms",
        ),
        Evidence::new(
            format!("median release of the {holder}'s held data after that ACK, at the capture point"),
            group.release_after_ack_p50_us / 1e3,
            "ms",
        ),
    ];
    if let Some(timer) = timer {
        evidence.push(Evidence::new(
            format!("the ACK delay matches {} ({acker} side)", timer.describe()),
            group.ack_delay_p50_ms,
            "ms",
        ));
    }
    let clustered = is_clustered(group.ack_delay_p10_ms, group.ack_delay_p50_ms, group.ack_delay_p90_ms);
    let confidence =
        if group.stalls >= 3 && clustered && timer.is_some() { Confidence::High } else { Confidence::Medium };
    let (id, messages, fix_summary, fix) = if group.held_by_server {
        (
            FindingId::ServerNagleDelayedAck,
            "responses",
            fixes::SERVER_NODELAY_SUMMARY,
            fixes::server_nodelay(),
        )
    } else {
        (
            FindingId::ClientNagleDelayedAck,
            "requests",
            fixes::CLIENT_SINGLE_WRITE_SUMMARY,
            fixes::client_single_write(),
        )
    };
    let title = format!(
        "The {holder} held the rest of its {messages} until the {acker}'s delayed ACK ({:.0} ms): {} stalls, {:.1} ms lost",
        group.ack_delay_p50_ms, group.stalls, group.time_lost_ms
    );
    Finding {
        id,
        title,
        proven: true,
        confidence,
        evidence,
        proof: vec![Proof {
            kind: ProofKind::CaptureRule,
            experiment: format!(
                "capture rule: a partial segment from the {holder}, the {acker}'s pure ACK after its delayed-ACK \
                 time, the {holder}'s next segment right after that ACK"
            ),
            baseline_p50_ms: group.ack_delay_p50_ms,
            experiment_p50_ms: group.release_after_ack_p50_us / 1e3,
            removed: true,
            result: group.example.clone(),
        }],
        fix_summary: fix_summary.into(),
        fix,
    }
}

/// Holds of one round trip a capture showed where one kind of side held its data: released
/// by an ACK the peer sent at once (docs/field-notes.md §9).
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureRoundTrips {
    /// The Nagling sender was the server (else the client).
    pub held_by_server: bool,
    /// Holds counted.
    pub holds: u64,
    /// Flows with at least one.
    pub flows: u64,
    /// Time they held data, summed.
    pub time_lost_ms: f64,
    /// Median hold.
    pub hold_p50_ms: f64,
    /// Median round trip of the flows, as the capture timed it then.
    pub rtt_p50_ms: f64,
    /// Median delay of the peer's ACK, net of its side of the round trip (≈ 0: at once).
    pub peer_ack_delay_p50_ms: f64,
    /// One hold spelled out with packet numbers.
    pub example: String,
}

/// Where a capture's exchanges spent their time, summed over its flows, in ms.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CaptureTime {
    /// Exchanges with a request and a response.
    pub exchanges: u64,
    /// Round trips: one per handshake and one per exchange.
    pub network_ms: f64,
    /// Clients' waits between their handshake and their first request.
    pub client_wait_ms: f64,
    /// Servers' time before their first byte, net of the round trip.
    pub server_ms: f64,
    /// Requests and responses on the wire, with what held them (Nagle, resends, windows).
    pub transfer_ms: f64,
}

impl CaptureTime {
    /// All of it.
    pub fn total_ms(&self) -> f64 {
        self.network_ms + self.client_wait_ms + self.server_ms + self.transfer_ms
    }

    /// The part that took most: `network`, `client`, `server` or `transfer` (None: no time).
    pub fn dominant(&self) -> Option<(&'static str, f64)> {
        let parts = [
            ("network", self.network_ms),
            ("client", self.client_wait_ms),
            ("server", self.server_ms),
            ("transfer", self.transfer_ms),
        ];
        parts.into_iter().filter(|(_, ms)| *ms > 0.0).max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// `ms` as a share of the whole, in %.
    fn share(&self, ms: f64) -> f64 {
        let total = self.total_ms();
        if total > 0.0 { ms / total * 100.0 } else { 0.0 }
    }
}

/// A part of the exchanges' time is named when it is at least this share of the whole, in %.
pub const NAMED_SHARE_PERCENT: f64 = 25.0;

/// The slowest path of a capture.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowPath {
    /// Flows whose round trip is a slow path.
    pub flows: u64,
    /// The slowest flow's `tcp.stream`.
    pub stream: u64,
    /// Its round trip.
    pub rtt_ms: f64,
    /// The part between the capture point and the client.
    pub client_side_ms: f64,
    /// The part between the capture point and the server.
    pub server_side_ms: f64,
}

/// The slowest first byte of a capture.
#[derive(Debug, Clone, PartialEq)]
pub struct LateFirstByte {
    /// Exchanges whose first byte was late.
    pub exchanges: u64,
    /// The flow's `tcp.stream`.
    pub stream: u64,
    /// The exchange on it.
    pub exchange: u32,
    /// The server's time before its first byte, net of the round trip.
    pub server_ms: f64,
    /// Its ACK of the request, net of the round trip, when it came before the response.
    pub server_ack_ms: Option<f64>,
    /// The flow's round trip.
    pub rtt_ms: f64,
    /// Capture packet numbers: the request, the server's ACK (0: none before the response),
    /// the response.
    pub packets: (u64, u64, u64),
}

/// The longest wait of a client between its handshake and its request.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientWait {
    /// Waits that long or longer.
    pub waits: u64,
    /// The flow's `tcp.stream`.
    pub stream: u64,
    /// The longest wait.
    pub wait_ms: f64,
    /// Capture packet numbers: the handshake's ACK, the request.
    pub packets: (u64, u64),
}

/// Retransmission timeouts of a capture.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeouts {
    /// Resends after a timeout.
    pub timeouts: u64,
    /// Series of them (one segment resent until answered).
    pub series: u64,
    /// Series no ACK ended.
    pub unanswered: u64,
    /// Time the series waited on timers, summed.
    pub lost_ms: f64,
    /// The worst series: its flow's `tcp.stream`.
    pub stream: u64,
    /// Sent by the server (else the client).
    pub by_server: bool,
    /// A SYN (the connection being opened).
    pub syn: bool,
    /// Answered by an ACK at last.
    pub answered: bool,
    /// Capture packet number of its first resend.
    pub first_packet: u64,
    /// Each resend's time after the original transmission, in ms.
    pub resent_after_ms: Vec<f64>,
}

/// The zero windows of a capture.
#[derive(Debug, Clone, PartialEq)]
pub struct ZeroWindowFacts {
    /// Zero windows long enough to count.
    pub count: u64,
    /// Their time, summed.
    pub total_ms: f64,
    /// The longest: its flow's `tcp.stream`.
    pub stream: u64,
    /// Its length.
    pub longest_ms: f64,
    /// The receiver was the server (else the client).
    pub by_server: bool,
    /// Window probes the sender sent meanwhile.
    pub probes: u64,
    /// Capture packet numbers: the first zero window, the reopening (0: never).
    pub packets: (u64, u64),
}

/// What a capture shows besides Nagle holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CapturePath {
    /// Where the exchanges' time went.
    pub time: CaptureTime,
    /// Median round trip of the flows whose round trip is known.
    pub rtt_p50_ms: Option<f64>,
    /// Flows whose round trip is a slow path.
    pub slow_path: Option<SlowPath>,
    /// Late first bytes.
    pub late_first_byte: Option<LateFirstByte>,
    /// Clients' long waits after their handshake.
    pub client_wait: Option<ClientWait>,
    /// Retransmission timeouts.
    pub timeouts: Option<Timeouts>,
    /// Zero windows.
    pub zero_window: Option<ZeroWindowFacts>,
}

/// Everything a capture shows, the costliest first: Nagle holds of both kinds, and what its
/// exchanges, losses and windows show; `healthy` (saying where the time went) when nothing.
pub(crate) fn capture_diagnosis(
    stalls: &[CaptureStalls],
    round_trips: &[CaptureRoundTrips],
    path: &CapturePath,
    tcp_flows: u64,
) -> Vec<Finding> {
    let mut findings: Vec<(f64, Finding)> =
        stalls.iter().filter(|g| g.stalls > 0).map(|g| (g.time_lost_ms, finding(g))).collect();
    findings
        .extend(round_trips.iter().filter(|g| g.holds > 0).map(|g| (g.time_lost_ms, round_trip_finding(g))));
    findings.extend(path_findings(path));
    // Stable: equal costs keep the order above.
    findings.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut findings: Vec<Finding> = findings.into_iter().map(|(_, f)| f).collect();
    if findings.is_empty() {
        findings.push(healthy(path, tcp_flows));
    }
    findings
}

fn healthy(path: &CapturePath, tcp_flows: u64) -> Finding {
    let mut evidence = vec![Evidence::new("TCP flows examined", tcp_flows as f64, "count")];
    let time = &path.time;
    if time.exchanges > 0 {
        evidence.push(Evidence::new("exchanges decomposed", time.exchanges as f64, "count"));
        evidence.push(Evidence::new("round trips (one per handshake and exchange)", time.network_ms, "ms"));
        evidence.push(Evidence::new(
            "servers' time before their first byte, net of the round trip",
            time.server_ms,
            "ms",
        ));
        evidence.push(Evidence::new("clients' waits after their handshake", time.client_wait_ms, "ms"));
        evidence.push(Evidence::new("transfer", time.transfer_ms, "ms"));
    }
    if let Some(rtt) = path.rtt_p50_ms {
        evidence.push(Evidence::new("median round trip", rtt, "ms"));
    }
    let most = match time.dominant() {
        Some((part, ms)) => format!("; most of the time is the {part}'s ({:.0}%)", time.share(ms)),
        None => String::new(),
    };
    Finding {
        id: FindingId::Healthy,
        title: format!(
            "Nothing slow in {tcp_flows} TCP flow{}: no Nagle stall, late first byte, retransmission timeout or zero window{most}",
            if tcp_flows == 1 { "" } else { "s" }
        ),
        proven: true,
        confidence: if tcp_flows > 0 { Confidence::High } else { Confidence::Low },
        evidence,
        proof: Vec::new(),
        fix_summary: "Nothing to fix.".into(),
        fix: Vec::new(),
    }
}

fn capture_proof(experiment: String, first: f64, second: f64, result: String) -> Vec<Proof> {
    vec![Proof {
        kind: ProofKind::CaptureRule,
        experiment,
        baseline_p50_ms: first,
        experiment_p50_ms: second,
        removed: true,
        result,
    }]
}

fn round_trip_finding(group: &CaptureRoundTrips) -> Finding {
    let (holder, acker) = if group.held_by_server { ("server", "client") } else { ("client", "server") };
    let messages = if group.held_by_server { "responses" } else { "requests" };
    let evidence = vec![
        Evidence::new("holds", group.holds as f64, "count"),
        Evidence::new("flows with holds", group.flows as f64, "count"),
        Evidence::new("time lost to them", group.time_lost_ms, "ms"),
        Evidence::new("median hold", group.hold_p50_ms, "ms"),
        Evidence::new("median round trip", group.rtt_p50_ms, "ms"),
        Evidence::new(
            format!("median delay of the {acker}'s ACK, net of the round trip"),
            group.peer_ack_delay_p50_ms,
            "ms",
        ),
    ];
    let (id, fix_summary, fix) = if group.held_by_server {
        (FindingId::ServerNagleRoundTrip, fixes::SERVER_NODELAY_SUMMARY, fixes::server_nodelay())
    } else {
        (FindingId::ClientNagleRoundTrip, fixes::CLIENT_SINGLE_WRITE_SUMMARY, fixes::client_single_write())
    };
    Finding {
        id,
        title: format!(
            "The {holder}'s {messages} wait one round trip ({:.1} ms) for the {acker}'s ACK of their first part: \
             Nagle's algorithm holds the rest until an ACK comes back ({} holds, {:.1} ms lost)",
            group.hold_p50_ms, group.holds, group.time_lost_ms
        ),
        proven: true,
        confidence: if group.holds >= 3 { Confidence::High } else { Confidence::Medium },
        evidence,
        proof: capture_proof(
            format!(
                "capture rule: a partial segment from the {holder}, the {acker}'s pure ACK at once, the {holder}'s next \
                 segment as that ACK reaches it (one round trip after the partial segment)"
            ),
            group.hold_p50_ms,
            group.rtt_p50_ms,
            group.example.clone(),
        ),
        fix_summary: format!(
            "{fix_summary} Here it saves one round trip ({:.1} ms) per {}.",
            group.rtt_p50_ms,
            if group.held_by_server { "response" } else { "request" }
        ),
        fix,
    }
}

/// The findings of a capture's exchanges, losses and windows, each with the time it cost.
fn path_findings(path: &CapturePath) -> Vec<(f64, Finding)> {
    let time = &path.time;
    let named = |ms: f64| time.share(ms) >= NAMED_SHARE_PERCENT;
    let mut findings = Vec::new();
    if let Some(slow) = &path.slow_path
        && named(time.network_ms)
    {
        findings.push((time.network_ms, network_finding(slow, time)));
    }
    if let Some(wait) = &path.client_wait
        && named(time.client_wait_ms)
    {
        findings.push((time.client_wait_ms, client_wait_finding(wait, time)));
    }
    if let Some(late) = &path.late_first_byte
        && named(time.server_ms)
    {
        findings.push((time.server_ms, first_byte_finding(late, time)));
    }
    if let Some(timeouts) = &path.timeouts {
        findings.push((timeouts.lost_ms, timeout_finding(timeouts)));
    }
    if let Some(window) = &path.zero_window {
        findings.push((window.total_ms, zero_window_finding(window)));
    }
    findings
}

fn network_finding(slow: &SlowPath, time: &CaptureTime) -> Finding {
    Finding {
        id: FindingId::NetworkRoundTrip,
        title: format!(
            "The path's round trip is {:.0} ms: the network takes {:.0}% of the exchanges' time ({:.0} ms)",
            slow.rtt_ms,
            time.share(time.network_ms),
            time.network_ms
        ),
        proven: true,
        confidence: Confidence::High,
        evidence: vec![
            Evidence::new("round trip of the slowest path", slow.rtt_ms, "ms"),
            Evidence::new("of it, between the capture point and the client", slow.client_side_ms, "ms"),
            Evidence::new("of it, between the capture point and the server", slow.server_side_ms, "ms"),
            Evidence::new("flows on a slow path", slow.flows as f64, "count"),
            Evidence::new("round trips paid (one per handshake and exchange)", time.network_ms, "ms"),
            Evidence::new("share of the exchanges' time", time.share(time.network_ms), "%"),
        ],
        proof: capture_proof(
            "capture rule: SYN → SYN-ACK and SYN-ACK → ACK (and data → ACK) add up to the round trip wherever \
             the capture was taken"
                .into(),
            slow.rtt_ms,
            time.network_ms,
            format!(
                "stream {}: {:.1} ms from the capture to the client and back, {:.1} ms to the server and back",
                slow.stream, slow.client_side_ms, slow.server_side_ms
            ),
        ),
        fix_summary: "The time is the network's: bring client and server closer (a nearer region, a CDN or edge \
                      proxy), or spend fewer round trips (reuse connections, batch requests, resume TLS sessions)."
            .into(),
        fix: vec![
            Fix::of("any service", "serve from a region (or an edge proxy, a CDN) near its clients"),
            Fix::of("HTTP clients", "reuse connections (keep-alive, HTTP/2) so each request pays one round trip, not three"),
            Fix::of("TLS", "resume sessions (tickets) or use TLS 1.3 (one round trip; 0-RTT for resumed sessions)"),
            Fix::of("any protocol", "batch or pipeline requests: each sequential exchange pays a round trip"),
        ],
    }
}

fn client_wait_finding(wait: &ClientWait, time: &CaptureTime) -> Finding {
    Finding {
        id: FindingId::ClientDelay,
        title: format!(
            "The client waited {:.0} ms between its handshake and its request ({} such waits, {:.0}% of the \
             exchanges' time)",
            wait.wait_ms,
            wait.waits,
            time.share(time.client_wait_ms)
        ),
        proven: true,
        confidence: Confidence::High,
        evidence: vec![
            Evidence::new("longest wait after a handshake", wait.wait_ms, "ms"),
            Evidence::new("waits that long", wait.waits as f64, "count"),
            Evidence::new("clients' waits after their handshake, summed", time.client_wait_ms, "ms"),
            Evidence::new("share of the exchanges' time", time.share(time.client_wait_ms), "%"),
        ],
        proof: capture_proof(
            "capture rule: the client's ACK that ends the handshake, then its request's first byte (both travel the \
             same way, so the gap is the client's wherever the capture was taken)"
                .into(),
            wait.wait_ms,
            0.0,
            format!(
                "stream {}: handshake ACK #{} then the request #{} {:.1} ms later",
                wait.stream, wait.packets.0, wait.packets.1, wait.wait_ms
            ),
        ),
        fix_summary: "The time is the client's, before it sends: look at what it does between connecting and \
                      writing its request (name resolution, building the request, a pool that connects early)."
            .into(),
        fix: vec![
            Fix::of("any client", "profile what runs between connect() returning and the first write"),
            Fix::of("connection pools", "a connection opened ahead of need shows this wait and costs nothing; one opened per request does"),
        ],
    }
}

fn first_byte_finding(late: &LateFirstByte, time: &CaptureTime) -> Finding {
    let ack = match late.server_ack_ms {
        Some(ack) => format!("; its ACK of the request came {ack:.1} ms after it: the request had arrived"),
        None => String::new(),
    };
    let mut evidence = vec![
        Evidence::new("slowest first byte, net of the round trip", late.server_ms, "ms"),
        Evidence::new("round trip", late.rtt_ms, "ms"),
        Evidence::new("late first bytes", late.exchanges as f64, "count"),
        Evidence::new("servers' time before their first byte, summed", time.server_ms, "ms"),
        Evidence::new("share of the exchanges' time", time.share(time.server_ms), "%"),
    ];
    if let Some(ack) = late.server_ack_ms {
        evidence
            .insert(1, Evidence::new("the server's ACK of the request, net of the round trip", ack, "ms"));
    }
    Finding {
        id: FindingId::SlowFirstByte,
        title: format!(
            "The server took {:.0} ms before its first byte, beyond the {:.*} ms round trip{ack}",
            late.server_ms,
            if late.rtt_ms < 1.0 { 3 } else { 1 },
            late.rtt_ms
        ),
        proven: true,
        confidence: if late.server_ack_ms.is_some() { Confidence::High } else { Confidence::Medium },
        evidence,
        proof: capture_proof(
            "capture rule: the request's last byte, the server's ACK of it and its first byte, each less the \
             round trip between the capture point and the server"
                .into(),
            late.server_ms,
            late.server_ack_ms.unwrap_or(0.0),
            format!(
                "stream {} exchange {}: request #{}, {}response #{}",
                late.stream,
                late.exchange,
                late.packets.0,
                if late.packets.1 > 0 { format!("ACK #{}, ", late.packets.1) } else { String::new() },
                late.packets.2
            ),
        ),
        fix_summary: "The time is spent in the server before it answers; no client-side TCP change removes it.".into(),
        fix: fixes::server_work(),
    }
}

fn timeout_finding(t: &Timeouts) -> Finding {
    let sender = if t.by_server { "server" } else { "client" };
    let what = if t.syn { "SYN" } else { "segment" };
    let times: Vec<String> = t.resent_after_ms.iter().map(|ms| format!("{:.1}", ms / 1e3)).collect();
    let title = if t.answered {
        format!(
            "Segments were lost and resent only when the retransmission timer ran out: {} timeouts, {:.0} ms lost \
             (the worst: the {sender}'s {what} resent after {} s)",
            t.timeouts,
            t.lost_ms,
            times.join(", ")
        )
    } else {
        format!(
            "The {sender}'s {what} was resent {} times (after {} s) and never acknowledged: the peer was gone",
            t.resent_after_ms.len(),
            times.join(", ")
        )
    };
    let mut evidence = vec![
        Evidence::new("resends after a timeout", t.timeouts as f64, "count"),
        Evidence::new("series (one segment resent until answered)", t.series as f64, "count"),
        Evidence::new("series never answered", t.unanswered as f64, "count"),
        Evidence::new("time spent waiting on the timers", t.lost_ms, "ms"),
    ];
    if let Some(first) = t.resent_after_ms.first() {
        evidence.push(Evidence::new("first resend after the original", *first, "ms"));
    }
    let doubling = t.resent_after_ms.len() >= 3;
    Finding {
        id: FindingId::RetransmissionTimeout,
        title,
        proven: true,
        confidence: if doubling || t.timeouts >= 3 { Confidence::High } else { Confidence::Medium },
        evidence,
        proof: capture_proof(
            "capture rule: sequence numbers sent again 200 ms or more after the sender's previous transmission \
             and as long after any third duplicate ACK (the timer's resend, not a fast retransmit); the timer \
             doubles each time"
                .into(),
            t.resent_after_ms.first().copied().unwrap_or(0.0),
            t.lost_ms,
            format!(
                "stream {}: the {sender}'s {what}, first resent as #{}, {}",
                t.stream,
                t.first_packet,
                if t.answered { "then acknowledged" } else { "never acknowledged in the capture" }
            ),
        ),
        fix_summary: if t.answered {
            "Packets are lost on the path: find where (interface errors, a full queue, a policer, a firewall); \
             a lost segment waits a whole timeout when nothing follows it to trigger a fast retransmit, or \
             when its fast retransmit is lost too."
                .into()
        } else {
            "The peer stopped answering (it crashed, moved, or a firewall dropped the flow): bound how long \
             clients wait (TCP_USER_TIMEOUT, application timeouts) and look at the peer's side."
                .into()
        },
        fix: vec![
            Fix::of("Linux", "ip -s link and ethtool -S show drops; tc -s qdisc shows a full queue"),
            Fix::of("clients", "setsockopt(TCP_USER_TIMEOUT) bounds the wait on a peer that is gone"),
            Fix::of("firewalls and NAT", "an idle timeout shorter than the connection's idle time drops its packets"),
        ],
    }
}

fn zero_window_finding(w: &ZeroWindowFacts) -> Finding {
    let (receiver, sender) = if w.by_server { ("server", "client") } else { ("client", "server") };
    Finding {
        id: FindingId::ZeroWindow,
        title: format!(
            "The {receiver} advertised a zero window for {:.0} ms ({} window probes from the {sender}): its \
             application stopped reading",
            w.longest_ms, w.probes
        ),
        proven: true,
        confidence: Confidence::High,
        evidence: vec![
            Evidence::new("longest zero window", w.longest_ms, "ms"),
            Evidence::new("zero windows of 200 ms or more", w.count as f64, "count"),
            Evidence::new("time the windows stayed shut, summed", w.total_ms, "ms"),
            Evidence::new("window probes", w.probes as f64, "count"),
        ],
        proof: capture_proof(
            "capture rule: the receiver's window field 0 until it opens again, the sender probing meanwhile"
                .into(),
            w.longest_ms,
            w.total_ms,
            format!(
                "stream {}: zero window from #{}, {}",
                w.stream,
                w.packets.0,
                if w.packets.1 > 0 {
                    format!("opened again at #{}", w.packets.1)
                } else {
                    "never opened in the capture".into()
                }
            ),
        ),
        fix_summary: format!(
            "The {receiver}'s application does not read its socket fast enough: read it promptly (a reader that \
             never blocks on other work), or give it a larger receive buffer."
        ),
        fix: vec![
            Fix::of(
                "any application",
                "read the socket as data comes (a dedicated reader, a non-blocking loop)",
            ),
            Fix::of(
                "Linux",
                "SO_RCVBUF, or net.ipv4.tcp_rmem's maximum, for a reader that is slow in bursts",
            ),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(held_by_server: bool, stalls: u64) -> CaptureStalls {
        CaptureStalls {
            held_by_server,
            stalls,
            flows: 1,
            time_lost_ms: 40.1 * stalls as f64,
            ack_delay_p10_ms: 40.0,
            ack_delay_p50_ms: 40.1,
            ack_delay_p90_ms: 40.3,
            release_after_ack_p50_us: 15.0,
            example: "packet #12".into(),
        }
    }

    #[test]
    fn server_and_client_stalls_get_their_ids() {
        let findings = capture_diagnosis(&[group(true, 9), group(false, 0)], &[], &CapturePath::default(), 1);
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].id, FindingId::ServerNagleDelayedAck);
        assert_eq!(findings[0].confidence, Confidence::High);
        assert!(findings[0].evidence.iter().any(|e| e.what.contains("Linux/FreeBSD")));
        let findings = capture_diagnosis(&[group(false, 2)], &[], &CapturePath::default(), 1);
        assert_eq!(findings[0].id, FindingId::ClientNagleDelayedAck);
        assert_eq!(findings[0].confidence, Confidence::Medium);
    }

    #[test]
    fn no_stalls_is_healthy() {
        let findings = capture_diagnosis(&[], &[], &CapturePath::default(), 12);
        assert_eq!(findings[0].id, FindingId::Healthy);
        assert!(findings[0].title.contains("12 TCP flows"));
    }

    fn time(network: f64, client: f64, server: f64, transfer: f64) -> CaptureTime {
        CaptureTime {
            exchanges: 3,
            network_ms: network,
            client_wait_ms: client,
            server_ms: server,
            transfer_ms: transfer,
        }
    }

    fn ids(findings: &[Finding]) -> Vec<&'static str> {
        findings.iter().map(|f| f.id.as_str()).collect()
    }

    fn late(server_ms: f64) -> LateFirstByte {
        LateFirstByte {
            exchanges: 1,
            stream: 0,
            exchange: 1,
            server_ms,
            server_ack_ms: Some(0.1),
            rtt_ms: 40.0,
            packets: (4, 5, 6),
        }
    }

    #[test]
    fn what_dominates_is_named_and_the_rest_is_healthy() {
        // A healthy server 40 ms away: the round trip is most of the time, and no slow path.
        let path =
            CapturePath { time: time(160.0, 0.0, 1.5, 0.4), rtt_p50_ms: Some(40.0), ..Default::default() };
        let findings = capture_diagnosis(&[], &[], &path, 1);
        assert_eq!(ids(&findings), ["healthy"]);
        assert!(
            findings[0].title.contains("1 TCP flow:") && findings[0].title.contains("network's (99%)"),
            "{}",
            findings[0].title
        );
        // A late first byte that is most of the time.
        let path = CapturePath {
            time: time(80.0, 0.0, 1000.0, 0.4),
            late_first_byte: Some(late(1000.0)),
            ..Default::default()
        };
        let findings = capture_diagnosis(&[], &[], &path, 1);
        assert_eq!(ids(&findings), ["slow-first-byte"]);
        assert_eq!(findings[0].confidence, Confidence::High);
        assert!(
            findings[0].title.contains("1000 ms") && findings[0].title.contains("ACK"),
            "{}",
            findings[0].title
        );
        // A late first byte lost in a slow path's time is not what dominates.
        let path = CapturePath {
            time: time(9000.0, 0.0, 30.0, 0.4),
            late_first_byte: Some(late(30.0)),
            slow_path: Some(SlowPath {
                flows: 1,
                stream: 0,
                rtt_ms: 900.0,
                client_side_ms: 900.0,
                server_side_ms: 0.1,
            }),
            ..Default::default()
        };
        assert_eq!(ids(&capture_diagnosis(&[], &[], &path, 1)), ["network-round-trip"]);
    }

    #[test]
    fn losses_and_windows_are_named_whatever_their_share_costliest_first() {
        let timeouts = Timeouts {
            timeouts: 5,
            series: 1,
            unanswered: 1,
            lost_ms: 4800.0,
            stream: 2,
            by_server: false,
            syn: false,
            answered: false,
            first_packet: 9,
            resent_after_ms: vec![200.0, 600.0, 1200.0, 2400.0, 4800.0],
        };
        let window = ZeroWindowFacts {
            count: 1,
            total_ms: 3000.0,
            stream: 1,
            longest_ms: 3000.0,
            by_server: false,
            probes: 4,
            packets: (7, 20),
        };
        let path = CapturePath {
            time: time(1e6, 0.0, 0.0, 0.0),
            timeouts: Some(timeouts),
            zero_window: Some(window),
            ..Default::default()
        };
        let findings = capture_diagnosis(&[], &[], &path, 3);
        assert_eq!(ids(&findings), ["retransmission-timeout", "zero-window"]);
        assert!(findings[0].title.contains("never acknowledged: the peer was gone"), "{}", findings[0].title);
        assert!(findings[0].title.contains("0.2, 0.6, 1.2, 2.4, 4.8 s"), "{}", findings[0].title);
        assert!(
            findings[1].title.contains("client advertised a zero window for 3000 ms"),
            "{}",
            findings[1].title
        );
    }

    #[test]
    fn round_trip_holds_get_their_ids_and_say_what_nodelay_saves() {
        let holds = CaptureRoundTrips {
            held_by_server: true,
            holds: 9,
            flows: 1,
            time_lost_ms: 9.0 * 40.8,
            hold_p50_ms: 40.8,
            rtt_p50_ms: 40.6,
            peer_ack_delay_p50_ms: 0.05,
            example: "#12".into(),
        };
        let findings =
            capture_diagnosis(&[group(true, 0)], std::slice::from_ref(&holds), &CapturePath::default(), 1);
        assert_eq!(ids(&findings), ["server-nagle-round-trip"]);
        assert!(findings[0].fix_summary.contains("one round trip (40.6 ms)"), "{}", findings[0].fix_summary);
        let client = CaptureRoundTrips { held_by_server: false, ..holds };
        assert_eq!(
            ids(&capture_diagnosis(&[], &[client], &CapturePath::default(), 1)),
            ["client-nagle-round-trip"]
        );
        // With delayed-ACK stalls too, the costlier first.
        let findings = capture_diagnosis(
            &[group(true, 20)],
            &[CaptureRoundTrips { holds: 1, time_lost_ms: 40.0, ..findings_holds() }],
            &CapturePath::default(),
            1,
        );
        assert_eq!(ids(&findings), ["server-nagle-delayed-ack", "server-nagle-round-trip"]);
    }

    fn findings_holds() -> CaptureRoundTrips {
        CaptureRoundTrips {
            held_by_server: true,
            holds: 1,
            flows: 1,
            time_lost_ms: 40.0,
            hold_p50_ms: 40.0,
            rtt_p50_ms: 40.0,
            peer_ack_delay_p50_ms: 0.0,
            example: String::new(),
        }
    }
}
