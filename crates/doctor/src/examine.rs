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
    Experiment, Finding, Observations, Phase, RequestShape, closes_after_each_response, diagnose,
    next_experiment,
};
use nodelay_engine::{
    EngineConfig, Framing, SocketOptions, probe_expect_continue, probe_hold, probe_idle, with_expect_continue,
};
use nodelay_flags::Flag;
use nodelay_host::{ServerView, Upstream};
use nodelay_load::{
    Watching, Workload, WorkloadRequest, build_workload, is_this_machine, stop, watch_server,
};
use nodelay_report::{
    DoctorReport, HopReport, ServerViewReport, TlsNegotiated, TryFixReport, format_seconds, plural,
};
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
/// One step after another, each a method of [`Examination`]; the findings come from one
/// call of `diagnose` on everything measured.
pub(crate) fn examine_within(
    workload: &Workload,
    started: Instant,
    budget: Duration,
    timeout: Duration,
    fix: FixPolicy,
    progress: &mut dyn Progress,
    chain: &Chain,
) -> Result<DoctorReport> {
    let mut examination = Examination::new(workload, started, budget, timeout, progress, chain)?;
    let (mut observations, view_report) = examination.baseline()?;
    let skipped = examination.experiments(&mut observations)?;
    examination.probes(&mut observations);
    observations.interrupted = stop::requested();
    let try_fix = examination.try_fix(&mut observations, fix)?;
    let hops = examination.hops(&mut observations);
    examination.idle_probe(&mut observations);
    let diagnosis = diagnose(&observations);
    let mut report = DoctorReport::new(
        workload.url.to_string(),
        workload.address.to_string(),
        budget,
        started.elapsed(),
        &observations,
        diagnosis,
        &skipped,
    );
    report.interrupted = stop::requested();
    report.tls = workload.tls.as_ref().map(|client| TlsNegotiated::of(client, observations.baseline.tls));
    report.try_fix = try_fix;
    report.server_view = view_report;
    report.hops = hops;
    Ok(report)
}

/// One target's diagnosis under way: what it sends, its budget, and the baseline's settings
/// every later phase starts from.
struct Examination<'a> {
    workload: &'a Workload,
    request: &'a WorkloadRequest,
    budget: Duration,
    deadline: Instant,
    timeout: Duration,
    progress: &'a mut dyn Progress,
    chain: &'a Chain,
    baseline_config: EngineConfig,
    shape: RequestShape,
}

