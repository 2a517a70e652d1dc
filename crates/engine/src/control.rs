//! Shared between the engine's threads and its caller: a stop flag (Ctrl-C, caller's
//! deadline), per-thread completion counters for a progress display, and whether the target
//! was reachable at all (the run's own first connection tells, so no probe connection is
//! made before it).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A counter on its own cache line so threads do not slow each other down.
#[repr(align(64))]
#[derive(Default)]
struct PaddedCounter(AtomicU64);

pub struct Control {
    stop: AtomicBool,
    completed: Box<[PaddedCounter]>,
    /// Some connection of this run has opened.
    connected: AtomicBool,
    /// Why the target could not be reached: a connect failed before any ever succeeded.
    unreachable: OnceLock<String>,
}

impl Control {
    pub fn new(threads: usize) -> Self {
        Control {
            stop: AtomicBool::new(false),
            completed: (0..threads).map(|_| Default::default()).collect(),
            connected: AtomicBool::new(false),
            unreachable: OnceLock::new(),
        }
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
