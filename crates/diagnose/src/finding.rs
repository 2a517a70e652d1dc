//! What a diagnosis says: stable ids, evidence with units, the proving experiment, fixes.

use serde::Serialize;

/// Stable finding ids: a public contract (JSON, exit codes, docs). Extend, never rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingId {
    /// The server's response waits for the client's delayed ACK (Nagle on the server).
    ServerNagleDelayedAck,
    /// Across a path, the server's response waits one round trip for the ACK of its first
    /// part (Nagle on the server, released by an ACK the client sent at once).
    ServerNagleRoundTrip,
    /// The client's request waits for the server's delayed ACK (Nagle on the client).
    ClientNagleDelayedAck,
    /// Every request pays a TCP handshake because connections are not reused.
    ConnectionPerRequest,
    /// The server takes long before it sends anything; no client-side change helps.
    SlowFirstByte,
    /// The server pauses in the middle of responses, and no client-side change helps.
    SlowResponseBody,
    /// A hop behind a proxy (the target's upstream) is where the time goes; the upstream's
    /// own diagnosis names the cause.
    ProxyHopStall,
    /// The server's busiest thread (or all its cores) was on CPU nearly the whole run: it is
    /// slow because it works, not because it waits.
    ServerCpuBound,
    /// The server opened a new TCP connection to its upstream for (nearly) every request.
    UpstreamConnectionPerRequest,
    /// Asked in HTTP/1.0 without keep-alive, the server kept the connection open after its
    /// response (often saying `Connection: keep-alive`, copied from an upstream): clients
    /// that wait for the close wait for its idle timeout.
    UnrequestedKeepAlive,
    /// New connections wait 1 s (3 s, 7 s) for a SYN retransmission: the server's accept
    /// queue was full when their handshake came.
    ListenBacklogOverflow,
    /// The server stays silent after a head with `Expect: 100-continue`: clients that send
    /// it hold the body back until their own timer ends (curl 1 s).
    #[serde(rename = "expect-100-continue-wait")]
    ExpectContinueWait,
    /// The server closes idle keep-alive connections after a timeout (`--idle-probe`):
    /// clients whose pools keep them longer reuse closed ones.
    KeepaliveIdleClose,
    /// Across a path, the client's request waits one round trip: Nagle on the client holds
    /// its second write until the server's ACK of the first comes back.
    ClientNagleRoundTrip,
    /// The path's round trip is what the exchanges spend most on (a capture's handshake and
    /// ACKs show a slow path).
    NetworkRoundTrip,
    /// The client waits between its handshake (or the previous response) and its request.
    ClientDelay,
    /// Segments were lost and resent after a retransmission timeout (200 ms or more), or
    /// the sender gave up on a peer that was gone.
    RetransmissionTimeout,
    /// A receiver advertised a zero window: its application stopped reading.
    ZeroWindow,
    /// A keep-alive connection idle longer than its RTO restarts in slow start: a large
    /// response after a pause takes extra round trips.
    SlowStartAfterIdle,
    /// A response larger than the initial congestion window takes extra round trips on a
    /// fresh connection.
    InitialWindowLimited,
    /// Responses came back with an error status (4xx, 5xx): what was timed is an error page.
    ErrorResponses,
    /// HTTP/2: responses larger than the client's flow-control window wait for its
    /// WINDOW_UPDATE, a round trip each.
    H2FlowControlWindow,
    /// HTTP/2: requests queue behind the server's SETTINGS_MAX_CONCURRENT_STREAMS.
    H2StreamLimitQueueing,
    /// HTTP/2: a lost segment holds every stream of its TCP connection until the
    /// retransmission fills the hole.
    H2HeadOfLineLoss,
    /// Nothing found that costs latency.
    Healthy,
    /// Too many requests failed for any verdict: the timings that remain cannot be trusted.
    UnreliableMeasurement,
}

