//! Shared between the engine's threads and its caller: a stop flag (Ctrl-C, caller's
//! deadline) and per-thread counters of completions and errors for a progress display.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One thread's counters, on a cache line of their own so threads do not slow each other
/// down; only their owner writes them.
#[repr(align(64))]
#[derive(Default)]
struct ThreadCounters {
    completed: AtomicU64,
    errors: AtomicU64,
}

pub struct Control {
    stop: AtomicBool,
    threads: Box<[ThreadCounters]>,
}

impl Control {
    pub fn new(threads: usize) -> Self {
        Control { stop: AtomicBool::new(false), threads: (0..threads).map(|_| Default::default()).collect() }
    }

    /// Asks every thread to stop at its next loop turn; what was measured is kept.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

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
