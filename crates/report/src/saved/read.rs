//! A saved run told apart by its `schema` id and read back into its command's own report
//! model, for a reader that names the kinds it reads and the fields it needs of each (the page
//! and the text do not show the same kinds). The models take serde's defaults, so a run saved
//! by an older nodelay of the same schema version, which lacks the fields added since, reads.

use crate::model::bench::{BENCH_SCHEMA_ID, BenchReport};
use crate::model::compare::{COMPARE_SCHEMA_ID, CompareReport};
use crate::model::doctor::{DOCTOR_SCENARIO_SCHEMA_ID, DOCTOR_SCHEMA_ID, DoctorReport, DoctorScenarioReport};
use crate::model::merge::{MERGE_SCHEMA_ID, MergeReport};
use crate::model::pcap::{PCAP_SCHEMA_ID, PcapReport};
use crate::model::proxy::{PROXY_SCHEMA_ID, ProxyReport};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt;

/// The kinds of run saved, one per schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bench,
    Merge,
    Compare,
    Doctor,
    DoctorScenario,
    Pcap,
    Proxy,
}

impl Kind {
    /// The schema id its runs carry.
    pub fn schema(self) -> &'static str {
        match self {
            Kind::Bench => BENCH_SCHEMA_ID,
            Kind::Merge => MERGE_SCHEMA_ID,
            Kind::Compare => COMPARE_SCHEMA_ID,
            Kind::Doctor => DOCTOR_SCHEMA_ID,
            Kind::DoctorScenario => DOCTOR_SCENARIO_SCHEMA_ID,
            Kind::Pcap => PCAP_SCHEMA_ID,
            Kind::Proxy => PROXY_SCHEMA_ID,
        }
    }
}

/// One run, read into its command's report model.
pub enum Run {
    Bench(Box<BenchReport>),
    Merge(Box<MergeReport>),
    Compare(Box<CompareReport>),
    Doctor(Box<DoctorReport>),
    DoctorScenario(Box<DoctorScenarioReport>),
    Pcap(Box<PcapReport>),
    Proxy(Box<ProxyReport>),
}

/// Why a value is no run its reader reads: one line naming it.
#[derive(Debug)]
pub struct ReadError(pub String);

