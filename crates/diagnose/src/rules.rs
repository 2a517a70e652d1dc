//! The diagnosis rules: which experiment to run next, and what the measurements prove.
//!
//! A cause is stated only when the experiment that removes it did so; otherwise the finding
//! says what was seen (`proven: false`) and never names Nagle.

use crate::backlog::listen_backlog_overflow;
use crate::expect::expect_continue_wait;
use crate::finding::{Confidence, Evidence, Finding, FindingId, Proof, ProofKind};
use crate::fixes;
use crate::hops::unrequested_keep_alive;
use crate::phase::{Experiment, MAX_FAILED_SHARE, Observations, Phase, PhaseSummary, STALL_GAP_MS};
use crate::server::{server_findings, works_through};
use crate::symptom::{REMOVED_FRACTION, Symptom, proof, proof_of};
use nodelay_flags::Flag;
use nodelay_tcp::path::{RTO_MIN_MS, about_one_round_trip_ms, round_trip_pause_share};
use nodelay_tcp::thresholds::{SLOW_FIRST_BYTE_MS, SYMPTOM_FRACTION};
use nodelay_tcp::timers::{hop_stall_timer, match_delayed_ack_timer};

/// A median first byte later than [`SLOW_FIRST_BYTE_MS`] (less the path's round trip) makes
/// the server "slow to answer" when it is also at least this share of the round trip: beside a long path, a few
/// milliseconds of the server's are not what the user waits for.
const SLOW_FIRST_BYTE_RTT_SHARE: f64 = 0.25;
/// Responses that waited a retransmission timeout are named from this share on (one in
/// twenty: the 95th percentile is then the loss's).
const RETRANSMISSION_SHARE: f64 = 0.05;
/// A CPU-bound handler whose work (on a CPU or waiting for one) is at least this share of the
/// server's first byte explains that first byte.
const WORK_EXPLAINS_FIRST_BYTE_SHARE: f64 = 0.8;

const PAUSE: Symptom = Symptom {
    share: PhaseSummary::stalled_fraction,
    median_ms: PhaseSummary::beyond_path_p50_ms,
    label: "a pause",
};
const LATE_FIRST_BYTE: Symptom = Symptom {
    share: PhaseSummary::late_first_byte_fraction,
    median_ms: first_byte_p50_ms,
    label: "a late first byte",
};

/// A first byte a round trip late (a split-writing client across a path): judged by the
/// median only, as no share of responses is "late" by a fixed bar there.
const ROUND_TRIP_LATE_FIRST_BYTE: Symptom =
    Symptom { share: no_share, median_ms: first_byte_p50_ms, label: "a first byte a round trip late" };

fn no_share(_summary: &PhaseSummary) -> f64 {
    0.0
}

fn first_byte_p50_ms(summary: &PhaseSummary) -> f64 {
    summary.first_byte_p50_ms
}

/// The next experiment that would separate the causes in view, or `None` when the
/// observations are enough.
pub fn next_experiment(observations: &Observations) -> Option<Experiment> {
    let baseline = observations.baseline.summary();
    // No experiment can rescue a baseline that carries no verdict.
    if baseline.responses == 0 || !baseline.reliable {
        return None;
    }
    let shape = observations.request?;
    let done = |experiment| observations.has_run(experiment);
    if shape.http2_streams.is_some() {
        // Over HTTP/2 the connection stays and the request is libnghttp2's to write: of
        // the HTTP/1.1 experiments only the quick ACK applies.
        let slow = baseline.stalled_fraction() >= REMOVED_FRACTION
            || baseline.server_first_byte_p50_ms() >= SLOW_FIRST_BYTE_MS;
        return crate::http2::next_experiment(observations, &baseline)
            .or((slow && !done(Experiment::QuickAck)).then_some(Experiment::QuickAck));
    }
    // Opens that waited a second: would they wait one at a time? (Cheap, so first.)
    if crate::backlog::opens_waited(observations, &baseline) && !done(Experiment::OneConnectionAtATime) {
        return Some(Experiment::OneConnectionAtATime);
    }
    let stalls = baseline.stalled_fraction() >= REMOVED_FRACTION;
    let held_share = round_trip_pause_share(baseline.judged_rtt_ms(), SYMPTOM_FRACTION);
    let held = baseline.round_trip_held_fraction() >= held_share || baseline.tail_held_in_view();
    let slow = stalls
        || held
        || baseline.server_first_byte_p50_ms() >= SLOW_FIRST_BYTE_MS
        || crate::slow_body::slow_in_pieces(&baseline);

    if slow && !done(Experiment::QuickAck) {
        return Some(Experiment::QuickAck);
    }
    if slow && baseline.reuses_connections && !done(Experiment::NewConnectionPerRequest) {
        return Some(Experiment::NewConnectionPerRequest);
    }
    if shape.baseline_split {
        // The user's own client writes in pieces: test one write and TCP_NODELAY.
        if slow && !shape.baseline_nodelay && !done(Experiment::SplitRequestNoDelay) {
            return Some(Experiment::SplitRequestNoDelay);
        }
        if slow && !done(Experiment::SingleWrite) {
            return Some(Experiment::SingleWrite);
        }
    } else if shape.has_body && baseline.reuses_connections {
        // Would a client that writes head and body separately stall against this server?
        if !done(Experiment::SplitRequestNagle) {
            return Some(Experiment::SplitRequestNagle);
        }
        let split_stalls =
            observations.experiment(Experiment::SplitRequestNagle).map(|p| p.summary()).is_some_and(
                |split| whole_response_late(&split, &baseline) || round_trip_late(&split, &baseline),
            );
        if split_stalls && !done(Experiment::SplitRequestNoDelay) {
            return Some(Experiment::SplitRequestNoDelay);
        }
    }
    // Across a path, responses larger than the initial window: do fresh connections and
    // idle ones (slow start again) cost round trips that a warm connection does not?
    if baseline.judged_rtt_ms() > 0.0 && baseline.beyond_initial_window() && baseline.reuses_connections {
        for experiment in [Experiment::NewConnectionPerRequest, Experiment::AfterIdle] {
            if !done(experiment) {
                return Some(experiment);
            }
        }
    }
    None
}

/// The rules' findings from the target's own phases, most important first; none when nothing
/// is wrong. [`crate::diagnose`] adds what lies beyond the target (its hops, the idle probe),
/// names the target in the fixes, and says `healthy` when nothing was found at all.
pub(crate) fn rule_findings(observations: &Observations) -> Vec<Finding> {
    let baseline = observations.baseline.summary();
    if baseline.responses == 0 {
        return Vec::new();
    }
    if !baseline.reliable {
        // A server that closes after every response unannounced is judged on fresh connections.
        if let Some(judged) = crate::closing::on_fresh_connections(observations) {
            return crate::closing::unannounced(rule_findings(&judged), observations);
        }
        return vec![unreliable_measurement(&observations.baseline, &baseline)];
    }
    let errors = crate::errors::error_responses(&observations.baseline);
    if let Some((finding, true)) = errors {
        // Mostly error pages: their timings say nothing of the page the user meant.
        return vec![finding];
    }
    let mut findings = Vec::new();
    // A second per new connection outweighs every other finding: first.
    findings.extend(listen_backlog_overflow(observations, &baseline));
    findings.extend(server_stall(observations, &baseline));
    let round_trip_hold = server_round_trip_hold(observations, &baseline);
    let held = round_trip_hold.is_some();
    findings.extend(round_trip_hold);
    if !held && baseline.stalled_fraction() < SYMPTOM_FRACTION {
        findings.extend(crate::tail_hold::server_tail_hold(observations, &baseline));
    }
    let client = client_stall(observations, &baseline);
    let client_explains_first_byte =
        client.as_ref().is_some_and(|f| observations.request.is_some_and(|s| s.baseline_split) && f.proven);
    findings.extend(client);
    if !client_explains_first_byte {
        findings.extend(slow_first_byte(observations, &baseline));
    }
    if baseline.stalled_fraction() < SYMPTOM_FRACTION
        && baseline.round_trip_held_fraction() < SYMPTOM_FRACTION
        && !baseline.tail_held_in_view()
    {
        findings.extend(crate::slow_body::slow_response_body(observations, &baseline));
    }
    findings.extend(connection_per_request(&baseline));
    findings.extend(retransmission_timeout(observations, &baseline));
    findings.extend(crate::window::paid_window(&baseline));
    let http2 = crate::http2::findings(observations, &baseline);
    if http2.iter().any(|f| f.id == FindingId::H2FlowControlWindow && f.proven) {
        // The pauses in the body were the waits for WINDOW_UPDATE: the window explains them.
        findings.retain(|f| f.id != FindingId::SlowResponseBody);
    }
    findings.extend(http2);
    findings.extend(errors.map(|(finding, _)| finding));
    if let Some(finding) = observations.expect_probe.as_ref().and_then(expect_continue_wait) {
        findings.push(finding);
    }
    if let Some(finding) = observations.hold_probe.as_ref().and_then(unrequested_keep_alive) {
        findings.push(finding);
    }
    // What the server's own counters showed during the baseline (they name their stack by
    // the process, so they come after the Server header's pass).
    if let Some(view) = &observations.server_view {
        crate::waiting::waiting_advice(&mut findings, view, &baseline);
        let server = server_findings(view, baseline.responses as u64, Some(baseline.total_p50_ms));
        if !server.is_empty() {
            // A first byte late because the handler worked (on a CPU, or waiting for one on a
            // busy machine) is the CPU-bound finding's symptom, not a wait to look for.
            let cpu_bound = server.iter().any(|f| f.id == FindingId::ServerCpuBound);
            let requests = baseline.responses as u64;
            let first_byte_ms = baseline.server_first_byte_p50_ms();
            if cpu_bound && works_through(view, requests, first_byte_ms, WORK_EXPLAINS_FIRST_BYTE_SHARE) {
                findings.retain(|f| f.id != FindingId::SlowFirstByte);
            }
            findings.extend(server);
        }
    }
    if let Some(stack) = fixes::stack_of_server(observations) {
        let http2 = observations.baseline.http2_streams.is_some();
        for finding in &mut findings {
            fixes::detected_first_speaking(&mut finding.fix, stack, http2);
        }
    }
    crate::rank::rank(&mut findings, &baseline);
    findings
}

