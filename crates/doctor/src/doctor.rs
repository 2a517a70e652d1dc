//! The doctor's entry point: a target and its options validated into a [`Doctor`], whose
//! [`run`](Doctor::run) diagnoses it within the budget: the whole workload, or each named
//! request of a scenario with an equal share of what is left. Every step, the connection
//! probe included, counts against the budget: the run ends within it plus about 0.1 s.

use crate::chain::Chain;
use crate::examine::{examine_within, with_budget};
use crate::progress::{Named, Progress};
use crate::try_fix::FixPolicy;
use anyhow::{Context, Result, bail};
use nodelay_engine::Selection;
use nodelay_load::{RequestOptions, ServerViewOptions, Target, Workload, build_workload, parse_target, stop};
use nodelay_report::gate::{self, Threshold, ThresholdResult};
use nodelay_report::{DoctorReport, DoctorScenarioReport, NamedDoctorReport};
use nodelay_tcp::time::later;
use std::time::{Duration, Instant};

/// What the doctor is asked to do, besides the target.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// Longest the whole diagnosis may take.
    pub budget: Duration,
    /// Longest wait for one response (cut to the budget).
    pub timeout: Duration,
    /// Connections open at once, for the baseline and each experiment.
    pub connections: u32,
    /// What to send.
    pub request: RequestOptions,
    /// Whether and how to read the server's side.
    pub server_view: ServerViewOptions,
    /// Only describe a proven fix, or try it on the server (local servers only).
    pub fix: FixPolicy,
    /// Last, leave one keep-alive connection idle until the server closes it.
    pub idle_probe: bool,
}

impl Default for DoctorOptions {
    /// The CLI's defaults: a 10 s budget, 5 s per response, one connection, the server view
    /// when the server is on this machine, fixes described only.
    fn default() -> Self {
        DoctorOptions {
            budget: Duration::from_secs(10),
            timeout: Duration::from_secs(5),
            connections: 1,
            request: RequestOptions::default(),
            server_view: ServerViewOptions::default(),
            fix: FixPolicy::Describe,
            idle_probe: false,
        }
    }
}

/// A diagnosis ready to run: the target parsed and what to send built, nothing sent yet.
#[derive(Debug, Clone)]
pub struct Doctor {
    target: Target,
    workload: Workload,
    options: DoctorOptions,
    /// When it was asked for: [`Doctor::run`]'s budget counts from here, so resolving the
    /// host and reading the request's files are part of it.
    created: Instant,
}

/// What a diagnosis found: of one request, or of each named request of a scenario.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one value a run, moved once: a box would buy nothing
pub enum Diagnosis {
    /// One request (the usual case).
    Single(DoctorReport),
    /// A scenario: each named request diagnosed on its own.
    Scenario(DoctorScenarioReport),
}

impl Doctor {
    /// Validates `url` (`http://`, `https://` or `tcp://`) and the options into a diagnosis
    /// ready to run; a mistake in either is a usage error, and nothing is sent.
    /// Its budget counts from here.
    pub fn new(url: &str, options: DoctorOptions) -> Result<Doctor> {
        let created = Instant::now();
        let target = parse_target(url)?;
        let protocol = &options.request.protocol;
        let mut workload = build_workload(&target, &options.request, true)?;
        // HTTP/2 when asked (--h2, --grpc); https:// stays HTTP/1.1 unless asked, so that a
        // diagnosis of an HTTP/1.1 server is not changed by what its TLS port also offers.
        if protocol.requires_h2() {
            nodelay_load::speak_http2(&mut workload, protocol, nodelay_load::PROTOCOL_WINDOW_BYTES)?;
        }
        Ok(Doctor { target, workload, options, created })
    }

