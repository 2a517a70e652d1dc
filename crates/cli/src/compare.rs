//! `nodelay compare`: targets measured in interleaved rounds, side by side, with a verdict.
//! Each round runs every target once, the order reversed every other round (A B, B A, ...),
//! so that the machine's drift and whatever the previous run left warm hit every target alike.

use crate::args::CompareArgs;
use crate::bench::{Load, Measured, plan_load, why_nothing_succeeded};
use crate::doctor::examine;
use crate::exit::{Outcome, usage};
use crate::interrupt;
use crate::output::{self, create_output};
use crate::runner::text_width;
use crate::target::parse_target;
use anyhow::{Context, Result, bail};
use nodelay_engine::Stats;
use nodelay_report::{
    COMPARE_SCHEMA_ID, COMPARED, CompareReport, CompareTarget, Comparison, FittedText, Json, Machine, Render,
    RoundFigures, RunEnd, compare_header,
};
use std::time::Duration;

/// The widest label the comparison's table fits in 80 columns.
const MAX_LABEL_COLUMNS: usize = 16;

/// The doctor's budget for each target under `--diagnose`.
const DIAGNOSIS_BUDGET: Duration = Duration::from_secs(10);
const DIAGNOSIS_TIMEOUT: Duration = Duration::from_secs(5);

/// The test behind the comparisons, as the JSON states it.
const TEST: &str = "Mann-Whitney U over the rounds' figures (two-sided; exact up to 20+20 rounds without ties); ratio: Hodges-Lehmann estimate with its ~95 % interval; a difference is named at p < 0.05 when the whole interval lies beyond ±5 %";

/// One target while the rounds run.
struct Measuring {
    label: String,
    load: Load,
    rounds: Vec<RoundFigures>,
    /// Every round's responses together.
    stats: Option<Stats>,
    elapsed: Duration,
    error: Option<String>,
}

