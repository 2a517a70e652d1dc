//! `nodelay report merge LOG...`: reads the interval logs of any number of load machines
//! (`bench --hdr-log`), merges them (`nodelay_report::merge_logs`, lossless) and renders the
//! merged report.

use crate::args::MergeArgs;
use crate::exit::Outcome;
use crate::output::{self, create_output};
use crate::runner::text_width;
use anyhow::Result;
use nodelay_report::{FittedText, Json, Render, merge_logs};
use std::path::Path;

pub fn merge(args: &MergeArgs) -> Result<Outcome> {
    // The page is created before the logs are read: on one of them it would empty it first.
    for log in &args.logs {
        output::distinct_files(&[("an interval log", Some(log)), ("--html", args.html.as_deref())])?;
    }
    let html = create_output(args.html.as_deref(), "--html")?;
    let contents: Vec<Vec<u8>> = args.logs.iter().map(|path| read(path)).collect::<Result<_>>()?;
    let report = merge_logs(&args.logs, &contents)?;
    if let Some(warning) = report.mixed_targets() {
        output::stderr_line(&format!("nodelay: {warning}"));
    }
    if let Some(output) = html {
        output.write(crate::html::page_of(&report)?.as_bytes())?;
    }
    output::stdout(&if args.json {
        Json.render(&report)
    } else {
        FittedText::new(text_width()).render(&report)
    })?;
    Ok(Outcome::Success)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    nodelay_load::input::read_capped(path, "interval log", nodelay_load::input::MAX_SAVED_RUN_BYTES)
}
