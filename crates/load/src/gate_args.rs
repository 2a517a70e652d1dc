//! The thresholds a run is held against (`--fail-if`, on bench, doctor and compare), their
//! parsers, and their check against what the command measures, before anything runs (the
//! gate itself: nodelay_report::gate).

use crate::usage::usage;
use anyhow::Result;
use nodelay_flags::Flag::{Alpha, Summary};
use nodelay_report::gate::{GatedCommand, Threshold, unsupported};

/// The thresholds a run is held against.
#[derive(Debug, Clone, Default)]
pub struct GateOptions {
    /// Fail the run when one of these holds.
    pub fail_if: Vec<Threshold>,
    /// Append a Markdown summary of the run to this file.
    pub summary: Option<std::path::PathBuf>,
    /// compare: the significance level of its verdicts; `None`: benchstat's 0.05.
    pub alpha: Option<f64>,
}

/// A `--fail-if` expression.
pub fn parse_threshold(text: &str) -> Result<Threshold, String> {
    text.parse()
}

/// A significance level: above 0, at most 0.5.
pub fn parse_alpha(text: &str) -> Result<f64, String> {
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
            .map_err(|e| anyhow::anyhow!("{Summary}: {}: {e}", self.1.display()))
    }
}

impl GateOptions {
    /// Opens `--summary` before the run, so that a path it cannot write costs no measurement.
    pub fn open_summary(&self) -> Result<Option<SummaryFile>> {
        let Some(path) = &self.summary else { return Ok(None) };
        match std::fs::OpenOptions::new().create(true).append(true).open(path) {
            Ok(file) => Ok(Some(SummaryFile(file, path.clone()))),
            Err(e) => Err(usage(format!("{Summary}: cannot write {}: {e}", path.display()))),
        }
    }

    /// The significance level compare judges at.
    pub fn alpha(&self) -> f64 {
        self.alpha.unwrap_or(nodelay_diagnose::ALPHA)
    }

    /// Refuses, as a usage error, a threshold `command` could never check.
    pub fn check_for(&self, command: GatedCommand) -> Result<()> {
        if self.alpha.is_some() && !matches!(command, GatedCommand::Compare { .. }) {
            return Err(usage(format!("{Alpha}: only compare tests a difference across rounds")));
        }
        match self.fail_if.iter().find_map(|threshold| unsupported(threshold, command)) {
            Some(why) => Err(usage(why)),
            None => Ok(()),
        }
    }
}
