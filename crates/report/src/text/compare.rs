//! `nodelay compare` as text: each target's figures with their spread across rounds, each
//! target against the first on p50, p99 and requests/s, the verdict, and with `--diagnose`
//! each target's findings.

use crate::format::{DurationScale, plural};
use crate::model::compare::{CompareReport, CompareTarget, format_p, format_ratio};
use crate::render::Render;
use crate::text::FittedText;
use crate::text::MIN_WIDTH;
use crate::text::finding::write_finding_fitted;
use crate::text::layout::{Col, TextTable};
use crate::text::wrap::wrap;
use nodelay_flags::Flag::{Baseline, Json};
use std::fmt::Write;

impl Render<CompareReport> for FittedText {
    fn render(&self, report: &CompareReport) -> String {
        let mut out = String::new();
        write_compare(&mut out, report, self.width.max(MIN_WIDTH)).expect("writing to a String cannot fail");
        out + &self.thresholds(&report.thresholds)
    }
}

/// What is about to run, before it runs: `labels` names each target and what it is;
/// `measured_now` of them are measured now, the rest read from saved runs.
pub fn compare_header(
    report_settings: &crate::model::bench::BenchSettings,
    labels: &[(String, String)],
    measured_now: usize,
    rounds: u32,
    width: usize,
) -> String {
    let s = report_settings;
    let bound = crate::text::bench::run_bound(s.requests, s.duration_s);
    let load = format!(
        "{bound} a round, {} and {} each",
        plural(s.connections, "connection", "connections"),
        plural(s.threads, "thread", "threads"),
    );
    let targets = plural(labels.len(), "target", "targets");
    let saved = labels.len() - measured_now;
    let what = match (measured_now, saved) {
        (_, 0) if labels.len() > 1 => {
            format!("{targets}, {rounds} rounds each, interleaved (the order alternates each round), {load}")
        }
        (_, 0) => format!("{targets} in {rounds} rounds, {load}"),
        (0, _) => format!("{targets}, each read from a saved run and compared as saved, {load}"),
        (_, _) => format!(
            "{targets}, {saved} read from saved runs, {measured_now} measured now in {rounds} rounds, {load}"
        ),
    };
    let mut out = wrap(&format!("nodelay compare: {what}"), width, "", "  ");
    for (label, url) in labels {
        out += &wrap(&format!("{label}: {url}"), width, "  ", "      ");
    }
    out
}

fn write_compare(out: &mut String, report: &CompareReport, width: usize) -> std::fmt::Result {
    writeln!(out)?;
    if report.interrupted {
        let line = interrupted_line(report.rounds, report.rounds_completed, report.interrupted_round);
        out.push_str(&wrap(&format!("{line}; no diagnosis was run"), width, "", "  "));
        writeln!(out)?;
    }
    write_figures(out, report, width)?;
    write_rounds(out, report, width)?;
    write_saved(out, report, width);
    for target in report.targets.iter().filter(|t| t.error.is_some()) {
        let why = target.error.as_deref().unwrap_or_default();
        out.push_str(&wrap(&format!("{}: not measured: {why}", target.label), width, "", "  "));
    }
    if let Some(first) = report.comparisons.first() {
        writeln!(out)?;
        // Every comparison is against the first target, and names it.
        let heading = format!(
            "against {} (Hodges-Lehmann ratio, {} interval, Mann-Whitney U over rounds):",
            first.against,
            crate::model::compare::confidence(report.alpha)
        );
        out.push_str(&wrap(&heading, width, "", "  "));
        let mut table =
            TextTable::new(width, 2, &[Col::Left, Col::Left, Col::Right, Col::Right, Col::Left, Col::Right]);
        table.header(["target", "figure", "ratio", "interval", "rounds", "p"]);
        table.keys(2);
        for c in &report.comparisons {
            let interval = match (c.interval_low, c.interval_high) {
                (Some(low), Some(high)) => format!("{}–{}×", format_ratio(low), format_ratio(high)),
                _ => "too few rounds".into(),
            };
            let figure = match &*c.metric {
                "p50_ms" => "p50",
                "p99_ms" => "p99",
                _ => "req/s",
            };
            let agree = if c.every_round_agrees { "all agree" } else { "overlap" };
            table.row([
                c.label.clone(),
                figure.into(),
                format!("{}×", format_ratio(c.ratio)),
                interval,
                agree.into(),
                format_p(c.p_value),
            ]);
        }
        out.push_str(&table.render());
        writeln!(out)?;
        for verdict in &report.verdicts {
            out.push_str(&wrap(&format!("verdict: {verdict}"), width, "", "  "));
        }
    }
    for target in report.targets.iter().filter(|t| t.diagnosis.is_some() || t.diagnosis_error.is_some()) {
        write_diagnosis(out, target, width)?;
    }
    Ok(())
}

/// What a Ctrl-C left, for the text and the page alike: the round it cut short is left out,
/// the whole rounds are compared.
pub(crate) fn interrupted_line(rounds: u32, completed: u32, cut_short: Option<u32>) -> String {
    let counted = match completed {
        0 => "no round was complete: nothing to compare".to_string(),
        n => plural(n as usize, "complete round is compared", "complete rounds are compared"),
    };
    match cut_short {
        Some(round) => format!(
            "interrupted (Ctrl-C) in round {round} of {rounds}: that round was cut short and is left out; {counted}"
        ),
        None => format!("interrupted (Ctrl-C) after round {completed} of {rounds}: {counted}"),
    }
}