pub fn compare(args: &CompareArgs) -> Result<Outcome> {
    let labels = labels(args)?;
    let mut targets = Vec::new();
    for (label, url) in labels.iter().zip(&args.urls) {
        let load = plan_load(url, &args.load).with_context(|| format!("target {label}"))?;
        targets.push(Measuring {
            label: label.clone(),
            load,
            rounds: Vec::new(),
            stats: None,
            elapsed: Duration::ZERO,
            error: None,
        });
    }
    let html = create_output(args.html.as_deref(), "--html")?;
    for target in &targets {
        target.load.reserve_descriptors()?;
    }
    // The same flags for every target: one warning will do.
    targets[0].load.warn_fallbacks();
    let settings = targets[0].load.settings.clone();
    let width = text_width();
    if !args.json {
        let named: Vec<(String, String)> =
            targets.iter().map(|t| (t.label.clone(), t.load.settings.url.clone())).collect();
        output::stdout(&compare_header(&settings, &named, args.rounds, width))?;
    }
    let interrupted = run_rounds(&mut targets, args.rounds, !args.quiet);
    if targets.iter().all(|t| t.error.is_some()) {
        let why: Vec<String> = targets
            .iter()
            .map(|t| format!("{}: {}", t.label, t.error.as_deref().unwrap_or_default()))
            .collect();
        bail!("no target could be measured: {}", why.join("; "));
    }
    let mut measured: Vec<CompareTarget> = targets.into_iter().map(finish).collect();
    if args.diagnose && !interrupted {
        for (target, url) in measured.iter_mut().zip(&args.urls) {
            diagnose(target, url, args)?;
        }
    }
    let comparisons = measured[1..]
        .iter()
        .flat_map(|target| {
            COMPARED.iter().filter_map(|(metric, _)| Comparison::between(&measured[0], target, metric))
        })
        .collect();
    let report = CompareReport {
        schema: COMPARE_SCHEMA_ID,
        rounds: args.rounds,
        settings,
        targets: measured,
        comparisons,
        test: TEST,
        machine: Machine::this(),
        interrupted,
    };
    if let Some(output) = html {
        output.write(crate::html::page_of(&report)?.as_bytes())?;
    }
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
    Ok(if silent || report.targets.iter().any(|t| t.error.is_some()) {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

/// The targets' names: `--labels`, else A, B, C, ...
fn labels(args: &CompareArgs) -> Result<Vec<String>> {
    if args.labels.is_empty() {
        return Ok((0..args.urls.len()).map(default_label).collect());
    }
    if args.labels.len() != args.urls.len() {
        return Err(usage(format!(
            "--labels names {} targets but {} URLs were given",
            args.labels.len(),
            args.urls.len()
        )));
    }
    for (index, label) in args.labels.iter().enumerate() {
        if label.trim().is_empty() || label.chars().any(char::is_control) {
            return Err(usage(format!(
                "--labels: label {} is empty or holds a control character",
                index + 1
            )));
        }
        // Labels head the table's rows and columns: a long one would push it past the terminal.
        if nodelay_report::display_width(label) > MAX_LABEL_COLUMNS {
            return Err(usage(format!(
                "--labels: label {} is wider than {MAX_LABEL_COLUMNS} columns: shorten it",
                index + 1
            )));
        }
        if args.labels[..index].contains(label) {
            return Err(usage(format!("--labels: '{label}' names two targets")));
        }
    }
    Ok(args.labels.clone())
}

/// A, B, ..., Z, then T27, T28, ...
fn default_label(index: usize) -> String {
    match u8::try_from(index) {
        Ok(i) if i < 26 => char::from(b'A' + i).to_string(),
        _ => format!("T{}", index + 1),
    }
}

/// Runs the rounds; a target whose connection fails is measured no more, the others go on.
/// Returns whether a Ctrl-C cut the rounds short.
fn run_rounds(targets: &mut [Measuring], rounds: u32, show_progress: bool) -> bool {
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..targets.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for index in order {
            let target = &mut targets[index];
            if target.error.is_some() {
                continue;
            }
            match target.load.measure(show_progress, &|| {}) {
                Ok(measured) => add_round(target, round + 1, measured),
                Err(error) => target.error = Some(format!("{error:#}")),
            }
            if interrupt::interrupted() {
                return true;
            }
        }
    }
    false
}

fn add_round(target: &mut Measuring, round: u32, measured: Measured) {
    let report = target.load.report(&measured.stats, measured.end);
    target.rounds.push(RoundFigures::of(round, &report));
    target.elapsed += measured.end.elapsed;
    match &mut target.stats {
        Some(stats) => stats.append(&measured.stats),
        None => target.stats = Some(measured.stats),
    }
}

fn finish(target: Measuring) -> CompareTarget {
    let run = target.stats.map(|stats| {
        let end = RunEnd { elapsed: target.elapsed, interrupted: false, due_not_sent: 0 };
        target.load.report(&stats, end)
    });
    CompareTarget {
        label: target.label,
        url: target.load.settings.url.clone(),
        error: target.error,
        rounds: target.rounds,
        run,
        diagnosis: None,
        diagnosis_error: None,
    }
}

/// The doctor on one target, after the rounds (so that its experiments do not disturb them).
fn diagnose(target: &mut CompareTarget, url: &str, args: &CompareArgs) -> Result<()> {
    if target.error.is_some() {
        return Ok(());
    }
    let parsed = parse_target(url)?;
    let workload = crate::workload::build_workload(&parsed, &args.load.request, true)?;
    let timeout = args.load.timeout.min(DIAGNOSIS_TIMEOUT);
    match examine(&parsed, &workload, &args.load.request, &args.server_view, DIAGNOSIS_BUDGET, timeout) {
        Ok(report) => target.diagnosis = Some(report),
        Err(error) => target.diagnosis_error = Some(format!("{error:#}")),
    }
    Ok(())
}
