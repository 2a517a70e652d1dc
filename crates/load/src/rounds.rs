//! Compare's rounds: targets measured in interleaved rounds, to be set side by side. Each
//! round runs every target once, the order reversed every other round (A B, B A, ...),
//! so that the machine's drift and whatever the previous run left warm hit every target alike.

use crate::plan::{Load, Measured};
use crate::run::RunObserver;
use crate::stop;
use nodelay_engine::Stats;
use nodelay_flags::Flag::Labels;
use nodelay_report::{BenchReport, COMPARED, CompareTarget, Comparison, IntervalPoint, RoundFigures, RunEnd};
use std::time::Duration;

/// The statistical test behind the comparisons at the significance level `alpha`, as the
/// JSON states it.
pub fn test_words(alpha: f64) -> String {
    format!(
        "Mann-Whitney U over the rounds' figures (two-sided; exact up to 20+20 rounds without ties); ratio: Hodges-Lehmann estimate with its ~{} interval; a difference is named at p < {alpha} when the whole interval lies beyond ±5 %",
        nodelay_report::confidence(alpha)
    )
}

/// One target while the rounds run.
pub struct Contender {
    label: String,
    load: Load,
    rounds: Vec<RoundFigures>,
    /// Every round's responses together.
    stats: Option<Stats>,
    elapsed: Duration,
    /// Each round's intervals, the rounds back to back in measured time (each round's last,
    /// shorter interval as long as it lasted, not a whole one).
    timeline: Vec<IntervalPoint>,
    error: Option<String>,
}

impl Contender {
    /// A target named `label`, loaded as `load` plans, before its first round.
    pub fn new(label: String, load: Load) -> Self {
        Contender {
            label,
            load,
            rounds: Vec::new(),
            stats: None,
            elapsed: Duration::ZERO,
            timeline: Vec::new(),
            error: None,
        }
    }

    /// Its name in the comparison.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Its load plan.
    pub fn load(&self) -> &Load {
        &self.load
    }

    /// Why it is measured no more (its connection failed), if it is not.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}

/// How the rounds ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundsEnd {
    /// Rounds every target ran to their end: the only ones counted.
    pub completed: u32,
    /// A stop request (Ctrl-C) ended the rounds before all were run.
    pub interrupted: bool,
    /// The round the stop cut short, left out whole; `None` when the stop fell between rounds.
    pub cut_short: Option<u32>,
}

/// Runs the rounds; a target whose connection fails is measured no more, the others go on.
/// A round counts only whole: one that a stop request (Ctrl-C) cuts short is left out, the
/// runs of it that had ended included, so that every target is compared over the same rounds
/// and no figure mixes a full run with a cut one. `observe` gives the observer of each run;
/// `said` is told a line as each round ends unless a stop was asked for by then ("round 2 of
/// 5 done: ...").
pub fn run_rounds(
    targets: &mut [Contender],
    rounds: u32,
    observe: &mut dyn FnMut(&Load) -> Box<dyn RunObserver + '_>,
    said: &mut dyn FnMut(&str),
) -> RoundsEnd {
    for round in 1..=rounds {
        let mut order: Vec<usize> = (0..targets.len()).collect();
        if round % 2 == 0 {
            order.reverse();
        }
        let mut ended = Vec::new();
        for index in order {
            let target = &mut targets[index];
            if target.error.is_some() {
                continue;
            }
            // A plain http:// target on a TLS port stops at its first answer, as bench does.
            let measured = target.load.measure_checked(observe(&target.load).as_mut());
            let cut = match &measured {
                Ok(measured) => measured.end.interrupted,
                Err(_) => stop::requested(),
            };
            if cut {
                return RoundsEnd { completed: round - 1, interrupted: true, cut_short: Some(round) };
            }
            match measured {
                Ok(measured) => ended.push((index, measured)),
                Err(error) => target.error = Some(format!("{error:#}")),
            }
        }
        for (index, measured) in ended {
            add_round(&mut targets[index], round, measured);
        }
        if stop::requested() {
            return RoundsEnd { completed: round, interrupted: true, cut_short: None };
        }
        // Said only when the next round is to run: a stop from now on cuts that one.
        said(&round_line(round, rounds, targets));
    }
    RoundsEnd { completed: rounds, interrupted: false, cut_short: None }
}

