//! `nodelay bench`: plans the load from the arguments (`nodelay_load`), runs it with a
//! progress bar and the server view, and renders the merged statistics.

use crate::args::BenchArgs;
use crate::exit::Outcome;
use crate::output::{self, create_output};
use crate::runner::{LoadProgress, text_width};
use anyhow::Result;
use nodelay_load::{Load, TlsChoices, pace_for, plan_load, watch_server};
use nodelay_report::gate::{self, GatedCommand};
use nodelay_report::markdown;
use nodelay_report::{FittedText, Json, Render};

/// Says on stderr what was asked for and cannot be had on this machine.
pub fn warn_fallbacks(load: &Load) {
    if let Some(reason) = &load.io_uring_refused {
        output::stderr_line(&format!(
            "nodelay: warning: --io-uring: not available here ({reason}); waiting with epoll"
        ));
    }
}

pub fn bench(args: &BenchArgs) -> Result<Outcome> {
    args.gate.options().check_for(GatedCommand::Bench)?;
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
    let summary = args.gate.options().open_summary()?;
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
    let measured = load.measure_checked(&mut LoadProgress::new(&load.config, !args.quiet, &on_stop))?;
    let mut report = load.full_report(&measured, watching, TlsChoices::from(&args.load.request.tls).given());
    report.thresholds = gate::check(&args.gate.fail_if, &report, None);

    if let Some(output) = export {
        output.write(Json.render(&report).as_bytes())?;
    }
    if let Some(output) = html {
        output.write(crate::html::page_of(&report)?.as_bytes())?;
    }
    summary.map(|s| s.write(&markdown::bench_summary(&report, args.html.as_deref()))).transpose()?;
    if let Some(output) = hdr_log {
        output.write(&nodelay_report::interval_log(&measured.stats, &load.settings)?)?;
    }
    output::stdout(&if args.json { Json.render(&report) } else { text.bench_results(&report) })?;
    if let Some(why) = load.nothing_succeeded(&report, &measured.stats) {
        output::stderr_line(&format!("nodelay: no request succeeded: {why}"));
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Success.gated(&report.thresholds))
}
