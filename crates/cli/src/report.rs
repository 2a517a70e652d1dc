//! `nodelay report`: saved runs printed as text or drawn together on one HTML page, or
//! interval logs of many load machines merged (`report merge`).

use crate::args::{ReportArgs, ReportCommand};
use crate::exit::Outcome;
use crate::output::create_output;
use crate::runner::text_width;
use anyhow::{Context, Result};
use std::path::Path;

pub fn report(args: &ReportArgs) -> Result<Outcome> {
    match &args.merge {
        Some(ReportCommand::Merge(merge)) => crate::merge::merge(merge),
        None => render(&args.runs, args.html.as_deref()),
    }
}

/// Reads each saved run, then prints each as text (a blank line apart) or writes their page.
fn render(paths: &[std::path::PathBuf], html: Option<&Path>) -> Result<Outcome> {
    let Some(html) = html else {
        let text = |path: &std::path::PathBuf| -> Result<String> {
            let (name, (_, run)) = (path.display().to_string(), read_run(path, false)?);
            nodelay_report::text_of_saved_run(&name, &run, text_width()).map_err(anyhow::Error::msg)
        };
        crate::output::stdout(&paths.iter().map(text).collect::<Result<Vec<_>>>()?.join("\n"))?;
        return Ok(Outcome::Success);
    };
    for run in paths {
        crate::output::distinct_files(&[("a saved run", Some(run)), ("--html", Some(html))])?;
    }
    let runs = paths.iter().map(|path| read_run(path, true)).collect::<Result<Vec<_>>>()?;
    let page = nodelay_report::html::html_page_of_files(&runs)?;
    let output = create_output(Some(html), "--html")?.context("--html names a file")?;
    output.write(page.as_bytes())?;
    Ok(Outcome::Success)
}

/// One saved run: its file name, for the page's labels, and its JSON, checked as one the page
/// draws when it is `for_the_page` (the text checks its own).
fn read_run(path: &Path, for_the_page: bool) -> Result<(String, serde_json::Value)> {
    let bytes =
        nodelay_load::input::read_capped(path, "saved run", nodelay_load::input::MAX_SAVED_RUN_BYTES)?;
    let run: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        anyhow::anyhow!("{} is not JSON ({e}): report reads runs saved with --json", path.display())
    })?;
    let name =
        path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    // Errors name the file as given; the page labels it by its name.
    for_the_page.then(|| nodelay_report::html::check_run(&path.display().to_string(), &run)).transpose()?;
    Ok((name, run))
}
