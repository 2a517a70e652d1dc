//! `nodelay demo`: starts the embedded servers and runs the real doctor on each, so a new
//! user sees a stall, its proof and its fix with no setup and no network.

use crate::exit::Outcome;
use crate::output;
use crate::runner::text_width;
use anyhow::{Context, Result};
use nodelay_doctor::demo_servers::{DemoBehaviour, start_demo_server};
use nodelay_doctor::{Doctor, DoctorOptions};
use nodelay_load::ServerViewOptions;
use nodelay_report::{DoctorReport, MIN_WIDTH, format_duration_ms, wrap_words};
use std::time::Duration;

const BUDGET_PER_SERVER: Duration = Duration::from_secs(6);
const TIMEOUT: Duration = Duration::from_secs(2);
/// Columns a server's row takes on one line: its name, p50 and the longest verdict.
const ROW_WIDTH: usize = 78;

pub fn demo() -> Result<Outcome> {
    let behaviours = [
        DemoBehaviour::SplitWrites,
        DemoBehaviour::SplitWritesNoDelay,
        DemoBehaviour::CloseEveryResponse,
        DemoBehaviour::SlowHandler(Duration::from_millis(40)),
    ];
    // As every report: no narrower than the narrowest laid out.
    let width = text_width().max(MIN_WIDTH);
    let say = |first: &str, rest: &str, text: &str| {
        output::stdout(&(wrap_words(text, width, first, rest).join("\n") + "\n"))
    };
    say(
        "",
        "  ",
        &format!(
            "nodelay demo: diagnosing {} embedded servers on loopback with `nodelay doctor`",
            behaviours.len()
        ),
    )?;
    output::line("")?;
    // Rows are printed as each server's diagnosis ends. 2 + 40 + 10 + 2 + 24 columns: the
    // longest verdict fits 80; narrower, each server's figures go on the line under its name.
    let row = |server: &str, p50: &str, verdict: &str| {
        if width >= ROW_WIDTH {
            format!("  {server:<40}{p50:>10}  {verdict}")
        } else {
            format!("  {server}\n    {p50:>10}  {verdict}")
        }
    };
    output::line(&row("server", "p50", "verdict"))?;
    let mut reports = Vec::new();
    for behaviour in behaviours {
        let address = start_demo_server(behaviour).context("cannot start an embedded server")?;
        // The servers run inside nodelay: there is no other process to read.
        let options = DoctorOptions {
            budget: BUDGET_PER_SERVER,
            timeout: TIMEOUT,
            server_view: ServerViewOptions { pid: None, no_server_view: true },
            ..DoctorOptions::default()
        };
        let report = Doctor::new(&format!("http://{address}/"), options)?.run_first()?;
        let verdict: Vec<&str> = report.findings.iter().map(|f| f.id.as_str()).collect();
        let p50 = format_duration_ms(baseline_p50(&report));
        output::line(&row(&behaviour.describe(), &p50, &verdict.join(", ")))?;
        reports.push(report);
    }
    let (stalled, fixed) = (&reports[0], &reports[1]);
    output::line("")?;
    say(
        "",
        "  ",
        &format!(
            "before/after: {} -> {} per request by setting TCP_NODELAY on the server (row 1 -> row 2)",
            format_duration_ms(baseline_p50(stalled)),
            format_duration_ms(baseline_p50(fixed))
        ),
    )?;
    if let Some(finding) = stalled.findings.first() {
        output::line(&format!("\nrow 1, {}:", finding.id.as_str()))?;
        say("  ", "    ", &finding.title)?;
        for proof in &finding.proof {
            say("  ", "    ", &format!("proof: {}: {}", proof.experiment, proof.result))?;
        }
        say("  ", "    ", &format!("fix: {}", finding.fix_summary))?;
    }
    output::line("")?;
    say("", "  ", "Run `nodelay doctor URL` on your own service for the full report.")?;
    Ok(Outcome::Success)
}

fn baseline_p50(report: &DoctorReport) -> f64 {
    report.phases.first().map_or(0.0, |phase| phase.summary.total_p50_ms)
}