/// Across a path, the first byte came one round trip later than the baseline's (within a
/// quarter of it, plus 1 ms): a hold that an ACK sent at once released.
fn round_trip_late(phase: &PhaseSummary, baseline: &PhaseSummary) -> bool {
    let rtt = baseline.judged_rtt_ms();
    let extra = phase.first_byte_p50_ms - baseline.first_byte_p50_ms;
    about_one_round_trip_ms(extra, rtt)
}

fn whole_response_late(phase: &PhaseSummary, baseline: &PhaseSummary) -> bool {
    phase.late_first_byte_fraction() >= SYMPTOM_FRACTION
        && phase.first_byte_p50_ms >= baseline.first_byte_p50_ms + 20.0
}

fn tcp_info_evidence(phase: &Phase, evidence: &mut Vec<Evidence>) {
    // Before its first RTT sample a connection has no RTT to show (min_rtt 0).
    if let Some(info) = phase.tcp_info.filter(|info| info.min_rtt_us > 0) {
        let ms = |us: u32| nodelay_tcp::time::ms_from_us(us);
        evidence.push(Evidence::new("client TCP_INFO rtt (smoothed)", ms(info.rtt_us), "ms"));
        evidence.push(Evidence::new("client TCP_INFO min_rtt (true path RTT)", ms(info.min_rtt_us), "ms"));
        evidence.push(Evidence::new("client TCP_INFO ato (its delayed-ACK timeout)", ms(info.ato_us), "ms"));
    }
}

/// Responses pause mid-way: server-side Nagle if the client's quick ACKs remove it.
fn server_stall(observations: &Observations, baseline: &PhaseSummary) -> Option<Finding> {
    if baseline.stalled_fraction() < SYMPTOM_FRACTION {
        return None;
    }
    let gap = baseline.stalled_gap_p50_ms.unwrap_or(baseline.read_gap_p50_ms);
    // Across a path the pause is the ACK's delay plus its round trip: the timer is the delay.
    let timer = match_delayed_ack_timer(gap - baseline.judged_rtt_ms());
    // Over TLS the response arrives as records: the pause falls between two of them.
    let over_tls = baseline.tls_handshake_p50_ms.is_some();
    let pause = match over_tls {
        true => "median pause within a response (between TLS records)",
        false => "median pause within a response",
    };
    let mut evidence = vec![
        Evidence::new(
            "keep-alive responses that pause mid-response",
            baseline.stalled_fraction() * 100.0,
            "%",
        ),
        Evidence::new(pause, gap, "ms"),
        Evidence::new("median first byte (arrives on time)", baseline.first_byte_p50_ms, "ms"),
        Evidence::new("median total", baseline.total_p50_ms, "ms"),
    ];
    if let Some(bytes) = baseline.bytes_before_stall {
        // Over HTTP/2 the pause is between frames: its bytes are the DATA before it, so a
        // pause between HEADERS and DATA has none.
        let http2 = observations.request.is_some_and(|shape| shape.http2_streams.is_some());
        let label = match (http2, over_tls) {
            (true, _) => "body bytes (DATA frames) that arrive before the pause, after the HEADERS",
            (false, true) => "bytes (decrypted) that arrive before the pause",
            (false, false) => "bytes that arrive before the pause",
        };
        evidence.push(Evidence::new(label, bytes as f64, "bytes"));
    }
    if let Some(first) = baseline.first_request_total_ms {
        evidence.push(Evidence::new("first request on the fresh connection", first, "ms"));
    }
    tcp_info_evidence(&observations.baseline, &mut evidence);

    let mut proofs = Vec::new();
    let mut quickack_removed = false;
    for experiment in [Experiment::QuickAck, Experiment::NewConnectionPerRequest] {
        if let Some(phase) = observations.experiment(experiment) {
            let tested = proof(experiment, baseline, phase, PAUSE);
            // Only the client's quick ACKs prove it: a fresh connection also changes the server's state.
            quickack_removed |= experiment == Experiment::QuickAck && tested.removed;
            proofs.push(tested);
        }
    }

    let quickack_ran = observations.experiment(Experiment::QuickAck).is_some();
    if !quickack_ran {
        // Nothing was tried that could tell Nagle from a slow server: say that, and why, claim nothing.
        let (why, again) = if observations.interrupted {
            (
                "the run was interrupted (Ctrl-C)",
                "Run the doctor again and let it finish to find the cause.".to_string(),
            )
        } else {
            (
                "the budget was too small",
                format!(
                    "Run the doctor again with a larger {} (the default 10 s is enough) to find the cause.",
                    Flag::Budget
                ),
            )
        };
        return Some(Finding {
            id: FindingId::SlowResponseBody,
            title: format!(
                "Responses pause {gap:.1} ms mid-way; the experiment that tells Nagle from a slow server (client \
                 TCP_QUICKACK) did not run: {why}"
            ),
            proven: false,
            confidence: Confidence::Low,
            evidence,
            proof: proofs,
            fix_summary: again,
            fix: Vec::new(),
        });
    }
    if !quickack_removed {
        return Some(Finding {
            id: FindingId::SlowResponseBody,
            title: format!(
                "Responses pause {gap:.1} ms mid-way and the client's quick ACKs do not remove it: the server is \
                 slow to send the rest (not Nagle)"
            ),
            proven: false,
            confidence: Confidence::Medium,
            evidence,
            proof: proofs,
            fix_summary:
                "Look at what the server does between writing the first part of a response and the rest."
                    .into(),
            fix: fixes::slow_body(),
        });
    }
    // The fix applied to the server itself, when the user asked for it (`--try-fix`).
    if let Some(trial) = observations.fix_trial.as_ref().filter(|trial| trial.phase.is_reliable()) {
        let applied = trial.applied.clone();
        proofs.push(proof_of(ProofKind::FixApplied, applied, baseline, &trial.phase, PAUSE));
    }
    let quantized = baseline.stalls_are_quantized() && timer.is_some();
    if let Some(timer) = timer {
        let (what, delay) = match baseline.judged_rtt_ms() {
            0.0 => (format!("the pause matches {}", timer.describe()), gap),
            rtt => (format!("the pause less the round trip matches {}", timer.describe()), gap - rtt),
        };
        evidence.push(Evidence::new(what, delay, "ms"));
    }
    let confidence =
        if quantized && baseline.stalled_fraction() >= 0.75 { Confidence::High } else { Confidence::Medium };
    let mut title = format!(
        "The server's responses wait {gap:.0} ms for the client's delayed ACK: Nagle's algorithm on the server \
         holds the rest of each response"
    );
    let mut fix_summary = fixes::SERVER_NODELAY_SUMMARY.to_string();
    // Across a path the wait is the ACK's delay plus its round trip; with quick ACKs one
    // round trip is left, which TCP_NODELAY on the server saves as well.
    if let Some(hold) = observations
        .experiment(Experiment::QuickAck)
        .map(Phase::summary)
        .filter(|quick| quick.round_trip_held_fraction() >= SYMPTOM_FRACTION)
        .and_then(|quick| quick.round_trip_hold_p50_ms)
    {
        evidence.push(Evidence::new("pause left with the client's quick ACKs (one round trip)", hold, "ms"));
        title.push_str(&format!(
            "; {:.0} ms of it is the ACK's delay and {hold:.0} ms its round trip, which a client that ACKs at \
             once still waits",
            (gap - hold).max(0.0)
        ));
        fix_summary.push_str(&format!(
            " Here it saves {gap:.1} ms of {:.1} ms per response, and one round trip ({hold:.1} ms) even for a \
             client that ACKs at once.",
            baseline.total_p50_ms
        ));
    }
    Some(Finding {
        id: FindingId::ServerNagleDelayedAck,
        title,
        proven: true,
        confidence,
        evidence,
        proof: proofs,
        fix_summary,
        fix: fixes::server_nodelay(),
    })
}

