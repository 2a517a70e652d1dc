//! `--html FILE`: any report, through its JSON contract form, as one self-contained page.

use anyhow::Result;
use serde::Serialize;

/// The page of one report.
pub fn page_of<R: Serialize>(report: &R) -> Result<String> {
    let run = serde_json::to_value(report)?;
    Ok(nodelay_report::html::html_page(&[run])?)
}
