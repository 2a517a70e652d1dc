//! Findings from an inspecting relay (`nodelay proxy`), in the doctor's vocabulary. The relay
//! sits between a client and an upstream and sees, on each leg, when every piece of every
//! message arrived. No experiment is run: a finding rests on the pattern seen (proof kind
//! `relay-rule`), and is called proven only when the pattern is the whole Nagle signature
//! (docs/field-notes.md §1-2): pauses inside messages as long as a delayed-ACK timer, clustered like
//! a timer's, on several exchanges, and either sparing each connection's first exchange
//! (which a fresh connection ACKs at once) or matching the relay's own delayed-ACK timeout.
//!
//! On the upstream leg the relay is the upstream's client: its delayed ACKs release what
//! the upstream's Nagle holds, so a pause inside responses there is held by the upstream. On
//! the client leg the relay is the client's server: a pause inside requests is held by the
//! client.
//!
//! Across a path (a leg's round trip, the relay socket's TCP_INFO `min_rtt`, of
//! 1 ms or more) the rules judge only what the path does not explain, as the
//! doctor does (docs/field-notes.md §9): the upstream's own time is its first byte less the upstream
//! leg's round trip; a pause is a stall when it lasts [`STALL_GAP_MS`] beyond the leg's
//! round trip, and its timer is matched net of it (Nagle held the rest until the relay's
//! delayed ACK came back: the timer plus one round trip); a pause of about one round trip
//! inside a message that fits the initial window is a hold the relay's prompt ACK released
//! (`server-nagle-round-trip` upstream, `client-nagle-round-trip` on the client leg).

use crate::finding::{Confidence, Evidence, Finding, FindingId, Proof, ProofKind};
use crate::fixes;
use crate::phase::{LATE_FIRST_BYTE_MS, STALL_GAP_MS, is_clustered};
use nodelay_tcp::TcpInfo;
use nodelay_tcp::path::round_trip_pause_share;
use nodelay_tcp::thresholds::{SLOW_FIRST_BYTE_MS, SYMPTOM_FRACTION};
use nodelay_tcp::timers::{hop_stall_timer, match_delayed_ack_timer};

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
    /// The leg's round trip: the median TCP_INFO `min_rtt` of the relay's socket on it over
    /// the messages (0 when the kernel gave none). From MIN_PATH_RTT_MS on it is taken
    /// out of the pauses: a stall is [`STALL_GAP_MS`] beyond it.
    pub path_rtt_ms: f64,
    /// Messages no larger than the initial window that paused about one round trip (within
    /// a quarter of it plus 1 ms), across a path only.
    pub round_trip_held: u64,
    /// Of them, messages of a connection's first exchange.
    pub round_trip_held_first_on_connection: u64,
    /// Median of those pauses.
    pub round_trip_hold_p50_ms: f64,
    /// Those pauses, summed.
    pub round_trip_lost_ms: f64,
}

impl LegPauses {
    fn stalled_share(&self) -> f64 {
        if self.messages == 0 { 0.0 } else { self.stalled as f64 / self.messages as f64 }
    }

    fn round_trip_held_share(&self) -> f64 {
        if self.messages == 0 { 0.0 } else { self.round_trip_held as f64 / self.messages as f64 }
    }

    /// The round trip taken out of this leg's pauses: all of it from MIN_PATH_RTT_MS
    /// on, none on loopback or a near LAN.
    pub fn judged_rtt_ms(&self) -> f64 {
        judged(self.path_rtt_ms)
    }

    /// A pause less the leg's judged round trip: what the path does not explain.
    fn beyond_path(&self, pause_ms: f64) -> f64 {
        pause_ms - self.judged_rtt_ms()
    }

