//! Drives the engine: runs it on a worker thread while the calling thread looks, every tick,
//! at the stop request and tells an observer how far the run is (the CLI draws a progress
//! bar from it; nothing is drawn here).

use crate::stop;
use nodelay_engine::{Control, EngineConfig, RecordSink, RunOutput};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How often the stop request is looked at and the observer told.
const TICK: Duration = Duration::from_millis(100);

/// The live rate is taken over this much of the recent past: one tick's count jumps about.
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// How far a run is, as its observer is told every tick.
#[derive(Debug, Clone, Copy)]
pub struct RunProgress {
    /// Time since the run started.
    pub elapsed: Duration,
    /// Responses completed so far (failed requests are `errors`, apart).
    pub completed: u64,
    /// Requests that failed so far.
    pub errors: u64,
    /// Requests completed per second over the last second.
    pub per_second: f64,
}

/// Watches a run from the calling thread: progress every tick, and the stop request once.
pub trait RunObserver {
    /// Called every tick while the run lasts.
    fn tick(&mut self, _progress: RunProgress) {}
    /// Called once when a stop was requested, before the run's connections close.
    fn stopping(&mut self) {}
    /// This run should end now, for a reason of the observer's own (a plain request to a TLS
    /// port): the run ends as at a stop request, but is not marked interrupted and nothing
    /// after it is stopped.
    fn ends_run(&self) -> bool {
        false
    }
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
    let mut rate = RateWindow::default();
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
            } else if observer.ends_run() {
                control.stop();
            }
            let (elapsed, completed) = (started.elapsed(), control.completed());
            let per_second = rate.per_second(elapsed, completed);
            observer.tick(RunProgress { elapsed, completed, errors: control.errors(), per_second });
            std::thread::park_timeout(TICK);
        }
        engine.join().expect("engine thread panicked")
    });
    let unreachable = control.unreachable().map(str::to_string);
    let connected = control.connected();
    Ok(Finished { output: output?, interrupted: stop::requested(), unreachable, connected })
}

/// Completions per second over the last [`RATE_WINDOW`], from the samples of each tick;
/// time is an input, so it is tested without waiting.
#[derive(Default)]
struct RateWindow {
    samples: VecDeque<(Duration, u64)>,
}

impl RateWindow {
    fn per_second(&mut self, at: Duration, done: u64) -> f64 {
        self.samples.push_back((at, done));
        // Keep the newest sample at least a window old, so the window is always full.
        while self.samples.len() > 2 && self.samples.get(1).is_some_and(|(t, _)| at - *t >= RATE_WINDOW) {
            self.samples.pop_front();
        }
        let Some(&(since, before)) = self.samples.front() else { return 0.0 };
        let span = (at - since).as_secs_f64();
        if span > 0.0 { done.saturating_sub(before) as f64 / span } else { 0.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_taken_over_the_last_second() {
        let mut window = RateWindow::default();
        let ms = Duration::from_millis;
        assert_eq!(window.per_second(ms(0), 0), 0.0);
        assert_eq!(window.per_second(ms(100), 50), 500.0);
        for tick in 2..=20 {
            window.per_second(ms(100 * tick), 50 * tick);
        }
        // 2 s at 500/s, then a stall: the rate falls within the window, not over the run.
        for tick in 21..=30 {
            window.per_second(ms(100 * tick), 1000);
        }
        assert_eq!(window.per_second(ms(3100), 1000), 0.0);
        assert_eq!(window.per_second(ms(3200), 1100), 100.0 / 1.0);
    }
}
