//! The HTML report: one self-contained page (inline SVG plots, no network fetch) drawn from
//! runs in their JSON contract form, so that a live run and a saved one render alike.
//!
//! `read` reads each run drawn into its command's report model (`crate::saved`), `plots` draws
//! the SVGs on the value axes of `axis`, `context`, `sections` and `compare` make the
//! template's context, `markup` turns a report's backticked code into `<code>`, `page` renders
//! `page.html` (with `style.css`).

mod axis;
mod compare;
mod context;
mod error;
mod markup;
mod page;
mod plots;
mod read;
mod sections;
#[cfg(test)]
pub(crate) mod tests;

pub use error::HtmlError;

/// One page showing `runs` (each the JSON of a bench, compare, doctor, pcap or merge report)
/// together.
pub fn html_page(runs: &[serde_json::Value]) -> Result<String, HtmlError> {
    let runs: Vec<(Option<&str>, &serde_json::Value)> = runs.iter().map(|run| (None, run)).collect();
    page::render(&runs)
}

/// Whether `run` is one this build draws: an error naming it by `name` when it is not JSON of
/// a nodelay report, or of an older or newer schema than the ones read.
pub fn check_run(name: &str, run: &serde_json::Value) -> Result<(), HtmlError> {
    read::read_run(name, run).map(|_| ())
}

/// Like [`html_page`], for runs read from files: each is labelled, and named in errors, by
/// its file name.
pub fn html_page_of_files(runs: &[(String, serde_json::Value)]) -> Result<String, HtmlError> {
    let runs: Vec<(Option<&str>, &serde_json::Value)> =
        runs.iter().map(|(name, run)| (Some(name.as_str()), run)).collect();
    page::render(&runs)
}
