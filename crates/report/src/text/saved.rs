//! Runs saved with `--json` printed as text again (`nodelay report RUN.json`): each kind told
//! apart by its `schema` id, read through small views of its JSON contract (`view`), and laid
//! out as its live run is, fitted to a width. The report models cannot be read back (they
//! borrow static text and the diagnosis' types), so the views hold only what is printed.

mod bench;
mod doctor;
mod finding;
#[cfg(test)]
mod tests;
mod traffic;
mod view;

use crate::text::MIN_WIDTH;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The kinds of run read: their schema id, and the fields every version of it has written
/// (a file without them is no such report, and would print zeros).
const KINDS: [(&str, &[&str]); 7] = [
    ("nodelay-bench/1", &["settings", "requests_completed", "requests_per_second", "latency_ms"]),
    ("nodelay-merge/1", &["logs", "requests_completed", "requests_per_second", "latency_ms"]),
    ("nodelay-compare/1", &["rounds", "targets", "comparisons"]),
    ("nodelay-doctor/1", &["url", "verdict", "phases", "findings"]),
    ("nodelay-doctor-scenario/1", &["url", "verdict", "requests"]),
    ("nodelay-pcap/1", &["file", "packets", "flows", "stalls", "verdict", "findings"]),
    (
        "nodelay-proxy/1",
        &["listen", "upstream", "exchanges", "client_leg", "upstream_leg", "verdict", "findings"],
    ),
];

/// The text of `run`, the JSON a command saved with `--json` (bench, compare, doctor, pcap,
/// proxy, report merge), no line wider than `width` columns (at least [`MIN_WIDTH`]). A run
/// of no kind read is a one-line error naming it by `name` (its file).
pub fn text_of_saved_run(name: &str, run: &Value, width: usize) -> Result<String, String> {
    let width = width.max(MIN_WIDTH);
    let reads = || KINDS.iter().map(|(id, _)| *id).collect::<Vec<_>>().join(", ");
    let Some(schema) = run.get("schema").and_then(Value::as_str) else {
        return Err(format!(
            "{name} is not a nodelay report (it has no \"schema\" field; this nodelay reads {})",
            reads()
        ));
    };
    let Some((_, fields)) = KINDS.iter().find(|(id, _)| *id == schema) else {
        return Err(format!(
            "{name} has schema \"{schema}\", one this nodelay does not print (it reads {})",
            reads()
        ));
    };
    let missing: Vec<&str> = fields.iter().copied().filter(|field| run.get(field).is_none()).collect();
    if !missing.is_empty() {
        return Err(format!("{name} is not a valid \"{schema}\" report: it lacks {}", missing.join(", ")));
    }
    let mut out = String::new();
    let written = match schema {
        "nodelay-bench/1" => bench::write_bench(&mut out, &read(name, schema, run)?, width),
        "nodelay-merge/1" => bench::write_merge(&mut out, &read(name, schema, run)?, width),
        "nodelay-compare/1" => bench::write_compare(&mut out, &read(name, schema, run)?, width),
        "nodelay-doctor/1" => doctor::write_doctor(&mut out, &read(name, schema, run)?, width),
        "nodelay-doctor-scenario/1" => doctor::write_scenario(&mut out, &read(name, schema, run)?, width),
        "nodelay-pcap/1" => traffic::write_pcap(&mut out, &read(name, schema, run)?, width),
        _ => traffic::write_proxy(&mut out, &read(name, schema, run)?, width),
    };
    written.expect("writing to a String cannot fail");
    Ok(out)
}

/// `run` read through the view `T` of its schema; a field of the wrong type is a one-line
/// error naming the file and the field.
fn read<T: DeserializeOwned>(name: &str, schema: &str, run: &Value) -> Result<T, String> {
    T::deserialize(run).map_err(|e| format!("{name} is not a valid \"{schema}\" report: {e}"))
}
