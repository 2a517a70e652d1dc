//! `nodelay bench`: plans the load from the arguments (`nodelay_load`), runs it with a
//! progress bar and the server view, and renders the merged statistics.

use crate::args::BenchArgs;
use crate::exit::Outcome;
use crate::output::{self, create_output};
use crate::runner::{LoadProgress, text_width};
use anyhow::Result;
use nodelay_diagnose::server_findings;
use nodelay_engine::ErrorKind;
use nodelay_load::{
    Load, looks_like_tls_refusal, pace_for, plan_load, tls_hint, watch_server, why_nothing_succeeded,
};
use nodelay_report::{FittedText, Json, Render, format_status_counts};

/// Says on stderr what was asked for and cannot be had on this machine.
pub fn warn_fallbacks(load: &Load) {
    if let Some(reason) = &load.io_uring_refused {
        output::stderr_line(&format!(
            "nodelay: warning: --io-uring: not available here ({reason}); waiting with epoll"
        ));
    }
}

pub fn bench(args: &BenchArgs) -> Result<Outcome> {
    let load = plan_load(&args.url, &args.load.options())?;
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
    warn_fallbacks(&load);
    let text = FittedText::new(text_width());
    if !args.json {
        // What is about to run, before it runs: a long run is not a blank screen.
        output::stdout(&text.render(&load.settings))?;
    }
    let pace = pace_for(load.config.duration, load.config.max_requests);
    let watching = watch_server(load.workload.address, &args.server_view.options(), pace);
    let on_stop = || watching.ending();
    let measured = load.measure(&mut LoadProgress::new(&load.config, !args.quiet, &on_stop))?;
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
    let report = report.with_suggestions(cpu_share, args.load.request.tls.options().as_command_line());

    if let Some(output) = export {
        output.write(Json.render(&report).as_bytes())?;
    }
    if let Some(output) = html {
        output.write(crate::html::page_of(&report)?.as_bytes())?;
    }
    if let Some(output) = hdr_log {
        output.write(&nodelay_report::interval_log(stats, &load.settings)?)?;
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