impl ReadError {
    /// The run `name`, of `schema`, is no valid one: `why`.
    pub fn invalid(name: &str, schema: &str, why: impl fmt::Display) -> ReadError {
        ReadError(format!("{name} is not a valid \"{schema}\" report: {why}"))
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What one reader of saved runs reads.
pub struct Reader {
    /// The kinds read, each with the fields of it that every version of its schema has
    /// written and that the reader shows: a file without them is no such report (it would
    /// show zeros), while a field added later may be missing from an older file and takes its
    /// default.
    pub kinds: &'static [(Kind, &'static [&'static str])],
    /// What a schema not read is, after its id ("a schema this nodelay does not read"),
    /// given whether another version of it is read.
    pub refusal: fn(bool) -> &'static str,
}

impl Reader {
    /// The schema ids read, for an error to list.
    fn schemas(&self) -> String {
        self.kinds.iter().map(|(kind, _)| kind.schema()).collect::<Vec<_>>().join(", ")
    }

    /// Reads a run named `name` (its file, or its position) by its `schema` id.
    pub fn read(&self, name: &str, run: &Value) -> Result<Run, ReadError> {
        let Some(schema) = run.get("schema").and_then(Value::as_str) else {
            return Err(ReadError(format!(
                "{name} is not a nodelay report (it has no \"schema\" field; this nodelay reads {})",
                self.schemas()
            )));
        };
        let Some((kind, fields)) = self.kinds.iter().find(|(kind, _)| kind.schema() == schema) else {
            let family = schema.split('/').next().unwrap_or(schema);
            let known_family =
                self.kinds.iter().any(|(kind, _)| kind.schema().split('/').next() == Some(family));
            return Err(ReadError(format!(
                "{name} has schema \"{schema}\", {} (it reads {})",
                (self.refusal)(known_family),
                self.schemas()
            )));
        };
        let missing: Vec<&str> = fields.iter().copied().filter(|field| run.get(field).is_none()).collect();
        if !missing.is_empty() {
            return Err(ReadError::invalid(name, schema, format_args!("it lacks {}", missing.join(", "))));
        }
        if let Some(why) = figure_out_of_range(run, &mut String::new(), None) {
            return Err(ReadError::invalid(name, schema, why));
        }
        let read = |e: serde_json::Error| ReadError::invalid(name, schema, e);
        Ok(match kind {
            Kind::Bench => Run::Bench(model(run).map_err(read)?),
            Kind::Merge => Run::Merge(model(run).map_err(read)?),
            Kind::Compare => {
                let mut compare: Box<CompareReport> = model(run).map_err(read)?;
                if run.get("rounds_completed").is_none() {
                    // The first version counted every round it began, and wrote no count of
                    // those completed: each target's rounds are those.
                    compare.rounds_completed =
                        compare.targets.iter().map(|t| t.rounds.len() as u32).max().unwrap_or(0);
                }
                Run::Compare(compare)
            }
            Kind::Doctor => Run::Doctor(model(run).map_err(read)?),
            Kind::DoctorScenario => Run::DoctorScenario(model(run).map_err(read)?),
            Kind::Pcap => Run::Pcap(model(run).map_err(read)?),
            Kind::Proxy => Run::Proxy(model(run).map_err(read)?),
        })
    }
}

/// The most a time in a saved run can be, in ms either way (a difference may be negative):
/// 31.7 years, past any run's length and any sum of its times (the CPU of every core of a
/// host, idle time summed over a capture's flows). A figure beyond it is damage, not a
/// measurement: a fuzzed run's 5.4e16 ms and -1e300 ms overflowed the plotting library.
const MAX_SAVED_MS: f64 = 1e12;
/// The most a time in seconds can be, either way: 31,700 years, past any clock's reading.
const MAX_SAVED_S: f64 = 1e12;
/// The most a rate in a saved run can be, per second (requests, bytes): 10 TB/s.
const MAX_SAVED_PER_SECOND: f64 = 1e13;

/// What the numbers under a field are, by its name's ending.
#[derive(Clone, Copy)]
enum Unit {
    /// `*_ms`: a time, or an object of times (`latency_ms: {p50, p99, ...}`).
    Ms,
    /// `*_s`: a time in seconds (`start_s`, `start_unix_s`).
    S,
    /// `*_per_second`: a rate.
    PerSecond,
}

impl Unit {
    fn of(key: &str) -> Option<Unit> {
        if key.ends_with("_ms") {
            Some(Unit::Ms)
        } else if key.ends_with("_s") {
            Some(Unit::S)
        } else if key.ends_with("_per_second") {
            Some(Unit::PerSecond)
        } else {
            None
        }
    }

    /// Why `figure`, at `path`, is none a run measures.
    fn refuse(self, figure: f64, path: &str) -> Option<String> {
        match self {
            Unit::Ms => (figure.abs() > MAX_SAVED_MS).then(|| {
                format!(
                    "{path} is {} ms, beyond any time a run measures (±{MAX_SAVED_MS:e} ms)",
                    short(figure)
                )
            }),
            Unit::S => (figure.abs() > MAX_SAVED_S).then(|| {
                format!("{path} is {} s, beyond any time a run measures (±{MAX_SAVED_S:e} s)", short(figure))
            }),
            Unit::PerSecond => (!(0.0..=MAX_SAVED_PER_SECOND).contains(&figure)).then(|| {
                format!(
                    "{path} is {}, outside any rate a run measures (0 to {MAX_SAVED_PER_SECOND:e}/s)",
                    short(figure)
                )
            }),
        }
    }
}

/// The first time or rate in `value` (under a field named `*_ms`, `*_s` or `*_per_second`, at any
/// depth below it) that no run measures, as `PATH is VALUE, ...`; `path` is where `value`
/// sits, `unit` what the field above it says its numbers are.
fn figure_out_of_range(value: &Value, path: &mut String, unit: Option<Unit>) -> Option<String> {
    let length = path.len();
    let why = match value {
        Value::Number(number) => unit.and_then(|unit| unit.refuse(number.as_f64()?, path)),
        Value::Object(fields) => fields.iter().find_map(|(key, field)| {
            path.truncate(length);
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
            figure_out_of_range(field, path, Unit::of(key).or(unit))
        }),
        Value::Array(items) => items.iter().enumerate().find_map(|(index, item)| {
            path.truncate(length);
            path.push_str(&format!("[{index}]"));
            figure_out_of_range(item, path, unit)
        }),
        _ => None,
    };
    path.truncate(length);
    why
}

/// A figure as written, or in exponent form when it is long (`-1e300`, not 301 digits).
fn short(figure: f64) -> String {
    if figure.abs() < 1e6 { figure.to_string() } else { format!("{figure:e}") }
}

/// `run` read into the model `T` of its schema.
fn model<T: DeserializeOwned>(run: &Value) -> Result<Box<T>, serde_json::Error> {
    T::deserialize(run).map(Box::new)
}
