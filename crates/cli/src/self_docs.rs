//! What an installed binary says about itself, with no repository files at hand: the JSON
//! Schemas of its outputs (embedded at build time), shell completions and its man page.

use crate::args::{Cli, SchemaName};
use crate::exit::{Outcome, usage};
use crate::output;
use anyhow::Result;
use clap::CommandFactory;
use std::path::Path;

const BENCH_SCHEMA: &str = include_str!("../../../schema/bench.schema.json");
const DOCTOR_SCHEMA: &str = include_str!("../../../schema/doctor.schema.json");
const PCAP_SCHEMA: &str = include_str!("../../../schema/pcap.schema.json");
const PROXY_SCHEMA: &str = include_str!("../../../schema/proxy.schema.json");
const COMPARE_SCHEMA: &str = include_str!("../../../schema/compare.schema.json");
const MERGE_SCHEMA: &str = include_str!("../../../schema/merge.schema.json");
const WATCH_SCHEMA: &str = include_str!("../../../schema/watch.schema.json");
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
        SchemaName::Watch => WATCH_SCHEMA,
    })?;
    Ok(Outcome::Success)
}

pub fn completions(shell: clap_complete::Shell) -> Result<Outcome> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "nodelay", &mut script);
    output::stdout(&String::from_utf8_lossy(&script))?;
    Ok(Outcome::Success)
}

/// The page of `nodelay` or of the command `path` names (`["report", "merge"]`), or with
/// `dir` every page written there. Each is titled as git's are (nodelay-bench(1)), and its
/// non-ASCII characters are roff escapes (`\\[u00D7]`): man reads a page in the locale's
/// encoding, and bytes it cannot read are warnings and garbled text.
pub fn man(path: &[String], dir: Option<&Path>) -> Result<Outcome> {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    let names: Vec<&str> = command.get_subcommands().map(|c| c.get_name()).collect();
    let unknown = usage(format!("no man page for '{}' (the commands: {})", path.join(" "), names.join(", ")));
    let Some(dir) = dir else {
        let named = path.iter().try_fold(&command, |command, name| command.find_subcommand(name));
        let (_, page) = man_page(named.ok_or(unknown)?.clone())?;
        return output::stdout(&page).map(|()| Outcome::Success);
    };
    let cannot = |e: std::io::Error| usage(format!("--dir {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(cannot)?;
    for command in with_subcommands(&command) {
        let (file, page) = man_page(command)?;
        std::fs::write(dir.join(file), page).map_err(cannot)?;
    }
    Ok(Outcome::Success)
}

/// A command and, depth first, every subcommand under it.
fn with_subcommands(command: &clap::Command) -> Vec<clap::Command> {
    std::iter::once(command.clone()).chain(command.get_subcommands().flat_map(with_subcommands)).collect()
}

/// A built command's man page: its file name (nodelay-bench.1) and its roff, in ASCII.
fn man_page(command: clap::Command) -> Result<(String, String)> {
    let man = clap_mangen::Man::new(command).source(format!("nodelay {}", env!("CARGO_PKG_VERSION")));
    let mut page = Vec::new();
    man.render(&mut page)?;
    let ascii = |c: char| if c.is_ascii() { c.to_string() } else { format!("\\[u{:04X}]", u32::from(c)) };
    Ok((man.get_filename(), String::from_utf8_lossy(&page).chars().map(ascii).collect()))
}