impl<'a> Examination<'a> {
    fn new(
        workload: &'a Workload,
        started: Instant,
        budget: Duration,
        timeout: Duration,
        progress: &'a mut dyn Progress,
        chain: &'a Chain,
    ) -> Result<Self> {
        let deadline = later(started, budget);
        let request = workload.requests.first().context("no request to diagnose")?;
        let shape = RequestShape {
            has_body: request.head_bytes.is_some(),
            baseline_split: !request.spec.write_split.is_empty(),
            baseline_nodelay: workload.client_nodelay,
            http2_streams: workload.http2.map(|h2| h2.streams_per_connection as u32),
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let connections = chain.connections.max(1) as usize;
        let baseline_config = EngineConfig {
            requests: vec![request.spec.clone()],
            framing: workload.framing.clone(),
            connections,
            // Several connections run on until the share of the budget ends (or this many
            // requests): a connection that waits a second to open must have the time to.
            max_requests: Some(baseline_requests(
                connections,
                workload.http2.map(|h2| h2.streams_per_connection),
            )),
            duration: Some(budget.mul_f64(BASELINE_SHARE).min(left)),
            timeout,
            // As long as a response may take, and never past the budget.
            connect_timeout: timeout.min(left).max(Duration::from_millis(1)),
            socket: SocketOptions { nodelay: workload.client_nodelay, ..SocketOptions::default() },
            tls: workload.tls.clone(),
            http2: workload.http2,
            ..EngineConfig::new(workload.address, Vec::new())
        };
        Ok(Examination {
            workload,
            request,
            budget,
            deadline,
            timeout,
            progress,
            chain,
            baseline_config,
            shape,
        })
    }

    /// What is left of the budget.
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The keep-alive baseline, with the server's side read over it. Its own first
    /// connection tells whether the server is reachable; a baseline without a response is an
    /// error that says why.
    fn baseline(&mut self) -> Result<(Observations, Option<ServerViewReport>)> {
        // The server's side is read over the baseline: its CPU per request and the upstreams
        // the baseline's requests made it use. Started before the baseline runs, so the time
        // its start takes (a scan of /proc) comes out of the baseline's share, not past the
        // budget.
        let watching = if self.left() >= MIN_PHASE * 3 {
            // Steady: the verdicts weigh each thread's CPU, to the end of the baseline.
            watch_server(self.workload.address, &self.chain.view, nodelay_host::SamplerPace::Steady)
        } else {
            Watching::Off
        };
        let connections = self.baseline_config.connections as u32;
        self.progress.phase(&format!(
            "baseline: {}",
            nodelay_report::baseline_shape(connections, self.shape.http2_streams)
        ));
        // No probe connection is opened before the baseline (servers and captures would see
        // an empty one).
        let (baseline, reach) = run_phase_reaching(&self.baseline_config, None)?;
        // Each socket that sent a SYN left a connection record, a refused or timed-out one too.
        let (view_report, view) =
            watching.finish(baseline.responses.len() as u64, baseline.connections_opened);
        if let Some(why) = reach.unreachable {
            bail!("cannot connect to {}: {why}", self.workload.address);
        }
        let waited = self.baseline_config.duration.unwrap_or_default();
        match baseline_outcome(&baseline, reach.connected, stop::requested()) {
            BaselineOutcome::Measured => {}
            BaselineOutcome::NeverConnected => {
                return Err(anyhow::Error::new(NeverConnected { address: self.workload.address, waited }));
            }
            BaselineOutcome::Interrupted => {
                bail!(
                    "could not measure {}: interrupted (Ctrl-C) before any response arrived",
                    self.workload.url
                )
            }
            BaselineOutcome::NoResponse => return Err(self.no_response(&baseline, waited)),
        }
        let mut observations = Observations {
            request: Some(self.shape),
            baseline,
            server_view: view,
            target_port: Some(self.workload.address.port()),
            // An error page is looked at as sent: the method, headers and body of the run.
            error_page_command: Some(nodelay_load::curl_command(&self.workload.url, &self.chain.request)),
            ..Observations::default()
        };
        // What the server links names a C server's stack (libevent), for its fixes.
        observations.linked_libraries = observations
            .server_view
            .as_ref()
            .and_then(|view| view.processes.first())
            .map(|process| nodelay_host::linked_libraries(process.pid))
            .unwrap_or_default();
        Ok((observations, view_report))
    }

    /// Why a baseline that connected got no response: TLS refused, an error, or silence.
    fn no_response(&self, baseline: &Phase, waited: Duration) -> anyhow::Error {
        let url = &self.workload.url;
        let suspect = baseline.errors.iter().any(|e| nodelay_load::looks_like_tls_refusal(e.kind));
        if let Some(hint) = nodelay_load::tls_hint(self.workload, suspect) {
            return anyhow::anyhow!("could not measure {url}: {hint}");
        }
        // Every experiment would wait as long for nothing: the doctor stops after the
        // baseline's share of the budget, and says so rather than "within the budget".
        let silent = || {
            format!(
                "no response arrived in the baseline's {} ({:.0} % of the budget): the server took the \
                 connection and answered nothing",
                format_seconds(waited.as_secs_f64()),
                BASELINE_SHARE * 100.0
            )
        };
        let why =
            baseline.errors.first().map_or_else(silent, |e| format!("{}: {}", e.kind.as_str(), e.message));
        anyhow::anyhow!("could not measure {url}: no request succeeded ({why})")
    }

    /// The experiments the rules ask for, while the budget lasts; returns those skipped for
    /// want of it.
    fn experiments(&mut self, observations: &mut Observations) -> Result<Vec<Experiment>> {
        let mut skipped = Vec::new();
        // A server that closed every keep-alive connection after one response without saying
        // so (every second request failed) is measured as its clients can use it: on fresh
        // connections, which the rules then judge in place of the failed baseline.
        if closes_after_each_response(&observations.baseline)
            && !stop::requested()
            && self.left() >= MIN_PHASE
        {
            let experiment = Experiment::NewConnectionPerRequest;
            let duration = self.left().min(self.budget.mul_f64(BASELINE_SHARE));
            let config =
                experiment_config(&self.baseline_config, self.request, experiment, duration, Duration::ZERO);
            self.progress.phase(&format!(
                "experiment: {} (the server closed each keep-alive connection after one response)",
                experiment.describe()
            ));
            observations.experiments.push(run_phase(&config, Some(experiment))?);
        }
        while let Some(experiment) = next_experiment(observations) {
            if stop::requested() {
                break;
            }
            let left = self.left();
            if left < MIN_PHASE {
                skipped.push(experiment);
                // Record the skip so the planner moves on to what it would ask next.
                observations.experiments.push(Phase { experiment: Some(experiment), ..Phase::default() });
                continue;
            }
            let gap = idle_gap(observations.baseline.tcp_info.as_ref());
            let duration = experiment_duration(experiment, left, self.budget, gap);
            let config = experiment_config(&self.baseline_config, self.request, experiment, duration, gap);
            self.progress.phase(&format!("experiment: {}", experiment.describe()));
            if experiment == Experiment::OneConnectionAtATime {
                // The baseline's last connections may still fill the accept queue: one
                // request, not counted, waits until the server has taken them, so the
                // experiment's first open does not meet the queue the baseline left (seen in
                // CI on Node backlog 2).
                run_phase(&EngineConfig { max_requests: Some(1), ..config.clone() }, None)?;
            }
            observations.experiments.push(run_phase(&config, Some(experiment))?);
        }
        observations.experiments.retain(|phase| !phase.responses.is_empty() || !phase.errors.is_empty());
        Ok(skipped)
    }

    /// A plain-TCP HTTP/1.1 target: the probes speak HTTP/1.x over plain TCP (over TLS the
    /// server would only see a bad handshake).
    fn plain_http(&self) -> bool {
        matches!(self.workload.framing, Framing::Http { .. })
            && self.workload.tls.is_none()
            && self.workload.http2.is_none()
    }

    /// The probes that need no load: `Expect: 100-continue` for a request with a body, and
    /// HTTP/1.0 without keep-alive.
    fn probes(&mut self, observations: &mut Observations) {
        // How does the server answer a client that sends Expect: 100-continue and holds the
        // body back? A silent server costs such a client its timer.
        if let Some(head_bytes) = self.request.head_bytes
            && self.plain_http()
            && !stop::requested()
            && self.left() >= EXPECT_PROBE_WAIT * 2
            && let Some((head, body)) = with_expect_continue(&self.request.spec.bytes, head_bytes)
        {
            self.progress.phase("probe: a request with Expect: 100-continue, the body held back");
            observations.expect_probe =
                probe_expect_continue(self.workload.address, &head, &body, EXPECT_PROBE_WAIT);
        }
        // Does the server close after answering an HTTP/1.0 client that did not ask to keep
        // the connection? A healthy one does at once, so this costs a round trip; one that
        // holds it costs at most HOLD_PROBE_WAIT.
        if let Some(http10) = http10_without_keep_alive(&self.request.spec.bytes)
            && self.plain_http()
            && !stop::requested()
            && self.left() >= HOLD_PROBE_WAIT * 2
        {
            self.progress.phase("probe: an HTTP/1.0 request without keep-alive, does the server close?");
            observations.hold_probe = probe_hold(self.workload.address, &http10, HOLD_PROBE_WAIT);
        }
    }

    /// `--try-fix`: TCP_NODELAY set on the server's sockets and the baseline measured again,
    /// when a server-side stall was proven and the budget allows.
    fn try_fix(&mut self, observations: &mut Observations, fix: FixPolicy) -> Result<Option<TryFixReport>> {
        let FixPolicy::Try { keep } = fix else { return Ok(None) };
        let findings = diagnose(observations).findings;
        if let Some(why) = fix_refusal(&findings, stop::requested(), self.left()) {
            return Ok(Some(TryFixReport::not_applied(why, Vec::new())));
        }
        self.progress.phase("try-fix: TCP_NODELAY on the server's sockets, measuring again");
        let config = EngineConfig {
            duration: Some(self.left().min(self.budget.mul_f64(BASELINE_SHARE))),
            ..self.baseline_config.clone()
        };
        let (trial, report) = try_fix(&config, keep)?;
        // The trial adds its proof to the findings.
        observations.fix_trial = trial;
        Ok(Some(report))
    }

    /// The hops behind the server, each diagnosed on its own; their diagnoses join the
    /// observations.
    fn hops(&mut self, observations: &mut Observations) -> Vec<HopReport> {
        let hops = follow_hops(
            self.chain,
            observations.server_view.as_ref(),
            self.deadline,
            self.timeout,
            self.progress,
        );
        observations.hops = hops.iter().filter_map(HopReport::diagnosis).collect();
        hops
    }

    /// Last, as it may wait for all the budget left: how long does an idle connection live?
    fn idle_probe(&mut self, observations: &mut Observations) {
        if self.chain.idle_probe && self.plain_http() && !stop::requested() && self.left() >= MIN_IDLE_WAIT {
            self.progress.phase(
                "probe: one keep-alive request, then the connection left idle until the server closes it",
            );
            let wait = self.left().saturating_sub(IDLE_PROBE_MARGIN);
            observations.idle_probe = probe_idle(self.workload.address, &self.request.spec.bytes, wait);
        }
    }
}

/// What a baseline's records say of the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BaselineOutcome {
    /// At least one response: the diagnosis goes on.
    Measured,
    /// No connection opened before the baseline's share of the budget ran out.
    NeverConnected,
    /// Stopped (Ctrl-C) before any response.
    Interrupted,
    /// Connected, and no request succeeded.
    NoResponse,
}

