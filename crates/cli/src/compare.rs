//! `nodelay compare`: targets measured in interleaved rounds, side by side, with a verdict.
//! Each round runs every target once, the order reversed every other round (A B, B A, ...),
//! so that the machine's drift and whatever the previous run left warm hit every target alike.

use crate::args::CompareArgs;
use crate::exit::{Outcome, usage};
use crate::output::{self, create_output};
use crate::runner::{LoadProgress, text_width};
use anyhow::{Context, Result, bail};
use nodelay_doctor::{Doctor, DoctorOptions};
use nodelay_load::{
    COMPARE_TEST, Contender, comparisons, finish_rounds, labels, plan_load, run_rounds, why_nothing_succeeded,
};
use nodelay_report::gate::{self, GatedCommand};
use nodelay_report::markdown;
use nodelay_report::{
    COMPARE_SCHEMA_ID, CompareReport, CompareTarget, FittedText, Json, Machine, Render, compare_header,
};
use std::time::Duration;

/// The doctor's budget for each target under `--diagnose`.
const DIAGNOSIS_BUDGET: Duration = Duration::from_secs(10);
const DIAGNOSIS_TIMEOUT: Duration = Duration::from_secs(5);

pub fn compare(args: &CompareArgs) -> Result<Outcome> {
    args.gate.check_for(GatedCommand::Compare { diagnose: args.diagnose })?;
    let labels = labels(&args.labels, args.urls.len()).map_err(usage)?;
    let mut targets = Vec::new();
    let options = args.load.options();
    for (label, url) in labels.iter().zip(&args.urls) {
        let load = plan_load(url, &options).with_context(|| format!("target {label}"))?;
        targets.push(Contender::new(label.clone(), load));
    }
    let html = create_output(args.html.as_deref(), "--html")?;
    let summary = args.gate.open_summary()?;
    for target in &targets {
        target.load().reserve_descriptors()?;
    }
    // The same flags for every target: one warning will do.
    crate::bench::warn_fallbacks(targets[0].load());
    let settings = targets[0].load().settings.clone();
    let width = text_width();
    if !args.json {
        let named: Vec<(String, String)> =
            targets.iter().map(|t| (t.label().to_string(), t.load().settings.url.clone())).collect();
        output::stdout(&compare_header(&settings, &named, args.rounds, width))?;
    }
    fn nothing_to_stop() {}
    let progress = |load: &nodelay_load::Load| LoadProgress::new(&load.config, !args.quiet, &nothing_to_stop);
    let end = run_rounds(&mut targets, args.rounds, &mut |load| Box::new(progress(load)), &mut |line| {
        if !args.quiet {
            output::stderr_line(line)
        }
    });
    if targets.iter().all(|t| t.error().is_some()) {
        let why: Vec<String> =
            targets.iter().map(|t| format!("{}: {}", t.label(), t.error().unwrap_or_default())).collect();
        bail!("no target could be measured: {}", why.join("; "));
    }
    let mut measured: Vec<CompareTarget> = targets.into_iter().map(finish_rounds).collect();
    if args.diagnose && !end.interrupted {
        for (target, url) in measured.iter_mut().zip(&args.urls) {
            diagnose(target, url, args)?;
        }
    }
    let comparisons = comparisons(&measured);
    let thresholds = gate::check_compare(&args.gate.fail_if, &measured, &comparisons);
    let report = CompareReport {
        schema: COMPARE_SCHEMA_ID,
        rounds: args.rounds,
        rounds_completed: end.completed,
        settings,
        targets: measured,
        verdicts: nodelay_report::target_verdicts(&comparisons),
        comparisons,
        test: COMPARE_TEST,
        machine: Machine::this(),
        interrupted: end.interrupted,
        interrupted_round: end.cut_short,
        thresholds,
    };
    if let Some(output) = html {
        output.write(crate::html::page_of(&report)?.as_bytes())?;
    }
    summary.map(|s| s.write(&markdown::compare_summary(&report, args.html.as_deref()))).transpose()?;
    output::stdout(&if args.json { Json.render(&report) } else { FittedText::new(width).render(&report) })?;
    // A target that answered nothing has no figures to compare: said, and the exit says so too.
    let mut silent = false;
    for target in &report.targets {
        if let Some(run) = target.run.as_ref().filter(|run| run.requests_completed == 0) {
            silent = true;
            let why = why_nothing_succeeded(run);
            output::stderr_line(&format!(
                "nodelay: no request succeeded on {} ({}): {why}",
                target.label, target.url
            ));
        }
    }
    let measured = if silent || report.targets.iter().any(|t| t.error.is_some()) {
        Outcome::Failed
    } else {
        Outcome::Success
    };
    Ok(measured.gated(&report.thresholds))
}

/// The doctor on one target, after the rounds (so that its experiments do not disturb them).
fn diagnose(target: &mut CompareTarget, url: &str, args: &CompareArgs) -> Result<()> {
    if target.error.is_some() {
        return Ok(());
    }
    let options = DoctorOptions {
        budget: DIAGNOSIS_BUDGET,
        timeout: args.load.timeout.min(DIAGNOSIS_TIMEOUT),
        request: args.load.request.options(),
        server_view: args.server_view.options(),
        ..DoctorOptions::default()
    };
    match Doctor::new(url, options)?.run_first() {
        Ok(report) => target.diagnosis = Some(report),
        Err(error) => target.diagnosis_error = Some(format!("{error:#}")),
    }
    Ok(())
}