/// Across a path, responses that pause one round trip although they fit the first flight:
/// Nagle on the server holds the rest until the client's ACK of the first part is back. The
/// proof is the client's quick ACKs: with an ACK sent the moment the first part is read,
/// the rest arrives one round trip later (ACK-clocked), where a slow server would not keep
/// time with the path. Judged only where no delayed-ACK stall was found (that finding
/// already says the round trip).
fn server_round_trip_hold(observations: &Observations, baseline: &PhaseSummary) -> Option<Finding> {
    let rtt = baseline.judged_rtt_ms();
    let held_share = round_trip_pause_share(rtt, SYMPTOM_FRACTION);
    if rtt <= 0.0
        || baseline.stalled_fraction() >= SYMPTOM_FRACTION
        || baseline.round_trip_held_fraction() < held_share
    {
        return None;
    }
    let hold = baseline.round_trip_hold_p50_ms?;
    let mut evidence = vec![
        Evidence::new(
            "keep-alive responses held about one round trip mid-response",
            baseline.round_trip_held_fraction() * 100.0,
            "%",
        ),
        Evidence::new("median pause within a response", hold, "ms"),
        Evidence::new("path round trip (client TCP_INFO min_rtt)", rtt, "ms"),
        Evidence::new(
            "median first byte (one round trip plus the server's time)",
            baseline.first_byte_p50_ms,
            "ms",
        ),
        Evidence::new("median total", baseline.total_p50_ms, "ms"),
    ];
    let quick = observations.experiment(Experiment::QuickAck).map(|phase| (phase, phase.summary()));
    let ack_clocked = quick.as_ref().and_then(|(_, summary)| {
        let quick_hold = summary.round_trip_hold_p50_ms?;
        let keeps_time = about_one_round_trip_ms(quick_hold, rtt);
        (summary.round_trip_held_fraction() >= held_share && keeps_time).then_some(quick_hold)
    });
    let proofs: Vec<Proof> = quick
        .iter()
        .map(|(phase, summary)| Proof {
            kind: ProofKind::Experiment,
            experiment: Experiment::QuickAck.describe().into(),
            baseline_p50_ms: baseline.total_p50_ms,
            experiment_p50_ms: summary.total_p50_ms,
            removed: false,
            result: match ack_clocked {
                Some(quick_hold) => format!(
                    "with an ACK sent the moment the first part arrived, the rest came {quick_hold:.2} ms later, \
                     one round trip ({rtt:.2} ms): released by the ACK, in {} of {} responses",
                    summary.round_trip_held, phase.responses.len()
                ),
                None => format!(
                    "the pause did not keep time with the round trip ({} of {} responses held)",
                    summary.round_trip_held, phase.responses.len()
                ),
            },
        })
        .collect();
    let Some(quick_hold) = ack_clocked else {
        return Some(Finding {
            id: FindingId::SlowResponseBody,
            title: match quick {
                Some(_) => format!(
                    "Responses pause {hold:.1} ms mid-way, about the path's {rtt:.1} ms round trip; the client's \
                     quick ACKs did not show it released by an ACK"
                ),
                // The budget or a Ctrl-C left no time for the experiment that would tell.
                None => format!(
                    "Responses pause {hold:.1} ms mid-way, about the path's {rtt:.1} ms round trip; the experiment \
                     that tells a held response from a slow server (client TCP_QUICKACK) did not run"
                ),
            },
            proven: false,
            confidence: Confidence::Low,
            evidence,
            proof: proofs,
            fix_summary:
                "Look at what the server does between writing the first part of a response and the rest."
                    .into(),
            fix: fixes::slow_body(),
        });
    };
    evidence.push(Evidence::new("pause with the client's quick ACKs", quick_hold, "ms"));
    Some(Finding {
        id: FindingId::ServerNagleRoundTrip,
        title: format!(
            "The server's responses wait one round trip ({hold:.1} ms) for the client's ACK of their first part: \
             Nagle's algorithm on the server holds the rest until an ACK comes back"
        ),
        proven: true,
        confidence: if baseline.round_trip_held_fraction() >= 0.75 {
            Confidence::High
        } else {
            Confidence::Medium
        },
        evidence,
        proof: proofs,
        fix_summary: format!(
            "{} TCP_NODELAY on the server saves one round trip, {hold:.1} ms of {:.1} ms per response.",
            fixes::SERVER_NODELAY_SUMMARY,
            baseline.total_p50_ms
        ),
        fix: fixes::server_nodelay(),
    })
}

/// The whole response is late when the client writes its request in pieces.
fn client_stall(observations: &Observations, baseline: &PhaseSummary) -> Option<Finding> {
    let shape = observations.request?;
    let (stalling_phase, stalling, hypothetical) = if shape.baseline_split {
        (&observations.baseline, baseline.clone(), false)
    } else {
        let phase = observations.experiment(Experiment::SplitRequestNagle)?;
        (phase, phase.summary(), true)
    };
    let late = if hypothetical {
        whole_response_late(&stalling, baseline)
    } else {
        stalling.late_first_byte_fraction() >= SYMPTOM_FRACTION
    };
    // Across a path the held body waits for the server's ACK of the head: its delay plus a
    // round trip, or the round trip alone from a server that ACKs at once.
    let rtt = baseline.judged_rtt_ms();
    let reference = [Experiment::SplitRequestNoDelay, Experiment::SingleWrite]
        .into_iter()
        .filter(|_| !hypothetical)
        .find_map(|e| observations.experiment(e))
        .map_or(baseline.first_byte_p50_ms, |phase| phase.summary().first_byte_p50_ms);
    let extra = stalling.first_byte_p50_ms - reference;
    let round_trip = !late && about_one_round_trip_ms(extra, rtt);
    if !late && !round_trip {
        return None;
    }
    let first_byte = stalling.first_byte_p50_ms;
    let mut evidence = vec![
        Evidence::new(
            "responses whose first byte is late (whole response late)",
            stalling.late_first_byte_fraction() * 100.0,
            "%",
        ),
        Evidence::new("median first byte with the request in pieces", first_byte, "ms"),
        Evidence::new("median read() calls per response", stalling.read_chunks_mean, "count"),
    ];
    if hypothetical {
        evidence.push(Evidence::new(
            "median first byte with the request in one write",
            baseline.first_byte_p50_ms,
            "ms",
        ));
    }
    // On a path, the server's ACK delay is what the pieces add beyond one round trip.
    let delay = if rtt > 0.0 { extra - rtt } else { first_byte };
    if let Some(timer) = match_delayed_ack_timer(delay).filter(|_| !round_trip) {
        let what = match rtt > 0.0 {
            true => format!("the wait less the round trip matches {} (server side)", timer.describe()),
            false => format!("the delay matches {} (server side)", timer.describe()),
        };
        evidence.push(Evidence::new(what, delay, "ms"));
    }
    if rtt > 0.0 {
        evidence.push(Evidence::new("extra first-byte time with the request in pieces", extra, "ms"));
    }
    tcp_info_evidence(stalling_phase, &mut evidence);

    // The pieces' symptom: a late first byte, or on a path a first byte one round trip late.
    let symptom = if round_trip { ROUND_TRIP_LATE_FIRST_BYTE } else { LATE_FIRST_BYTE };
    let proofs: Vec<Proof> = [Experiment::SplitRequestNoDelay, Experiment::SingleWrite]
        .into_iter()
        .filter_map(|e| Some(proof(e, &stalling, observations.experiment(e)?, symptom)))
        .collect();
    if round_trip {
        // Removed when the first byte came back by most of the round trip.
        let proofs: Vec<Proof> = [Experiment::SplitRequestNoDelay, Experiment::SingleWrite]
            .into_iter()
            .filter_map(|e| {
                let mut tested = proof(e, &stalling, observations.experiment(e)?, symptom);
                let summary = observations.experiment(e)?.summary();
                tested.removed = summary.first_byte_p50_ms <= first_byte - rtt * 0.75;
                Some(tested)
            })
            .collect();
        if !proofs.iter().any(|p| p.removed) {
            return None;
        }
        return Some(client_round_trip(hypothetical, first_byte, extra, rtt, evidence, proofs));
    }
    if !proofs.iter().any(|p| p.removed) {
        // Without the proof this is only a slow server; slow_first_byte reports it.
        return None;
    }
    let title = if hypothetical {
        format!(
            "Clients that write the request head and body separately without TCP_NODELAY wait {first_byte:.0} ms per \
             request on this server: their Nagle holds the body until the server's delayed ACK"
        )
    } else {
        format!(
            "The client's request waits {first_byte:.0} ms for the server's delayed ACK: Nagle's algorithm on the \
             client holds the second write"
        )
    };
    Some(Finding {
        id: FindingId::ClientNagleDelayedAck,
        title,
        proven: true,
        confidence: if stalling.late_first_byte_fraction() >= 0.75 {
            Confidence::High
        } else {
            Confidence::Medium
        },
        evidence,
        proof: proofs,
        fix_summary: fixes::CLIENT_SINGLE_WRITE_SUMMARY.into(),
        fix: fixes::client_single_write(),
    })
}

