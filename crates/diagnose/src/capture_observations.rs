//! What a capture says, in the rules' terms: the stalls and the round-trip holds each side's
//! sender caused, what the path and the exchanges showed besides, and the findings of it all.
//! `pcap` hands its summary here and renders what comes back.

use crate::capture::{
    CapturePath, CaptureRoundTrips, CaptureStalls, CaptureTime, ClientWait, LateFirstByte, SlowPath,
    Timeouts, ZeroWindowFacts, capture_diagnosis,
};
use nodelay_capture::analysis::{Budget, Legs};
use nodelay_capture::{CaptureSummary, SenderStalls, StallExample};
use nodelay_tcp::quantile::{distribution_ns, percentile_ms as percentile, quantile_ms};
use nodelay_tcp::time::ms_from_ns as ms;

/// A capture's summary read for the rules.
#[derive(Debug, Clone)]
pub struct CaptureObservations {
    /// Nagle holds released by a delayed ACK: the server's senders, then the clients'.
    pub stalls: [CaptureStalls; 2],
    /// Holds released by an ACK sent at once (a round trip): the server's, then the clients'.
    pub round_trips: [CaptureRoundTrips; 2],
    /// The path and the exchanges' time besides the holds.
    pub path: CapturePath,
    /// The round trips the handshakes showed, in milliseconds, sorted.
    pub rtts_ms: Vec<f64>,
    /// TCP connections seen.
    pub tcp_flows: u64,
}

impl CaptureObservations {
    /// The capture's summary in the rules' terms.
    pub fn of(summary: &CaptureSummary) -> Self {
        let flows = |held: fn(&nodelay_capture::FlowSummary) -> bool| {
            summary.flows.iter().filter(|f| held(f)).count() as u64
        };
        let stalls = [
            group(&summary.server_stalls, true, flows(|f| f.server_stalls.count > 0)),
            group(&summary.client_stalls, false, flows(|f| f.client_stalls.count > 0)),
        ];
        let round_trips = [
            round_trips(&summary.server_round_trips, true, flows(|f| f.server_round_trips.count > 0)),
            round_trips(&summary.client_round_trips, false, flows(|f| f.client_round_trips.count > 0)),
        ];
        let mut rtts_ms: Vec<f64> = summary.rtts_ns.iter().copied().map(ms).collect();
        rtts_ms.sort_by(f64::total_cmp);
        let path = capture_path(summary, &rtts_ms);
        CaptureObservations { stalls, round_trips, path, rtts_ms, tcp_flows: summary.flows_seen }
    }

    /// The diagnosis: the findings, most costly first; `healthy` when there are none.
    pub fn diagnose(&self) -> crate::Diagnosis {
        crate::Diagnosis::of(capture_diagnosis(&self.stalls, &self.round_trips, &self.path, self.tcp_flows))
    }
}

fn side(by_server: bool) -> &'static str {
    if by_server { "server" } else { "client" }
}

fn legs_ms(legs: &Legs) -> (f64, f64, f64) {
    (legs.rtt_ns().map_or(0.0, ms), legs.client_ns.map_or(0.0, ms), legs.server_ns.map_or(0.0, ms))
}

