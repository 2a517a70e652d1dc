//! Ctrl-C: the first press asks the running measurement to stop and report what it has;
//! a second press exits at once.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static INSTALLED: OnceLock<()> = OnceLock::new();

/// Installs the handler (once per process).
pub fn install() {
    INSTALLED.get_or_init(|| {
        // Without a handler Ctrl-C still ends the process, just without a report.
        let _ = ctrlc::set_handler(|| {
            if INTERRUPTED.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
        });
    });
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