/// A split-writing client across a path whose server ACKs the head at once: the body waits
/// one round trip for that ACK, and TCP_NODELAY (or one write) gives it back.
fn client_round_trip(
    hypothetical: bool,
    first_byte: f64,
    extra: f64,
    rtt: f64,
    evidence: Vec<Evidence>,
    proof: Vec<Proof>,
) -> Finding {
    let who = if hypothetical {
        "Clients that write the request head and body separately without TCP_NODELAY wait"
    } else {
        "The client's request waits"
    };
    Finding {
        id: FindingId::ClientNagleRoundTrip,
        title: format!(
            "{who} one round trip ({extra:.1} ms) for the server's ACK of the head: Nagle's algorithm on the client \
             holds the body until an ACK comes back ({first_byte:.1} ms to the first byte)"
        ),
        proven: true,
        confidence: Confidence::High,
        evidence,
        proof,
        fix_summary: format!(
            "{} Across this path it saves one round trip, {extra:.1} ms of {:.1} ms per request.",
            fixes::CLIENT_SINGLE_WRITE_SUMMARY,
            first_byte.max(rtt)
        ),
        fix: fixes::client_single_write(),
    }
}

/// The first byte itself is late and no client-side experiment helps.
fn slow_first_byte(observations: &Observations, baseline: &PhaseSummary) -> Option<Finding> {
    // The server's own time: the first byte less the path's round trip, large absolutely and
    // beside the round trip (a 41 ms first byte on a 40 ms path is the path's).
    let rtt = baseline.judged_rtt_ms();
    let server = baseline.server_first_byte_p50_ms();
    if server < SLOW_FIRST_BYTE_MS || server < rtt * SLOW_FIRST_BYTE_RTT_SHARE {
        return None;
    }
    let first_byte = baseline.first_byte_p50_ms;
    let mut evidence = vec![
        Evidence::new("median first byte", first_byte, "ms"),
        Evidence::new("first byte, 10th percentile", baseline.first_byte_p10_ms, "ms"),
        Evidence::new("first byte, 90th percentile", baseline.first_byte_p90_ms, "ms"),
        Evidence::new("median total", baseline.total_p50_ms, "ms"),
    ];
    let proofs: Vec<Proof> = [Experiment::QuickAck, Experiment::NewConnectionPerRequest]
        .into_iter()
        .filter_map(|e| Some(proof(e, baseline, observations.experiment(e)?, LATE_FIRST_BYTE)))
        .collect();
    let any_removed = proofs.iter().any(|p| p.removed);
    // Only where a stalled upstream really lands (timer plus a few ms of work), so a steady
    // 50 ms handler is not called a timer.
    if rtt > 0.0 {
        evidence.push(Evidence::new("path round trip (client TCP_INFO min_rtt)", rtt, "ms"));
        evidence.push(Evidence::new(
            "median first byte less the round trip (the server's time)",
            server,
            "ms",
        ));
    }
    let timer = hop_stall_timer(server).filter(|_| baseline.first_bytes_are_quantized());
    let title = match timer {
        Some(timer) => {
            // The server's own time is what matched the timer: across a path, net of it.
            evidence.push(Evidence::new(
                format!("first bytes cluster like {}", timer.describe()),
                server,
                "ms",
            ));
            format!(
                "The server takes {server:.1} ms before its first byte, a steady delay like a delayed-ACK timer: \
                 it may be waiting on a stalled hop of its own (an upstream service)"
            )
        }
        None if rtt > 0.0 => format!(
            "The server takes {server:.1} ms before it sends the first byte of a response, beyond the path's \
             {rtt:.1} ms round trip"
        ),
        None => format!("The server takes {first_byte:.1} ms before it sends the first byte of a response"),
    };
    Some(Finding {
        id: FindingId::SlowFirstByte,
        title,
        proven: !proofs.is_empty() && !any_removed,
        confidence: if proofs.is_empty() || any_removed { Confidence::Low } else { Confidence::High },
        evidence,
        proof: proofs,
        fix_summary:
            "The time is spent in the server before it answers; no client-side TCP change removes it.".into(),
        fix: fixes::server_work(),
    })
}

/// The server closes the connection after every response.
fn connection_per_request(baseline: &PhaseSummary) -> Option<Finding> {
    if baseline.reuses_connections || baseline.responses < 3 {
        return None;
    }
    let connect = baseline.connect_p50_ms.unwrap_or(0.0);
    let tls = baseline.tls_handshake_p50_ms;
    let opening = connect + tls.unwrap_or(0.0);
    let share = if baseline.total_p50_ms > 0.0 { opening / baseline.total_p50_ms * 100.0 } else { 0.0 };
    let handshakes = match tls {
        Some(tls) => format!("{connect:.2} ms TCP and a {tls:.2} ms TLS handshake"),
        None => format!("{connect:.2} ms TCP handshake"),
    };
    let mut evidence = vec![
        Evidence::new("responses", baseline.responses as f64, "count"),
        Evidence::new("connections opened per response", 1.0, "count"),
        Evidence::new("median TCP handshake", connect, "ms"),
    ];
    if let Some(tls) = tls {
        evidence.push(Evidence::new("median TLS handshake", tls, "ms"));
    }
    evidence.push(Evidence::new("median total", baseline.total_p50_ms, "ms"));
    Some(Finding {
        id: FindingId::ConnectionPerRequest,
        title: format!(
            "The server closes the connection after every response: each request pays a {handshakes} ({share:.0} % \
             of its time)"
        ),
        proven: true,
        confidence: Confidence::High,
        evidence,
        proof: Vec::new(),
        fix_summary: "Keep connections alive between requests (HTTP/1.1 keep-alive). Note: fresh connections also hide \
                      Nagle stalls that keep-alive clients would see."
            .into(),
        fix: fixes::keep_alive(),
    })
}

/// Responses that waited a retransmission timeout: segments lost on the path and resent
/// after 200 ms or more. Not Nagle and not the server: the path drops packets. Named when
/// at least one response in twenty paid it (its 95th percentile, then, is the loss's).
fn retransmission_timeout(observations: &Observations, baseline: &PhaseSummary) -> Option<Finding> {
    if baseline.retransmission_waits == 0
        || (baseline.retransmission_waits as f64) < RETRANSMISSION_SHARE * baseline.steady_responses as f64
    {
        return None;
    }
    let wait = baseline.retransmission_wait_p50_ms.unwrap_or(RTO_MIN_MS);
    let resent = observations.baseline.tcp_info.map_or(0, |info| info.total_retransmits);
    let mut evidence = vec![
        Evidence::new(
            "responses that waited a retransmission timeout",
            baseline.retransmission_waits as f64,
            "count",
        ),
        Evidence::new("responses measured", baseline.steady_responses as f64, "count"),
        Evidence::new("median wait beyond the round trip", wait, "ms"),
        Evidence::new("segments the client's connection resent (TCP_INFO)", f64::from(resent), "count"),
        Evidence::new("median total (the others)", baseline.total_p50_ms, "ms"),
    ];
    if baseline.judged_rtt_ms() > 0.0 {
        evidence.push(Evidence::new(
            "path round trip (client TCP_INFO min_rtt)",
            baseline.judged_rtt_ms(),
            "ms",
        ));
    }
    Some(Finding {
        id: FindingId::RetransmissionTimeout,
        title: format!(
            "{} of {} responses waited a retransmission timeout ({wait:.0} ms beyond the round trip): the path \
             loses packets, and each loss costs at least the kernel's 200 ms minimum RTO",
            baseline.retransmission_waits, baseline.steady_responses
        ),
        // Counted, not inferred: the connection resent segments and these responses waited an RTO.
        proven: true,
        confidence: Confidence::Medium,
        evidence,
        proof: Vec::new(),
        fix_summary: fixes::RETRANSMISSION_SUMMARY.into(),
        fix: fixes::retransmission(),
    })
}