fn baseline_outcome(baseline: &Phase, connected: bool, stopped: bool) -> BaselineOutcome {
    match (baseline.responses.is_empty(), baseline.errors.is_empty()) {
        (false, _) => BaselineOutcome::Measured,
        (true, true) if !connected && !stopped => BaselineOutcome::NeverConnected,
        _ if stopped => BaselineOutcome::Interrupted,
        _ => BaselineOutcome::NoResponse,
    }
}

/// An experiment's share of the budget: the after-idle one is its gaps, as long as they
/// take; the others the experiment share; never more than is left.
fn experiment_duration(
    experiment: Experiment,
    left: Duration,
    budget: Duration,
    idle_gap: Duration,
) -> Duration {
    match experiment {
        Experiment::AfterIdle => left.min(idle_gap * (AFTER_IDLE_REQUESTS as u32 + 1)),
        _ => left.min(budget.mul_f64(EXPERIMENT_SHARE)),
    }
}

/// Why `--try-fix` is not applied, or `None` when it is.
fn fix_refusal(findings: &[Finding], stopped: bool, left: Duration) -> Option<String> {
    match worth_trying(findings) {
        Err(why) => Some(why.into()),
        Ok(()) if stopped => Some("not applied: interrupted".into()),
        Ok(()) if left < MIN_PHASE => Some(format!(
            "not applied: the budget left no time to measure with the fix; raise {}",
            Flag::Budget
        )),
        Ok(()) => None,
    }
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
                Some(format!("not diagnosed: the budget left no time for it; raise {}", Flag::Budget)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use nodelay_diagnose::{Confidence, FindingId};
    use nodelay_engine::{ErrorKind, ErrorRecord, ResponseRecord};

    fn answered() -> ResponseRecord {
        let ms = Duration::from_millis;
        ResponseRecord {
            connection: 0,
            request: 0,
            sequence_on_connection: 0,
            start_offset: Duration::ZERO,
            connect: Some(ms(1)),
            tls_handshake: None,
            tls_resumed: false,
            first_byte: ms(2),
            total: ms(2),
            total_uncorrected: ms(2),
            read_chunks: 1,
            max_read_gap: Duration::ZERO,
            bytes_before_max_gap: 0,
            last_read_gap: Duration::ZERO,
            last_read_bytes: 133,
            paused: Duration::ZERO,
            pauses: 0,
            response_bytes: 133,
            status: 200,
            http2: None,
        }
    }

    fn refused() -> ErrorRecord {
        ErrorRecord {
            connection: 0,
            request: 0,
            offset: Duration::ZERO,
            kind: ErrorKind::Reset,
            message: "reset".into(),
        }
    }

    #[test]
    fn a_baseline_is_measured_with_one_response_and_otherwise_says_what_happened() {
        let with = |responses: Vec<ResponseRecord>, errors: Vec<ErrorRecord>| Phase {
            responses,
            errors,
            ..Phase::default()
        };
        assert_eq!(
            baseline_outcome(&with(vec![answered()], vec![refused()]), true, true),
            BaselineOutcome::Measured
        );
        assert_eq!(baseline_outcome(&with(vec![], vec![]), false, false), BaselineOutcome::NeverConnected);
        assert_eq!(baseline_outcome(&with(vec![], vec![]), false, true), BaselineOutcome::Interrupted);
        assert_eq!(
            baseline_outcome(&with(vec![], vec![refused()]), true, true),
            BaselineOutcome::Interrupted
        );
        assert_eq!(
            baseline_outcome(&with(vec![], vec![refused()]), true, false),
            BaselineOutcome::NoResponse
        );
        assert_eq!(baseline_outcome(&with(vec![], vec![]), true, false), BaselineOutcome::NoResponse);
    }

    #[test]
    fn an_experiment_takes_its_share_and_after_idle_takes_its_gaps() {
        let budget = Duration::from_secs(10);
        let gap = Duration::from_millis(300);
        let share = experiment_duration(Experiment::QuickAck, Duration::from_secs(9), budget, gap);
        assert_eq!(share, budget.mul_f64(EXPERIMENT_SHARE));
        assert_eq!(
            experiment_duration(Experiment::QuickAck, Duration::from_millis(5), budget, gap),
            Duration::from_millis(5)
        );
        let idle = experiment_duration(Experiment::AfterIdle, Duration::from_secs(9), budget, gap);
        assert_eq!(idle, gap * (AFTER_IDLE_REQUESTS as u32 + 1));
    }

    #[test]
    fn the_fix_is_tried_only_on_a_proven_server_stall_with_time_left() {
        let stall = |proven| Finding {
            id: FindingId::ServerNagleDelayedAck,
            title: String::new(),
            proven,
            confidence: Confidence::High,
            evidence: Vec::new(),
            proof: Vec::new(),
            fix_summary: String::new(),
            fix: Vec::new(),
        };
        let plenty = Duration::from_secs(5);
        assert_eq!(fix_refusal(&[stall(true)], false, plenty), None);
        assert!(
            fix_refusal(&[stall(false)], false, plenty).is_some_and(|why| why.contains("no server-side"))
        );
        assert_eq!(fix_refusal(&[stall(true)], true, plenty).as_deref(), Some("not applied: interrupted"));
        assert!(
            fix_refusal(&[stall(true)], false, Duration::ZERO).is_some_and(|why| why.contains("--budget"))
        );
    }
}
