//! One diagnosis within its budget: the keep-alive baseline (its first connection tells
//! whether the server is reachable), the experiments the rules ask for while the budget
//! lasts, the probes, the fix tried, and the hops behind the server followed, each from the
//! budget left; a stop request ends the step running and the report says so.

use crate::chain::{Chain, MAX_HOPS, MAX_UPSTREAMS};
use crate::phases::{
    AFTER_IDLE_REQUESTS, BASELINE_SHARE, EXPECT_PROBE_WAIT, EXPERIMENT_SHARE, HOLD_PROBE_WAIT,
    IDLE_PROBE_MARGIN, MIN_IDLE_WAIT, MIN_PHASE, baseline_requests, experiment_config,
    http10_without_keep_alive, idle_gap, run_phase, run_phase_reaching,
};
use crate::progress::Progress;
use crate::try_fix::{FixPolicy, try_fix, worth_trying};
use anyhow::{Context, Result, bail};
use nodelay_diagnose::{
    Experiment, FindingId, HopDiagnosis, Observations, Phase, RequestShape, closes_after_each_response,
    diagnose, keepalive_idle_close, next_experiment, order_fixes, proxy_hop_stall,
};
use nodelay_engine::{
    EngineConfig, Framing, SocketOptions, probe_expect_continue, probe_hold, probe_idle, with_expect_continue,
};
use nodelay_host::{ServerView, Upstream};
use nodelay_load::{Watching, Workload, build_workload, is_this_machine, stop, watch_server};
use nodelay_report::{DoctorReport, HopReport, TlsNegotiated, TryFixReport, format_seconds, plural};
use nodelay_tcp::time::later;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The baseline's connection never opened before its share of the budget ran out (a server
/// that does not accept): the doctor names its budget when it reports this.
#[derive(Debug)]
pub(crate) struct NeverConnected {
    address: SocketAddr,
    waited: Duration,
}

impl std::fmt::Display for NeverConnected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot connect to {}: no answer to the connection within {}",
            self.address,
            format_seconds(self.waited.as_secs_f64())
        )
    }
}

impl std::error::Error for NeverConnected {}

/// Adds the budget to an error that the budget caused.
pub(crate) fn with_budget(error: anyhow::Error, budget: Duration) -> anyhow::Error {
    if error.chain().any(|cause| cause.is::<NeverConnected>()) {
        error.context(format!(
            "the doctor's {} budget ran out while connecting",
            format_seconds(budget.as_secs_f64())
        ))
    } else {
        error
    }
}

