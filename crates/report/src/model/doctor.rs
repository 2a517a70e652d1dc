//! The model of a `nodelay doctor` result. Its serde form is the JSON contract described by
//! `schema/doctor.schema.json`: rename nothing, only add.

use crate::model::series::{SpectrumPoint, spectrum_ms};
use crate::model::server_view::ServerViewReport;
use crate::model::status::SuccessStatuses;
use nodelay_diagnose::{
    Diagnosis, Finding, FixTrial, HopDiagnosis, Note, Observations, Phase, PhaseSummary, Verdict,
};
use nodelay_host::ProcessInfo;
use nodelay_tcp::TcpInfo;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

/// The `schema` of a doctor report (`schema/doctor.schema.json`).
pub const DOCTOR_SCHEMA_ID: &str = "nodelay-doctor/1";

/// One measured phase, as reported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseReport {
    /// `baseline` or the experiment's id (`quick-ack`, `new-connection-per-request`, ...).
    pub name: String,
    /// What the phase ran, in words (`baseline: keep-alive, one connection`).
    pub description: String,
    #[serde(flatten)]
    /// The phase's figures, flattened into this object.
    pub summary: PhaseSummary,
    /// The kernel's TCP_INFO of the client's connection; null when not read.
    pub client_tcp_info: Option<TcpInfo>,
    /// Every response's total time as a percentile spectrum (the figures above skip the first
    /// response on each reused connection; this does not); empty when none completed.
    pub latency_spectrum: Vec<SpectrumPoint>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
/// The model of a `nodelay doctor` run: its phases, findings and verdict.
pub struct DoctorReport {
    /// The schema id, [`DOCTOR_SCHEMA_ID`].
    pub schema: Cow<'static, str>,
    /// The target as given.
    pub url: String,
    /// The IP:port actually connected to.
    pub address: String,
    /// The time budget the doctor was given, in seconds.
    pub budget_s: f64,
    /// How long it took, in seconds.
    pub elapsed_s: f64,
    /// `healthy`; `findings` when anything else was found; `unreliable` when too many
    /// baseline requests failed for a verdict.
    pub verdict: Cow<'static, str>,
    /// The baseline first, then each experiment run.
    pub phases: Vec<PhaseReport>,
    /// What the doctor found, with evidence, proof and fixes.
    pub findings: Vec<Finding>,
    /// Facts measured that the measured workload does not pay (what a fresh or idle
    /// connection would cost a client that keeps its connections alive and busy): said
    /// under the verdict, which they never change. Empty when there are none.
    pub notes: Vec<Note>,
    /// Experiments the budget left no time for.
    pub skipped_experiments: Vec<String>,
    /// The server's `Server` header (printable ASCII), which names its stack when it sends one.
    pub server: Option<String>,
    /// Baseline responses with a status outside 2xx/3xx: the diagnosis is of an error page,
    /// not of what the user meant to measure. Null when every response succeeded.
    pub error_page: Option<ErrorPage>,
    /// Stopped early (Ctrl-C): the last phase was cut short and no later one was run, so the
    /// findings rest on less than planned.
    pub interrupted: bool,
    /// What `--try-fix` did; null without it.
    pub try_fix: Option<TryFixReport>,
    /// The server's side of the baseline when it runs on this machine; null when not looked
    /// at (a remote target, or --no-server-view).
    pub server_view: Option<ServerViewReport>,
    /// The upstreams the server used during the baseline, each diagnosed in turn (the chain
    /// the doctor followed, at most 3 hops deep); empty when it did not follow any.
    pub hops: Vec<HopReport>,
    /// Each `--fail-if` threshold held against the run (src/gate): crossed or not, and by how
    /// much; empty without `--fail-if`.
    pub thresholds: Vec<crate::gate::ThresholdResult>,
    /// https:// targets: how the certificate was checked and what TLS settled on; null for
    /// plain HTTP.
    pub tls: Option<crate::model::tls::TlsNegotiated>,
    /// Requests with a body (plain HTTP): how the server answered a head with `Expect:
    /// 100-continue`; null when not probed.
    pub expect_continue: Option<crate::model::probes::ExpectContinueReport>,
    /// With --idle-probe (plain HTTP): how long the server kept an idle keep-alive
    /// connection; null when not probed.
    pub idle_keep_alive: Option<crate::model::probes::IdleKeepAliveReport>,
}

/// One hop of the chain: the server's upstream, diagnosed directly.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HopReport {
    /// The upstream address the server connected to.
    pub address: String,
    /// What the server's view said about it: `1.00 new connections per request` or `pooled`.
    pub how_used: String,
    /// The upstream's diagnosis, or why it could not be made.
    pub report: Option<Box<DoctorReport>>,
    /// Why the hop was not diagnosed; null when it was.
    pub error: Option<String>,
}

