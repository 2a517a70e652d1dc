//! The congestion window's start across a path: a response larger than the initial window
//! (10 segments) takes extra round trips where the sender's window starts small, on a fresh
//! connection (`initial-window-limited`) and, where the sender restarts slow start after
//! idle, on a keep-alive connection left idle longer than its RTO (`slow-start-after-idle`).
//!
//! Each is a finding only when the measured workload pays it: a connection per request (the
//! baseline opened one for each response). A client that keeps its connections alive and
//! busy, as the doctor's baseline does, pays neither: what the experiments measured then is
//! a note under the verdict, what a fresh or idle connection would cost.

use crate::finding::{Confidence, Evidence, Finding, FindingId, Note, Proof, ProofKind};
use crate::fixes;
use crate::phase::{Experiment, Observations, PhaseSummary, extra_flights};
use nodelay_tcp::path::INITIAL_WINDOW_SEGMENTS;

/// An experiment that changed only the window's start costs a round trip when its median
/// total grew by at least this share of the round trip...
const EXTRA_ROUND_TRIP_SHARE: f64 = 0.75;
/// ...and by at least this share of the round trips a window of 10 segments, doubling each
/// round trip, takes for the response: a real restart from the initial window costs them
/// all, a path whose forwarder paused once (a busy machine) costs one.
const MODELLED_ROUND_TRIPS_SHARE: f64 = 0.5;

/// The least extra time, in ms, that counts as the window's round trips for a response of
/// `size_bytes` across `rtt_ms`.
fn least_extra_ms(size_bytes: u64, mss_bytes: u64, rtt_ms: f64) -> f64 {
    let modelled_rounds = f64::from(extra_flights(size_bytes, mss_bytes));
    rtt_ms * EXTRA_ROUND_TRIP_SHARE.max(MODELLED_ROUND_TRIPS_SHARE * modelled_rounds)
}

/// What one experiment measured of the window's start on a keep-alive baseline.
struct WindowCost {
    id: FindingId,
    experiment: Experiment,
    extra_ms: f64,
    rounds: f64,
    experiment_p50_ms: f64,
    handshake_ms: f64,
    evidence: Vec<Evidence>,
}

/// What the experiments measured: a fresh connection's and an idle one's extra round trips
/// beside the warm keep-alive baseline; empty when the baseline did not reuse connections,
/// the response fits the initial window, or the path is loopback.
fn keep_alive_window_costs(observations: &Observations, baseline: &PhaseSummary) -> Vec<WindowCost> {
    let rtt = baseline.judged_rtt_ms();
    if rtt <= 0.0 || !baseline.beyond_initial_window() || !baseline.reuses_connections {
        return Vec::new();
    }
    let window_bytes = INITIAL_WINDOW_SEGMENTS * baseline.mss_bytes;
    let size = baseline.response_bytes_p50;
    let checks = [
        (Experiment::NewConnectionPerRequest, FindingId::InitialWindowLimited),
        (Experiment::AfterIdle, FindingId::SlowStartAfterIdle),
    ];
    let mut costs = Vec::new();
    for (experiment, id) in checks {
        let Some(phase) = observations.experiment(experiment) else { continue };
        let summary = phase.summary();
        if summary.steady_responses < 3 || !summary.reliable {
            continue;
        }
        // A fresh connection's total includes its handshake: one round trip not counted here.
        let handshake_ms = summary.connect_p50_ms.filter(|_| !summary.reuses_connections).unwrap_or(0.0);
        let extra_ms = summary.total_p50_ms - handshake_ms - baseline.total_p50_ms;
        if extra_ms < least_extra_ms(size, baseline.mss_bytes, rtt) {
            continue;
        }
        let rounds = (extra_ms / rtt).round().max(1.0);
        let mut evidence = vec![
            Evidence::new("median response size", size as f64, "bytes"),
            Evidence::new("initial window (10 segments of the server's MSS)", window_bytes as f64, "bytes"),
            Evidence::new("median total on the warm keep-alive connection", baseline.total_p50_ms, "ms"),
            Evidence::new("path round trip (client TCP_INFO min_rtt)", rtt, "ms"),
            Evidence::new("extra time per response", extra_ms, "ms"),
            Evidence::new("extra round trips per response", rounds, "count"),
        ];
        let changed = if id == FindingId::InitialWindowLimited {
            Evidence::new(
                "median total on a fresh connection, less its handshake",
                summary.total_p50_ms - handshake_ms,
                "ms",
            )
        } else {
            Evidence::new("median total after an idle gap", summary.total_p50_ms, "ms")
        };
        evidence.insert(3, changed);
        costs.push(WindowCost {
            id,
            experiment,
            extra_ms,
            rounds,
            experiment_p50_ms: summary.total_p50_ms,
            handshake_ms,
            evidence,
        });
    }
    costs
}