/// The diagnosis, ending by `started + budget`: the budget may have begun before (the
/// probe), and each phase gets its share of the budget or what is left, the smaller. A
/// Ctrl-C stops the phase running; the report then rests on what was measured and says so.
pub(crate) fn examine_within(
    workload: &Workload,
    started: Instant,
    budget: Duration,
    timeout: Duration,
    fix: FixPolicy,
    progress: &mut dyn Progress,
    chain: &Chain,
) -> Result<DoctorReport> {
    let deadline = later(started, budget);
    let left = || deadline.saturating_duration_since(Instant::now());
    let request = workload.requests.first().context("no request to diagnose")?;
    let shape = RequestShape {
        has_body: request.head_bytes.is_some(),
        baseline_split: !request.spec.write_split.is_empty(),
        baseline_nodelay: workload.client_nodelay,
        http2_streams: workload.http2.map(|h2| h2.streams_per_connection as u32),
    };
    // The server's side is read over the baseline: its CPU per request and the upstreams the
    // baseline's requests made it use. Started before the baseline is sized, so the time its
    // start takes (a scan of /proc) comes out of the baseline's share, not past the budget.
    let watching = if left() >= MIN_PHASE * 3 {
        // Steady: the verdicts weigh each thread's CPU, to the end of the baseline.
        watch_server(workload.address, &chain.view, nodelay_host::SamplerPace::Steady)
    } else {
        Watching::Off
    };
    let connections = chain.connections.max(1);
    let baseline_config = EngineConfig {
        requests: vec![request.spec.clone()],
        framing: workload.framing.clone(),
        connections: connections as usize,
        // Several connections run on until the share of the budget ends (or this many
        // requests): a connection that waits a second to open must have the time to.
        max_requests: Some(baseline_requests(
            connections as usize,
            workload.http2.map(|h2| h2.streams_per_connection),
        )),
        duration: Some(budget.mul_f64(BASELINE_SHARE).min(left())),
        timeout,
        // As long as a response may take, and never past the budget.
        connect_timeout: timeout.min(left()).max(Duration::from_millis(1)),
        socket: SocketOptions { nodelay: workload.client_nodelay, ..SocketOptions::default() },
        tls: workload.tls.clone(),
        http2: workload.http2,
        ..EngineConfig::new(workload.address, Vec::new())
    };
    let url = &workload.url;
    progress
        .phase(&format!("baseline: {}", nodelay_report::baseline_shape(connections, shape.http2_streams)));
    // The baseline's own first connection tells whether the server is reachable: no probe
    // connection is opened before it (servers and captures would see an empty one).
    let (baseline, reach) = run_phase_reaching(&baseline_config, None)?;
    // Each socket that sent a SYN left a connection record, a refused or timed-out one too.
    let (view_report, view) = watching.finish(baseline.responses.len() as u64, baseline.connections_opened);
    if let Some(why) = reach.unreachable {
        bail!("cannot connect to {}: {why}", workload.address);
    }
    if baseline.responses.is_empty() && baseline.errors.is_empty() && !reach.connected && !stop::requested() {
        let waited = baseline_config.duration.unwrap_or_default();
        return Err(anyhow::Error::new(NeverConnected { address: workload.address, waited }));
    }
    if baseline.responses.is_empty() && stop::requested() {
        bail!("could not measure {url}: interrupted (Ctrl-C) before any response arrived");
    }
    if baseline.responses.is_empty() {
        let suspect = baseline.errors.iter().any(|e| nodelay_load::looks_like_tls_refusal(e.kind));
        if let Some(hint) = nodelay_load::tls_hint(workload, suspect) {
            bail!("could not measure {url}: {hint}");
        }
        // Every experiment would wait as long for nothing: the doctor stops after the baseline's
        // share of the budget, and says so rather than "within the budget".
        let silent = || {
            let waited = format_seconds(baseline_config.duration.unwrap_or_default().as_secs_f64());
            format!(
                "no response arrived in the baseline's {waited} ({:.0} % of the budget): the server took the \
                 connection and answered nothing",
                BASELINE_SHARE * 100.0
            )
        };
        let why =
            baseline.errors.first().map_or_else(silent, |e| format!("{}: {}", e.kind.as_str(), e.message));
        bail!("could not measure {url}: no request succeeded ({why})");
    }
    let mut observations =
        Observations { request: Some(shape), baseline, server_view: view, ..Observations::default() };
    // What the server links names a C server's stack (libevent), for its fixes.
    observations.linked_libraries = observations
        .server_view
        .as_ref()
        .and_then(|view| view.processes.first())
        .map(|process| nodelay_host::linked_libraries(process.pid))
        .unwrap_or_default();
    let mut skipped = Vec::new();
    // A server that closed every keep-alive connection after one response without saying so
    // (every second request failed) is measured as its clients can use it: on fresh
    // connections, which the rules then judge in place of the failed baseline.
    if closes_after_each_response(&observations.baseline) && !stop::requested() && left() >= MIN_PHASE {
        let experiment = Experiment::NewConnectionPerRequest;
        let duration = left().min(budget.mul_f64(BASELINE_SHARE));
        let config = experiment_config(&baseline_config, request, experiment, duration, Duration::ZERO);
        progress.phase(&format!(
            "experiment: {} (the server closed each keep-alive connection after one response)",
            experiment.describe()
        ));
        observations.experiments.push(run_phase(&config, Some(experiment))?);
    }
    while let Some(experiment) = next_experiment(&observations) {
        if stop::requested() {
            break;
        }
        let left = left();
        if left < MIN_PHASE {
            skipped.push(experiment);
            // Record the skip so the planner moves on to what it would ask next.
            observations.experiments.push(Phase { experiment: Some(experiment), ..Phase::default() });
            continue;
        }
        let duration = left.min(budget.mul_f64(EXPERIMENT_SHARE));
        let gap = idle_gap(observations.baseline.tcp_info.as_ref());
        // The after-idle experiment is its gaps: as long as they take, from what is left.
        let duration = match experiment {
            Experiment::AfterIdle => left.min(gap * (AFTER_IDLE_REQUESTS as u32 + 1)),
            _ => duration,
        };
        let config = experiment_config(&baseline_config, request, experiment, duration, gap);
        progress.phase(&format!("experiment: {}", experiment.describe()));
        if experiment == Experiment::OneConnectionAtATime {
            // The baseline's last connections may still fill the accept queue: one request,
            // not counted, waits until the server has taken them, so the experiment's first
            // open does not meet the queue the baseline left (seen in CI on Node backlog 2).
            run_phase(&EngineConfig { max_requests: Some(1), ..config.clone() }, None)?;
        }
        observations.experiments.push(run_phase(&config, Some(experiment))?);
    }
    observations.experiments.retain(|phase| !phase.responses.is_empty() || !phase.errors.is_empty());
    // A request with a body: how does the server answer a client that sends Expect:
    // 100-continue and holds the body back? A silent server costs such a client its timer.
    if let (Framing::Http { .. }, Some(head_bytes)) = (&workload.framing, request.head_bytes)
        && !stop::requested()
        // A plain-TCP probe, as the HTTP/1.0 one below, and HTTP/1.1's.
        && workload.tls.is_none()
        && workload.http2.is_none()
        && left() >= EXPECT_PROBE_WAIT * 2
        && let Some((head, body)) = with_expect_continue(&request.spec.bytes, head_bytes)
    {
        progress.phase("probe: a request with Expect: 100-continue, the body held back");
        observations.expect_probe = probe_expect_continue(workload.address, &head, &body, EXPECT_PROBE_WAIT);
    }
    // Does the server close after answering an HTTP/1.0 client that did not ask to keep the
    // connection? A healthy one does at once, so this costs a round trip; one that holds
    // it costs at most HOLD_PROBE_WAIT.
    if let (Framing::Http { .. }, Some(http10)) =
        (&workload.framing, http10_without_keep_alive(&request.spec.bytes))
        && !stop::requested()
        // A plain-TCP probe: over TLS the server would only see a bad handshake.
        && workload.tls.is_none()
        && workload.http2.is_none()
        && left() >= HOLD_PROBE_WAIT * 2
    {
        progress.phase("probe: an HTTP/1.0 request without keep-alive, does the server close?");
        observations.hold_probe = probe_hold(workload.address, &http10, HOLD_PROBE_WAIT);
    }
    observations.interrupted = stop::requested();
    let mut findings = diagnose(&observations);
    let try_fix_report = match fix {
        FixPolicy::Describe => None,
        FixPolicy::Try { keep } => Some(match worth_trying(&findings) {
            Err(why) => TryFixReport::not_applied(why.into(), Vec::new()),
            Ok(()) if stop::requested() => {
                TryFixReport::not_applied("not applied: interrupted".into(), Vec::new())
            }
            Ok(()) if left() < MIN_PHASE => TryFixReport::not_applied(
                "not applied: the budget left no time to measure with the fix; raise --budget".into(),
                Vec::new(),
            ),
            Ok(()) => {
                progress.phase("try-fix: TCP_NODELAY on the server's sockets, measuring again");
                let config = EngineConfig {
                    duration: Some(left().min(budget.mul_f64(BASELINE_SHARE))),
                    ..baseline_config.clone()
                };
                let (trial, report) = try_fix(&config, keep)?;
                observations.fix_trial = trial;
                // The trial adds its proof to the findings.
                findings = diagnose(&observations);
                report
            }
        }),
    };
    let hops = follow_hops(chain, observations.server_view.as_ref(), deadline, timeout, progress);
    let hop_diagnoses: Vec<HopDiagnosis> = hops.iter().filter_map(HopReport::diagnosis).collect();
    if let Some(hop_stall) = proxy_hop_stall(&observations.baseline.summary(), &hop_diagnoses) {
        // The hop explains what the front could only describe.
        findings.retain(|f| {
            !matches!(f.id, FindingId::SlowFirstByte | FindingId::SlowResponseBody | FindingId::Healthy)
        });
        findings.insert(0, hop_stall);
    }
    // A fix that would expose a stall proven on a hop comes after the hop's.
    order_fixes(&mut findings, &hop_diagnoses);
    // The fixes name the port the server listens on, not a placeholder.
    let port = format!(":{}", workload.address.port());
    for finding in &mut findings {
        finding.fix_summary = finding.fix_summary.replace(":PORT", &port);
    }
    // An error page is looked at as sent: the method, headers and body of the run.
    for finding in findings.iter_mut().filter(|f| f.id == FindingId::ErrorResponses) {
        let curl = nodelay_load::curl_command(url, &chain.request);
        finding.fix_summary.push_str(&format!(" See one: `{curl}`"));
    }
    // Last, as it may wait for all the budget left: how long does an idle connection live?
    if chain.idle_probe
        && matches!(workload.framing, Framing::Http { .. })
        && workload.tls.is_none()
        && workload.http2.is_none()
        && !stop::requested()
        && left() >= MIN_IDLE_WAIT
    {
        progress
            .phase("probe: one keep-alive request, then the connection left idle until the server closes it");
        let wait = left().saturating_sub(IDLE_PROBE_MARGIN);
        observations.idle_probe = probe_idle(workload.address, &request.spec.bytes, wait);
        let view = observations.server_view.as_ref();
        if let Some(finding) =
            observations.idle_probe.as_ref().and_then(|probe| keepalive_idle_close(probe, view))
        {
            findings.retain(|f| f.id != FindingId::Healthy);
            findings.push(finding);
        }
    }
    let mut report = DoctorReport::new(
        url.to_string(),
        workload.address.to_string(),
        budget,
        started.elapsed(),
        &observations,
        findings,
        &skipped,
    );
    report.notes = nodelay_diagnose::window_notes(&observations);
    report.notes.extend(nodelay_diagnose::unseen_hops_note(&observations));
    report.interrupted = stop::requested();
    report.tls = workload.tls.as_ref().map(|client| TlsNegotiated::of(client, observations.baseline.tls));
    report.try_fix = try_fix_report;
    report.server_view = view_report;
    report.hops = hops;
    Ok(report)
}

