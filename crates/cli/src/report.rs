//! `nodelay report`: saved runs rendered together as one HTML page, or interval logs of many
//! load machines merged (`report merge`).

use crate::args::{ReportArgs, ReportCommand};
use crate::exit::Outcome;
use crate::output::create_output;
use anyhow::{Context, Result, bail};
use std::path::Path;

pub fn report(args: &ReportArgs) -> Result<Outcome> {
    match &args.merge {
        Some(ReportCommand::Merge(merge)) => crate::merge::merge(merge),
        None => render(&args.runs, args.html.as_deref()),
    }
}

/// Reads each saved run, then writes the page of them all to `html`.
fn render(paths: &[std::path::PathBuf], html: Option<&Path>) -> Result<Outcome> {
    let Some(html) = html else { bail!(crate::exit::UsageError("report: --html FILE is required".into())) };
    for run in paths {
        crate::output::distinct_files(&[("a saved run", Some(run)), ("--html", Some(html))])?;
    }
    let runs = paths.iter().map(|path| read_run(path)).collect::<Result<Vec<_>>>()?;
    let page = nodelay_report::html::html_page_of_files(&runs)?;
    let output = create_output(Some(html), "--html")?.context("--html names a file")?;
    output.write(page.as_bytes())?;
    Ok(Outcome::Success)
}

/// One saved run: its file name, for the page's labels, and its JSON.
fn read_run(path: &Path) -> Result<(String, serde_json::Value)> {
    let bytes =
        nodelay_load::input::read_capped(path, "saved run", nodelay_load::input::MAX_SAVED_RUN_BYTES)?;
    let run: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        anyhow::anyhow!("{} is not JSON ({e}): report reads runs saved with --json", path.display())
    })?;
    let name =
        path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    // Errors name the file as given; the page labels it by its name.
    nodelay_report::html::check_run(&path.display().to_string(), &run)?;
    Ok((name, run))
}
