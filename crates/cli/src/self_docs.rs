//! What an installed binary says about itself, with no repository files at hand: the JSON
//! Schemas of its outputs (embedded at build time), shell completions and its man page.

use crate::args::{Cli, SchemaName};
use crate::exit::Outcome;
use crate::output;
use anyhow::Result;
use clap::CommandFactory;

const BENCH_SCHEMA: &str = include_str!("../../../schema/bench.schema.json");
const DOCTOR_SCHEMA: &str = include_str!("../../../schema/doctor.schema.json");
const PCAP_SCHEMA: &str = include_str!("../../../schema/pcap.schema.json");
const PROXY_SCHEMA: &str = include_str!("../../../schema/proxy.schema.json");
const COMPARE_SCHEMA: &str = include_str!("../../../schema/compare.schema.json");
const MERGE_SCHEMA: &str = include_str!("../../../schema/merge.schema.json");
/// One schema for `inspect` and `fix`: they share the socket's description.
const SOCKETS_SCHEMA: &str = include_str!("../../../schema/inspect.schema.json");

pub fn schema(name: SchemaName) -> Result<Outcome> {
    output::stdout(match name {
        SchemaName::Bench => BENCH_SCHEMA,
        SchemaName::Doctor => DOCTOR_SCHEMA,
        SchemaName::Pcap => PCAP_SCHEMA,
        SchemaName::Inspect | SchemaName::Fix => SOCKETS_SCHEMA,
        SchemaName::Proxy => PROXY_SCHEMA,
        SchemaName::Compare => COMPARE_SCHEMA,
        SchemaName::Merge => MERGE_SCHEMA,
    })?;
    Ok(Outcome::Success)
}

pub fn completions(shell: clap_complete::Shell) -> Result<Outcome> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "nodelay", &mut script);
    output::stdout(&String::from_utf8_lossy(&script))?;
    Ok(Outcome::Success)
}

pub fn man() -> Result<Outcome> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page)?;
    output::stdout(&String::from_utf8_lossy(&page))?;
    Ok(Outcome::Success)
}
