//! `nodelay doctor`: a bounded diagnosis. Measures a keep-alive baseline on one connection,
//! runs the experiments the rules ask for while the budget lasts, and reports the findings;
//! for a scenario, each named request in turn. Every step, the connection probe included,
//! counts against the budget: the run ends within it plus about 0.1 s (README).

use crate::args::DoctorArgs;
use crate::args::{RequestArgs, ServerViewArgs};
use crate::exit::Outcome;
use crate::interrupt;
use crate::output;
use crate::runner::{DoctorProgress, PhaseProgress, run_engine, text_width};
use crate::server_view;
use crate::target::Target;
use crate::target::parse_target;
use crate::try_fix::{FixPolicy, try_fix, worth_trying};
use crate::workload::{Workload, WorkloadRequest, build_workload};
use anyhow::{Context, Result, bail};
use nodelay_diagnose::{
    Experiment, FindingId, HopDiagnosis, Observations, Phase, RequestShape, diagnose, keepalive_idle_close,
    next_experiment, proxy_hop_stall,
};
use nodelay_engine::{
    CollectingSink, EngineConfig, Framing, Selection, SocketOptions, later, probe_expect_continue,
    probe_hold, probe_idle, with_expect_continue,
};
use nodelay_host::{ServerView, Upstream};
use nodelay_report::{
    DoctorReport, DoctorScenarioReport, FittedText, HopReport, Json, NamedDoctorReport, Render,
    TlsNegotiated, TryFixReport, format_seconds, plural,
};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Enough steady responses for stable medians on one connection.
const BASELINE_REQUESTS: u64 = 40;
const EXPERIMENT_REQUESTS: u64 = 30;
/// With several connections (`-c`), at most this many requests per connection in a phase.
const PER_CONNECTION_REQUESTS: u64 = 100;
/// Shares of the budget: the baseline may use this much, each experiment this much.
const BASELINE_SHARE: f64 = 0.4;
const EXPERIMENT_SHARE: f64 = 0.2;
/// An experiment is not started with less time than this left.
const MIN_PHASE: Duration = Duration::from_millis(300);