    /// Holds of one round trip outnumber stalls, in a quarter of the messages or more (a
    /// majority where the round trip is within the scheduling slack: `round_trip_pause_share`).
    fn held_round_trips(&self) -> bool {
        self.judged_rtt_ms() > 0.0
            && self.round_trip_held > self.stalled
            && self.round_trip_held_share() >= round_trip_pause_share(self.judged_rtt_ms(), SYMPTOM_FRACTION)
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
            let ato_ms = nodelay_tcp::time::ms_from_us(info.ato_us);
            ato_ms > 0.0 && (self.beyond_path(self.gap_p50_ms) - ato_ms).abs() <= 8.0
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
    /// Exchanges whose upstream took [`LATE_FIRST_BYTE_MS`] or more of its own time: the first
    /// byte after the request, less the upstream leg's round trip from MIN_PATH_RTT_MS on.
    pub late_first_bytes: u64,
    /// Median handshake of the relay's upstream connections.
    pub upstream_connect_p50_ms: Option<f64>,
    /// The upstream's HTTP `Server` header, naming its stack for the fixes.
    pub upstream_server_header: Option<String>,
    /// Median exchange, from the request's first byte read to the response's last written.
    pub total_p50_ms: f64,
}

/// A round trip as the rules take it out: all of it on a path, none below.
fn judged(rtt_ms: f64) -> f64 {
    nodelay_tcp::judged_rtt_ms(Some(rtt_ms))
}

impl RelayObservations {
    /// The upstream leg's round trip as the rules take it out of first bytes.
    pub fn upstream_rtt_ms(&self) -> f64 {
        self.upstream.judged_rtt_ms()
    }

