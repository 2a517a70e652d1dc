//! `--fail-if` as clap parses it, on bench, doctor and compare, and its check against what
//! the command measures, before anything runs (the gate itself: nodelay_report::gate).

use crate::usage::usage;
use anyhow::Result;
use nodelay_report::gate::{GatedCommand, Threshold, unsupported};

/// The thresholds a run is held against.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GateArgs {
    /// Fail the run (exit 4) when EXPR holds: a metric, an operator and a value with its
    /// unit (p99 > 50ms, first_byte.p90 >= 20ms, errors > 1%, rps < 2000), or a finding
    /// alone (stall: any Nagle hold; or an id such as slow-first-byte); repeatable
    #[arg(long = "fail-if", value_name = "EXPR", value_parser = parse_threshold)]
    pub fail_if: Vec<Threshold>,
}

fn parse_threshold(text: &str) -> Result<Threshold, String> {
    text.parse()
}

impl GateArgs {
    /// Refuses, as a usage error, a threshold `command` could never check.
    pub fn check_for(&self, command: GatedCommand) -> Result<()> {
        match self.fail_if.iter().find_map(|threshold| unsupported(threshold, command)) {
            Some(why) => Err(usage(why)),
            None => Ok(()),
        }
    }
}
