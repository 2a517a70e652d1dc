//! Runs saved with `--json` printed as text again (`nodelay report RUN.json`): each kind told
//! apart by its `schema` id, read back into its command's report model (`crate::saved`, which
//! the HTML page reads too), and printed by the live run's own renderer, fitted to a width.

#[cfg(test)]
mod tests;

use crate::model::compare::CompareReport;
use crate::render::Render;
use crate::saved::{Kind, Reader, Run};
use crate::text::compare::compare_header;
use crate::text::{FittedText, MIN_WIDTH};
use serde_json::Value;

/// The kinds of run printed, and the fields of each printed that every version of its schema
/// has written (a file without them is no such report, and would print zeros).
const READER: Reader = Reader {
    kinds: &[
        (Kind::Bench, &["settings", "requests_completed", "requests_per_second", "latency_ms"]),
        (Kind::Merge, &["logs", "requests_completed", "requests_per_second", "latency_ms"]),
        (Kind::Compare, &["rounds", "targets", "comparisons"]),
        (Kind::Doctor, &["url", "verdict", "phases", "findings"]),
        (Kind::DoctorScenario, &["url", "verdict", "requests"]),
        (Kind::Pcap, &["file", "packets", "flows", "stalls", "verdict", "findings"]),
        (
            Kind::Proxy,
            &["listen", "upstream", "exchanges", "client_leg", "upstream_leg", "verdict", "findings"],
        ),
    ],
    refusal: |_| "one this nodelay does not print",
};

/// The text of `run`, the JSON a command saved with `--json` (bench, compare, doctor, pcap,
/// proxy, report merge), no line wider than `width` columns (at least [`MIN_WIDTH`]). A run
/// of no kind read is a one-line error naming it by `name` (its file).
pub fn text_of_saved_run(name: &str, run: &Value, width: usize) -> Result<String, String> {
    let width = width.max(MIN_WIDTH);
    let fitted = FittedText::new(width);
    Ok(match READER.read(name, run).map_err(|e| e.0)? {
        Run::Bench(report) => fitted.render(&*report),
        Run::Merge(report) => fitted.render(&*report),
        // Headed as the live run is, before its rounds.
        Run::Compare(report) => compare_heading(&report, width) + &fitted.render(&*report),
        Run::Doctor(report) => fitted.render(&*report),
        Run::DoctorScenario(report) => fitted.render(&*report),
        Run::Pcap(report) => fitted.render(&*report),
        Run::Proxy(report) => fitted.render(&*report),
    })
}

/// The heading a live compare prints before its rounds: the load, and each target's URL.
fn compare_heading(report: &CompareReport, width: usize) -> String {
    let labels: Vec<(String, String)> =
        report.targets.iter().map(|t| (t.label.clone(), t.url.clone())).collect();
    let measured_now = report.targets.iter().filter(|t| t.saved.is_none()).count();
    compare_header(&report.settings, &labels, measured_now, report.rounds, width)
}
