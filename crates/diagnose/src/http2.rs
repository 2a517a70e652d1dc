//! HTTP/2's own ways to be slow with an idle CPU, each named only when its experiment removes
//! it: a response larger than the client's flow-control window waits a round trip for each
//! WINDOW_UPDATE (`h2-flow-control-window`, proven by a larger window), and streams queue
//! behind the server's SETTINGS_MAX_CONCURRENT_STREAMS (`h2-stream-limit-queueing`, proven by
//! one stream per connection), and a lost segment holds every stream of its TCP connection
//! until its retransmission (`h2-head-of-line-loss`, proven by one stream per connection
//! making responses faster). A server's Nagle between HEADERS and DATA is the existing
//! `server-nagle-delayed-ack`, proven by TCP_QUICKACK as over HTTP/1.1.

use crate::finding::{Confidence, Evidence, Finding, FindingId, Fix, Proof, ProofKind};
use crate::phase::{Experiment, Observations, PhaseSummary};
use crate::symptom::{Symptom, proof, removed};

/// A wait worth an experiment costs at least this share of the median response time...
const COST_SHARE: f64 = 0.2;
/// ...and is seen in at least this share of the steady responses.
const SYMPTOM_SHARE: f64 = 0.25;

const WINDOW_WAIT: Symptom = Symptom {
    share: PhaseSummary::window_blocked_fraction,
    median_ms: window_blocked_p50_ms,
    label: "a wait on the flow-control window",
};

const STREAM_QUEUE: Symptom = Symptom {
    share: PhaseSummary::queued_fraction,
    median_ms: queued_p50_ms,
    label: "a wait behind the stream limit",
};

fn window_blocked_p50_ms(summary: &PhaseSummary) -> f64 {
    summary.window_blocked_p50_ms
}

fn queued_p50_ms(summary: &PhaseSummary) -> f64 {
    summary.queued_p50_ms
}

/// The symptom shows in enough responses and costs enough of their time to test.
fn worth_testing(baseline: &PhaseSummary, symptom: Symptom) -> bool {
    (symptom.share)(baseline) >= SYMPTOM_SHARE
        && (symptom.median_ms)(baseline) >= baseline.total_p50_ms * COST_SHARE
}

/// Holds behind a lost segment are worth an experiment when this share of the steady
/// responses was held with other streams...
const LOSS_HELD_SHARE: f64 = 0.1;
/// ...and one stream per connection proves they cost the responses their time when what the
/// held responses' quantile (`held_quantile`) adds to the baseline's median falls to this
/// share of what it added in the baseline, or less. The excess, not the total: the path's
/// round trip is in both totals and no experiment removes it (on a 20 ms path, 30.1 ms ->
/// 26.5 ms at p89 cut the wait above the median by 40 % yet missed a 0.8 ratio of the totals).
const LOSS_PROOF_RATIO: f64 = 0.8;
/// ...and the held responses' quantile stood this far above the median at least: below it, a
/// fifth of the wait is within the percentiles' own noise.
const MIN_HELD_ABOVE_MEDIAN_MS: f64 = 1.0;

/// The streams each connection of the baseline carried.
fn streams_asked(observations: &Observations) -> u32 {
    observations.request.and_then(|shape| shape.http2_streams).unwrap_or(1)
}

/// Streams were held together behind lost segments often enough, and long enough beside the
/// median response, to test.
fn loss_holds_worth_testing(observations: &Observations, baseline: &PhaseSummary) -> bool {
    streams_asked(observations) >= 2
        && baseline.loss_held_fraction() >= LOSS_HELD_SHARE
        && baseline.loss_held_p50_ms >= baseline.total_p50_ms * COST_SHARE
}

