//! `nodelay doctor`: a bounded diagnosis. Measures a keep-alive baseline on one connection,
//! runs the experiments the rules ask for while the budget lasts, and reports the findings.

use crate::args::DoctorArgs;
use crate::exit::Outcome;
use crate::request::build_request;
use crate::runner::run_engine;
use crate::target::{check_reachable, parse_http_target};
use anyhow::{Result, bail};
use nodelay_diagnose::{Experiment, Observations, Phase, RequestShape, diagnose, next_experiment};
use nodelay_engine::{CollectingSink, EngineConfig, SocketOptions};
use nodelay_report::{DoctorReport, Json, Render, Text};
use nodelay_wire::HttpRequest;
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
    let target = parse_http_target(&args.url)?;
    let request = build_request(&target, &args.request, true)?;
    check_reachable(target.address, args.timeout)?;
    let report = examine(&target.url, target.address, &request, args.budget, args.timeout)?;
    if args.json {
        print!("{}", Json.render(&report));
    } else {
        print!("{}", Text.render(&report));
    }
    Ok(if report.is_healthy() { Outcome::Success } else { Outcome::Findings })
}

/// The whole diagnosis of one target; fails only when nothing could be measured.
pub fn examine(
    url: &str,
    address: SocketAddr,
    request: &HttpRequest,
    budget: Duration,
    timeout: Duration,
) -> Result<DoctorReport> {
    let started = Instant::now();
    let deadline = started + budget;
    let shape =
        RequestShape { has_body: !request.body.is_empty(), baseline_split: false, baseline_nodelay: true };
    let baseline_config = EngineConfig {
        request_expects_no_body: request.expects_no_body(),
        max_requests: Some(BASELINE_REQUESTS),
        duration: Some(budget.mul_f64(BASELINE_SHARE)),
        timeout,
        ..EngineConfig::new(address, request.encode())
    };
    let baseline = run_phase(&baseline_config, None)?;
    if baseline.responses.is_empty() {
        let why = baseline.error_example.as_deref().unwrap_or("no response arrived within the budget");
        bail!("could not measure {url}: no request succeeded ({why})");
    }
    let mut observations = Observations { request: Some(shape), baseline, experiments: Vec::new() };
    let mut skipped = Vec::new();
    while let Some(experiment) = next_experiment(&observations) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left < MIN_PHASE {
            skipped.push(experiment);
            // Record the skip so the planner moves on to what it would ask next.
            observations.experiments.push(Phase { experiment: Some(experiment), ..Phase::default() });
            continue;
        }
        let config = experiment_config(
            &baseline_config,
            request,
            experiment,
            left.min(budget.mul_f64(EXPERIMENT_SHARE)),
        );
        observations.experiments.push(run_phase(&config, Some(experiment))?);
    }
    observations.experiments.retain(|phase| !phase.responses.is_empty() || phase.errors > 0);
    let findings = diagnose(&observations);
    Ok(DoctorReport::new(
        url.to_string(),
        address.to_string(),
        budget,
        started.elapsed(),
        &observations,
        findings,
        &skipped,
    ))
}

/// The baseline with exactly one thing changed.
fn experiment_config(
    baseline: &EngineConfig,
    request: &HttpRequest,
    experiment: Experiment,
    duration: Duration,
) -> EngineConfig {
    let mut config = EngineConfig {
        max_requests: Some(EXPERIMENT_REQUESTS),
        duration: Some(duration),
        ..baseline.clone()
    };
    let head_bytes = request.encode().len() - request.body.len();
    match experiment {
        Experiment::QuickAck => config.socket.quickack_after_read = true,
        Experiment::NewConnectionPerRequest => {
            config.keep_alive = false;
            config.request = HttpRequest { keep_alive: false, ..request.clone() }.encode();
        }
        Experiment::SplitRequestNagle => {
            config.write_split = vec![head_bytes];
            config.socket = SocketOptions { nodelay: false, ..config.socket };
        }
        Experiment::SplitRequestNoDelay => {
            config.write_split = vec![head_bytes];
            config.socket = SocketOptions { nodelay: true, ..config.socket };
        }
        Experiment::SingleWrite => config.write_split.clear(),
    }
    config
}

fn run_phase(config: &EngineConfig, experiment: Option<Experiment>) -> Result<Phase> {
    let finished = run_engine(config, false, |_| CollectingSink::default())?;
    let mut phase = Phase { experiment, ..Phase::default() };
    let mut busiest = 0;
    for sink in finished.output.sinks {
        phase.responses.extend(sink.responses);
        phase.errors += sink.errors.len() as u64;
        if phase.error_example.is_none() {
            phase.error_example = sink.errors.first().map(|e| format!("{}: {}", e.kind.as_str(), e.message));
        }
        phase.connections_opened += sink.connections.len() as u64;
        for connection in sink.connections {
            if connection.requests >= busiest && connection.tcp_info.is_some() {
                busiest = connection.requests;
                phase.tcp_info = connection.tcp_info;
            }
        }
    }
    Ok(phase)
}
