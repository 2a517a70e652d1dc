//! A saved diagnosis as text, laid out as a live one (`text::doctor`): what was measured in
//! each phase, each hop's verdict, the findings, then the verdict line.

use super::finding::write_finding;
use crate::format::{format_seconds, format_status_counts};
use crate::saved::{DoctorScenarioView, DoctorView, PhaseView};
use crate::text::doctor::{PhaseRow, write_phases};
use crate::text::layout::{Col, TextTable};
use crate::text::wrap::wrap;
use std::fmt::Write;

pub fn write_doctor(out: &mut String, r: &DoctorView, width: usize) -> std::fmt::Result {
    let header = format!(
        "nodelay doctor {} ({}): {:.1} s of a {} budget",
        r.url,
        r.address,
        r.elapsed_s,
        format_seconds(r.budget_s)
    );
    out.push_str(&wrap(&header, width, "", "  "));
    writeln!(out)?;
    let phases: Vec<PhaseRow> = r.phases.iter().map(phase_row).collect();
    write_phases(out, &phases, width);
    for phase in r.phases.iter().filter(|p| p.errors > 0) {
        let line = format!(
            "{}: {} of {} requests failed",
            phase.name,
            phase.errors,
            phase.attempts.max(phase.errors)
        );
        out.push_str(&wrap(&line, width, "  ", "    "));
    }
    if !r.skipped_experiments.is_empty() {
        let line = format!("skipped for lack of budget: {}", r.skipped_experiments.join(", "));
        out.push_str(&wrap(&line, width, "  ", "    "));
    }
    if r.interrupted {
        let line = "interrupted (Ctrl-C): the findings rest on what was measured until then";
        out.push_str(&wrap(line, width, "  ", "    "));
    }
    if !r.hops.is_empty() {
        writeln!(out)?;
    }
    for hop in &r.hops {
        let what = match (&hop.report, &hop.error) {
            (Some(report), _) => format!("verdict: {}", verdict(report)),
            (None, error) => format!("not diagnosed: {}", error.as_deref().unwrap_or("no reason given")),
        };
        let line = format!("upstream {} ({}), diagnosed directly: {what}", hop.address, hop.how_used);
        out.push_str(&wrap(&line, width, "", "  "));
    }
    for finding in &r.findings {
        write_finding(out, finding, width)?;
    }
    if let Some(try_fix) = &r.try_fix {
        writeln!(out)?;
        out.push_str(&wrap(&format!("try-fix: {}", try_fix.outcome), width, "", "  "));
    }
    writeln!(out)?;
    out.push_str(&wrap(&format!("verdict: {}", verdict(r)), width, "", "  "));
    // As the live text has them: what a workload the client did not run would cost, or what
    // the doctor could not see.
    for note in &r.notes {
        out.push_str(&wrap(&format!("note: {}", note.title), width, "", "  "));
    }
    Ok(())
}

fn phase_row(phase: &PhaseView) -> PhaseRow<'_> {
    PhaseRow {
        description: &phase.description,
        responses: phase.responses,
        errors: phase.errors,
        total_p50_ms: phase.total_p50_ms,
        first_byte_p50_ms: phase.first_byte_p50_ms,
        read_gap_p50_ms: phase.read_gap_p50_ms,
        paused_share: (phase.steady_responses > 0)
            .then(|| phase.stalled as f64 / phase.steady_responses as f64),
    }
}

/// The findings' ids (the run's verdict when it has none), with the error page measured and
/// whether it was interrupted: the live verdict line.
fn verdict(r: &DoctorView) -> String {
    let ids: Vec<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
    let ids = if ids.is_empty() { r.verdict.clone() } else { ids.join(", ") };
    // Never "healthy" alone when what was measured is an error page.
    let of_what = match &r.error_page {
        Some(page) if page.responses == page.of => {
            format!(" (of an error page: {})", format_status_counts(&page.status_counts))
        }
        Some(page) => format!(
            " ({} of {} responses an error page: {})",
            page.responses,
            page.of,
            format_status_counts(&page.status_counts)
        ),
        None => String::new(),
    };
    let interrupted = if r.interrupted { " (interrupted)" } else { "" };
    format!("{ids}{of_what}{interrupted}")
}

pub fn write_scenario(out: &mut String, r: &DoctorScenarioView, width: usize) -> std::fmt::Result {
    let heading = format!("nodelay doctor {}: {} requests of a scenario", r.url, r.requests.len());
    out.push_str(&wrap(&heading, width, "", "  "));
    let mut table = TextTable::new(width, 2, &[Col::Text, Col::Text]);
    for named in &r.requests {
        table.row([named.name.clone(), verdict(&named.report)]);
    }
    out.push_str(&table.render());
    if r.interrupted {
        let line = "interrupted (Ctrl-C): the requests after the last one below were not diagnosed";
        out.push_str(&wrap(line, width, "  ", "    "));
    }
    for named in &r.requests {
        writeln!(out)?;
        out.push_str(&wrap(&format!("=== request '{}' ===", named.name), width, "", "  "));
        write_doctor(out, &named.report, width)?;
    }
    Ok(())
}