/// The next HTTP/2 experiment the baseline calls for, if any.
pub(crate) fn next_experiment(observations: &Observations, baseline: &PhaseSummary) -> Option<Experiment> {
    let done = |experiment| observations.has_run(experiment);
    if worth_testing(baseline, WINDOW_WAIT) && !done(Experiment::LargerWindow) {
        return Some(Experiment::LargerWindow);
    }
    let streams = streams_asked(observations);
    let limited = baseline.peer_max_concurrent_streams.is_some_and(|limit| limit < streams);
    let queue_or_loss = (limited && worth_testing(baseline, STREAM_QUEUE))
        || loss_holds_worth_testing(observations, baseline);
    if queue_or_loss && !done(Experiment::OneStreamPerConnection) {
        return Some(Experiment::OneStreamPerConnection);
    }
    None
}

/// The HTTP/2 findings the experiments proved (or, unproven, what the baseline showed).
pub(crate) fn findings(observations: &Observations, baseline: &PhaseSummary) -> Vec<Finding> {
    let mut findings = Vec::new();
    if worth_testing(baseline, WINDOW_WAIT) {
        findings.push(window_finding(observations, baseline));
    }
    let streams = streams_asked(observations);
    if let Some(limit) = baseline.peer_max_concurrent_streams.filter(|&limit| limit < streams)
        && worth_testing(baseline, STREAM_QUEUE)
    {
        findings.push(stream_limit_finding(observations, baseline, limit, streams));
    }
    if loss_holds_worth_testing(observations, baseline) {
        findings.push(head_of_line_finding(observations, baseline, streams));
    }
    findings
}

/// The quantile of the total time where the held responses sit: halfway into the share of
/// them (a third held: p83), from p50 to p95. One stream per connection moves the holds into
/// a thinner tail of its own (a connection that lost its last segment waits a retransmission
/// timeout alone), so the proof reads the responses the holds slowed, not that tail.
fn held_quantile(baseline: &PhaseSummary) -> f64 {
    (1.0 - baseline.loss_held_fraction() / 2.0).clamp(0.5, 0.95)
}

