//! Ctrl-C: the first press asks the running measurement to stop and report what it has;
//! a second press exits at once.

use std::io::{IsTerminal, Write};
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
                // No one is left to clear a progress line: wipe the one the cursor is on.
                let mut stderr = std::io::stderr();
                if stderr.is_terminal() {
                    let _ = stderr.write_all(b"\r\x1b[2K");
                }
                std::process::exit(130);
            }
        });
    });
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
