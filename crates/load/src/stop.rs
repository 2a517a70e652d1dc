//! The process's one stop request. A front end (the CLI's Ctrl-C handler, a daemon's
//! shutdown) asks the measurement running to stop; the engine driver, the doctor and
//! compare's rounds look at it between steps and report what they measured, marked
//! interrupted. What another process was changed in (`doctor --try-fix`) is registered here
//! while it lasts, so a front end that must exit at once can undo it first.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);
/// What to undo before an immediate exit.
static UNDO: Mutex<Option<Box<dyn FnOnce() + Send>>> = Mutex::new(None);

/// Asks what runs to stop; returns whether a stop had been asked for already (a second
/// Ctrl-C, which quits at once).
pub fn request() -> bool {
    REQUESTED.swap(true, Ordering::SeqCst)
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Runs `undo` if the process is made to exit at once while `work` runs ([`undo_now`]);
/// `work` itself must undo on the normal path.
pub fn undoing<T>(undo: impl FnOnce() + Send + 'static, work: impl FnOnce() -> T) -> T {
    *UNDO.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(undo));
    let result = work();
    UNDO.lock().unwrap_or_else(|e| e.into_inner()).take();
    result
}

/// Undoes what [`undoing`] registered, if anything: for a front end about to exit at once.
pub fn undo_now() {
    if let Some(undo) = UNDO.lock().unwrap_or_else(|e| e.into_inner()).take() {
        undo();
    }
}
