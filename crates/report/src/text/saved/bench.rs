//! Saved load runs as text: a bench run, interval logs merged, and a compare of targets,
//! each headed as its live run and with its latency percentiles in a table.

use super::finding::write_finding;
use crate::format::{DurationScale, format_bytes, format_status_counts};
use crate::saved::{BenchSettingsView, BenchView, CompareView, PercentilesView};
use crate::text::bench::{format_elapsed, plural};
use crate::text::compare::interrupted_line;
use crate::text::layout::{Col, TextTable};
use crate::text::wrap::wrap;
use std::fmt::Write;

/// Picks one statistic out of a set of percentiles.
type Statistic = fn(&PercentilesView) -> f64;

/// The rows of a latency table.
const STATISTICS: [(&str, Statistic); 5] =
    [("min", |p| p.min), ("p50", |p| p.p50), ("p90", |p| p.p90), ("p99", |p| p.p99), ("max", |p| p.max)];

pub fn write_bench(out: &mut String, r: &BenchView, s: &BenchSettingsView, width: usize) -> std::fmt::Result {
    out.push_str(&wrap(&format!("nodelay bench {} {} ({})", s.method, s.url, s.address), width, "", "  "));
    let bound = match (s.requests, s.duration_s) {
        (Some(n), _) => plural(n, "request", "requests"),
        (None, Some(seconds)) => format!("{seconds} s"),
        (None, None) => "unbounded".into(),
    };
    let pacing = s.rate_per_second.map(|rate| format!(", open loop at {rate} req/s")).unwrap_or_default();
    let mode = if s.keep_alive { "keep-alive" } else { "new connection per request" };
    let run = format!(
        "{}, {}, {mode}, {bound}{pacing}",
        plural(s.connections, "connection", "connections"),
        plural(s.threads, "thread", "threads"),
    );
    out.push_str(&wrap(&run, width, "  ", "    "));
    writeln!(out)?;
    let summary = format!(
        "{} in {}: {:.1} req/s; {} read, {}/s",
        plural(r.requests_completed, "response", "responses"),
        format_elapsed(r.elapsed_s),
        r.requests_per_second,
        format_bytes(r.response_bytes as f64),
        format_bytes(r.transfer_bytes_per_second),
    );
    out.push_str(&wrap(&summary, width, "  ", "    "));
    if r.interrupted {
        let line = "interrupted (Ctrl-C): the figures cover what completed until then";
        out.push_str(&wrap(line, width, "  ", "    "));
    }
    let measured = [
        ("total", r.latency_ms),
        ("first byte", r.first_byte_ms),
        ("read gap", r.read_gap_ms),
        ("connect", r.connect_ms),
        ("TLS handshake", r.tls_handshake_ms),
    ];
    write_latency_table(out, &measured, width)?;
    writeln!(out)?;
    write_outcomes(out, r, s, width);
    for finding in &r.findings {
        write_finding(out, finding, width)?;
    }
    if !r.suggestions.is_empty() {
        writeln!(out)?;
        out.push_str(&wrap(
            "what these numbers suggest (not proven; no experiment was run):",
            width,
            "",
            "  ",
        ));
        for suggestion in &r.suggestions {
            out.push_str(&wrap(&format!("{}: {}", suggestion.id, suggestion.why), width, "  ", "    "));
            out.push_str(&wrap(&format!("prove it: {}", suggestion.prove), width, "    ", "      "));
        }
    }
    Ok(())
}

/// One column per figure measured, one row per statistic, each column in its own unit; "no
/// response completed" when there is none.
fn write_latency_table(
    out: &mut String,
    measured: &[(&str, Option<PercentilesView>)],
    width: usize,
) -> std::fmt::Result {
    let measured: Vec<(&str, PercentilesView)> =
        measured.iter().filter_map(|(label, p)| Some((*label, (*p)?))).collect();
    if measured.is_empty() {
        return writeln!(out, "  no response completed");
    }
    writeln!(out)?;
    let scales: Vec<DurationScale> = measured
        .iter()
        .map(|(_, p)| DurationScale::for_ms(STATISTICS.iter().map(|(_, pick)| pick(p))))
        .collect();
    let mut columns = vec![Col::Left];
    columns.extend(measured.iter().map(|_| Col::Right));
    let mut table = TextTable::new(width, 2, &columns);
    table.header(std::iter::once("").chain(measured.iter().map(|(label, _)| *label)));
    for (statistic, pick) in STATISTICS {
        let values = measured.iter().zip(&scales).map(|((_, p), scale)| scale.format(pick(p)));
        table.row(std::iter::once(statistic.to_string()).chain(values));
    }
    out.push_str(&table.render());
    Ok(())
}

