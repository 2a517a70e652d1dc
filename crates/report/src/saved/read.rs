//! A saved run told apart by its `schema` id and read through its kind's view, for a reader
//! that names the kinds it reads and the fields it needs of each (the page and the text do
//! not show the same kinds, nor need the same fields).

use super::bench::BenchView;
use super::compare::CompareView;
use super::doctor::{DoctorScenarioView, DoctorView};
use super::traffic::{PcapView, ProxyView};
use crate::model::bench::BENCH_SCHEMA_ID;
use crate::model::compare::COMPARE_SCHEMA_ID;
use crate::model::doctor::{DOCTOR_SCENARIO_SCHEMA_ID, DOCTOR_SCHEMA_ID};
use crate::model::merge::MERGE_SCHEMA_ID;
use crate::model::pcap::PCAP_SCHEMA_ID;
use crate::model::proxy::PROXY_SCHEMA_ID;
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

/// One run, read.
pub enum Run {
    /// A bench run, or a merge of interval logs (`merged`), which has the same figures.
    Bench {
        view: Box<BenchView>,
        merged: bool,
    },
    Compare(Box<CompareView>),
    Doctor(Box<DoctorView>),
    DoctorScenario(Box<DoctorScenarioView>),
    Pcap(Box<PcapView>),
    Proxy(Box<ProxyView>),
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
        let read = |e: serde_json::Error| ReadError::invalid(name, schema, e);
        Ok(match kind {
            Kind::Bench | Kind::Merge => {
                Run::Bench { view: view(run).map_err(read)?, merged: *kind == Kind::Merge }
            }
            Kind::Compare => Run::Compare(view(run).map_err(read)?),
            Kind::Doctor => Run::Doctor(view(run).map_err(read)?),
            Kind::DoctorScenario => Run::DoctorScenario(view(run).map_err(read)?),
            Kind::Pcap => Run::Pcap(view(run).map_err(read)?),
            Kind::Proxy => Run::Proxy(view(run).map_err(read)?),
        })
    }
}

/// `run` through the view `T` of its schema.
fn view<T: DeserializeOwned>(run: &Value) -> Result<Box<T>, serde_json::Error> {
    T::deserialize(run).map(Box::new)
}