/// `doctor --try-fix`: the fix applied to the server's own sockets, or why it was not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TryFixReport {
    /// TCP_NODELAY was set on the server's sockets and the server measured again (the phase
    /// named `try-fix`, and a proof of kind `fix-applied` in the finding).
    pub applied: bool,
    /// One sentence: what was done, or why nothing was.
    pub outcome: String,
    /// The server's processes, when they were found.
    pub processes: Vec<ProcessInfo>,
    /// Sockets whose TCP_NODELAY was turned on.
    pub sockets_changed: usize,
    /// Of them, listening sockets (connections accepted meanwhile inherited it).
    pub listening_changed: usize,
    /// Sockets turned back to TCP_NODELAY off afterwards: all that still exist, unless kept.
    pub sockets_restored: usize,
    /// Sockets that still exist but could not be turned back, each with why.
    pub restore_failed: Vec<String>,
    /// `--keep-fix`: the change was left in place.
    pub kept: bool,
}

impl TryFixReport {
    /// Nothing was changed, for the reason given.
    pub fn not_applied(outcome: String, processes: Vec<ProcessInfo>) -> Self {
        TryFixReport {
            applied: false,
            outcome,
            processes,
            sockets_changed: 0,
            listening_changed: 0,
            sockets_restored: 0,
            restore_failed: Vec::new(),
            kept: false,
        }
    }
}

/// What the baseline got instead of a successful response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ErrorPage {
    /// Baseline responses outside 2xx/3xx.
    pub responses: u64,
    /// Of this many baseline responses.
    pub of: u64,
    pub status_counts: BTreeMap<String, u64>,
}

impl ErrorPage {
    fn from_baseline(baseline: &Phase) -> Option<Self> {
        let success = SuccessStatuses::default();
        let mut status_counts = BTreeMap::new();
        for response in baseline.responses.iter().filter(|r| r.status > 0 && !success.is_success(r.status)) {
            *status_counts.entry(response.status.to_string()).or_insert(0) += 1;
        }
        let responses = status_counts.values().sum();
        (responses > 0).then_some(ErrorPage { responses, of: baseline.responses.len() as u64, status_counts })
    }

    /// `404 ×40`.
    pub fn statuses(&self) -> String {
        crate::format::format_status_counts(&self.status_counts)
    }
}

/// "keep-alive, one connection" or "keep-alive, 20 connections": how the baseline loads.
pub fn baseline_shape(connections: u32, http2_streams: Option<u32>) -> String {
    let connections = match connections {
        0 | 1 => "one connection".to_string(),
        n => format!("{n} connections"),
    };
    match http2_streams {
        None => format!("keep-alive, {connections}"),
        Some(1) => format!("HTTP/2, one stream on {connections}"),
        Some(streams) => format!("HTTP/2, {streams} streams on {connections}"),
    }
}

impl PhaseReport {
    /// The report of one measured phase.
    pub fn new(phase: &Phase) -> Self {
        let (name, description) = match phase.experiment {
            None => (
                "baseline".to_string(),
                format!("baseline: {}", baseline_shape(phase.connections, phase.http2_streams)),
            ),
            Some(experiment) => (experiment_id(experiment), format!("experiment: {}", experiment.describe())),
        };
        PhaseReport {
            name,
            description,
            summary: phase.summary(),
            client_tcp_info: phase.tcp_info,
            latency_spectrum: phase_spectrum(phase),
        }
    }
}

impl PhaseReport {
    /// The baseline measured again with the fix applied to the server.
    pub fn fix_trial(trial: &FixTrial) -> Self {
        PhaseReport {
            name: "try-fix".into(),
            description: "try-fix: TCP_NODELAY on the server".into(),
            summary: trial.phase.summary(),
            client_tcp_info: trial.phase.tcp_info,
            latency_spectrum: phase_spectrum(&trial.phase),
        }
    }
}

/// The spectrum of a phase's response times.
fn phase_spectrum(phase: &Phase) -> Vec<SpectrumPoint> {
    let Ok(mut histogram) = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3) else {
        return Vec::new();
    };
    for response in &phase.responses {
        histogram.saturating_record(u64::try_from(response.total.as_nanos()).unwrap_or(u64::MAX));
    }
    spectrum_ms(&histogram)
}

