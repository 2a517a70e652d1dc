//! `nodelay bench`: builds the workload and engine settings from the arguments, runs the
//! load, and renders the merged statistics.

use crate::args::{BenchArgs, LoadArgs};
use crate::exit::{Outcome, usage};
use crate::output::{self, create_output};
use crate::runner::{run_engine, text_width};
use crate::server_view;
use crate::target::parse_target;
use crate::workload::{Workload, build_workload, looks_like_tls_refusal, tls_hint};
use anyhow::{Result, bail};
use nodelay_diagnose::server_findings;
use nodelay_engine::{BusyPoll, EngineConfig, ErrorKind, Framing, SocketOptions, Stats};
use nodelay_report::{
    BenchReport, BenchSettings, FittedText, Json, Render, RunEnd, SuccessStatuses, TlsSettings,
    format_status_counts,
};
use std::time::Duration;

const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// A target made ready to load: what to send, the engine's settings, and how the run is
/// described in reports. Shared by bench and compare.
pub struct Load {
    pub workload: Workload,
    pub config: EngineConfig,
    pub settings: BenchSettings,
    pub success: SuccessStatuses,
    /// `--io-uring` was asked for and this machine refused it: why (epoll runs instead).
    pub io_uring_refused: Option<String>,
}

/// One run's merged figures and how it ended.
pub struct Measured {
    pub stats: Stats,
    pub end: RunEnd,
    /// The generator's worker threads' CPU over the run.
    pub worker_cpu: Duration,
}

/// Validates the target and the load options, without connecting.
pub fn plan_load(url: &str, load: &LoadArgs) -> Result<Load> {
    let target = parse_target(url)?;
    let workload = build_workload(&target, &load.request, !load.no_keepalive)?;
    let connections = load.connections as usize;
    let threads = load.threads.map_or_else(default_threads, |t| t as usize).min(connections);
    let io_uring_refused = load.io_uring.then(nodelay_engine::io_uring_unavailable).flatten();
    let config = EngineConfig {
        requests: workload.specs(),
        selection: workload.selection.clone(),
        framing: workload.framing.clone(),
        connections,
        threads,
        max_requests: load.requests,
        duration: if load.requests.is_some() {
            None
        } else {
            Some(load.duration.unwrap_or(DEFAULT_DURATION))
        },
        rate_per_second: load.rate,
        timeout: load.timeout,
        connect_timeout: load.connect_timeout,
        keep_alive: !load.no_keepalive,
        socket: SocketOptions { nodelay: workload.client_nodelay, ..SocketOptions::default() },
        interval: load.interval,
        tls: workload.tls.clone(),
        busy_poll: load.busy_poll.unwrap_or_default(),
        io_uring: load.io_uring && io_uring_refused.is_none(),
        ..EngineConfig::new(workload.address, Vec::new())
    };
    let settings = BenchSettings {
        url: workload.url.clone(),
        address: workload.address.to_string(),
        method: workload.label.clone(),
        protocol: if matches!(workload.framing, Framing::Http { .. }) { "http" } else { "tcp" },
        connections,
        threads,
        requests: config.max_requests,
        duration_s: config.duration.map(|d| d.as_secs_f64()),
        rate_per_second: config.rate_per_second,
        keep_alive: config.keep_alive,
        write_split: load.request.write_split.clone().map(|split| split.0).unwrap_or_default(),
        timeout_s: config.timeout.as_secs_f64(),
        connect_timeout_s: config.connect_timeout.as_secs_f64(),
        success_status: load.success_status.to_string(),
        tls: workload.tls.as_ref().map(TlsSettings::of),
        busy_poll: config.busy_poll != BusyPoll::Off,
        busy_poll_after_us: match config.busy_poll {
            BusyPoll::After(window) => Some(window.as_secs_f64() * 1e6),
            _ => None,
        },
        io_uring: config.io_uring,
    };
    Ok(Load { workload, config, settings, success: load.success_status.clone(), io_uring_refused })
}

impl Load {
    /// Says on stderr what was asked for and cannot be had on this machine.
    pub fn warn_fallbacks(&self) {
        if let Some(reason) = &self.io_uring_refused {
            output::stderr_line(&format!(
                "nodelay: warning: --io-uring: not available here ({reason}); waiting with epoll"
            ));
        }
    }

    /// Refuses, before any connection, a run that could never open its sockets.
    pub fn reserve_descriptors(&self) -> Result<()> {
        nodelay_engine::reserve_descriptors(self.config.connections as u64, self.config.threads as u64)
            .map(|_| ())
            .map_err(|shortage| usage(shortage.to_string()))
    }

    /// Runs the load once, `on_interrupt` once if it is interrupted. A target whose first
    /// connection fails is an error.
    pub fn measure(&self, show_progress: bool, on_interrupt: &dyn Fn()) -> Result<Measured> {
        let request_kinds = self.config.requests.len();
        let finished =
            run_engine(&self.config, show_progress, |_| Stats::with_requests(request_kinds), on_interrupt)?;
        if let Some(why) = &finished.unreachable {
            // The run's own first connection failed: one clear error, as before any load.
            bail!("cannot connect to {}: {why}", self.workload.address);
        }
        let mut stats = Stats::with_requests(request_kinds);
        for thread_stats in &finished.output.sinks {
            stats.merge(thread_stats);
        }
        let end = RunEnd {
            elapsed: finished.output.elapsed,
            interrupted: finished.interrupted,
            due_not_sent: finished.output.due_not_sent,
        };
        Ok(Measured { stats, end, worker_cpu: finished.output.worker_cpu })
    }