fn head_of_line_finding(observations: &Observations, baseline: &PhaseSummary, streams: u32) -> Finding {
    let phase = observations.experiment(Experiment::OneStreamPerConnection);
    let experiment = phase.map(|phase| phase.summary());
    let quantile = held_quantile(baseline);
    let label = format!("p{:.0}", quantile * 100.0);
    let before_ms = observations.baseline.total_quantile_ms(quantile);
    let after_ms = phase.map_or(0.0, |phase| phase.total_quantile_ms(quantile));
    // Both above the baseline's median: an experiment that slowed every response cannot
    // pass for one that shortened the held ones' wait.
    let held_before_ms = before_ms - baseline.total_p50_ms;
    let held_after_ms = (after_ms - baseline.total_p50_ms).max(0.0);
    let proven = experiment.as_ref().is_some_and(|spread| {
        spread.responses > 0
            && spread.loss_held_fraction() <= crate::symptom::REMOVED_FRACTION
            && held_before_ms >= MIN_HELD_ABOVE_MEDIAN_MS
            && held_after_ms <= held_before_ms * LOSS_PROOF_RATIO
    });
    let share = baseline.loss_held_fraction() * 100.0;
    let held = baseline.loss_held_p50_ms;
    let title = match &experiment {
        Some(spread) if proven => {
            let tail = if spread.total_p99_ms > baseline.total_p99_ms {
                format!(
                    " (its p99 rose {:.2} ms -> {:.2} ms: each connection then recovers from its own losses alone)",
                    baseline.total_p99_ms, spread.total_p99_ms
                )
            } else {
                String::new()
            };
            format!(
                "A lost segment holds every stream of the connection: {share:.0} % of responses waited {held:.2} ms \
                 (median) for a retransmission with {streams} streams sharing one TCP connection; one stream per \
                 connection cut the {label} {before_ms:.2} ms -> {after_ms:.2} ms{tail}"
            )
        }
        Some(_) => format!(
            "{share:.0} % of responses waited {held:.2} ms (median) behind lost segments with other streams, but one \
             stream per connection did not make them faster ({label} {before_ms:.2} ms -> {after_ms:.2} ms, \
             {held_before_ms:.2} ms -> {held_after_ms:.2} ms above the baseline's median): the loss itself costs \
             them, not the sharing of one connection"
        ),
        None => format!(
            "{share:.0} % of responses waited {held:.2} ms (median) behind lost segments with other streams of their \
             connection; one stream per connection was not tried"
        ),
    };
    let holes = baseline.loss_holes.max(1) as f64;
    let mut evidence = vec![
        Evidence::new("streams asked of each connection", f64::from(streams), "count"),
        Evidence::new("pauses ended by a lost segment's retransmission", baseline.loss_holes as f64, "count"),
        Evidence::new(
            "streams each such pause held (mean)",
            baseline.streams_held_by_loss as f64 / holes,
            "count",
        ),
        Evidence::new("steady responses held with other streams", baseline.loss_held as f64, "count"),
        Evidence::new("of the steady responses", baseline.steady_responses as f64, "count"),
        Evidence::new("median time held, per held response", held, "ms"),
        Evidence::new("p50 total", baseline.total_p50_ms, "ms"),
        Evidence::new("p90 total", baseline.total_p90_ms, "ms"),
        Evidence::new("p99 total", baseline.total_p99_ms, "ms"),
    ];
    if let Some(rtt) = baseline.path_rtt_ms {
        evidence.push(Evidence::new("path round trip (client TCP_INFO min_rtt)", rtt, "ms"));
    }
    let proof = experiment.as_ref().map(|spread| Proof {
        kind: ProofKind::Experiment,
        experiment: Experiment::OneStreamPerConnection.describe().into(),
        baseline_p50_ms: baseline.total_p50_ms,
        experiment_p50_ms: spread.total_p50_ms,
        removed: proven,
        result: format!(
            "{label} {before_ms:.2} ms -> {after_ms:.2} ms (p50 {:.2} ms -> {:.2} ms, p90 {:.2} ms -> {:.2} ms, p99 \
             {:.2} ms -> {:.2} ms); held with other streams in {} of {} responses",
            baseline.total_p50_ms,
            spread.total_p50_ms,
            baseline.total_p90_ms,
            spread.total_p90_ms,
            baseline.total_p99_ms,
            spread.total_p99_ms,
            spread.loss_held,
            spread.steady_responses
        ),
    });
    Finding {
        id: FindingId::H2HeadOfLineLoss,
        title,
        proven,
        confidence: if proven { Confidence::High } else { Confidence::Low },
        evidence,
        proof: proof.into_iter().collect(),
        fix_summary: HEAD_OF_LINE_SUMMARY.to_string(),
        fix: head_of_line_fixes(),
    }
}

fn window_finding(observations: &Observations, baseline: &PhaseSummary) -> Finding {
    let experiment = observations.experiment(Experiment::LargerWindow);
    let proven = experiment.is_some_and(|phase| removed(baseline, &phase.summary(), WINDOW_WAIT));
    let waited = baseline.window_blocked_p50_ms;
    let title = if proven {
        format!(
            "The client's own HTTP/2 window holds the responses: {waited:.2} ms of a {:.2} ms median waits for \
             its WINDOW_UPDATEs, and 16 MiB windows remove it. Clients that keep the protocol's 64 KiB default \
             (Node.js http2, gRPC before its BDP estimator grows it) pay this; h2load, Go net/http and browsers \
             advertise more and do not",
            baseline.total_p50_ms
        )
    } else {
        format!(
            "Responses stop on the client's used-up HTTP/2 flow-control window ({waited:.2} ms of a {:.2} ms \
             median), but 16 MiB windows did not remove the wait",
            baseline.total_p50_ms
        )
    };
    Finding {
        id: FindingId::H2FlowControlWindow,
        title,
        proven,
        confidence: if proven { Confidence::High } else { Confidence::Low },
        evidence: vec![
            Evidence::new("median response size", baseline.response_bytes_p50 as f64, "bytes"),
            Evidence::new(
                "steady responses that waited on a window",
                baseline.window_blocked as f64,
                "count",
            ),
            Evidence::new("of the steady responses", baseline.steady_responses as f64, "count"),
            Evidence::new("median time waiting on the window, per response", waited, "ms"),
            Evidence::new("median total", baseline.total_p50_ms, "ms"),
        ],
        proof: experiment
            .map(|phase| proof(Experiment::LargerWindow, baseline, phase, WINDOW_WAIT))
            .into_iter()
            .collect(),
        fix_summary: WINDOW_SUMMARY.to_string(),
        fix: window_fixes(),
    }
}

