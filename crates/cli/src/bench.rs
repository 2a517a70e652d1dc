//! `nodelay bench`: builds the workload and engine settings from the arguments, runs the
//! load, and renders the merged statistics.

use crate::args::BenchArgs;
use crate::exit::{Outcome, UsageError};
use crate::output;
use crate::runner::{run_engine, text_width};
use crate::server_view;
use crate::target::parse_target;
use crate::workload::build_workload;
use anyhow::{Context, Result, bail};
use nodelay_diagnose::server_findings;
use nodelay_engine::{EngineConfig, Framing, SocketOptions, Stats};
use nodelay_report::{BenchReport, BenchSettings, FittedText, Json, Render, RunEnd, format_status_counts};
use std::io::Write;
use std::time::Duration;

const DEFAULT_DURATION: Duration = Duration::from_secs(10);

pub fn bench(args: &BenchArgs) -> Result<Outcome> {
    let target = parse_target(&args.url)?;
    let workload = build_workload(&target, &args.request, !args.no_keepalive)?;
    let connections = args.connections as usize;
    let threads = args.threads.map_or_else(default_threads, |t| t as usize).min(connections);
    let config = EngineConfig {
        requests: workload.specs(),
        selection: workload.selection.clone(),
        framing: workload.framing.clone(),
        connections,
        threads,
        max_requests: args.requests,
        duration: if args.requests.is_some() {
            None
        } else {
            Some(args.duration.unwrap_or(DEFAULT_DURATION))
        },
        rate_per_second: args.rate,
        timeout: args.timeout,
        connect_timeout: args.connect_timeout,
        keep_alive: !args.no_keepalive,
        socket: SocketOptions { nodelay: workload.client_nodelay, ..SocketOptions::default() },
        ..EngineConfig::new(workload.address, Vec::new())
    };

    // Opened (created) before the run, so that a bad path costs no measurement.
    let export = match &args.export_json {
        Some(path) => {
            let file = std::fs::File::create(path)
                .map_err(|e| UsageError(format!("--export-json: cannot write {}: {e}", path.display())))?;
            Some((path, file))
        }
        None => None,
    };
    // Before any connection: a run that could never open -c sockets is refused, not started.
    nodelay_engine::reserve_descriptors(connections as u64, threads as u64)
        .map_err(|shortage| anyhow::Error::new(UsageError(shortage.to_string())))?;
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
        write_split: args.request.write_split.clone().map(|split| split.0).unwrap_or_default(),
        timeout_s: config.timeout.as_secs_f64(),
        connect_timeout_s: config.connect_timeout.as_secs_f64(),
        success_status: args.success_status.to_string(),
    };
    let text = FittedText::new(text_width());
    if !args.json {
        // What is about to run, before it runs: a long run is not a blank screen.
        output::stdout(&text.render(&settings))?;
    }
    let request_kinds = config.requests.len();
    let watching = server_view::watch(workload.address, &args.server_view);
    let finished = run_engine(&config, !args.quiet, |_| Stats::with_requests(request_kinds))?;
    if let Some(why) = &finished.unreachable {
        // The run's own first connection failed: one clear error, as before any load.
        bail!("cannot connect to {}: {why}", workload.address);
    }
    let mut stats = Stats::with_requests(request_kinds);
    for thread_stats in &finished.output.sinks {
        stats.merge(thread_stats);
    }
    let names: Vec<String> = config.requests.iter().map(|r| r.name.clone()).collect();
    let end = RunEnd {
        elapsed: finished.output.elapsed,
        interrupted: finished.interrupted,
        due_not_sent: finished.output.due_not_sent,
    };
    let mut report = BenchReport::new(settings, &args.success_status, &stats, &names, end);
    if let (Some(view_report), view) = watching.finish(stats.completed) {
        // One connection in a closed loop sends one request at a time: the server's CPU per
        // request can be set against the time each took.
        let sequential_p50_ms = (connections == 1 && config.rate_per_second.is_none())
            .then(|| report.latency_ms.as_ref().map(|latency| latency.p50))
            .flatten();
        let findings =
            view.map(|view| server_findings(&view, stats.completed, sequential_p50_ms)).unwrap_or_default();
        report = report.with_server_view(view_report, findings);
    }

    if let Some((path, mut file)) = export {
        file.write_all(Json.render(&report).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    output::stdout(&if args.json { Json.render(&report) } else { text.bench_results(&report) })?;
    if report.requests_completed == 0 {
        output::stderr_line(&format!("nodelay: no request succeeded: {}", why_nothing_succeeded(&report)));
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
fn why_nothing_succeeded(report: &BenchReport) -> String {
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
