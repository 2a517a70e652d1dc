//! Saved load runs as text: a bench run, interval logs merged, and a compare of targets,
//! each headed as its live run and with its latency percentiles in a table.

use super::finding::write_finding;
use crate::format::DurationScale;
use crate::saved::{BenchSettingsView, BenchView, CompareView, PercentilesView};
use crate::text::bench::{
    bench_heading, bench_summary, error_rows, load_line, plural, rate_line, reuse_text, run_bound,
    status_row, write_labelled, write_latency_columns, write_suggestions,
};
use crate::text::compare::interrupted_line;
use crate::text::layout::{Col, TextTable};
use crate::text::wrap::wrap;
use std::fmt::Write;

/// The rows of a latency table.
const STATISTICS: [&str; 5] = ["min", "p50", "p90", "p99", "max"];

/// Each of [`STATISTICS`] of `p`.
fn statistics_of(p: &PercentilesView) -> Vec<f64> {
    vec![p.min, p.p50, p.p90, p.p99, p.max]
}

pub fn write_bench(out: &mut String, r: &BenchView, s: &BenchSettingsView, width: usize) -> std::fmt::Result {
    let bound = run_bound(s.requests, s.duration_s);
    let load = load_line(s.connections, s.threads, s.keep_alive, &bound, s.rate_per_second);
    out.push_str(&bench_heading(&s.method, &s.url, &s.address, &load, width));
    writeln!(out)?;
    let rate = rate_line(r.requests_completed, r.elapsed_s, "", r.requests_per_second);
    let summary = bench_summary(&rate, r.response_bytes, r.transfer_bytes_per_second);
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
    let suggestions = r.suggestions.iter().map(|s| (s.id.as_str(), s.why.as_str(), s.prove.as_str()));
    write_suggestions(out, suggestions, width)
}

/// One column per figure measured, one row per statistic, each column in its own unit; "no
/// response completed" when there is none.
fn write_latency_table(
    out: &mut String,
    measured: &[(&str, Option<PercentilesView>)],
    width: usize,
) -> std::fmt::Result {
    let measured: Vec<(&str, Vec<f64>)> =
        measured.iter().filter_map(|(label, p)| Some((*label, statistics_of(p.as_ref()?)))).collect();
    write_latency_columns(out, &STATISTICS, &measured, width)
}

/// Statuses, connection reuse, errors and requests left in flight, a label beside each.
fn write_outcomes(out: &mut String, r: &BenchView, s: &BenchSettingsView, width: usize) {
    let mut rows: Vec<(&str, String)> = Vec::new();
    if s.protocol == "http" {
        rows.push(status_row(&r.status_counts));
    }
    let responses = plural(r.requests_completed, "response", "responses");
    if r.non_success_responses > 0 {
        let line = format!("{} of {responses} are not a success (an error page?)", r.non_success_responses);
        rows.push(("non-success", line));
    }
    if s.keep_alive && r.requests_completed > 0 {
        let line = reuse_text(r.reused_connection_responses, &responses, r.connections_opened);
        rows.push(("keep-alive", line));
    }
    rows.extend(error_rows(
        r.errors.iter().map(|(kind, n)| (kind.as_str(), *n, r.error_examples.get(kind).map(String::as_str))),
    ));
    if r.requests_unfinished > 0 {
        let line = format!(
            "{} still running at the end (not counted)",
            plural(r.requests_unfinished, "request", "requests")
        );
        rows.push(("in flight", line));
    }
    write_labelled(out, rows, width);
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
    let summary = rate_line(r.requests_completed, r.span_s, " (all logs)", r.requests_per_second);
    out.push_str(&wrap(&summary, width, "  ", "    "));
    write_latency_table(out, &[("latency", r.latency_ms)], width)
}

pub fn write_compare(out: &mut String, r: &CompareView, width: usize) -> std::fmt::Result {
    let rounds = r.rounds_completed.unwrap_or(r.rounds);
    let interleaved = if r.targets.len() > 1 { ", interleaved" } else { "" };
    let heading = format!(
        "nodelay compare: {}, {} of {} rounds each{interleaved}",
        crate::format::plural(r.targets.len(), "target", "targets"),
        rounds,
        r.rounds
    );
    out.push_str(&wrap(&heading, width, "", "  "));
    for target in &r.targets {
        let saved = target.saved.as_ref().map_or(String::new(), |s| format!(" (read from {})", s.file));
        out.push_str(&wrap(&format!("{}: {}{saved}", target.label, target.url), width, "  ", "      "));
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
    // Reports written before `verdicts` was added give the p50 comparison's verdict.
    let verdicts: Vec<&str> = if r.verdicts.is_empty() {
        r.comparisons.iter().filter(|c| c.metric == "p50_ms").map(|c| c.verdict.as_str()).collect()
    } else {
        r.verdicts.iter().map(String::as_str).collect()
    };
    if !verdicts.is_empty() {
        writeln!(out)?;
    }
    for verdict in verdicts {
        out.push_str(&wrap(&format!("verdict: {verdict}"), width, "", "  "));
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
