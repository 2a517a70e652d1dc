//! `nodelay compare`: targets measured in interleaved rounds, side by side, with a verdict.
//! Each round runs every target once, the order reversed every other round (A B, B A, ...),
//! so that the machine's drift and whatever the previous run left warm hit every target alike.

use crate::args::CompareArgs;
use crate::exit::Outcome;
use crate::output::{self, create_output};
use crate::runner::{LoadProgress, text_width};
use anyhow::Result;
use nodelay_doctor::{Doctor, DoctorOptions};
use nodelay_load::{comparisons, plan_targets, test_words, why_nothing_succeeded};
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
    let given: Vec<String> = args.baseline.iter().chain(&args.urls).cloned().collect();
    args.gate.options().check_for(GatedCommand::Compare { diagnose: args.diagnose, targets: given.len() })?;
    let mut targets = plan_targets(&given, &args.labels, &args.load.options())?;
    let html = create_output(args.html.as_deref(), "--html")?;
    let summary = args.gate.options().open_summary()?;
    for target in &targets.live {
        target.load().reserve_descriptors()?;
    }
    // The same flags for every target: one warning will do.
    if let Some(first) = targets.live.first() {
        crate::bench::warn_fallbacks(first.load());
    }
    let settings = targets.settings().clone();
    let width = text_width();
    let rounds = targets.rounds(args.rounds);
    if !args.json {
        output::stdout(&compare_header(&settings, &targets.named(), targets.live.len(), rounds, width))?;
    }
    fn nothing_to_stop() {}
    let progress = |load: &nodelay_load::Load| LoadProgress::new(&load.config, !args.quiet, &nothing_to_stop);
    let end = targets.run(rounds, &mut |load| Box::new(progress(load)), &mut |line| {
        if !args.quiet {
            output::stderr_line(line)
        }
    })?;
    let mut measured: Vec<CompareTarget> = targets.finish();
    if args.diagnose && !end.interrupted {
        for target in measured.iter_mut().filter(|t| t.saved.is_none()) {
            diagnose(target, args)?;
        }
    }
    let comparisons = comparisons(&measured, args.gate.options().alpha());
    let thresholds =
        gate::check_compare(&args.gate.fail_if, &measured, &comparisons, args.gate.options().alpha());
    let report = CompareReport {
        schema: COMPARE_SCHEMA_ID.into(),
        rounds,
        rounds_completed: end.completed,
        settings,
        targets: measured,
        verdicts: nodelay_report::target_verdicts(&comparisons),
        comparisons,
        test: test_words(args.gate.options().alpha()),
        alpha: args.gate.options().alpha(),
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
fn diagnose(target: &mut CompareTarget, args: &CompareArgs) -> Result<()> {
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
    match Doctor::new(&target.url, options)?.run_first() {
        Ok(report) => target.diagnosis = Some(report),
        Err(error) => target.diagnosis_error = Some(format!("{error:#}")),
    }
    Ok(())
}
