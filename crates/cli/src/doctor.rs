//! `nodelay doctor`: hands the arguments to `nodelay_doctor`, draws its progress on stderr,
//! renders the report and maps it to an exit status (0 healthy, 3 a finding, 1 unreliable,
//! 4 a `--fail-if` threshold crossed).

use crate::args::DoctorArgs;
use crate::exit::Outcome;
use crate::output::{self, OutputFile};
use crate::runner::{DoctorProgress, text_width};
use anyhow::{Result, bail};
use nodelay_doctor::{Diagnosis, Doctor};
use nodelay_report::gate::GatedCommand;
use nodelay_report::{FittedText, Json, Render};
use serde::Serialize;

pub fn doctor(args: &DoctorArgs) -> Result<Outcome> {
    nodelay_doctor::supported()?;
    args.gate.options().check_for(GatedCommand::Doctor)?;
    let doctor = Doctor::new(&args.url, args.options())?;
    let html = output::create_output(args.html.as_deref(), "--html")?;
    let summary = args.gate.options().open_summary()?;
    let mut progress = DoctorProgress::start(args.budget);
    let mut diagnosis = doctor.run(&mut progress)?;
    progress.finish();
    let results = diagnosis.hold(&args.gate.fail_if);
    match &diagnosis {
        Diagnosis::Single(report) => show(report, args.json, html)?,
        Diagnosis::Scenario(report) => show(report, args.json, html)?,
    }
    summary.map(|s| s.write(&diagnosis.summary(args.html.as_deref()))).transpose()?;
    if let Some(why) = diagnosis.unreliable() {
        bail!("could not measure {} reliably: {why}", doctor.workload().url);
    }
    let found = if diagnosis.is_healthy() { Outcome::Success } else { Outcome::Findings };
    Ok(found.gated(&results))
}

/// Writes the page, if asked for, and prints the report as text or JSON.
fn show<R: Serialize>(report: &R, json: bool, html: Option<OutputFile>) -> Result<()>
where
    Json: Render<R>,
    FittedText: Render<R>,
{
    if let Some(output) = html {
        output.write(crate::html::page_of(report)?.as_bytes())?;
    }
    output::stdout(&if json { Json.render(report) } else { FittedText::new(text_width()).render(report) })
}