    /// The report of one run (or of rounds merged into one `Measured`).
    pub fn report(&self, stats: &Stats, end: RunEnd) -> BenchReport {
        let names: Vec<String> = self.config.requests.iter().map(|r| r.name.clone()).collect();
        BenchReport::new(self.settings.clone(), &self.success, stats, &names, end)
    }
}

pub fn bench(args: &BenchArgs) -> Result<Outcome> {
    let load = plan_load(&args.url, &args.load)?;
    // Opened (created) before the run, so that a bad path costs no measurement.
    output::distinct_files(&[
        ("--export-json", args.export_json.as_deref()),
        ("--html", args.html.as_deref()),
        ("--hdr-log", args.hdr_log.as_deref()),
    ])?;
    let export = create_output(args.export_json.as_deref(), "--export-json")?;
    let html = create_output(args.html.as_deref(), "--html")?;
    let hdr_log = create_output(args.hdr_log.as_deref(), "--hdr-log")?;
    // Before any connection: a run that could never open -c sockets is refused, not started.
    load.reserve_descriptors()?;
    load.warn_fallbacks();
    let text = FittedText::new(text_width());
    if !args.json {
        // What is about to run, before it runs: a long run is not a blank screen.
        output::stdout(&text.render(&load.settings))?;
    }
    let pace = server_view::pace_for(load.config.duration, load.config.max_requests);
    let watching = server_view::watch(load.workload.address, &args.server_view, pace);
    let measured = load.measure(!args.quiet, &|| watching.ending())?;
    let stats = &measured.stats;
    // The workers' CPU as a share of their time: near 1, nodelay measured itself. Only the
    // workers': the server view's sampler is not the generator.
    let thread_seconds = measured.end.elapsed.as_secs_f64() * load.config.threads.max(1) as f64;
    let cpu_share = (thread_seconds > 0.0).then(|| measured.worker_cpu.as_secs_f64() / thread_seconds);
    let mut report = load.report(&measured.stats, measured.end);
    // Each socket that sent a SYN left a connection record, a refused or timed-out one too.
    if let (Some(view_report), view) = watching.finish(stats.completed, stats.connections_closed) {
        // One connection in a closed loop sends one request at a time: the server's CPU per
        // request can be set against the time each took.
        let sequential_p50_ms = (load.config.connections == 1 && load.config.rate_per_second.is_none())
            .then(|| report.latency_ms.as_ref().map(|latency| latency.p50))
            .flatten();
        let findings =
            view.map(|view| server_findings(&view, stats.completed, sequential_p50_ms)).unwrap_or_default();
        report = report.with_server_view(view_report, findings);
    }
    // Connects that found no local port: how many TIME-WAIT sockets hold them, in which range.
    if stats.errors(ErrorKind::PortsExhausted) > 0 {
        report = report.with_local_ports(nodelay_host::local_ports(load.workload.address));
    }
    let report = report.with_suggestions(cpu_share, args.load.request.tls.as_command_line());

    if let Some(output) = export {
        output.write(Json.render(&report).as_bytes())?;
    }
    if let Some(output) = html {
        output.write(crate::html::page_of(&report)?.as_bytes())?;
    }
    if let Some(output) = hdr_log {
        output.write(&crate::hdr_log::interval_log(stats, &load.settings)?)?;
    }
    output::stdout(&if args.json { Json.render(&report) } else { text.bench_results(&report) })?;
    if report.requests_completed == 0 {
        let suspect =
            ErrorKind::ALL.into_iter().any(|kind| looks_like_tls_refusal(kind) && stats.errors(kind) > 0);
        let why = tls_hint(&load.workload, suspect).unwrap_or_else(|| why_nothing_succeeded(&report));
        output::stderr_line(&format!("nodelay: no request succeeded: {why}"));
        return Ok(Outcome::Failed);
    }
    let all_400 = stats.status_counts().all(|(code, _)| code == 400);
    if report.non_success_responses == report.requests_completed
        && let Some(hint) = tls_hint(&load.workload, all_400)
    {
        // nginx and Go answer a plain request on their TLS port with a 400 page.
        output::stderr_line(&format!("nodelay: no request succeeded: {hint}"));
        return Ok(Outcome::Failed);
    }
    if report.non_success_responses == report.requests_completed {
        output::stderr_line(&format!(
            "nodelay: no request succeeded: every response was outside {} ({}); --success-status changes what counts",
            report.settings.success_status,
            format_status_counts(&report.status_counts)
        ));
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Success)
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The most common failure and its first message, or why nothing was counted at all.
pub(crate) fn why_nothing_succeeded(report: &BenchReport) -> String {
    let worst = report.errors.iter().filter(|(_, n)| **n > 0).max_by_key(|(_, n)| **n);
    match worst {
        Some((kind, n)) => {
            let example = report.error_examples.get(kind).map(|m| format!(": {m}")).unwrap_or_default();
            format!("{kind} ×{n}{example}")
        }
        None if report.requests_unfinished > 0 => format!(
            "{} still waiting for a response when the run ended (server never answered?)",
            report.requests_unfinished
        ),
        None => "the run ended before any request was sent".into(),
    }
}
