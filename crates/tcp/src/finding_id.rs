//! The stable finding ids: one vocabulary for the doctor, bench, pcap, proxy and watch.

use crate::end::{HoldKind, Role};
use serde::{Deserialize, Serialize};

/// Stable finding ids: a public contract (JSON, exit codes, docs). Extend, never rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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

    /// The Nagle hold by `held_by`, released by `released_by`.
    pub fn nagle_hold(held_by: Role, released_by: HoldKind) -> FindingId {
        match (held_by, released_by) {
            (Role::Server, HoldKind::DelayedAck) => FindingId::ServerNagleDelayedAck,
            (Role::Client, HoldKind::DelayedAck) => FindingId::ClientNagleDelayedAck,
            (Role::Server, HoldKind::RoundTrip) => FindingId::ServerNagleRoundTrip,
            (Role::Client, HoldKind::RoundTrip) => FindingId::ClientNagleRoundTrip,
        }
    }

    /// The end that held, for a Nagle hold; `None` for any other finding.
    pub fn held_by(self) -> Option<Role> {
        match self {
            FindingId::ServerNagleDelayedAck | FindingId::ServerNagleRoundTrip => Some(Role::Server),
            FindingId::ClientNagleDelayedAck | FindingId::ClientNagleRoundTrip => Some(Role::Client),
            _ => None,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_reads_back_and_a_hold_names_its_end() {
        for id in FindingId::ALL {
            assert_eq!(FindingId::parse(id.as_str()), Some(id));
            assert_eq!(id.held_by().is_some(), id.is_stall(), "{id:?}");
            if let Some(end) = id.held_by() {
                let kind = if id.as_str().ends_with("delayed-ack") {
                    HoldKind::DelayedAck
                } else {
                    HoldKind::RoundTrip
                };
                assert_eq!(FindingId::nagle_hold(end, kind), id);
            }
        }
        assert_eq!(FindingId::parse("nagle"), None);
    }

    #[test]
    fn json_names_are_the_documented_ids() {
        for id in FindingId::ALL {
            assert_eq!(serde_json::to_value(id).unwrap(), id.as_str(), "{id:?}");
        }
    }
}
