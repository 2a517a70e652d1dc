//! The phases a diagnosis runs and how each is sized: the baseline's and each experiment's
//! share of the budget and request counts, the baseline with exactly one thing changed for
//! an experiment, the probes' waits, and one phase run through the engine into records.

use anyhow::Result;
use nodelay_diagnose::{Experiment, Phase};
use nodelay_engine::{CollectingSink, EngineConfig};
use nodelay_load::{WorkloadRequest, run_engine};
use std::time::Duration;

/// Enough steady responses for stable medians on one connection.
pub(crate) const BASELINE_REQUESTS: u64 = 40;
pub(crate) const EXPERIMENT_REQUESTS: u64 = 30;
/// With several connections (`-c`), at most this many requests per connection in a phase.
pub(crate) const PER_CONNECTION_REQUESTS: u64 = 100;
/// Over HTTP/2 with several streams a connection, at least this many requests per stream in
/// the baseline: a loss holds the streams of one round together, and its holds show only
/// over several rounds.
pub(crate) const PER_STREAM_REQUESTS: u64 = 10;
/// Shares of the budget: the baseline may use this much, each experiment this much.
pub(crate) const BASELINE_SHARE: f64 = 0.4;
pub(crate) const EXPERIMENT_SHARE: f64 = 0.2;
/// An experiment is not started with less time than this left.
pub(crate) const MIN_PHASE: Duration = Duration::from_millis(300);

/// How long the Expect probe waits for an answer before it sends the body: past curl's 1 s,
/// so a server that stays silent this long makes every such client wait its whole timer.
pub(crate) const EXPECT_PROBE_WAIT: Duration = Duration::from_millis(1200);

/// The idle probe is not started with less of the budget left than this...
pub(crate) const MIN_IDLE_WAIT: Duration = Duration::from_millis(500);
/// ...and ends this long before the budget does, for the report.
pub(crate) const IDLE_PROBE_MARGIN: Duration = Duration::from_millis(50);

/// How long the HTTP/1.0 probe waits for the server to close after its response.
pub(crate) const HOLD_PROBE_WAIT: Duration = Duration::from_millis(500);

/// The request as an HTTP/1.0 client that does not ask for keep-alive sends it: the version
/// lowered and any Connection header dropped. `None` when the bytes are not an HTTP/1.1 head.
pub(crate) fn http10_without_keep_alive(request: &[u8]) -> Option<Vec<u8>> {
    let head_end = request.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&request[..head_end]).ok()?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next()?.strip_suffix(" HTTP/1.1")?;
    let mut out = format!("{request_line} HTTP/1.0\r\n");
    for line in lines.filter(|line| !line.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        if !name.eq_ignore_ascii_case("connection") && !name.eq_ignore_ascii_case("keep-alive") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("\r\n");
    Some([out.as_bytes(), &request[head_end..]].concat())
}

/// A phase's request cap: `one_connection` requests on one connection; with several, up to
/// `per_connection` each, so that none is starved while the share of the budget lasts.
pub(crate) fn phase_requests(one_connection: u64, connections: usize, per_connection: u64) -> u64 {
    if connections <= 1 { one_connection } else { one_connection.max(connections as u64 * per_connection) }
}

/// The baseline's request cap: `phase_requests`, and over HTTP/2 at least
/// `PER_STREAM_REQUESTS` for each stream in flight.
pub(crate) fn baseline_requests(connections: usize, streams_per_connection: Option<usize>) -> u64 {
    let per_connections = phase_requests(BASELINE_REQUESTS, connections, PER_CONNECTION_REQUESTS);
    let streams = streams_per_connection.unwrap_or(1).max(1);
    if streams > 1 {
        per_connections.max((connections.max(1) * streams) as u64 * PER_STREAM_REQUESTS)
    } else {
        per_connections
    }
}

/// The idle gap of the after-idle experiment: four of the connection's retransmission
/// timeouts (TCP_INFO `rto`). Linux restarts slow start after one RTO idle by halving the
/// window for each RTO that passed (`tcp_cwnd_restart`): after four, a warm window is an
/// eighth of itself, small enough for a large response to need more round trips.
pub(crate) fn idle_gap(baseline_info: Option<&nodelay_tcp::TcpInfo>) -> Duration {
    let rto = baseline_info.map_or(Duration::ZERO, |info| info.rto());
    (rto * 4).max(MIN_IDLE_GAP)
}

/// The window of the larger-window experiment: 16 MiB, as curl and Go's transports use several
/// MiB, far above any response a doctor run reads.
const LARGER_WINDOW_BYTES: u32 = 16 << 20;

/// The shortest idle gap: Linux's least RTO (200 ms) four times.
const MIN_IDLE_GAP: Duration = Duration::from_millis(800);
/// Requests after an idle gap: enough for a median, each costs a gap.
pub(crate) const AFTER_IDLE_REQUESTS: u64 = 3;

