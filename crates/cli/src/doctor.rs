//! `nodelay doctor`: a bounded diagnosis. Measures a keep-alive baseline on one connection,
//! runs the experiments the rules ask for while the budget lasts, and reports the findings;
//! for a scenario, each named request in turn. Every step, the connection probe included,
//! counts against the budget: the run ends within it plus about 0.1 s (README).

use crate::args::DoctorArgs;
use crate::exit::Outcome;
use crate::interrupt;
use crate::output;
use crate::runner::{DoctorProgress, PhaseProgress, run_engine, text_width};
use crate::target::parse_target;
use crate::try_fix::{FixPolicy, try_fix, worth_trying};
use crate::workload::{Workload, WorkloadRequest, build_workload};
use anyhow::{Context, Result, bail};
use nodelay_diagnose::{Experiment, Observations, Phase, RequestShape, diagnose, next_experiment};
use nodelay_engine::{CollectingSink, EngineConfig, Selection, SocketOptions, later};
use nodelay_report::{
    DoctorReport, DoctorScenarioReport, FittedText, Json, NamedDoctorReport, Render, TryFixReport,
    format_seconds,
};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Enough steady responses for stable medians on one connection.
const BASELINE_REQUESTS: u64 = 40;
const EXPERIMENT_REQUESTS: u64 = 30;
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
    let fix = if args.try_fix { FixPolicy::Try { keep: args.keep_fix } } else { FixPolicy::Describe };
    if !workload.is_scenario() {
        let whole = progress.map(DoctorProgress::whole);
        let report = examine_within(&workload, started, args.budget, timeout, fix, whole.as_ref())
            .map_err(|error| with_budget(error, args.budget))?;
        if let Some(progress) = progress {
            progress.finish();
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
        let report = match examine_within(&single, now, share, timeout, fix, named.as_ref()) {
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

/// The whole diagnosis of the workload's first request within `budget` from now; fails only
/// when nothing could be measured.
pub fn examine(workload: &Workload, budget: Duration, timeout: Duration) -> Result<DoctorReport> {
    examine_within(workload, Instant::now(), budget, timeout, FixPolicy::Describe, None)
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
) -> Result<DoctorReport> {
    let deadline = later(started, budget);
    let left = || deadline.saturating_duration_since(Instant::now());
    let request = workload.requests.first().context("no request to diagnose")?;
    let shape = RequestShape {
        has_body: request.head_bytes.is_some(),
        baseline_split: !request.spec.write_split.is_empty(),
        baseline_nodelay: workload.client_nodelay,
    };
    let baseline_config = EngineConfig {
        requests: vec![request.spec.clone()],
        framing: workload.framing.clone(),
        max_requests: Some(BASELINE_REQUESTS),
        duration: Some(budget.mul_f64(BASELINE_SHARE).min(left())),
        timeout,
        // As long as a response may take, and never past the budget.
        connect_timeout: timeout.min(left()).max(Duration::from_millis(1)),
        socket: SocketOptions { nodelay: workload.client_nodelay, ..SocketOptions::default() },
        ..EngineConfig::new(workload.address, Vec::new())
    };
    let url = &workload.url;
    if let Some(progress) = progress {
        progress.phase("baseline: keep-alive, one connection");
    }
    // The baseline's own first connection tells whether the server is reachable: no probe
    // connection is opened before it (servers and captures would see an empty one).
    let (baseline, reach) = run_phase_reaching(&baseline_config, None)?;
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
        let why = baseline.errors.first().map_or("no response arrived within the budget".into(), |e| {
            format!("{}: {}", e.kind.as_str(), e.message)
        });
        bail!("could not measure {url}: no request succeeded ({why})");
    }
    let mut observations = Observations { request: Some(shape), baseline, ..Observations::default() };
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
        observations.experiments.push(run_phase(&config, Some(experiment))?);
    }
    observations.experiments.retain(|phase| !phase.responses.is_empty() || !phase.errors.is_empty());
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
    report.try_fix = try_fix_report;
    Ok(report)
}

/// The baseline with exactly one thing changed.
fn experiment_config(
    baseline: &EngineConfig,
    request: &WorkloadRequest,
    experiment: Experiment,
    duration: Duration,
) -> EngineConfig {
    let mut config = EngineConfig {
        max_requests: Some(EXPERIMENT_REQUESTS),
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
    let finished = run_engine(config, false, |_| CollectingSink::default())?;
    let reach = Reach { unreachable: finished.unreachable.clone(), connected: finished.connected };
    let mut phase = Phase { experiment, ..Phase::default() };
    let mut busiest = 0;
    for sink in finished.output.sinks {
        phase.responses.extend(sink.responses);
        phase.errors.extend(sink.errors);
        phase.connections_opened += sink.connections.len() as u64;
        for connection in sink.connections {
            if phase.server_header.is_none() {
                phase.server_header.clone_from(&connection.server_header);
            }
            if connection.requests >= busiest && connection.tcp_info.is_some() {
                busiest = connection.requests;
                phase.tcp_info = connection.tcp_info;
            }
        }
    }
    Ok((phase, reach))
}
