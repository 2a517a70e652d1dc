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

    /// Append a Markdown summary of the run for a pull request to FILE (verdict,
    /// thresholds, figures, each finding's proof and fix folded), e.g. "$GITHUB_STEP_SUMMARY"
    #[arg(long, value_name = "FILE")]
    pub summary: Option<std::path::PathBuf>,

    /// compare: the significance level of its verdicts and of --fail-if 'slower ...' (as
    /// benchstat's -alpha); intervals are then (1 - P) ones [default: 0.05]
    #[arg(long, value_name = "P", value_parser = parse_alpha)]
    pub alpha: Option<f64>,
}

fn parse_threshold(text: &str) -> Result<Threshold, String> {
    text.parse()
}

fn parse_alpha(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(alpha) if alpha > 0.0 && alpha <= 0.5 => Ok(alpha),
        _ => Err(format!(
            "'{text}' is no significance level: give a probability above 0 and at most 0.5, e.g. 0.01"
        )),
    }
}

/// `--summary FILE` opened to append: CI's step summary gathers several steps' writes.
pub struct SummaryFile(std::fs::File, std::path::PathBuf);

impl SummaryFile {
    /// Appends `markdown` to the file.
    pub fn write(mut self, markdown: &str) -> Result<()> {
        use std::io::Write;
        self.0
            .write_all(markdown.as_bytes())
            .map_err(|e| anyhow::anyhow!("--summary: {}: {e}", self.1.display()))
    }
}

impl GateArgs {
    /// Opens `--summary` before the run, so that a path it cannot write costs no measurement.
    pub fn open_summary(&self) -> Result<Option<SummaryFile>> {
        let Some(path) = &self.summary else { return Ok(None) };
        match std::fs::OpenOptions::new().create(true).append(true).open(path) {
            Ok(file) => Ok(Some(SummaryFile(file, path.clone()))),
            Err(e) => Err(usage(format!("--summary: cannot write {}: {e}", path.display()))),
        }
    }

    /// The significance level compare judges at.
    pub fn alpha(&self) -> f64 {
        self.alpha.unwrap_or(nodelay_diagnose::ALPHA)
    }

    /// Refuses, as a usage error, a threshold `command` could never check.
    pub fn check_for(&self, command: GatedCommand) -> Result<()> {
        if self.alpha.is_some() && !matches!(command, GatedCommand::Compare { .. }) {
            return Err(usage("--alpha: only compare tests a difference across rounds"));
        }
        match self.fail_if.iter().find_map(|threshold| unsupported(threshold, command)) {
            Some(why) => Err(usage(why)),
            None => Ok(()),
        }
    }
}