/// Too many baseline requests failed: whatever the rest shows is no verdict.
fn unreliable_measurement(phase: &Phase, baseline: &PhaseSummary) -> Finding {
    let (errors, attempts) = (baseline.errors, baseline.attempts);
    let mut evidence = vec![
        Evidence::new("requests attempted", attempts as f64, "count"),
        Evidence::new("requests that failed", errors as f64, "count"),
        Evidence::new("share that failed", baseline.failed_fraction() * 100.0, "%"),
        Evidence::new("most failures allowed for a verdict", MAX_FAILED_SHARE * 100.0, "%"),
    ];
    for (kind, count) in &baseline.errors_by_kind {
        evidence.push(Evidence::new(format!("failed with {kind}"), *count as f64, "count"));
    }
    let why = match &baseline.most_common_error {
        Some(error) => format!(", {} of them {} (\"{}\")", error.count, error.kind, error.example),
        None => String::new(),
    };
    Finding {
        id: FindingId::UnreliableMeasurement,
        title: format!(
            "{errors} of {attempts} baseline requests failed{why}: too many failures for a verdict (more than {:.0} % \
             failed)",
            MAX_FAILED_SHARE * 100.0
        ),
        // Counted, not inferred: as sure as `connection-per-request`.
        proven: true,
        confidence: Confidence::High,
        evidence,
        proof: Vec::new(),
        fix_summary: phase
            .most_common_error_kind()
            .map_or(String::new(), |(kind, _)| fixes::failures_summary(kind)),
        fix: Vec::new(),
    }
}

/// `healthy`, for a target in which nothing was found: with the figures of its baseline, or
/// of the fresh connections a failed keep-alive baseline was judged on. `None` when nothing
/// answered (nothing can be called healthy).
pub(crate) fn healthy_of(observations: &Observations) -> Option<Finding> {
    let baseline = observations.baseline.summary();
    if baseline.responses == 0 {
        return None;
    }
    if !baseline.reliable {
        let judged = crate::closing::on_fresh_connections(observations)?;
        return Some(healthy(&judged.baseline.summary()));
    }
    Some(healthy(&baseline))
}

