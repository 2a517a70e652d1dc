//! The terminal around a run: the progress drawn on stderr (only when stderr is a terminal)
//! while the library runs the load or the diagnosis, and how wide stdout is for the text
//! renderers.

use crate::progress_words::ProgressWords;
pub use crate::terminal::{stderr_width, text_width};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle, TermLike};
use nodelay_engine::EngineConfig;
use nodelay_load::{RunObserver, RunProgress};
use nodelay_report::format_seconds;
use std::io::IsTerminal;
use std::time::Duration;

/// How often the doctor's line redraws itself.
const UI_TICK: Duration = Duration::from_millis(100);
/// Columns left free at the end of a progress line: room for the `^C` a terminal echoes.
const ECHO_ROOM: u16 = 3;
/// Redraws per second at most, as indicatif's own stderr target.
const REFRESH_HZ: u8 = 20;

/// A load run's progress bar, when `show` and stderr is a terminal; `on_stop` runs once when
/// the run is asked to stop early, before its connections close.
pub struct LoadProgress<'a> {
    bar: Option<ProgressBar>,
    counts_requests: bool,
    on_stop: &'a dyn Fn(),
    /// Of fixed widths, so that the `wide_bar` beside them keeps its width.
    words: ProgressWords,
}

impl<'a> LoadProgress<'a> {
    pub fn new(config: &EngineConfig, show: bool, on_stop: &'a dyn Fn()) -> Self {
        let bar = (show && std::io::stderr().is_terminal()).then(|| progress_bar(config));
        let counts_requests = config.max_requests.is_some();
        LoadProgress { bar, counts_requests, on_stop, words: ProgressWords::new(!counts_requests) }
    }
}

impl RunObserver for LoadProgress<'_> {
    fn tick(&mut self, progress: RunProgress) {
        let Some(bar) = self.bar.as_ref().filter(|bar| !bar.is_finished()) else { return };
        match self.counts_requests {
            true => bar.set_position(progress.completed),
            false => bar.set_position(progress.elapsed.as_millis() as u64),
        }
        bar.set_message(self.words.of(&progress));
    }

    fn stopping(&mut self) {
        (self.on_stop)();
        // Gone at once, not when the engine has wound down: the terminal is the user's again
        // as soon as they asked for it.
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for LoadProgress<'_> {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn progress_bar(config: &EngineConfig) -> ProgressBar {
    // `wide_bar` takes what the text leaves of the terminal's width, so the line never wraps.
    // Every field beside it of a fixed width, so that the bar keeps its own.
    let seconds = config.duration.map_or(0, |d| d.as_secs());
    let (length, template) = match (config.max_requests, config.duration) {
        (Some(n), _) => {
            (n, format!("{{wide_bar}} {{pos:>{}}}/{{len}} requests, {{msg}}", n.to_string().len()))
        }
        (None, Some(d)) => (d.as_millis() as u64, "{wide_bar} {done} of {duration}, {msg}".to_string()),
        (None, None) => (0, "{spinner} {msg}".to_string()),
    };
    let bar = ProgressBar::with_draw_target(Some(length), stderr_target());
    let style = ProgressStyle::with_template(&template).map(|style| {
        let width = seconds.to_string().len();
        style
            .with_key("duration", move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{seconds}s");
            })
            // Whole seconds run, from the bar's position (ms): indicatif's {elapsed} rounds.
            .with_key("done", move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:>width$}s", state.pos() / 1000);
            })
    });
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar
}

fn stderr_target() -> ProgressDrawTarget {
    ProgressDrawTarget::term_like_with_hz(Box::new(Stderr(console::Term::stderr())), REFRESH_HZ)
}

/// stderr as the progress lines see it: [`ECHO_ROOM`] columns narrower than the terminal. A
/// line that fills the last column leaves the cursor waiting to wrap, and the `^C` echoed at
/// Ctrl-C then starts a new line, where clearing the bar's line no longer reaches the bar.
#[derive(Debug)]
struct Stderr(console::Term);

/// TermLike's cursor and write methods, passed to the terminal as they are.
macro_rules! pass_to_terminal {
    ($($method:ident($($arg:ident: $type:ty)?)),*) => {$(
        fn $method(&self, $($arg: $type)?) -> std::io::Result<()> {
            self.0.$method($($arg)?)
        }
    )*};
}

impl TermLike for Stderr {
    fn width(&self) -> u16 {
        let width = u16::try_from(crate::terminal::stderr_width()).unwrap_or(u16::MAX);
        width.saturating_sub(ECHO_ROOM).max(1)
    }

    fn height(&self) -> u16 {
        u16::try_from(crate::terminal::stderr_rows()).unwrap_or(u16::MAX)
    }

    pass_to_terminal!(move_cursor_up(n: usize), move_cursor_down(n: usize), move_cursor_right(n: usize));
    pass_to_terminal!(move_cursor_left(n: usize), write_line(s: &str), write_str(s: &str));
    pass_to_terminal!(clear_line(), flush());
}

/// The doctor's line on stderr: which phase runs and how much of the budget is spent. It
/// redraws itself (indicatif's steady tick), so it moves during the connection probe too.
/// Nothing is drawn when stderr is not a terminal (a file or a pipe).
pub struct DoctorProgress {
    bar: Option<ProgressBar>,
}

impl DoctorProgress {
    pub fn start(budget: Duration) -> Self {
        if !std::io::stderr().is_terminal() {
            return DoctorProgress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(None, stderr_target());
        let style = ProgressStyle::with_template("{budget_bar} {budget} {wide_msg}").map(|style| {
            style
                .with_key("budget_bar", move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}", budget_bar(state.elapsed(), budget));
                })
                .with_key("budget", move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(
                        w,
                        "{:.1} s of {}",
                        state.elapsed().as_secs_f64(),
                        format_seconds(budget.as_secs_f64())
                    );
                })
        });
        if let Ok(style) = style {
            bar.set_style(style);
        }
        bar.enable_steady_tick(UI_TICK);
        DoctorProgress { bar: Some(bar) }
    }

    /// Clears the line before the report is printed, or at Ctrl-C.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl nodelay_doctor::Progress for DoctorProgress {
    fn phase(&mut self, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(what.to_string());
        }
    }
}

impl Drop for DoctorProgress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Bar cells for the share of the budget spent.
const BUDGET_BAR: usize = 20;

/// `██████··············`: the share of `budget` that `elapsed` is.
fn budget_bar(elapsed: Duration, budget: Duration) -> String {
    let share = if budget.is_zero() { 1.0 } else { (elapsed.as_secs_f64() / budget.as_secs_f64()).min(1.0) };
    let full = (share * BUDGET_BAR as f64).round() as usize;
    format!("{}{}", "█".repeat(full), "·".repeat(BUDGET_BAR - full))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_bar_fills_with_the_time_spent() {
        let s = Duration::from_secs;
        assert_eq!(budget_bar(s(0), s(10)), "·".repeat(BUDGET_BAR));
        assert_eq!(budget_bar(s(5), s(10)), format!("{}{}", "█".repeat(10), "·".repeat(10)));
        assert_eq!(budget_bar(s(30), s(10)), "█".repeat(BUDGET_BAR));
    }
}