fn stream_limit_finding(
    observations: &Observations,
    baseline: &PhaseSummary,
    limit: u32,
    streams: u32,
) -> Finding {
    let experiment = observations.experiment(Experiment::OneStreamPerConnection);
    let proven = experiment.is_some_and(|phase| removed(baseline, &phase.summary(), STREAM_QUEUE));
    let queued = baseline.queued_p50_ms;
    let title = if proven {
        format!(
            "Requests queue behind the server's stream limit: {streams} streams asked of a connection that allows \
             {limit} at once wait {queued:.2} ms (median) before they are sent; one stream per connection removes it"
        )
    } else {
        format!(
            "Requests wait {queued:.2} ms (median) before they are sent: the server allows {limit} {} at once \
             and {streams} were asked, but one stream per connection did not remove the wait",
            if limit == 1 { "stream" } else { "streams" }
        )
    };
    Finding {
        id: FindingId::H2StreamLimitQueueing,
        title,
        proven,
        confidence: if proven { Confidence::High } else { Confidence::Low },
        evidence: vec![
            Evidence::new("the server's SETTINGS_MAX_CONCURRENT_STREAMS", f64::from(limit), "count"),
            Evidence::new("streams asked of each connection", f64::from(streams), "count"),
            Evidence::new("steady responses that queued", baseline.queued as f64, "count"),
            Evidence::new("median time queued before the HEADERS left", queued, "ms"),
            Evidence::new("median total", baseline.total_p50_ms, "ms"),
        ],
        proof: experiment
            .map(|phase| proof(Experiment::OneStreamPerConnection, baseline, phase, STREAM_QUEUE))
            .into_iter()
            .collect(),
        fix_summary: STREAM_LIMIT_SUMMARY.to_string(),
        fix: stream_limit_fixes(),
    }
}

/// The one-sentence fix of `h2-flow-control-window`.
pub const WINDOW_SUMMARY: &str = "The window is the receiver's, here the client's: give it a window at least as \
    large as a response (and its connection a window for all its streams); servers do the same for request \
    bodies; gRPC's BDP estimator grows it by itself only after several round trips";

fn window_fixes() -> Vec<Fix> {
    vec![
        Fix::of(
            "Go grpc",
            "client: grpc.WithInitialWindowSize(n) and grpc.WithInitialConnWindowSize(n); server (request bodies): \
             grpc.InitialWindowSize(n), grpc.InitialConnWindowSize(n) (setting them turns the BDP estimator off)",
        ),
        Fix::of(
            "grpc-java / Netty",
            "NettyChannelBuilder.flowControlWindow(n) on the client, NettyServerBuilder.flowControlWindow(n) on the \
             server (initialFlowControlWindow for a fixed window without BDP)",
        ),
        Fix::of(
            "Node.js http2",
            "http2.connect(url, { settings: { initialWindowSize: n } }) and session.setLocalWindowSize(n) for the \
             connection; servers take the same settings in createServer",
        ),
        Fix::of(
            "Go net/http",
            "clients advertise large windows already; servers (request bodies): http.Server{HTTP2: \
             &http.HTTP2Config{MaxReceiveBufferPerStream: n, MaxReceiveBufferPerConnection: n}} (Go 1.24+)",
        ),
        Fix::of(
            "nginx",
            "request bodies: http2_body_preread_size (server window before the body is read); as a gRPC or h2 \
             client of an upstream: grpc_buffer_size / proxy_buffer_size",
        ),
        Fix::of(
            "Envoy",
            "http2_protocol_options: initial_stream_window_size and initial_connection_window_size (both sides)",
        ),
    ]
}

