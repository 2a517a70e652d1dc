//! The runs the page draws: the kinds, and the fields of each its figures come from (a relay
//! run has no page).

use super::error::HtmlError;
use crate::saved::{Kind, Reader, Run};

const READER: Reader = Reader {
    kinds: &[
        (Kind::Bench, &["requests_completed", "requests_per_second", "latency_ms"]),
        (Kind::Merge, &["requests_completed", "requests_per_second", "latency_ms"]),
        (Kind::Compare, &["rounds", "targets"]),
        (Kind::Doctor, &["url", "verdict", "phases", "findings"]),
        (Kind::DoctorScenario, &["url", "verdict", "requests"]),
        (Kind::Pcap, &["packets", "flows", "stalls", "verdict"]),
    ],
    refusal: |known_family| {
        if known_family {
            "a schema version this nodelay does not read"
        } else {
            "a schema this nodelay does not read"
        }
    },
};

/// Reads a run named `name` (its file, or its position) by its `schema` id.
pub fn read_run(name: &str, run: &serde_json::Value) -> Result<Run, HtmlError> {
    READER.read(name, run).map_err(|e| HtmlError(e.0))
}
