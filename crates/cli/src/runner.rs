//! Runs the engine on a background thread while the calling thread forwards Ctrl-C and
//! draws a progress bar on stderr (only when stderr is a terminal); tells the text
//! renderers how wide stdout is.

use crate::interrupt;
use indicatif::{ProgressBar, ProgressStyle};
use nodelay_engine::{Control, EngineConfig, RecordSink, RunOutput};
use nodelay_report::DEFAULT_WIDTH;
use std::io::IsTerminal;
use std::time::Duration;

/// How often the progress bar and the Ctrl-C flag are looked at.
const UI_TICK: Duration = Duration::from_millis(100);

pub struct Finished<S> {
    pub output: RunOutput<S>,
    pub interrupted: bool,
}

/// Columns the text report may use: the terminal's when stdout is one, else `COLUMNS` when
/// set (a pipe to a pager the user sized), else 80.
pub fn text_width() -> usize {
    let columns = || std::env::var("COLUMNS").ok()?.trim().parse::<usize>().ok().filter(|&c| c > 0);
    let stdout = std::io::stdout();
    if stdout.is_terminal()
        && let Some((terminal_size::Width(width), _)) = terminal_size::terminal_size_of(&stdout)
    {
        return usize::from(width);
    }
    columns().unwrap_or(DEFAULT_WIDTH)
}

pub fn run_engine<S, F>(
    config: &EngineConfig,
    show_progress: bool,
    make_sink: F,
) -> anyhow::Result<Finished<S>>
where
    S: RecordSink + Send,
    F: Fn(usize) -> S + Sync + Send,
{
    interrupt::install();
    let control = Control::new(config.threads.max(1));
    let bar = (show_progress && std::io::stderr().is_terminal()).then(|| progress_bar(config));
    let output = std::thread::scope(|scope| {
        let control = &control;
        let make_sink = &make_sink;
        let caller = std::thread::current();
        let engine = scope.spawn(move || {
            let result = nodelay_engine::run(config, control, make_sink);
            caller.unpark();
            result
        });
        while !engine.is_finished() {
            if interrupt::interrupted() {
                control.stop();
            }
            if let Some(bar) = &bar {
                let elapsed = bar.elapsed();
                let done = control.completed();
                match config.max_requests {
                    Some(_) => bar.set_position(done),
                    None => bar.set_position(elapsed.as_millis() as u64),
                }
                bar.set_message(format!("{done} responses"));
            }
            std::thread::park_timeout(UI_TICK);
        }
        engine.join().expect("engine thread panicked")
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(Finished { output: output?, interrupted: interrupt::interrupted() })
}

fn progress_bar(config: &EngineConfig) -> ProgressBar {
    let (length, template) = match (config.max_requests, config.duration) {
        (Some(n), _) => (n, "{bar:40} {pos}/{len} requests, {msg}"),
        (None, Some(d)) => (d.as_millis() as u64, "{bar:40} {elapsed} of the run, {msg}"),
        (None, None) => (0, "{spinner} {msg}"),
    };
    let bar = ProgressBar::new(length);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}