fn healthy(baseline: &PhaseSummary) -> Finding {
    // The same figures as the table's row, so the title never contradicts it.
    let pauses = if baseline.read_gap_p50_ms > 0.0 {
        format!(
            "median pause within a response {:.3} ms, none as long as a stall ({STALL_GAP_MS:.0} ms)",
            baseline.read_gap_p50_ms
        )
    } else {
        "no pause within responses".to_string()
    };
    let rtt = baseline.judged_rtt_ms();
    let title = if rtt > 0.0 {
        // Across a path, most of a healthy request is the network's: say how much.
        let share = (rtt / baseline.total_p50_ms.max(rtt) * 100.0).min(100.0);
        format!(
            "No TCP stall: the server answers in {:.2} ms; {rtt:.1} ms of each request ({share:.0} %) is the \
             network's round trip (median {:.3} ms per request, {pauses})",
            baseline.server_first_byte_p50_ms(),
            baseline.total_p50_ms
        )
    } else {
        format!(
            "No TCP stall: median {:.3} ms per request, first byte {:.3} ms, {pauses}",
            baseline.total_p50_ms, baseline.first_byte_p50_ms
        )
    };
    let mut evidence = vec![
        Evidence::new("median total", baseline.total_p50_ms, "ms"),
        Evidence::new("90th percentile total", baseline.total_p90_ms, "ms"),
        Evidence::new("median first byte", baseline.first_byte_p50_ms, "ms"),
        Evidence::new("responses that pause mid-response", baseline.stalled_fraction() * 100.0, "%"),
        Evidence::new("responses measured", baseline.steady_responses as f64, "count"),
    ];
    if rtt > 0.0 {
        evidence.push(Evidence::new("path round trip (client TCP_INFO min_rtt)", rtt, "ms"));
        evidence.push(Evidence::new(
            "median first byte less the round trip (the server's time)",
            baseline.server_first_byte_p50_ms(),
            "ms",
        ));
    }
    Finding {
        id: FindingId::Healthy,
        title,
        proven: true,
        confidence: if baseline.steady_responses >= 20 { Confidence::High } else { Confidence::Medium },
        evidence,
        proof: Vec::new(),
        fix_summary: "Nothing to fix.".into(),
        fix: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose;
    use crate::phase::RequestShape;
    use crate::phase::tests::{error, phase, response};

    const GET: RequestShape =
        RequestShape { has_body: false, baseline_split: false, baseline_nodelay: true, http2_streams: None };
    const POST: RequestShape =
        RequestShape { has_body: true, baseline_split: false, baseline_nodelay: true, http2_streams: None };

    fn keep_alive(first_byte_ms: f64, gap_ms: Option<f64>) -> Vec<nodelay_engine::ResponseRecord> {
        let mut responses = vec![response(0, 0.3, gap_ms.map(|_| 0.1))];
        responses
            .extend((1..30).map(|i| response(i, first_byte_ms, gap_ms.map(|g| g + f64::from(i % 3) * 0.2))));
        responses
    }

    fn observe(shape: RequestShape, baseline: Vec<nodelay_engine::ResponseRecord>) -> Observations {
        Observations {
            request: Some(shape),
            baseline: phase(None, baseline),
            experiments: Vec::new(),
            fix_trial: None,
            server_view: None,
            hold_probe: None,
            expect_probe: None,
            idle_probe: None,
            interrupted: false,
            linked_libraries: Vec::new(),
            ..Observations::default()
        }
    }

    fn ids(findings: &[Finding]) -> Vec<FindingId> {
        findings.iter().map(|f| f.id).collect()
    }

    /// A phase measured across a path of `rtt_ms` (its client socket's min_rtt).
    fn on_path(
        experiment: Option<Experiment>,
        rtt_ms: f64,
        responses: Vec<nodelay_engine::ResponseRecord>,
    ) -> Phase {
        let tcp_info = nodelay_tcp::TcpInfo {
            min_rtt_us: (rtt_ms * 1e3) as u32,
            rtt_us: (rtt_ms * 1e3) as u32,
            rcv_mss_bytes: 1448,
            ..Default::default()
        };
        Phase { tcp_info: Some(tcp_info), ..phase(experiment, responses) }
    }

    #[test]
    fn a_first_byte_late_with_cpu_work_is_cpu_bound_not_a_wait() {
        // Measured on a busy 2-core machine: a handler burning 2 ms answered in 14.8 ms, its
        // thread on a CPU 2.3 ms and waiting for one 12.3 ms of each request (30 of them).
        let mut observations = observe(GET, keep_alive(14.8, None));
        let thread = |on_cpu_us, waiting_for_cpu_us| nodelay_host::ThreadLoad {
            pid: 7,
            tid: 7,
            name: "python3".into(),
            on_cpu_us,
            waiting_for_cpu_us,
        };
        observations.server_view = Some(crate::server::tests::view(vec![thread(69_000, 369_000)], vec![]));
        assert_eq!(ids(&diagnose(&observations).findings), vec![FindingId::ServerCpuBound]);
        // A handler that sleeps 14 ms and works 2: the wait is its own, and said.
        observations.server_view = Some(crate::server::tests::view(vec![thread(69_000, 6_000)], vec![]));
        let found = ids(&diagnose(&observations).findings);
        assert!(found.contains(&FindingId::SlowFirstByte), "{found:?}");
    }

    #[test]
    fn across_a_path_the_round_trip_is_not_server_time() {
        // A 41 ms first byte on a 40 ms path: the server answers in 1 ms.
        let observations = Observations {
            baseline: on_path(None, 40.0, keep_alive(41.0, None)),
            ..observe(GET, Vec::new())
        };
        assert_eq!(next_experiment(&observations), None, "nothing to separate");
        let findings = diagnose(&observations).findings;
        assert_eq!(ids(&findings), vec![FindingId::Healthy]);
        assert!(
            findings[0].title.contains("the server answers in 1.0")
                && findings[0].title.contains("; 40.0 ms of each request"),
            "{}",
            findings[0].title
        );
        // 60 ms on the same path is 20 ms of the server's: slow, and said net of the path.
        let slow = Observations {
            baseline: on_path(None, 40.0, keep_alive(60.0, None)),
            ..observe(GET, Vec::new())
        };
        let finding = &diagnose(&slow).findings[0];
        assert_eq!(finding.id, FindingId::SlowFirstByte);
        assert!(
            finding.title.contains("takes 20.0 ms") && finding.title.contains("40.0 ms round trip"),
            "{}",
            finding.title
        );
        // The same 20 ms beside a 200 ms path is under a quarter of it: not what the user waits for.
        let far = Observations {
            baseline: on_path(None, 200.0, keep_alive(220.0, None)),
            ..observe(GET, Vec::new())
        };
        assert_eq!(ids(&diagnose(&far).findings), vec![FindingId::Healthy]);
        // On loopback (under 1 ms) nothing changes: 12 ms is slow.
        let local = Observations {
            baseline: on_path(None, 0.02, keep_alive(12.0, None)),
            ..observe(GET, Vec::new())
        };
        assert_eq!(ids(&diagnose(&local).findings)[0], FindingId::SlowFirstByte);
    }

    #[test]
    fn a_hold_of_one_round_trip_that_quick_acks_keep_is_server_nagle_round_trip() {
        // 10 ms path: the first part on time, the rest one round trip later, with and
        // without the client's quick ACKs (a client that ACKs at once either way).
        let mut observations = Observations {
            baseline: on_path(None, 10.0, keep_alive(10.4, Some(10.3))),
            ..observe(GET, Vec::new())
        };
        assert_eq!(next_experiment(&observations), Some(Experiment::QuickAck));
        observations.experiments.push(on_path(
            Some(Experiment::QuickAck),
            10.0,
            keep_alive(10.4, Some(10.5)),
        ));
        let findings = diagnose(&observations).findings;
        assert_eq!(findings[0].id, FindingId::ServerNagleRoundTrip, "{findings:#?}");
        assert!(findings[0].proven);
        assert!(
            findings[0].fix_summary.contains("saves one round trip, 10.5 ms of"),
            "{}",
            findings[0].fix_summary
        );
        // A pause that does not keep time with the round trip under quick ACKs claims nothing.
        let mut observations = Observations {
            baseline: on_path(None, 10.0, keep_alive(10.4, Some(10.3))),
            ..observe(GET, Vec::new())
        };
        observations.experiments.push(on_path(
            Some(Experiment::QuickAck),
            10.0,
            keep_alive(10.4, Some(21.0)),
        ));
        let finding = &diagnose(&observations).findings[0];
        assert_eq!(finding.id, FindingId::SlowResponseBody);
        assert!(!finding.proven);
        // Without the experiment (the budget ran out), it says so.
        let untested = Observations {
            baseline: on_path(None, 10.0, keep_alive(10.4, Some(10.3))),
            ..observe(GET, Vec::new())
        };
        let finding = &diagnose(&untested).findings[0];
        assert_eq!(finding.id, FindingId::SlowResponseBody);
        assert!(finding.title.ends_with("(client TCP_QUICKACK) did not run"), "{}", finding.title);
    }

    #[test]
    fn under_a_millisecond_a_minority_of_pauses_is_no_held_response() {
        // 0.6 ms path: a TCP_NODELAY server on a busy machine pauses 0.35 ms in 9 of 30
        // responses, and as often with quick ACKs. Scheduling, not an ACK's wait.
        let some_paused = |experiment| {
            let mut responses = keep_alive(0.7, None);
            for (sequence, paused) in responses.iter_mut().enumerate().skip(1).step_by(3) {
                *paused = response(sequence as u32, 0.7, Some(0.35));
            }
            on_path(experiment, 0.6, responses)
        };
        let mut observations = Observations { baseline: some_paused(None), ..observe(GET, Vec::new()) };
        observations.experiments.push(some_paused(Some(Experiment::QuickAck)));
        let findings = diagnose(&observations).findings;
        assert!(
            !findings
                .iter()
                .any(|f| matches!(f.id, FindingId::ServerNagleRoundTrip | FindingId::SlowResponseBody)),
            "{findings:#?}"
        );
        // Held for an ACK, nearly every response pauses one round trip: still proven.
        let mut observations = Observations {
            baseline: on_path(None, 0.6, keep_alive(0.7, Some(0.6))),
            ..observe(GET, Vec::new())
        };
        observations.experiments.push(on_path(Some(Experiment::QuickAck), 0.6, keep_alive(0.7, Some(0.62))));
        let findings = diagnose(&observations).findings;
        assert_eq!(findings[0].id, FindingId::ServerNagleRoundTrip, "{findings:#?}");
        assert!(findings[0].proven);
    }

    #[test]
    fn across_a_path_a_delayed_ack_stall_is_its_timer_plus_a_round_trip() {
        // 40 ms path: 83 ms pauses (42 ms ACK delay + 41 ms round trip); quick ACKs leave 41 ms.
        let mut observations = Observations {
            baseline: on_path(None, 40.5, keep_alive(41.0, Some(83.0))),
            ..observe(GET, Vec::new())
        };
        observations.experiments.push(on_path(
            Some(Experiment::QuickAck),
            40.5,
            keep_alive(41.0, Some(41.0)),
        ));
        let findings = diagnose(&observations).findings;
        assert_eq!(ids(&findings), vec![FindingId::ServerNagleDelayedAck], "{findings:#?}");
        let finding = &findings[0];
        assert!(finding.proven, "the quick ACKs removed the delay: {:?}", finding.proof);
        assert!(finding.title.contains("41 ms its round trip"), "{}", finding.title);
        assert!(
            finding.fix_summary.contains("one round trip (41.2 ms) even for a client that ACKs at once"),
            "{}",
            finding.fix_summary
        );
    }

    #[test]
    fn a_split_writing_client_across_a_path_waits_one_round_trip_for_a_quick_server() {
        // 10 ms path, a server that ACKs the head at once: the pieces cost one round trip.
        let mut observations = Observations {
            baseline: on_path(None, 10.0, keep_alive(10.5, None)),
            ..observe(POST, Vec::new())
        };
        assert_eq!(next_experiment(&observations), Some(Experiment::SplitRequestNagle));
        observations.experiments.push(on_path(
            Some(Experiment::SplitRequestNagle),
            10.0,
            keep_alive(20.8, None),
        ));
        assert_eq!(next_experiment(&observations), Some(Experiment::SplitRequestNoDelay));
        observations.experiments.push(on_path(
            Some(Experiment::SplitRequestNoDelay),
            10.0,
            keep_alive(10.6, None),
        ));
        let findings = diagnose(&observations).findings;
        assert_eq!(findings[0].id, FindingId::ClientNagleRoundTrip, "{findings:#?}");
        assert!(findings[0].proven && findings[0].proof[0].removed);
        assert!(
            findings[0].fix_summary.contains("saves one round trip, 10.3 ms"),
            "{}",
            findings[0].fix_summary
        );
        // The same pieces cost nothing on a server whose first byte does not move.
        let mut fine = Observations {
            baseline: on_path(None, 10.0, keep_alive(10.5, None)),
            ..observe(POST, Vec::new())
        };
        fine.experiments.push(on_path(Some(Experiment::SplitRequestNagle), 10.0, keep_alive(10.6, None)));
        assert_eq!(next_experiment(&fine), None);
        assert_eq!(ids(&diagnose(&fine).findings), vec![FindingId::Healthy]);
    }

    #[test]
    fn large_responses_cost_round_trips_on_fresh_and_idle_connections() {
        // 200 KB at 40 ms: one flight warm, four more round trips fresh, three after idle.
        let large = |experiment, first_byte: f64, total: f64, fresh: bool| {
            let mut responses = keep_alive(first_byte, Some(total - first_byte));
            for r in &mut responses {
                r.response_bytes = 200_000;
                r.read_chunks = 40;
                if fresh {
                    r.sequence_on_connection = 0;
                    r.connect = Some(std::time::Duration::from_millis(41));
                }
            }
            on_path(experiment, 40.5, responses)
        };
        let mut observations =
            Observations { baseline: large(None, 41.0, 42.0, false), ..observe(GET, Vec::new()) };
        assert_eq!(next_experiment(&observations), Some(Experiment::NewConnectionPerRequest));
        observations.experiments.push(large(Some(Experiment::NewConnectionPerRequest), 82.0, 245.0, true));
        assert_eq!(next_experiment(&observations), Some(Experiment::AfterIdle));
        observations.experiments.push(large(Some(Experiment::AfterIdle), 41.0, 164.0, false));
        // The baseline's client keeps its connection alive and busy: it pays neither, so the
        // verdict is healthy and what a fresh or idle connection would cost is a note.
        assert_eq!(ids(&diagnose(&observations).findings), vec![FindingId::Healthy]);
        let notes = crate::window::window_notes(&observations);
        let note_ids: Vec<FindingId> = notes.iter().map(|n| n.id).collect();
        assert_eq!(note_ids, vec![FindingId::InitialWindowLimited, FindingId::SlowStartAfterIdle]);
        assert!(notes[0].title.contains("4 more round trips"), "{}", notes[0].title);
        assert!(notes[0].title.contains("as this client does"), "{}", notes[0].title);
        assert!(notes[1].title.contains("3 more round trips"), "{}", notes[1].title);
        let note_ids = |observations: &Observations| -> Vec<FindingId> {
            crate::window::window_notes(observations).iter().map(|n| n.id).collect()
        };
        // A sender that keeps its window (BBR, or the sysctl off) shows nothing after idle.
        observations.experiments[1] = large(Some(Experiment::AfterIdle), 41.0, 43.0, false);
        assert_eq!(note_ids(&observations), vec![FindingId::InitialWindowLimited]);
        // Nor one round trip more, where a restart from 10 segments costs three: a path that
        // held a flight once (a busy machine's forwarder) measured 9 ms at 10 ms.
        observations.experiments[1] = large(Some(Experiment::AfterIdle), 41.0, 82.0, false);
        assert_eq!(note_ids(&observations), vec![FindingId::InitialWindowLimited]);

        // A workload of a connection per request pays the window on every response: a finding,
        // shown by the response's own time from first byte to last (four round trips).
        let paying = Observations { baseline: large(None, 82.0, 245.0, true), ..observe(GET, Vec::new()) };
        let findings = diagnose(&paying).findings;
        let limited = findings.iter().find(|f| f.id == FindingId::InitialWindowLimited).expect("the finding");
        assert!(limited.title.contains("(4 round trips)"), "{}", limited.title);
        assert_eq!((limited.proven, limited.confidence), (false, Confidence::High));
        assert!(crate::window::window_notes(&paying).is_empty());
        // Its responses all in one flight (a window already open, or a small one): nothing.
        let one_flight = Observations { baseline: large(None, 82.0, 84.0, true), ..observe(GET, Vec::new()) };
        assert!(!ids(&diagnose(&one_flight).findings).contains(&FindingId::InitialWindowLimited));
    }

    #[test]
    fn retransmission_timeouts_are_counted_apart_from_stalls() {
        // 10 ms path, 2 % loss: three of 30 responses waited an RTO on a connection that
        // resent three segments. Not stalls: the quick ACKs still removed the delayed-ACK stall.
        let lossy = |experiment, gap: f64, resent: u32| {
            let mut responses = keep_alive(10.4, Some(gap));
            for r in responses.iter_mut().skip(5).step_by(10) {
                r.max_read_gap = std::time::Duration::from_millis(230);
                r.total = r.first_byte + r.max_read_gap;
            }
            let mut phase = on_path(experiment, 10.0, responses);
            phase.tcp_info.as_mut().unwrap().total_retransmits = resent;
            phase
        };
        let mut observations = Observations { baseline: lossy(None, 52.5, 3), ..observe(GET, Vec::new()) };
        observations.experiments.push(lossy(Some(Experiment::QuickAck), 10.4, 3));
        let summary = observations.experiments[0].summary();
        assert_eq!((summary.stalled, summary.retransmission_waits), (0, 3));
        let findings = diagnose(&observations).findings;
        assert_eq!(ids(&findings), vec![FindingId::ServerNagleDelayedAck, FindingId::RetransmissionTimeout]);
        assert!(findings[0].proven);
        assert!(
            findings[1].title.starts_with("3 of 29 responses waited a retransmission timeout"),
            "{}",
            findings[1].title
        );
        // The same long pauses on a connection that resent nothing are stalls, not losses.
        let clean = lossy(Some(Experiment::QuickAck), 10.4, 0).summary();
        assert_eq!((clean.stalled, clean.retransmission_waits), (3, 0));
    }

    #[test]
    fn a_stall_whose_experiment_never_ran_claims_nothing() {
        // The budget left no time for client TCP_QUICKACK: nothing tells Nagle from a slow server.
        let observations = observe(GET, keep_alive(0.2, Some(43.5)));
        let findings = diagnose(&observations).findings;
        assert_eq!(ids(&findings), vec![FindingId::SlowResponseBody]);
        let finding = &findings[0];
        assert!(!finding.proven && finding.confidence == Confidence::Low);
        assert!(finding.title.contains("did not run: the budget was too small"), "{}", finding.title);
        assert!(!finding.title.contains("removes it"), "{}", finding.title);
        assert!(finding.fix_summary.contains("larger --budget"), "{}", finding.fix_summary);
        // Stopped by Ctrl-C instead: said so, and no advice about the budget.
        let interrupted = Observations { interrupted: true, ..observe(GET, keep_alive(0.2, Some(43.5))) };
        let finding = &diagnose(&interrupted).findings[0];
        assert!(
            finding.title.ends_with("did not run: the run was interrupted (Ctrl-C)"),
            "{}",
            finding.title
        );
        assert!(!finding.fix_summary.contains("--budget"), "{}", finding.fix_summary);
    }

    #[test]
    fn a_steady_50_ms_handler_is_not_called_a_timer_but_44_ms_is() {
        for (first_byte, timer_like) in [(50.2, false), (44.0, true)] {
            let mut observations = observe(GET, keep_alive(first_byte, None));
            observations.experiments.push(phase(Some(Experiment::QuickAck), keep_alive(first_byte, None)));
            let findings = diagnose(&observations).findings;
            let finding =
                findings.iter().find(|f| f.id == FindingId::SlowFirstByte).expect("slow-first-byte");
            assert_eq!(
                finding.title.contains("delayed-ACK timer"),
                timer_like,
                "{first_byte}: {}",
                finding.title
            );
        }
    }

    #[test]
    fn healthy_quotes_the_pause_the_table_shows() {
        let findings = diagnose(&observe(GET, keep_alive(0.2, Some(5.0)))).findings;
        assert_eq!(ids(&findings), vec![FindingId::Healthy]);
        let title = &findings[0].title;
        assert!(title.contains("median pause within a response 5."), "{title}");
        assert!(!title.contains("no pause"), "{title}");
    }

    #[test]
    fn server_stall_removed_by_quickack_is_server_nagle() {
        let mut observations = observe(GET, keep_alive(0.2, Some(43.5)));
        assert_eq!(next_experiment(&observations), Some(Experiment::QuickAck));
        observations.experiments.push(phase(Some(Experiment::QuickAck), keep_alive(0.1, None)));
        assert_eq!(next_experiment(&observations), Some(Experiment::NewConnectionPerRequest));
        let fresh = (0..30).map(|_| response(0, 0.3, None)).collect();
        observations.experiments.push(phase(Some(Experiment::NewConnectionPerRequest), fresh));
        assert_eq!(next_experiment(&observations), None);
        let findings = diagnose(&observations).findings;
        assert_eq!(ids(&findings), vec![FindingId::ServerNagleDelayedAck]);
        let finding = &findings[0];
        assert!(finding.proven);
        assert_eq!(finding.confidence, Confidence::High);
        assert!(finding.proof.iter().all(|p| p.removed), "{:?}", finding.proof);
        assert!(finding.evidence.iter().any(|e| e.what.contains("Linux/FreeBSD")), "{:?}", finding.evidence);
        assert!(!finding.fix.is_empty());
    }

    #[test]
    fn stall_that_quickack_does_not_remove_is_not_called_nagle() {
        let mut observations = observe(GET, keep_alive(0.2, Some(43.5)));
        observations.experiments.push(phase(Some(Experiment::QuickAck), keep_alive(0.2, Some(43.0))));
        let findings = diagnose(&observations).findings;
        assert_eq!(ids(&findings), vec![FindingId::SlowResponseBody]);
        assert!(!findings[0].proven);
    }

    #[test]
    fn slow_handler_is_slow_first_byte_not_nagle() {
        let mut observations = observe(GET, keep_alive(40.3, None));
        assert_eq!(next_experiment(&observations), Some(Experiment::QuickAck));
        observations.experiments.push(phase(Some(Experiment::QuickAck), keep_alive(40.2, None)));
        observations
            .experiments
            .push(phase(Some(Experiment::NewConnectionPerRequest), keep_alive(40.4, None)));
        let findings = diagnose(&observations).findings;
        assert_eq!(ids(&findings), vec![FindingId::SlowFirstByte]);
        assert!(findings[0].proven);
        assert!(findings[0].title.contains("upstream"), "a steady 40 ms first byte hints at a stalled hop");
    }

    #[test]
    fn random_delays_are_slow_first_byte_without_timer_hint() {
        let mut responses = vec![response(0, 5.0, None)];
        responses.extend((1..30).map(|i| response(i, f64::from(i * 37 % 80) + 2.0, None)));
        let mut observations = observe(GET, responses.clone());
        observations.experiments.push(phase(Some(Experiment::QuickAck), responses.clone()));
        observations.experiments.push(phase(Some(Experiment::NewConnectionPerRequest), responses));
        let findings = diagnose(&observations).findings;
        assert_eq!(ids(&findings), vec![FindingId::SlowFirstByte]);
        assert!(!findings[0].title.contains("upstream"));
    }

    #[test]
    fn healthy_server_needs_no_experiment() {
        let observations = observe(GET, keep_alive(0.1, None));
        assert_eq!(next_experiment(&observations), None);
        assert_eq!(ids(&diagnose(&observations).findings), vec![FindingId::Healthy]);
    }

    #[test]
    fn closing_server_is_connection_per_request() {
        let fresh = (0..20).map(|_| response(0, 0.2, None)).collect();
        let observations = observe(GET, fresh);
        assert_eq!(next_experiment(&observations), None);
        assert_eq!(ids(&diagnose(&observations).findings), vec![FindingId::ConnectionPerRequest]);
    }

    #[test]
    fn post_checks_split_writing_clients_and_proves_with_nodelay() {
        let mut observations = observe(POST, keep_alive(0.1, None));
        assert_eq!(next_experiment(&observations), Some(Experiment::SplitRequestNagle));
        observations.experiments.push(phase(Some(Experiment::SplitRequestNagle), keep_alive(41.0, None)));
        assert_eq!(next_experiment(&observations), Some(Experiment::SplitRequestNoDelay));
        observations.experiments.push(phase(Some(Experiment::SplitRequestNoDelay), keep_alive(0.1, None)));
        assert_eq!(next_experiment(&observations), None);
        let findings = diagnose(&observations).findings;
        assert_eq!(ids(&findings), vec![FindingId::ClientNagleDelayedAck]);
        assert!(findings[0].title.starts_with("Clients that write"));
    }

    #[test]
    fn a_client_stall_on_top_of_a_server_stall_is_judged_by_its_first_byte() {
        // Both sides Nagle: the split request's total is two timers, 88 ms; TCP_NODELAY on the
        // client removes one, leaving the server's 44 ms, a hair over half of 88.
        let mut observations = observe(POST, keep_alive(0.6, Some(43.4)));
        observations.experiments.push(phase(Some(Experiment::QuickAck), keep_alive(0.6, None)));
        observations
            .experiments
            .push(phase(Some(Experiment::SplitRequestNagle), keep_alive(44.2, Some(43.8))));
        observations
            .experiments
            .push(phase(Some(Experiment::SplitRequestNoDelay), keep_alive(0.6, Some(43.5))));
        let findings = diagnose(&observations).findings;
        let client = findings.iter().find(|f| f.id == FindingId::ClientNagleDelayedAck);
        let proof = &client.unwrap_or_else(|| panic!("{findings:#?}")).proof[0];
        assert!(proof.removed && proof.experiment_p50_ms > proof.baseline_p50_ms / 2.0, "{proof:#?}");
        assert!(ids(&findings).contains(&FindingId::ServerNagleDelayedAck), "{findings:#?}");
    }

    #[test]
    fn post_against_a_quick_acking_server_stays_healthy() {
        let mut observations = observe(POST, keep_alive(0.1, None));
        observations.experiments.push(phase(Some(Experiment::SplitRequestNagle), keep_alive(0.2, None)));
        assert_eq!(next_experiment(&observations), None);
        assert_eq!(ids(&diagnose(&observations).findings), vec![FindingId::Healthy]);
    }

    #[test]
    fn user_split_client_is_client_nagle_when_one_write_fixes_it() {
        let shape = RequestShape {
            has_body: true,
            baseline_split: true,
            baseline_nodelay: false,
            http2_streams: None,
        };
        let mut observations = observe(shape, keep_alive(41.0, None));
        observations.experiments.push(phase(Some(Experiment::QuickAck), keep_alive(41.0, None)));
        observations
            .experiments
            .push(phase(Some(Experiment::NewConnectionPerRequest), keep_alive(0.3, None)));
        assert_eq!(next_experiment(&observations), Some(Experiment::SplitRequestNoDelay));
        observations.experiments.push(phase(Some(Experiment::SplitRequestNoDelay), keep_alive(0.1, None)));
        assert_eq!(next_experiment(&observations), Some(Experiment::SingleWrite));
        observations.experiments.push(phase(Some(Experiment::SingleWrite), keep_alive(0.1, None)));
        let findings = diagnose(&observations).findings;
        assert_eq!(ids(&findings), vec![FindingId::ClientNagleDelayedAck], "{findings:#?}");
        assert!(findings[0].title.starts_with("The client's request waits"));
    }

    fn failing(mut phase: Phase, failures: usize) -> Phase {
        let message = "38 bytes after the end of the response";
        phase.errors =
            (0..failures).map(|_| error(nodelay_engine::ErrorKind::MalformedResponse, message)).collect();
        phase
    }

    #[test]
    fn a_baseline_with_too_many_failures_gets_no_verdict() {
        // What an unsolicited second response does: every other request fails, and the rest
        // look like a server that closes every connection.
        let fresh = (0..20).map(|_| response(0, 0.2, None)).collect();
        let observations = Observations {
            request: Some(GET),
            baseline: failing(phase(None, fresh), 20),
            experiments: Vec::new(),
            fix_trial: None,
            server_view: None,
            hold_probe: None,
            expect_probe: None,
            idle_probe: None,
            interrupted: false,
            linked_libraries: Vec::new(),
            ..Observations::default()
        };
        assert_eq!(next_experiment(&observations), None, "no experiment rescues it");
        let findings = diagnose(&observations).findings;
        assert_eq!(ids(&findings), vec![FindingId::UnreliableMeasurement]);
        let finding = &findings[0];
        assert!(
            finding.title.starts_with("20 of 40 baseline requests failed, 20 of them malformed_response"),
            "{}",
            finding.title
        );
        assert!(finding.title.contains("too many failures for a verdict"), "{}", finding.title);
        assert!(finding.fix_summary.contains("frames"), "{}", finding.fix_summary);
        assert!(
            finding.evidence.iter().any(|e| e.what == "failed with malformed_response" && e.value == 20.0)
        );
    }

    #[test]
    fn a_few_failures_leave_the_verdict_standing() {
        let observations = Observations {
            request: Some(GET),
            baseline: failing(phase(None, keep_alive(0.1, None)), 3),
            experiments: Vec::new(),
            fix_trial: None,
            server_view: None,
            hold_probe: None,
            expect_probe: None,
            idle_probe: None,
            interrupted: false,
            linked_libraries: Vec::new(),
            ..Observations::default()
        };
        assert_eq!(ids(&diagnose(&observations).findings), vec![FindingId::Healthy]);
    }

    #[test]
    fn an_experiment_with_too_many_failures_is_no_proof() {
        let mut observations = observe(GET, keep_alive(0.2, Some(43.5)));
        // Quick ACKs "remove" the stall from the few responses that came back.
        let quickack = failing(phase(Some(Experiment::QuickAck), keep_alive(0.1, None)), 10);
        observations.experiments.push(quickack);
        assert_eq!(next_experiment(&observations), Some(Experiment::NewConnectionPerRequest), "it was run");
        let findings = diagnose(&observations).findings;
        assert_eq!(ids(&findings), vec![FindingId::SlowResponseBody], "{findings:#?}");
        assert!(!findings[0].proven);
        assert!(findings[0].proof.is_empty(), "{:?}", findings[0].proof);
        // The same experiment with failures within the share proves it.
        observations.experiments[0] = failing(phase(Some(Experiment::QuickAck), keep_alive(0.1, None)), 3);
        assert_eq!(ids(&diagnose(&observations).findings), vec![FindingId::ServerNagleDelayedAck]);
    }

    #[test]
    fn nothing_measured_means_no_findings() {
        let observations = Observations { request: Some(GET), ..Observations::default() };
        assert!(diagnose(&observations).findings.is_empty());
        assert_eq!(next_experiment(&observations), None);
    }
}