pub fn doctor(args: &DoctorArgs) -> Result<Outcome> {
    if !nodelay_engine::KERNEL_TCP_FIGURES {
        bail!("nodelay doctor needs Linux: its experiments use TCP_QUICKACK and its evidence TCP_INFO");
    }
    // Every step from here counts against the budget: each phase, the baseline's first
    // connection included, gets at most what is left of it.
    let started = Instant::now();
    let deadline = later(started, args.budget);
    let target = parse_target(&args.url)?;
    let workload = build_workload(&target, &args.request, true)?;
    // No single wait may outlast the whole diagnosis.
    let timeout = args.timeout.min(args.budget);
    let progress = DoctorProgress::start(args.budget);
    let progress = progress.as_ref();
    if let Some(progress) = progress {
        progress.phase(&format!("connecting to {}", workload.address));
    }
    let text = FittedText::new(text_width());
    let html = output::create_output(args.html.as_deref(), "--html")?;
    let chain = Chain {
        idle_probe: args.idle_probe,
        ..Chain::start(&target, &args.request, &args.server_view, workload.address, args.connections)
    };
    let fix = if args.try_fix { FixPolicy::Try { keep: args.keep_fix } } else { FixPolicy::Describe };
    if !workload.is_scenario() {
        let whole = progress.map(DoctorProgress::whole);
        let report = examine_within(&workload, started, args.budget, timeout, fix, whole.as_ref(), &chain)
            .map_err(|error| with_budget(error, args.budget))?;
        if let Some(progress) = progress {
            progress.finish();
        }
        if let Some(output) = html {
            output.write(crate::html::page_of(&report)?.as_bytes())?;
        }
        output::stdout(&if args.json { Json.render(&report) } else { text.render(&report) })?;
        if report.is_unreliable() {
            bail!("could not measure {} reliably: {}", workload.url, failed_baseline(&report));
        }
        return Ok(if report.is_healthy() { Outcome::Success } else { Outcome::Findings });
    }
    // A scenario: each named request is diagnosed on its own, with an equal share of what is
    // left, so time one request does not use goes to the ones after it.
    let mut reports = Vec::new();
    for (index, request) in workload.requests.iter().enumerate() {
        let now = Instant::now();
        let share = deadline.saturating_duration_since(now).div_f64((workload.requests.len() - index) as f64);
        let single =
            Workload { requests: vec![request.clone()], selection: Selection::Sequence, ..workload.clone() };
        let name = &request.spec.name;
        let named = progress.map(|p| p.named(name));
        let report = match examine_within(&single, now, share, timeout, fix, named.as_ref(), &chain) {
            // Stopped before this request measured anything: report the ones before it.
            Err(_) if interrupt::interrupted() && !reports.is_empty() => break,
            result => result
                .with_context(|| format!("request '{name}'"))
                .map_err(|e| with_budget(e, args.budget))?,
        };
        let stop = report.interrupted;
        reports.push(NamedDoctorReport { name: name.clone(), report });
        if stop {
            break;
        }
    }
    if let Some(progress) = progress {
        progress.finish();
    }
    let report = DoctorScenarioReport::new(workload.url.clone(), reports);
    if let Some(output) = html {
        output.write(crate::html::page_of(&report)?.as_bytes())?;
    }
    output::stdout(&if args.json { Json.render(&report) } else { text.render(&report) })?;
    if report.is_unreliable() {
        let failed: Vec<String> = report
            .requests
            .iter()
            .filter(|named| named.report.is_unreliable())
            .map(|named| format!("'{}': {}", named.name, failed_baseline(&named.report)))
            .collect();
        bail!("could not measure {} reliably: {}", workload.url, failed.join("; "));
    }
    Ok(if report.is_healthy() { Outcome::Success } else { Outcome::Findings })
}

/// "14 of 40 baseline requests failed, 12 of them malformed_response", for the one-line
/// error of an unreliable report.
fn failed_baseline(report: &DoctorReport) -> String {
    let Some(baseline) = report.phases.first().map(|phase| &phase.summary) else { return String::new() };
    let most_common = baseline
        .most_common_error
        .as_ref()
        .map(|e| format!(", {} of them {}", e.count, e.kind))
        .unwrap_or_default();
    format!("{} of {} baseline requests failed{most_common}", baseline.errors, baseline.attempts)
}

/// The baseline's connection never opened before its share of the budget ran out (a server
/// that does not accept): the doctor names its budget when it reports this.
#[derive(Debug)]
struct NeverConnected {
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
fn with_budget(error: anyhow::Error, budget: Duration) -> anyhow::Error {
    if error.chain().any(|cause| cause.is::<NeverConnected>()) {
        error.context(format!(
            "the doctor's {} budget ran out while connecting",
            format_seconds(budget.as_secs_f64())
        ))
    } else {
        error
    }
}

/// The whole diagnosis of the workload's first request within `budget` from now, reading the
/// server as `view` says (the demo's servers run inside nodelay: it reads none); fails only
/// when nothing could be measured.
pub fn examine(
    target: &Target,
    workload: &Workload,
    request: &RequestArgs,
    view: &ServerViewArgs,
    budget: Duration,
    timeout: Duration,
) -> Result<DoctorReport> {
    let chain = Chain::start(target, request, view, workload.address, 1);
    examine_within(workload, Instant::now(), budget, timeout, FixPolicy::Describe, None, &chain)
}

/// How deep the doctor follows upstreams (client → front → hop → hop → hop).
const MAX_HOPS: usize = 3;
/// Upstreams of one server diagnosed at most.
const MAX_UPSTREAMS: usize = 3;

/// Where the diagnosis stands in the chain of servers: what to send a hop, how to read its
/// server, and the addresses already diagnosed (so a loop is followed once).
struct Chain {
    target: Target,
    request: RequestArgs,
    view: ServerViewArgs,
    visited: Vec<SocketAddr>,
    /// Connections open at once (`-c`), for every server along the chain.
    connections: u32,
    /// `--idle-probe`: the target's idle timeout is measured last (not the hops').
    idle_probe: bool,
}

/// Headers that carry the user's credentials: meant for the target, never sent to its hops.
const CREDENTIALS: [&str; 3] = ["authorization", "proxy-authorization", "cookie"];

impl Chain {
    fn start(
        target: &Target,
        request: &RequestArgs,
        view: &ServerViewArgs,
        address: SocketAddr,
        connections: u32,
    ) -> Self {
        Chain {
            target: target.clone(),
            request: request.clone(),
            view: view.clone(),
            visited: vec![address],
            connections,
            idle_probe: false,
        }
    }