impl FindingId {
    /// Every id, in the order declared.
    pub const ALL: [FindingId; 26] = [
        FindingId::ServerNagleDelayedAck,
        FindingId::ServerNagleRoundTrip,
        FindingId::ClientNagleDelayedAck,
        FindingId::ConnectionPerRequest,
        FindingId::SlowFirstByte,
        FindingId::SlowResponseBody,
        FindingId::ProxyHopStall,
        FindingId::ServerCpuBound,
        FindingId::UpstreamConnectionPerRequest,
        FindingId::UnrequestedKeepAlive,
        FindingId::ListenBacklogOverflow,
        FindingId::ExpectContinueWait,
        FindingId::KeepaliveIdleClose,
        FindingId::ClientNagleRoundTrip,
        FindingId::NetworkRoundTrip,
        FindingId::ClientDelay,
        FindingId::RetransmissionTimeout,
        FindingId::ZeroWindow,
        FindingId::SlowStartAfterIdle,
        FindingId::InitialWindowLimited,
        FindingId::ErrorResponses,
        FindingId::H2FlowControlWindow,
        FindingId::H2StreamLimitQueueing,
        FindingId::H2HeadOfLineLoss,
        FindingId::Healthy,
        FindingId::UnreliableMeasurement,
    ];

    /// The id named by `text`, as JSON spells it.
    pub fn parse(text: &str) -> Option<FindingId> {
        FindingId::ALL.into_iter().find(|id| id.as_str() == text)
    }

    /// A Nagle hold meeting a delayed ACK or a round trip, on either side: what `stall` means.
    pub fn is_stall(self) -> bool {
        matches!(
            self,
            FindingId::ServerNagleDelayedAck
                | FindingId::ServerNagleRoundTrip
                | FindingId::ClientNagleDelayedAck
                | FindingId::ClientNagleRoundTrip
        )
    }

    /// The stable id as it appears in JSON and the docs.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingId::ServerNagleDelayedAck => "server-nagle-delayed-ack",
            FindingId::ServerNagleRoundTrip => "server-nagle-round-trip",
            FindingId::ClientNagleDelayedAck => "client-nagle-delayed-ack",
            FindingId::ConnectionPerRequest => "connection-per-request",
            FindingId::SlowFirstByte => "slow-first-byte",
            FindingId::SlowResponseBody => "slow-response-body",
            FindingId::ProxyHopStall => "proxy-hop-stall",
            FindingId::ServerCpuBound => "server-cpu-bound",
            FindingId::UpstreamConnectionPerRequest => "upstream-connection-per-request",
            FindingId::UnrequestedKeepAlive => "unrequested-keep-alive",
            FindingId::ListenBacklogOverflow => "listen-backlog-overflow",
            FindingId::ExpectContinueWait => "expect-100-continue-wait",
            FindingId::KeepaliveIdleClose => "keepalive-idle-close",
            FindingId::ClientNagleRoundTrip => "client-nagle-round-trip",
            FindingId::NetworkRoundTrip => "network-round-trip",
            FindingId::ClientDelay => "client-delay",
            FindingId::RetransmissionTimeout => "retransmission-timeout",
            FindingId::ZeroWindow => "zero-window",
            FindingId::SlowStartAfterIdle => "slow-start-after-idle",
            FindingId::InitialWindowLimited => "initial-window-limited",
            FindingId::ErrorResponses => "error-responses",
            FindingId::H2FlowControlWindow => "h2-flow-control-window",
            FindingId::H2StreamLimitQueueing => "h2-stream-limit-queueing",
            FindingId::H2HeadOfLineLoss => "h2-head-of-line-loss",
            FindingId::Healthy => "healthy",
            FindingId::UnreliableMeasurement => "unreliable-measurement",
        }
    }
}

/// How sure a finding is, as each rule grades what it saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Weak: few of the signs the rule looks for, or too little to go on.
    Low,
    /// Likely: some of the signs agree, others are missing or thin.
    Medium,
    /// The signs the rule looks for agree, on enough samples.
    High,
}

/// One measured fact. `value` is in `unit` (ms, %, bytes, count, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// What was measured, in words.
    pub what: String,
    /// The measured value, in `unit`.
    pub value: f64,
    /// The unit of `value`: `ms`, `%`, `bytes`, `count`, ...
    pub unit: &'static str,
}

