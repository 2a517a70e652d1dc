//! Runs the engine on a background thread while the calling thread forwards Ctrl-C and
//! draws a progress bar on stderr (only when stderr is a terminal).

use crate::interrupt;
use indicatif::{ProgressBar, ProgressStyle};
use nodelay_engine::{Control, EngineConfig, RecordSink, RunOutput};
use std::io::IsTerminal;
use std::time::Duration;

/// How often the progress bar and the Ctrl-C flag are looked at.
const UI_TICK: Duration = Duration::from_millis(100);

pub struct Finished<S> {
    pub output: RunOutput<S>,
    pub interrupted: bool,
    /// The run's first connect failed before any succeeded: why.
    pub unreachable: Option<String>,
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
    let unreachable = control.unreachable().map(str::to_string);
    Ok(Finished { output: output?, interrupted: interrupt::interrupted(), unreachable })
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
