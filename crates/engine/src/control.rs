//! Shared between the engine's threads and its caller: a stop flag (Ctrl-C, caller's
//! deadline), per-thread counters of completions and errors for a progress display, and
//! whether the target was reachable at all (the run's own first connection tells, so no probe
//! connection is made before it).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One thread's counters, on a cache line of their own so threads do not slow each other
/// down; only their owner writes them.
#[repr(align(64))]
#[derive(Default)]
struct ThreadCounters {
    completed: AtomicU64,
    errors: AtomicU64,
}

/// What the caller and the engine's threads share while a run lasts: the stop flag, progress
/// counters and reachability.
pub struct Control {
    stop: AtomicBool,
    threads: Box<[ThreadCounters]>,
    /// Some connection of this run has opened.
    connected: AtomicBool,
    /// Why the target could not be reached: a connect failed before any ever succeeded.
    unreachable: OnceLock<String>,
}

impl Control {
    /// Counters for `threads` threads, not stopped.
    pub fn new(threads: usize) -> Self {
        Control {
            stop: AtomicBool::new(false),
            threads: (0..threads).map(|_| Default::default()).collect(),
            connected: AtomicBool::new(false),
            unreachable: OnceLock::new(),
        }
    }

    /// Some connection of this run opened (false when every connect was still pending or
    /// failed when the run ended).
    pub fn connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed)
    }

    /// Why the target was unreachable, when the run stopped for that.
    pub fn unreachable(&self) -> Option<&str> {
        self.unreachable.get().map(String::as_str)
    }

    pub(crate) fn mark_connected(&self) {
        self.connected.store(true, Ordering::Relaxed);
    }

    /// A connect failed: if none ever succeeded, the target is unreachable and the run stops
    /// with one clear reason instead of going on full of failures.
    pub(crate) fn connect_failed(&self, reason: &str) {
        if !self.connected.load(Ordering::Relaxed) && self.unreachable.set(reason.to_string()).is_ok() {
            self.stop();
        }
    }

    /// Asks every thread to stop at its next loop turn; what was measured is kept.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether `stop` was called, by the caller or because the target was unreachable.
    pub fn is_stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Responses completed so far, over all threads.
    pub fn completed(&self) -> u64 {
        self.threads.iter().map(|c| c.completed.load(Ordering::Relaxed)).sum()
    }

    /// Requests failed so far (each error record counted once), over all threads.
    pub fn errors(&self) -> u64 {
        self.threads.iter().map(|c| c.errors.load(Ordering::Relaxed)).sum()
    }

    pub(crate) fn add_completed(&self, thread: usize) {
        if let Some(counters) = self.threads.get(thread) {
            counters.completed.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn add_error(&self, thread: usize) {
        if let Some(counters) = self.threads.get(thread) {
            counters.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_over_threads() {
        let control = Control::new(2);
        control.add_completed(0);
        control.add_completed(1);
        control.add_error(1);
        // A thread index past the end is ignored, not a panic.
        control.add_error(7);
        assert_eq!((control.completed(), control.errors()), (2, 1));
    }
}