/// The one-sentence fix of `h2-stream-limit-queueing`.
pub const STREAM_LIMIT_SUMMARY: &str = "Raise the server's SETTINGS_MAX_CONCURRENT_STREAMS to the concurrency its \
    clients use, or have the clients open more connections (a channel pool) instead of queueing on one";

fn stream_limit_fixes() -> Vec<Fix> {
    vec![
        Fix::of("Go grpc", "server: grpc.MaxConcurrentStreams(n); client: a pool of grpc.ClientConn"),
        Fix::of("Go net/http", "http.Server{HTTP2: &http.HTTP2Config{MaxConcurrentStreams: n}} (Go 1.24+)"),
        Fix::of("grpc-java / Netty", "NettyServerBuilder.maxConcurrentCallsPerConnection(n)"),
        Fix::of(
            "Python grpcio",
            "grpc.server(executor, maximum_concurrent_rpcs=None, options=[(\"grpc.max_concurrent_streams\", n)])",
        ),
        Fix::of("Node.js http2", "http2.createServer({ settings: { maxConcurrentStreams: n } })"),
        Fix::of("nginx", "http2_max_concurrent_streams n; (default 128)"),
        Fix::of("Envoy", "http2_protocol_options: max_concurrent_streams (default 2147483647)"),
        Fix::of("hypercorn", "--h2-max-concurrent-streams n (h2_max_concurrent_streams in its config)"),
    ]
}

/// The one-sentence fix of `h2-head-of-line-loss`.
pub const HEAD_OF_LINE_SUMMARY: &str = "Take the loss off the path where you can; otherwise spread latency-sensitive \
    calls over several connections (a channel pool), or serve HTTP/3, whose streams do not share one byte stream. \
    Several connections trade it for a tail of their own: each recovers from its losses alone, a lost last segment \
    by a retransmission timeout";