    /// What will be sent, to which address.
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// Diagnoses the target within the budget, telling `progress` each step. Fails only when
    /// nothing could be measured; a run stopped by [`stop::request`] reports what it measured,
    /// marked interrupted.
    pub fn run(&self, progress: &mut dyn Progress) -> Result<Diagnosis> {
        supported()?;
        let options = &self.options;
        let started = self.created;
        let deadline = later(started, options.budget);
        // No single wait may outlast the whole diagnosis.
        let timeout = options.timeout.min(options.budget);
        let workload = &self.workload;
        progress.phase(&format!("connecting to {}", workload.address));
        let chain = Chain {
            idle_probe: options.idle_probe,
            ..Chain::start(
                &self.target,
                &options.request,
                &options.server_view,
                workload.address,
                options.connections,
            )
        };
        if !workload.is_scenario() {
            return examine_within(workload, started, options.budget, timeout, options.fix, progress, &chain)
                .map(Diagnosis::Single)
                .map_err(|error| with_budget(error, options.budget));
        }
        // Each named request is diagnosed on its own, with an equal share of what is left, so
        // time one request does not use goes to the ones after it.
        let mut reports = Vec::new();
        for (index, request) in workload.requests.iter().enumerate() {
            let now = Instant::now();
            let share =
                deadline.saturating_duration_since(now).div_f64((workload.requests.len() - index) as f64);
            let single = Workload {
                requests: vec![request.clone()],
                selection: Selection::Sequence,
                ..workload.clone()
            };
            let name = &request.spec.name;
            let mut named = Named { progress: &mut *progress, request: name };
            let report = match examine_within(&single, now, share, timeout, options.fix, &mut named, &chain) {
                // Stopped before this request measured anything: report the ones before it.
                Err(_) if stop::requested() && !reports.is_empty() => break,
                result => result
                    .with_context(|| format!("request '{name}'"))
                    .map_err(|e| with_budget(e, options.budget))?,
            };
            let stopped = report.interrupted;
            reports.push(NamedDoctorReport { name: name.clone(), report });
            if stopped {
                break;
            }
        }
        Ok(Diagnosis::Scenario(DoctorScenarioReport::new(workload.url.clone(), reports)))
    }
}

impl Doctor {
    /// The diagnosis of the workload's first request only (of a scenario, its first named
    /// request), with the whole budget counted from now: one report, as a comparison or the
    /// demo shows it. Steps are not told; a hop's errors carry no budget context.
    pub fn run_first(&self) -> Result<DoctorReport> {
        let options = &self.options;
        let chain = Chain {
            idle_probe: options.idle_probe,
            ..Chain::start(
                &self.target,
                &options.request,
                &options.server_view,
                self.workload.address,
                options.connections,
            )
        };
        let timeout = options.timeout.min(options.budget);
        let started = Instant::now();
        examine_within(&self.workload, started, options.budget, timeout, options.fix, &mut (), &chain)
    }
}

/// Refuses a machine whose kernel gives no TCP_INFO and TCP_QUICKACK: the experiments and
/// the evidence need them (Linux).
pub fn supported() -> Result<()> {
    if !nodelay_tcp::KERNEL_TCP_FIGURES {
        bail!("nodelay doctor needs Linux: its experiments use TCP_QUICKACK and its evidence TCP_INFO");
    }
    Ok(())
}

impl Diagnosis {
    /// Holds the diagnosis against `--fail-if` thresholds, each request of a scenario on its
    /// own (by its name); the results are in the report(s) and returned together.
    pub fn hold(&mut self, thresholds: &[Threshold]) -> Vec<ThresholdResult> {
        match self {
            Diagnosis::Single(report) => {
                report.thresholds = gate::check(thresholds, report, None);
                report.thresholds.clone()
            }
            Diagnosis::Scenario(scenario) => scenario
                .requests
                .iter_mut()
                .flat_map(|named| {
                    named.report.thresholds = gate::check(thresholds, &named.report, Some(&named.name));
                    named.report.thresholds.clone()
                })
                .collect(),
        }
    }

    /// The Markdown summary (`--summary`): each request of a scenario in turn.
    pub fn summary(&self, html: Option<&std::path::Path>) -> String {
        match self {
            Diagnosis::Single(report) => nodelay_report::markdown::doctor_summary(report, html),
            Diagnosis::Scenario(scenario) => scenario
                .requests
                .iter()
                .map(|named| {
                    format!(
                        "## {}

{}",
                        named.name,
                        nodelay_report::markdown::doctor_summary(&named.report, html)
                    )
                })
                .collect::<Vec<_>>()
                .join(
                    "
",
                ),
        }
    }

    /// No finding but `healthy`.
    pub fn is_healthy(&self) -> bool {
        match self {
            Diagnosis::Single(report) => report.is_healthy(),
            Diagnosis::Scenario(report) => report.is_healthy(),
        }
    }

    /// Why the target could not be measured reliably (too many of its baseline's requests
    /// failed), as one line: `None` when it could.
    pub fn unreliable(&self) -> Option<String> {
        match self {
            Diagnosis::Single(report) => report.is_unreliable().then(|| failed_baseline(report)),
            Diagnosis::Scenario(report) => report.is_unreliable().then(|| {
                let failed: Vec<String> = report
                    .requests
                    .iter()
                    .filter(|named| named.report.is_unreliable())
                    .map(|named| format!("'{}': {}", named.name, failed_baseline(&named.report)))
                    .collect();
                failed.join("; ")
            }),
        }
    }
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
