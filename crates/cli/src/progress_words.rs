//! A run's progress in words, for a line a front end redraws every tick (the CLI's progress
//! bar): `   1200 responses,    598 req/s,    3 failed`. Its numbers are right-aligned in
//! widths that only ever grow, so that a bar drawn beside the words (which takes the rest of
//! the line) keeps its width from tick to tick instead of twitching with every new digit.

use nodelay_load::RunProgress;

/// Columns first reserved for the responses, the rate and the failures: room for a run of
/// millions of responses at a million requests a second without a change of width.
const FIRST_WIDTHS: [usize; 3] = [7, 6, 4];

/// Words for one run's progress, tick after tick.
#[derive(Debug, Clone)]
pub struct ProgressWords {
    /// Say the responses counted so far (a display that does not show them otherwise).
    with_count: bool,
    widths: [usize; 3],
}

impl ProgressWords {
    /// Words that say the count of responses when `with_count` (else the rate and failures).
    pub fn new(with_count: bool) -> Self {
        ProgressWords { with_count, widths: FIRST_WIDTHS }
    }

    /// `   1200 responses,    598 req/s,    3 failed` ("failed" has one form for 1 and for
    /// many, so the words do not change width with the count either).
    pub fn of(&mut self, progress: &RunProgress) -> String {
        let numbers = [progress.completed, progress.per_second.round() as u64, progress.errors];
        let [done, rate, failed] = numbers.map(|n| n.to_string());
        for (width, number) in self.widths.iter_mut().zip([&done, &rate, &failed]) {
            *width = (*width).max(number.len());
        }
        let [done_width, rate_width, failed_width] = self.widths;
        let count = if self.with_count { format!("{done:>done_width$} responses, ") } else { String::new() };
        format!("{count}{rate:>rate_width$} req/s, {failed:>failed_width$} failed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn progress(completed: u64, per_second: f64, errors: u64) -> RunProgress {
        RunProgress { elapsed: Duration::ZERO, completed, errors, per_second }
    }

    #[test]
    fn the_words_keep_their_width_as_the_numbers_grow() {
        let mut words = ProgressWords::new(true);
        let first = words.of(&progress(0, 0.0, 0));
        assert_eq!(first, "      0 responses,      0 req/s,    0 failed");
        assert_eq!(words.of(&progress(1200, 598.4, 1)), "   1200 responses,    598 req/s,    1 failed");
        assert_eq!(words.of(&progress(123_456, 99_999.6, 999)).len(), first.len());
        // Past its reserve a number widens the words once, and they stay that wide.
        let wider = words.of(&progress(12_345_678, 5.0, 12_345));
        assert_eq!(wider, "12345678 responses,      5 req/s, 12345 failed");
        assert_eq!(words.of(&progress(9, 5.0, 1)).len(), wider.len());
        assert_eq!(ProgressWords::new(false).of(&progress(1200, 598.4, 3)), "   598 req/s,    3 failed");
    }
}