/// The most a round's line takes: the narrowest terminal nodelay lays text out for.
const ROUND_LINE_COLUMNS: usize = 80;

/// `round 2 of 5 done: fixed p50 173.3 µs, stalling p50 44.01 ms`; without the figures when
/// they would not fit in 80 columns.
fn round_line(round: u32, rounds: u32, targets: &[Contender]) -> String {
    let done = format!("round {round} of {rounds} done");
    let figures: Vec<String> = targets
        .iter()
        .filter_map(|t| {
            let figures = t.rounds.last().filter(|r| r.round == round)?;
            let p50 = figures.p50_ms.map_or("-".into(), nodelay_report::format_duration_ms);
            Some(format!("{} p50 {p50}", t.label))
        })
        .collect();
    let line = format!("{done}: {}", figures.join(", "));
    if figures.is_empty() || nodelay_report::display_width(&line) > ROUND_LINE_COLUMNS { done } else { line }
}

fn add_round(target: &mut Contender, round: u32, measured: Measured) {
    let report = target.load.report(&measured.stats, measured.end);
    target.rounds.push(RoundFigures::of(round, &report));
    let offset_s = target.elapsed.as_secs_f64();
    target
        .timeline
        .extend(report.timeline.iter().map(|p| IntervalPoint { start_s: offset_s + p.start_s, ..*p }));
    target.elapsed += measured.end.elapsed;
    match &mut target.stats {
        Some(stats) => stats.append(&measured.stats),
        None => target.stats = Some(measured.stats),
    }
}

/// A target's figures over all its rounds, without a diagnosis yet.
pub fn finish(target: Contender) -> CompareTarget {
    let run = target.stats.map(|stats| {
        let end = RunEnd { elapsed: target.elapsed, interrupted: false, due_not_sent: 0 };
        // The rounds' own timelines, not the merged one: that counts each round's last
        // interval as a whole one, a second of nothing between rounds.
        BenchReport { timeline: target.timeline, ..target.load.report(&stats, end) }
    });
    CompareTarget {
        label: target.label,
        url: target.load.settings.url.clone(),
        settings: target.load.settings.clone(),
        error: target.error,
        rounds: target.rounds,
        run,
        diagnosis: None,
        diagnosis_error: None,
        saved: None,
    }
}

/// Every target against the first, figure by figure, at the significance level `alpha`.
pub fn comparisons(targets: &[CompareTarget], alpha: f64) -> Vec<Comparison> {
    targets
        .iter()
        .skip(1)
        .flat_map(|target| {
            COMPARED.iter().filter_map(|(metric, _)| Comparison::between(&targets[0], target, metric, alpha))
        })
        .collect()
}

/// The widest label the comparison's table fits in 80 columns.
pub const MAX_LABEL_COLUMNS: usize = 16;

/// The targets' names: `given` (`--labels`), checked against the `targets` count, else A, B,
/// C, ...; why not, in one line.
pub fn labels(given: &[String], targets: usize) -> Result<Vec<String>, String> {
    if given.is_empty() {
        return Ok((0..targets).map(default_label).collect());
    }
    if given.len() != targets {
        return Err(format!("{Labels} names {} targets but {targets} were given", given.len()));
    }
    for (index, label) in given.iter().enumerate() {
        if label.trim().is_empty() || label.chars().any(char::is_control) {
            return Err(format!("{Labels}: label {} is empty or holds a control character", index + 1));
        }
        // Labels head the table's rows and columns: a long one would push it past the terminal.
        if nodelay_report::display_width(label) > MAX_LABEL_COLUMNS {
            return Err(format!(
                "{Labels}: label {} is wider than {MAX_LABEL_COLUMNS} columns: shorten it",
                index + 1
            ));
        }
        if given[..index].contains(label) {
            return Err(format!("{Labels}: '{label}' names two targets"));
        }
    }
    Ok(given.to_vec())
}

/// A, B, ..., Z, then T27, T28, ...
fn default_label(index: usize) -> String {
    match u8::try_from(index) {
        Ok(i) if i < 26 => char::from(b'A' + i).to_string(),
        _ => format!("T{}", index + 1),
    }
}