/// The baseline with exactly one thing changed; `idle_gap` paces the after-idle experiment.
pub(crate) fn experiment_config(
    baseline: &EngineConfig,
    request: &WorkloadRequest,
    experiment: Experiment,
    duration: Duration,
    idle_gap: Duration,
) -> EngineConfig {
    // Over HTTP/2, a few rounds of every stream in flight: the first is the opening's.
    let in_flight = baseline.connections * baseline.http2.map_or(1, |h2| h2.streams_per_connection.max(1));
    let mut config = EngineConfig {
        max_requests: Some(
            phase_requests(EXPERIMENT_REQUESTS, baseline.connections, PER_CONNECTION_REQUESTS / 2)
                .max(3 * in_flight as u64),
        ),
        duration: Some(duration),
        ..baseline.clone()
    };
    let spec = &mut config.requests[0];
    let baseline_split = spec.write_split.clone();
    let head_split = request.head_bytes.map(|head| vec![head]).unwrap_or_default();
    match experiment {
        Experiment::QuickAck => config.socket.quickack_after_read = true,
        Experiment::NewConnectionPerRequest => {
            config.keep_alive = false;
            spec.bytes = request.closing_bytes();
        }
        Experiment::SplitRequestNagle => {
            spec.write_split = head_split;
            config.socket.nodelay = false;
        }
        Experiment::SplitRequestNoDelay => {
            spec.write_split = if baseline_split.is_empty() { head_split } else { baseline_split };
            config.socket.nodelay = true;
        }
        // Same client socket options, only the split removed.
        Experiment::SingleWrite => spec.write_split.clear(),
        Experiment::OneConnectionAtATime => {
            config.connections = 1;
            config.max_requests = Some(EXPERIMENT_REQUESTS);
            config.keep_alive = false;
            spec.bytes = request.closing_bytes();
        }
        // One keep-alive connection, a request each gap (open loop): the first opens it, the
        // others each find it idle longer than its RTO.
        Experiment::LargerWindow => {
            if let Some(h2) = &mut config.http2 {
                (h2.stream_window_bytes, h2.connection_window_bytes) =
                    (LARGER_WINDOW_BYTES, LARGER_WINDOW_BYTES);
            }
        }
        // The same requests in flight, each on a connection of its own, and as many of them as
        // the baseline's: the tails compare.
        Experiment::OneStreamPerConnection => {
            config.max_requests = baseline.max_requests;
            if let Some(h2) = &mut config.http2 {
                config.connections *= h2.streams_per_connection.max(1);
                config.threads = config.threads.min(config.connections);
                h2.streams_per_connection = 1;
            }
        }
        Experiment::AfterIdle => {
            config.connections = 1;
            config.max_requests = Some(1 + AFTER_IDLE_REQUESTS);
            config.rate_per_second = Some(1.0 / idle_gap.as_secs_f64());
        }
    }
    config
}

/// Whether a phase reached the server at all.
pub(crate) struct Reach {
    pub(crate) unreachable: Option<String>,
    pub(crate) connected: bool,
}

pub(crate) fn run_phase(config: &EngineConfig, experiment: Option<Experiment>) -> Result<Phase> {
    run_phase_reaching(config, experiment).map(|(phase, _)| phase)
}

pub(crate) fn run_phase_reaching(
    config: &EngineConfig,
    experiment: Option<Experiment>,
) -> Result<(Phase, Reach)> {
    let finished = run_engine(config, |_| CollectingSink::default(), &mut ())?;
    let reach = Reach { unreachable: finished.unreachable.clone(), connected: finished.connected };
    let mut phase = Phase {
        experiment,
        connections: u32::try_from(config.connections).unwrap_or(u32::MAX),
        http2_streams: config.http2.map(|h2| u32::try_from(h2.streams_per_connection).unwrap_or(u32::MAX)),
        ..Phase::default()
    };
    let mut busiest = 0;
    for sink in finished.output.sinks {
        phase.responses.extend(sink.responses);
        phase.errors.extend(sink.errors);
        phase.connections_opened += sink.connections.len() as u64;
        for connection in sink.connections {
            if phase.server_header.is_none() {
                phase.server_header.clone_from(&connection.server_header);
            }
            phase.tls = phase.tls.or(connection.tls);
            if phase.http2_peer.is_none() && connection.http2.is_some_and(|h2| h2.peer != Default::default())
            {
                phase.http2_peer = connection.http2.map(|h2| h2.peer);
            }
            phase
                .connects_unanswered_ms
                .extend(connection.connect_unanswered_for.map(|wait| wait.as_secs_f64() * 1e3));
            if let Some(h2) = connection.http2 {
                phase.http2_loss_holes += h2.loss_holes;
                phase.http2_streams_held_by_loss += h2.streams_held_by_loss;
            }
            if connection.requests >= busiest && connection.tcp_info.is_some() {
                busiest = connection.requests;
                phase.tcp_info = connection.tcp_info;
            }
        }
    }
    Ok((phase, reach))
}

#[cfg(test)]
mod tests {
    use super::{baseline_requests, http10_without_keep_alive, phase_requests};

    #[test]
    fn one_connection_keeps_its_request_count_and_several_get_a_share_each() {
        assert_eq!(phase_requests(40, 1, 100), 40);
        assert_eq!(phase_requests(40, 20, 100), 2000);
        assert_eq!(phase_requests(30, 0, 50), 30);
    }

    #[test]
    fn a_multiplexed_baseline_asks_ten_requests_of_each_stream() {
        assert_eq!(baseline_requests(1, None), 40);
        assert_eq!(baseline_requests(1, Some(1)), 40);
        assert_eq!(baseline_requests(1, Some(30)), 300);
        assert_eq!(baseline_requests(2, Some(30)), 600);
        assert_eq!(baseline_requests(20, Some(2)), 2000);
    }

    #[test]
    fn the_http10_probe_lowers_the_version_and_drops_connection_headers_only() {
        let request =
            b"POST /a?b HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi";
        let probe = http10_without_keep_alive(request).unwrap();
        assert_eq!(probe, b"POST /a?b HTTP/1.0\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
        assert_eq!(http10_without_keep_alive(b"\x00\x00\x00\x05hello"), None);
    }
}
