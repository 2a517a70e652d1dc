//! Drives the engine: runs it on a worker thread while the calling thread looks, every tick,
//! at the stop request and tells an observer how far the run is (the CLI draws a progress
//! bar from it; nothing is drawn here).

use crate::stop;
use nodelay_engine::{Control, EngineConfig, RecordSink, RunOutput};
use std::time::{Duration, Instant};

/// How often the stop request is looked at and the observer told.
const TICK: Duration = Duration::from_millis(100);

/// How far a run is, as its observer is told every tick.
#[derive(Debug, Clone, Copy)]
pub struct RunProgress {
    /// Time since the run started.
    pub elapsed: Duration,
    /// Requests completed (a response or an error) so far.
    pub completed: u64,
    /// Requests that failed so far.
    pub errors: u64,
}

/// Watches a run from the calling thread: progress every tick, and the stop request once.
pub trait RunObserver {
    /// Called every tick while the run lasts.
    fn tick(&mut self, _progress: RunProgress) {}
    /// Called once when a stop was requested, before the run's connections close.
    fn stopping(&mut self) {}
}

/// Observes nothing.
impl RunObserver for () {}

/// A run's output and how it ended.
pub struct Finished<S> {
    /// The engine's output: each thread's sink, the elapsed time, the CPU used.
    pub output: RunOutput<S>,
    /// A stop was requested while it ran.
    pub interrupted: bool,
    /// The run's first connect failed before any succeeded: why.
    pub unreachable: Option<String>,
    /// Some connection of the run opened.
    pub connected: bool,
}

/// Runs the engine to its end or a stop request ([`stop::requested`]).
pub fn run_engine<S, F>(
    config: &EngineConfig,
    make_sink: F,
    observer: &mut dyn RunObserver,
) -> anyhow::Result<Finished<S>>
where
    S: RecordSink + Send,
    F: Fn(usize) -> S + Sync + Send,
{
    let control = Control::new(config.threads.max(1));
    let started = Instant::now();
    let output = std::thread::scope(|scope| {
        let control = &control;
        let make_sink = &make_sink;
        let caller = std::thread::current();
        let engine = scope.spawn(move || {
            let result = nodelay_engine::run(config, control, make_sink);
            caller.unpark();
            result
        });
        let mut told = false;
        while !engine.is_finished() {
            if stop::requested() {
                if !told {
                    // Before the stop: the connections close once the workers see it.
                    observer.stopping();
                    told = true;
                }
                control.stop();
            }
            observer.tick(RunProgress {
                elapsed: started.elapsed(),
                completed: control.completed(),
                errors: control.errors(),
            });
            std::thread::park_timeout(TICK);
        }
        engine.join().expect("engine thread panicked")
    });
    let unreachable = control.unreachable().map(str::to_string);
    let connected = control.connected();
    Ok(Finished { output: output?, interrupted: stop::requested(), unreachable, connected })
}
