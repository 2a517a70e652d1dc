//! A plot's value axis: linear, or logarithmic when the figures it shows together differ by
//! more than ten times (beside a 44 ms target, a 0.2 ms one is a flat line on zero on a
//! linear axis), with its ticks (1-2-5 steps) and a title that says which it is. Values are
//! drawn at their position on the axis (log10 of the value on a log axis), so the ticks are
//! chosen here and plotters only draws them.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use std::ops::Range;

/// Figures that differ by more than this many times get a log axis.
pub const LOG_WHEN_APART: f64 = 10.0;

/// Ticks on a log axis at most: past it, 1-2-5 steps give way to 1-3 steps, then to powers
/// of ten, so that the labels of a short plot do not crowd.
const MAX_LOG_TICKS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear,
    Log,
}

/// One value axis: its scale and the values at its two ends.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueAxis {
    pub scale: Scale,
    low: f64,
    high: f64,
    /// A log axis's ticks: these multiples of each power of ten.
    multiples: &'static [f64],
}

/// The ticks a log axis tries, finest first: 1-2-5, 1-3, powers of ten.
const LOG_STEPS: [&[f64]; 3] = [&[1.0, 2.0, 5.0], &[1.0, 3.0], &[1.0]];

/// A tick value without trailing zeros: `0.25`, `40`, `1500`.
pub fn tick(value: f64) -> String {
    let text = if value.abs() >= 100.0 { format!("{value:.0}") } else { format!("{value:.3}") };
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text }
}

/// Whether `figures` (one per target: its p50, its requests/s) differ by more than
/// [`LOG_WHEN_APART`] times; zeros and gaps are left out.
pub fn differ_tenfold(figures: impl IntoIterator<Item = f64>) -> bool {
    let positive: Vec<f64> = figures.into_iter().filter(|v| *v > 0.0 && v.is_finite()).collect();
    let low = positive.iter().copied().fold(f64::INFINITY, f64::min);
    let high = positive.iter().copied().fold(0.0, f64::max);
    positive.len() >= 2 && high > low * LOG_WHEN_APART
}

/// The values `multiples` × a power of ten from `low` to `high`.
fn steps_of(multiples: &[f64], low: f64, high: f64) -> Vec<f64> {
    let mut steps = Vec::new();
    let mut decade = 10f64.powf(low.log10().floor());
    while decade <= high {
        for step in multiples {
            let value = decade * step;
            if value >= low * (1.0 - 1e-9) && value <= high * (1.0 + 1e-9) {
                steps.push(value);
            }
        }
        decade *= 10.0;
    }
    steps
}

/// A step of 1, 2, 2.5 or 5 times a power of ten, near `rough`.
fn nice_step(rough: f64) -> f64 {
    let decade = 10f64.powf(rough.log10().floor());
    let multiple = [1.0, 2.0, 2.5, 5.0, 10.0].into_iter().find(|m| m * decade >= rough).unwrap_or(10.0);
    multiple * decade
}

impl ValueAxis {
    /// An axis for `values`: log (from the 1-2-5 step at or below the smallest positive value
    /// to the one at or above the largest) when `log`, else linear from zero to a little above
    /// the largest.
    pub fn new(values: impl IntoIterator<Item = f64>, log: bool) -> ValueAxis {
        let values: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        let largest = values.iter().copied().fold(0.0, f64::max);
        let smallest = values.iter().copied().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        if log && smallest < largest {
            // A little room at both ends, so that no dot sits on the frame; the ends on ticks.
            let (smallest, largest) = (smallest / 1.05, largest * 1.05);
            let fitting = |multiples: &'static [f64]| {
                let decade_below = 10f64.powf(smallest.log10().floor() - 1.0);
                let low = steps_of(multiples, decade_below, smallest).last().copied()?;
                let high = steps_of(multiples, largest, largest * 10.0).first().copied()?;
                let axis = ValueAxis { scale: Scale::Log, low, high, multiples };
                (axis.ticks().len() <= MAX_LOG_TICKS).then_some(axis)
            };
            return LOG_STEPS.iter().find_map(|multiples| fitting(multiples)).unwrap_or_else(|| {
                let low = 10f64.powf(smallest.log10().floor());
                let high = 10f64.powf(largest.log10().ceil());
                ValueAxis { scale: Scale::Log, low, high, multiples: &[1.0] }
            });
        }
        let high = if largest > 0.0 { largest * 1.08 } else { 1.0 };
        ValueAxis { scale: Scale::Linear, low: 0.0, high, multiples: &[] }
    }

    /// Where `value` is drawn; `None` for a value a log axis cannot show (zero).
    pub fn position(&self, value: f64) -> Option<f64> {
        match self.scale {
            Scale::Linear => Some(value),
            Scale::Log if value > 0.0 => Some(value.log10()),
            Scale::Log => None,
        }
    }

    /// The positions the axis spans, for plotters.
    pub fn range(&self) -> Range<f64> {
        match self.scale {
            Scale::Linear => self.low..self.high,
            Scale::Log => self.low.log10()..self.high.log10(),
        }
    }

    /// The positions of the ticks.
    pub fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Linear => {
                let step = nice_step(self.high / 5.0);
                (0..).map(|i| i as f64 * step).take_while(|v| *v <= self.high).collect()
            }
            Scale::Log => steps_of(self.multiples, self.low, self.high).iter().map(|v| v.log10()).collect(),
        }
    }

    /// The text of the tick at `position`.
    pub fn label(&self, position: f64) -> String {
        match self.scale {
            Scale::Linear => tick(position),
            Scale::Log => tick(10f64.powf(position)),
        }
    }

    /// The axis's title: `latency (ms, log scale)`, `throughput (req/s, linear scale)`.
    pub fn title(&self, what: &str, unit: &str) -> String {
        let scale = match self.scale {
            Scale::Linear => "linear scale",
            Scale::Log => "log scale",
        };
        format!("{what} ({unit}, {scale})")
    }

    /// `log` or `linear`: the figure's `data-scale`.
    pub fn name(&self) -> &'static str {
        match self.scale {
            Scale::Linear => "linear",
            Scale::Log => "log",
        }
    }
}