fn experiment_id(experiment: nodelay_diagnose::Experiment) -> String {
    serde_json::to_value(experiment).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

impl DoctorReport {
    /// The report of a doctor run, its verdict decided from its findings.
    pub fn new(
        url: String,
        address: String,
        budget: Duration,
        elapsed: Duration,
        observations: &Observations,
        diagnosis: Diagnosis,
        skipped: &[nodelay_diagnose::Experiment],
    ) -> Self {
        let verdict = match diagnosis.verdict() {
            Verdict::NothingSeen => Verdict::Healthy,
            verdict => verdict,
        };
        DoctorReport {
            schema: Cow::Borrowed(DOCTOR_SCHEMA_ID),
            url,
            address,
            budget_s: budget.as_secs_f64(),
            elapsed_s: elapsed.as_secs_f64(),
            verdict: Cow::Borrowed(verdict.as_str()),
            phases: std::iter::once(&observations.baseline)
                .chain(&observations.experiments)
                .map(PhaseReport::new)
                .chain(observations.fix_trial.as_ref().map(PhaseReport::fix_trial))
                .collect(),
            findings: diagnosis.findings,
            notes: diagnosis.notes,
            skipped_experiments: skipped.iter().map(|e| experiment_id(*e)).collect(),
            server: observations.baseline.server_header.clone(),
            error_page: ErrorPage::from_baseline(&observations.baseline),
            interrupted: false,
            try_fix: None,
            server_view: None,
            hops: Vec::new(),
            thresholds: Vec::new(),
            tls: None,
            expect_continue: observations
                .expect_probe
                .as_ref()
                .map(crate::model::probes::ExpectContinueReport::new),
            idle_keep_alive: observations
                .idle_probe
                .as_ref()
                .map(crate::model::probes::IdleKeepAliveReport::new),
        }
    }

    /// Nothing was found: the verdict is `healthy`.
    pub fn is_healthy(&self) -> bool {
        self.verdict == "healthy"
    }

    /// Too many baseline requests failed: the report carries no verdict.
    pub fn is_unreliable(&self) -> bool {
        self.verdict == "unreliable"
    }

    /// The verdict the report says.
    fn verdict(&self) -> Verdict {
        if self.is_unreliable() {
            Verdict::Unreliable
        } else if self.is_healthy() {
            Verdict::Healthy
        } else {
            Verdict::Findings
        }
    }
}

impl HopReport {
    /// What the chain rule needs of a diagnosed hop.
    pub fn diagnosis(&self) -> Option<HopDiagnosis> {
        let report = self.report.as_deref()?;
        Some(HopDiagnosis {
            address: self.address.parse().ok()?,
            process: report.server_view.as_ref().filter(|v| v.available).map(ServerViewReport::process_names),
            baseline: report.phases.first()?.summary.clone(),
            findings: report.findings.clone(),
        })
    }
}

/// The `schema` of a doctor report over a scenario (`schema/doctor.schema.json`).
pub const DOCTOR_SCENARIO_SCHEMA_ID: &str = "nodelay-doctor-scenario/1";

/// The diagnosis of one named request of a scenario.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NamedDoctorReport {
    /// The request's name in the scenario.
    pub name: String,
    #[serde(flatten)]
    /// Its diagnosis, flattened into this object.
    pub report: DoctorReport,
}

/// `nodelay doctor --scenario`: one diagnosis per named request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DoctorScenarioReport {
    /// The schema id, [`DOCTOR_SCENARIO_SCHEMA_ID`].
    pub schema: Cow<'static, str>,
    /// The target as given.
    pub url: String,
    /// `unreliable` when any request's is (the diagnosis is incomplete), else `healthy`
    /// when every request is, otherwise `findings`.
    pub verdict: Cow<'static, str>,
    /// One diagnosis per named request, in the scenario's order.
    pub requests: Vec<NamedDoctorReport>,
    /// Stopped early (Ctrl-C): the requests after the interrupted one were not diagnosed.
    pub interrupted: bool,
}

impl DoctorScenarioReport {
    /// The report of the diagnoses of a scenario's requests, its verdict decided from theirs.
    pub fn new(url: String, requests: Vec<NamedDoctorReport>) -> Self {
        let verdict = match Verdict::of_all(requests.iter().map(|r| r.report.verdict())) {
            Verdict::NothingSeen => Verdict::Healthy,
            verdict => verdict,
        };
        let interrupted = requests.iter().any(|r| r.report.interrupted);
        DoctorScenarioReport {
            schema: Cow::Borrowed(DOCTOR_SCENARIO_SCHEMA_ID),
            url,
            verdict: Cow::Borrowed(verdict.as_str()),
            requests,
            interrupted,
        }
    }

    /// Every request was found healthy.
    pub fn is_healthy(&self) -> bool {
        self.verdict == "healthy"
    }

    /// Some request's diagnosis is unreliable (too many of its baseline requests failed).
    pub fn is_unreliable(&self) -> bool {
        self.verdict == "unreliable"
    }
}