/// Diagnoses each upstream the server used during the baseline, with an equal share of what
/// is left of the budget; a hop that cannot be diagnosed says why.
fn follow_hops(
    chain: &Chain,
    view: Option<&ServerView>,
    deadline: Instant,
    timeout: Duration,
    progress: &mut dyn Progress,
) -> Vec<HopReport> {
    let Some(view) = view else { return Vec::new() };
    if chain.depth() >= MAX_HOPS {
        return Vec::new();
    }
    let upstreams: Vec<&Upstream> = view
        .upstreams
        .iter()
        .filter(|u| u.carried_traffic() && !chain.visited.contains(&u.destination))
        .take(MAX_UPSTREAMS)
        .collect();
    let mut hops = Vec::new();
    for (index, upstream) in upstreams.iter().enumerate() {
        let address = upstream.destination;
        let how_used = if upstream.opened > 0 {
            format!(
                "{} during the baseline",
                plural(upstream.opened as usize, "new connection", "new connections")
            )
        } else {
            format!("pooled connections ({} segments sent during the baseline)", upstream.pooled_segments_out)
        };
        let hop = |report: Option<DoctorReport>, error: Option<String>| HopReport {
            address: address.to_string(),
            how_used: how_used.clone(),
            report: report.map(Box::new),
            error,
        };
        let now = Instant::now();
        let share = deadline.saturating_duration_since(now).div_f64((upstreams.len() - index) as f64);
        if stop::requested() {
            hops.push(hop(None, Some("not diagnosed: interrupted".into())));
            continue;
        }
        if share < MIN_PHASE * 2 {
            hops.push(hop(
                None,
                Some("not diagnosed: the budget left no time for it; raise --budget".into()),
            ));
            continue;
        }
        if !is_this_machine(address) {
            // Requests go only to this machine's servers: a hop elsewhere is another
            // organisation's service as often as not.
            let why = "not followed: it is on another machine (the doctor sends requests only to this machine's \
                       servers); `nodelay proxy` in front of it times that leg";
            hops.push(hop(None, Some(why.into())));
            continue;
        }
        let next = chain.to(address);
        let diagnosed = build_workload(&next.target, &next.request, true).and_then(|workload| {
            progress.phase(&format!("following the chain: diagnosing the upstream {address}"));
            examine_within(&workload, now, share, timeout, FixPolicy::Describe, progress, &next)
        });
        hops.push(match diagnosed {
            Ok(report) => hop(Some(report), None),
            Err(error) => hop(None, Some(format!("{error:#}"))),
        });
    }
    hops
}
