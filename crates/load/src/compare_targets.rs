//! compare's targets as given: URLs to measure now, and runs saved by `compare --json` read
//! back (`RUN.json`, or `RUN.json#LABEL` for one target of several) to be compared again, so
//! that CI can hold a pull request against the main branch's saved run.

use crate::plan::{Load, LoadOptions, plan_load};
use crate::rounds::{Contender, RoundsEnd, finish, labels, run_rounds};
use crate::run::RunObserver;
use crate::usage::usage;
use anyhow::{Context, Result};
use nodelay_report::{BenchSettings, CompareTarget, load_differences, saved_target};

/// The targets in their order: those measured now and those read from saved runs.
pub struct CompareTargets {
    /// Measured now, in order.
    pub live: Vec<Contender>,
    /// Read back, each with its place among all the targets.
    saved: Vec<(usize, CompareTarget)>,
}

/// A saved run named by `given` (`FILE.json` or `FILE.json#LABEL`): its path and the label
/// wanted; `None` for a URL.
fn saved_run(given: &str) -> Option<(&str, Option<&str>)> {
    if given.contains("://") {
        return None;
    }
    match given.rsplit_once('#') {
        Some((path, label)) if path.ends_with(".json") => Some((path, Some(label))),
        _ if given.ends_with(".json") || std::path::Path::new(given).is_file() => Some((given, None)),
        _ => None,
    }
}

/// Plans each target of `given` (`--labels` in `given_labels`): a URL with `options`, a saved
/// run read back. A saved run measured under another load than the rest is refused: rounds
/// of different loads are no comparison.
pub fn plan_targets(
    given: &[String],
    given_labels: &[String],
    options: &LoadOptions,
) -> Result<CompareTargets> {
    let labels = labels(given_labels, given.len()).map_err(usage)?;
    let mut targets = CompareTargets { live: Vec::new(), saved: Vec::new() };
    for (index, (label, target)) in labels.iter().zip(given).enumerate() {
        match saved_run(target) {
            Some((path, wanted)) => {
                let text = std::fs::read_to_string(path).map_err(|e| usage(format!("{path}: {e}")))?;
                let saved = saved_target(&text, path, wanted).map_err(usage)?;
                targets.saved.push((index, CompareTarget { label: label.clone(), ..saved }));
            }
            None => {
                let load = plan_load(target, options).with_context(|| format!("target {label}"))?;
                targets.live.push(Contender::new(label.clone(), load));
            }
        }
    }
    let reference = targets.settings().clone();
    for (_, saved) in &targets.saved {
        let differences = load_differences(&saved.settings, &reference);
        if !differences.is_empty() {
            let file = saved.saved.as_ref().map_or("", |s| s.file.as_str());
            return Err(usage(format!(
                "{} ({file}) was measured under another load: {}; give the saved run's options",
                saved.label,
                differences.join("; ")
            )));
        }
    }
    Ok(targets)
}

impl CompareTargets {
    /// The load every target gets: the first measured one's, else the first saved one's.
    pub fn settings(&self) -> &BenchSettings {
        match (self.live.first(), self.saved.first()) {
            (Some(live), _) => &live.load().settings,
            (None, Some((_, saved))) => &saved.settings,
            (None, None) => unreachable!("clap asks for a target"),
        }
    }

    /// Each target's label and what it is, for the header: its URL, or the saved run's file.
    pub fn named(&self) -> Vec<(String, String)> {
        let mut named: Vec<(usize, String, String)> = self
            .saved
            .iter()
            .map(|(index, t)| {
                let file = t.saved.as_ref().map_or("", |s| s.file.as_str());
                (*index, t.label.clone(), format!("{file}: {} saved rounds of {}", t.rounds.len(), t.url))
            })
            .collect();
        let live_places =
            (0..named.len() + self.live.len()).filter(|i| !self.saved.iter().any(|(s, _)| s == i));
        for (index, live) in live_places.zip(&self.live) {
            named.push((index, live.label().to_string(), live.load().settings.url.clone()));
        }
        named.sort_by_key(|(index, ..)| *index);
        named.into_iter().map(|(_, label, what)| (label, what)).collect()
    }

    /// The rounds to run (`asked`), or with saved runs alone the most a saved target holds:
    /// nothing runs then, their rounds are compared as saved.
    pub fn rounds(&self, asked: u32) -> u32 {
        match self.live.is_empty() {
            true => self.saved.iter().map(|(_, t)| t.rounds.len() as u32).max().unwrap_or(0),
            false => asked,
        }
    }

    /// Runs the rounds of the targets measured now ([`run_rounds`]); an error when every one
    /// of them failed, naming why.
    pub fn run(
        &mut self,
        rounds: u32,
        observe: &mut dyn FnMut(&Load) -> Box<dyn RunObserver + '_>,
        said: &mut dyn FnMut(&str),
    ) -> Result<RoundsEnd> {
        if self.live.is_empty() {
            // Saved runs alone: every target ran its fewest rounds to the end.
            let completed = self.saved.iter().map(|(_, t)| t.rounds.len() as u32).min().unwrap_or(0);
            return Ok(RoundsEnd { completed, interrupted: false, cut_short: None });
        }
        let end = run_rounds(&mut self.live, rounds, observe, said);
        if self.live.iter().all(|t| t.error().is_some()) {
            let why: Vec<String> = self
                .live
                .iter()
                .map(|t| format!("{}: {}", t.label(), t.error().unwrap_or_default()))
                .collect();
            anyhow::bail!("no target could be measured: {}", why.join("; "));
        }
        Ok(end)
    }

    /// Every target's figures in the order given: the measured ones' rounds merged, the saved
    /// ones as read.
    pub fn finish(self) -> Vec<CompareTarget> {
        let mut live = self.live.into_iter().map(finish);
        let mut saved = self.saved.into_iter().peekable();
        let mut all = Vec::new();
        loop {
            match saved.peek() {
                Some((index, _)) if *index == all.len() => all.push(saved.next().expect("peeked").1),
                _ => match live.next() {
                    Some(target) => all.push(target),
                    None => break,
                },
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::saved_run;

    #[test]
    fn a_saved_run_is_a_json_file_and_a_url_is_not() {
        assert_eq!(saved_run("main.json"), Some(("main.json", None)));
        assert_eq!(saved_run("runs/main.json#pr"), Some(("runs/main.json", Some("pr"))));
        assert_eq!(saved_run("http://host/a.json"), None);
        assert_eq!(saved_run("http://host/#x.json"), None);
        assert_eq!(saved_run("127.0.0.1:8080"), None);
    }
}