/// One row per target: the figures of its rounds merged, and the spread of req/s and p50
/// across rounds.
fn write_figures(out: &mut String, report: &CompareReport, width: usize) -> std::fmt::Result {
    let runs: Vec<_> = report.targets.iter().filter_map(|t| t.run.as_ref().map(|run| (t, run))).collect();
    if runs.is_empty() {
        return Ok(());
    }
    // Each column its own unit: a fast target's microseconds need not widen a slow one's.
    let column = |pick: fn(&crate::model::bench::BenchReport) -> Option<f64>| {
        DurationScale::for_ms(runs.iter().filter_map(|(_, run)| pick(run)))
    };
    let columns: [fn(&crate::model::bench::BenchReport) -> Option<f64>; 5] = [
        |run| run.latency_ms.map(|p| p.p50),
        |run| run.latency_ms.map(|p| p.p90),
        |run| run.latency_ms.map(|p| p.p99),
        |run| run.first_byte_ms.map(|p| p.p50),
        |run| run.read_gap_ms.map(|p| p.p50),
    ];
    let scales: Vec<DurationScale> = columns.iter().map(|pick| column(*pick)).collect();
    let mut table = TextTable::new(
        width,
        2,
        &[Col::Left, Col::Right, Col::Right, Col::Right, Col::Right, Col::Right, Col::Right, Col::Right],
    );
    table.header(["target", "req/s", "p50", "p90", "p99", "1st byte", "read gap", "errors"]);
    for (target, run) in &runs {
        let mut cells = vec![target.label.clone(), format!("{:.1}", run.requests_per_second)];
        for (pick, scale) in columns.iter().zip(&scales) {
            cells.push(pick(run).map_or("-".into(), |ms| scale.format(ms)));
        }
        cells.push(run.total_errors().to_string());
        table.row(cells);
    }
    out.push_str(&table.render());
    out.push_str(&wrap(
        "every round's responses together; 1st byte and read gap (the longest pause within a response) are medians",
        width,
        "  ",
        "  ",
    ));
    // A timed round always stops with requests on the wire, and they are no errors; a target
    // that answered none of them would read as "errors 0" alone.
    for (target, run) in
        runs.iter().filter(|(_, run)| run.requests_completed == 0 && run.requests_unfinished > 0)
    {
        let were = if run.requests_unfinished == 1 { "was" } else { "were" };
        let line = format!(
            "{}: no response in any round; {} {were} still waiting when its rounds stopped",
            target.label,
            crate::text::bench::plural(run.requests_unfinished, "request", "requests")
        );
        out.push_str(&wrap(&line, width, "  ", "    "));
    }
    Ok(())
}

/// Where each saved target came from, and what reading it back means; for one target alone,
/// how to keep it as a baseline.
fn write_saved(out: &mut String, report: &CompareReport, width: usize) {
    for target in &report.targets {
        let Some(saved) = &target.saved else { continue };
        let machine = match &saved.machine {
            Some(m) if *m == report.machine => "on this machine".to_string(),
            Some(m) => format!("on {} ({}, {} cores)", m.hostname, m.kernel, m.cores),
            None => "on an unknown machine".to_string(),
        };
        let line = format!(
            "{}: read from {} ({}), measured {machine}: its rounds were not interleaved with this run's, so drift between the two runs counts as difference",
            target.label, saved.file, target.url
        );
        out.push_str(&wrap(&line, width, "  ", "    "));
    }
    if report.targets.len() == 1 && report.targets[0].saved.is_none() {
        writeln!(out).ok();
        let line = format!(
            "one target: nothing to set it against. Saved with {Json}, its rounds are a baseline: nodelay compare {Baseline} RUN.json URL"
        );
        out.push_str(&wrap(&line, width, "", "  "));
    }
}

/// Each target's spread across its rounds: the lowest and highest req/s and p50 of a round.
fn write_rounds(out: &mut String, report: &CompareReport, width: usize) -> std::fmt::Result {
    if report.targets.iter().all(|t| t.rounds.is_empty()) {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "spread across rounds (lowest – highest round):")?;
    let scale =
        DurationScale::for_ms(report.targets.iter().flat_map(|t| t.rounds.iter().filter_map(|r| r.p50_ms)));
    let mut table = TextTable::new(width, 2, &[Col::Left, Col::Right, Col::Right, Col::Right]);
    table.header(["target", "rounds", "req/s", "p50"]);
    for target in report.targets.iter().filter(|t| !t.rounds.is_empty()) {
        let range = |values: Vec<f64>, show: &dyn Fn(f64) -> String| {
            let low = values.iter().copied().fold(f64::INFINITY, f64::min);
            let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if values.is_empty() { "-".into() } else { format!("{} – {}", show(low), show(high)) }
        };
        table.row([
            target.label.clone(),
            target.rounds.len().to_string(),
            range(target.rounds.iter().map(|r| r.requests_per_second).collect(), &|v| format!("{v:.1}")),
            range(target.rounds.iter().filter_map(|r| r.p50_ms).collect(), &|v| scale.format(v)),
        ]);
    }
    out.push_str(&table.render());
    Ok(())
}

fn write_diagnosis(out: &mut String, target: &CompareTarget, width: usize) -> std::fmt::Result {
    writeln!(out)?;
    if let Some(why) = &target.diagnosis_error {
        out.push_str(&wrap(&format!("{} diagnosed: failed: {why}", target.label), width, "", "  "));
        return Ok(());
    }
    let Some(diagnosis) = &target.diagnosis else { return Ok(()) };
    let heading = format!("{} diagnosed ({}): verdict {}", target.label, target.url, diagnosis.verdict);
    out.push_str(&wrap(&heading, width, "", "  "));
    for finding in &diagnosis.findings {
        write_finding_fitted(out, finding, width)?;
    }
    // As under the doctor's own verdict: what a workload the target's client does not run
    // would cost, or what the doctor could not see.
    for note in &diagnosis.notes {
        out.push_str(&wrap(&format!("note: {}", note.title), width, "", "  "));
    }
    Ok(())
}