    fn depth(&self) -> usize {
        self.visited.len() - 1
    }

    /// The chain one hop further: the hop's server is found by its address (`--pid` named
    /// the front's).
    fn to(&self, address: SocketAddr) -> Chain {
        let mut visited = self.visited.clone();
        visited.push(address);
        let mut request = self.request.clone();
        request.headers.retain(|(name, _)| !CREDENTIALS.contains(&name.to_ascii_lowercase().as_str()));
        Chain {
            target: self.target.at(address),
            request,
            view: ServerViewArgs { pid: None, ..self.view.clone() },
            visited,
            connections: self.connections,
            idle_probe: false,
        }
    }
}

/// The diagnosis, ending by `started + budget`: the budget may have begun before (the
/// probe), and each phase gets its share of the budget or what is left, the smaller. A
/// Ctrl-C stops the phase running; the report then rests on what was measured and says so.
fn examine_within(
    workload: &Workload,
    started: Instant,
    budget: Duration,
    timeout: Duration,
    fix: FixPolicy,
    progress: Option<&PhaseProgress>,
    chain: &Chain,
) -> Result<DoctorReport> {
    let deadline = later(started, budget);
    let left = || deadline.saturating_duration_since(Instant::now());
    let request = workload.requests.first().context("no request to diagnose")?;
    let shape = RequestShape {
        has_body: request.head_bytes.is_some(),
        baseline_split: !request.spec.write_split.is_empty(),
        baseline_nodelay: workload.client_nodelay,
    };
    // The server's side is read over the baseline: its CPU per request and the upstreams the
    // baseline's requests made it use. Started before the baseline is sized, so the time its
    // start takes (a scan of /proc) comes out of the baseline's share, not past the budget.
    let watching = if left() >= MIN_PHASE * 3 {
        // Steady: the verdicts weigh each thread's CPU, to the end of the baseline.
        server_view::watch(workload.address, &chain.view, nodelay_host::SamplerPace::Steady)
    } else {
        server_view::Watching::Off
    };
    let connections = chain.connections.max(1);
    let baseline_config = EngineConfig {
        requests: vec![request.spec.clone()],
        framing: workload.framing.clone(),
        connections: connections as usize,
        // Several connections run on until the share of the budget ends (or this many
        // requests): a connection that waits a second to open must have the time to.
        max_requests: Some(phase_requests(BASELINE_REQUESTS, connections as usize, PER_CONNECTION_REQUESTS)),
        duration: Some(budget.mul_f64(BASELINE_SHARE).min(left())),
        timeout,
        // As long as a response may take, and never past the budget.
        connect_timeout: timeout.min(left()).max(Duration::from_millis(1)),
        socket: SocketOptions { nodelay: workload.client_nodelay, ..SocketOptions::default() },
        tls: workload.tls.clone(),
        ..EngineConfig::new(workload.address, Vec::new())
    };
    let url = &workload.url;
    if let Some(progress) = progress {
        progress.phase(&format!("baseline: {}", nodelay_report::baseline_shape(connections)));
    }
    // The baseline's own first connection tells whether the server is reachable: no probe
    // connection is opened before it (servers and captures would see an empty one).
    let (baseline, reach) = run_phase_reaching(&baseline_config, None)?;
    // Each socket that sent a SYN left a connection record, a refused or timed-out one too.
    let (view_report, view) = watching.finish(baseline.responses.len() as u64, baseline.connections_opened);
    if let Some(why) = reach.unreachable {
        bail!("cannot connect to {}: {why}", workload.address);
    }
    if baseline.responses.is_empty()
        && baseline.errors.is_empty()
        && !reach.connected
        && !interrupt::interrupted()
    {
        let waited = baseline_config.duration.unwrap_or_default();
        return Err(anyhow::Error::new(NeverConnected { address: workload.address, waited }));
    }
    if baseline.responses.is_empty() && interrupt::interrupted() {
        bail!("could not measure {url}: interrupted (Ctrl-C) before any response arrived");
    }
    if baseline.responses.is_empty() {
        let suspect = baseline.errors.iter().any(|e| crate::workload::looks_like_tls_refusal(e.kind));
        if let Some(hint) = crate::workload::tls_hint(workload, suspect) {
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
    let mut skipped = Vec::new();
    while let Some(experiment) = next_experiment(&observations) {
        if interrupt::interrupted() {
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
        let config = experiment_config(&baseline_config, request, experiment, duration);
        if let Some(progress) = progress {
            progress.phase(&format!("experiment: {}", experiment.describe()));
        }
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
        && !interrupt::interrupted()
        // A plain-TCP probe, as the HTTP/1.0 one below.
        && workload.tls.is_none()
        && left() >= EXPECT_PROBE_WAIT * 2
        && let Some((head, body)) = with_expect_continue(&request.spec.bytes, head_bytes)
    {
        if let Some(progress) = progress {
            progress.phase("probe: a request with Expect: 100-continue, the body held back");
        }
        observations.expect_probe = probe_expect_continue(workload.address, &head, &body, EXPECT_PROBE_WAIT);
    }
    // Does the server close after answering an HTTP/1.0 client that did not ask to keep the
    // connection? A healthy one does at once, so this costs a round trip; one that holds
    // it costs at most HOLD_PROBE_WAIT.
    if let (Framing::Http { .. }, Some(http10)) =
        (&workload.framing, http10_without_keep_alive(&request.spec.bytes))
        && !interrupt::interrupted()
        // A plain-TCP probe: over TLS the server would only see a bad handshake.
        && workload.tls.is_none()
        && left() >= HOLD_PROBE_WAIT * 2
    {
        if let Some(progress) = progress {
            progress.phase("probe: an HTTP/1.0 request without keep-alive, does the server close?");
        }
        observations.hold_probe = probe_hold(workload.address, &http10, HOLD_PROBE_WAIT);
    }
    observations.interrupted = interrupt::interrupted();
    let mut findings = diagnose(&observations);
    let try_fix_report = match fix {
        FixPolicy::Describe => None,
        FixPolicy::Try { keep } => Some(match worth_trying(&findings) {
            Err(why) => TryFixReport::not_applied(why.into(), Vec::new()),
            Ok(()) if interrupt::interrupted() => {
                TryFixReport::not_applied("not applied: interrupted".into(), Vec::new())
            }
            Ok(()) if left() < MIN_PHASE => TryFixReport::not_applied(
                "not applied: the budget left no time to measure with the fix; raise --budget".into(),
                Vec::new(),
            ),
            Ok(()) => {
                if let Some(progress) = progress {
                    progress.phase("try-fix: TCP_NODELAY on the server's sockets, measuring again");
                }
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
    // Last, as it may wait for all the budget left: how long does an idle connection live?
    if chain.idle_probe
        && matches!(workload.framing, Framing::Http { .. })
        && workload.tls.is_none()
        && !interrupt::interrupted()
        && left() >= MIN_IDLE_WAIT
    {
        if let Some(progress) = progress {
            progress.phase(
                "probe: one keep-alive request, then the connection left idle until the server closes it",
            );
        }
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
    report.interrupted = interrupt::interrupted();
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
    progress: Option<&PhaseProgress>,
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
        if interrupt::interrupted() {
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
        if !server_view::is_this_machine(address) {
            // Requests go only to this machine's servers: a hop elsewhere is another
            // organisation's service as often as not.
            let why = "not followed: it is on another machine (the doctor sends requests only to this machine's \
                       servers); `nodelay proxy` in front of it times that leg";
            hops.push(hop(None, Some(why.into())));
            continue;
        }
        let next = chain.to(address);
        let diagnosed = build_workload(&next.target, &next.request, true).and_then(|workload| {
            if let Some(progress) = progress {
                progress.phase(&format!("following the chain: diagnosing the upstream {address}"));
            }
            examine_within(&workload, now, share, timeout, FixPolicy::Describe, progress, &next)
        });
        hops.push(match diagnosed {
            Ok(report) => hop(Some(report), None),
            Err(error) => hop(None, Some(format!("{error:#}"))),
        });
    }
    hops
}

/// How long the Expect probe waits for an answer before it sends the body: past curl's 1 s,
/// so a server that stays silent this long makes every such client wait its whole timer.
const EXPECT_PROBE_WAIT: Duration = Duration::from_millis(1200);

/// The idle probe is not started with less of the budget left than this...
const MIN_IDLE_WAIT: Duration = Duration::from_millis(500);
/// ...and ends this long before the budget does, for the report.
const IDLE_PROBE_MARGIN: Duration = Duration::from_millis(50);

/// How long the HTTP/1.0 probe waits for the server to close after its response.
const HOLD_PROBE_WAIT: Duration = Duration::from_millis(500);

/// The request as an HTTP/1.0 client that does not ask for keep-alive sends it: the version
/// lowered and any Connection header dropped. `None` when the bytes are not an HTTP/1.1 head.
fn http10_without_keep_alive(request: &[u8]) -> Option<Vec<u8>> {
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
fn phase_requests(one_connection: u64, connections: usize, per_connection: u64) -> u64 {
    if connections <= 1 { one_connection } else { one_connection.max(connections as u64 * per_connection) }
}

/// The baseline with exactly one thing changed.
fn experiment_config(
    baseline: &EngineConfig,
    request: &WorkloadRequest,
    experiment: Experiment,
    duration: Duration,
) -> EngineConfig {
    let mut config = EngineConfig {
        max_requests: Some(phase_requests(
            EXPERIMENT_REQUESTS,
            baseline.connections,
            PER_CONNECTION_REQUESTS / 2,
        )),
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
    }
    config
}

/// Whether a phase reached the server at all.
struct Reach {
    unreachable: Option<String>,
    connected: bool,
}

pub(crate) fn run_phase(config: &EngineConfig, experiment: Option<Experiment>) -> Result<Phase> {
    run_phase_reaching(config, experiment).map(|(phase, _)| phase)
}

fn run_phase_reaching(config: &EngineConfig, experiment: Option<Experiment>) -> Result<(Phase, Reach)> {
    let finished = run_engine(config, false, |_| CollectingSink::default(), &|| {})?;
    let reach = Reach { unreachable: finished.unreachable.clone(), connected: finished.connected };
    let mut phase = Phase {
        experiment,
        connections: u32::try_from(config.connections).unwrap_or(u32::MAX),
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
    use super::{http10_without_keep_alive, phase_requests};

    #[test]
    fn one_connection_keeps_its_request_count_and_several_get_a_share_each() {
        assert_eq!(phase_requests(40, 1, 100), 40);
        assert_eq!(phase_requests(40, 20, 100), 2000);
        assert_eq!(phase_requests(30, 0, 50), 30);
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