/// Statuses, connection reuse, errors and requests left in flight, a label beside each.
fn write_outcomes(out: &mut String, r: &BenchView, s: &BenchSettingsView, width: usize) {
    let mut rows: Vec<(&str, String)> = Vec::new();
    if s.protocol == "http" {
        let statuses = format_status_counts(&r.status_counts);
        rows.push(("status", if statuses.is_empty() { "none".into() } else { statuses }));
    }
    let responses = plural(r.requests_completed, "response", "responses");
    if r.non_success_responses > 0 {
        let line = format!("{} of {responses} are not a success (an error page?)", r.non_success_responses);
        rows.push(("non-success", line));
    }
    if s.keep_alive && r.requests_completed > 0 {
        let opened = plural(r.connections_opened, "connection", "connections");
        let line =
            format!("{} of {responses} reused a connection; {opened} opened", r.reused_connection_responses);
        rows.push(("keep-alive", line));
    }
    let failed: Vec<_> = r.errors.iter().filter(|(_, n)| **n > 0).collect();
    if failed.is_empty() {
        rows.push(("errors", "none".into()));
    }
    for (i, (kind, n)) in failed.into_iter().enumerate() {
        let example = r.error_examples.get(kind).map(|m| format!(" (first: {m})")).unwrap_or_default();
        rows.push((if i == 0 { "errors" } else { "" }, format!("{kind} ×{n}{example}")));
    }
    if r.requests_unfinished > 0 {
        let line = format!(
            "{} still running at the end (not counted)",
            plural(r.requests_unfinished, "request", "requests")
        );
        rows.push(("in flight", line));
    }
    let mut table = TextTable::new(width, 2, &[Col::Left, Col::Text]);
    for (label, text) in rows {
        table.row([label.to_string(), text]);
    }
    out.push_str(&table.render());
}

pub fn write_merge(out: &mut String, r: &BenchView, width: usize) -> std::fmt::Result {
    let logs: Vec<&str> = r.logs.iter().map(|log| log.path.as_str()).collect();
    let title = format!(
        "nodelay report merge: {}: {}",
        plural(logs.len() as u64, "interval log", "interval logs"),
        logs.join(", ")
    );
    out.push_str(&wrap(&title, width, "", "  "));
    writeln!(out)?;
    let summary = format!(
        "{} in {} (all logs): {:.1} req/s",
        plural(r.requests_completed, "response", "responses"),
        format_elapsed(r.span_s),
        r.requests_per_second,
    );
    out.push_str(&wrap(&summary, width, "  ", "    "));
    write_latency_table(out, &[("latency", r.latency_ms)], width)
}

pub fn write_compare(out: &mut String, r: &CompareView, width: usize) -> std::fmt::Result {
    let rounds = r.rounds_completed.unwrap_or(r.rounds);
    let heading = format!(
        "nodelay compare: {} targets, {} of {} rounds each, interleaved",
        r.targets.len(),
        rounds,
        r.rounds
    );
    out.push_str(&wrap(&heading, width, "", "  "));
    for target in &r.targets {
        out.push_str(&wrap(&format!("{}: {}", target.label, target.url), width, "  ", "      "));
    }
    if r.interrupted {
        let (total, done) =
            (u32::try_from(r.rounds).unwrap_or(u32::MAX), u32::try_from(rounds).unwrap_or(u32::MAX));
        let cut_short = r.interrupted_round.and_then(|round| u32::try_from(round).ok());
        out.push_str(&wrap(&interrupted_line(total, done, cut_short), width, "  ", "    "));
    }
    writeln!(out)?;
    let runs: Vec<_> = r.targets.iter().filter_map(|t| Some((t, t.run.as_ref()?))).collect();
    // Each column its own unit: a fast target's microseconds need not widen a slow one's.
    let picks: [fn(&BenchView) -> Option<f64>; 3] = [
        |run| run.latency_ms.map(|p| p.p50),
        |run| run.latency_ms.map(|p| p.p90),
        |run| run.latency_ms.map(|p| p.p99),
    ];
    let scales: Vec<DurationScale> = picks
        .iter()
        .map(|pick| DurationScale::for_ms(runs.iter().filter_map(|(_, run)| pick(run))))
        .collect();
    let mut table =
        TextTable::new(width, 2, &[Col::Left, Col::Right, Col::Right, Col::Right, Col::Right, Col::Right]);
    table.header(["target", "req/s", "p50", "p90", "p99", "errors"]);
    for (target, run) in &runs {
        let mut cells = vec![target.label.clone(), format!("{:.1}", run.requests_per_second)];
        for (pick, scale) in picks.iter().zip(&scales) {
            cells.push(pick(run).map_or("-".into(), |ms| scale.format(ms)));
        }
        cells.push(run.errors.values().sum::<u64>().to_string());
        table.row(cells);
    }
    out.push_str(&table.render());
    for target in &r.targets {
        if let Some(why) = &target.error {
            out.push_str(&wrap(&format!("{}: not measured: {why}", target.label), width, "  ", "    "));
        }
    }
    let verdicts: Vec<_> = r.comparisons.iter().filter(|c| c.metric == "p50_ms").collect();
    if !verdicts.is_empty() {
        writeln!(out)?;
    }
    for comparison in verdicts {
        out.push_str(&wrap(&format!("verdict: {}", comparison.verdict), width, "", "  "));
    }
    for target in &r.targets {
        if let Some(why) = &target.diagnosis_error {
            writeln!(out)?;
            out.push_str(&wrap(&format!("{} diagnosed: failed: {why}", target.label), width, "", "  "));
        }
        let Some(diagnosis) = &target.diagnosis else { continue };
        writeln!(out)?;
        let heading = format!("{} diagnosed ({}): verdict {}", target.label, target.url, diagnosis.verdict);
        out.push_str(&wrap(&heading, width, "", "  "));
        for finding in &diagnosis.findings {
            write_finding(out, finding, width)?;
        }
    }
    Ok(())
}
