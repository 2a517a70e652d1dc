//! The HTML report: one self-contained page (inline SVG plots, no network fetch) drawn from
//! runs in their JSON contract form, so that a live run and a saved one render alike.

use std::fmt;

/// Why runs could not be drawn.
#[derive(Debug)]
pub struct HtmlError(pub String);

impl fmt::Display for HtmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HtmlError {}

/// One page showing `runs` (each the JSON of a bench, compare, doctor, pcap or merge report)
/// together.
pub fn html_page(runs: &[serde_json::Value]) -> Result<String, HtmlError> {
    let _ = runs;
    Err(HtmlError("the HTML report is not built yet".into()))
}