/// The experiment's proof, in words.
fn proof(cost: &WindowCost, baseline: &PhaseSummary) -> Proof {
    let rtt = baseline.judged_rtt_ms();
    Proof {
        kind: ProofKind::Experiment,
        experiment: cost.experiment.describe().into(),
        baseline_p50_ms: baseline.total_p50_ms,
        experiment_p50_ms: cost.experiment_p50_ms,
        removed: false,
        result: format!(
            "p50 {:.2} ms -> {:.2} ms{}: {:.1} ms more, {:.0} round trips of {rtt:.1} ms",
            baseline.total_p50_ms,
            cost.experiment_p50_ms,
            if cost.handshake_ms > 0.0 {
                format!(" (of which a {:.2} ms handshake)", cost.handshake_ms)
            } else {
                String::new()
            },
            cost.extra_ms,
            cost.rounds
        ),
    }
}

/// Notes for a keep-alive workload: what a fresh connection, or one left idle, would cost
/// it, measured by the experiments. The measured workload pays neither.
pub(crate) fn window_notes(observations: &Observations) -> Vec<Note> {
    let baseline = observations.baseline.summary();
    if baseline.responses == 0 || !baseline.reliable {
        return Vec::new();
    }
    let kib = baseline.response_bytes_p50 as f64 / 1024.0;
    keep_alive_window_costs(observations, &baseline)
        .into_iter()
        .map(|cost| {
            let title = if cost.id == FindingId::InitialWindowLimited {
                format!(
                    "A fresh connection would cost {:.0} more round trip{} ({:.1} ms) for a {kib:.0} KB response, \
                     as the server's window starts at 10 segments: keep connections alive, as this client does",
                    cost.rounds,
                    if cost.rounds == 1.0 { "" } else { "s" },
                    cost.extra_ms
                )
            } else {
                format!(
                    "A keep-alive connection left idle longer than its RTO would cost {:.0} more round trip{} \
                     ({:.1} ms) for a {kib:.0} KB response, as the server restarts slow start: this client keeps \
                     its connection busy; where yours idle, set net.ipv4.tcp_slow_start_after_idle=0 on the server",
                    cost.rounds,
                    if cost.rounds == 1.0 { "" } else { "s" },
                    cost.extra_ms
                )
            };
            Note { id: cost.id, title, proof: vec![proof(&cost, &baseline)], evidence: cost.evidence }
        })
        .collect()
}

/// `initial-window-limited` where the workload pays it: the baseline opened a connection per
/// request (the server closes, or the client asked it to), so every response larger than the
/// initial window waits the window's round trips. Shown by the response's own time: from its
/// first byte to its last it took about the round trips a window of 10 segments, doubling
/// each round trip, needs for it.
pub(crate) fn paid_window(baseline: &PhaseSummary) -> Option<Finding> {
    let rtt = baseline.judged_rtt_ms();
    if rtt <= 0.0 || !baseline.beyond_initial_window() || baseline.reuses_connections {
        return None;
    }
    let size = baseline.response_bytes_p50;
    let modelled_rounds = extra_flights(size, baseline.mss_bytes);
    let body_ms = (baseline.total_p50_ms - baseline.first_byte_p50_ms).max(0.0);
    if body_ms < least_extra_ms(size, baseline.mss_bytes, rtt) {
        return None;
    }
    let rounds = (body_ms / rtt).round().max(1.0);
    let window_bytes = INITIAL_WINDOW_SEGMENTS * baseline.mss_bytes;
    Some(Finding {
        id: FindingId::InitialWindowLimited,
        title: format!(
            "Every response opens a new connection, and a {:.0} KB response takes {body_ms:.1} ms from its first byte \
             to its last ({rounds:.0} round trips): the server's window starts at 10 segments ({:.0} KB) and grows \
             one round trip at a time",
            size as f64 / 1024.0,
            window_bytes as f64 / 1024.0
        ),
        // Timed, not changed: no experiment can keep alive a connection the server closes.
        proven: false,
        confidence: if rounds >= 2.0 && (rounds - f64::from(modelled_rounds)).abs() <= 1.0 {
            Confidence::High
        } else {
            Confidence::Medium
        },
        evidence: vec![
            Evidence::new("median response size", size as f64, "bytes"),
            Evidence::new("initial window (10 segments of the server's MSS)", window_bytes as f64, "bytes"),
            Evidence::new("median time from first byte to last", body_ms, "ms"),
            Evidence::new("path round trip (client TCP_INFO min_rtt)", rtt, "ms"),
            Evidence::new(
                "modelled round trips beyond the first flight",
                f64::from(modelled_rounds),
                "count",
            ),
            Evidence::new("extra round trips per response", rounds, "count"),
        ],
        proof: Vec::new(),
        fix_summary: fixes::INITIAL_WINDOW_SUMMARY.into(),
        fix: fixes::initial_window(),
    })
}