/// `value` held to one axis length beyond either end of `range`, off the plot either way: a
/// value millions of axis lengths away (a damaged saved run) maps past i32 and overflows
/// plotters' arithmetic.
pub fn near_axis(value: f64, range: &Range<f64>) -> f64 {
    let span = (range.end - range.start).abs();
    let (below, above) = (range.start.min(range.end) - span, range.start.max(range.end) + span);
    if below <= above { value.clamp(below, above) } else { value }
}

/// A linear coordinate with the ticks given, for plotters (whose own `with_key_points` loses
/// the label formatter of an `f64` range).
pub struct Ticked {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    pub fn new(range: Range<f64>, ticks: Vec<f64>) -> Ticked {
        Ticked { inner: range.into(), ticks }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(&near_axis(*value, &self.inner.range()), limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // The light lines between ticks are not drawn.
        if hint.weight().allow_light_points() { Vec::new() } else { self.ticks.clone() }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}

impl ValueAxis {
    /// The axis as plotters takes it.
    pub fn coordinate(&self) -> Ticked {
        Ticked::new(self.range(), self.ticks())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_ten_times_apart_get_a_log_axis_from_step_to_step() {
        assert!(differ_tenfold([0.2, 44.0]));
        assert!(!differ_tenfold([4.0, 39.0]));
        assert!(!differ_tenfold([0.0, 44.0]), "a zero is no figure");
        let axis = ValueAxis::new([0.138, 0.2, 45.3], true);
        assert_eq!(axis.scale, Scale::Log);
        let labels: Vec<String> = axis.ticks().iter().map(|t| axis.label(*t)).collect();
        assert_eq!(labels, ["0.1", "0.3", "1", "3", "10", "30", "100"]);
        let (ticks, range) = (axis.ticks(), axis.range());
        assert_eq!((ticks[0], ticks[ticks.len() - 1]), (range.start, range.end), "the ends are ticks");
        let near = ValueAxis::new([0.3, 4.0], true);
        let labels: Vec<String> = near.ticks().iter().map(|t| near.label(*t)).collect();
        assert_eq!(labels, ["0.2", "0.5", "1", "2", "5"]);
        assert_eq!(axis.title("latency", "ms"), "latency (ms, log scale)");
        assert_eq!(axis.position(0.0), None);
        let range = axis.range();
        assert!(range.start <= 0.138f64.log10() && range.end >= 45.3f64.log10(), "{range:?}");
    }

    #[test]
    fn many_decades_are_ticked_at_powers_of_ten_only() {
        let axis = ValueAxis::new([0.011, 4000.0], true);
        let labels: Vec<String> = axis.ticks().iter().map(|t| axis.label(*t)).collect();
        assert_eq!(labels, ["0.01", "0.1", "1", "10", "100", "1000", "10000"]);
    }

    #[test]
    fn a_linear_axis_starts_at_zero_with_round_steps() {
        let axis = ValueAxis::new([3.0, 41.0], false);
        assert_eq!(axis.scale, Scale::Linear);
        let labels: Vec<String> = axis.ticks().iter().map(|t| axis.label(*t)).collect();
        assert_eq!(labels, ["0", "10", "20", "30", "40"]);
        assert_eq!(axis.title("throughput", "req/s"), "throughput (req/s, linear scale)");
    }
}
