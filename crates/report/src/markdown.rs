//! `--summary FILE.md`: a run as Markdown for a pull request (GitHub's `$GITHUB_STEP_SUMMARY`,
//! a GitLab comment): the verdict first, the `--fail-if` thresholds with ✔ or ✘, a small
//! table of figures, and each finding's proof and fix folded in `<details>`. No images and
//! nothing fetched; a link to the HTML page when one was written.

use crate::format::format_duration_ms;
use crate::gate::ThresholdResult;
use crate::model::bench::BenchReport;
use crate::model::compare::CompareReport;
use crate::model::compare::format_ratio;
use crate::model::doctor::DoctorReport;
use crate::model::percentiles::Percentiles;
use nodelay_diagnose::Finding;
use std::fmt::Write;
use std::path::Path;

/// A table cell: Markdown's own characters escaped, on one line.
fn cell(text: &str) -> String {
    text.replace('\\', "\\\\").replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Text inside `<details>`: HTML's characters escaped (it is HTML until its blank line).
fn html_text(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The heading's mark and words for the thresholds, if any were given.
fn gate_words(thresholds: &[ThresholdResult]) -> Option<String> {
    if thresholds.is_empty() {
        return None;
    }
    let crossed = thresholds.iter().filter(|t| t.crossed).count();
    Some(if crossed == 0 {
        format!("✔ {} of {} thresholds held", thresholds.len(), thresholds.len())
    } else {
        format!("✘ {crossed} of {} thresholds crossed", thresholds.len())
    })
}

fn thresholds_table(out: &mut String, thresholds: &[ThresholdResult]) {
    if thresholds.is_empty() {
        return;
    }
    out.push_str("\n| | threshold | measured |\n|---|---|---|\n");
    for result in thresholds {
        let mark = if result.crossed { "✘" } else { "✔" };
        let target = result.target.as_ref().map_or(String::new(), |t| format!("{t}: "));
        let measured = crate::text::gate_said(result);
        let _ = writeln!(
            out,
            "| {mark} | `{}` | {} |",
            cell(&format!("{target}{}", result.threshold)),
            cell(&measured)
        );
    }
}

fn figures_table(out: &mut String, rows: &[(&str, Option<&Percentiles>)]) {
    let rows: Vec<(&str, &Percentiles)> = rows.iter().filter_map(|(name, p)| p.map(|p| (*name, p))).collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("\n| | p50 | p90 | p99 | max |\n|---|---|---|---|---|\n");
    for (name, p) in rows {
        let [p50, p90, p99, max] = [p.p50, p.p90, p.p99, p.max].map(format_duration_ms);
        let _ = writeln!(out, "| {name} | {p50} | {p90} | {p99} | {max} |");
    }
}

/// A finding folded: its title as the summary, then evidence, proof and fixes.
fn finding_details(out: &mut String, finding: &Finding) {
    let proven = if finding.proven { "proven" } else { "not proven" };
    let _ = writeln!(
        out,
        "\n<details><summary><b>{}</b> ({proven}): {}</summary>\n",
        finding.id.as_str(),
        html_text(&finding.title)
    );
    for evidence in &finding.evidence {
        let _ = writeln!(out, "- {}: {} {}", evidence.what, format_value(evidence.value), evidence.unit);
    }
    for proof in &finding.proof {
        let _ = writeln!(out, "- proof, {}: {}", proof.experiment, proof.result);
    }
    let _ = writeln!(out, "\n**Fix:** {}\n", finding.fix_summary);
    for fix in &finding.fix {
        let detected = if fix.detected { " (this server's stack)" } else { "" };
        let _ = writeln!(out, "- {}{detected}: {}", fix.stack, fix.how);
    }
    out.push_str("\n</details>\n");
}

fn format_value(value: f64) -> String {
    if value.fract() == 0.0 { format!("{value:.0}") } else { format!("{value:.2}") }
}

/// A run stopped early (Ctrl-C) says so under its heading: its figures rest on less.
fn interrupted_line(out: &mut String, interrupted: bool) {
    if interrupted {
        out.push_str("\n**Stopped early (Ctrl-C):** the figures rest on less than was asked for.\n");
    }
}

fn html_link(out: &mut String, html: Option<&Path>) {
    if let Some(page) = html.map(|p| p.display().to_string()) {
        let _ = writeln!(out, "\nThe whole run, drawn: [{}]({})", cell(&page), page.replace(' ', "%20"));
    }
}

/// `bench`'s summary: thresholds, figures, suggestions folded.
pub fn bench_summary(report: &BenchReport, html: Option<&Path>) -> String {
    let s = &report.settings;
    let verdict = gate_words(&report.thresholds).unwrap_or_else(|| "measured".into());
    let mut out = format!("### nodelay bench: {verdict}\n\n");
    let _ = writeln!(
        out,
        "`{} {}`: {} responses in {:.2} s, {:.1} req/s, {} connections",
        s.method,
        cell(&s.url),
        report.requests_completed,
        report.elapsed_s,
        report.requests_per_second,
        s.connections
    );
    interrupted_line(&mut out, report.interrupted);
    thresholds_table(&mut out, &report.thresholds);
    let rows = [
        ("total", report.latency_ms.as_ref()),
        ("first byte", report.first_byte_ms.as_ref()),
        ("read gap", report.read_gap_ms.as_ref()),
    ];
    figures_table(&mut out, &rows);
    for suggestion in &report.suggestions {
        let _ = writeln!(
            out,
            "\n<details><summary><b>{}</b> (suspected, not proven)</summary>\n\n{}\n\nProve it: `{}`\n\n</details>",
            suggestion.id,
            html_text(&suggestion.why),
            suggestion.prove
        );
    }
    html_link(&mut out, html);
    // A blank line last: an HTML block (`</details>`) runs on until one, and the next run's
    // summary may be appended right after.
    out.push('\n');
    out
}

/// `doctor`'s summary: the verdict (each finding named), thresholds, the phases' figures,
/// each finding's proof and fix folded.
pub fn doctor_summary(report: &DoctorReport, html: Option<&Path>) -> String {
    let ids: Vec<&str> = report.findings.iter().map(|f| f.id.as_str()).collect();
    let gate = gate_words(&report.thresholds).map_or(String::new(), |words| format!(" ({words})"));
    let mut out = format!("### nodelay doctor: {}{gate}\n\n", ids.join(", "));
    let _ = writeln!(
        out,
        "`{}`, {:.1} s of a {:.0} s budget",
        cell(&report.url),
        report.elapsed_s,
        report.budget_s
    );
    interrupted_line(&mut out, report.interrupted);
    thresholds_table(&mut out, &report.thresholds);
    out.push_str("\n| phase | responses | p50 | p90 | p99 | first byte p50 |\n|---|---|---|---|---|---|\n");
    for phase in &report.phases {
        let s = &phase.summary;
        let [p50, p90, p99, first] =
            [s.total_p50_ms, s.total_p90_ms, s.total_p99_ms, s.first_byte_p50_ms].map(format_duration_ms);
        let _ = writeln!(
            out,
            "| {} | {} | {p50} | {p90} | {p99} | {first} |",
            cell(&phase.description),
            s.responses
        );
    }
    for finding in report.findings.iter().filter(|f| f.id != nodelay_diagnose::FindingId::Healthy) {
        finding_details(&mut out, finding);
    }
    html_link(&mut out, html);
    // A blank line last: an HTML block (`</details>`) runs on until one, and the next run's
    // summary may be appended right after.
    out.push('\n');
    out
}

/// `compare`'s summary: the verdicts, thresholds (the regression gate's too), and the ratios
/// with their confidence intervals.
pub fn compare_summary(report: &CompareReport, html: Option<&Path>) -> String {
    let verdict = gate_words(&report.thresholds).unwrap_or_else(|| "compared".into());
    let mut out = format!("### nodelay compare: {verdict}\n\n");
    for line in &report.verdicts {
        let _ = writeln!(out, "- {}", cell(line));
    }
    interrupted_line(&mut out, report.interrupted);
    thresholds_table(&mut out, &report.thresholds);
    let confidence = crate::model::compare::confidence(report.alpha);
    let _ = write!(
        out,
        "\n| target | against | figure | ratio | {confidence} interval | p |\n|---|---|---|---|---|---|\n"
    );
    for c in &report.comparisons {
        let interval = match (c.interval_low, c.interval_high) {
            (Some(low), Some(high)) => format!("{}×–{}×", format_ratio(low), format_ratio(high)),
            _ => "too few rounds".into(),
        };
        let figure = c.metric.trim_end_matches("_ms").replace("requests_per_second", "req/s");
        let _ = writeln!(
            out,
            "| {} | {} | {figure} | {}× | {interval} | {:.3} |",
            cell(&c.label),
            cell(&c.against),
            format_ratio(c.ratio),
            c.p_value
        );
    }
    html_link(&mut out, html);
    // A blank line last: an HTML block (`</details>`) runs on until one, and the next run's
    // summary may be appended right after.
    out.push('\n');
    out
}