fn head_of_line_fixes() -> Vec<Fix> {
    vec![
        Fix::of(
            "any path",
            "find the loss: `nstat -az TcpRetransSegs TcpExtTCPLostRetransmit` on the sender, interface drops \
             (`ip -s link`), a policer or a full queue on the path",
        ),
        Fix::of("Go grpc", "a pool of grpc.ClientConn, calls spread round-robin over them"),
        Fix::of("grpc-java / Netty", "several ManagedChannels, calls spread round-robin over them"),
        Fix::of("Node.js http2", "several http2.connect() sessions, requests spread over them"),
        Fix::of("nginx", "HTTP/3 to clients: listen 443 quic; http3 on; (nginx 1.25+)"),
        Fix::of(
            "Envoy",
            "upstream: a lower http2_protocol_options.max_concurrent_streams makes the pool open more connections; \
             downstream: http3_protocol_options on a QUIC listener",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::RequestShape;
    use crate::phase::tests::{phase, response};
    use nodelay_engine::{PeerSettings, StreamRecord};
    use std::time::Duration;

    /// A response of `total_ms` over HTTP/2 that waited `window_ms` on a window and queued
    /// `queued_ms` before its HEADERS left.
    fn stream(
        sequence: u32,
        total_ms: f64,
        window_ms: f64,
        queued_ms: f64,
    ) -> nodelay_engine::ResponseRecord {
        let d = |ms: f64| Duration::from_secs_f64(ms / 1e3);
        let mut record = response(sequence, 0.2, Some(total_ms - 0.2));
        record.http2 = Some(StreamRecord {
            stream_id: 2 * sequence + 1,
            queued: d(queued_ms),
            first_data: Some(d(0.2)),
            window_blocked: d(window_ms),
            grpc_status: Some(0),
            ..StreamRecord::default()
        });
        record
    }

    fn observations(streams: u32, baseline: Vec<nodelay_engine::ResponseRecord>) -> Observations {
        Observations {
            request: Some(RequestShape {
                has_body: true,
                baseline_split: false,
                baseline_nodelay: true,
                http2_streams: Some(streams),
            }),
            baseline: phase(None, baseline),
            ..Observations::default()
        }
    }

    #[test]
    fn a_window_wait_is_tested_with_a_larger_window_and_named_only_when_that_removes_it() {
        let mut seen = observations(1, (0..20).map(|i| stream(i, 2.0, 0.8, 0.0)).collect());
        let baseline = seen.baseline.summary();
        assert_eq!(next_experiment(&seen, &baseline), Some(Experiment::LargerWindow));
        let unproven = findings(&seen, &baseline);
        assert_eq!(unproven[0].id, FindingId::H2FlowControlWindow);
        assert!(!unproven[0].proven);
        seen.experiments
            .push(phase(Some(Experiment::LargerWindow), (0..20).map(|i| stream(i, 1.2, 0.0, 0.0)).collect()));
        assert_eq!(next_experiment(&seen, &baseline), None);
        let proven = findings(&seen, &baseline);
        assert!(proven[0].proven, "{:?}", proven[0]);
        // A wait too small beside the response is not worth an experiment.
        let small = observations(1, (0..20).map(|i| stream(i, 20.0, 0.8, 0.0)).collect());
        assert_eq!(next_experiment(&small, &small.baseline.summary()), None);
    }

    #[test]
    fn queueing_is_blamed_on_the_stream_limit_only_when_more_streams_were_asked_than_allowed() {
        let queued: Vec<_> = (0..20).map(|i| stream(i, 40.0, 0.0, 20.0)).collect();
        let mut limited = observations(6, queued.clone());
        limited.baseline.http2_peer =
            Some(PeerSettings { max_concurrent_streams: Some(2), ..PeerSettings::default() });
        let baseline = limited.baseline.summary();
        assert_eq!(next_experiment(&limited, &baseline), Some(Experiment::OneStreamPerConnection));
        // The same queueing under a limit above the streams asked: not the limit's.
        let mut roomy = observations(6, queued);
        roomy.baseline.http2_peer =
            Some(PeerSettings { max_concurrent_streams: Some(100), ..PeerSettings::default() });
        let summary = roomy.baseline.summary();
        assert_eq!(next_experiment(&roomy, &summary), None);
        assert!(findings(&roomy, &summary).is_empty());
    }

    /// Rounds of 10 streams on one connection, 20 ms each; every `held_every`th round a lost
    /// segment held all 10 of them 20 ms more.
    fn rounds(rounds: u32, held_every: u32) -> Vec<nodelay_engine::ResponseRecord> {
        (0..rounds * 10)
            .map(|i| {
                let held = held_every > 0 && (i / 10) % held_every == 0;
                let mut record = stream(i, if held { 40.0 } else { 20.0 }, 0.0, 0.0);
                if let Some(h2) = &mut record.http2 {
                    h2.loss_held = Duration::from_millis(if held { 20 } else { 0 });
                }
                record
            })
            .collect()
    }

    #[test]
    fn streams_held_together_behind_lost_segments_are_named_when_one_stream_per_connection_is_faster() {
        let mut seen = observations(10, rounds(30, 4));
        seen.baseline.http2_loss_holes = 8;
        seen.baseline.http2_streams_held_by_loss = 80;
        let baseline = seen.baseline.summary();
        assert_eq!(next_experiment(&seen, &baseline), Some(Experiment::OneStreamPerConnection));
        let untried = findings(&seen, &baseline);
        assert_eq!(untried[0].id, FindingId::H2HeadOfLineLoss);
        assert!(!untried[0].proven && untried[0].title.contains("not tried"), "{}", untried[0].title);
        // Spread over connections: nothing shares a wait, the tenth that waited is gone, and
        // one response of a hundred waits a retransmission timeout alone.
        let mut spread: Vec<_> = (0..300).map(|i| stream(i, 20.0, 0.0, 0.0)).collect();
        spread[150] = stream(150, 250.0, 0.0, 0.0);
        spread[250] = stream(250, 250.0, 0.0, 0.0);
        spread[280] = stream(280, 250.0, 0.0, 0.0);
        seen.experiments.push(phase(Some(Experiment::OneStreamPerConnection), spread));
        assert_eq!(next_experiment(&seen, &baseline), None);
        let proven = findings(&seen, &baseline);
        assert!(proven[0].proven, "{:?}", proven[0]);
        assert!(proven[0].title.contains("cut the p87 40.0"), "{}", proven[0].title);
        assert!(proven[0].title.contains("p99 rose"), "{}", proven[0].title);
        assert!(
            proven[0].proof[0].result.contains("held with other streams in 0 of"),
            "{:?}",
            proven[0].proof
        );
        // No faster with a stream per connection: the loss costs, not the sharing.
        seen.experiments[0] = phase(Some(Experiment::OneStreamPerConnection), rounds(30, 4));
        seen.experiments[0]
            .responses
            .iter_mut()
            .for_each(|r| r.http2.as_mut().unwrap().loss_held = Duration::ZERO);
        let unproven = findings(&seen, &baseline);
        assert!(
            !unproven[0].proven && unproven[0].title.contains("did not make them faster"),
            "{}",
            unproven[0].title
        );
    }

    #[test]
    fn on_a_long_path_the_proof_reads_the_wait_above_the_median_not_the_round_trip() {
        // A 100 ms path: every fourth round held 20 ms more (p87 120 ms). A stream per
        // connection leaves a tenth waiting 10 ms alone: the totals fall by a twelfth only,
        // the wait above the median by half.
        let held = rounds(30, 4)
            .into_iter()
            .enumerate()
            .map(|(i, record)| {
                let extra_ms = record.http2.as_ref().unwrap().loss_held.as_secs_f64() * 1e3;
                let mut longer = stream(i as u32, 100.0 + extra_ms, 0.0, 0.0);
                longer.http2 = record.http2;
                longer
            })
            .collect();
        let mut seen = observations(10, held);
        seen.baseline.http2_loss_holes = 8;
        seen.baseline.http2_streams_held_by_loss = 80;
        let baseline = seen.baseline.summary();
        let alone_ms = |i: u32, every: u32, extra_ms: f64| {
            if i.is_multiple_of(every) { 100.0 + extra_ms } else { 100.0 }
        };
        let spread = (0..300).map(|i| stream(i, alone_ms(i, 10, 10.0), 0.0, 0.0)).collect();
        seen.experiments.push(phase(Some(Experiment::OneStreamPerConnection), spread));
        let proven = findings(&seen, &baseline);
        assert!(proven[0].proven, "{}", proven[0].title);
        // The same share waiting as long alone is no better than the shared wait.
        let same = (0..300).map(|i| stream(i, alone_ms(i, 4, 20.0), 0.0, 0.0)).collect();
        seen.experiments[0] = phase(Some(Experiment::OneStreamPerConnection), same);
        let unproven = findings(&seen, &baseline);
        assert!(!unproven[0].proven, "{}", unproven[0].title);
        assert!(
            unproven[0].title.contains("20.05 ms -> 20.05 ms above the baseline's median"),
            "{}",
            unproven[0].title
        );
        // Every response 12 ms slower, the held ones 2 ms faster: above its own median the
        // wait shrank, above the baseline's it did not.
        let slower = (0..300).map(|i| stream(i, if i % 4 == 0 { 118.0 } else { 112.0 }, 0.0, 0.0)).collect();
        seen.experiments[0] = phase(Some(Experiment::OneStreamPerConnection), slower);
        assert!(!findings(&seen, &baseline)[0].proven);
    }

    #[test]
    fn rare_holds_and_a_single_stream_are_no_head_of_line_blocking() {
        // One round in twenty held: under a tenth of the responses.
        let rare = observations(10, rounds(40, 20));
        assert_eq!(next_experiment(&rare, &rare.baseline.summary()), None);
        assert!(findings(&rare, &rare.baseline.summary()).is_empty());
        // One stream a connection shares its connection with nothing.
        let alone = observations(1, rounds(30, 4));
        assert_eq!(next_experiment(&alone, &alone.baseline.summary()), None);
    }
}
