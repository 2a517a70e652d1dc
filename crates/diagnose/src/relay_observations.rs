//! What a relay's run says, in the rules' terms: each leg's pauses and round-trip holds, and
//! the upstream's first bytes. `proxy` hands its statistics here and renders what the rules
//! make of them (`relay_findings`).

use crate::relay::{LegPauses, RelayObservations};
use nodelay_proxy::{Leg, LegStats, ProxyStats, StallExample};
use nodelay_tcp::quantile::{quantile_ms, quantile_of};
use nodelay_tcp::thresholds::LATE_FIRST_BYTE;
use nodelay_tcp::time::{ms_from_ns, ns};

impl RelayObservations {
    /// The diagnosis of the relayed traffic: its findings, most important first; `healthy`
    /// when nothing is wrong; none when nothing was relayed.
    pub fn diagnose(&self) -> crate::Diagnosis {
        crate::Diagnosis::of(crate::relay::relay_findings(self))
    }

    /// A relay's statistics in the rules' terms.
    pub fn of(stats: &ProxyStats) -> Self {
        let busiest = stats.busiest.as_ref();
        let example = |leg: Leg| stats.examples.iter().find(|e| e.leg == leg);
        let first_byte = &stats.upstream_first_byte_ns;
        let upstream_time = &stats.upstream_time_ns;
        RelayObservations {
            exchanges: stats.exchanges,
            connections: stats.connections_closed,
            client: leg_pauses(&stats.client, busiest.and_then(|c| c.client_tcp_info), example(Leg::Client)),
            upstream: leg_pauses(
                &stats.upstream,
                busiest.and_then(|c| c.upstream_tcp_info),
                example(Leg::Upstream),
            ),
            upstream_first_byte_p10_ms: quantile_ms(first_byte, 0.1),
            upstream_first_byte_p50_ms: quantile_ms(first_byte, 0.5),
            upstream_first_byte_p90_ms: quantile_ms(first_byte, 0.9),
            late_first_bytes: if upstream_time.is_empty() {
                0
            } else {
                upstream_time.count_between(ns(LATE_FIRST_BYTE), u64::MAX)
            },
            upstream_connect_p50_ms: (!stats.upstream_connect_ns.is_empty())
                .then(|| quantile_ms(&stats.upstream_connect_ns, 0.5)),
            upstream_server_header: stats.upstream_server.clone(),
            total_p50_ms: quantile_ms(&stats.total_ns, 0.5),
        }
    }
}

/// One leg's pauses as the rules read them.
fn leg_pauses(
    leg: &LegStats,
    relay_socket: Option<nodelay_tcp::TcpInfo>,
    example: Option<&StallExample>,
) -> LegPauses {
    LegPauses {
        messages: leg.messages,
        stalled: leg.stalled,
        first_on_connection: leg.first_on_connection,
        stalled_first_on_connection: leg.stalled_first_on_connection,
        gap_p10_ms: quantile_ms(&leg.stall_gap_ns, 0.1),
        gap_p50_ms: quantile_ms(&leg.stall_gap_ns, 0.5),
        gap_p90_ms: quantile_ms(&leg.stall_gap_ns, 0.9),
        lost_ms: ms_from_ns(leg.lost_ns),
        bytes_before_p50: quantile_of(&leg.bytes_before_stall, 0.5),
        relay_socket,
        example: example.map(describe_example).unwrap_or_default(),
        path_rtt_ms: quantile_ms(&leg.rtt_ns, 0.5),
        round_trip_held: leg.round_trip_held,
        round_trip_held_first_on_connection: leg.round_trip_held_first_on_connection,
        round_trip_hold_p50_ms: quantile_ms(&leg.round_trip_hold_ns, 0.5),
        round_trip_lost_ms: ms_from_ns(leg.round_trip_lost_ns),
    }
}

/// One stalled message as the proof's example reads it.
fn describe_example(example: &StallExample) -> String {
    let message = if example.leg == Leg::Client { "request" } else { "response" };
    format!(
        "connection {}, exchange {}: the {message} ({} bytes in {} reads) paused {:.2} ms after {} bytes",
        example.connection,
        example.sequence + 1,
        example.bytes,
        example.reads,
        example.gap.as_secs_f64() * 1e3,
        example.bytes_before_gap
    )
}
