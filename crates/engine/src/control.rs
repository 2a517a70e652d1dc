//! Shared between the engine's threads and its caller: a stop flag (Ctrl-C, caller's
//! deadline) and per-thread completion counters for a progress display.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A counter on its own cache line so threads do not slow each other down.
#[repr(align(64))]
#[derive(Default)]
struct PaddedCounter(AtomicU64);

pub struct Control {
    stop: AtomicBool,
    completed: Box<[PaddedCounter]>,
}

impl Control {
    pub fn new(threads: usize) -> Self {
        Control {
            stop: AtomicBool::new(false),
            completed: (0..threads).map(|_| Default::default()).collect(),
        }
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
        self.completed.iter().map(|c| c.0.load(Ordering::Relaxed)).sum()
    }

    pub(crate) fn add_completed(&self, thread: usize) {
        if let Some(counter) = self.completed.get(thread) {
            counter.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}