impl Evidence {
    /// A fact `what` measured at `value` in `unit`.
    pub fn new(what: impl Into<String>, value: f64, unit: &'static str) -> Self {
        Evidence { what: what.into(), value, unit }
    }
}

/// How a finding was proven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProofKind {
    /// A live experiment changed one thing and compared.
    Experiment,
    /// A packet capture showed the stall's packet pattern.
    CaptureRule,
    /// The fix itself was applied to the running server and the baseline measured again.
    FixApplied,
    /// Read from the server's own counters during the run (/proc: CPU, schedstat, sockets).
    ServerView,
    /// The hop's own diagnosis, run on the upstream address directly.
    UpstreamDiagnosis,
    /// One request sent to see what the server does (not a change that removes a symptom).
    Probe,
    /// An inspecting relay (`nodelay proxy`) saw the stall's pattern in the traffic it
    /// relayed: no experiment was run.
    RelayRule,
}

/// The experiment that tested the finding and what it changed (or, from a capture, the
/// packet pattern that shows it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Proof {
    /// How it was proven.
    pub kind: ProofKind,
    /// What was changed or looked at, in words.
    pub experiment: String,
    /// Median total latency of the baseline, for an experiment; other kinds of proof carry
    /// their own figure here (a capture: the median ACK delay), or 0.
    pub baseline_p50_ms: f64,
    /// Median total latency with the change made, for an experiment; other kinds of proof
    /// carry their own figure here (a capture: the median release after the ACK), or 0.
    pub experiment_p50_ms: f64,
    /// Whether the experiment removed the symptom.
    pub removed: bool,
    /// What happened, in one line.
    pub result: String,
}

/// How to fix the cause in one stack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fix {
    /// The stack: a server, proxy, language or library.
    pub stack: &'static str,
    /// What to change there.
    pub how: &'static str,
    /// This is the stack the server runs (from its `Server` header); listed first.
    pub detected: bool,
}

/// One diagnosis: a cause (or health), what shows it, what proved it, and how to fix it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The stable id of the cause.
    pub id: FindingId,
    /// One line saying what was found.
    pub title: String,
    /// True when an experiment confirmed the cause; otherwise the finding only says what
    /// was seen.
    pub proven: bool,
    /// How sure the finding is.
    pub confidence: Confidence,
    /// The measured facts that show it.
    pub evidence: Vec<Evidence>,
    /// The experiments, probes or packet patterns that tested it.
    pub proof: Vec<Proof>,
    /// What to change, in one sentence, then per stack.
    pub fix_summary: String,
    /// Per-stack fixes, the detected stack first.
    pub fix: Vec<Fix>,
}

/// A fact the run measured that costs the measured workload nothing, said under the verdict
/// rather than as a finding: what a fresh connection would cost a client that keeps its
/// connections alive, as this one does. Never changes the verdict or the exit status.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Note {
    /// The finding it would be if the workload paid it.
    pub id: FindingId,
    /// One line: what was measured, what it would cost, and why it costs nothing here.
    pub title: String,
    /// The measured facts that show it.
    pub evidence: Vec<Evidence>,
    /// The experiment that measured it.
    pub proof: Vec<Proof>,
}

#[cfg(test)]
mod tests {
    use super::FindingId::{self, *};

    #[test]
    fn json_names_are_the_documented_ids() {
        let all: [FindingId; 14] = [
            ServerNagleDelayedAck,
            ClientNagleDelayedAck,
            ConnectionPerRequest,
            SlowFirstByte,
            SlowResponseBody,
            ProxyHopStall,
            ServerCpuBound,
            UpstreamConnectionPerRequest,
            UnrequestedKeepAlive,
            ListenBacklogOverflow,
            ExpectContinueWait,
            KeepaliveIdleClose,
            Healthy,
            UnreliableMeasurement,
        ];
        for id in all {
            assert_eq!(serde_json::to_value(id).unwrap(), id.as_str(), "{id:?}");
        }
    }
}