/// What the capture shows besides Nagle holds, for the rules.
fn capture_path(summary: &CaptureSummary, rtts_ms: &[f64]) -> CapturePath {
    let slow_path = summary.slowest_path.map(|(stream, legs)| {
        let (rtt_ms, client_side_ms, server_side_ms) = legs_ms(&legs);
        SlowPath { flows: summary.slow_path_flows, stream, rtt_ms, client_side_ms, server_side_ms }
    });
    let late_first_byte =
        summary.slowest_first_byte.filter(|_| summary.late_first_bytes > 0).map(|(stream, t)| {
            LateFirstByte {
                exchanges: summary.late_first_bytes,
                stream,
                exchange: t.exchange,
                server_ms: ms(t.server_ns),
                server_ack_ms: t.server_ack_ns.map(ms),
                rtt_ms: ms(t.rtt_ns),
                packets: (t.request_packet, t.server_ack_packet, t.response_packet),
            }
        });
    let client_wait =
        summary.longest_client_wait.filter(|_| summary.client_waits > 0).map(|(stream, t)| ClientWait {
            waits: summary.client_waits,
            stream,
            wait_ms: ms(t.client_wait_ns),
            packets: (t.wait_from_packet, t.request_packet),
        });
    let losses = &summary.losses;
    let timeouts = losses.worst.filter(|_| losses.timeouts > 0).map(|series| Timeouts {
        timeouts: losses.timeouts,
        series: losses.series,
        unanswered: losses.unanswered,
        lost_ms: ms(losses.lost_ns),
        stream: summary.worst_series_stream.unwrap_or(0),
        by_server: series.by_server,
        syn: series.syn,
        answered: series.answered,
        first_packet: series.first_packet,
        resent_after_ms: series.resent_after().iter().map(|ns| ms(*ns)).collect(),
    });
    let windows = &summary.zero_windows;
    let zero_window = windows.longest.map(|window| ZeroWindowFacts {
        count: windows.count,
        total_ms: ms(windows.total_ns),
        stream: summary.longest_zero_window_stream.unwrap_or(0),
        longest_ms: ms(window.duration_ns),
        by_server: window.by_server,
        probes: windows.probes,
        packets: (window.first_packet, window.reopened_packet),
    });
    CapturePath {
        time: capture_time(&summary.budget),
        rtt_p50_ms: (!rtts_ms.is_empty()).then(|| percentile(rtts_ms, 0.5)),
        slow_path,
        late_first_byte,
        client_wait,
        timeouts,
        zero_window,
    }
}

fn round_trips(stalls: &SenderStalls, held_by_server: bool, flows: u64) -> CaptureRoundTrips {
    let holds = distribution_ns(stalls.holds_ns.iter().copied());
    let delays = distribution_ns(stalls.ack_delays_ns.iter().copied());
    let rtts = distribution_ns(stalls.examples.iter().map(|e| e.rtt_ns));
    CaptureRoundTrips {
        held_by_server,
        holds: stalls.count,
        flows,
        time_lost_ms: ms(stalls.lost_ns),
        hold_p50_ms: quantile_ms(&holds, 0.5),
        rtt_p50_ms: quantile_ms(&rtts, 0.5),
        peer_ack_delay_p50_ms: quantile_ms(&delays, 0.5),
        example: first_example(stalls, held_by_server),
    }
}

/// The first of a sender's holds spelled out with its packet numbers; empty without one.
fn first_example(stalls: &SenderStalls, held_by_server: bool) -> String {
    stalls.examples.first().map(|e| describe_example(side(held_by_server), e)).unwrap_or_default()
}

fn describe_example(held_by: &str, example: &StallExample) -> String {
    let acker = if held_by == "server" { "client" } else { "server" };
    format!(
        "exchange {}: {held_by} segment #{} ({} bytes), {acker}'s pure ACK #{} after {:.1} ms, {held_by}'s next segment #{} \
         {:.0} µs after that ACK",
        example.exchange,
        example.held_after_packet,
        example.segment_bytes,
        example.ack_packet,
        ms(example.ack_delay_ns),
        example.release_packet,
        example.release_after_ack_ns as f64 / 1e3
    )
}

fn group(stalls: &SenderStalls, held_by_server: bool, flows: u64) -> CaptureStalls {
    // One histogram per sample set, asked for every quantile it gives.
    let delays = distribution_ns(stalls.ack_delays_ns.iter().copied());
    let releases = distribution_ns(stalls.releases_ns.iter().copied());
    CaptureStalls {
        held_by_server,
        stalls: stalls.count,
        flows,
        time_lost_ms: ms(stalls.lost_ns),
        ack_delay_p10_ms: quantile_ms(&delays, 0.1),
        ack_delay_p50_ms: quantile_ms(&delays, 0.5),
        ack_delay_p90_ms: quantile_ms(&delays, 0.9),
        release_after_ack_p50_us: quantile_ms(&releases, 0.5) * 1e3,
        example: first_example(stalls, held_by_server),
    }
}

/// Where a capture's exchanges spent their time, in milliseconds.
pub fn capture_time(budget: &Budget) -> CaptureTime {
    CaptureTime {
        exchanges: budget.exchanges,
        network_ms: ms(budget.network_ns.saturating_add(budget.handshake_ns)),
        client_wait_ms: ms(budget.client_wait_ns),
        server_ms: ms(budget.server_ns),
        transfer_ms: ms(budget.transfer_ns),
    }
}