    /// The upstream's own time: its median first byte less the upstream leg's judged round
    /// trip.
    pub fn upstream_time_p50_ms(&self) -> f64 {
        (self.upstream_first_byte_p50_ms - self.upstream_rtt_ms()).max(0.0)
    }
}

/// Findings, most important first; `healthy` when nothing is wrong; none when nothing was
/// relayed.
pub(crate) fn relay_findings(o: &RelayObservations) -> Vec<Finding> {
    if o.exchanges == 0 {
        return Vec::new();
    }
    let mut findings = Vec::new();
    if o.upstream.held_round_trips() {
        findings.push(round_trip_hold(&o.upstream, Side::Upstream, o.total_p50_ms));
    } else {
        findings.extend(upstream_pauses(o));
    }
    if o.client.held_round_trips() {
        findings.push(round_trip_hold(&o.client, Side::Client, o.total_p50_ms));
    } else {
        findings.extend(client_pauses(&o.client, o.total_p50_ms));
    }
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
    timer: Option<nodelay_tcp::timers::DelayedAckTimer>,
    proven: bool,
    confidence: Confidence,
}

/// The delayed ACK a stall on either leg waits for is the relay's own, a Linux socket's,
/// which never fires before TCP_DELACK_MIN (40 ms); less 3 ms for the relay's read timing
/// (it times reads, not arrivals). A typical pause shorter than this is the peer's own
/// pace: a server that sleeps 35 ms between a response's head and its body.
const RELAY_DELAYED_ACK_FLOOR_MS: f64 = 37.0;

fn timer_pattern(leg: &LegPauses) -> TimerPattern {
    let timer = match leg.beyond_path(leg.gap_p50_ms) {
        gap if gap >= RELAY_DELAYED_ACK_FLOOR_MS => match_delayed_ack_timer(gap),
        _ => None,
    };
    let clustered = is_clustered(
        leg.beyond_path(leg.gap_p10_ms),
        leg.beyond_path(leg.gap_p50_ms),
        leg.beyond_path(leg.gap_p90_ms),
    );
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
    let rtt = leg.judged_rtt_ms();
    if rtt > 0.0 {
        evidence.push(Evidence::new(
            format!("round trip of the leg (TCP_INFO min_rtt of the relay's socket, {relay_role})"),
            rtt,
            "ms",
        ));
        evidence.push(Evidence::new(
            "median pause beyond the round trip",
            leg.beyond_path(leg.gap_p50_ms),
            "ms",
        ));
    }
    if let Some(timer) = pattern.timer {
        let what = if rtt > 0.0 { "the pause beyond the round trip matches" } else { "the pause matches" };
        evidence.push(Evidence::new(
            format!("{what} {}", timer.describe()),
            leg.beyond_path(leg.gap_p50_ms),
            "ms",
        ));
    }
    if let Some(info) = leg.relay_socket.filter(|info| info.ato_us > 0) {
        evidence.push(Evidence::new(
            format!("delayed-ACK timeout (ato) of the relay's socket, {relay_role}"),
            nodelay_tcp::time::ms_from_us(info.ato_us),
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
    let rtt = leg.judged_rtt_ms();
    if pattern.timer.is_none() {
        let pause = if rtt > 0.0 {
            format!(
                "{:.1} ms beyond the upstream leg's {rtt:.1} ms round trip",
                leg.beyond_path(leg.gap_p50_ms)
            )
        } else {
            format!("{:.1} ms", leg.gap_p50_ms)
        };
        return Some(Finding {
            id: FindingId::SlowResponseBody,
            title: format!(
                "The upstream pauses {pause} in the middle of {share:.0} % of its responses, not on a \
                 delayed-ACK timer: its own pace (streaming, a flush per chunk)"
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
            "The upstream held the rest of its responses until the relay's delayed ACK ({}): {} of {} \
             exchanges, {:.1} ms lost",
            delay_and_round_trip(leg),
            leg.stalled,
            leg.messages,
            leg.lost_ms
        ),
        proven: pattern.proven,
        confidence: pattern.confidence,
        evidence,
        proof: vec![relay_proof(leg, rule)],
        fix_summary: format!("{}{}", fixes::SERVER_NODELAY_SUMMARY, saves(leg, "upstream", o.total_p50_ms)),
        fix: fixes::server_nodelay(),
    })
}

/// The pause as the title names it: the timer's delay, and across a path the round trip
/// the released data then travelled (`42 ms delay + 20.6 ms round trip`).
fn delay_and_round_trip(leg: &LegPauses) -> String {
    match leg.judged_rtt_ms() {
        rtt if rtt > 0.0 => {
            format!("{:.0} ms delay + {rtt:.1} ms round trip", leg.beyond_path(leg.gap_p50_ms))
        }
        _ => format!("{:.0} ms", leg.gap_p50_ms),
    }
}

/// What TCP_NODELAY on the holding side saves per exchange across a path (nothing is added
/// on loopback, where the pause is the whole of it).
fn saves(leg: &LegPauses, side: &str, total_p50_ms: f64) -> String {
    match leg.judged_rtt_ms() {
        rtt if rtt > 0.0 => format!(
            " TCP_NODELAY on the {side} saves {:.1} ms of {total_p50_ms:.1} ms per exchange here, and one round \
             trip ({rtt:.1} ms) even with a peer that ACKs at once.",
            leg.gap_p50_ms
        ),
        _ => String::new(),
    }
}

/// Which side held the data of a leg's messages.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Upstream,
}

/// Messages that paused about one round trip of a path after their first part, fitting the
/// initial window: Nagle on the sender held the rest until the relay's ACK of the first part
/// came back, and the relay ACKed at once.
fn round_trip_hold(leg: &LegPauses, side: Side, total_p50_ms: f64) -> Finding {
    let rtt = leg.judged_rtt_ms();
    let hold = leg.round_trip_hold_p50_ms;
    let (id, who, messages, relay_role, summary, fix) = match side {
        Side::Upstream => (
            FindingId::ServerNagleRoundTrip,
            "upstream",
            "responses",
            "the upstream's client",
            fixes::SERVER_NODELAY_SUMMARY,
            fixes::server_nodelay(),
        ),
        Side::Client => (
            FindingId::ClientNagleRoundTrip,
            "client",
            "requests",
            "the client's server",
            fixes::CLIENT_SINGLE_WRITE_SUMMARY,
            fixes::client_single_write(),
        ),
    };
    let share = leg.round_trip_held_share();
    let mut evidence = vec![
        Evidence::new(
            format!("{messages} held about one round trip mid-way"),
            leg.round_trip_held as f64,
            "count",
        ),
        Evidence::new(format!("{messages} relayed"), leg.messages as f64, "count"),
        Evidence::new("median hold", hold, "ms"),
        Evidence::new(
            format!("round trip of the leg (TCP_INFO min_rtt of the relay's socket, {relay_role})"),
            rtt,
            "ms",
        ),
        Evidence::new(
            "of them, first exchanges on their connection",
            leg.round_trip_held_first_on_connection as f64,
            "count",
        ),
        Evidence::new(format!("{messages} that stalled beyond the round trip"), leg.stalled as f64, "count"),
    ];
    if let Some(info) = leg.relay_socket.filter(|info| info.ato_us > 0) {
        evidence.push(Evidence::new(
            format!("delayed-ACK timeout (ato) of the relay's socket, {relay_role}"),
            nodelay_tcp::time::ms_from_us(info.ato_us),
            "ms",
        ));
    }
    let rule = format!(
        "relay rule: {messages} that fit the initial window paused about one round trip of the {who} leg (within \
         a quarter of it plus 1 ms) after their first part: Nagle on the {who} holds the rest until the ACK of \
         that part comes back, and the relay ACKed at once"
    );
    Finding {
        id,
        title: format!(
            "The {who}'s {messages} wait one round trip ({hold:.1} ms; the leg's round trip is {rtt:.1} ms) for the \
             relay's ACK of their first part: Nagle on the {who} holds the rest until an ACK comes back ({} of {} \
             exchanges, {:.1} ms lost)",
            leg.round_trip_held, leg.messages, leg.round_trip_lost_ms
        ),
        // A pattern, not an experiment: the relay cannot ACK later to show the hold follow.
        proven: false,
        confidence: if share >= 0.75 { Confidence::High } else { Confidence::Medium },
        evidence,
        proof: vec![Proof {
            kind: ProofKind::RelayRule,
            experiment: rule,
            baseline_p50_ms: hold,
            experiment_p50_ms: 0.0,
            removed: false,
            result: format!(
                "{} of {} {messages} held {hold:.1} ms, the leg's round trip {rtt:.1} ms",
                leg.round_trip_held, leg.messages
            ),
        }],
        fix_summary: format!(
            "{summary} TCP_NODELAY on the {who} saves one round trip, {hold:.1} ms of {total_p50_ms:.1} ms per \
             exchange."
        ),
        fix,
    }
}

/// Requests that pause after their first bytes on a delayed-ACK timer: the client's Nagle.
fn client_pauses(leg: &LegPauses, total_p50_ms: f64) -> Option<Finding> {
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
            "The client held the rest of its requests until the relay's delayed ACK ({}): {} of {} \
             exchanges, {:.1} ms lost",
            delay_and_round_trip(leg),
            leg.stalled,
            leg.messages,
            leg.lost_ms
        ),
        proven: pattern.proven,
        confidence: pattern.confidence,
        evidence: pause_evidence(leg, "requests", "the client's server", &pattern),
        proof: vec![relay_proof(leg, rule)],
        fix_summary: format!("{}{}", fixes::CLIENT_SINGLE_WRITE_SUMMARY, saves(leg, "client", total_p50_ms)),
        fix: fixes::client_single_write(),
    })
}

/// The upstream answers late (after the whole request reached it). Across a path, its own
/// time is the first byte less the upstream leg's round trip, and it is slow only when that
/// is [`SLOW_FIRST_BYTE_MS`] and a quarter of the round trip.
fn slow_first_byte(o: &RelayObservations) -> Option<Finding> {
    let late_share = o.late_first_bytes as f64 / o.exchanges as f64;
    let rtt = o.upstream_rtt_ms();
    let own = o.upstream_time_p50_ms();
    if own < SLOW_FIRST_BYTE_MS || own < rtt / 4.0 || late_share < SYMPTOM_FRACTION {
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
    if rtt > 0.0 {
        evidence.push(Evidence::new(
            "round trip of the upstream leg (TCP_INFO min_rtt of the relay's socket)",
            rtt,
            "ms",
        ));
        evidence.push(Evidence::new("the upstream's own time (first byte less the round trip)", own, "ms"));
    }
    let clustered = is_clustered(
        o.upstream_first_byte_p10_ms - rtt,
        first_byte - rtt,
        o.upstream_first_byte_p90_ms - rtt,
    );
    let takes = if rtt > 0.0 {
        format!("{own:.1} ms beyond the upstream leg's {rtt:.1} ms round trip")
    } else {
        format!("{first_byte:.1} ms")
    };
    let title = match hop_stall_timer(own).filter(|_| clustered) {
        Some(timer) => {
            evidence.push(Evidence::new(format!("first bytes cluster like {}", timer.describe()), own, "ms"));
            format!(
                "The upstream takes {takes} before its first byte, a steady delay like a delayed-ACK \
                 timer: it may wait on a stalled hop of its own (nodelay proxy in front of that hop shows it)"
            )
        }
        None => format!("The upstream takes {takes} before its first byte: its own work, or a hop behind it"),
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
    let rtt = o.upstream_rtt_ms();
    let mut evidence = vec![
        Evidence::new("exchanges relayed", o.exchanges as f64, "count"),
        Evidence::new("median time to the upstream's first byte", o.upstream_first_byte_p50_ms, "ms"),
    ];
    let title = if rtt > 0.0 {
        let own = o.upstream_time_p50_ms();
        evidence.push(Evidence::new(
            "round trip of the upstream leg (TCP_INFO min_rtt of the relay's socket)",
            rtt,
            "ms",
        ));
        evidence.push(Evidence::new("the upstream's own time (first byte less the round trip)", own, "ms"));
        let share = if o.total_p50_ms > 0.0 { (100.0 * rtt / o.total_p50_ms).min(100.0) } else { 0.0 };
        format!(
            "No pause {STALL_GAP_MS:.0} ms beyond the round trip inside any of {} exchanges, on either leg; the \
             upstream answers in {own:.2} ms, {rtt:.1} ms of each exchange ({share:.0} %) is the upstream leg's \
             round trip",
            o.exchanges
        )
    } else {
        format!(
            "No pause as long as a stall ({STALL_GAP_MS:.0} ms) inside any of {} exchanges, on either leg",
            o.exchanges
        )
    };
    Finding {
        id: FindingId::Healthy,
        title,
        proven: true,
        confidence: if o.exchanges >= 10 { Confidence::High } else { Confidence::Medium },
        evidence,
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
            ..LegPauses::default()
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
            total_p50_ms: 44.0,
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

    /// A leg of `rtt_ms` round trip under `leg`.
    fn across(mut leg: LegPauses, rtt_ms: f64) -> LegPauses {
        leg.path_rtt_ms = rtt_ms;
        leg
    }

    /// Measured through the relay over wan.py at 20 ms: Python's server (Nagle on) behind a
    /// relay that delays its ACKs; the pause is the relay's 40 ms timer plus the round trip.
    #[test]
    fn across_a_path_the_timer_is_matched_beyond_the_round_trip() {
        for (rtt, gap) in [(20.6, 62.9), (40.7, 82.4)] {
            let mut upstream = across(stalling(29, 30, gap), rtt);
            upstream.round_trip_held = 1;
            upstream.round_trip_held_first_on_connection = 1;
            let mut o =
                observations(LegPauses { messages: 30, path_rtt_ms: 0.02, ..LegPauses::default() }, upstream);
            o.total_p50_ms = gap + rtt;
            let findings = relay_findings(&o);
            assert_eq!(ids(&findings), [FindingId::ServerNagleDelayedAck], "{rtt} ms");
            let finding = &findings[0];
            assert!(finding.proven && finding.confidence == Confidence::High, "{finding:#?}");
            assert!(
                finding.title.contains(&format!("ms delay + {rtt:.1} ms round trip")),
                "{}",
                finding.title
            );
            assert!(finding.evidence.iter().any(|e| e.what.contains("Linux/FreeBSD")), "{finding:#?}");
            assert!(
                finding
                    .evidence
                    .iter()
                    .any(|e| e.what.starts_with("round trip of the leg") && e.value == rtt),
                "{finding:#?}"
            );
            assert!(
                finding.fix_summary.contains(&format!("one round trip ({rtt:.1} ms)")),
                "{}",
                finding.fix_summary
            );
        }
    }

    #[test]
    fn a_hold_of_one_round_trip_is_nagle_released_by_a_prompt_ack() {
        let mut upstream = across(LegPauses { messages: 30, ..LegPauses::default() }, 20.5);
        (upstream.round_trip_held, upstream.round_trip_hold_p50_ms, upstream.round_trip_lost_ms) =
            (29, 20.9, 606.1);
        let mut o = observations(LegPauses { messages: 30, ..LegPauses::default() }, upstream.clone());
        o.upstream_first_byte_p50_ms = 20.7;
        o.total_p50_ms = 41.8;
        let findings = relay_findings(&o);
        assert_eq!(ids(&findings), [FindingId::ServerNagleRoundTrip]);
        let finding = &findings[0];
        assert!(finding.title.contains("one round trip (20.9 ms"), "{}", finding.title);
        assert!(
            finding.fix_summary.contains("saves one round trip, 20.9 ms of 41.8 ms"),
            "{}",
            finding.fix_summary
        );
        assert_eq!(finding.confidence, Confidence::High);
        // The same on the client leg is the client's Nagle; a few holds are no finding.
        let o = observations(upstream.clone(), LegPauses { messages: 30, ..LegPauses::default() });
        assert_eq!(ids(&relay_findings(&o)), [FindingId::ClientNagleRoundTrip]);
        upstream.round_trip_held = 5;
        let o = observations(LegPauses::default(), upstream);
        assert_eq!(ids(&relay_findings(&o)), [FindingId::Healthy]);
    }

    /// The TCP_NODELAY twin at 40 ms: its first byte is the round trip, not slow.
    #[test]
    fn across_a_path_a_first_byte_of_one_round_trip_is_healthy_and_the_network_named() {
        let mut o = observations(
            LegPauses { messages: 30, ..LegPauses::default() },
            across(LegPauses { messages: 30, ..LegPauses::default() }, 40.7),
        );
        (o.upstream_first_byte_p10_ms, o.upstream_first_byte_p50_ms, o.upstream_first_byte_p90_ms) =
            (40.9, 41.1, 41.6);
        o.total_p50_ms = 41.3;
        let findings = relay_findings(&o);
        assert_eq!(ids(&findings), [FindingId::Healthy]);
        assert!(
            findings[0].title.contains("answers in 0.40 ms, 40.7 ms of each exchange (99 %)"),
            "{}",
            findings[0].title
        );
        // Its own 40 ms beyond the round trip is slow.
        (o.upstream_first_byte_p10_ms, o.upstream_first_byte_p50_ms, o.upstream_first_byte_p90_ms) =
            (75.0, 81.1, 90.0);
        o.late_first_bytes = 30;
        let findings = relay_findings(&o);
        assert_eq!(ids(&findings), [FindingId::SlowFirstByte]);
        assert!(
            findings[0].title.contains("40.4 ms beyond the upstream leg's 40.7 ms round trip"),
            "{}",
            findings[0].title
        );
    }

    #[test]
    fn across_a_path_a_pause_under_the_round_trip_and_a_stall_is_nothing() {
        // 35 ms at 20 ms: less than 25 ms beyond the round trip (the relay counted no stall).
        let mut upstream = across(LegPauses { messages: 30, ..LegPauses::default() }, 20.0);
        upstream.round_trip_held = 0;
        let o = observations(LegPauses::default(), upstream);
        assert_eq!(ids(&relay_findings(&o)), [FindingId::Healthy]);
    }
}
