//! Ctrl-C (and SIGTERM, SIGHUP): the first asks the running measurement to stop and report
//! what it has (`nodelay_load::stop`); a second exits at once, after undoing what nodelay
//! changed in another process (`doctor --try-fix`), if anything.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

static INSTALLED: OnceLock<()> = OnceLock::new();

/// Installs the handler (once per process).
pub fn install() {
    INSTALLED.get_or_init(|| {
        // Without a handler Ctrl-C still ends the process, just without a report.
        let _ = ctrlc::set_handler(|| {
            if nodelay_load::stop::request() {
                // No one is left to clear a progress line: wipe the one the cursor is on.
                let mut stderr = std::io::stderr();
                if stderr.is_terminal() {
                    let _ = stderr.write_all(b"\r\x1b[2K");
                }
                nodelay_load::stop::undo_now();
                std::process::exit(130);
            }
        });
    });
}
