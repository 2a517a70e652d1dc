//! Runs saved with `--json` printed as text again (`nodelay report RUN.json`): each kind told
//! apart by its `schema` id and read through the views of saved runs (`crate::saved`, which
//! the HTML page reads too), then laid out as its live run is, fitted to a width.

mod bench;
mod doctor;
mod finding;
#[cfg(test)]
mod tests;
mod traffic;

use crate::saved::{Kind, ReadError, Reader, Run};
use crate::text::MIN_WIDTH;
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
    let run = READER.read(name, run).map_err(|e| e.0)?;
    let mut out = String::new();
    let written = match &run {
        Run::Bench { view, merged: false } => {
            let settings =
                view.bench_settings().map_err(|e| ReadError::invalid(name, Kind::Bench.schema(), e).0)?;
            bench::write_bench(&mut out, view, &settings, width)
        }
        Run::Bench { view, merged: true } => bench::write_merge(&mut out, view, width),
        Run::Compare(view) => bench::write_compare(&mut out, view, width),
        Run::Doctor(view) => doctor::write_doctor(&mut out, view, width),
        Run::DoctorScenario(view) => doctor::write_scenario(&mut out, view, width),
        Run::Pcap(view) => traffic::write_pcap(&mut out, view, width),
        Run::Proxy(view) => traffic::write_proxy(&mut out, view, width),
    };
    written.expect("writing to a String cannot fail");
    Ok(out)
}
